"""StructuringEngine.explain: on every machine kind, the verdict is the mask's and the place
of refusal the one brute force finds; the messages name the JSON path or the grammar rule."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pse
from pse import (AnyOf, Chain, Character, Encapsulated, Forward, Freeform, Grammar, Json,
                 JsonSchema, Loop, Optional, Phrase, Reasoning, Regex, SpecialToken,
                 StateMachine, StructuringEngine, ToolCalls, WaitFor, Whitespace)
from pse.byte_words import byte_text
from pse.json_words import json_place, path_text, schema_at, schema_words

PIECES = ['{"', '":', '30', '14', 'true', 'abc', '", "', "é", "(1", "+(", "})", "ab,", "\n",
          " {", "<t>", "</t>", "days", "<tool_call>"]
EOS, SPECIAL = 256 + len(PIECES), 257 + len(PIECES)
VOCAB = pse.Vocabulary.from_tokens(
    [bytes([b]) for b in range(256)] + [p.encode() for p in PIECES] + [b"<end>", b"<|s|>"],
    eos_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])

DAYS = {"type": "object", "additionalProperties": False, "required": ["days"],
        "properties": {"days": {"type": "integer", "maximum": 14},
                       "name": {"type": "string", "maxLength": 3},
                       "tags": {"type": "array", "items": {"enum": ["a", "b"]}}}}
EXPR = """
start: expr
expr: term ("+" term)*
term: NUMBER | "(" expr ")"
NUMBER: /[0-9]+/
"""
GBNF = 'root ::= "(" item ("," item)* ")"\nitem ::= word | num\nword ::= [a-z]+\n' \
       'num ::= [0-9]+ "." [0-9]+\n'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "required": ["city"],
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def _parens() -> Forward:
    parens = Forward(name="parens")
    parens.set(Phrase("()") | Chain(Phrase("("), parens, Phrase(")")))
    return parens


# (name, structure, text committed before the explanations): every machine kind
CASES = [
    ("Phrase", lambda: Phrase("hello"), "he"),
    ("Character", lambda: Character("0123456789", max_length=3), "12"),
    ("Whitespace", lambda: Whitespace(max_length=2) + Phrase("x"), " "),
    ("Chain", lambda: Chain(Phrase("a"), Character("bc")), "a"),
    ("AnyOf", lambda: AnyOf(Phrase("abc"), Phrase("abd"), Character("0123456789")), "ab"),
    ("Optional", lambda: Optional(Phrase("x")) + Phrase("y"), ""),
    ("Loop", lambda: Loop(Phrase("ab"), min_count=1, separator=Phrase(",")), "ab,a"),
    ("Forward", _parens, "(("),
    ("StateMachine", lambda: StateMachine({0: [(Phrase("a"), 1)],
                                           1: [(Phrase("b"), "$"), (Phrase("c"), 0)]}), "aca"),
    ("Json", lambda: Json(), '{"a":[1,'),
    ("Regex", lambda: Regex(r"[a-c]+@\d{2}"), "ab@1"),
    ("JsonSchema", lambda: JsonSchema(DAYS), '{"days":'),
    ("Lark", lambda: Grammar.from_lark(EXPR), "(1+"),
    ("GBNF", lambda: Grammar.from_gbnf(GBNF), "(ab,1"),
    ("SpecialToken", lambda: Chain(Phrase("a"), SpecialToken("<|s|>")), "a"),
    ("Freeform", lambda: Freeform(max_length=4), "ab"),
    ("Reasoning", lambda: Reasoning(Json(), open="<t>", close="</t>"), "<t>hm"),
    ("WaitFor", lambda: WaitFor(JsonSchema(DAYS)), 'ok {"da'),
    ("Encapsulated", lambda: Encapsulated(Json(), open="``", close="\n`"), "``[1"),
    ("ToolCalls", lambda: ToolCalls(TOOLS),
     'hi <tool_call>\n{"name": "get_weather", "arguments": {"city": "P'),
]


def engine_at(structure, text: str) -> StructuringEngine:
    engine = StructuringEngine(VOCAB, mask_memo=0)
    engine.configure(structure)
    for b in text.encode():
        assert engine.consume_token(b), (text, b)
    return engine


def taken(engine: StructuringEngine, data: bytes) -> int:
    """Brute force: the longest prefix of `data` the engine's parser takes."""
    k = 0
    while k < len(data) and engine.matcher.copy().advance(data[:k + 1]):
        k += 1
    return k


