"""How JSON strings spell characters, and the automata of object keys built on that.

A character of a JSON string is spelled raw (UTF-8) or, for a quote, a backslash, a slash or a
control character, as an escape. `json_char_class` spells a character class so; the key
names an object lists are a trie over their spellings (`json_names_dfa`), and the keys left to
additionalProperties are the key automaton less those names (`without_names`), whose states
come with what their token masks can share with other objects' (`KeyStates`).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Hashable, Iterator

import numpy as np

from pse import automaton, limits
from pse._core.frozen import frozen_rows
from pse._core.key_names import names_product, trie_add
from pse.bounded_cache import BoundedCache
from pse.json_value import JsonStringContent

_SHORT_ESCAPES = {0x08: b"b", 0x09: b"t", 0x0A: b"n", 0x0C: b"f", 0x0D: b"r"}


def json_char_class(nfa: automaton.NFA, ranges) -> automaton.Fragment:
    """One character of a JSON string whose code point is in `ranges`, as JSON spells it:
    raw UTF-8, or the escape a quote, backslash, slash or control character needs."""
    ranges = tuple(automaton.normalize_ranges(ranges))
    if all(0x1F < lo and hi < 0x80 and not any(lo <= c <= hi for c in (0x22, 0x2F, 0x5C))
           for lo, hi in ranges):
        return automaton.byte_class(nfa, ranges)  # (ASCII spelled raw only: one byte)
    # deterministic, as automaton.char_class is: a pattern of large classes, each with
    # escapes sharing "\u00", then determinizes one state per character
    return automaton.embed(nfa, _json_char_dfa(ranges))


@functools.lru_cache(maxsize=4096)
def _json_char_dfa(ranges: tuple[tuple[int, int], ...]) -> automaton.DFA:
    nfa = automaton.NFA()
    raw, escapes = _json_spellings(ranges)
    parts = [automaton.char_class(nfa, raw)] if raw else []
    for spelling in escapes:
        parts.append(automaton.concat(nfa, [
            automaton.literal(nfa, part) if isinstance(part, bytes) else _hex_digit(nfa, part)
            for part in spelling]))
    return automaton.determinize(nfa, automaton.alternation(nfa, parts))


@functools.lru_cache(maxsize=4096)
def _json_spellings(ranges: tuple[tuple[int, int], ...]
                    ) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[bytes | str, ...], ...]]:
    """The raw code point ranges of `ranges` and the escapes of the rest (each a sequence of
    literal bytes and hex digits, which either case spells): computed once per class (every
    regex character and every listed key name asks)."""
    raw = _subtract(ranges, [(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)])
    escapes: list[tuple[bytes | str, ...]] = []
    for cp in _members(ranges, [(0, 0x1F), (0x22, 0x22), (0x2F, 0x2F), (0x5C, 0x5C)]):
        if cp in (0x22, 0x5C, 0x2F):
            escapes.append((b"\\" + bytes([cp]),))
        if cp < 0x20:
            if cp in _SHORT_ESCAPES:
                escapes.append((b"\\" + _SHORT_ESCAPES[cp],))
            hi, lo = f"{cp:02x}"
            escapes.append((b"\\u00", hi, lo))
    return tuple(raw), tuple(escapes)


def char_boundaries(dfa: automaton.DFA) -> tuple[bool, ...] | None:
    """Per state of `dfa` (string contents, as JSON spells them), whether it sits between two
    characters as JSON Schema counts them (JsonStringContent's units); None when some state
    is reached both between characters and inside one, or a byte leaves the JSON spellings."""
    phases = _unit_phases(dfa, 0, closes=False)
    return None if phases is None else tuple(u == 0 for u in phases[0])


_END = -2  # the phase after a string's closing quote (see _unit_phases)


def _unit_phases(dfa: automaton.DFA, start: int, closes: bool
                 ) -> tuple[list[int], list[bool]] | None:
    """Per state of `dfa` (JSON spellings, `start` between two characters): the state of
    JsonStringContent's unit automaton reached there (0: between characters, -1: not
    reached), and whether that is inside an escape. With `closes`, a raw quote between
    characters ends the string (_END after it). None when a state is reached in two ways,
    or a byte leaves the JSON spellings. Walked by ranges of bytes that lead to one state of
    both automata (a state of string contents takes some 200 bytes)."""
    unit = JsonStringContent().unit_dfa()
    unit_done = unit.accept
    phase = [-1] * dfa.n_states
    escape = [False] * dfa.n_states
    phase[start] = 0
    todo = [start]
    while todo:
        s = todo.pop()
        if phase[s] == _END:
            if dfa.trans[s]:
                return None  # something after the closing quote
            continue
        between = phase[s] == 0
        for lo, hi, t, u in automaton.paired_ranges(dfa.trans[s], unit.trans[phase[s]]):
            # between characters, a quote (with `closes`) and a backslash are bytes apart
            for first, _ in _cut(lo, hi, (0x22, 0x5C) if between else ()):
                if closes and between and first == 0x22:
                    v, esc = _END, False
                elif u < 0:
                    return None
                else:
                    esc = (escape[s] or (between and first == 0x5C)) and not unit_done[u]
                    v = 0 if unit_done[u] else u  # a character complete: the next starts
                if phase[t] == -1:
                    phase[t], escape[t] = v, esc
                    todo.append(t)
                elif phase[t] != v or escape[t] != esc:
                    return None
    return phase, escape


def _cut(lo: int, hi: int, alone: tuple[int, ...]) -> Iterator[tuple[int, int]]:
    """lo..hi in ranges, each byte of `alone` (sorted) a range of its own."""
    for b in alone:
        if lo <= b <= hi:
            if lo < b:
                yield lo, b - 1
            yield b, b
            lo = b + 1
    if lo <= hi:
        yield lo, hi


def quoted(contents: automaton.DFA) -> automaton.DFA:
    """The whole JSON strings (quote, contents, quote) whose contents `contents` accepts: one
    terminal, so that the core sees a unique array's string item from its first byte to its
    last (`string_values`). Contents never hold a raw quote, so the closing one is free."""
    n = len(contents.trans)
    trans = [((0x22, 0x22, 1),)]
    for s, row in enumerate(contents.trans):
        moved = [(lo, hi, t + 1) for lo, hi, t in row]
        if contents.accept[s]:
            moved = sorted(moved + [(0x22, 0x22, n + 1)])
        trans.append(tuple(moved))
    trans.append(())
    return automaton.DFA(trans, [False] * (n + 1) + [True])


# More different strings than a unique array can hold items (its counts are 32-bit).
MANY_VALUES = 1 << 40
# String automata larger than this are not counted (their strings are not kept apart).
MAX_VALUE_STATES = 20000


def string_values(dfa: automaton.DFA) -> list[int] | None:
    """Per state of `dfa`, a terminal of whole JSON strings (as `quoted` builds, or a trie of
    string enum values): how many different strings (values, not spellings: "\\/" and "/"
    are one) it can still complete to, MANY_VALUES when infinitely many or more. A state
    inside an escape gets 0: its count depends on the bytes before it, so the core searches
    on from there. None when `dfa` is not of that kind. A unique array refuses a prefix that
    only items seen before complete (pse._core.structure: string_item_fresh)."""
    n = dfa.n_states
    if n > MAX_VALUE_STATES or [(lo, hi) for lo, hi, _ in dfa.trans[0]] != [(0x22, 0x22)]:
        return None
    dense = dfa.dense()
    first = int(dense[0, 0x22])
    phases = _unit_phases(dfa, first, closes=True)
    if phases is None:
        return None
    phase, escape = phases
    if any((phase[s] == _END) != dfa.accept[s] for s in range(1, n)):
        return None  # a string ends with its quote, and only there
    # counts in an order where every state comes after those it goes to; states left out
    # reach a loop: infinitely many strings
    succ = [sorted({t for _, _, t in row}) for row in dfa.trans]
    waiting = [len(x) for x in succ]
    preds: list[list[int]] = [[] for _ in range(n)]
    for s in range(n):
        for t in succ[s]:
            preds[t].append(s)
    ready = [s for s in range(n) if waiting[s] == 0]
    values = [MANY_VALUES] * n
    exact = [0] * n  # the count of a state inside an escape, for the states before it
    while ready:
        s = ready.pop()
        if s != 0 and phase[s] != -1:
            exact[s] = _count_values(dfa, dense, s, phase, escape, exact)
            values[s] = 0 if escape[s] else exact[s]
        for p in preds[s]:
            waiting[p] -= 1
            if waiting[p] == 0:
                ready.append(p)
    values[0] = values[first]
    return values


def _count_values(dfa: automaton.DFA, dense: np.ndarray, s: int, phase: list[int],
                  escape: list[bool], exact: list[int]) -> int:
    """The strings state `s` completes to (see string_values), its successors counted."""
    if phase[s] == _END:
        return 1
    if escape[s]:
        return 0  # (the state's own count is not used: see string_values)
    # each byte but a backslash spells its own strings (inside a character: one way on)
    total = sum((hi - lo + 1 - (lo <= 0x5C <= hi)) * exact[t] for lo, hi, t in dfa.trans[s])
    after_backslash = int(dense[s, 0x5C])
    if phase[s] != 0 or after_backslash < 0:
        return min(total, MANY_VALUES)
    by_char: dict[int, int] = {}  # the characters escapes spell, each counted once
    for spelling, end in _escapes_from(dense, after_backslash):
        cp = _decode_escape(spelling)
        if cp < 0x80:  # (a raw quote closes the string; a raw backslash starts an escape)
            raw = cp != 0x22 and cp != 0x5C and dense[s, cp] >= 0
        else:
            raw = _reaches(dense, s, chr(cp).encode("utf-8", "surrogatepass"))
        if raw:
            by_char[cp] = -1  # spelled raw here too: its escape adds nothing
        by_char.setdefault(cp, exact[end])
    total += sum(v for v in by_char.values() if v > 0)
    return min(total, MANY_VALUES)


def _escapes_from(dense: np.ndarray, s: int) -> list[tuple[bytes, int]]:
    """The escapes a state just after a backslash can complete (\n, \u000A, ...), each with
    the state it ends in."""
    out = []
    todo = [(b"\\", s)]
    while todo:
        spelled, t = todo.pop()
        done = len(spelled) == 2 and spelled[1:] != b"u" or len(spelled) == 6
        if done:
            out.append((spelled, t))
            continue
        for b in np.flatnonzero(dense[t] >= 0).tolist():
            todo.append((spelled + bytes([b]), int(dense[t, b])))
    return out


def _reaches(dense: np.ndarray, s: int, spelled: bytes) -> bool:
    for b in spelled:
        s = int(dense[s, b])
        if s < 0:
            return False
    return True


def _decode_escape(spelled: bytes) -> int:
    if spelled[1:2] == b"u":
        return int(spelled[2:], 16)
    return {v: k for k, v in _SHORT_ESCAPES.items()}.get(spelled[1:2], spelled[1])


def json_names_dfa(names) -> automaton.DFA:
    """The minimal DFA of the contents of JSON strings that spell one of `names`, every
    character spelled as `json_char_class` spells it. Built directly as a trie over the
    spellings (they form a prefix-free code), not through a regex: objects list their keys."""
    trans, accept = _spelling_trie(names)
    rows = [[(b, b, t) for b, t in sorted(row.items())] for row in trans]
    return automaton.minimize(automaton.trim(automaton.DFA(rows, accept)))


def without_names(keys: automaton.DFA, names) -> automaton.DFA:
    """The key contents `keys` accepts that spell none of `names` (the keys an object leaves
    to additionalProperties or patternProperties). The product of `keys` with the spelling
    trie, built in one pass: a trie node pairs with the state `keys` reaches on the same
    bytes, and a byte off the trie leads to a plain copy of `keys`' states."""
    return without_names_states(keys, names)[0]


