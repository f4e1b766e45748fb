"""Byte-level automata built at compile time: NFA construction, determinization, minimization.

Terminals (phrases, character classes, JSON numbers, later regexes) are described here as
byte NFAs and turned into small deterministic automata over UTF-8 bytes; the core runs them.
Nothing here runs per token. Their products (intersections, differences) are in
`pse.products`, the lengths of their matches in `pse.counted_lengths`.
"""

from __future__ import annotations

import functools
import gc
from itertools import chain
from typing import Hashable, Iterable, Iterator, Sequence

import numpy as np

from pse import limits
from pse._core.frozen import (frozen_chain, frozen_flags, frozen_rows, untrack_acyclic,
                              untrack_if_settled)
from pse._core.structure import class_cuts
from pse._core.automata import (live_states as _live_states, moore_blocks, quotient, refine,
                                subsets, trimmed)

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

CodeRange = tuple[int, int]

# count_marks gives up past this many states (beyond twice the marked automaton's)
COUNT_MARKS_STATES = 4096


class NFA:
    """A byte NFA under construction: states with byte-range edges and epsilon edges, and
    anchor edges: epsilon edges taken only before the first byte (`at_start`, a regex's ^)
    or after the last (`at_end`, its $)."""

    def __init__(self) -> None:
        self.edges: list[list[tuple[int, int, int]]] = []
        self.eps: list[list[int]] = []
        # (few states have anchors: kept apart, so that the usual closure stays as it was)
        self.at_start: dict[int, list[int]] = {}
        self.at_end: dict[int, list[int]] = {}

    def add_state(self) -> int:
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def add_bytes(self, src: int, lo: int, hi: int, dst: int) -> None:
        self.edges[src].append((lo, hi, dst))

    def add_eps(self, src: int, dst: int) -> None:
        self.eps[src].append(dst)

    def add_anchor(self, src: int, dst: int, at_end: bool) -> None:
        (self.at_end if at_end else self.at_start).setdefault(src, []).append(dst)


# A fragment is (start, end) of a piece of NFA with one entry and one exit.
Fragment = tuple[int, int]


def literal(nfa: NFA, data: bytes) -> Fragment:
    start = cur = nfa.add_state()
    for b in data:
        nxt = nfa.add_state()
        nfa.add_bytes(cur, b, b, nxt)
        cur = nxt
    return start, cur


def byte_class(nfa: NFA, ranges: Iterable[tuple[int, int]]) -> Fragment:
    start, end = nfa.add_state(), nfa.add_state()
    for lo, hi in ranges:
        nfa.add_bytes(start, lo, hi, end)
    return start, end


def char_class(nfa: NFA, ranges: Sequence[CodeRange]) -> Fragment:
    """One UTF-8 encoded character whose code point lies in one of `ranges` (surrogates, which
    UTF-8 cannot encode, are left out)."""
    ranges = tuple(normalize_ranges(ranges))
    if all(hi < 0x80 for _, hi in ranges):
        return byte_class(nfa, ranges)
    # deterministic, with shared tails: the subset construction of a pattern made of large
    # classes (\S, [^"]) then tracks one state per character, not one per UTF-8 path
    return embed(nfa, _char_class_dfa(ranges))


@functools.lru_cache(maxsize=4096)
def _char_class_dfa(ranges: tuple[CodeRange, ...]) -> DFA:
    nfa = NFA()
    return determinize(nfa, _utf8_paths(nfa, ranges))


def _utf8_paths(nfa: NFA, ranges: Sequence[CodeRange]) -> Fragment:
    start, end = nfa.add_state(), nfa.add_state()
    for lo, hi in ranges:
        for seq in utf8_sequences(lo, hi):
            cur = start
            for i, (blo, bhi) in enumerate(seq):
                nxt = end if i == len(seq) - 1 else nfa.add_state()
                nfa.add_bytes(cur, blo, bhi, nxt)
                cur = nxt
    return start, end


