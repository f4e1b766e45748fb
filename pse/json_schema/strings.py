"""JSON Schema strings: minLength/maxLength, pattern, format, and content (contentMediaType,
contentSchema).
"""

from __future__ import annotations

from pse import automaton, counted_lengths, products
from pse.bounded_cache import BoundedCache
from pse.errors import GrammarError, SchemaError
from pse.json_spelling import char_boundaries, json_char_class, json_names_dfa, quoted
from pse.json_value import JsonStringContent
from pse.machines import Chain, CharCountedTerminal, CountedTerminal, DfaTerminal, StateMachine
from pse.regex import compile_counted_regex, compile_regex
from pse.json_schema import common
from pse.json_schema.common import _count, _unrolled_length
from pse.json_schema.formats import FORMATS, UNSUPPORTED_FORMATS, _format_length, _format_patterns

# content_dfa's mark of a pattern whose matches anywhere in a string leave the string out
_NOT_FOUND = "not found"


def _length_dfa(lo: int, hi: int) -> automaton.DFA:
    """JSON string content of lo..hi characters, unrolled (hi is small)."""
    return automaton.repeat_unit(JsonStringContent().unit_dfa(), lo, hi)


def _at_least_dfa(lo: int) -> automaton.DFA:
    return automaton.repeat_unit(JsonStringContent().unit_dfa(), lo, None)


# String contents' automata -> _character_counts: schemas repeat a pattern and length bounds
# in many places (a content automaton is made for each), and a pattern of Unicode classes
# makes an automaton of hundreds of states, which take about a millisecond each to count
_CHARACTER_COUNTS = BoundedCache(256)


def _character_counts(dfa: automaton.DFA) -> tuple[tuple[bool, ...] | None, int, int | None]:
    """(char_boundaries of string contents `dfa`, and where they are not None, the fewest and
    the most characters of its matches: see counted_lengths.count_range)."""
    found = _CHARACTER_COUNTS.get(dfa.key())
    if found is None:
        boundaries = char_boundaries(dfa)
        found = (None, 0, None) if boundaries is None else (
            boundaries, *counted_lengths.count_range(dfa, boundaries))
        _CHARACTER_COUNTS.put(dfa.key(), found)
    return found


