"""`Regex`: a regular expression in Python `re` syntax, compiled to a byte automaton.

`re`'s own parser reads the pattern; the automaton is built here, over UTF-8 bytes, so `.` and
classes match whole characters. Anchors anywhere are anchor edges of the NFA (see
`automaton.NFA`). Lookaheads at the start of a pattern (`^(?!org\\.)\\w+`) are automata too:
the texts the rest matches, with or without those that start with the lookahead's match.
Other lookaround and backreferences have no automaton and raise `GrammarError`.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from functools import lru_cache
from typing import Callable, Hashable, Iterator, Sequence

from pse import automaton, limits, products
from pse._core.unicode_tables import category_ranges
from pse.errors import GrammarError
from pse.machines import Terminal, _add_case_variants

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

# the flags as plain ints: `int & re.ASCII` goes through the enum's Python-level operator
_IGNORECASE, _ASCII, _DOTALL, _MULTILINE = (int(f) for f in (re.IGNORECASE, re.ASCII, re.DOTALL,
                                                             re.MULTILINE))

# More NFA states than this means a pattern (or its counted repetitions) is too large.
MAX_NFA_STATES = 200_000

# A repeat (x{m,n}, x{m,}) whose unrolled automaton would take more NFA states than this is
# counted at run time where it can be (compile_counted_regex): `(?:\S+\s+){0,199}` as JSON
# spells it unrolls to thousands of DFA states.
COUNTED_REPEAT_STATES = 1000
# The byte that marks a counted repeat's iterations in its automaton: no UTF-8 text holds it.
_MARK = 0xFF

# ECMA-262's line terminators: \n, \r, U+2028 and U+2029
_ECMA_LINE_ENDS = [(10, 10), (13, 13), (0x2028, 0x2029)]

# the items that match one character each
_ONE_CHAR_OPS = (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN)

CharClass = Callable[[automaton.NFA, Sequence[tuple[int, int]]], automaton.Fragment]


@lru_cache(maxsize=None)
def _unicode_category(name: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of `re`'s Unicode \\d, \\w or \\s (str.isdecimal, isalnum or '_',
    isspace), computed once (`_core.unicode_tables`: every code point, in C)."""
    return category_ranges(name)


_ASCII_CATEGORY = {
    "digit": ((0x30, 0x39),),
    "space": ((0x09, 0x0D), (0x20, 0x20)),
    "word": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
}
# ECMA-262's \s (JSON Schema patterns are ECMA-262 regexes): \d and \w stay ASCII
_ECMA_SPACE = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
               (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
               (0xFEFF, 0xFEFF))


def _category(code, ascii_only: bool, ecma: bool) -> list[tuple[int, int]]:
    name = str(code).lower()
    negate = "not_" in name
    kind = "digit" if "digit" in name else "space" if "space" in name else \
        "word" if "word" in name else None
    if kind is None:
        raise GrammarError(f"unsupported character category {code}")
    if ecma:
        ranges = list(_ECMA_SPACE if kind == "space" else _ASCII_CATEGORY[kind])
    else:
        ranges = list(_ASCII_CATEGORY[kind] if ascii_only else _unicode_category(kind))
    return automaton.complement(ranges) if negate else ranges