def concat(nfa: NFA, parts: Sequence[Fragment]) -> Fragment:
    if not parts:
        s = nfa.add_state()
        return s, s
    for (_, e), (s, _) in zip(parts, parts[1:]):
        nfa.add_eps(e, s)
    return parts[0][0], parts[-1][1]


def alternation(nfa: NFA, parts: Sequence[Fragment]) -> Fragment:
    start, end = nfa.add_state(), nfa.add_state()
    for s, e in parts:
        nfa.add_eps(start, s)
        nfa.add_eps(e, end)
    return start, end


def optional(nfa: NFA, frag: Fragment) -> Fragment:
    start, end = nfa.add_state(), nfa.add_state()
    nfa.add_eps(start, frag[0])
    nfa.add_eps(frag[1], end)
    nfa.add_eps(start, end)
    return start, end


def star(nfa: NFA, frag: Fragment) -> Fragment:
    hub = nfa.add_state()
    nfa.add_eps(hub, frag[0])
    nfa.add_eps(frag[1], hub)
    return hub, hub


def plus(nfa: NFA, frag: Fragment) -> Fragment:
    end = nfa.add_state()
    nfa.add_eps(frag[1], frag[0])
    nfa.add_eps(frag[1], end)
    return frag[0], end


class ContentKey(tuple):
    """A tuple that computes its hash once: an automaton's key holds all its transitions, and
    the compiler and the caches look it up many times."""

    def __hash__(self) -> int:
        h = self.__dict__.get("hash")
        if h is None:
            h = self.__dict__["hash"] = tuple.__hash__(self)
        return h

    def __reduce__(self) -> tuple:
        # without the hash kept: a str's hash differs from one process to the next (the
        # compile cache pickles terminal keys)
        return ContentKey, (tuple(self),)


class DFA:
    """A deterministic byte automaton: `trans[s]` is a sorted tuple of (lo, hi, target).

    State 0 is the start. Every state can reach an accepting state (the automaton is trimmed).
    """

    __slots__ = ("trans", "accept", "_dense", "_cuts", "_key")

    def __init__(self, trans: Sequence[Sequence[tuple[int, int, int]]],
                 accept: Sequence[bool], dense: np.ndarray | None = None,
                 key: Hashable | None = None, cuts: np.ndarray | None = None) -> None:
        """`dense`, `cuts`: what `dense()` and `cuts()` return, when the caller has them
        already. `key`: what `key()` returns instead of the content, for an automaton its
        maker names in fewer words (equal names must mean equal automata; the converse may
        fail, which only loses sharing)."""
        # frozen as tuples the garbage collector does not track: cached automata (thousands,
        # each range a tuple) would otherwise make collections slow
        self.trans = frozen_rows(trans)
        self.accept = frozen_flags(accept)
        self._dense = dense
        self._cuts = cuts
        self._key = key  # (see key())
        if key is not None:
            untrack_if_settled(key)  # (a name of strings and tuples: like the rows)
        # nor the automaton, which then holds only those tuples, arrays and its key (the
        # caches' tuples holding it can be untracked too: bounded_cache); not a subclass's,
        # whose other attributes could close a cycle
        if type(self) is DFA and not (gc.is_tracked(self.trans) or gc.is_tracked(self.accept)
                                      or key is not None and gc.is_tracked(key)):
            untrack_acyclic(self)

    def dense(self) -> np.ndarray:
        """The transitions as a read-only (n_states, 256) int32 array (-1: no edge), built
        once: terminal DFAs are cached across structures and spread out for each one's
        tables."""
        if self._dense is None:
            trans = self.trans
            n = len(trans)
            counts = list(map(len, trans))
            if sum(counts) < 64:  # a few ranges: single bytes at once, the others a slice each
                dense = np.full((n, 256), -1, dtype=np.int32)
                at, to = [], []
                for s, row in enumerate(trans):
                    for lo, hi, t in row:
                        if lo == hi:
                            at.append(256 * s + lo)
                            to.append(t)
                        else:
                            dense[s, lo:hi + 1] = t
                if at:
                    dense.reshape(-1)[at] = to
            else:  # many: every range's bytes at once
                flat = np.fromiter(chain.from_iterable(chain.from_iterable(trans)),
                                   dtype=np.int64).reshape(-1, 3)
                lo, hi, target = flat[:, 0], flat[:, 1], flat[:, 2]
                start = np.repeat(np.arange(n, dtype=np.int64) * 256, counts) + lo
                length = hi - lo + 1
                ends = np.cumsum(length)
                dense = np.full(n * 256, -1, dtype=np.int32)
                dense[np.arange(ends[-1]) + np.repeat(start - (ends - length), length)] = \
                    np.repeat(target, length)
                dense = dense.reshape(n, 256)
            dense.setflags(write=False)
            self._dense = dense
        return self._dense

    def cuts(self) -> np.ndarray:
        """Bool per byte: some state's target changes from the byte before to this one (the
        bytes where a byte class must start), built once."""
        if self._cuts is None:
            self._cuts = class_cuts(self.trans)
        return self._cuts

    def key(self) -> Hashable:
        """Equal for automata with equal transitions and acceptance (or the name given when
        made); made (and hashed) once: automata come from caches, and hashing all
        transitions is not cheap."""
        if self._key is None:
            self._key = ContentKey(("dfa", self.trans, self.accept))
            if not gc.is_tracked(self):  # (its parts are untracked: so is the key)
                untrack_acyclic(self._key)
        return self._key

    @property
    def n_states(self) -> int:
        return len(self.trans)

    def matches(self, data: bytes) -> bool:
        s = 0
        for b in data:
            s = self.next(s, b)
            if s < 0:
                return False
        return self.accept[s]

    def next(self, s: int, b: int) -> int:
        for lo, hi, t in self.trans[s]:
            if lo <= b <= hi:
                return t
        return -1

    def is_prefix_free(self) -> bool:
        """True when no accepting state has an outgoing edge (a match never extends)."""
        return all(not (acc and tr) for acc, tr in zip(self.accept, self.trans))