# Name-end suffixes recorded per key state (more: its masks are walked, not derived).
MAX_NAME_SUFFIXES = 256


# Key automata less names, by the key automaton's digest and the names: objects that list the
# same names (in one schema, through several references, or in others) build theirs once.
_WITHOUT_NAMES = BoundedCache(1024)


def without_names_states(keys: automaton.DFA, names
                         ) -> tuple[automaton.DFA, KeyStates | None]:
    """`without_names`, and what the masks of its states can share (see KeyStates; None for
    the empty language). Both are immutable (KeyStates only fills a cache of what it
    derives), so the result is shared."""
    names = tuple(sorted(set(names)))  # the language depends on the set, not the order
    key = (_dfa_digest(keys), names)
    found = _WITHOUT_NAMES.get(key)
    if found is None:
        found = _without_names_states(keys, names, ("keys less names", *key))
        _WITHOUT_NAMES.put(key, found)
    return found


class _KeyTables:
    """What every `without_names_states` over one key automaton starts from: its states
    numbered from 1 (0 is the product's start), as rows (frozen: the products' rows share
    their ranges) and transition table; built once per automaton."""

    __slots__ = ("rows", "accept", "table", "live", "reach", "wide", "residual")

    def __init__(self, keys: automaton.DFA, digest: bytes) -> None:
        self.rows = frozen_rows(tuple((lo, hi, t + 1) for lo, hi, t in row)
                                for row in keys.trans)
        self.accept = keys.accept
        self.table = keys.dense()  # keys' own numbers, for the product's walk
        self.live = automaton.live_states(keys)
        # per state (numbered from 1), the states it reaches, as bits
        self.reach = [0]
        for q in range(keys.n_states):
            seen = {q}
            todo = [q]
            while todo:
                for _, _, t in keys.trans[todo.pop()]:
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            self.reach.append(sum(1 << (t + 1) for t in seen))
        # per state, what it surely still reaches in a pair's row, where at most WIDE of its
        # bytes lead elsewhere: the states it reaches on more bytes than that, as bits
        self.wide = []
        for row in keys.trans:
            width: dict[int, int] = {}
            for lo, hi, t in row:
                width[t] = width.get(t, 0) + hi - lo + 1
            bits = 0
            for t, n in width.items():
                if n > _WIDE:
                    bits |= self.reach[t + 1]
            self.wide.append(bits)
        self.residual = {q + 1: (digest, q) for q in range(keys.n_states)}