@pytest.mark.parametrize("name,make,text", CASES, ids=[c[0] for c in CASES])
def test_explain_agrees_with_the_mask_and_brute_force(name, make, text):
    engine = engine_at(make(), text)
    mask = engine.compute_mask().copy()
    allowed = set(engine.allowed_token_ids().tolist())
    committed = list(engine._committed)
    refused = 0
    for token_id in range(VOCAB.size):
        ex = engine.explain(token_id)
        assert ex.allowed == (token_id in allowed), (name, token_id, ex)
        assert ex.message and str(ex) == ex.message
        if token_id in VOCAB.special_token_ids:
            continue
        data = VOCAB.token_bytes(token_id)
        assert ex.token == data
        assert ex.offset == (len(data) if ex.allowed else taken(engine, data)), (name, data)
        if not ex.allowed:
            refused += 1
            assert byte_text(data[ex.offset]) in ex.reason or ex.place.startswith("$")
            before = (text.encode() + data[:ex.offset]).decode("utf-8", errors="replace")
            assert ex.position == len(before)
    assert refused > 0
    # the engine is left as it was
    assert np.array_equal(engine.compute_mask(), mask)
    assert engine._committed == committed


def test_explain_of_text_and_bytes_not_in_the_vocabulary():
    engine = engine_at(JsonSchema(DAYS), '{"days":')
    assert engine.explain("1}").allowed
    assert not engine.explain(b"1x").allowed
    assert engine.explain(b"1x").offset == 1
    with pytest.raises(TypeError):
        engine.explain(1.5)
    with pytest.raises(ValueError):
        engine.explain(VOCAB.size)
    with pytest.raises(ValueError):
        engine.explain("")


# --- messages: short, stable, naming the place ----------------------------------------------

@pytest.mark.parametrize("text,token,message", [
    ('{"days":', "30",
     'at $.days: an integer at most 14; "30" exceeds it'),
    ('{"days":3', ".5", 'at $.days: an integer at most 14; "3.5" is not an integer'),
    ('{"days":', '"', "at $.days: an integer at most 14; '\"' is a string"),
    ('{"days":', "x", "at $.days: an integer at most 14; 'x' is refused "
                      "(allowed: '-', '0'-'9')"),
    ('{"days":3,"name":"', "abcd",
     "at $.name: a string of at most 3 characters; '\"abcd' is longer"),
    ('{"days":3,"tags":[', '"c', "at $.tags[0]: one of \"a\", \"b\"; '\"c' is not one of them"),
    ('{"days":3,"tags":["a",', "1", 'at $.tags[1]: one of "a", "b"; "1" is not one of them'),
    ('{"', "fox", 'at $: an object with properties days, name, tags (required: days), no '
                  'others; no property name starts with "f"'),
    ('{"days":', EOS, "at $.days: an integer at most 14; the end of the text is refused "
                      "(allowed: '-', '0'-'9')"),
    ('{"days":1', "3", "'3' is allowed here"),
])
def test_json_schema_messages(text, token, message):
    assert engine_at(JsonSchema(DAYS), text).explain(token).message == message


def test_json_messages_name_nested_paths():
    engine = engine_at(Json(), '{"a":[1,{"b c":tru')
    ex = engine.explain("x")
    assert ex.place == '$.a[1]["b c"]'
    assert ex.message == "at $.a[1][\"b c\"]: any JSON value; 'x' is refused (allowed: 'e')"


def test_schema_through_refs_and_bounds():
    schema = {"$defs": {"week": {"type": "integer", "minimum": 1, "maximum": 7}},
              "type": "array", "items": {"$ref": "#/$defs/week"}}
    engine = engine_at(JsonSchema(schema), "[3,")
    assert engine.explain("9").message == 'at $[1]: an integer from 1 to 7; "9" exceeds it'
    assert engine.explain("0").message == 'at $[1]: an integer from 1 to 7; "0" is below it'
    assert engine.explain("x").message == (
        "at $[1]: an integer from 1 to 7; 'x' is refused (allowed: '1'-'7')")


def test_grammar_messages_name_the_rules():
    engine = engine_at(Grammar.from_lark(EXPR), "(1+")
    assert engine.explain("x").message == (
        "in rule expr > rule term > rule expr, at character 4: 'x' is refused "
        "(allowed: '(', '0'-'9')")
    # GBNF rules that are not recursive are named too (this one is used twice: not fused into
    # a terminal of root's)
    engine = engine_at(Grammar.from_gbnf('root ::= "<" inner ">" inner\n'
                                         'inner ::= "a" "b" | "c"\n'), "<a")
    assert engine.explain("x").message == (
        "in rule root > rule inner, at character 3: 'x' is refused (allowed: 'b')")


def test_combinator_messages():
    engine = engine_at(_parens(), "((")
    assert engine.explain("]").message == (
        "in parens, at character 3: ']' is refused (allowed: '(', ')')")
    engine = engine_at(Phrase("é") + Character("0123456789"), "é")
    assert engine.explain("x").message == "at character 2: 'x' is refused (allowed: '0'-'9')"
    engine = engine_at(Chain(Phrase("a"), SpecialToken("<|s|>")), "")
    assert engine.explain(SPECIAL).message == (
        "at character 1: the special token '<|s|>' is refused (allowed: 'a')")
    engine = engine_at(Chain(Phrase("a"), SpecialToken("<|s|>")), "a")
    assert engine.explain(EOS).message == (
        "at character 2: the end of the text is refused (allowed: the special token '<|s|>')")
    assert engine.consume_token(SPECIAL) and engine.consume_token(EOS)
    assert engine.explain("a").message == (
        "at character 2: the text has ended (an end token was committed)")


