"""Regex against re.fullmatch."""

import itertools
import re

import pytest
from hypothesis import given, strategies as st

from helpers import check_boundaries
from pse import Chain, GrammarError, Phrase, Regex, automaton, regex

CASES = [
    (r"a[b-d\d]*(x|yz){2,5}?.", ["ab12xxq", "axyzyz!", "ax", "abx\n", "a٣xx-"]),
    (r"^\d+$", ["123", "٣٤", "", "12a"]),
    (r"(?i)héllo|wor?ld", ["HÉLLO", "wld", "world", "worrld", "Héllo"]),
    (r"a*", ["", "aaa", "b"]),
    (r"[^a-c]{2}", ["dd", "ad", "éé", "d"]),
    (r"\w+@\w+\.(com|org)", ["me@x.com", "me@x.net", "é_1@y.org"]),
    (r"\s*\S+\s*", [" a ", "\t\n", "abc"]),
    (r"(?s).{3}", ["a\nb", "abc", "ab"]),
    (r".{3}", ["a\nb", "abc"]),
    (r"[\u4e00-\u9fff]{1,3}", ["東京", "東京都市", "a"]),
    (r"x{0}y", ["y", "xy"]),
    (r"(ab|a)(bc|c)?", ["abc", "ab", "abbc", "ac", "a"]),
    (r"-?(0|[1-9][0-9]*)(\.[0-9]+)?", ["-0.5", "01", "10", "-"]),
    # lookaheads at the start, anchors inside
    (r"(?=\w{3})[a-z]+\d*", ["abc", "ab1", "ab", "abc12"]),
    (r"^(?!if\Z|in\Z)[a-z]+", ["if", "in", "iff", "x", ""]),
    (r"(?!a)(?=.b).*", ["ab", "bb", "b", "cbc"]),
    (r"(a\Z|b)*", ["a", "ba", "bab", "ab", ""]),
    (r"(x|\A)y", ["y", "xy", "yy"]),
    (r"(?=a$)[\s\S]*", ["a", "a\n", "a\n\n", "ab"]),  # (Python's $: before a final newline)
    # more than MAX_ALTERNATIVES once distributed: the pattern as it is, anchors as edges
    (r"(a|^)(b|^)(a|^)(b|^)(a|^)", ["", "ab", "b", "aba", "bb"]),
    (r"(a|b|^)(a|b|^)(a|b|^)b", ["b", "ab", "aab", "aaab", "c"]),
    # lookaheads inside a group or behind a shared ^ come to the start once distributed
    (r"^(?=a)a|^(?!a)b.", ["a", "bc", "b", "ab"]),
    (r"^((?=a)[ab]+)$", ["ab", "ba", "a"]),
    (r"(?P<n>(?!a)[ab]*)", ["ba", "ab", ""]),
]


@pytest.mark.parametrize("pattern, texts", CASES)
def test_agrees_with_re(pattern, texts):
    r = Regex(pattern)
    for text in texts:
        assert r.matches(text) == bool(re.fullmatch(pattern, text)), text


def test_ascii_flag():
    assert not Regex(r"\d", re.ASCII).matches("٣")
    assert Regex(r"\d", re.ASCII).matches("3")


@pytest.mark.parametrize("category", ["d", "s", "w"])
def test_unicode_categories_are_re_s(category):
    """\\d, \\s and \\w hold the code points re's do, each of the 1.1 million."""
    from pse.regex import _unicode_category

    every = "".join(map(chr, range(0x110000)))
    ranges = [(m.start(), m.end() - 1) for m in re.finditer(rf"\{category}+", every)]
    assert list(_unicode_category({"d": "digit", "s": "space", "w": "word"}[category])) == ranges


def assert_folds_as_re_does(pattern: str, flags: int) -> None:
    """Every character up to U+1FFFF (surrogates aside) matches the pattern's one-character
    automaton exactly when re's does."""
    from pse.regex import compile_regex

    dfa = compile_regex(pattern, flags, search=False)
    oracle = re.compile(pattern, flags)
    wrong = [hex(x) for x in range(0x20000) if not 0xD800 <= x <= 0xDFFF
             and dfa.matches(chr(x).encode()) != (oracle.fullmatch(chr(x)) is not None)]
    assert not wrong, wrong[:10]