_WIDE = 16
_KEY_TABLES = BoundedCache(64)


def _key_tables(keys: automaton.DFA) -> _KeyTables:
    digest = _dfa_digest(keys)
    found = _KEY_TABLES.get(digest)
    if found is None:
        found = _KeyTables(keys, digest)
        _KEY_TABLES.put(digest, found)
    return found


def _without_names_states(keys: automaton.DFA, names, name: Hashable
                          ) -> tuple[automaton.DFA, KeyStates | None]:
    """`without_names_states`, made; `name`: the automaton's key (see DFA.key: its
    transitions, a row per trie node, are long to hash)."""
    trie, is_name = _spelling_trie(names)
    kt = _key_tables(keys)
    # the product (in C): pairs (trie node, state of `keys`) from the start, minimal (each
    # state of a key terminal may cost a walk of the vocabulary when masked): the start is
    # state 0 and `keys`' own states are 1..n_keys (two alike, in a `keys` not minimized,
    # become one); each other pair is a state of its own unless one with the same row and
    # acceptance exists. A pair is `twinless` when, on some bytes its twin takes, it reaches
    # a dead pair whose twin lives (a name with nothing after it in a bounded key language):
    # a token ending there would be allowed by the twin's mask, so its mask is walked, not
    # derived
    found = names_product(trie, is_name, kt.table, kt.rows, kt.accept, kt.live, kt.wide, _WIDE,
                          limits.check_budget)
    if found is None:
        return automaton.DFA([[]], [False]), None
    rows, accept, derived, reached, begin, cuts = found
    first_new = keys.n_states + 1
    residual = kt.residual
    # numbered from the start, in the order reached: a start like another state is that
    # state, and what the start cannot reach goes. For most key automata nothing goes and the
    # numbers stay: every live pair was reached from the start, so only `keys`' own states
    # may be unreachable, and `reached` (what the pairs' rows surely lead to, through the
    # targets of many bytes) mostly shows they are not
    if begin or reached != (1 << first_new) - 1:
        order = [begin]
        new_of = {begin: 0}
        for q in order:
            for _, _, t in rows[q]:
                if t not in new_of:
                    new_of[t] = len(order)
                    order.append(t)
        rows = [tuple((lo, hi, new_of[t]) for lo, hi, t in rows[q]) for q in order]
        accept = [accept[q] for q in order]
        residual = {new_of[q]: key for q, key in residual.items() if q in new_of}
        derived = {new_of[q]: (new_of[twin], node, at) for q, (twin, node, at) in derived.items()
                   if q in new_of and twin in new_of}
        cuts = None  # (the rows that went may have cut where none is left)
    else:
        cuts = np.frombuffer(cuts, dtype=bool)
    return (automaton.DFA(rows, accept, key=name, cuts=cuts),
            KeyStates(residual, derived, trie, is_name))