class _Strings:
    """The _Compiler methods for strings (a mixin of compile._Compiler)."""

    def string(self, node: dict, pointer: str, banned: list = (),
               banned_patterns: list[str] = ()) -> StateMachine | None:
        """A string as `node` says, other than the `banned` ones and those the
        `banned_patterns` find a match in."""
        node = _format_length(node)
        lo = _count(node, "minLength", pointer, 0)
        hi = _count(node, "maxLength", pointer)
        if not isinstance(lo, int) or lo < 0 or (hi is not None and (not isinstance(hi, int)
                                                                     or hi < 0)):
            raise SchemaError(f"{pointer}: minLength/maxLength must be integers >= 0")
        if hi is not None and lo > hi:
            return None
        patterns = []
        if "pattern" in node:
            patterns.append((node["pattern"], True, f"{pointer}/pattern"))
        fmt = node.get("format")
        if fmt is not None:
            if fmt in FORMATS:
                patterns += _format_patterns(fmt, f"{pointer}/format")
            elif fmt in UNSUPPORTED_FORMATS:
                self.fail(f"{pointer}/format", "format", f"{fmt!r} cannot be checked exactly")
            else:
                msg = f"{pointer}/format: unknown format {fmt!r} is an annotation; ignored"
                self.warn(msg, f"pse: {msg}")
        if banned or banned_patterns:
            # the spellings patterns know (escapes only where JSON needs them), so that what
            # is left out is left out in every spelling the automaton accepts
            patterns.insert(0, ("", True, f"{pointer}/not"))
        patterns += [(p, _NOT_FOUND, f"{pointer}/not/pattern") for p in banned_patterns]
        if not patterns and not banned:
            return Chain(self.phrase('"'), JsonStringContent(lo, hi), self.phrase('"'))
        if [p[2] for p in patterns] == [f"{pointer}/pattern"] and not banned:
            content = self.counted_pattern(node["pattern"], lo, hi, pointer)
            if content is not None:
                return Chain(self.phrase('"'), content, self.phrase('"'))
        dfa = self.content_dfa(node, patterns, pointer, count_length=True)
        if banned:
            dfa = products.difference(dfa, json_names_dfa(banned))
        return self.string_of(dfa, lo, hi, pointer)

    def string_of(self, dfa: automaton.DFA, lo: int, hi: int | None, pointer: str,
                  approximate: bool = True) -> StateMachine | None:
        """Strings whose contents `dfa` accepts, of lo..hi characters: bounds too large to
        unroll are counted at run time, others `dfa` already holds. Where they cannot be
        counted: GrammarError, unless `approximate` (see counted_content)."""
        if not dfa.accept[0] and not dfa.trans[0]:
            return None
        if not _unrolled_length(lo, hi):
            content = self.counted_content(dfa, lo, hi, pointer, approximate)
            if content is None:
                return None
            if self.whole_strings() and not isinstance(content, CountedTerminal):
                return DfaTerminal(quoted(dfa), content.name)
            return Chain(self.phrase('"'), content, self.phrase('"'))
        if self.whole_strings():  # a unique array sees the item whole (string_values)
            return DfaTerminal(quoted(dfa), f"string at {pointer}")
        return Chain(self.phrase('"'), DfaTerminal(dfa, f"string at {pointer}"), self.phrase('"'))

    def counted_content(self, dfa: automaton.DFA, lo: int, hi: int | None, pointer: str,
                        approximate: bool = True) -> StateMachine | None:
        """String contents `dfa` allows, of lo..hi characters counted at run time (a bound
        too large to unroll into the automaton); None: no match has such a length. Where
        the characters cannot be counted so, refused in strict mode (else the length is left
        unchecked); GrammarError instead where not `approximate`."""
        keyword = "maxLength" if hi is not None else "minLength"
        try:
            boundaries, fewest, most = _character_counts(dfa)
            if boundaries is None:
                raise GrammarError("the pattern's automaton does not tell characters apart")
            if fewest > (common.MAX_COUNT if hi is None else hi) or (
                    most is not None and most < lo):
                return None  # no match has a length within the bounds
            if lo <= fewest and (hi is None or (most is not None and most <= hi)):
                return DfaTerminal(dfa, f"string at {pointer}")  # every match's length fits
            content = CharCountedTerminal(dfa, boundaries, lo, hi, f"string at {pointer}")
        except GrammarError as e:
            if not approximate:
                raise
            self.fail(f"{pointer}/{keyword}", keyword, str(e))
            return DfaTerminal(dfa, f"string at {pointer}")  # (not strict: the length unchecked)
        return content if content.matches_some_length() else None

    def counted_pattern(self, pattern: str, lo: int, hi: int | None,
                        pointer: str) -> CountedTerminal | None:
        """String contents matching `pattern`, its long repeat counted at run time
        rather than unrolled (see compile_counted_regex); None where it has no such repeat,
        its iterations cannot be counted so, or the length bounds lo..hi are not met by
        every match whatever the count (then content_dfa unrolls it)."""
        try:
            found = compile_counted_regex(pattern, 0, search=True, char_class=json_char_class,
                                          ecma=True)
        except GrammarError as e:
            raise SchemaError(f"{pointer}/pattern: {e}") from None
        if found is None:
            return None
        dfa, counted, fewest_repeats, most_repeats = found
        if lo > 0 or hi is not None:  # (one count at run time: the lengths must hold anyway)
            boundaries, fewest, most = _character_counts(dfa)
            if boundaries is None:
                return None
            if fewest < lo or (hi is not None and (most is None or most > hi)):
                return None
        try:
            content = CountedTerminal(dfa, counted, fewest_repeats, most_repeats,
                                      f"string at {pointer}")
        except GrammarError:  # counts that do not settle (see count_lengths): unrolled
            return None
        return content if content.matches_some_length() else None

    def content_dfa(self, node: dict, patterns: list, pointer: str,
                    count_length: bool = False) -> automaton.DFA:
        """String content (as JSON spells it) that the patterns and length bounds allow
        (`count_length`: bounds too large to unroll are left to the caller to count)."""
        lo = _count(node, "minLength", pointer, 0)
        hi = _count(node, "maxLength", pointer)
        if hi is not None and lo > hi:
            return automaton.union([])  # no length fits
        dfa = None
        # search: True, a match anywhere; False, the whole string; None, strings the pattern
        # matches are left out; _NOT_FOUND, those it finds a match in are
        for pattern, search, where in patterns:
            try:
                p = compile_regex(pattern, 0, search=search is True or search is _NOT_FOUND,
                                  char_class=json_char_class, ecma=True)
                if search is None or search is _NOT_FOUND:
                    dfa = products.difference(dfa, p)
                    continue
            except GrammarError as e:
                raise SchemaError(f"{where}: {e}") from None
            dfa = p if dfa is None else self.intersect(dfa, p, where)
        if dfa is None:
            dfa = _at_least_dfa(0)
        if lo > 0 or hi is not None:
            if not _unrolled_length(lo, hi):
                if not count_length:
                    self.fail(pointer, "maxLength" if hi is not None else "minLength",
                              f"a length bound over {common.MAX_UNROLLED_LENGTH} on key names "
                              "together with a pattern or format is not supported")
            elif hi is None:
                dfa = self.intersect(dfa, _at_least_dfa(lo), f"{pointer}/minLength")
            else:
                dfa = self.intersect(dfa, _length_dfa(lo, hi), f"{pointer}/maxLength")
        return dfa