@pytest.mark.parametrize("flags", [re.IGNORECASE, re.IGNORECASE | re.ASCII])
@pytest.mark.parametrize("pattern", [
    "k", "S", "i", "\u0130", "\u0131", "\u03c3", "\u00df", "\u1e9e", "\u00b5", "\u017f",
    "\u01c5", "\u2126", "[a-z]", "[^k]", "[\u03b1-\u03c9]", r"\w", r"[\W\d]", r"[^\w]"])
def test_ignorecase_folds_as_re_does(pattern, flags):
    """Under IGNORECASE as in re: Python's simple lowercase, its extra equivalences (the
    Kelvin sign for k, long s, final sigma, dotless i...) but not for categories, and only
    ASCII letters under ASCII."""
    assert_folds_as_re_does(pattern, flags)


@pytest.mark.parametrize("pattern", [
    "[\u0100-\U0001ffff]", "[^\u0000-\u0040]", "[\u00c0-\u024f\u1e00-\u1eff]"])
def test_ignorecase_folds_wide_ranges_as_re_does(pattern):
    """Wide classes, whose other cases come from the cased characters inside them alone.
    (Not under ASCII: there re folds a range too wide for its byte map through Unicode's
    uppercase, so that µ and ÿ match [\u0100-\U0001ffff]; pse folds only ASCII letters.)"""
    assert_folds_as_re_does(pattern, re.IGNORECASE)


def test_cased_characters_are_re_s():
    """The C scan of the simple lowercase mapping gives `re`'s own (`_sre.unicode_tolower`)
    at every code point, and no character past _CASED_END has another case: the case
    variants of a range come from the cased characters inside it alone."""
    from _sre import unicode_tolower

    from pse._core.unicode_tables import lowered
    from pse.machines import _CASED_END

    everywhere = lowered(0x110000)
    assert everywhere == [(cp, unicode_tolower(cp)) for cp in range(0x110000)
                          if unicode_tolower(cp) != cp]
    assert max(cp for cp, _ in everywhere) < _CASED_END


def test_ignorecase_words():
    for text in ["STRASSE", "straẞe", "STRAßE", "Straße", "\u212aelvin"]:
        for pattern in ["straße", "kelvin"]:
            assert Regex(pattern, re.IGNORECASE).matches(text) == bool(
                re.fullmatch(pattern, text, re.IGNORECASE)), (pattern, text)


def test_boundaries_and_unicode_bytes():
    r = Regex(r"[éあ🎉]+x?")
    for text in ["éあ🎉x", "🎉", "x"]:
        check_boundaries(r, text)


def test_inside_a_chain():
    m = Chain(Phrase("<"), Regex(r"[a-z]*"), Phrase(">"))
    assert m.matches("<>") and m.matches("<abc>") and not m.matches("<A>")


@pytest.mark.parametrize("pattern, needle", [
    (r"(a)\1", "backreferences"), (r"a(?=b)", "lookaround"), (r"a(?!b)", "lookaround"),
    (r"(?<=a)b", "lookaround"), (r"(?:(?!a).)*", "lookaround"),
    (r"a\bb", "word boundaries"), (r"a$b?", "anchor"),  # (Python's $ inside: before a final newline)
    (r"a^b", "matches no text"), ("(", "malformed"), ("a{2,1}", "malformed"),
    ("(?>a|ab)c", "ATOMIC_GROUP"),
    # possessive repeats whose language is not the greedy one's (re: the first two match
    # nothing, the third not "ab", the last not "ab1")
    ("a{5,}+a", "possessive"), ("[ab]*+b", "possessive"), ("(?:a|ab)*+", "possessive"),
    (r"(?:[a-z]++\d?)*1", "possessive"),
])
def test_unsupported_and_malformed(pattern, needle):
    with pytest.raises(GrammarError, match=needle):
        Regex(pattern)


def test_too_large():
    with pytest.raises(GrammarError, match="MAX_NFA_STATES"):
        Regex(r"(a{1000}){1000}")
    with pytest.raises(GrammarError, match="MAX_DFA_STATES"):
        Regex(r"[ab]*a[ab]{20}")  # its DFA has 2^21 states


