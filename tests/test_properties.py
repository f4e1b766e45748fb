"""Property tests: combinator trees against `re`, Json() against `json`, token splits."""

from __future__ import annotations

import itertools
import json
import re

from hypothesis import assume, given, strategies as st

from helpers import accepts_tokens, longest_blank_run
from pse import AnyOf, Chain, Character, GrammarError, Json, Loop, Optional, Phrase
from pse.regex import compile_regex

ALPHABET = "abé-"

# --- anchors anywhere and lookaheads at the start, against `re` -----------------------------

regex_parts = st.recursive(
    st.sampled_from(["a", "b", "é", ".", "[ab]", "\\n", "^", "$", "\\Z", "\\A"]),
    lambda sub: st.one_of(
        st.lists(sub, min_size=2, max_size=3).map("".join),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        sub.map(lambda x: f"(?:{x})*"), sub.map(lambda x: f"(?:{x})?"),
        # bounded repeats: their iterations after the first are copies of its states
        # (anchors included)
        st.tuples(sub, st.sampled_from(["{2}", "{0,2}", "{1,3}", "{2,}"])).map(
            lambda xr: f"(?:{xr[0]}){xr[1]}")),
    max_leaves=6)


@given(st.sampled_from(["", "^"]), st.lists(st.tuples(st.sampled_from(["(?=", "(?!"]),
                                                      regex_parts), max_size=2),
       regex_parts, st.lists(st.text("abé\n", max_size=5), min_size=1, max_size=8))
def test_anchors_and_lookaheads_agree_with_re(anchor, lookaheads, body, texts):
    """Anchors anywhere and lookaheads at the start: the whole text as `re.fullmatch`
    reads it, and JSON Schema's search (ECMA: $ is the end of the text only, the one
    difference from `re.search`, so those texts have no newline)."""
    pattern = anchor + "".join(f"{sign}{x})" for sign, x in lookaheads) + body
    try:
        whole = compile_regex(pattern)
    except GrammarError as e:  # Python's $ inside: it also matches before a final newline
        assert "$" in pattern and "anchor" in str(e), (pattern, e)
        whole = None
    try:
        search = compile_regex(pattern, search=True, ecma=True)
    except GrammarError as e:  # a lookahead in a search not anchored at the start
        assert lookaheads and not anchor and "lookaround" in str(e), (pattern, e)
        search = None
    for text in texts:
        if whole is not None:
            assert whole.matches(text.encode()) == bool(re.fullmatch(pattern, text)), (
                pattern, text)
        if search is not None and "\n" not in text:
            assert search.matches(text.encode()) == bool(re.search(pattern, text)), (
                pattern, text)


lookaround_parts = st.recursive(
    st.sampled_from(["a", "b", ".", "^", "$", "(?=a)", "(?!b)", "(?<=a)", "(?:a{50})"]),
    lambda sub: st.one_of(
        st.lists(sub, min_size=2, max_size=3).map("".join),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        sub.map(lambda x: f"(?:{x})*"), sub.map(lambda x: f"(?:{x}){{0}}"),
        sub.map(lambda x: f"(?={x})"), sub.map(lambda x: f"(?!{x})")),
    max_leaves=6)


@given(st.sampled_from(["", "^"]), lookaround_parts, st.booleans(), st.booleans(),
       st.booleans())
def test_lookarounds_are_refused_before_building_as_building_refuses_them(
        anchor, body, search, assertions, multiline):
    """compile_regex refuses a lookaround before building anything (a large repeat before it
    took seconds); it refuses exactly the patterns that building them refuses (with
    MULTILINE, a ^ anchors no lookahead after it)."""
    from pse import regex as r
    pattern = anchor + body
    flags, items = r._parse(pattern, re.MULTILINE if multiline else 0)
    b = r._Builder(pattern, flags, r.automaton.char_class, False, assertions)
    refused = r._refused_lookaround(items, search, assertions, multiline)
    try:
        r._language(b, items, b.flags, search, search)
    except GrammarError as e:  # refused for another reason (an inner $): an error either way
        assert refused or "lookaround" not in str(e), (pattern, e)
    else:
        assert not refused, pattern


# --- random regular combinator trees and their regex -----------------------------------------


def _char_class(chars: str) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(set(chars))) + "]"


def _bounds(lo: int, hi: int | None) -> str:
    return f"{{{lo},{'' if hi is None else hi}}}"