class _Builder:
    def __init__(self, pattern: str, flags: int, char_class: CharClass, ecma: bool,
                 assertions: bool = True, counted: tuple | None = None) -> None:
        # counted: (a repeat's (lo, hi, items), whether the mark goes before each iteration)
        # to build as a marked star (see compile_counted_regex)
        self.counted = counted
        self.counted_size = 0  # NFA states of the counted repeat's iteration
        self.pattern = pattern
        self.ecma = ecma
        self.assertions = assertions
        self.flags = flags
        self.nfa = automaton.NFA()
        self.char_class = char_class

    def chars(self, ranges: Sequence[tuple[int, int]], flags: int) -> automaton.Fragment:
        ranges = list(ranges)
        if flags & _IGNORECASE:
            ranges = _add_case_variants(ranges, bool(flags & _ASCII))
        self.check_size()
        return self.char_class(self.nfa, automaton.normalize_ranges(ranges))

    def check_size(self) -> None:
        limits.check_budget()
        if len(self.nfa.edges) > MAX_NFA_STATES:
            raise _too_large(self.pattern)

    def sequence(self, items, flags: int) -> automaton.Fragment:
        return automaton.concat(self.nfa, [self.node(op, av, flags) for op, av in items])

    def node(self, op, av, flags: int) -> automaton.Fragment:
        nfa = self.nfa
        if op in _ONE_CHAR_OPS:
            return self.chars(self.one_char(op, av, flags), 0)
        if op is _c.BRANCH:
            return automaton.alternation(nfa, [self.sequence(b, flags) for b in av[1]])
        if op is _c.SUBPATTERN:
            _group, add, remove, sub = av
            return self.sequence(sub, (flags | add) & ~remove)
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT":
            lo, hi, sub = av
            if self.counted is not None and av is self.counted[0]:
                return self.marked_star(sub, flags, self.counted[1])
            return self.repeat(lo, hi, sub, flags)
        if op is _c.AT:
            return self.anchor(av, flags)
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            raise self.lookaround_refused()
        if op in (_c.GROUPREF, _c.GROUPREF_EXISTS):
            raise GrammarError(f"regex {_shown(self.pattern)}: backreferences cannot be "
                               "compiled to an automaton")
        raise GrammarError(f"regex {_shown(self.pattern)}: unsupported construct {op}")

    def lookaround_refused(self) -> GrammarError:
        where = ("only lookaheads at the start of a pattern anchored there can"
                 if self.assertions else "not in a terminal: they would look past its text")
        return GrammarError(f"regex {_shown(self.pattern)}: lookaround assertions cannot be "
                            f"compiled to an automaton here ({where})")

    def terminal_anchor_refused(self) -> GrammarError:
        return GrammarError(
            f"regex {_shown(self.pattern)}: an anchor (^, $, \\A, \\Z) in a terminal ties "
            "where it matches to where it is in the whole text (as lark reads it), which "
            "pse's terminals do not know; remove it")

    def anchor(self, at, flags: int) -> automaton.Fragment:
        """^ or $ inside the pattern: an edge taken only at the start or end of the text."""
        if at in (_c.AT_BOUNDARY, _c.AT_NON_BOUNDARY):
            raise GrammarError(f"regex {_shown(self.pattern)}: word boundaries (\\b, \\B) are not "
                               "supported: they read the characters on both sides")
        if not self.assertions:
            raise self.terminal_anchor_refused()
        start = at in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING)
        # (Python's $ also matches before a final newline: a lookahead, not an edge)
        exact = at is _c.AT_BEGINNING_STRING or at is _c.AT_END_STRING or (
            not flags & _MULTILINE and (start or self.ecma))
        if not exact or at not in (
                _c.AT_BEGINNING, _c.AT_BEGINNING_STRING, _c.AT_END, _c.AT_END_STRING):
            raise GrammarError(f"regex {_shown(self.pattern)}: an anchor ({at}) is supported "
                               "only at the start or end of the pattern or of an alternative")
        a, b = self.nfa.add_state(), self.nfa.add_state()
        self.nfa.add_anchor(a, b, at_end=not start)
        return a, b

    def one_char(self, op, av, flags: int) -> list[tuple[int, int]]:
        """The characters an item of `_ONE_CHAR_OPS` matches, as ranges."""
        if op is _c.LITERAL:
            return _with_case(av, flags)
        if op is _c.NOT_LITERAL:
            return automaton.complement(_with_case(av, flags))
        if op is _c.ANY:  # (ECMA-262's . reads no line terminator; Python's, no newline)
            return [(0, automaton.MAX_CODE_POINT)] if flags & _DOTALL else \
                automaton.complement(_ECMA_LINE_ENDS if self.ecma else [(10, 10)])
        return self.char_set(av, flags, bool(flags & _ASCII))

    def char_set(self, items, flags: int, ascii_only: bool) -> list[tuple[int, int]]:
        ranges: list[tuple[int, int]] = []
        categories: list[tuple[int, int]] = []  # (folded without re's extra equivalences)
        negate = False
        for op, av in items:
            if op is _c.NEGATE:
                negate = True
            elif op is _c.LITERAL:
                ranges.append((av, av))
            elif op is _c.RANGE:
                ranges.append(av)
            elif op is _c.CATEGORY:
                categories.extend(_category(av, ascii_only, self.ecma))
            else:
                raise GrammarError(f"regex {_shown(self.pattern)}: unsupported class item {op}")
        if flags & _IGNORECASE:
            ranges = _add_case_variants(ranges, ascii_only) + _add_case_variants(
                categories, ascii_only, extras=False)
        else:
            ranges += categories
        if negate:
            ranges = automaton.complement(ranges)
        return ranges

    def repeat(self, lo: int, hi: int, sub, flags: int) -> automaton.Fragment:
        nfa = self.nfa
        copies = self.copies(sub, flags)
        parts = [next(copies) for _ in range(lo)]
        if hi == _c.MAXREPEAT:
            parts.append(automaton.star(nfa, next(copies)))
        elif hi > lo:
            # x{0,m} as m copies in a row, an epsilon edge to the end from a junction before
            # each (a state of its own: a copy's start may be entered again from inside it,
            # as a star's is): the closure after k copies is a junction and the end, where
            # nested optionals x(x(x)?)? hold the k ends still open (subsets in m^2)
            end = nfa.add_state()
            chain = []
            for _ in range(hi - lo):
                junction = nfa.add_state()
                nfa.add_eps(junction, end)
                chain += [(junction, junction), next(copies)]
            nfa.add_eps(chain[-1][1], end)
            parts.append((automaton.concat(nfa, chain)[0], end))
        self.check_size()
        return automaton.concat(nfa, parts)

    def copies(self, sub, flags: int) -> Iterator[automaton.Fragment]:
        """Fragments of `sub`, as many as asked for: the first built, the others copies of
        its states (a fragment's edges stay among the states it added), which is much less
        work than building a class or a group again for each iteration of a repeat."""
        nfa = self.nfa
        first = len(nfa.edges)
        start, end = self.sequence(sub, flags)
        last = len(nfa.edges)
        yield start, end
        edges, eps = nfa.edges, nfa.eps
        anchors = [(table, s, targets) for table in (nfa.at_start, nfa.at_end)
                   for s, targets in table.items() if first <= s < last]
        while True:
            self.check_size()
            off = len(edges) - first
            for s in range(first, last):
                edges.append([(lo, hi, t + off) for lo, hi, t in edges[s]])
                eps.append([t + off for t in eps[s]])
            for table, s, targets in anchors:
                table[s + off] = [t + off for t in targets]
            yield start + off, end + off

    def marked_star(self, sub, flags: int, mark_first: bool) -> automaton.Fragment:
        """Any number of `sub`'s iterations, each with the byte _MARK before or after it."""
        mark = automaton.byte_class(self.nfa, [(_MARK, _MARK)])
        before = len(self.nfa.edges)
        body = self.sequence(sub, flags)
        self.counted_size = len(self.nfa.edges) - before
        return automaton.star(self.nfa, automaton.concat(
            self.nfa, [mark, body] if mark_first else [body, mark]))