# --- JSON places against a writer that records them -----------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-999, 999) | st.text("ab\"\\é ", max_size=4),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text("k\"\\é ", max_size=3), inner, max_size=3),
    max_leaves=8)


def write(value, path, out: list, spans: list) -> None:
    """JSON text of `value` into `out` (a list of str pieces), with the span of every scalar
    and key recorded: (start, end, path, is_key)."""
    start = sum(len(p.encode()) for p in out)
    if isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            write(item, path + (i,), out, spans)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{ ")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            key_start = sum(len(p.encode()) for p in out)
            out.append(json.dumps(key, ensure_ascii=False))
            spans.append((key_start, key_start + len(out[-1].encode()), path, True))
            out.append(" : ")
            write(item, path + (key,), out, spans)
        out.append("}")
    else:
        out.append(json.dumps(value, ensure_ascii=False))
        spans.append((start, start + len(out[-1].encode()), path, False))


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_json_place_agrees_with_the_writer(value):
    out, spans = [], []
    write(value, (), out, spans)
    text = "".join(out).encode()
    for start, end, path, is_key in spans:
        for cut in range(start + 1, end):  # inside the key or scalar
            place = json_place(text[:cut])
            assert (place.path, place.in_key, place.start) == (path, is_key, start), \
                (text, cut)


def test_path_text():
    assert path_text(()) == "$"
    assert path_text(("days", 2, "a b", "é")) == '$.days[2]["a b"]["é"]'


@pytest.mark.parametrize("schema,words", [
    (True, "any JSON value"),
    (False, "nothing"),
    ({"type": "integer", "minimum": 1, "maximum": 7}, "an integer from 1 to 7"),
    ({"type": "number", "exclusiveMinimum": 0}, "a number above 0"),
    ({"type": "integer", "maximum": 9, "multipleOf": 3}, "an integer at most 9, a multiple of 3"),
    ({"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
     "a string of 2 to 5 characters matching /^[a-z]+$/"),
    ({"type": "string", "format": "date"}, "a string in format date"),
    ({"type": ["string", "null"], "maxLength": 1}, "a string of at most 1 character or null"),
    ({"enum": [1, 2, 3, 4, 5, 6, 7, 8]}, "one of 1, 2, 3, 4, 5, 6, ... (8 in all)"),
    ({"const": "x"}, 'the value "x"'),
    ({"type": "array", "minItems": 1, "maxItems": 1}, "an array of 1 item"),
    ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
     "one of: an integer or true or false"),
    ({"minimum": 3}, "a number at least 3"),
    ({"anyOf": [{"type": "null"}, {"$ref": "#"}]},  # itself, inside: words to a depth
     "one of: null or one of: null or one of: ... or ..."),
])
def test_schema_words(schema, words):
    assert schema_words(schema, schema) == words


def test_explanations_never_fail_on_odd_values():
    # an integer too long for a float, a token without bytes, an anchor not followed
    engine = engine_at(JsonSchema({"type": "array", "items": {"type": "integer"},
                                   "maxItems": 1}), "[" + "1" * 400)
    assert engine.explain(",").message == "at $[0]: an integer; ',' is refused (allowed: " \
                                          "'.', '0'-'9', ']')"
    engine = engine_at(JsonSchema({"type": "integer", "maximum": 5}), "")
    assert engine.explain("9" * 400).message.endswith('" exceeds it')
    vocab = pse.Vocabulary.from_tokens([b"a", b""])
    empty = StructuringEngine(vocab)
    empty.configure(Phrase("a"))
    assert empty.explain(1).message == "at character 1: token 1 (no text) is refused " \
                                       "(allowed: 'a')"
    assert schema_words({"$ref": "#top"}, {"$ref": "#top"}) == "the schema #top"


def test_schema_at_follows_the_keywords():
    schema = {"$defs": {"p": {"type": "object", "properties": {"x": {"const": 1}}}},
              "type": "object",
              "properties": {"list": {"prefixItems": [{"const": 0}], "items": {"$ref": "#/$defs/p"}}},
              "patternProperties": {"^n_": {"type": "number"}},
              "additionalProperties": {"type": "string"}}
    assert schema_at(schema, ("list", 0)) == [{"const": 0}]
    assert schema_at(schema, ("list", 3, "x")) == [{"const": 1}]
    assert schema_at(schema, ("n_1",)) == [{"type": "number"}]
    assert schema_at(schema, ("other",)) == [{"type": "string"}]
    assert schema_at({"$ref": "https://example.com/s.json"}, ("a",)) == []