leaf = st.one_of(
    st.text(ALPHABET, min_size=1, max_size=3).map(lambda t: (Phrase(t), re.escape(t))),
    st.tuples(st.text(ALPHABET, min_size=1, max_size=3), st.integers(0, 2),
              st.one_of(st.none(), st.integers(0, 3))).filter(
        lambda a: a[2] is None or a[1] <= a[2]).map(
        lambda a: (Character(a[0], a[1], a[2]), _char_class(a[0]) + _bounds(a[1], a[2]))),
)


def _extend(children):
    def chain(items):
        return Chain(*(m for m, _ in items)), "".join(f"(?:{r})" for _, r in items)

    def any_of(items):
        return AnyOf(*(m for m, _ in items)), "|".join(f"(?:{r})" for _, r in items)

    def loop(args):
        (m, r), lo, extra, sep = args
        hi = None if extra is None else lo + extra
        if sep is None:
            return Loop(m, lo, hi), f"(?:{r}){_bounds(lo, hi)}"
        sm, sr = sep
        tail = f"(?:(?:{sr})(?:{r})){_bounds(max(lo - 1, 0), None if hi is None else max(hi - 1, 0))}"
        body = f"(?:{r}){tail}"
        if hi == 0:
            return Loop(m, lo, hi, separator=sm), ""
        return Loop(m, lo, hi, separator=sm), body if lo > 0 else f"(?:{body})?"

    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(chain),
        st.lists(children, min_size=1, max_size=3).map(any_of),
        children.map(lambda c: (Optional(c[0]), f"(?:{c[1]})?")),
        st.tuples(children, st.integers(0, 2), st.one_of(st.none(), st.integers(0, 2)),
                  st.one_of(st.none(), leaf)).map(loop),
    )


trees = st.recursive(leaf, _extend, max_leaves=6)


@given(trees, st.lists(st.text(ALPHABET, max_size=8), min_size=1, max_size=10))
def test_trees_agree_with_re_on_random_text(tree, texts):
    machine, regex = tree
    for text in texts:
        assert machine.matches(text) == bool(re.fullmatch(regex, text)), (regex, text)


@given(trees, st.data())
def test_trees_accept_what_re_generates(tree, data):
    machine, regex = tree
    text = data.draw(st.from_regex(re.compile(regex), fullmatch=True).filter(
        lambda t: set(t) <= set(ALPHABET)))
    assert machine.matches(text), (regex, text)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(len(text.encode()) - 1, 1)), max_size=4)))
    raw = text.encode()
    tokens = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)]) if b <= len(raw)]
    assert accepts_tokens(machine, tokens)


# --- Json() against json.loads ---------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


def _reject_constant(name):
    raise ValueError(name)


def json_oracle(text: str, whitespace: int) -> bool:
    """json.loads, minus what a structure does not allow: NaN/Infinity, whitespace around
    the value, and runs of whitespace longer than `whitespace` between tokens."""
    try:
        json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return False
    blanks = " \t\n\r"
    if text[:1] in set(blanks) or text[-1:] in set(blanks):
        return False
    return longest_blank_run(text) <= whitespace


@given(json_values, st.booleans())
def test_json_accepts_every_value(value, ascii_only):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only)
    assert Json().matches(text)


@given(json_values, st.integers(1, 3))
def test_json_with_whitespace_accepts_indented(value, indent):
    text = json.dumps(value, indent=indent)
    assume(json_oracle(text, 10))
    assert Json(whitespace=10).matches(text)


corruption = st.tuples(st.integers(0, 10**6), st.sampled_from(["insert", "delete", "replace"]),
                       st.sampled_from(list('{}[],:"\\ \nabe0-1.+Eu') + ["é", "\x01"]))


@given(json_values, st.lists(corruption, min_size=1, max_size=3), st.sampled_from([0, 2]))
def test_json_agrees_with_json_loads_on_corruptions(value, edits, whitespace):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for pos, kind, ch in edits:
        i = pos % (len(text) + 1)
        if kind == "insert":
            text = text[:i] + ch + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + 1:]
        else:
            text = text[:i] + ch + text[i + 1:]
    assert Json(whitespace).matches(text) == json_oracle(text, whitespace), text


@given(json_values, st.data())
def test_json_token_splits_never_change_the_result(value, data):
    raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    if data.draw(st.booleans()):
        raw = raw[:-1] + b"]"
    cuts = sorted(data.draw(st.sets(st.integers(1, max(len(raw) - 1, 1)), max_size=6)))
    tokens = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)]) if a < b]
    assert accepts_tokens(Json(), tokens) == Json().matches(raw)