def _with_case(cp: int, flags: int) -> list[tuple[int, int]]:
    ranges = [(cp, cp)]
    return _add_case_variants(ranges, bool(flags & _ASCII)) if flags & _IGNORECASE else ranges


def _check_possessive(b: _Builder, items: list) -> None:
    """Refuse a possessive repeat (`x*+`, `x{m,n}+`) whose language is not the greedy one's.

    A possessive repeat takes as many iterations as it can and gives none back. Of a single
    character class C, repeated a fixed number of times or followed by what cannot start
    with a character of C (`[^"]*+"`), a greedy repeat gives none back either where the text
    matches: the next character, one of C, would have to be read by what follows (a `$`
    that may hold before a newline counts as reading it). Elsewhere (`a{5,}+a` matches
    nothing; `(?:a|ab)*+` gives no alternative back) it is a language of its own, not built
    here."""
    if "+" not in b.pattern:
        return  # (no possessive repeat: read in a few ns, not a walk of the items)
    def item_first(op, av, flags: int) -> tuple[list, bool] | None:
        """The characters `op` can read first and whether it can read none; None where an
        assertion decides it."""
        if op in _ONE_CHAR_OPS:
            return b.one_char(op, av, flags), False
        if op is _c.AT and av is _c.AT_END_STRING:
            return [], True  # (zero width, true only at the end)
        if op is _c.AT and av is _c.AT_END:  # (also before a newline: any with MULTILINE,
            # a final one in Python's; a search or a lookahead reads on past it)
            return ([], True) if b.ecma and not flags & _MULTILINE else ([(10, 10)], True)
        if op is _c.SUBPATTERN:
            return seq_first(av[3], 0, (flags | av[1]) & ~av[2])
        if op is _c.BRANCH:
            found = [seq_first(branch, 0, flags) for branch in av[1]]
            if None in found:
                return None
            return [c for chars, _ in found for c in chars], any(empty for _, empty in found)
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT":
            found = seq_first(av[2], 0, flags) if av[1] else ([], True)
            return None if found is None else (found[0], found[1] or av[0] == 0)
        return None

    def seq_first(seq: list, start: int, flags: int) -> tuple[list, bool] | None:
        chars: list[tuple[int, int]] = []
        for op, av in seq[start:]:
            found = item_first(op, av, flags)
            if found is None:
                return None
            chars += found[0]
            if not found[1]:
                return chars, False
        return chars, True

    def next_chars(frames: list) -> list[tuple[int, int]] | None:
        """What can be read first after a point: `frames` are the rests of the sequences
        around it, innermost first, each (items, start, flags, whether it may be skipped)."""
        chars: list[tuple[int, int]] = []
        for seq, start, flags, skippable in frames:
            found = seq_first(seq, start, flags)
            if found is None:
                return None
            chars += found[0]
            if not (found[1] or skippable):
                break
        return chars

    def walk(seq: list, flags: int, after: list) -> None:
        for i, (op, av) in enumerate(seq):
            rest = [(seq, i + 1, flags, False), *after]
            if op is _c.SUBPATTERN:
                walk(av[3], (flags | av[1]) & ~av[2], rest)
            elif op is _c.BRANCH:
                for branch in av[1]:
                    walk(branch, flags, rest)
            elif op in (_c.ASSERT, _c.ASSERT_NOT):
                walk(av[1], flags, [])
            elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):  # (another iteration may follow)
                walk(av[2], flags, [(av[2], 0, flags, True), *rest] if av[1] > 1 else rest)
            elif str(op) == "POSSESSIVE_REPEAT":
                lo, hi, sub = av
                if len(sub) != 1 or sub[0][0] not in _ONE_CHAR_OPS or lo != hi and (
                        (after_it := next_chars(rest)) is None
                        or _overlap(b.one_char(*sub[0], flags), after_it)):
                    raise GrammarError(
                        f"regex {_shown(b.pattern)}: a possessive repeat is supported only "
                        "where it matches what the greedy one does (of one character class, "
                        "a fixed number of times or followed by none of its characters, as "
                        "in [^\"]*+\"); write it greedy, or spell out the language it should "
                        "match")

    walk(items, b.flags, [])


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    """Whether two lists of code point ranges share a code point."""
    a, b = automaton.normalize_ranges(a), automaton.normalize_ranges(b)
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