def _eps_closure(nfa: NFA, states: Iterable[int], anchors: dict | None = None
                 ) -> frozenset[int]:
    """The states epsilon edges reach from `states`, and the anchor edges in `anchors`."""
    seen = set(states)
    todo = list(seen)
    while todo:
        s = todo.pop()
        for t in nfa.eps[s]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
        if anchors:
            for t in anchors.get(s, ()):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
    return frozenset(seen)


# A determinized automaton with more states than this is refused (subset construction can
# grow exponentially: a search for `a.{30}` needs 2^30 states).
MAX_DFA_STATES = 10_000


def determinize(nfa: NFA, frag: Fragment) -> DFA:
    """Subset construction over byte ranges (in C, `_core.automata.subsets`, where the NFA
    has no anchors), then trimming and minimization.

    Raises:
        GrammarError: more than MAX_DFA_STATES states.
    """
    anchored = bool(nfa.at_start or nfa.at_end)
    if not anchored:
        trans, accept = subsets(nfa.edges, nfa.eps, frag[0], frag[1], MAX_DFA_STATES,
                                limits.check_budget)
        return minimize(trim(DFA(trans, accept)))
    # below, the same construction with anchors: the start is the one place where both kinds
    # hold (`$^` matches ""), so a set met again later is another state
    start = _eps_closure(nfa, [frag[0]], nfa.at_start)
    index: dict[frozenset[int], int] = {}
    sets = [start]
    trans: list[list[tuple[int, int, int]]] = []
    accept: list[bool] = []
    closures: dict[frozenset[int], frozenset[int]] = {}  # targets -> their closure
    i = 0
    while i < len(sets):
        limits.check_budget()
        cur = sets[i]
        if frag[1] in cur:
            accept.append(True)
        else:
            ends = nfa.at_end if i else {k: nfa.at_start.get(k, []) + nfa.at_end.get(k, [])
                                         for k in {*nfa.at_start, *nfa.at_end}}
            accept.append(frag[1] in _eps_closure(nfa, cur, ends))
        i += 1
        row: list[tuple[int, int, int]] = []
        for lo, hi, targets in _swept([e for s in cur for e in nfa.edges[s]]):
            target_set = closures.get(targets)
            if target_set is None:
                target_set = closures[targets] = _eps_closure(nfa, targets)
            j = index.get(target_set)
            if j is None:
                j = index[target_set] = len(sets)
                sets.append(target_set)
                if len(sets) > MAX_DFA_STATES:
                    from pse.errors import GrammarError

                    raise GrammarError(f"the automaton needs more than {MAX_DFA_STATES} states "
                                       "(MAX_DFA_STATES)")
            if row and row[-1][2] == j and row[-1][1] == lo - 1:
                row[-1] = (row[-1][0], hi, j)
            else:
                row.append((lo, hi, j))
        trans.append(row)
    return minimize(trim(DFA(trans, accept)))