class KeyStates:
    """What the masks of a keys-without-names automaton's states can share.

    Args:
        residual: state -> a key naming its language globally (a copy of a state of the
            plain key automaton: objects with other names share its mask entries).
        derived: state -> (twin, trie node, at start): a state on the names' spelling trie
            takes exactly the bytes its twin (a plain key state) takes; it only may not end
            where the bytes read from it finish a name from that trie node (nor, with `at
            start`, before reading anything).
        trie, is_name: the spelling trie (see `_spelling_trie`).
    """

    __slots__ = ("residual", "derived", "trie", "is_name", "_ends", "_without_empty")

    def __init__(self, residual: dict[int, Hashable], derived: dict[int, tuple[int, int, bool]],
                 trie: list[dict[int, int]], is_name: list[bool]) -> None:
        self.residual, self.derived, self.trie, self.is_name = residual, derived, trie, is_name
        self._ends: dict[int, tuple[bytes, ...] | None] = {}
        self._without_empty: tuple[int, KeyStates] | None = None  # (n_states, it)

    def derivation(self, state: int) -> tuple[int, tuple[bytes, ...]] | None:
        """(twin, the texts after which `state` may not end), or None: walk its mask. The
        texts are found when first asked (only masked states need them)."""
        if state not in self.derived:
            return None
        twin, node, at_start = self.derived[state]
        if node not in self._ends:
            self._ends[node] = _name_ends(self.trie, self.is_name, node)
        ends = self._ends[node]
        if ends is None:
            return None
        return twin, (*ends, b"") if at_start else ends

    def without_empty(self, n_states: int) -> KeyStates:
        """The same for the automaton the compiler runs when the empty key is allowed (the
        empty match becomes an edge of its own, see compiler._without_empty): the start
        moves to number `n_states` (the automaton's size), and the new start is the old one
        unable to end at once. Made once per size (structures sharing the key automaton
        share it)."""
        if self._without_empty is not None and self._without_empty[0] == n_states:
            return self._without_empty[1]

        residual = dict(self.residual)
        if 0 in residual:
            residual[n_states] = residual.pop(0)
        derived = dict(self.derived)
        if any(how[0] == 0 for how in derived.values()):  # (twins that move: rare)
            derived = {s: (twin or n_states, node, at) for s, (twin, node, at) in derived.items()}
        start = derived.pop(0, None)
        if start is not None:
            derived[n_states] = start
            derived[0] = (start[0], start[1], True)
        else:  # the start is a plain key state: its twin is itself
            derived[0] = (n_states, -1, True)
        moved_states = KeyStates(residual, derived, self.trie, self.is_name)
        self._without_empty = (n_states, moved_states)
        return moved_states


