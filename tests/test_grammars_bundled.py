"""The bundled grammars (pse.grammars): a corpus of valid and invalid texts per grammar,
checked against lark's Earley parser on the same .lark file (and `json.loads` for JSON);
masks equal brute force on a recursive grammar."""

from __future__ import annotations

import json
import random

import lark
import pytest

import pse.grammars
from conftest import shared_vocab
from pse import Grammar, StructuringEngine, Vocabulary
from test_engine import check_along
from test_grammar import lark_accepts, mutations

CORPUS = {
    "json": (
        ['{"a": [1, -2.5e-3, true, false, null], "b": {"c": "d\\u00e9\\n"}}', "0", '""',
         " [ ] ", "{}", '[{"x": {}}, [[]], "é🎉"]', "-0.0E+12", '"\\/\\b\\f\\r\\t\\"\\\\"'],
        ["{", "[1,]", "01", "1.", ".5", "+1", "'a'", '{"a" 1}', '"\\x"', '"a\nb"', "nul",
         "[1 2]", '{"a":1,}', "", "tru e"]),
    "arithmetic": (
        ["1 + 2 * 3", "-(a - b) / c % 2", "2 ^ 3 ^ -x", "f(x, 1.5e3, g())", ".5+1.",
         "((((x))))", "+-1", "a*b-c/d+e", "sin(x)^2 + cos(x)^2"],
        ["1 +", "(1", "1 2", "f(,)", "2 ^", "", "a..b", "f(x,)", "3 ** 2", "1e"]),
    "sql": (
        ["SELECT * FROM t", "select a, b as c from s.t x where x.a > 1 and not b is null;",
         "SELECT DISTINCT a FROM t LEFT OUTER JOIN u ON t.id = u.id ORDER BY a DESC, b LIMIT 5 OFFSET 10",
         "SELECT count(*), sum(x) FROM t GROUP BY y HAVING count(*) >= 2",
         "SELECT a FROM t WHERE b IN (1, 2) OR c NOT LIKE 'x''y' OR d BETWEEN 1 AND 2",
         "SELECT CASE WHEN a = 1 THEN 'one' ELSE 'other' END FROM (SELECT a FROM u) AS s",
         "SELECT a -- the column\nFROM t", 'SELECT "quoted ""id""" FROM t WHERE x IN (SELECT y FROM u)'],
        ["SELECT FROM t", "SELECT a", "SELECT a FROM", "SELECT a FROM t WHERE x =",
         "SELECT a FROM t LIMIT x", "SELECT a FROM t;;", "INSERT INTO t VALUES (1)",
         "SELECT 'a FROM t", "SELECT a FROM t ORDER a", "SELECT a FROM t -- no line break"]),
    "csv": (
        ["a,b,c\n1,2,3\n", "a,b\r\n1,2", '"x, y","he said ""hi"""\n', ",,\n,", "", "single",
         '"multi\nline",2\n'],
        ['a,"b', 'a,b"c', '"a"b', '"a""', 'x,"y"z\n']),
    "tool_call": (
        ['get_weather({"city": "Paris", "days": 3})', "search({})", ' f ( { "a" : [ ] } ) ',
         'ns.tool-1({"q": "x"})'],
        ["get_weather()", "get_weather({)", '1f({})', "f([1])", 'f({"a": 1}) x', "f{}"]),
}


@pytest.fixture(scope="module")
def grammars():
    return {name: pse.grammars.load(name) for name in pse.grammars.names()}


def lark_for(name: str) -> lark.Lark:
    return lark.Lark.open(str(pse.grammars.path(name)), parser="earley",
                          lexer="dynamic_complete", ambiguity="forest")


def test_names_and_headers():
    assert pse.grammars.names() == sorted(CORPUS)
    for name in pse.grammars.names():
        first = pse.grammars.path(name).read_text().splitlines()[0]
        assert first.startswith(f"// {name}: "), first


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus(grammars, name):
    grammar, parser = grammars[name], lark_for(name)
    valid, invalid = CORPUS[name]
    for text in valid:
        assert grammar.matches(text), text
        assert lark_accepts(parser, text), text
    for text in invalid:
        assert not grammar.matches(text), text
        assert not lark_accepts(parser, text), text
    if name == "json":
        for text in valid:
            json.loads(text)
        for text in invalid:
            with pytest.raises(ValueError):
                json.loads(text)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_mutated_corpus_agrees_with_lark(grammars, name):
    grammar, parser = grammars[name], lark_for(name)
    rng = random.Random(name)
    valid, invalid = CORPUS[name]
    alphabet = "".join(sorted(set("".join(valid + invalid))))
    for text in valid + invalid:
        for mutated in mutations(text, alphabet, rng, 15):
            assert grammar.matches(mutated) == lark_accepts(parser, mutated), mutated
            if name == "json":
                try:
                    json.loads(mutated)
                    ok = True
                except ValueError:
                    ok = False
                assert grammar.matches(mutated) == ok, mutated