def literal_dfa(data: bytes) -> DFA:
    """The minimal DFA of exactly `data`: a chain (no subset construction needed)."""
    return DFA(frozen_chain(bytes(data)), (False,) * len(data) + (True,))


def then_literal(dfa: DFA, data: bytes) -> DFA:
    """The DFA of `dfa`'s language followed by `data` (not empty). Built directly (each
    accepting state gains an edge into a chain of `data`'s bytes) when `data`'s first byte is
    on no edge of `dfa`: the result is then deterministic, and minimal if `dfa` is (a
    word of `dfa` followed by `data` still tells its states apart). Otherwise through the
    subset construction."""
    if not data:
        raise ValueError("then_literal needs at least one byte")
    first = data[0]
    if any(lo <= first <= hi for row in dfa.trans for lo, hi, _ in row):
        nfa = NFA()
        frag = concat(nfa, [embed(nfa, dfa), literal(nfa, data)])
        return minimize(determinize(nfa, frag))
    n = dfa.n_states
    trans = [sorted(row + ((first, first, n),)) if accepting else row
             for row, accepting in zip(dfa.trans, dfa.accept)]
    trans += [[(b, b, n + i + 1)] for i, b in enumerate(data[1:])] + [[]]
    return DFA(trans, [False] * (n + len(data) - 1) + [True])


def concatenate(parts: Sequence[DFA]) -> DFA:
    """The DFA of a word of each of `parts`, one after the other, where each part has one
    accepting state and no edge leaves it: each part's accepting state is the next one's
    start, so the result is deterministic as built. It is minimal when the parts are and no
    edge enters a part's start (one character of a class each, as `lark_terminals` gives:
    then a state's words have as many parts left as its own part's place says).

    Raises:
        ValueError: a part has more than one accepting state, or an edge leaves it.
    """
    trans: list = []
    start = 0  # the number of this part's start
    for part in parts:
        ends = [s for s, accepting in enumerate(part.accept) if accepting]
        if len(ends) != 1 or part.trans[ends[0]] or ends[0] == 0:
            raise ValueError("concatenate needs parts whose one accepting state ends every word")
        end = ends[0]
        after = start + part.n_states - 1  # (the part's end: the next part's start)

        def number(s: int, start: int = start, end: int = end, after: int = after) -> int:
            return after if s == end else start + s - (s > end)

        trans += [[(lo, hi, number(t)) for lo, hi, t in row]
                  for s, row in enumerate(part.trans) if s != end]
        start = after
    trans.append([])
    return DFA(trans, [False] * start + [True])