# Alternatives a pattern may be split into so that its anchors come to its ends.
MAX_ALTERNATIVES = 16


def _alternatives(items: list) -> list[list]:
    """The top-level alternatives of a parsed pattern. A pattern with anchors or lookaheads
    inside is
    distributed over its top-level alternations and plain groups (a(b|c)d is abd|acd; Python's
    parser writes `^$|^a$` as `^(?:$|a$)`), so that anchors come to the ends of alternatives
    (Python's $ is refused inside one; a search wraps only unanchored ends in "anything") and
    lookaheads to their starts; at most MAX_ALTERNATIVES, else the pattern as it is."""
    if len(items) == 1 and items[0][0] is _c.BRANCH:
        branches = [list(b) for b in items[0][1][1]]
    else:
        branches = [list(items)]
    if not any(_assertion_inside(b) for b in branches):
        return branches
    out: list[list] = []
    todo = list(branches)
    while todo:
        seq = todo.pop()
        k = next((k for k, (op, av) in enumerate(seq) if op is _c.BRANCH
                  or (op is _c.SUBPATTERN and not av[1] and not av[2])), None)
        if k is None or not _assertion_inside(seq):
            out.append(seq)
            continue
        op, av = seq[k]
        subs = av[1] if op is _c.BRANCH else [av[3]]
        todo += [seq[:k] + list(sub) + seq[k + 1:] for sub in subs]
        if len(out) + len(todo) > MAX_ALTERNATIVES:
            return branches
    return out[::-1]


def _assertion_inside(items: list) -> bool:
    """Whether an anchor sits anywhere but at the start or end of `items`, or a lookaround
    anywhere but at its start."""
    rest, _, _ = _leading_lookaheads(items)
    rest, _, _ = _strip_anchors(rest)
    return _has_assertion(rest)


def _has_assertion(seq) -> bool:
    """Whether an anchor or a lookaround sits anywhere in `seq` (a module function, not a
    closure: one that calls itself is a reference cycle left to the garbage collector)."""
    for op, av in seq:
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            return True
        if op is _c.BRANCH and any(_has_assertion(b) for b in av[1]):
            return True
        if op is _c.SUBPATTERN and _has_assertion(av[3]):
            return True
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and _has_assertion(av[2]):
            return True
    return False


def _leading_lookaheads(items: list, multiline: bool = False
                        ) -> tuple[list, list[tuple[bool, list]], bool]:
    """The lookaheads at the start of a top-level sequence, with the ^ / \\A among them:
    (rest, [(positive, sub)], anchored). A ^ with `multiline` (a line's start) ends them."""
    items = list(items)
    checks: list[tuple[bool, list]] = []
    anchored = False
    while items:
        op, av = items[0]
        if op is _c.AT and (av is _c.AT_BEGINNING_STRING
                            or av is _c.AT_BEGINNING and not multiline):
            anchored = True
        elif op in (_c.ASSERT, _c.ASSERT_NOT) and av[0] == 1:
            checks.append((op is _c.ASSERT, list(av[1])))
        else:
            break
        items.pop(0)
    return items, checks, anchored


