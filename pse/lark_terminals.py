"""The terminals of a Lark grammar as byte automata, with the texts lark's Earley parser
(`lexer="dynamic_complete"`) lets them match.

A terminal is a Python regex (lark flattens strings, `"a".."z"` ranges and terminal
references into one). Its language is what the regex matches as a whole, with two exceptions
that follow from how lark matches (`re.match` at a position, then every shorter prefix that
also matches):

- a lazy quantifier (`/\\/\\*(.|\\n)*?\\*\\//`) stops at the first possible end, so the terminal
  matches only its shortest texts (none of them a prefix of another);
- lark's `ESCAPED_STRING` family (a quote, `_STRING_ESC_INNER`, the same quote) uses a
  lookbehind; it is replaced by the equivalent `"(?:[^"\\\\\\n]|\\\\[^\\n])*"`.

Any other lookaround, and lazy quantifiers in other shapes, raise `GrammarError`.
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

from pse import automaton
from pse.errors import GrammarError
from pse.machines import MAX_STEPS, _add_case_variants
from pse.regex import _ONE_CHAR_OPS, compile_counted_regex, compile_regex

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

# lark's common.lark: _STRING_ESC_INNER, as it appears inside a compiled terminal.
_STRING_ESC_INNER = r".*?(?<!\\)(\\\\)*?"


@functools.lru_cache(maxsize=1024)
def terminal_dfa(pattern: str) -> automaton.DFA:
    """The DFA of a lark terminal whose compiled regex is `pattern` (see the module doc),
    made once (shared: not to be changed).

    Raises:
        GrammarError: a malformed pattern, lookaround other than lark's ESCAPED_STRING, or a
            lazy quantifier in a shape whose first match is not simply the shortest.
    """
    quoted = _escaped_string_equivalent(pattern)
    if quoted is not None:
        return compile_regex(quoted)
    dfa = compile_regex(pattern, assertions=False)
    if _has_lazy(pattern):
        _check_lazy_shape(pattern)
        dfa = shortest_matches(dfa)
    if dfa.accept[0]:
        raise GrammarError(f"regex {pattern!r} matches the empty string (lark refuses "
                           "zero-width terminals)")
    return dfa


@functools.lru_cache(maxsize=1024)
def counted_terminal_dfa(pattern: str
                         ) -> tuple[automaton.DFA, tuple[bool, ...], int, int | None] | None:
    """The terminal of `pattern` (as `terminal_dfa` takes it) with its longest counted repeat
    kept at run time rather than unrolled (`/[0-9]{1,30000}/` or `/[0-9]{30000,}/` unrolled
    would pass MAX_DFA_STATES): (the DFA, per state whether entering it counts one iteration,
    the repeat's fewest and most iterations, None for no most), as
    `regex.compile_counted_regex` makes them. None where no repeat is long enough to be
    worth it, its iterations cannot be counted so or number more than the core counts
    (machines.MAX_STEPS), and for the terminals terminal_dfa rewrites (lazy ones, lark's
    ESCAPED_STRING). Made once.

    Raises:
        GrammarError: a malformed pattern, or one that matches the empty text.
    """
    if _escaped_string_equivalent(pattern) is not None:
        return None
    # (read by compile_counted_regex first: its errors are GrammarErrors, _has_lazy's not)
    found = compile_counted_regex(pattern, assertions=False)
    if found is None or _has_lazy(pattern):
        return None
    dfa, counted, fewest, most = found
    if max(fewest, most or 0) > MAX_STEPS:
        return None
    if dfa.accept[0] and fewest == 0:
        raise GrammarError(f"regex {pattern!r} matches the empty string (lark refuses "
                           "zero-width terminals)")
    return dfa, tuple(counted), fewest, most


@functools.lru_cache(maxsize=1024)
def literal_dfa(value: str, ignore_case: bool) -> automaton.DFA:
    """The DFA of the string terminal `"value"` (with `ignore_case`, `"value"i`: each
    character in any of its cases, as re's IGNORECASE folds them), built without reading a
    regex: what `terminal_dfa` makes of the terminal's, for less (a grammar's keywords are
    most of its terminals). Made once (shared: not to be changed).

    Raises:
        GrammarError: `value` is empty.
    """
    if not value:
        raise GrammarError("a string terminal is empty (lark refuses zero-width terminals)")
    if not ignore_case:
        return automaton.literal_dfa(value.encode())
    return automaton.concatenate([_any_case(ch) for ch in value])


@functools.lru_cache(maxsize=4096)
def _any_case(ch: str) -> automaton.DFA:
    """The minimal DFA of the character `ch` in any of its cases, as re's IGNORECASE folds
    them (a grammar's keywords share their letters: each is made once). Shared: not to be
    changed."""
    nfa = automaton.NFA()
    one = automaton.char_class(nfa, _add_case_variants([(ord(ch), ord(ch))]))
    return automaton.minimize(automaton.determinize(nfa, one))


def _escaped_string_equivalent(pattern: str) -> str | None:
    """`Q .*? (?<!\\\\)(\\\\\\\\)*? Q` for a one-character quote Q -> a lookaround-free
    equivalent: the first Q not escaped by a backslash ends the string, no newline inside."""
    at = pattern.find(_STRING_ESC_INNER)
    if at <= 0:
        return None
    quote = pattern[:at]
    if pattern[at + len(_STRING_ESC_INNER):] != quote:
        return None
    try:
        items = list(_parser.parse(quote))
    except re.error:
        return None
    if len(items) != 1 or items[0][0] is not _c.LITERAL:
        return None
    q = re.escape(chr(items[0][1]))
    return rf"{q}(?:[^{q}\\\n]|\\[^\n])*{q}"


def _has_lazy(pattern: str) -> bool:
    def walk(items) -> bool:
        for op, av in items:
            if op is _c.MIN_REPEAT:
                return True
            if op is _c.SUBPATTERN and walk(av[3]):
                return True
            if op is _c.BRANCH and any(walk(b) for b in av[1]):
                return True
            if op in (_c.MAX_REPEAT,) or str(op) == "POSSESSIVE_REPEAT":
                if walk(av[2]):
                    return True
        return False

    return walk(_parser.parse(pattern))


def _one_char(items) -> bool:
    """True when `items` always match exactly one character and repeat nothing."""
    items = list(items)
    if len(items) != 1:
        return False
    op, av = items[0]
    if op in _ONE_CHAR_OPS:
        return True
    if op is _c.SUBPATTERN:
        return _one_char(av[3])
    if op is _c.BRANCH:
        return all(_one_char(b) for b in av[1])
    return False


def _check_lazy_shape(pattern: str) -> None:
    """Only `c1..ck X*? d1..dm` (single characters around one lazy repeat of a single
    character) is accepted: there the first match re.match finds is the shortest one."""
    items = list(_parser.parse(pattern))
    lazy = [i for i, (op, _) in enumerate(items) if op is _c.MIN_REPEAT]
    ok = len(lazy) == 1 and _one_char(items[lazy[0]][1][2]) and all(
        _one_char([item]) for i, item in enumerate(items) if i != lazy[0])
    if not ok:
        raise GrammarError(f"regex {pattern!r}: a lazy quantifier is supported only in the "
                           "form 'fixed characters, one lazily repeated character, fixed "
                           "characters' (like /\\/\\*(.|\\n)*?\\*\\//)")


def shortest_matches(dfa: automaton.DFA) -> automaton.DFA:
    """The texts of `dfa` none of whose proper prefixes it accepts (a match stops at once)."""
    trans = [[] if acc else list(row) for row, acc in zip(dfa.trans, dfa.accept)]
    return automaton.minimize(automaton.trim(automaton.DFA(trans, list(dfa.accept))))


def followed_by_ignored(dfa: automaton.DFA | None,
                        ignored: Sequence[automaton.DFA]) -> automaton.DFA:
    """`dfa` followed by any run of ignored texts (dfa None: the run alone, possibly empty).
    Made once per automaton and ignored ones (shared: not to be changed): they are the
    shared automata of terminal_dfa and literal_dfa, so a grammar read again finds its
    terminals' here (about 50 automata, 0.7 ms of a compile of the bundled SQL grammar).

    Raises:
        GrammarError: the combined automaton is too large.
    """
    return _followed_by_ignored(dfa, tuple(ignored))


@functools.lru_cache(maxsize=1024)
def _followed_by_ignored(dfa: automaton.DFA | None,
                         ignored: tuple[automaton.DFA, ...]) -> automaton.DFA:
    run = _ignored_run(ignored)
    if dfa is None:
        return run
    direct = automaton.then_run(dfa, run)  # (most terminals: no subset construction)
    if direct is not None:
        return direct
    nfa = automaton.NFA()
    return automaton.determinize(nfa, automaton.concat(nfa, [automaton.embed(nfa, dfa),
                                                            automaton.embed(nfa, run)]))


def counted_followed_by_ignored(dfa: automaton.DFA, counted: tuple[bool, ...],
                               ignored: Sequence[automaton.DFA]
                               ) -> tuple[automaton.DFA, tuple[bool, ...]] | None:
    """A counted terminal's `dfa` followed by any run of ignored texts, with its counted
    flags (the run's states count nothing); None where the run cannot be appended directly
    (see automaton.then_run): through the subset construction a state could stand both for
    an iteration and for ignored text, and the count would depend on the path."""
    direct = automaton.then_run(dfa, _ignored_run(tuple(ignored)))
    if direct is None:
        return None
    return direct, counted + (False,) * (direct.n_states - dfa.n_states)


@functools.lru_cache(maxsize=64)
def _ignored_run(ignored: tuple[automaton.DFA, ...]) -> automaton.DFA:
    """Any run of the ignored texts, the empty one too (one automaton per list of them: the
    terminals' automata are cached, so a grammar read again finds its run here)."""
    nfa = automaton.NFA()
    return automaton.determinize(nfa, automaton.star(nfa, automaton.alternation(
        nfa, [automaton.embed(nfa, d) for d in ignored])))