def then_run(dfa: DFA, run: DFA) -> DFA | None:
    """The DFA of `dfa`'s language followed by a text of `run` (whose language holds the
    empty text), built directly: each accepting state of `dfa` also takes the edges of `run`'s
    start. None when that would not be deterministic (an accepting state of `dfa` has an
    edge on a byte that starts a text of `run`): use the subset construction then."""
    if not run.accept[0]:
        raise ValueError("then_run needs a run that accepts the empty text")
    starts = run.trans[0]
    for row, accepting in zip(dfa.trans, dfa.accept):
        if accepting and any(lo <= b_hi and b_lo <= hi for lo, hi, _ in row
                             for b_lo, b_hi, _ in starts):
            return None
    # run's states after dfa's; its start only if an edge of run comes back to it
    reentered = any(t == 0 for row in run.trans for _, _, t in row)
    n = dfa.n_states
    number = [n + k - (not reentered) for k in range(run.n_states)]
    shifted = [[(lo, hi, number[t]) for lo, hi, t in row] for row in run.trans]
    trans = [sorted(row + tuple(shifted[0])) if accepting else row
             for row, accepting in zip(dfa.trans, dfa.accept)]
    trans += shifted if reentered else shifted[1:]
    accept = list(dfa.accept) + list(run.accept if reentered else run.accept[1:])
    return DFA(trans, accept)


def repeat_unit(unit: DFA, lo: int, hi: int | None) -> DFA:
    """The DFA of `lo` to `hi` (None: any number of) texts of `unit` in a row, built without
    the subset construction: copies of `unit`'s states in a chain, each copy's accepting
    state the next copy's start. `unit` must have one accepting state, with no edge out, and
    no edge into its start (one JSON string character: then the result is the minimal DFA,
    numbered as `minimize` numbers it; tests compare it with the subset construction's).
    """
    if (unit.accept.count(True) != 1 or unit.trans[unit.accept.index(True)]
            or any(t == 0 for row in unit.trans for _, _, t in row)):
        raise ValueError("repeat_unit: the unit needs one accepting state with no edge out "
                         "and no edge into its start")
    final = unit.accept.index(True)
    inner = [q for q in range(unit.n_states) if q != final]  # (the start first)
    k = len(inner)
    offset = {q: i for i, q in enumerate(inner)}

    def copy(c: int, q: int, end: int) -> list[tuple[int, int, int]]:
        return [(a, b, end if t == final else k * c + offset[t]) for a, b, t in unit.trans[q]]

    if hi is None:
        # lo copies, then the start again, accepting: a unit begun there is one begun in the
        # last copy (both may go on with any number of units), and ends back there
        last = max(lo, 1) - 1
        trans = [copy(c, q, k * (c + 1) if c < last else k * lo)
                 for c in range(last + 1) for q in inner]
        if lo:
            trans.append(copy(last, 0, k * lo))
        top = lo
    else:
        trans = [copy(c, q, k * (c + 1)) for c in range(hi) for q in inner]
        trans.append([])  # after hi units
        top = hi
    accept = [False] * len(trans)
    for c in range(lo, top + 1):
        accept[k * c] = True
    return trim(DFA(trans, accept))


def _swept(edges: list[tuple[int, int, Hashable]]
           ) -> Iterator[tuple[int, int, frozenset]]:
    """The byte ranges where some of `edges` (lo, hi, target) hold, with their targets: the
    bytes cut where an edge starts or ends, swept once (a set of states' UTF-8 classes bring
    dozens of edges, few of them at a time)."""
    changes: dict[int, list[tuple[Hashable, int]]] = {}
    for lo, hi, t in edges:
        changes.setdefault(lo, []).append((t, 1))
        changes.setdefault(hi + 1, []).append((t, -1))
    cuts = sorted(changes)
    holding: dict[Hashable, int] = {}  # target -> how many edges to it hold here
    for lo, nxt_cut in zip(cuts, cuts[1:]):
        for t, step in changes[lo]:
            held = holding.get(t, 0) + step
            if held:
                holding[t] = held
            else:
                del holding[t]
        if holding:
            yield lo, nxt_cut - 1, frozenset(holding)