def _name_ends(trie: list[dict[int, int]], is_name: list[bool], node: int
               ) -> tuple[bytes, ...] | None:
    """The byte strings leading from trie `node` to the end of a name (node -1: none; None:
    more than MAX_NAME_SUFFIXES)."""
    if node < 0:
        return ()
    out: list[bytes] = []
    stack = [(node, b"")]
    while stack:
        at, text = stack.pop()
        if is_name[at]:
            out.append(text)
            if len(out) > MAX_NAME_SUFFIXES:
                return None
        stack.extend((child, text + bytes([b])) for b, child in trie[at].items())
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _dfa_digest(dfa: automaton.DFA) -> bytes:
    """A short global name of an automaton's content (keys of shared mask entries)."""
    return hashlib.blake2b(repr((dfa.trans, dfa.accept)).encode(), digest_size=16).digest()


def _spelling_trie(names) -> tuple[list[dict[int, int]], list[bool]]:
    """A trie over every JSON spelling of `names` (byte -> child per node; which nodes end a
    name). Every spelling of one character from one node ends in one node."""
    trans: list[dict[int, int]] = [{}]
    accept = [False]
    for name in dict.fromkeys(names):
        ends = [0]
        if (name.isascii() and name.isprintable()
                and '"' not in name and "/" not in name and "\\" not in name):
            trie_add(trans, accept, name.encode())  # (each character spelled one way)
            continue
        for ch in name:
            nxt: list[int] = []
            for spelling in _char_spellings(ord(ch)):
                for start in ends:
                    s = start
                    for i, b in enumerate(spelling):
                        t = trans[s].get(b)
                        if t is None:
                            if i == len(spelling) - 1 and nxt:
                                t = nxt[0]
                            else:
                                t = len(trans)
                                trans.append({})
                                accept.append(False)
                            trans[s][b] = t
                        s = t
                    if s not in nxt:
                        nxt.append(s)
            ends = nxt
        for s in ends:
            accept[s] = True
    return trans, accept