def search_for_all(patterns: Sequence[str]) -> str | None:
    """One pattern that, searched for, finds a match in a text exactly when each of
    `patterns` does (two JSON Schema `pattern`s merged): each one but the last a lookahead
    at the start. None when a pattern cannot be written inside another (malformed, or
    global flags such as `(?i)` that only the start of a pattern may set)."""
    parts = []
    for pattern in patterns:
        try:
            items = list(_parser.parse(pattern))
        except (re.error, OverflowError, RecursionError):
            return None
        # (a pattern every alternative of which is anchored starts where the text does:
        # written as it is, so that lookaheads at its start stay at the start)
        anchored = all(seq[:1] and seq[0][0] is _c.AT
                       and seq[0][1] in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING)
                       for seq in _alternatives(items))
        parts.append(f"(?:{pattern})" if anchored else f"[\\s\\S]*?(?:{pattern})")
    both = "^" + "".join(f"(?={p})" for p in parts[:-1]) + parts[-1]
    try:
        re.compile(both)
    except (re.error, OverflowError, RecursionError):
        return None
    return both


def _strip_anchors(items: list, multiline: bool = False
                   ) -> tuple[list, bool | str, bool | str]:
    """Leading ^ / \\A and trailing $ / \\Z of a top-level sequence: (rest, start, end), end
    "$" where the only ones are $ (Python's also matches before a final newline). With
    `multiline`, ^ and $ hold at a line's start and end: start or end "line" where those
    are the only ones."""
    items = list(items)
    start: bool | str = False
    end: bool | str = False
    while items and items[0][0] is _c.AT and items[0][1] in (_c.AT_BEGINNING,
                                                               _c.AT_BEGINNING_STRING):
        exact = items[0][1] is _c.AT_BEGINNING_STRING or not multiline
        start = True if exact or start is True else "line"
        items.pop(0)
    while items and items[-1][0] is _c.AT and items[-1][1] in (_c.AT_END, _c.AT_END_STRING):
        if items[-1][1] is _c.AT_END_STRING or end is True:
            end = True
        else:
            end = "line" if multiline else "$"
        items.pop()
    return items, start, end


@lru_cache(maxsize=1024)
@limits.within_budget(lambda pattern, *args, **kwargs: f"the regex {str(pattern)[:60]!r}")
def compile_regex(pattern: str, flags: int = 0, search: bool = False,
                  char_class: CharClass = automaton.char_class, ecma: bool = False,
                  assertions: bool = True) -> automaton.DFA:
    """A DFA for `pattern`: the whole text matches (search=True: the pattern occurs somewhere
    in it, as JSON Schema's `pattern` means, unless anchored with ^ / $). Results are cached;
    the DFA returned is shared and must not be changed.

    Args:
        char_class: builds one character of a class; JSON strings pass one that also spells
            characters as JSON escapes.
        ecma: ECMA-262 classes, as JSON Schema patterns mean them: digits and word
            characters ASCII, blanks Unicode, `.` any character but a line terminator
            (\\n, \\r, U+2028, U+2029); `$` the end of the text only.
        assertions: False where the text matched is not the whole text (a lark terminal's
            lookahead and anchors look past it): lookaheads and anchors are refused.

    Raises:
        GrammarError: malformed pattern, lookaround other than lookaheads at the start,
            backreferences, or too large.
    """
    read_flags, items = _parse(pattern, flags)
    b = _Builder(pattern, read_flags, char_class, ecma, assertions)
    _check_possessive(b, items)
    if _refused_lookaround(items, search, assertions, bool(read_flags & _MULTILINE)):
        raise b.lookaround_refused()  # before building what precedes it (it may be large)
    if fewest_nfa_states(items) > MAX_NFA_STATES:
        raise _too_large(pattern)  # (before building that many states)
    with _naming(pattern):
        return automaton.determinize(b.nfa, _language(b, items, b.flags, search, search))


@lru_cache(maxsize=16)
def _parse(pattern: str, flags: int) -> tuple[int, list]:
    """Python's parse of `pattern`: its flags and its items, each group's items a list (see
    `_plain`). Made once for compile_regex and compile_counted_regex (a string's pattern is
    read by both, one after the other); shared, so never changed. Few are kept: a parse is
    many objects for the garbage collector to scan."""
    if not isinstance(pattern, str):
        raise GrammarError(f"a regex pattern must be a str, got {type(pattern).__name__}")
    try:
        parsed = _parser.parse(pattern, flags)
        return parsed.state.flags, _plain(parsed)
    except re.error as e:
        raise GrammarError(f"regex {_shown(pattern)} is malformed: {e}") from None
    except OverflowError as e:  # (a repeat count past what Python's re takes)
        raise GrammarError(f"regex {_shown(pattern)}: {e}") from None
    except RecursionError:  # (Python's re parser recurses per group)
        raise GrammarError(f"regex {_shown(pattern)}: groups nest too deeply to read") from None


def _plain(items) -> list:
    """`items` of Python's parse as a list, and so the groups, alternatives, repeats and
    lookarounds inside, which every pass here reads again (a parser's SubPattern is read item
    by item through a Python-level `__getitem__`). Other items keep what the parser gave."""
    out = []
    for op, av in getattr(items, "data", items):
        if op is _c.BRANCH:
            av = (av[0], [_plain(branch) for branch in av[1]])
        elif op is _c.SUBPATTERN:
            av = (av[0], av[1], av[2], _plain(av[3]))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            av = _merged_repeat(av[0], av[1], _plain(av[2]))
        elif str(op) == "POSSESSIVE_REPEAT":
            av = (av[0], av[1], _plain(av[2]))
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            av = (av[0], _plain(av[1]))
        out.append((op, av))
    return out