def count_marks(dfa: DFA, mark: int) -> tuple[DFA, list[bool]] | None:
    """`dfa` with its edges on the byte `mark` taken as counted empty steps: a regex's
    repeat with a mark (a byte no text holds) before or after each iteration
    (`regex.compile_counted_regex`) is so counted at run time rather than unrolled.

    A subset construction over (state, a count not yet taken): where a mark is passed, the
    bytes read may not yet tell whether it was (`\\S` or `\\s` after a space, as JSON spells
    them, begin alike), so the step counts on the edge where every path has passed it.
    Returns (the DFA, per state whether entering it counts one step), or None where the count
    is not a function of the text: two marks pending at once, a text that ends with its count
    undecided, or more than COUNT_MARKS_STATES states.
    """
    def moves(q: int, pending: int) -> list[tuple[int, int, tuple[int, int]]] | None:
        out = []
        for lo, hi, t in dfa.trans[q]:
            if not lo <= mark <= hi:
                out.append((lo, hi, (t, pending)))
                continue
            if lo < mark:
                out.append((lo, mark - 1, (t, pending)))
            if pending or dfa.accept[t] or any(a <= mark <= b for a, b, _ in dfa.trans[t]):
                return None  # a second mark pending (marks in a row, or one ending the text)
            out += [(a, b, (u, 1)) for a, b, u in dfa.trans[t]]
        return out

    start = (frozenset({(0, 0)}), False)
    index = {start: 0}
    order = [start]
    trans: list[list[tuple[int, int, int]]] = []
    accept: list[bool] = []
    limit = COUNT_MARKS_STATES + 2 * dfa.n_states
    while len(trans) < len(order):
        limits.check_budget()
        cur, _ = order[len(trans)]
        ends = {pending for q, pending in cur if dfa.accept[q]}
        if 1 in ends:
            return None  # the text may end here with a count undecided
        accept.append(bool(ends))
        edges = []
        for q, pending in cur:
            found = moves(q, pending)
            if found is None:
                return None
            edges += found
        row: list[tuple[int, int, int]] = []
        for lo, hi, targets in _swept(edges):
            counts = min(p for _, p in targets) == 1  # every path has passed a mark
            if counts:
                targets = frozenset((t, 0) for t, _ in targets)
            j = index.setdefault((targets, counts), len(order))
            if j == len(order):
                order.append((targets, counts))
                if len(order) > limit:
                    return None
            if row and row[-1][2] == j and row[-1][1] == lo - 1:
                row[-1] = (row[-1][0], hi, j)
            else:
                row.append((lo, hi, j))
        trans.append(row)
    return DFA(trans, accept), [counts for _, counts in order]


def live_states(dfa: DFA) -> list[bool]:
    """Which states of `dfa` can reach an accepting state (in C, `_core.automata.live_states`)."""
    return _live_states(dfa.trans, dfa.accept)


def trim(dfa: DFA, kept: list[int] | None = None) -> DFA:
    """Drop states that cannot reach an accepting state (dead ends) or cannot be reached
    (in C, `_core.automata.trimmed`). `kept`, when given, receives the old number of each new
    state."""
    found = trimmed(dfa.trans, dfa.accept)
    if found is None:
        return DFA([[]], [False])  # the empty language; callers check `accept`
    trans, accept, order = found
    if kept is not None:
        kept.extend(order)
    return DFA(trans, accept)


# Moore rounds tried before Hopcroft's refinement takes over (see `minimize`), and past
# _MOORE_STATES states (a long chain, as a bounded repeat unrolls: Moore would need a round per
# link) the rounds that still find an automaton minimal already or nearly so.
_MOORE_ROUNDS = 12
_MOORE_STATES = 256
_MOORE_ROUNDS_LARGE = 2