def test_tool_call_function_names():
    grammar = pse.grammars.load("tool_call", FUNCTION_NAME=["get_weather", 'odd"\\name'])
    assert grammar.matches('get_weather({"city": "Paris"})')
    assert grammar.matches('odd"\\name({})')
    assert not grammar.matches('search({"q": "x"})')
    assert not grammar.matches('get_weathe({})')
    with pytest.raises(ValueError, match="defines no terminal"):
        pse.grammars.load("tool_call", NAME=["f"])
    with pytest.raises(ValueError, match="non-empty"):
        pse.grammars.load("tool_call", FUNCTION_NAME=[])
    with pytest.raises(TypeError):
        pse.grammars.load("tool_call", FUNCTION_NAME="f")
    with pytest.raises(ValueError, match="no bundled grammar"):
        pse.grammars.load("yaml")


def test_arithmetic_masks_small_vocab():
    """A left-recursive, nested grammar: every mask equals brute force over the vocabulary."""
    tokens = list("0123456789.+-*/%^(), xyf") + ["1+", "(x", "x)", " +", "+ ", "f(", ")*",
                                                 "12", ".5", "e3", "e", "E-", "xy"]
    vocab = Vocabulary.from_tokens(tokens + ["<eos>"], eos_token_ids=[len(tokens)],
                                   special_token_ids=[len(tokens)])
    engine = StructuringEngine(vocab)
    engine.configure(pse.grammars.load("arithmetic"))
    for text in ["1+(x*12)/f(2, .5e3)", "((-x))^2 % 3", "f(f(f(1)))"]:
        engine.reset()
        check_along(engine, vocab.encode(text))
        assert engine.is_accepting()


@pytest.mark.parametrize("name,text", [
    ("arithmetic", "(12.5 + x) * f(y, -3) / (2 ^ (1 - z))"),
    ("sql", "SELECT a, count(*) FROM t WHERE (b > 1 OR c IN (1, 2)) GROUP BY a;"),
])
def test_masks_equal_brute_force_llama3(name, text):
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(pse.grammars.load(name))
    check_along(engine, llama.encode(text), every=3)
    assert engine.is_accepting()


def test_ambiguous_grammar_masks_equal_brute_force_llama3():
    """Left-recursive and ambiguous: after n operators about n live states share each
    terminal state, in different stacks (roots and jobs of one entry are walked as one
    group). Every mask walked (no memo); masks equal brute force."""
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama, mask_memo=0)
    engine.configure(Grammar('start: expr\nexpr: expr "+" expr | expr "*" expr | NUMBER\n'
                             'NUMBER: /[0-9]+/'))
    check_along(engine, llama.encode("1+22*3+4*55+6+7*8+9+10*11+12*13"), every=3)
    assert engine.is_accepting()


@pytest.mark.parametrize("source,text", [
    ('start: a\na: a a | "b"', "b" * 60),
    ('start: s\ns: s s | "a" | "(" s ")"', "(a" + "a" * 400 + ")" + "a" * 200),
    ('start: s\ns: "a" s | "a" s s | "a"', "a" * 120),  # (a live state per a)
    ('start: expr\nexpr: expr "+" expr | expr "*" expr | "(" expr ")" | NUMBER\n'
     'NUMBER: /[0-9]+/', "+".join(str(i) for i in range(60)) + "*(1+2)"),
])
def test_exponentially_ambiguous_grammar_walks_llama3(source, text):
    """A walk's frames are not interned: a state whose stack repeats another's in other frames
    is the same state (same_stack), not a copy that multiplies at every byte (these texts
    raised "too ambiguous" while `matches` took them). Masks equal brute force."""
    llama = shared_vocab("llama3")
    grammar = Grammar(source)
    assert grammar.matches(text)
    engine = StructuringEngine(llama, mask_memo=0)
    engine.configure(grammar)
    check_along(engine, llama.encode(text), every=7)
    assert engine.is_accepting()


def test_grammar_engine_heals_and_rolls_back():
    vocab = shared_vocab("llama3")
    engine = StructuringEngine(vocab)
    engine.configure(Grammar.from_file(pse.grammars.path("arithmetic")))
    for tid in vocab.encode("1 + 2"):
        assert engine.consume_token(tid)
    assert engine.is_accepting()
    engine.rollback(1)
    assert not engine.is_accepting()