def _merged_repeat(lo: int, hi: int, sub: list) -> tuple[int, int, list]:
    """A repeat `(x{a,b}){lo,hi}` as `x{lo*a,hi*b}` where that is the same language: the
    counts k*a..k*b for k from lo to hi leave no gap. Nested counts otherwise build an NFA
    whose subsets grow with the text: GBNF's `("a"){1,2}` nested 12 deep (a{1,4096}) took 1.7
    s to determinize, each level about four times the one inside it."""
    inside = sub
    # (a group around the inner repeat, capturing or not, with no flags of its own: the
    # language is the same without it, and backreferences are refused anyway)
    while (len(inside) == 1 and inside[0][0] is _c.SUBPATTERN and not inside[0][1][1]
           and not inside[0][1][2]):
        inside = inside[0][1][3]
    if len(inside) != 1 or inside[0][0] not in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        return lo, hi, sub
    a, b, item = inside[0][1]
    many = _c.MAXREPEAT
    if hi == 0 or b == 0:
        return 0, 0, item  # the empty text alone
    low = lo * a
    high = many if many in (hi, b) else hi * b
    # counts k*a..k*b, then (k+1)*a..: no gap when (k+1)*a <= k*b + 1 (always where b is
    # unbounded and k > 0); hardest at the least k that has a next one (k = 0 counts only
    # the empty text)
    gap = lo != hi and not (b == many and lo > 0) and (lo + 1) * a > lo * b + 1
    if gap or low >= many or (high != many and high >= many):
        return lo, hi, sub
    return low, high, item


@contextmanager
def _naming(pattern: str) -> Iterator[None]:
    """Errors from the automata say which pattern."""
    try:
        yield
    except GrammarError as e:
        if str(e).startswith(f"regex {_shown(pattern)}"):
            raise
        raise GrammarError(f"regex {_shown(pattern)}: {e}") from None


def _too_large(pattern: str) -> GrammarError:
    return GrammarError(f"regex {_shown(pattern)} is too large: more than {MAX_NFA_STATES} "
                        "automaton states (MAX_NFA_STATES)")


def fewest_nfa_states(items: list) -> int:
    """A lower bound on the NFA states `_Builder` makes for the parsed `items`: two per
    character (a class's start and end, as `automaton.char_class` and JSON's class build it),
    the sum over a sequence or alternation, a repeat's copies of its item (`x{m,n}` n of them,
    `x{m,}` m + 1). A pattern past MAX_NFA_STATES is so refused before anything is built:
    GBNF's `("a"){2}` nested 40 deep tries each level as one terminal, and each level from
    a{2^17} on built 200,000 states before it failed."""
    n = 0
    for op, av in items:
        if op is _c.LITERAL or op is _c.NOT_LITERAL or op is _c.ANY or op is _c.IN:
            n += 2
        elif op is _c.BRANCH:
            n += sum([fewest_nfa_states(branch) for branch in av[1]])
        elif op is _c.SUBPATTERN:
            n += fewest_nfa_states(av[3])
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT":
            lo, hi, sub = av
            n += fewest_nfa_states(sub) * (lo + 1 if hi == _c.MAXREPEAT else hi)
    return n


def _shown(pattern: str) -> str:
    """The pattern as errors quote it: whole up to 200 characters (a schema's generated
    patterns run to thousands)."""
    if len(pattern) <= 200:
        return repr(pattern)
    return f"{pattern[:200]!r}... ({len(pattern)} characters)"