def minimize(dfa: DFA) -> DFA:
    """The minimal equivalent DFA; state 0 stays the start.

    Moore's refinement (split blocks by the blocks their edges lead to, until stable; in C,
    `_core.automata.moore_blocks`) is the fastest for the small automata terminals have, but
    needs one round per state along a chain (quadratic for `x{5000}`). So after
    `_MOORE_ROUNDS` rounds (fewer past `_MOORE_STATES`) Hopcroft's refinement finishes from
    the partition reached (O(k n log n) over k byte classes). The DFA is trimmed, so no state
    equals the implicit dead state: states with edges on different bytes start in different
    blocks."""
    n = dfa.n_states
    if n == 1:
        return dfa
    block, stable = moore_blocks(dfa.trans, dfa.accept,
                                 _MOORE_ROUNDS if n <= _MOORE_STATES else _MOORE_ROUNDS_LARGE,
                                 limits.check_budget)
    if not stable:
        block = refine(dfa.trans, block, limits.check_budget)
    return DFA(*quotient(dfa.trans, dfa.accept, block))


def peel_order(succ: Sequence[Iterable[int]]) -> list[int]:
    """The nodes of a graph (`succ[s]`: where s's edges lead) with no edge in, then those whose
    every edge in comes from one already listed (a topological order); the nodes left out
    lie on a cycle or after one."""
    indegree = [0] * len(succ)
    for row in succ:
        for t in row:
            indegree[t] += 1
    order = [s for s, n in enumerate(indegree) if n == 0]
    for s in order:
        for t in succ[s]:
            indegree[t] -= 1
            if indegree[t] == 0:
                order.append(t)
    return order


# ---------------------------------------------------------------------------------------------
# Code point sets and their UTF-8 encodings


def normalize_ranges(ranges: Iterable[CodeRange]) -> list[CodeRange]:
    """Sorted, merged, surrogate-free code point ranges."""
    out: list[CodeRange] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    cut: list[CodeRange] = []
    for lo, hi in out:
        if lo < SURROGATES[0] <= hi or lo <= SURROGATES[1] < hi or SURROGATES[0] <= lo <= hi <= SURROGATES[1]:
            if lo < SURROGATES[0]:
                cut.append((lo, SURROGATES[0] - 1))
            if hi > SURROGATES[1]:
                cut.append((SURROGATES[1] + 1, hi))
        else:
            cut.append((lo, hi))
    return cut


def complement(ranges: Sequence[CodeRange]) -> list[CodeRange]:
    out: list[CodeRange] = []
    nxt = 0
    for lo, hi in normalize_ranges(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return normalize_ranges(out)


_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF)


def utf8_sequences(lo: int, hi: int) -> Iterator[list[tuple[int, int]]]:
    """Split a surrogate-free code point range into byte-range sequences of equal length.

    Each yielded sequence is a list of (lo, hi) byte ranges, one per byte of the encoding;
    together the sequences match exactly the UTF-8 encodings of the code points in [lo, hi].
    """
    todo = [(lo, hi)]
    while todo:
        lo, hi = todo.pop()
        if lo > hi:
            continue
        split = next((b for b in _LENGTH_LIMITS if lo <= b < hi), None)
        if split is not None:
            todo.append((split + 1, hi))
            todo.append((lo, split))
            continue
        if hi <= 0x7F:
            yield [(lo, hi)]
            continue
        n = len(chr(lo).encode("utf-8"))
        done = False
        for i in range(1, n):
            m = (1 << (6 * i)) - 1
            if lo & ~m != hi & ~m:
                if lo & m:
                    todo.append(((lo | m) + 1, hi))
                    todo.append((lo, lo | m))
                    done = True
                    break
                if hi & m != m:
                    todo.append((hi & ~m, hi))
                    todo.append((lo, (hi & ~m) - 1))
                    done = True
                    break
        if done:
            continue
        a, b = chr(lo).encode("utf-8"), chr(hi).encode("utf-8")
        yield [(a[k], b[k]) for k in range(n)]