ATOMS = [r"a", r"b", r"é", r"[ab]", r"[^a]", r"\d", r".", r"[a-c]", r"\w", r"-"]

def regex_strategy(max_leaves: int, counted: bool = True, atoms=st.sampled_from(ATOMS)):
    """Random regexes over `atoms`: concatenation, alternation, *, ?, and with `counted` lazy
    + and bounded repetitions too."""
    def extend(inner):
        forms = [st.tuples(inner, inner).map(lambda t: t[0] + t[1]),
                 st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
                 inner.map(lambda r: f"(?:{r})*"), inner.map(lambda r: f"(?:{r})?")]
        if counted:
            forms += [inner.map(lambda r: f"(?:{r})+?"),
                      st.tuples(inner, st.integers(0, 2), st.integers(0, 2)).map(
                          lambda t: f"(?:{t[0]}){{{t[1]},{t[1] + t[2]}}}")]
        return st.one_of(*forms)

    return st.recursive(atoms, extend, max_leaves=max_leaves)


regexes = regex_strategy(6)


@given(regex_strategy(8))
def test_fewest_nfa_states_is_a_lower_bound(pattern):
    """The bound by which a pattern past MAX_NFA_STATES is refused before it is built is
    never above the states the builder makes."""
    flags, items = regex._parse(pattern, 0)
    builder = regex._Builder(pattern, flags, automaton.char_class, False)
    regex._language(builder, items, builder.flags, False, False)
    assert regex.fewest_nfa_states(items) <= len(builder.nfa.edges), pattern


def test_a_pattern_past_the_nfa_limit_is_refused_before_it_is_built():
    """Counts whose copies alone pass MAX_NFA_STATES: the bound is past it, and the error is
    the builder's."""
    for pattern in ["a{100001}", "(?:" * 40 + "a" + "){2}" * 40, "(?:ab|c){50000,}x"]:
        assert regex.fewest_nfa_states(regex._parse(pattern, 0)[1]) > regex.MAX_NFA_STATES
        with pytest.raises(GrammarError, match="MAX_NFA_STATES"):
            Regex(pattern)


@given(regexes, st.lists(st.text("abcé-1\n", max_size=6), max_size=15))
def test_random_regexes_against_re(pattern, texts):
    r = Regex(pattern)
    for text in texts:
        assert r.matches(text) == bool(re.fullmatch(pattern, text)), (pattern, text)


@given(regexes, st.data())
def test_random_regexes_accept_what_re_generates(pattern, data):
    text = data.draw(st.from_regex(pattern, fullmatch=True))
    assert Regex(pattern).matches(text), (pattern, text)


def _greedy(pattern: str) -> str:
    return re.sub(r"([*+?}])\+", r"\1", pattern)


@pytest.mark.parametrize("pattern", [
    '[^"]*+"', "a*+b", r"\d++$", r"(?:[a-z]++ )*\d", "a{3}+a", "b?+a", "(?:a++-)+b*+",
    r"[a-c]{1,3}+\d{2,}+"])
def test_possessive_repeats_built_where_greedy_is_the_same_language(pattern):
    """A possessive repeat of one character class followed by none of its characters is
    built as the greedy one: it matches as re does, whole and searched, on every text of up
    to six characters over the classes' characters and others."""
    from pse.regex import compile_regex

    texts = ["".join(t) for n in range(7) for t in itertools.product('ab1 -"', repeat=n)]
    for search, oracle in ((False, re.fullmatch), (True, re.search)):
        dfa = compile_regex(pattern, search=search)
        wrong = [t for t in texts if dfa.matches(t.encode()) != bool(oracle(pattern, t))]
        assert not wrong, (pattern, search, wrong[:5])


@pytest.mark.parametrize("pattern", [
    "(?m)a$", "(?m)^b", "(?m)^b$", "(?m)^a|b$", r"(?m)^(?:a|b)\Z", r"(?m)\Aa$", "(?m)^$",
    "(?m)^a*$$", r"(?m)^(?=a)\w+", r"(?m)^(?!b)[ab]+$"])
