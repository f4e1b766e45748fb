"""Masks with exits planned as jobs (a state that starts below a large exit node of the trie,
with that subtree's cached entry; see Matcher.plan in pse/_core/mask.pyx) equal brute force
over the vocabulary: with every exit planned, with the job cap reached at once, and with
nothing planned. The default (large subtrees only) is what the other mask tests run."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

import pse
import pse.grammars
from conftest import shared_vocab
from pse import Json, JsonSchema, StructuringEngine, Vocabulary
from pse._core.mask import _set_planning
from test_engine import check_along, check_random_structure
from test_properties import json_values, trees

# (smallest subtree planned, most jobs per mask)
PLANS = {"every exit": (1, 1 << 30), "three jobs at most": (1, 3), "none": (1 << 30, 1 << 30)}


@pytest.fixture(params=list(PLANS), autouse=True)
def plan(request):
    old = _set_planning(*PLANS[request.param])
    yield request.param
    _set_planning(*old)


@settings(max_examples=30)
@given(trees, st.data())
def test_random_structures_small_vocab(tree, data):
    check_random_structure(tree, data)


def small(tokens: list[str]) -> Vocabulary:
    return Vocabulary.from_tokens(tokens + ["<eos>"], eos_token_ids=[len(tokens)],
                                  special_token_ids=[len(tokens)])


def check_texts(vocab: Vocabulary, structure, texts: list[str]) -> None:
    """Masks equal brute force along each text, which the structure accepts."""
    engine = StructuringEngine(vocab)
    engine.configure(structure)
    for text in texts:
        engine.reset()
        check_along(engine, vocab.encode(text))
        assert engine.is_accepting()


def test_arithmetic_small_vocab():
    """Terminals that end on their last byte (a state before the next terminal), names
    after blanks, a left-recursive grammar."""
    vocab = small(list("0123456789.+-*/%^(), xyfe") + [
        " x", " xy", " f(", " (", " 1", " 12", "  x", " +", "+ ", "x)", ") *", "f(x", "xy"])
    check_texts(vocab, pse.grammars.load("arithmetic"),
                ["1 + (x * 12) / f(2, .5e3)", "((- x)) ^ 2 % 3", "f( f(xy ,1))"])


def test_one_terminal_state_in_two_contexts_small_vocab():
    """A name that a call's "(" or an index's "[" follows: two live states (two stacks) share
    the name's terminal state, as roots (after "x") and as jobs (below the blanks); walked as
    one group, their exits are those of both."""
    vocab = small(list("xab([]) ") + ["x ", " a", " ab", " ba", "ab", "ba", "ab(", "ba[", "a(",
                                     "b[", " a(", " b[", "a)", "b]", "()", "[]", "  a"])
    # (recursive rules are calls, not inlined: each has a stack of its own)
    grammar = pse.Grammar('start: call | index\ncall: "x" NAME "(" [call] ")"\n'
                          'index: "x" NAME "[" [index] "]"\nNAME: /[ab]+/\n%ignore " "')
    check_texts(vocab, grammar, ["x ab()", "xba[]", "x  a (x b())", "x b[xa[ ]]"])


def test_json_with_whitespace_small_vocab():
    vocab = small(list('{}[],:"ab015-.e \n') + [
        '{"', '":', '",', ' "', ', "', ',\n', '\n ', '  ', ' {', ' [', ' 1', ' 1.', '"}', "ab"])
    check_texts(vocab, Json(whitespace=2),
                ['{"a": [1, -1.5e-1, "b"]}', '[\n {"ab": {}},\n ""\n]', '0'])


def test_unique_items_small_vocab():
    """In a unique array a step depends on the bytes before it: nothing is planned there."""
    vocab = small(list('[],"ab1 ') + ['["', '",', ', "', '"a"', ' 1', '1,', '"]'])
    check_texts(vocab, JsonSchema({"type": "array", "uniqueItems": True,
                                   "items": {"enum": ["a", "b", 1, 11]}}, whitespace=1),
                ['["a", "b", 1]', '[11, 1, "b"]'])


def test_sql_names_without_separators_llama3():
    """SQL's names may follow names with nothing between (an alias): every letter of a name
    is a place where another starts; blanks lead into large subtrees."""
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(pse.grammars.load("sql"))
    text = "SELECT DISTINCT count(x) total, t.price * qty AS v FROM orders o WHERE n LIKE 'A%'"
    check_along(engine, llama.encode(text), every=2)
    assert engine.is_accepting()


@settings(max_examples=3)
@given(json_values)
def test_indented_json_llama3(value):
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(Json(whitespace="flexible"))
    check_along(engine, llama.encode(json.dumps(value, indent=2)), every=3)


def test_names_after_names_deep_vocab():
    """Every string over "ab (" of up to four bytes is a token: exits at every depth, names
    that may follow names with nothing between, blanks between."""
    alphabet = "ab ("
    words = [""]
    tokens = []
    for _ in range(4):
        words = [w + c for w in words for c in alphabet]
        tokens += words
    vocab = small(tokens + [")"])
    check_texts(vocab, pse.Grammar('start: item+\n?item: NAME | "(" start ")"\n'
                                   'NAME: /[ab]+/\n%ignore " "\n'),
                ["ab (ba b) a", "(a(b ( bab )))aa", "b  a (ab)"])