def paired_ranges(row1: list[tuple[int, int, int]], row2: list[tuple[int, int, int]]
                   ) -> Iterator[tuple[int, int, int, int]]:
    """(lo, hi, t1, t2) over the bytes `row1` covers, cut where `row2` changes: t2 is row2's
    target there, or -1. Both rows are sorted, disjoint ranges (one merge pass)."""
    j, n2 = 0, len(row2)
    for lo, hi1, t1 in row1:
        while lo <= hi1:
            while j < n2 and row2[j][1] < lo:
                j += 1
            if j < n2 and row2[j][0] <= lo:
                hi, t2 = min(hi1, row2[j][1]), row2[j][2]
            else:
                hi, t2 = (hi1 if j == n2 else min(hi1, row2[j][0] - 1)), -1
            yield lo, hi, t1, t2
            lo = hi + 1


def union(dfas: Sequence[DFA]) -> DFA:
    """A DFA for the texts any of `dfas` matches."""
    nfa = NFA()
    return determinize(nfa, alternation(nfa, [embed(nfa, d) for d in dfas]))


def embed(nfa: NFA, dfa: DFA) -> Fragment:
    """A copy of `dfa` inside `nfa`, as a fragment to compose with others."""
    states = [nfa.add_state() for _ in range(dfa.n_states)]
    end = nfa.add_state()
    for s, row in enumerate(dfa.trans):
        for lo, hi, t in row:
            nfa.add_bytes(states[s], lo, hi, states[t])
        if dfa.accept[s]:
            nfa.add_eps(states[s], end)
    return states[0], end


def literals(nfa: NFA, words: Sequence[bytes]) -> Fragment:
    """Any one of `words` (a trie once determinized)."""
    return alternation(nfa, [literal(nfa, w) for w in words])


# A trie of literals larger than this (in states) is refused (compile time and memory).
MAX_TRIE_STATES = 1_000_000


def trie(words: Iterable[bytes], zero_tails: Iterable[bytes] = (),
         fraction_zeros: Iterable[bytes] = ()) -> DFA:
    """A DFA for any one of `words`, built as a trie (no subset construction, so thousands of
    words cost one state per distinct prefix). Number spellings: a word of `zero_tails` (an
    integer) may go on with "." and zeros (it need not be among `words`: then only those
    spellings are accepted), one of `fraction_zeros` (a decimal) with zeros.

    Raises:
        GrammarError: more than MAX_TRIE_STATES states.
    """
    children: list[dict[int, int]] = [{}]
    accept = [False]

    def state() -> int:
        if len(children) >= MAX_TRIE_STATES:
            from pse.errors import GrammarError

            raise GrammarError(f"a list of literals needs more than {MAX_TRIE_STATES} automaton "
                               "states (MAX_TRIE_STATES)")
        children.append({})
        accept.append(False)
        return len(children) - 1

    def path(word: bytes) -> int:
        s = 0
        for b in word:
            nxt = children[s].get(b)
            if nxt is None:
                nxt = children[s][b] = state()
            s = nxt
        return s

    for word in words:
        accept[path(word)] = True
    dot, zero = ord("."), ord("0")
    zeros = -1  # one shared state: accepts, and takes more zeros

    def zero_run(s: int) -> None:
        # s goes on with one or more zeros to an accepting state; where another word already
        # goes on with zeros (1.5 beside 1.505), its states on the way accept too
        nonlocal zeros
        while True:
            u = children[s].get(zero)
            if u is None:
                if zeros < 0:
                    zeros = state()
                    children[zeros][zero] = zeros
                    accept[zeros] = True
                children[s][zero] = zeros
                return
            if u == zeros:
                return
            accept[u] = True
            s = u

    integers = [path(w) for w in zero_tails]  # every path first: tails below are shared
    decimals = [path(w) for w in fraction_zeros]
    point = -1
    for s in integers:
        if dot in children[s]:
            zero_run(children[s][dot])
        else:
            if point < 0:
                point = state()
                zero_run(point)
            children[s][dot] = point
    for s in decimals:
        zero_run(s)
    dfa = DFA([sorted((b, b, t) for b, t in row.items()) for row in children], accept)
    # the helpers refer to each other through this frame: a cycle that would keep `children`
    # until the garbage collector ran
    state = path = zero_run = None  # type: ignore[assignment]  (not del: Cython refuses it)
    return dfa