@lru_cache(maxsize=256)
@limits.within_budget(lambda pattern, *args, **kwargs: f"the regex {str(pattern)[:60]!r}")
def compile_counted_regex(pattern: str, flags: int = 0, search: bool = False,
                          char_class: CharClass = automaton.char_class, ecma: bool = False,
                          min_states: int = COUNTED_REPEAT_STATES, assertions: bool = True
                          ) -> tuple[automaton.DFA, list[bool], int, int | None] | None:
    """`pattern` (as `compile_regex` takes it) with its longest counted repeat (`x{m,n}`, or
    `x{m,}` with m > 1) counted at run time rather than unrolled (see `CountedTerminal`):
    (the DFA, per state whether entering it counts one iteration, the repeat's fewest and
    most iterations, None for no most). The repeat is built as a star with a mark before (or
    else after) each iteration, and the marks become counted steps (`automaton.count_marks`).

    None where no repeat unrolled would take more than `min_states` NFA states, or the
    iterations cannot be counted byte by byte: that repeat is inside another one, or may be
    skipped (a branch) while it needs iterations, the pattern has lookarounds, or the count
    is not a function of the bytes read (`(?:a|aa){0,99}`); compile_regex unrolls it then.
    `assertions` as compile_regex takes it.
    """
    read_flags, items = _parse(pattern, flags)
    repeat = _counted_repeat(items)
    if repeat is None:
        return None
    lo, hi, _ = repeat
    for mark_first in (False, True):
        b = _Builder(pattern, read_flags, char_class, ecma, assertions,
                     counted=(repeat, mark_first))
        if not mark_first:
            _check_possessive(b, items)
        with _naming(pattern):
            frag = _language(b, items, b.flags, search, search)
            if _unrolled_copies(lo, hi) * b.counted_size <= min_states:
                return None  # small enough to unroll
            found = automaton.count_marks(automaton.determinize(b.nfa, frag), _MARK)
        if found is not None:
            return found[0], found[1], lo, None if hi == _c.MAXREPEAT else hi
    return None


def _unrolled_copies(lo: int, hi: int) -> int:
    """The copies of its item that a repeat `{lo,hi}` unrolls to (`{lo,}`: lo, then a star)."""
    return lo + 1 if hi == _c.MAXREPEAT else hi


def _counted_repeat(items: list) -> tuple | None:
    """The repeat (lo, hi, items) of `items`, bounded or `{lo,}` with lo > 1, that unrolls to
    the most copies of its item and can be counted on its own: inside no other repeat (its
    count would add up over theirs) and, unless it may repeat zero times, on every path (one
    around it counts none); None for none, or where the pattern has lookarounds or anchors other than at the ends of its
    alternatives (`(?:^|,)` in the repeat, `^` after it: the marks are bytes to them)."""
    candidates = []

    def walk(items: list, skippable: bool, inside: bool) -> bool:  # False: a lookaround
        for op, av in items:
            if op in (_c.ASSERT, _c.ASSERT_NOT):
                return False
            if op is _c.BRANCH:
                parts = [(branch, True, inside) for branch in av[1]]
            elif op is _c.SUBPATTERN:
                parts = [(av[3], skippable, inside)]
            elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT":
                lo, hi, sub = av
                counts = 1 < hi != _c.MAXREPEAT or (hi == _c.MAXREPEAT and lo > 1)
                if not inside and counts and (lo == 0 or not skippable):
                    candidates.append(av)
                parts = [(sub, True, True)]
            else:
                parts = []
            if not all(walk(*part) for part in parts):
                return False
        return True

    if not walk(items, False, False) or not candidates:
        return None
    if any(_assertion_inside(branch) for branch in _alternatives(items)):
        return None  # an anchor kept as an edge: a mark would move where the text starts
    return max(candidates, key=lambda av: _unrolled_copies(av[0], av[1]))


def _refused_lookaround(items: list, open_start: bool, assertions: bool, multiline: bool
                        ) -> bool:
    """Whether `_language` would refuse a lookaround of `items` (one not at the start of an
    alternative anchored there), found before anything is built."""
    for branch in _alternatives(items):  # (unsearched, a multiline ^ first is the start)
        rest, checks, start = _leading_lookaheads(branch, multiline and open_start)
        rest, start_, _ = _strip_anchors(rest, multiline)
        if checks and (open_start and not (start or start_ is True) or not assertions):
            return True
        if _has_lookaround(rest) or any(_refused_lookaround(sub, False, assertions, multiline)
                                        for _, sub in checks):
            return True
    return False