@given(st.integers(0, 40), st.integers(0, 40),
       st.sampled_from(["[a-c]", "é", "(?:ab|c)", "(?:a*b)", "(?:a|bc)"]))
def test_bounded_repeats_agree_with_re(lo, extra, sub):
    """x{lo,hi}: its iterations copied, the optional ones a chain with an exit before each
    (a state of its own: `a*b`'s start is entered again inside it); every text of up to six
    characters of a, b, c and every count of iterations up to hi + 2, whole and as a search,
    against `re`."""
    pattern = f"{sub}{{{lo},{lo + extra}}}"
    whole = compile_regex(pattern)
    search = compile_regex(f"^{pattern}$", search=True, ecma=True)
    one = {"[a-c]": "b", "é": "é", "(?:ab|c)": "ab", "(?:a*b)": "aab", "(?:a|bc)": "bc"}[sub]
    texts = [one * n for n in range(lo + extra + 3)] + [
        "".join(t) for n in range(7) for t in itertools.product("abc", repeat=n)]
    for text in texts:
        expected = bool(re.fullmatch(pattern, text))
        assert whole.matches(text.encode()) == expected, (pattern, text)
        assert search.matches(text.encode()) == expected, (pattern, text)



# --- counts of counts, against positions reached (Python's `re` backtracks for minutes on a
# nullable count inside counts, `((a{0,3}){3,6}){3,6}` on eight characters) ------------------

def _ends(tree, text: str, at: int, fold: bool) -> set[int]:
    """Where a match of `tree` (a pattern tree below) that starts at `at` in `text` can end."""
    kind = tree[0]
    if kind == "chars":
        c = text[at:at + 1]
        return {at + 1} if c and (c.lower() if fold else c) in tree[1] else set()
    if kind == "seq":
        places = {at}
        for part in tree[1]:
            places = {e for p in places for e in _ends(part, text, p, fold)}
        return places
    if kind == "alt":
        return {e for part in tree[1] for e in _ends(part, text, at, fold)}
    _, sub, lo, hi, group, _lazy = tree
    fold = fold or group == "(?i:"
    reached, places, k = ({at} if lo == 0 else set()), {at}, 0
    while places and (hi is None or k < hi):
        places = {e for p in places for e in _ends(sub, text, p, fold)}
        k += 1
        if hi is None and k > lo:
            places -= reached  # (past the least count, any count: positions new to it)
        if k >= lo:
            reached |= places
    return reached


def _pattern(tree) -> str:
    kind = tree[0]
    if kind == "chars":
        return tree[1] if len(tree[1]) == 1 else f"[{tree[1]}]"
    if kind == "seq":
        return "".join(map(_pattern, tree[1]))
    if kind == "alt":
        return "(?:" + "|".join(map(_pattern, tree[1])) + ")"
    _, sub, lo, hi, group, lazy = tree
    count = "{%d,%s}" % (lo, "" if hi is None else hi)
    return f"{group}{_pattern(sub)}){count}{'?' if lazy else ''}"


count_trees = st.recursive(
    st.sampled_from([("chars", "a"), ("chars", "ab"), ("seq", [("chars", "a"), ("chars", "b")]),
                     ("alt", [("chars", "a"), ("seq", [("chars", "b"), ("chars", "a")])])]),
    lambda sub: st.tuples(st.just("rep"), sub, st.integers(0, 4),
                          st.sampled_from([0, 1, 2, 3, None]), st.sampled_from(["(?:", "(", "(?i:"]),
                          st.booleans()).map(
        lambda r: r[:3] + (None if r[3] is None else r[2] + r[3],) + r[4:]),
    max_leaves=4)


@given(count_trees, st.lists(st.text("abA", max_size=14), max_size=8))
def test_nested_counts_agree_with_the_positions_they_reach(tree, texts):
    """Counts of counts, `(x{a,b}){c,d}` (read as one count `x{ca,db}` where no count between
    is missing), in groups plain, capturing or with flags, lazy or greedy, nullable or not:
    every text of up to five characters of a, b, A, runs of a, and random ones, whole,
    against the positions a match can reach (a direct reading of the pattern)."""
    pattern = _pattern(tree)
    compiled = compile_regex(pattern)
    texts += ["".join(t) for n in range(6) for t in itertools.product("abA", repeat=n)]
    texts += ["a" * n for n in range(6, 40)] + ["ab" * n for n in range(3, 12)]
    for text in texts:
        assert compiled.matches(text.encode()) == (len(text) in _ends(tree, text, 0, False)), \
            (pattern, text)
