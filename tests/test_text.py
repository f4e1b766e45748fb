"""Free text around a structure: Freeform, WaitFor, Encapsulated, Reasoning, and the text
automata under them, against `str` oracles; their masks against brute force over Qwen3's
vocabulary near every delimiter."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from conftest import shared_vocab
from pse import (Character, Encapsulated, Freeform, GrammarError, Json, JsonSchema, Phrase,
                 Reasoning, StructuringEngine, WaitFor)
from pse.text import TextUntil, TextWithout, text_before, text_until, text_without
from test_engine import check_along

LETTERS = "ab<>/é\n"
texts = st.text(alphabet=LETTERS, max_size=10)
delimiters = st.text(alphabet=LETTERS, min_size=1, max_size=4)


@given(texts, delimiters)
def test_text_automata_against_str(text, delimiter):
    data, p = text.encode(), delimiter.encode()
    assert text_until(p).matches(data) == (text.endswith(delimiter)
                                           and text.find(delimiter) == len(text) - len(delimiter))
    assert text_without(p).matches(data) == (delimiter not in text)
    assert text_before(p).matches(data) == ((text + delimiter).find(delimiter) == len(text))


@given(st.text(max_size=12), st.integers(0, 6))
def test_freeform_any_text_within_its_length(text, n):
    assert Freeform().matches(text)
    assert Freeform(max_length=n).matches(text) == (len(text) <= n)
    assert not Freeform().matches(b"\xff")  # not UTF-8


def test_text_terminals_bad_delimiters():
    for bad in ("", b"\xff"):
        with pytest.raises(GrammarError):
            TextUntil(bad)
    with pytest.raises(GrammarError):
        TextWithout(3)


# --- WaitFor, Encapsulated, Reasoning against str oracles -------------------------------------

INNER = Phrase("<a>") + Character("ab", max_length=3)   # opens with "<a>"
inner_texts = st.text(alphabet="<a>b", max_size=12)


@given(inner_texts)
def test_wait_for_commits_at_the_first_opening(text):
    machine = WaitFor(INNER)
    assert machine.opening == b"<a>"
    at = text.find("<a>")
    assert machine.matches(text) == (at >= 0 and INNER.matches(text[at:]))


def test_wait_for_refuses_a_broken_structure():
    machine = WaitFor(INNER)
    assert machine.matches("ab <ab <", partial=True)   # not opened yet: free text
    assert not machine.matches("ab <ab")               # ... and the structure must come
    assert machine.matches("b<a>ab", partial=True)
    assert not machine.matches("b<a>x", partial=True)   # opened, then broken
    assert not machine.matches("b<a>abab")


def test_wait_for_without_a_common_opening_waits_for_a_first_byte():
    machine = WaitFor(Json())                     # a JSON value begins with one of many bytes
    assert machine.opening == b""
    assert machine.matches('Here: {"a": [1]}'.replace(": ", ":"))
    assert machine.matches("x 12")                # 1 begins the value ...
    assert not machine.matches("x 1 2")           # ... which is then the whole rest
    assert not machine.matches("a note")          # n begins null


@given(st.text(alphabet='ab`{}"\n', max_size=14))
def test_encapsulated_against_str(text):
    machine = Encapsulated(Json(), open="``", close="\n`")
    at = text.find("``")
    rest = text[at + 2:]
    expected = at >= 0 and rest.endswith("\n`") and Json().matches(rest[:-2])
    assert machine.matches(text) == expected


@given(st.text(alphabet="<>/tk \n{}", max_size=16), st.booleans())
def test_reasoning_against_str(text, required):
    machine = Reasoning(Json(), open="<t>", close="</t>", required=required)
    expected = False
    if text.startswith("<t>"):
        end = text.find("</t>", 3)
        if end >= 0:
            rest = text[end + 4:]
            body = rest.lstrip(" \t\n\r")
            expected = len(rest) - len(body) <= 20 and Json().matches(body)
    if not required:
        expected = expected or Json().matches(text)
    assert machine.matches(text) == expected


def test_structured_outputs_find_the_parts():
    schema = {"title": "point", "type": "object", "properties": {"x": {"type": "integer"}}}
    cases = [
        (Reasoning(JsonSchema(schema)), '<think>hm {"x":2}</think>\n{"x":1}',
         [("point", {"x": 1})]),
        (Encapsulated(Json(name="doc")), 'Sure:\n```json\n[1]\n```', [("doc", [1])]),
        (WaitFor(JsonSchema(schema, name="p")), 'ok {"x":3}', [("p", {"x": 3})]),
    ]
    for machine, text, expected in cases:
        assert machine.matches(text)
        assert machine.structured_outputs(text, True) == expected
        assert machine.structured_outputs(text[:-1], False) == []


# --- masks against brute force, Qwen3 ----------------------------------------------------------

@pytest.fixture(scope="module")
def qwen():
    return shared_vocab("qwen3")


def test_reasoning_masks_qwen3(qwen):
    """<think> and </think> are single tokens of Qwen3; spelled out of smaller tokens they
    work the same, and the masks equal brute force at every step around them."""
    schema = {"type": "object", "properties": {"answer": {"type": "string"}},
              "required": ["answer"]}
    machine = Reasoning(JsonSchema(schema, whitespace="flexible"))
    thought = "<think>\nThe user wants a </thin> answer < or >.\n</think>\n\n"
    answer = json.dumps({"answer": "forty-two </think>"})
    engine = StructuringEngine(qwen)
    engine.configure(machine)
    ids = qwen.encode(thought + answer)
    assert qwen.lookup("<think>") in ids and qwen.lookup("</think>") in ids
    check_along(engine, ids, every=1)
    assert engine.is_accepting()
    assert engine.structured_outputs() == [("json", {"answer": "forty-two </think>"})]
    # the same bytes spelled out: "<", "think", ">" ...
    spelled = []
    for piece in ("<", "think", ">", "\nThe answer.\n", "</", "think", ">", "\n", answer):
        spelled += qwen.encode(piece)
    engine.reset()
    check_along(engine, spelled, every=2)
    assert engine.is_accepting()


def test_special_tokens_never_in_free_text_qwen3(qwen):
    engine = StructuringEngine(qwen)
    engine.configure(Freeform())
    allowed = set(engine.allowed_token_ids().tolist())
    assert qwen.lookup("<tool_call>") in allowed          # an added token that is text
    im_end = 151645
    assert im_end in qwen.special_token_ids
    assert allowed & qwen.special_token_ids == set(qwen.eos_token_ids) & {im_end}
    engine.consume_tokens(qwen.encode("free text"))
    assert im_end not in qwen.eos_token_ids or engine.consume_token(im_end)


def test_free_text_masks_need_no_walk(qwen):
    """Inside free text the live state is one automaton state, so its mask is the cached
    slice (the memo serves the next ones): the same mask after any text that does not near
    the delimiter."""
    engine = StructuringEngine(qwen, mask_memo=0)
    engine.configure(Encapsulated(Json()))
    first = engine.compute_mask().copy()
    engine.consume_tokens(qwen.encode("Here is some text, with words."))
    assert (engine.compute_mask() == first).all()


def test_encapsulated_and_wait_for_masks_qwen3(qwen):
    """Fences and openings split across tokens, a fence inside the JSON string, free text
    with a length bound: masks equal brute force at every step."""
    schema = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
    cases = [
        (Encapsulated(JsonSchema(schema)),
         'Here you go: `` and ```js no\n```json\n{"code":"```json\\n```"}\n```'),
        (WaitFor(JsonSchema(schema)), 'The object is {"code":"{}"}'),
        (Freeform(max_length=12), "twelve chars"),
    ]
    for machine, text in cases:
        assert machine.matches(text)
        engine = StructuringEngine(qwen)
        engine.configure(machine)
        check_along(engine, qwen.encode(text), every=1)
        assert engine.is_accepting()