@functools.lru_cache(maxsize=4096)
def _char_spellings(cp: int) -> tuple[bytes, ...]:
    """Every byte string that spells code point `cp` inside a JSON string (see
    `json_char_class`): raw UTF-8 where allowed, its escapes with hex digits in either case."""
    raw, escapes = _json_spellings(((cp, cp),))
    out = [chr(cp).encode("utf-8", "surrogatepass")] if raw else []
    for spelling in escapes:
        variants = [b""]
        for part in spelling:
            options = [part] if isinstance(part, bytes) else \
                sorted({part.lower().encode(), part.upper().encode()})
            variants = [v + o for v in variants for o in options]
        out += variants
    return tuple(out)


def _hex_digit(nfa: automaton.NFA, digit: str) -> automaton.Fragment:
    both = {ord(digit.lower()), ord(digit.upper())}
    return automaton.byte_class(nfa, [(b, b) for b in sorted(both)])


def _subtract(ranges, cut):
    out = []
    for lo, hi in ranges:
        pieces = [(lo, hi)]
        for clo, chi in cut:
            nxt = []
            for plo, phi in pieces:
                if chi < plo or clo > phi:
                    nxt.append((plo, phi))
                    continue
                if plo < clo:
                    nxt.append((plo, clo - 1))
                if phi > chi:
                    nxt.append((chi + 1, phi))
            pieces = nxt
        out.extend(pieces)
    return out


def _members(ranges, probe):
    """The code points of `probe` that `ranges` holds, in order."""
    return sorted(cp for plo, phi in probe for lo, hi in ranges
                  for cp in range(max(lo, plo), min(hi, phi) + 1))