def _has_lookaround(seq) -> bool:
    """Whether a lookaround sits anywhere in `seq` that is built (not in a repeat of at most
    zero iterations)."""
    for op, av in seq:
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            return True
        if op is _c.BRANCH and any(_has_lookaround(b) for b in av[1]):
            return True
        if op is _c.SUBPATTERN and _has_lookaround(av[3]):
            return True
        if (op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT") \
                and av[1] > 0 and _has_lookaround(av[2]):
            return True
    return False


def _language(b: _Builder, items: list, flags: int, open_start: bool, open_end: bool
              ) -> automaton.Fragment:
    """The texts `items` match, as a fragment of `b.nfa`: whole, or with anything before
    (`open_start`) or after (`open_end`) where no anchor stops it."""
    anything = [(0, automaton.MAX_CODE_POINT)]
    # branches grouped by their anchors; with open ends, each group is wrapped in "anything"
    # once (one .* around an alternation, not one per branch: the subset construction of
    # .*a.*|.*b.*|... tracks every branch's progress separately and explodes)
    groups: dict[tuple[bool, bool | str], list[automaton.Fragment]] = {}
    frags = []

    def after(end: bool | str) -> list[automaton.Fragment]:
        if not open_end:
            return []  # (the text ends here, where $ holds for Python too)
        if not end:
            return [automaton.star(b.nfa, b.chars(anything, 0))]
        if end == "$" and not b.ecma:  # a final newline may follow Python's $
            return [automaton.optional(b.nfa, b.chars([(10, 10)], 0))]
        if end == "line":  # (a multiline $: the text may go on from a newline)
            return [automaton.optional(b.nfa, automaton.concat(b.nfa, [
                b.chars([(10, 10)], 0), automaton.star(b.nfa, b.chars(anything, 0))]))]
        return []

    multiline = bool(flags & _MULTILINE)
    for branch in _alternatives(items):  # (unsearched, a multiline ^ first is the start)
        rest, checks, start = _leading_lookaheads(branch, multiline and open_start)
        rest, start_, end = _strip_anchors(rest, multiline)
        start = start or start_
        if (start or end) and not b.assertions:
            raise b.terminal_anchor_refused()
        if not checks:
            groups.setdefault((start, end), []).append(b.sequence(rest, flags))
            continue
        if open_start and start is not True or not b.assertions:
            raise b.lookaround_refused()
        body = [b.sequence(rest, flags), *after(end)]
        dfa = automaton.determinize(b.nfa, automaton.concat(b.nfa, body))
        for positive, sub in checks:  # each holds at the start: its match, then anything
            look = automaton.determinize(b.nfa, _language(b, sub, flags, False, True))
            dfa = products.intersect(dfa, look) if positive else products.difference(dfa, look)
        frags.append(automaton.embed(b.nfa, dfa))
    for (start, end), bodies in groups.items():
        body = bodies[0] if len(bodies) == 1 else automaton.alternation(b.nfa, bodies)
        parts = [body, *after(end)]
        if open_start and not start:
            parts.insert(0, automaton.star(b.nfa, b.chars(anything, 0)))
        elif open_start and start == "line":  # (a multiline ^: after a newline, or first)
            parts.insert(0, automaton.optional(b.nfa, automaton.concat(b.nfa, [
                automaton.star(b.nfa, b.chars(anything, 0)), b.chars([(10, 10)], 0)])))
        frags.append(automaton.concat(b.nfa, parts))
    return frags[0] if len(frags) == 1 else automaton.alternation(b.nfa, frags)


# the flags Regex takes (re.VERBOSE and re.UNICODE change only how re reads the pattern)
_READ_FLAGS = int(re.IGNORECASE | re.DOTALL | re.ASCII | re.MULTILINE | re.VERBOSE | re.UNICODE)


class Regex(Terminal):
    """Text matching a regular expression in Python `re` syntax, as a whole (`re.fullmatch`).

    Args:
        pattern: the expression; classes and escapes, quantifiers (greedy or lazy: the
            language is the same), groups, alternation, `.`, `^` and `\\A` anywhere, `$` at
            the ends (of alternatives too; `\\Z` anywhere: inside, Python's `$` also
            matches before a final newline; with MULTILINE, `^` and `$` only at the ends),
            lookaheads at the start (`(?!if$)\\w+`), possessive repeats where they match
            what greedy ones do (`[^"]*+"`).
        flags: `re.IGNORECASE`, `re.DOTALL`, `re.ASCII`, `re.MULTILINE` (inline `(?i)`
            works too), `re.VERBOSE`.

    Raises:
        TypeError: `flags` is not an int.
        GrammarError: a malformed pattern, lookaround other than lookaheads at its start,
            backreferences, other possessive repeats, atomic groups, one too large, one that
            matches no text, or other flags.
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        super().__init__()
        if isinstance(flags, bool) or not isinstance(flags, int):
            raise TypeError(f"flags are re's flags (an int), got {type(flags).__name__}")
        if flags & ~_READ_FLAGS:
            raise GrammarError(f"regex flags {flags:#x}: only re.IGNORECASE, re.DOTALL, "
                               "re.ASCII, re.MULTILINE, re.VERBOSE and re.UNICODE are read")
        self.pattern = pattern
        self.flags = int(flags)
        self._dfa = compile_regex(pattern, self.flags)
        if not any(self._dfa.accept):  # (`a^`: anchors can leave nothing)
            raise GrammarError(f"regex {_shown(pattern)} matches no text")
        if self._dfa.accept[0]:
            self.min_count = 0  # matches the empty string: the compiler adds the empty path

    def unit_dfa(self) -> automaton.DFA:
        return self._dfa

    def terminal_key(self) -> Hashable:
        return ("regex", self.pattern, self.flags)

    def cache_key(self) -> str | None:
        """The pattern and flags (None for a subclass): see `StateMachine.cache_key`."""
        if type(self) is not Regex or not isinstance(self.pattern, str):
            return None
        return json.dumps(["Regex", self.pattern, self.flags])

    def __repr__(self) -> str:
        return f"Regex({_shown(self.pattern)})"