def test_multiline_anchors_at_the_ends_as_re(pattern):
    """With MULTILINE, ^ and $ at a pattern's ends hold at a line's start and end: searched
    (a JSON Schema pattern), the text may go on before and after a newline there. They were
    read as the text's start and end (`(?m)a$` did not find "a\\nb"). Whole, a lookahead
    after a multiline ^ is at the text's start; searched, it is refused."""
    from pse.regex import compile_regex

    texts = ["".join(t) for n in range(7) for t in itertools.product("ab\n", repeat=n)]
    for search, oracle in ((False, re.fullmatch), (True, re.search)):
        if search and ("(?=" in pattern or "(?!" in pattern):
            with pytest.raises(GrammarError, match="lookaround"):
                compile_regex(pattern, search=True, ecma=True)
            continue
        dfa = compile_regex(pattern, search=search, ecma=search)
        wrong = [t for t in texts if dfa.matches(t.encode()) != bool(oracle(pattern, t))]
        assert not wrong, (pattern, search, wrong[:5])


@pytest.mark.parametrize("pattern", ["^a.b$", ".", "^.*$", "(?s)^a.b$", "a.{2}", "[.]"])
def test_dot_reads_what_ecma_and_python_read(pattern):
    """A JSON Schema pattern's `.` (ECMA-262) is any character but a line terminator (\\n,
    \\r, U+2028, U+2029), judged by re with the dot spelled as that class (and ECMA's $ as
    \\Z); a Regex's (Python's) any but \\n, judged by re itself."""
    from pse.regex import compile_regex

    ecma = (pattern if "(?s)" in pattern else re.sub(
        r"(?<!\[)\.(?!\])", "[^\n\r\u2028\u2029]", pattern)).replace("$", r"\Z")
    texts = ["".join(t) for n in range(5)
             for t in itertools.product("ab\n\r\u2028\u2029é", repeat=n)]
    searched, whole = compile_regex(pattern, search=True, ecma=True), compile_regex(pattern)
    wrong = [t for t in texts if searched.matches(t.encode()) != bool(re.search(ecma, t))
             or whole.matches(t.encode()) != bool(re.fullmatch(pattern, t))]
    assert not wrong, (pattern, wrong[:5])


_possessive_atoms = st.tuples(st.sampled_from(ATOMS), st.sampled_from(
    ["", "", "*+", "++", "?+", "{1,2}+", "{2}+", "{2,}+"])).map("".join)


@given(st.sampled_from(["", "(?m)"]), regex_strategy(5, atoms=_possessive_atoms),
       st.sampled_from(["", "$"]), st.lists(st.text("abcé-1\n", max_size=6), max_size=15))
def test_random_possessive_repeats_as_re_or_refused(flags, body, end, texts):
    """Random patterns with possessive repeats: refused with an error that names them, or
    matching as re does, whole and searched (a multiline $ after one, which holds before a
    newline its class may hold: a review found `(?m)b[^c]*+$` searched built greedy)."""
    from pse.regex import compile_regex

    pattern = flags + body + end
    for search, oracle in ((False, re.fullmatch), (True, re.search)):
        try:
            dfa = compile_regex(pattern, search=search)
        except GrammarError as e:
            assert "possessive" in str(e) and pattern != _greedy(pattern), (pattern, e)
            continue
        for text in texts:
            assert dfa.matches(text.encode()) == bool(oracle(pattern, text)), (pattern, text)


# small branches: a search wraps them in "anything", whose subset construction grows fast
_small_regexes = regex_strategy(3, counted=False)
_anchored = st.tuples(st.booleans(), _small_regexes, st.booleans()).map(
    lambda t: ("^" if t[0] else "") + t[1] + ("$" if t[2] else ""))


@given(st.lists(_anchored, min_size=1, max_size=3).flatmap(lambda bs: st.sampled_from([
    "|".join(bs), f"({'|'.join(bs)})", f"(?:{'|'.join(bs)})",
    "|".join(f"({b})" for b in bs)])), st.lists(st.text("abcé-1", max_size=6), max_size=15))
def test_anchors_inside_alternatives_search_like_re(pattern, texts):
    """JSON Schema patterns are searches; anchors may sit at the ends of alternatives inside
    groups (`^$|(^a+$)`, which Python's parser also writes with a common `^` factored out)."""
    from pse.regex import compile_regex

    dfa = compile_regex(pattern, search=True)
    for text in texts:
        assert dfa.matches(text.encode()) == bool(re.search(pattern, text)), (pattern, text)
