"""JsonSchema against jsonschema: hand-picked instances, and random generations validated."""

from __future__ import annotations

import itertools
import json
import random
import warnings
from decimal import Decimal

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import shared_vocab
import pse.json_schema
from pse import JsonSchema, SchemaError, StructuringEngine
from pse.json_schema import integer_pattern, number_range_dfa
from pse.json_spelling import json_char_class, json_names_dfa, without_names
from pse.regex import compile_regex

SCHEMAS = [
    {"type": "object",
     "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 8},
                    "age": {"type": "integer", "minimum": 0, "maximum": 150},
                    "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "maxItems": 3},
                    "email": {"type": "string", "format": "email"},
                    "ok": {"type": "boolean"}, "none": {"type": "null"}},
     "required": ["name"]},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
     "items": False, "minItems": 1},
    {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4},
    {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer", "exclusiveMinimum": -5, "exclusiveMaximum": 5},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}},
     "$ref": "#/$defs/node"},
    {"anyOf": [{"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"}, {"type": "integer"}]},
    {"oneOf": [{"type": "string"}, {"type": "null"}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
               {"properties": {"b": {"const": "x"}}}]},
    {"type": "object", "additionalProperties": {"type": "integer"},
     "properties": {"fixed": {"type": "string"}}},
    {"type": "string", "pattern": "ab+", "maxLength": 5},
    {"type": "string", "format": "date-time"},
    {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
                                      "ip": {"type": "string", "format": "ipv4"}},
     "additionalProperties": False, "required": ["id"]},
    {"enum": [1, "two", None, [3], {"four": 4}]},
    {"type": "object", "properties": {"id": {"type": "integer"}, "x-id": {"type": "string"}},
     "patternProperties": {"^x-": {"type": "string", "maxLength": 3}, "^n_": {"type": "number"}},
     "additionalProperties": False},
    {"type": "number", "minimum": -1.5, "exclusiveMaximum": 2},
    {"enum": ["a", 1, "bb"], "type": "string", "maxLength": 1},
    {"type": "object", "oneOf": [
        {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]},
        {"properties": {"z": {"type": "null"}}, "required": ["z"],
         "additionalProperties": False}]},
    {"properties": {"gone": {"not": {}}, "t": {"not": {"type": ["string", "null"]}}}},
]
# objects open to any key: agreement only (random generations of them seldom close in time)
OPEN_OBJECTS = [
    {"type": "object"},
    {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "minProperties": 1},
]

INSTANCES = [
    {"name": "Al", "age": 30, "tags": ["a", 3]}, {"name": "A"}, {"name": "Bob", "age": 151},
    {"name": "Bob", "tags": ["a", "a", "b", "a"]}, {"name": "Bo", "email": "x@y.com"},
    {"name": "Bo", "extra": [1]}, {"name": "Bo", "email": "nope"}, [1, "a"], [1, "a", 2], [],
    ["x"], [1.5, 2], [1, 2, 3, 4, 5], {"value": 1, "children": [{"value": -4}]},
    {"value": 5}, {"value": 1, "children": [{"value": 1, "x": 2}]}, "AB-123", "ab-123", 17,
    "str", None, {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"b": "x"}, {"fixed": "s", "n": 2},
    {"fixed": "s", "n": "2"}, "xaby", "abbbbb", "2024-02-29T12:30:00Z", "2024-13-01T00:00:00Z",
    {"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "10.0.0.255"},
    {"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "10.0.0.256"}, 1, "two", [3],
    {"four": 4}, {"four": 5}, 1.5, {"name": "Bo", "age": -1}, {"name": "Bo", "age": 0},
    {"id": 1, "x-a": "s"}, {"id": 1, "x-a": 2}, {"x-": "s", "n_1": 2.5}, {"other": 1},
    {"id": "1"}, {"x-id": "long text"}, {"x-abc": "long"}, -1.5, -1.6, 1.99, 2, "a", "bb",
    {"kind": "a", "x": 1}, {"kind": "b", "x": 1}, {"kind": "c"}, {"z": None}, {"z": None, "q": 1},
    {"gone": 1}, {"t": 1}, {"t": "s"}, {"t": [None]},
]


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("schema", SCHEMAS + OPEN_OBJECTS,
                         ids=range(len(SCHEMAS) + len(OPEN_OBJECTS)))
def test_agrees_with_jsonschema(schema):
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema,
                                                format_checker=jsonschema.FormatChecker())
    for value in INSTANCES:
        expected = validator.is_valid(value)
        assert machine.matches(compact(value)) == expected, (schema, value)


def test_integers_written_with_a_zero_fraction():
    m = JsonSchema({"type": "integer", "minimum": 1})
    assert m.matches("1.0") and m.matches("12.000") and not m.matches("1.5")
    assert not m.matches("0.0") and not m.matches("1.")
    draft4 = JsonSchema({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"})
    assert draft4.matches("1") and not draft4.matches("1.0")  # draft 4: 1.0 is a number


def test_schema_order_of_properties():
    m = JsonSchema({"properties": {"a": {}, "b": {}}})
    assert m.matches('{"a":1,"b":2}') and m.matches('{"b":2}')
    assert not m.matches('{"b":2,"a":1}')  # listed properties come in schema order
    assert m.matches('{"a":1,"z":3}') and not m.matches('{"a":1,"a":3}')


def test_large_max_length_is_counted():
    m = JsonSchema({"type": "string", "maxLength": 1_000_000})
    # a count, not states: as many as a string without a bound
    assert m.compile().n_dfa_states == JsonSchema({"type": "string"}).compile().n_dfa_states
    assert m.matches('"' + "x" * 5000 + '"')


def test_counts_beyond_32_bits():
    """Upper bounds past the core's counters are kept at MAX_COUNT (only absurdly long
    instances are refused); lower bounds past them are refused."""
    for schema in ({"type": "string", "maxLength": 2**40},
                   {"type": "string", "maxLength": 2**53 - 1, "pattern": "^a"},
                   {"type": "array", "maxItems": 2**40}, {"maxProperties": 2**40}):
        text = {"string": '"abc"', "array": "[1,2]"}.get(schema.get("type"), '{"a":1}')
        assert JsonSchema(schema).matches(text), schema
    for schema in ({"type": "string", "minLength": 2**40}, {"minItems": 2**31}):
        with pytest.raises(SchemaError, match="MAX_COUNT"):
            JsonSchema(schema)


def test_unicode_and_escapes_count_as_one_character():
    m = JsonSchema({"type": "string", "minLength": 2, "maxLength": 2})
    for text, ok in [('"é🎉"', True), ('"\\n\\u00e9"', True), ('"a"', False), ('"abc"', False)]:
        assert m.matches(text) == ok, text


def test_a_surrogate_pair_counts_as_one_character():
    """As in the decoded string (jsonschema counts code points): the escapes of one code point
    beyond U+FFFF are one character; a surrogate outside a pair is no character at all."""
    for lo, hi in [(1, 1), (2, 2), (0, 1), (2, None)]:
        schema = {"type": "string", "minLength": lo}
        if hi is not None:
            schema["maxLength"] = hi
        m = JsonSchema(schema)
        for text in ['"\\ud83d\\ude00"', '"\\uD83D\\uDE00x"', '"\\ud7ff\\ue000"', '"😀"']:
            expected = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
            assert m.matches(text) == expected, (schema, text)
    for lone in ['"\\ud83d"', '"\\ude00"', '"\\ud83dx"', '"\\ude00\\ud83d"']:
        assert not JsonSchema({"type": "string"}).matches(lone), lone


@pytest.mark.parametrize("lo, hi", [(None, None), (0, None), (None, 0), (-17, 42), (5, 5),
                                    (-1000, -3), (99, 1001), (None, -10), (7, None)])
def test_integer_ranges(lo, hi):
    dfa = compile_regex(integer_pattern(lo, hi))
    for n in list(range(-1200, 1200)) + [10**12, -10**12]:
        inside = (lo is None or n >= lo) and (hi is None or n <= hi)
        assert dfa.matches(str(n).encode()) == inside, n
    assert not dfa.matches(b"01") and not dfa.matches(b"-")
    assert dfa.matches(b"-0") == ((lo is None or lo <= 0) and (hi is None or hi >= 0))


def test_pattern_is_a_search_and_spelled_as_json():
    m = JsonSchema({"type": "string", "pattern": 'a"b'})
    assert m.matches('"xxa\\"byy"') and not m.matches('"ab"')
    anchored = JsonSchema({"type": "string", "pattern": "^a+$"})
    assert anchored.matches('"aaa"') and not anchored.matches('"baaa"')


@pytest.mark.parametrize("schema", [
    # lookaheads at the start of an anchored pattern (keywords, reserved prefixes)
    {"type": "string", "pattern": "^(?!(?:if|in)$)[a-z_][a-z0-9_]*$"},
    {"type": "string", "pattern": "^(?!x\\.|y\\.)(?=.{0,4}$)"},
    {"propertyNames": {"pattern": "^(?!_)"}, "patternProperties": {"^(?=a)": {"type": "integer"}}},
    # anchors inside: each path segment "..", a name, or the end
    {"type": "string", "pattern": "^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$"},
    {"type": "string", "pattern": "(^|_)(a|b|x|in|if)(_|$)"},  # (past MAX_ALTERNATIVES)
    # two patterns merged by allOf: each found somewhere
    {"type": "string", "allOf": [{"pattern": "a"}, {"pattern": "^[^x]"}, {"pattern": "b$"}]},
    {"type": "string", "allOf": [{"pattern": "^(?!a)"}, {"pattern": "^(?=.b)"}]},
])
def test_lookaheads_and_inner_anchors_against_jsonschema(schema):
    import itertools

    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    texts = ["".join(t) for n in range(6) for t in itertools.product(
        ["a", "b", "x", "_", "/", ".", "in", "if"], repeat=min(n, 3))][:3000]
    values = texts + [{t: 1} for t in texts[:300]] + [{"a": "s"}, {"_a": 1, "b": 2}]
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


@pytest.mark.parametrize("schema", [
    {"not": {"propertyNames": {"not": {"enum": ["a", "b", 3]}}}},  # a or b present
    {"not": {"propertyNames": False}},  # an object with some property
    {"type": "object", "not": {"propertyNames": {"$ref": "#/$defs/n"}},
     "$defs": {"n": {"not": {"const": "x"}}}},
    {"not": {"anyOf": [{"propertyNames": {"not": {"enum": ["a"]}}},
                       {"propertyNames": {"not": {"enum": ["b"]}}}]}, "maxProperties": 2},
])
def test_not_of_property_names(schema):
    """`not` of propertyNames: a name it leaves out is present."""
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    for value in [{}, {"a": 1}, {"b": 1}, {"c": 1}, {"x": 1}, {"a": 1, "b": 2}, {"c": 1, "b": 2},
                  {"a": 1, "b": 2, "c": 3}, 1, "a", [], None]:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_a_pattern_counting_words_stays_under_the_state_limit():
    """Large classes (\\S, \\s, with their JSON escapes) are deterministic pieces, so that
    this subset construction tracks one state per character (it went past MAX_DFA_STATES)."""
    import re

    pattern = "^$|(^(?:\\S+\\s+){0,99}\\S+$)"
    machine = JsonSchema({"type": "string", "pattern": pattern})
    for text in ["", "one", "a b", "a  b ", " a", "é\tx", " ".join(["w"] * 100),
                 " ".join(["w"] * 101)]:
        assert machine.matches(json.dumps(text, ensure_ascii=False)) == bool(
            re.search(pattern, text)), text


def test_a_lookahead_not_at_the_start_is_refused_by_name():
    with pytest.raises(SchemaError, match="lookaround"):
        JsonSchema({"type": "string", "pattern": "(?!a)b"})  # (a search: no start to hold at)
    # merged, this one's lookahead would not be at the start: not merged, and said so
    with pytest.raises(SchemaError, match="allOf/1: pattern: conflicting values"):
        JsonSchema({"type": "string", "allOf": [{"pattern": "^(?!a)|b"}, {"pattern": "c"}]})


@pytest.mark.parametrize("pattern", [r"\bfoo", r"foo\b", r"a\Bb"])
def test_word_boundaries_are_refused_by_name(pattern):
    with pytest.raises(SchemaError, match=r"word boundaries \(\\b, \\B\) are not supported"):
        JsonSchema({"type": "string", "pattern": pattern})


def test_schema_from_text_and_bad_schemas():
    assert JsonSchema('{"type": "integer"}').matches("12")
    with pytest.raises(SchemaError, match="not valid JSON"):
        JsonSchema("{nope")
    with pytest.raises(SchemaError, match="false"):
        JsonSchema(False)
    with pytest.raises(SchemaError, match="does not resolve"):
        JsonSchema({"$ref": "#/$defs/missing"})
    with pytest.raises(SchemaError, match="unknown type"):
        JsonSchema({"type": "strin"})
    with pytest.raises(SchemaError, match="uniqueItems"):
        JsonSchema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
    with pytest.raises(SchemaError, match="oneOf.*no opposite"):  # (uniqueItems: see array)
        JsonSchema({"oneOf": [{"type": "array"}, {"uniqueItems": True}]})
    with pytest.raises(SchemaError, match="property_order"):
        JsonSchema({}, property_order="sorted")


def test_not_strict_approximates_with_a_warning():
    # [] matches both branches, so oneOf rejects it; anyOf, the approximation, does not
    with pytest.warns(UserWarning, match="oneOf"):
        m = JsonSchema({"oneOf": [{"type": "array"}, {"uniqueItems": True}]}, strict=False)
    assert m.matches("[]") and m.warnings


def test_standard_formats_no_automaton_checks_are_refused():
    with pytest.raises(SchemaError, match="regex"):
        JsonSchema({"type": "string", "format": "regex"})


def test_hostname_has_at_most_253_characters():
    """RFC 1034/1123: a host name is at most 253 characters, counted as maxLength is (a
    smaller maxLength beside it holds); its opposite (`not`) takes the longer ones; as a key
    name the bound is one no key automaton counts: refused by name."""
    name = ".".join(["a" * 63] * 4)  # 255 characters, labels of 63
    assert len(name[:253]) == 253 and not name[:253].endswith(".")
    m = JsonSchema({"type": "string", "format": "hostname"})
    assert m.matches(json.dumps(name[:253])) and not m.matches(json.dumps(name[:254]))
    m = JsonSchema({"type": "string", "format": "hostname", "maxLength": 10})
    assert m.matches('"abcdefghij"') and not m.matches('"abcdefghijk"')
    m = JsonSchema({"type": "string", "not": {"format": "hostname"}})
    assert m.matches(json.dumps(name[:254])) and m.matches('"-x"') and not m.matches('"ab"')
    with pytest.raises(SchemaError, match="propertyNames: maxLength"):
        JsonSchema({"type": "object", "propertyNames": {"format": "hostname"}})


def test_unknown_format_is_ignored_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = JsonSchema({"type": "string", "format": "colour"})
    assert any("colour" in str(w.message) for w in caught)
    assert m.matches('"anything"')


def test_unsatisfiable_schema():
    with pytest.raises(SchemaError):
        JsonSchema({"type": "integer", "minimum": 5, "maximum": 4})


def test_engine_takes_schemas_directly():
    vocab = shared_vocab("llama3")
    engine = StructuringEngine(vocab)
    engine.configure({"type": "integer", "maximum": 9})
    assert engine.consume_tokens(vocab.encode("7")) == 1 and engine.is_accepting()
    engine.configure('{"const": "x"}')
    assert engine.consume_tokens(vocab.encode('"x"')) == len(vocab.encode('"x"'))
    pydantic = pytest.importorskip("pydantic", reason="pydantic is in the test extra")

    class Point(pydantic.BaseModel):
        x: int
        y: int

    engine.configure(Point)
    text = '{"x":1,"y":-2}'
    assert engine.consume_tokens(vocab.encode(text)) == len(vocab.encode(text))
    assert engine.is_accepting()


def test_remote_ref_through_retrieve():
    remote = {"type": "string", "maxLength": 3}
    m = JsonSchema({"$ref": "http://example.com/s.json"}, retrieve=lambda uri: remote)
    assert m.matches('"abc"') and not m.matches('"abcd"')
    with pytest.raises(SchemaError, match="retrieve"):
        JsonSchema({"$ref": "http://example.com/s.json"})


# A tree whose nodes an extending schema narrows: the dynamic reference in the base schema
# resolves to the outermost resource of the dynamic scope that defines the anchor.
_TREE_2020 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://example.com/strict-tree", "$dynamicAnchor": "node",
    "$ref": "tree", "unevaluatedProperties": False,
    "$defs": {"tree": {"$id": "tree", "$dynamicAnchor": "node", "type": "object",
                       "properties": {"data": True,
                                      "children": {"type": "array",
                                                   "items": {"$dynamicRef": "#node"}}}}}}
_TREE_2019 = {
    "$schema": "https://json-schema.org/draft/2019-09/schema",
    "$id": "https://example.com/strict-tree", "$recursiveAnchor": True,
    "$ref": "tree", "unevaluatedProperties": False,
    "$defs": {"tree": {"$id": "tree", "$recursiveAnchor": True, "type": "object",
                       "properties": {"data": True,
                                      "children": {"type": "array",
                                                   "items": {"$recursiveRef": "#"}}}}}}
_TREES = [{"children": [{"daat": 1}]}, {"children": [{"data": 1}]}, {"data": [1]},
          {"children": [{"children": [{"x": 2}]}]}, {"children": [{"children": []}]}, {}]
# a generic list whose item type the outer resource fixes; the reference sits in allOf
_NUMBER_LIST = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://example.com/numbers", "$ref": "list",
    "$defs": {"item": {"$dynamicAnchor": "item", "type": "number"},
              "list": {"$id": "list", "type": "array",
                       "items": {"allOf": [{"$dynamicRef": "#item"}], "minimum": 0},
                       "$defs": {"item": {"$dynamicAnchor": "item"}}}}}
_LISTS = [[1, 2], [], ["a"], [-1], [0.5, None]]


@pytest.mark.parametrize("schema, validator, instances", [
    (_TREE_2020, jsonschema.Draft202012Validator, _TREES),
    (_TREE_2019, jsonschema.Draft201909Validator, _TREES),
    (_NUMBER_LIST, jsonschema.Draft202012Validator, _LISTS)],
    ids=["dynamicRef", "recursiveRef", "in-allOf"])
def test_dynamic_references_agree_with_jsonschema(schema, validator, instances):
    machine = JsonSchema(schema, property_order="any")
    verdicts = [validator(schema).is_valid(t) for t in instances]
    assert True in verdicts and False in verdicts
    for instance, expected in zip(instances, verdicts):
        assert machine.matches(compact(instance)) == expected, instance
    # the same schemas without the outer resource: the reference is resolved statically
    inner = schema["$defs"]["tree" if "tree" in schema["$defs"] else "list"]
    inner = {**inner, "$schema": schema["$schema"]}
    machine = JsonSchema(inner, property_order="any")
    for instance in instances:
        assert machine.matches(compact(instance)) == validator(inner).is_valid(instance)


# conditions and negations whose opposite has a schema: literal values, patterns, properties,
# required names, types, bounds, and conjunctions of those
_CONDITIONS = st.sampled_from([
    {"properties": {"kind": {"const": "a"}}},
    {"properties": {"kind": {"enum": ["a", "b"]}}, "required": ["kind"]},
    {"properties": {"n": {"minimum": 2}, "kind": {"type": "string"}}},
    {"type": "object", "properties": {"flag": {"const": True}}},
    {"pattern": "^a"}, {"const": "a"}, {"enum": [None, False, "b"]},
    {"type": "string", "pattern": "b$"}, {"required": ["n"]}, {"maxLength": 1},
])
_BRANCHES = st.sampled_from([
    True, False, {"required": ["n"]}, {"properties": {"n": {"type": "integer"}}},
    {"type": "string"}, {"minProperties": 2}, {"not": {"const": "b"}}])
_CONDITION_VALUES = [None, True, False, 0, 3, 1.5, "a", "b", "ab", "ba", "\u00e9", [], ["a"], {},
           {"kind": "a"}, {"kind": "b"}, {"kind": "c", "n": 1}, {"kind": "a", "n": 3},
           {"n": 2}, {"n": "x"}, {"flag": True}, {"flag": False, "n": 0}, {"kind": 1}]


@settings(max_examples=300)
@given(cond=_CONDITIONS, then=_BRANCHES, other=_BRANCHES,
       form=st.sampled_from(["if", "not", "not if", "oneOf if"]))
def test_if_then_else_and_not_agree_with_jsonschema(cond, then, other, form):
    conditional = {"if": cond, "then": then, "else": other}
    schema = {"if": conditional, "not": {"not": cond}, "not if": {"not": conditional},
              "oneOf if": {"oneOf": [conditional, {"required": ["n"]}]}}[form]
    validator = jsonschema.Draft202012Validator(schema)
    try:
        machine = JsonSchema(schema, property_order="any")  # keys in any order, as jsonschema
    except SchemaError as e:  # only a schema that allows nothing is refused
        assert "nothing is valid" in str(e) or "false" in str(e)
        assert not any(validator.is_valid(v) for v in _CONDITION_VALUES)
        return
    for value in _CONDITION_VALUES:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


# oneOf branches that overlap in many ways: open and closed objects, items, types, literals
_ONE_OF_BRANCHES = st.sampled_from([
    True, {"type": "string"}, {"minLength": 2}, {"enum": ["x", None, True]}, {"required": ["b"]},
    {"not": {"type": "null"}}, {"type": "array", "items": {"type": "string"}},
    {"items": {"maxLength": 1}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
    {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
    {"properties": {"a": {"const": "x"}}, "additionalProperties": False},
    {"properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
     "additionalProperties": False},
    {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
    {"patternProperties": {"^a": {"type": "string"}}},
    {"patternProperties": {"^b": {"type": "integer"}}, "additionalProperties": False},
    {"propertyNames": {"maxLength": 1}}, {"type": "object", "maxProperties": 1}])
_ONE_OF_VALUES = [None, True, 0, 1.5, "x", "xy", "", [], ["x"], ["xy", "z"], [1], {}, {"a": "x"},
                  {"a": "y"}, {"b": 1}, {"a": "x", "b": 1}, {"a": "y", "b": 2}, {"c": 1},
                  {"a": 1}, {"b": "s"}, {"a": "x", "c": "s"}, {"ab": 1}, {"bb": "s"},
                  {"a": "x", "bc": 1}, {"ab": "x", "b": 1, "c": 2}, {"bc": 1, "c": "s"}]


@settings(max_examples=400)
@given(branches=st.lists(_ONE_OF_BRANCHES, min_size=2, max_size=3),
       rest=st.sampled_from([{}, {"type": "object"}, {"minProperties": 1}, {"maxProperties": 2},
                             {"properties": {"a": {}}, "additionalProperties": False}]))
def test_overlapping_one_of_agrees_with_jsonschema(branches, rest):
    schema = {**rest, "oneOf": branches}
    validator = jsonschema.Draft202012Validator(schema)
    try:
        machine = JsonSchema(schema, property_order="any")  # keys in any order, as jsonschema
    except SchemaError as e:
        if "contains: conflicting values" in str(e):
            return  # two opposites of items: two different items must fail, one counter
        if "generation could reach a dead end" in str(e):
            # maxProperties beside two requirements that some key be present (see object)
            assert "maxProperties" in json.dumps(schema)
            return
        if "could not be refused without a dead end" in str(e):
            # names of a bounded length that must not repeat (see object)
            assert "maxLength" in json.dumps(schema)
            return
        if "additionalProperties: conflicting values" in str(e):
            # a key one side's pattern takes, the other's additionalProperties would take
            # too: not one object schema (see _merge_object_shape)
            assert rest.get("additionalProperties") is False and any(
                "patternProperties" in b for b in branches if isinstance(b, dict))
            return
        assert "nothing is valid" in str(e) or "false" in str(e)
        assert not any(validator.is_valid(v) for v in _ONE_OF_VALUES)
        return
    for value in _ONE_OF_VALUES:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


# branches whose opposites go through references (a recursive one too), a nested oneOf,
# formats, dependentRequired, a discriminator and bounds
_REF_DEFS = {
    "tree": {"type": "object", "required": ["v"], "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}}},
    "word": {"type": "string", "pattern": "^[a-z]+$"}}
_REF_BRANCHES = st.sampled_from([
    {"$ref": "#/$defs/tree"}, {"$ref": "#/$defs/word"},
    {"oneOf": [{"type": "string"}, {"minLength": 2}]},
    {"format": "ipv4"}, {"format": "date"}, {"dependentRequired": {"a": ["b"]}},
    {"type": "object", "required": ["k"], "properties": {"k": {"const": "s"},
                                                         "v": {"type": "string"}}},
    {"type": "object", "required": ["k"], "properties": {"k": {"const": "i"},
                                                         "v": {"type": "integer"}}},
    {"properties": {"v": {"$ref": "#/$defs/word"}}}, {"type": "integer", "maximum": 5},
    {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "null"}]}])
_REF_VALUES = [None, 1, 7, 2.5, "a", "ab", "AB", "1.2.3.4", "1.2.3", "2024-02-29", "2023-02-29",
               [], {"v": 1}, {"v": 1, "kids": []}, {"v": 1, "kids": [{"v": 2}]},
               {"v": 1, "kids": [{"v": 2, "kids": [{"w": 3}]}]}, {"v": "x"}, {"v": "X"},
               {"k": "s", "v": "s"}, {"k": "i", "v": 3}, {"k": "s", "v": 3}, {"k": 3}, {"a": 1},
               {"a": 1, "b": 2}, {"v": 1, "a": 1}]


@settings(max_examples=200)
@given(branches=st.lists(_REF_BRANCHES, min_size=2, max_size=3))
def test_one_of_opposites_through_references_agree_with_jsonschema(branches):
    schema = {"$defs": _REF_DEFS, "oneOf": branches}
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    try:
        machine = JsonSchema(schema, property_order="any")
    except SchemaError as e:
        assert "nothing is valid" in str(e) or "false" in str(e), e
        assert not any(validator.is_valid(v) for v in _REF_VALUES)
        return
    for value in _REF_VALUES:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_one_of_of_branches_sharing_a_base():
    # five kinds of one base, told apart by an optional "p": within another kind, a kind's
    # opposite is only "p" or its own property failing (the base holds in both)
    base = {"type": "object", "required": ["on"], "properties": {
        "on": {"type": "boolean"}, "c": {"type": "array", "items": {"minLength": 1}}}}
    kinds = [{"allOf": [{"$ref": "#/$defs/base"}, {"properties": {
        "p": {"enum": [f"k{i}"]}, f"x{i}": {"type": "integer"}}}]} for i in range(5)]
    schema = {"$defs": {"base": base}, "oneOf": kinds}
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    for value in [{"on": True}, {"on": True, "p": "k1"}, {"on": True, "x1": 1},
                  {"on": True, "x1": "s"}, {"on": True, "p": "k1", "x2": "s"},
                  {"on": True, "p": "k1", "x1": "s"}, {"on": True, "p": "k9"},
                  {"on": True, "p": "k3", "c": [""]}, {"on": True, "p": "k3", "c": ["a"]}]:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_opposite_of_a_discriminated_union_stays_small():
    # "none of twelve kinds": each kind's opposite is an anyOf of five ways to fail, and
    # their conjunction would multiply out to 5**12 combinations; case by case on "kind" it
    # is twelve
    kinds = [{"type": "object", "required": ["kind"], "properties": {
        "kind": {"const": f"k{i}"}, "a": {"type": "integer"}, "b": {"type": "string"},
        "c": {"type": "boolean"}, "d": {"type": "null"}}} for i in range(12)]
    schema = {"oneOf": [{"anyOf": kinds}, {"required": ["a"]}]}
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    for value in [{"kind": "k1"}, {"kind": "k1", "a": 1}, {"a": 1}, {"kind": "k1", "a": "x"},
                  {"kind": "zz", "a": 1}, {"kind": "k11", "b": 2, "a": 2}, {}, 3]:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_unions_that_multiply_out_are_refused_clearly(monkeypatch):
    # 2**20 combinations of properties: refused with the limit named, not compiled for minutes
    # (the limit lowered, so that the test reaches it soon)
    schema = {"allOf": [{"anyOf": [{"required": [f"a{i}"]}, {"required": [f"b{i}"]}]}
                        for i in range(20)]}
    monkeypatch.setattr(pse.json_schema.compile, "MAX_SCHEMA_NODES", 2000)
    with pytest.raises(SchemaError, match="MAX_SCHEMA_NODES"):
        JsonSchema(schema)
    monkeypatch.undo()
    JsonSchema({"allOf": schema["allOf"][:8]})  # 256 combinations: within the limit


def test_one_of_tells_equal_numbers_apart():
    # 1 and 1.0 are one JSON value: it matches both branches, so oneOf rejects it
    m = JsonSchema({"oneOf": [{"enum": [1, 2]}, {"enum": [1.0]}]})
    assert [m.matches(v) for v in ("1", "1.0", "2")] == [False, False, True]


def test_draft4_exclusive_bounds_merge_by_value():
    # minimum 3 (exclusive) and minimum 5: 5 is allowed (the exclusive flag is 3's)
    m = JsonSchema({"$schema": "http://json-schema.org/draft-04/schema#", "allOf": [
        {"minimum": 3, "exclusiveMinimum": True}, {"minimum": 5}]})
    assert [m.matches(v) for v in ("4", "5", "6")] == [False, True, True]
    m = JsonSchema({"$schema": "http://json-schema.org/draft-04/schema#", "oneOf": [
        {"maximum": 5, "exclusiveMaximum": True}, {"minimum": 3}]})
    assert [m.matches(v) for v in ("2", "3", "4.5", "5", "6")] == \
        [True, False, False, True, True]


def test_same_reference_twice_in_all_of_merges():
    m = JsonSchema({"$defs": {"a": {"type": "object", "required": ["x"]}},
                    "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]})
    assert m.matches('{"x":1}') and not m.matches("{}")


def _menu(depth: int, label: bool = True) -> dict:
    item: dict = {"label": "x"} if label else {}
    return {**item, "children": [_menu(depth - 1, label)]} if depth else item


@pytest.mark.parametrize("items", [
    {"allOf": [{"$ref": "#/definitions/item"}]},  # a subschema met again inside itself
    {"anyOf": [{"$ref": "#/definitions/item"}, {"$ref": "#/definitions/link"}],
     "type": "object"},  # each branch merged with the rest, the target inlined
])
def test_recursion_through_merged_references(items):
    """Recursion that passes through allOf or a union with siblings (each inlines the
    target) closes on itself instead of nesting past MAX_SCHEMA_DEPTH."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#",
              "definitions": {"item": {"type": "object", "required": ["label"],
                                       "properties": {"label": {"type": "string"},
                                                      "children": {"type": "array",
                                                                   "items": items}},
                                       "additionalProperties": False},
                              "link": {"type": "object", "required": ["href"]}},
              "type": "array", "items": items}
    machine = JsonSchema(schema)
    validator = jsonschema.Draft4Validator(schema)
    for value in ([_menu(40)], [_menu(3), {"href": "/"}], [_menu(4, label=False)],
                  [{"label": "x", "children": [{"href": 1}]}]):
        assert machine.matches(compact(value)) == validator.is_valid(value), value


SWITCH = {"properties": {"kind": {"enum": ["a", "b", "c", "d"]}}, "allOf": [
    {"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]},
     "else": {"properties": {"x": False}}},
    {"if": {"properties": {"kind": {"const": "b"}}, "required": ["kind"]},
     "then": {"required": ["y"]}},
    {"if": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["c", "a"]}}},
     "then": {"properties": {"z": {"type": "integer"}}}, "else": {"properties": {"z": False}}},
    {"if": {"properties": {"other": {"const": "on"}}}, "then": {"required": ["w"]}}]}


@pytest.mark.parametrize("schema", [SWITCH, {**SWITCH, "type": "object"}])
def test_conditions_side_by_side(schema):
    """`if`s merged from allOf: those that test one property are cases of one union, the
    others expanded in each case; every combination checked against jsonschema."""
    import itertools

    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    values = ["1", "[]", "null"]
    for kind, x, y, z, other in itertools.product([None, "a", "b", "c", "d"], *[[None, 1]] * 3,
                                                  [None, "on", "off"]):
        value = {k: v for k, v in (("kind", kind), ("x", x), ("y", y), ("z", z),
                                   ("other", other)) if v is not None}
        if other == "on" and x:
            value["w"] = 0
        values.append(compact(value))
    for text in values:
        assert machine.matches(text) == validator.is_valid(json.loads(text)), text


def test_condition_that_always_holds_beside_another():
    schema = {"allOf": [{"if": {"title": "always"}, "then": {"required": ["a"]}},
                        {"if": {"required": ["b"]}, "then": {"required": ["c"]}}]}
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    for value in ({}, {"a": 1}, {"a": 1, "b": 1}, {"a": 1, "b": 1, "c": 1}, {"b": 1, "c": 1}):
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_many_conditions_on_one_property_stay_small():
    """Sixteen `if`s on one property, each `then` a union: one case per value, where
    expanding each `if` in turn would make 2^16 schemas (over MAX_SCHEMA_NODES)."""
    kinds = [f"k{i}" for i in range(16)]
    schema = {"type": "object", "required": ["kind"],
              "properties": {"kind": {"enum": kinds}}, "allOf": [
                  {"if": {"properties": {"kind": {"const": k}}},
                   "then": {"anyOf": [{"required": [f"a{i}"]}, {"required": [f"b{i}"]}]}}
                  for i, k in enumerate(kinds)]}
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    for value in ({"kind": "k3", "a3": 1}, {"kind": "k3", "b3": 1}, {"kind": "k3", "a4": 1},
                  {"kind": "k15", "b15": 0}, {"kind": "k16", "a1": 1}, {"a0": 1}):
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_draft4_reads_id_not_dollar_id():
    """Draft 4 names a resource with "id"; "$id" (draft 6 on) is an unknown keyword there,
    so a reference beside it is read against the document's base."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#",
              "definitions": {"name": {"enum": ["a", "b"]}},
              "items": {"$id": "/elsewhere/items", "properties": {"name": {
                  "$ref": "#/definitions/name"}}}}
    machine = JsonSchema(schema)
    validator = jsonschema.Draft4Validator(schema)
    for value in ([{"name": "a"}], [{"name": "c"}]):
        assert machine.matches(compact(value)) == validator.is_valid(value), value


@pytest.mark.parametrize("schema", [
    {"not": {"const": ["deleted"]}},
    {"type": "array", "not": {"enum": [[], ["a", "b"], [["x"]]]}},
    {"not": {"const": {"a": "x", "b": True}}},
    {"type": "object", "not": {"enum": [{}, {"a": {"b": None}}]}},
])
def test_not_leaves_out_arrays_and_objects(schema):
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    for value in ([], ["deleted"], ["deleted", "x"], ["x"], ["a", "b"], ["a"], [["x"]],
                  [["y"]], [[]], {}, {"a": "x"}, {"a": "x", "b": True}, {"b": True, "a": "x"},
                  {"a": "x", "b": True, "c": 1}, {"a": "y", "b": True}, {"a": {"b": None}},
                  {"a": {"b": 1}}, {"a": {}}, "deleted", 1, None):
        assert machine.matches(compact(value)) == validator.is_valid(value), value


@pytest.mark.parametrize("schema, values", [
    # a listed object whose keys are out of the schema's order is checked by value (and
    # spelled in its own order)
    ({"enum": [{"b": 1, "a": 2}, {"a": 1}], "properties": {"a": {}, "b": {"minimum": 1}}},
     [{"b": 1, "a": 2}, {"a": 1}]),
    # beside a list of values, `not` of any schema pse compiles leaves out what it matches
    ({"enum": [{"aaaa": 31}, {"aaaa": 1}, {"b": 1}],
      "not": {"patternProperties": {"aaa*": {"maximum": 20}}}},
     [{"aaaa": 31}, {"aaaa": 1}, {"b": 1}]),
    ({"enum": [["x"], ["x", "y"], [1]], "not": {"items": {"type": "string"}}},
     [["x"], ["x", "y"], [1]]),
])
def test_listed_values_checked_in_any_order(schema, values):
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_references_leading_only_to_themselves_are_refused():
    for defs in ({"p": {"$ref": "#/$defs/p"}}, {"p": {"$ref": "#/$defs/q"},
                                                "q": {"$ref": "#/$defs/p"}}):
        with pytest.raises(SchemaError, match="refers only to itself"):
            JsonSchema({"$defs": defs, "properties": {"a": {"$ref": "#/$defs/p"}}})


def test_property_names_referring_to_themselves_are_refused():
    for names in ({"$ref": "#/$defs/p"}, {"anyOf": [{"$ref": "#/$defs/p"}, {"const": "a"}]}):
        schema = {"$defs": {"p": names}, "propertyNames": {"$ref": "#/$defs/p"}}
        with pytest.raises(SchemaError, match="MAX_SCHEMA_DEPTH"):
            JsonSchema(schema)


@pytest.mark.parametrize("schema, texts", [
    ({"enum": [{"a": 1}], "properties": {"a": {"type": "integer"}}}, ['{"a":1}', '{"a":1.0}']),
    ({"enum": [{"a": 1.0}], "properties": {"a": {"type": "integer"}}}, ['{"a":1}', '{"a":1.0}']),
    ({"enum": [[1], "x"], "items": {"type": "integer"}}, ["[1]", "[1.0]", '"x"']),
    ({"enum": [[1.0], "x"], "items": {"type": "integer"}}, ["[1]", "[1.0]", '"x"']),
])
def test_draft4_listed_arrays_and_objects_keep_integer_spellings(schema, texts):
    """In draft 4, 1.0 is not an integer: a listed array or object holding a whole number
    is matched beside the rest of the schema, spelling by spelling."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", **schema}
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft4Validator(schema)
    for text in texts:
        assert machine.matches(text) == validator.is_valid(json.loads(text)), text


@pytest.mark.parametrize("counts", [
    {"minItems": 2}, {"maxItems": 2}, {"minItems": 1, "maxItems": 3},
    {"minContains": 2, "maxItems": 3}, {"minContains": 2, "minItems": 3},
    {"minContains": 3, "maxItems": 2}])
def test_contains_beside_an_item_count(counts):
    import itertools

    schema = {"type": "array", "contains": {"const": 1}, "items": {"type": "integer"}, **counts}
    validator = jsonschema.Draft202012Validator(schema)
    values = [list(items) for n in range(5) for items in itertools.product([0, 1], repeat=n)]
    if not any(validator.is_valid(v) for v in values):  # (minContains over maxItems)
        with pytest.raises(SchemaError):
            JsonSchema(schema)
        return
    machine = JsonSchema(schema)
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_listed_objects_beside_more_properties_than_key_bits():
    """Where keys cannot be read in any order (over KEY_BITS properties), the listed values
    are checked in the schema's order instead: still compiled, on the safe side."""
    props = {f"p{i}": {"type": "integer"} for i in range(70)}
    m = JsonSchema({"properties": props, "enum": [{"p1": 1, "p2": 2}, {"p1": "x"}]})
    assert m.matches('{"p1":1,"p2":2}') and not m.matches('{"p1":"x"}')


def test_more_required_properties_than_key_bits_not_strict():
    """strict=False, any order, over KEY_BITS required names: the ones past the bits are
    neither told apart nor required, and the warning says so (it raised KeyError)."""
    props = {f"p{i}": {"type": "integer"} for i in range(70)}
    schema = {"type": "object", "properties": props, "required": list(props)}
    with pytest.warns(UserWarning, match="not required"):
        m = JsonSchema(schema, property_order="any", strict=False)
    assert m.matches(compact({k: 1 for k in props}))
    assert not m.matches(compact({"p0": 1}))  # a required name with a key bit
    with pytest.raises(SchemaError, match="KEY_BITS"):
        JsonSchema(schema, property_order="any")


_TAGGED = [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
           {"properties": {"b": {}}, "required": ["b"]}]


@pytest.mark.parametrize("key", ["anyOf", "oneOf"])
@pytest.mark.parametrize("order", ["schema", "any"])
def test_unevaluated_properties_beside_overlapping_unions_refused(key, order):
    """Branches compiled with unevaluatedProperties beside them are exact only where one
    branch at most matches: anyOf's keys evaluated are those of every branch that matches,
    and oneOf's opposites (see exclusive) would count as evaluating keys they only test
    ({"a":"x","b":1} was accepted beside oneOf: only the second branch matches, so "a" is
    unevaluated)."""
    schema = {"type": "object", key: _TAGGED, "unevaluatedProperties": False}
    with pytest.raises(SchemaError, match=f"#/unevaluatedProperties.*beside {key}"):
        JsonSchema(schema, property_order=order)
    with pytest.warns(UserWarning, match="unevaluatedProperties"):
        JsonSchema(schema, property_order=order, strict=False)


@pytest.mark.parametrize("key", ["anyOf", "oneOf"])
def test_unevaluated_properties_beside_disjoint_unions(key):
    """Branches no value matches twice (a tag of different constants on objects): the keys
    the matching branch evaluates are the union's, so each branch compiles with
    unevaluatedProperties beside it, exactly; and unevaluatedItems beside anyOf, whose
    branches evaluate leading items (the branch evaluating most decides)."""
    tagged = [{"properties": {"t": {"const": t}, t: {"type": "integer"}}, "required": ["t"]}
              for t in ("x", "y")]
    schema = {"type": "object", key: tagged, "properties": {"n": {}},
              "unevaluatedProperties": False}
    items = {"type": "array", "anyOf": [{"prefixItems": [{}]}, {"prefixItems": [{}, {}]}],
             "unevaluatedItems": False}
    values = [{"t": "x"}, {"t": "x", "x": 1}, {"t": "x", "y": 1}, {"n": 0, "t": "y", "y": 1},
              {"t": "y", "x": 1}, {"t": "x", "x": "a"}, {"t": "z"}, {}]
    for s, vs in ((schema, values), (items, [[], [1], [1, 2], [1, 2, 3]])):
        validator = jsonschema.Draft202012Validator(s)
        for order in ("schema", "any"):
            m = JsonSchema(s, property_order=order)
            for value in vs:
                assert m.matches(compact(value)) == validator.is_valid(value), (order, value)


@pytest.mark.parametrize("schema, values", [
    ({"$schema": "http://json-schema.org/draft-04/schema#", "enum": ["a", "b"],
      "not": {"const": "a"}}, ["a", "b"]),  # draft 4: `not {}`, nothing valid
    ({"$schema": "http://json-schema.org/draft-04/schema#",
      "properties": {"k": {"const": 1, "type": "string"}}}, [{"k": 1}, {"k": "x"}]),
    ({"$schema": "http://json-schema.org/draft-06/schema#", "type": "integer",
      "if": {"minimum": 5}, "then": {"multipleOf": 2}}, [6, 7]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "dependentRequired": {"a": ["b"]}}, [{"a": 1}, {"a": 1, "b": 2}]),
    ({"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "array",
      "prefixItems": [{"type": "string"}]}, [[1], ["a"]]),
    # a $ref into JSON outside any keyword: read in the schema's draft too
    ({"$schema": "http://json-schema.org/draft-04/schema#", "$ref": "#/x-defs/k",
      "x-defs": {"k": {"type": "integer", "const": 1}}}, [1, 2, "a"]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/x/0",
      "x": [{"type": "object", "dependentRequired": {"a": ["b"]}}]}, [{"a": 1}, {}, 3]),
])
def test_keywords_of_later_drafts_are_unknown_keywords(schema, values):
    """What a schema's own draft does not define constrains nothing there (jsonschema reads
    it so too); pse says so in a warning."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if not any(validator.is_valid(v) for v in values):
            with pytest.raises(SchemaError, match="nothing is valid"):
                JsonSchema(schema)
        else:
            machine = JsonSchema(schema)
            for value in values:
                assert machine.matches(compact(value)) == validator.is_valid(value), value
    assert any("is not a keyword of draft" in str(w.message) for w in caught)


def test_draft_2020_keeps_dependencies():
    """2020-12 split `dependencies` in two, but the official suite's optional tests (and
    users) still expect the old keyword to hold."""
    m = JsonSchema({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}})
    assert [m.matches(compact(v)) for v in ({"a": 1}, {"a": 1, "b": 2}, {"c": 1},
                                            {"c": 1, "d": 2})] == [False, True, False, True]


@pytest.mark.parametrize("schema, values", [
    ({"enum": [1], "properties": {"b": {"$ref": "#/$defs/x"}},
      "$defs": {"x": {"not": {"enum": [1]}}}}, [1, {"b": 1}]),
    ({"enum": [{"b": "s"}], "properties": {"b": {"$ref": "#/$defs/x"}},
      "$defs": {"x": {"not": {"enum": [1]}}}}, [1, {"b": "s"}]),
])
def test_a_reference_that_fails_leaves_nothing_half_built(schema, values):
    """A SchemaError inside a referenced schema that a caller catches and goes on from (the
    enum's checker, on `not` of a number) leaves no unset reference behind: the schema is
    refused with that SchemaError or compiles right, never a GrammarError."""
    try:
        machine = JsonSchema(schema)
    except SchemaError as e:
        assert "#/$defs/x/not" in str(e)
        return
    validator = jsonschema.Draft202012Validator(schema)
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


@pytest.mark.parametrize("schema", [
    {"type": "array", "allOf": [{"contains": {"const": 1}}, {"contains": {"const": 2}}]},
    {"type": "array", "maxItems": 3, "allOf": [{"contains": {"const": 1}, "minContains": 2},
                                               {"contains": {"minimum": 1}}]},
    {"items": {"type": "number"}, "allOf": [{"contains": {"type": "integer"}},
                                            {"contains": {"minimum": 2}, "minContains": 2}]},
    {"allOf": [{"contains": {"const": 1}}, {"minContains": 2}]},  # (that minContains: alone)
])
def test_contains_merged_beside_another(schema):
    """Two `contains` merged both hold: each counted apart, an item matching both counting
    for both."""
    import itertools

    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for n in range(5):
        for items in itertools.product([0, 1, 2, "a"], repeat=n):
            assert machine.matches(compact(list(items))) == validator.is_valid(list(items)), items


def test_enum_less_excluded_values_of_any_type():
    m = JsonSchema({"type": "integer", "enum": [1, 2, 3], "not": {"enum": [2.0]}})
    assert [m.matches(v) for v in ("1", "2", "3", "4")] == [True, False, True, False]


@pytest.mark.parametrize("schema, text, valid", [
    # `not: integer` beside literals (the opposite of an integer type takes this form)
    ({"enum": [1, 1.5, "a"], "not": {"type": "integer"}}, "1", False),
    ({"enum": [1, 1.5, "a"], "not": {"type": "integer"}}, "1.5", True),
    ({"properties": {"a": {"enum": [1, 1.5]}},
      "oneOf": [{}, {"properties": {"a": {"type": "integer"}}}]}, '{"a":1}', False),
    ({"properties": {"a": {"enum": [1, 1.5]}},
      "oneOf": [{}, {"properties": {"a": {"type": "integer"}}}]}, '{"a":1.5}', True),
    # true and 1 are different constraints when merged
    ({"allOf": [{"not": {"const": True}}, {"not": {"enum": [1, "x"]}}], "type": "boolean"},
     "true", False),
    # drafts 4-7: siblings of $ref are ignored inside allOf too, and a chain of $refs is followed
    ({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"o": {}},
      "allOf": [{"$ref": "#/definitions/o", "type": "string"}]}, "1", True),
    ({"$schema": "http://json-schema.org/draft-07/schema#",
      "definitions": {"a": {"$ref": "#/definitions/b", "minimum": 5}, "b": {}},
      "allOf": [{"$ref": "#/definitions/a"}, {"type": "string"}]}, "1", False),
    # 2019+: a $ref's siblings are merged with its target, not written over it
    ({"$defs": {"a": {"properties": {"x": {"type": "integer"}}}},
      "allOf": [{"$ref": "#/$defs/a", "properties": {"y": {"type": "string"}}}]},
     '{"x":"s"}', False),
    # equal values merged: 1 and 1.0 are one
    ({"allOf": [{"const": 1}, {"const": 1.0}]}, "1.0", True),
    # an `if` that asks for an object fails for a number (a case of its own)
    ({"allOf": [{"if": {"type": ["object"], "properties": {"k": {"const": "a"}}},
                 "then": {"minimum": 5}},
                {"if": {"properties": {"k": {"const": "b"}}}, "then": {"maximum": 10}}]},
     "3", True)])
def test_merges_keep_every_constraint(schema, text, valid):
    assert JsonSchema(schema, property_order="any").matches(text) == valid
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert validator.is_valid(json.loads(text)) == valid


def test_all_of_keeps_every_union():
    # two anyOf (or oneOf) side by side both hold; neither may be dropped when merged
    m = JsonSchema({"allOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]},
                              {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                              {"oneOf": [{"minimum": 3}, {"maximum": 5}]}]})
    assert [m.matches(v) for v in ('"a"', "null", "1", "4", "7")] == \
        [False, False, True, False, True]


def test_overlapping_one_of_compiles_where_opposites_exist():
    integers_or_strings = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2},
                                     {"type": "string"}]}
    m = JsonSchema(integers_or_strings)
    assert [m.matches(v) for v in ("1", "2", "2.5", "1.5", '"a"')] == \
        [True, False, True, False, True]
    fractions = JsonSchema({"oneOf": [{"type": "integer"}, {"type": "number"}]})
    assert [fractions.matches(v) for v in ("1", "1.0", "1.5", "-0.25", "2e-1")] == \
        [False, False, True, True, False]  # an exponent is not spelled there (2e-1 is 0.2)
    closed = {"oneOf": [
        {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
        {"properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
         "additionalProperties": False}]}
    m = JsonSchema(closed, property_order="any")
    assert [m.matches(v) for v in ('{"a":"x"}', '{"a":"x","b":1}', '{"b":1}', "{}")] == \
        [False, True, True, False]


# the opposite of an object shape that does not list every name ("some key not listed, or
# failing its pattern's schema, is present"): a SOME_PROPERTY requirement
_SHAPES = st.sampled_from([
    {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
    {"properties": {"a": {}, "b": {"type": "integer"}}, "additionalProperties": {"type": "null"}},
    {"additionalProperties": {"const": "x"}},
    {"patternProperties": {"^a": {"type": "string"}}},
    {"patternProperties": {"^b": {"type": "integer"}, "c$": False}, "additionalProperties": False},
    {"properties": {"ab": True}, "patternProperties": {"^a": {"maxLength": 1}}},
    {"propertyNames": {"maxLength": 1}}, {"propertyNames": {"pattern": "^[ab]+$"}},
    {"propertyNames": {"not": {"const": "b"}}}])
_SHAPE_RESTS = st.sampled_from([
    {}, {"required": ["a"]}, {"maxProperties": 1}, {"maxProperties": 2, "required": ["c"]},
    {"minProperties": 2}, {"properties": {"a": {"type": "integer"}}},
    {"propertyNames": {"enum": ["a", "b", "ab"]}}, {"additionalProperties": {"type": "string"}},
    {"not": {"additionalProperties": {"type": "integer"}}}])
_SHAPE_VALUES = [{}, {"a": "x"}, {"a": 1}, {"b": 1}, {"c": None}, {"ab": "x"}, {"ab": "xy"},
                 {"a": "x", "b": 2}, {"a": 1, "b": "s"}, {"a": "x", "c": 1}, {"b": 2, "bc": 1},
                 {"a": "x", "ab": 1, "cc": "s"}, {"ab": None, "b": None}, {"c": "s", "bb": 1},
                 {"a": None, "c": 1}, {"ba": 1, "b": 1, "a": "x"}]


@settings(max_examples=300, deadline=None)
@given(shape=_SHAPES, rest=_SHAPE_RESTS)
def test_not_of_an_open_object_shape_agrees_with_jsonschema(shape, rest):
    schema = {"type": "object", **rest, "not": shape} if "not" not in rest else \
        {"type": "object", "allOf": [rest, {"not": shape}]}
    validator = jsonschema.Draft202012Validator(schema)
    try:
        machine = JsonSchema(schema, property_order="any")
    except SchemaError as e:  # only a schema that allows nothing is refused, or one whose
        # keys of a bounded length must not repeat (see object)
        if "could not be refused without a dead end" in str(e):
            assert "maxLength" in json.dumps(schema)
            return
        assert "nothing is valid" in str(e) or "false" in str(e), e
        assert not any(validator.is_valid(v) for v in _SHAPE_VALUES)
        return
    in_schema_order = JsonSchema(schema)
    for value in _SHAPE_VALUES:
        valid = validator.is_valid(value)
        assert machine.matches(compact(value)) == valid, value
        # in schema order, a valid object with its keys in another order may be refused;
        # nothing invalid is accepted
        assert valid or not in_schema_order.matches(compact(value)), value


def test_some_property_requirements_in_schema_order():
    # listed names first, then other keys: the key not listed may come at any place among them
    m = JsonSchema({"oneOf": [{"properties": {"a": {"type": "string"}},
                               "additionalProperties": False},
                              {"properties": {"b": {"type": "integer"}}}]})
    assert [m.matches(v) for v in ('{"a":"x"}', '{"a":"x","c":1}', '{"b":1,"c":1,"d":2}',
                                   '{"b":1}', '{"c":1}', '{"b":1,"a":"x"}', '{"a":"x","b":"s"}')] \
        == [False, True, True, True, True, True, False]
    # under maxProperties, a key not listed is kept room for
    m = JsonSchema({"type": "object", "maxProperties": 2, "properties": {"a": {}, "b": {}},
                    "not": {"properties": {"a": {}, "b": {}}, "additionalProperties": False}})
    assert [m.matches(v) for v in ('{"a":1,"c":1}', '{"c":1,"d":1}', '{"a":1,"b":1}',
                                   '{"a":1,"b":1,"c":1}', '{"a":1}')] == \
        [True, True, False, False, False]


_SOME_SCHEMAS = [
    {"oneOf": [{"type": "object", "properties": {"a": {"type": "boolean"}},
                "additionalProperties": False},
               {"type": "object", "properties": {"a": {"type": "boolean"}},
                "additionalProperties": {"type": "integer"}}]},
    {"type": "object", "properties": {"a": {"type": "boolean"}}, "maxProperties": 2,
     "not": {"patternProperties": {"^[a-z]$": {"type": ["boolean", "string"]}}}},
    # (not integers: a generated 1e25 plus a fraction is an integer once a float)
]


@pytest.mark.parametrize("order", ["schema", "any"])
@pytest.mark.parametrize("schema", _SOME_SCHEMAS, ids=range(len(_SOME_SCHEMAS)))
def test_some_property_generations_validate(schema, order):
    assert_generations_validate(schema, order, seed=2)


def test_some_property_masks_equal_brute_force():
    from test_engine import check_along

    vocab = shared_vocab("llama3")
    engine = StructuringEngine(vocab, mask_memo=0)
    engine.configure(JsonSchema(_SOME_SCHEMAS[1], property_order="any"))
    check_along(engine, vocab.encode('{"zz":0,"z":[1]}'))


def test_some_property_leaves_no_dead_end():
    # only a listed name can meet it: "a" must meet it, not be a string and then stuck
    m = JsonSchema({"type": "object", "properties": {"a": {}}, "additionalProperties": False,
                    "not": {"patternProperties": {"a": {"type": "string"}}}})
    assert not m.matches('{"a":"s"', partial=True) and m.matches('{"a":1}')
    # under maxProperties, the last place is kept for a key that meets it
    m = JsonSchema({"type": "object", "maxProperties": 2, "required": ["a"],
                    "not": {"additionalProperties": {"type": "string"}}}, property_order="any")
    assert m.matches('{"a":"s","b":1}') and m.matches('{"b":"t","a":1}')
    assert not m.matches('{"a":"s","b":"t"', partial=True)
    assert not m.matches('{"b":"t","a":"s"', partial=True)
    with pytest.raises(SchemaError, match="dead end"):  # one key may meet both, or two
        JsonSchema({"type": "object", "maxProperties": 3,
                    "not": {"propertyNames": {"enum": ["c", "b", "ab"]}},
                    "allOf": [{"not": {"additionalProperties": False}},
                              {"not": {"patternProperties": {"a": {"type": "integer"}}}}]})
    with pytest.raises(SchemaError, match="nothing is valid"):  # no room for a second key
        JsonSchema({"type": "object", "maxProperties": 1, "required": ["a"],
                    "not": {"propertyNames": {"pattern": "^a"}}})

def test_more_properties_needed_than_allowed_is_nothing():
    """minProperties above maxProperties: nothing is valid, and in a branch of a union the
    branch is gone (it was kept, and generation could write a key no closing brace follows)."""
    with pytest.raises(SchemaError, match="nothing is valid"):
        JsonSchema({"type": "object", "minProperties": 2, "maxProperties": 1})
    m = JsonSchema({"type": "object", "maxProperties": 1,
                    "anyOf": [{"minProperties": 2}, {"required": ["b"]}]})
    assert not m.matches('{"a":null', partial=True)
    assert m.matches('{"b":null}') and not m.matches("{}")



# Where the number of keys or the values of keys not listed matter, a key repeated in the text
# is refused: a JSON reader keeps one value per key (json.loads: the last), so it would count
# once, or with its last value only.
_REPEATS = [
    ({"type": "object", "minProperties": 2}, '{"a":1,"a":2}'),
    ({"type": "object", "minProperties": 2}, '{"a\\n":1,"a\\u000A":2}'),
    ({"type": "object", "minProperties": 2}, '{"a/":1,"a\\/":2}'),
    ({"type": "object", "minProperties": 3, "properties": {"b": {}}}, '{"b":0,"a":1,"a":2}'),
    ({"type": "object", "not": {"additionalProperties": {"type": "string"}}},
     '{"a":1,"a":"s"}'),
    ({"type": "object", "not": {"properties": {"a": {"type": "string"}},
                                "additionalProperties": False}}, '{"a":"s","a":1,"a":"t"}'),
    ({"type": "object", "patternProperties": {"^[xy]$": {}}, "additionalProperties": False,
      "minProperties": 2}, '{"x":1,"x":2}'),
]


@pytest.mark.parametrize("order", ["schema", "any"])
@pytest.mark.parametrize("schema, text", _REPEATS)
def test_a_repeated_key_is_refused_where_it_would_count_once(schema, text, order):
    validator = jsonschema.Draft202012Validator(schema)
    assert not validator.is_valid(json.loads(text))  # (the oracle reads the last value)
    m = JsonSchema(schema, property_order=order)
    assert not m.matches(text)
    # the same keys once each (the last value of each) are accepted where jsonschema agrees
    once = json.loads(text)
    if validator.is_valid(once):
        assert m.matches(compact(once)) or order == "schema"


def test_a_repeated_key_masks_equal_brute_force():
    """Keys kept in the object's register: the mask refuses the closing quote of a key seen
    before (in any spelling), and nothing else; brute force at every step."""
    from test_engine import brute_force, check_along, mask_ids

    vocab = shared_vocab("llama3")
    for memo in (None, 0):
        engine = StructuringEngine(vocab, **({} if memo is None else {"mask_memo": memo}))
        engine.configure(JsonSchema({"type": "object", "minProperties": 2,
                                     "properties": {"id": {"type": "integer"}}}))
        check_along(engine, vocab.encode(
            '{"id":1,"ab":[{"ab":1}],"abc":2,"ab\\/c":3,"ab\\u000a":4}'))
        assert engine.is_accepting()
        engine.reset()
        assert engine.consume_tokens(vocab.encode('{"ab":1,"ab')) == len(vocab.encode(
            '{"ab":1,"ab'))
        allowed = mask_ids(engine)
        assert allowed == brute_force(engine)
        assert vocab.lookup(b'"') not in allowed and vocab.lookup(b'":') not in allowed
        assert vocab.lookup(b"c") in allowed


@pytest.mark.parametrize("order", ["schema", "any"])
def test_kept_keys_generations_validate(order):
    assert_generations_validate({"type": "object", "minProperties": 3, "maxProperties": 4,
                                 "properties": {"a": {"type": "string"}},
                                 "propertyNames": {"pattern": "^[b-k]x*$"},
                                 "additionalProperties": {"type": "integer"}}, order, seed=5)


def test_keys_of_a_few_names_get_key_bits():
    """Keys not listed whose names are few (a pattern of a few names) are told apart by key
    bits, like listed ones, so none repeats and none is a dead end: with minProperties above
    what they can give, nothing is valid."""
    schema = {"type": "object", "patternProperties": {"^[xy]$": {}}, "properties": {"a": {}},
              "additionalProperties": False, "minProperties": 2}
    for order in ("schema", "any"):
        m = JsonSchema(schema, property_order=order)
        assert m.matches('{"a":1,"x":2}') and m.matches('{"y":1,"x":2}')
        assert not m.matches('{"y":1,"y":2}') and not m.matches('{"x":1}')
        assert_generations_validate(schema, order, seed=3)
    with pytest.raises(SchemaError, match="nothing is valid"):
        JsonSchema({**schema, "minProperties": 4})
    # past bit 31 (a shift of C ints overflowed there)
    wide = {**schema, "properties": {f"p{i}": {} for i in range(40)}}
    m = JsonSchema(wide, property_order="any")
    assert m.matches('{"p39":1,"x":2,"y":3}') and not m.matches('{"x":1,"y":2,"x":3}')


def test_schema_order_takes_a_key_only_while_enough_may_follow():
    """In schema order, listed keys come in their order: with minProperties, a key after
    which too few may follow is refused (it was a dead end)."""
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
              "additionalProperties": False, "minProperties": 2}
    m = JsonSchema(schema)
    assert not m.matches('{"c":1', partial=True)
    assert m.matches('{"b":1', partial=True) and m.matches('{"a":1,"c":2}')
    assert_generations_validate(schema, "schema", seed=4)


def test_schema_order_takes_a_key_only_after_what_it_depends_on():
    """In schema order, a key whose dependentRequired names (and theirs) are listed before
    it is refused until they are present (it was taken, and nothing could close the
    object); a required key's dependencies are required. With minProperties beside them and
    no other keys, which keys may follow depends on those taken: strict mode refuses."""
    two = {"type": "object", "properties": {"a": {}, "c": {}}, "additionalProperties": False,
           "dependentRequired": {"c": ["a"]}}
    m = JsonSchema(two)
    assert not m.matches('{"c"', partial=True) and m.matches('{"a":1,"c":2}')
    assert m.matches("{}") and m.matches('{"a":1}')
    chain = {"type": "object", "properties": {"x": {}, "a": {}, "c": {}},
             "additionalProperties": False, "dependentRequired": {"a": ["c"], "c": ["x"]}}
    m = JsonSchema(chain)
    assert not m.matches('{"a"', partial=True) and m.matches('{"x":1,"a":1,"c":1}')
    required = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                "additionalProperties": False, "required": ["c"],
                "dependentRequired": {"c": ["a"]}}
    m = JsonSchema(required)
    assert not m.matches('{"b":1', partial=True) and m.matches('{"a":1,"c":1}')
    # a name a present key needs is not passed over (found by fuzzing)
    passing = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
               "additionalProperties": False, "dependentRequired": {"a": ["b"]}}
    m = JsonSchema(passing)
    assert not m.matches('{"a":1,"c":2', partial=True) and m.matches('{"a":1,"b":2,"c":3}')
    assert m.matches('{"c":1}')
    for schema in (two, chain, required, passing):
        assert_generations_validate(schema, "schema", seed=6)
    counted = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
               "additionalProperties": False, "minProperties": 2,
               "dependentRequired": {"c": ["a"]}}
    with pytest.raises(SchemaError, match="dead end"):
        JsonSchema(counted)
    m = JsonSchema(counted, property_order="any")
    assert m.matches('{"c":1,"a":1}') and not m.matches('{"b":1,"c":1}')


@pytest.mark.parametrize("order", ["schema", "any"])
def test_max_properties_keeps_room_for_what_a_key_needs(order):
    """Under maxProperties, a key taken with dependentRequired names still to come must
    leave room for them, also when other keys come meanwhile: one case per set of keys with
    dependencies present (it was a dead end)."""
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "d": {"type": "integer"}},
              "additionalProperties": False, "dependentRequired": {"a": ["d"]},
              "maxProperties": 2}
    validator = jsonschema.Draft202012Validator(schema)
    m = JsonSchema(schema, property_order=order)
    assert not m.matches('{"a":1,"b":1', partial=True)
    for value in [{"a": 1, "d": 2}, {"b": 1}, {"b": 1, "d": 2}, {"a": 1}, {"a": 1, "b": 1}]:
        if validator.is_valid(value) or order == "any":
            assert m.matches(compact(value)) == validator.is_valid(value), value
    assert not JsonSchema({**schema, "maxProperties": 1}, property_order=order).matches(
        '{"a":1', partial=True)
    assert_generations_validate(schema, order, seed=7)


def test_bounded_keys_that_must_not_repeat_are_refused_or_approximated():
    """Keys of endless names but only a bounded length, which must not repeat: a prefix
    whose every ending was seen would be a dead end, so strict mode refuses the schema, and
    strict=False takes repeats (with a warning)."""
    schema = {"type": "object", "minProperties": 2, "propertyNames": {"maxLength": 2}}
    with pytest.raises(SchemaError, match="dead end"):
        JsonSchema(schema)
    with pytest.warns(UserWarning, match="minProperties"):
        m = JsonSchema(schema, strict=False)
    assert m.matches('{"a":1,"bc":2}') and m.matches('{"a":1,"a":2}')


def test_some_property_is_not_read_from_a_users_schema():
    with pytest.warns(UserWarning, match="pse:someProperty"):
        m = JsonSchema({"type": "object", "pse:someProperty": [
            {"names": True, "value": True, "else": False}]})
    assert m.matches("{}")


def test_not_leaves_out_literals_in_every_spelling():
    m = JsonSchema({"type": "string", "not": {"enum": ["a", 'q"']}})
    assert m.matches('"b"') and not m.matches('"a"')
    for spelled in ('"q\\""', '"q\\u0022"', '"\\u0061"'):  # refused in every spelling
        assert not m.matches(spelled)
    with pytest.raises(SchemaError, match="type number"):
        JsonSchema({"not": {"const": 3}})  # 3, 3.0, 30e-1 ...: no automaton spells them all


def test_reference_to_a_false_schema_allows_nothing_there():
    schema = {"$defs": {"no": False}, "properties": {"x": {"$ref": "#/$defs/no"}}}
    m = JsonSchema(schema)
    assert m.matches('{"y":1}') and not m.matches('{"x":1}')
    with pytest.raises(SchemaError, match="false"):
        JsonSchema({"$ref": "#/$defs/no", "$defs": {"no": False}})


# --- random generations validate (jsonschema is the oracle) ----------------------------------

_LENGTHS: dict = {}


def generate(engine: StructuringEngine, rng: random.Random, max_tokens: int = 150):
    """Sample tokens from the mask (mostly short ones, so that structures close) until EOS;
    the text, or None when it did not finish."""
    vocab = engine.vocab
    if id(vocab) not in _LENGTHS:
        _LENGTHS[id(vocab)] = np.array([len(vocab.token_bytes(i)) if vocab.has_token(i) else 0
                                        for i in range(vocab.size)])
    lengths = _LENGTHS[id(vocab)]
    eos = vocab.eos_token_ids[0]
    tokens = []
    for _ in range(max_tokens):
        allowed = engine.allowed_token_ids()
        assert len(allowed), "empty mask"
        choices = allowed[allowed != eos]
        if eos in allowed and (not len(choices) or rng.random() < 0.5):
            return vocab.decode_bytes(tokens)
        short = choices[lengths[choices] <= 2]
        pool = short if len(short) and rng.random() < 0.8 else choices
        tid = int(pool[rng.randrange(len(pool))])
        assert engine.consume_token(tid)
        tokens.append(tid)
    return None


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_generated_values_validate(schema):
    assert_generations_validate(schema, "schema", seed=0)


def assert_generations_validate(schema: dict, property_order: str, seed: int) -> None:
    """15 random generations; at least 3 finish, and every one that does validates."""
    vocab = shared_vocab("llama3")
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(seed)
    engine = StructuringEngine(vocab)
    engine.configure(JsonSchema(schema, property_order=property_order))
    finished = 0
    for _ in range(15):
        engine.reset()
        text = generate(engine, rng)
        if text is None:
            continue
        finished += 1
        validator.validate(json.loads(text))
    assert finished >= 3


decimals = st.decimals(min_value=-500, max_value=500, allow_nan=False, places=3)
bounds = st.one_of(st.none(), st.tuples(decimals, st.booleans()))
number_texts = st.one_of(
    st.decimals(min_value=-600, max_value=600, allow_nan=False, places=4).map(
        lambda d: format(d, "f")),
    st.integers(-600, 600).map(str),
)


@given(bounds, bounds, st.lists(number_texts, min_size=1, max_size=30))
def test_number_ranges_against_decimal(lo, hi, texts):
    dfa = number_range_dfa(lo, hi)
    for text in texts:
        if text.startswith("-0") and len(text) > 2 and text[2] != ".":
            continue
        v = Decimal(text)
        inside = (lo is None or (v > lo[0] if lo[1] else v >= lo[0])) and \
            (hi is None or (v < hi[0] if hi[1] else v <= hi[0]))
        assert dfa.matches(text.encode()) == inside, (lo, hi, text)


def test_number_bounds_in_a_schema():
    m = JsonSchema({"type": "number", "minimum": 0, "exclusiveMaximum": 1.5})
    for text, ok in [("0", True), ("-0", True), ("1.49", True), ("1.5", False), ("-0.01", False),
                     ("1", True), ("0.0", True)]:
        assert m.matches(text) == ok, text
    with pytest.raises(SchemaError):
        JsonSchema({"type": "number", "minimum": 2, "maximum": 1})


def test_item_counts_past_the_unrolling_limit():
    """Large bounds with prefixItems are unrolled, so they meet the limit (items of one kind
    are counted instead, see below)."""
    prefixed = {"type": "array", "prefixItems": [{"type": "string"}],
                "items": {"type": "integer"}, "maxItems": 5000}
    with pytest.raises(SchemaError, match="MAX_UNROLLED_ITEMS"):
        JsonSchema(prefixed)
    with pytest.warns(UserWarning, match="maxItems"):
        m = JsonSchema(prefixed, strict=False)
    assert m.matches('["a",2,3]')
    assert JsonSchema({"type": "array", "maxItems": 5000}).matches("[1,[],{}]")


# --- property order "any" and the keywords the register serves -------------------------------

ANY_ORDER_SCHEMAS = SCHEMAS + [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                      "c": {"type": "null"}},
     "required": ["a", "b"], "additionalProperties": False},
    # (names of a bounded length that must not repeat are refused in strict mode: see
    # test_bounded_keys_that_must_not_repeat_are_refused_or_approximated)
    {"type": "object", "minProperties": 2, "maxProperties": 3,
     "propertyNames": {"pattern": "^[a-r]$"}, "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
     "dependentRequired": {"a": ["b"], "c": ["a", "b"]}},
    {"type": "object", "propertyNames": {"pattern": "^[a-c]+$", "maxLength": 2}},
    {"type": "object", "properties": {"kind": {}},
     "dependentSchemas": {"kind": {"properties": {"x": {"type": "integer"}}, "required": ["x"]}}},
    {"type": "array", "contains": {"type": "string"}, "minContains": 2,
     "items": {"type": ["integer", "string"], "maxLength": 3}},
    {"type": "array", "items": {"enum": [1, "a", None]}, "uniqueItems": True},
    {"const": {"x": [1, {"y": 2}], "z": "w"}},
    {"allOf": [{"properties": {"foo": {}}}], "additionalProperties": {"type": "boolean"}},
    {"not": {"required": ["a", "b"]}},
    {"type": ["array", "integer"], "not": {"minItems": 2}},
    {"not": {"anyOf": [{"minimum": 3}, {"type": "string"}]}},
    {"not": {"allOf": [{"maximum": 3}, {"minimum": 1}]}},
]

ANY_ORDER_INSTANCES = INSTANCES + [
    {"b": "s", "a": 1}, {"c": None, "b": "s", "a": 1}, {"a": 1}, {"a": 1, "b": "s", "d": 0},
    {}, {"p": 1}, {"p": 1, "q": 2}, {"p": 1, "q": 2, "r": 3, "s": 4}, {"a": 1, "b": 2},
    {"c": 1, "b": 2}, {"c": 1, "b": 2, "a": 3}, {"ab": 1}, {"abc": 1}, {"d": 1},
    {"kind": 1}, {"kind": 1, "x": 2}, {"x": "s"}, ["a", 1, "b"], ["a"], [1, 2], ["a", "b"],
    [1, "a", None], [1, 1], [None, "a"], {"z": "w", "x": [1, {"y": 2}]}, {"x": [1, {"y": 2}]},
    {"z": "w", "x": [1.0, {"y": 2}]}, {"foo": 1, "bar": True}, {"foo": True}, {"bar": 1},
]


@pytest.mark.parametrize("schema", ANY_ORDER_SCHEMAS, ids=range(len(ANY_ORDER_SCHEMAS)))
def test_any_order_agrees_with_jsonschema(schema):
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema,
                                                format_checker=jsonschema.FormatChecker())
    for value in ANY_ORDER_INSTANCES:
        expected = validator.is_valid(value)
        assert machine.matches(compact(value)) == expected, (schema, value)


_LISTED = ["a", "b", "c", "d"]
_VALUES = st.sampled_from([{"type": "integer"}, {"type": "string"}, {}, {"const": 1}])
_object_schemas = st.fixed_dictionaries(
    {"properties": st.dictionaries(st.sampled_from(_LISTED), _VALUES, max_size=4).map(
        lambda props: {k: props[k] for k in _LISTED if k in props}),  # in a fixed order
     "required": st.lists(st.sampled_from(_LISTED), max_size=3, unique=True)},
    optional={"additionalProperties": st.one_of(st.booleans(), _VALUES),
              "patternProperties": st.just({"^x": {"type": "integer"}}),
              "minProperties": st.integers(0, 3), "maxProperties": st.integers(0, 4)},
).map(lambda s: {"type": "object", **s})


@settings(max_examples=150, deadline=None)
@given(_object_schemas, st.lists(st.tuples(st.sampled_from([*_LISTED, "x1", "y", "ab"]),
                                           st.sampled_from([1, "s", None])),
                                 max_size=5, unique_by=lambda kv: kv[0]))
def test_schema_order_agrees_with_jsonschema(schema, members):
    """Objects whose keys come in schema order (listed properties as listed, then required
    ones not listed, then the others in any order): pse accepts what jsonschema accepts."""
    listed = list(dict.fromkeys([*schema["properties"], *schema["required"]]))
    members.sort(key=lambda kv: listed.index(kv[0]) if kv[0] in listed else len(listed))
    value = dict(members)
    try:
        machine = JsonSchema(schema)
    except SchemaError:  # unsatisfiable: jsonschema must agree that nothing is valid here
        assert not jsonschema.Draft202012Validator(schema).is_valid(value)
        return
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert machine.matches(compact(value)) == expected, (schema, value)


@settings(max_examples=60, deadline=None)
@given(st.permutations(["a", "b", "c", "d", "e"]), st.sets(st.sampled_from("abcdef")))
def test_any_order_takes_every_order_each_key_once(order, present):
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcde"},
              "required": ["a", "c"], "additionalProperties": False}
    machine = JsonSchema(schema, property_order="any")
    keys = [k for k in [*order, "f"] if k in present]
    text = "{" + ",".join(f'"{k}":1' for k in keys) + "}"
    assert machine.matches(text) == ({"a", "c"} <= present and "f" not in present)
    if keys:  # a repeated key is refused
        assert not machine.matches(text[:-1] + f',"{keys[0]}":2}}')


@pytest.mark.parametrize("schema", ANY_ORDER_SCHEMAS[-13:-4], ids=range(9))
def test_any_order_generated_values_validate(schema):
    assert_generations_validate(schema, "any", seed=1)


def test_any_order_masks_equal_brute_force():
    from test_engine import check_along

    vocab = shared_vocab("llama3")
    schema = {"type": "object", "properties": {"name": {"type": "string"},
                                               "age": {"type": "integer"}, "ok": {}},
              "required": ["name", "age"], "maxProperties": 3}
    engine = StructuringEngine(vocab, mask_memo=0)
    engine.configure(JsonSchema(schema, property_order="any"))
    check_along(engine, vocab.encode('{"age":3,"ok":[],"name":"x"}'))


def test_property_order_is_checked():
    with pytest.raises(SchemaError, match="property_order"):
        JsonSchema({}, property_order="sorted")


# --- big schemas compile (before: a DAG schema expanded exponentially, enums hit the DFA
# limit, optional properties were quadratic in places) ------------------------------------------

def test_schema_shared_in_many_places_compiles_once():
    schema: dict = {"type": "integer"}
    for _ in range(40):
        schema = {"anyOf": [schema, {"type": "array", "items": schema}]}
    machine = JsonSchema(schema)
    machine.compile()  # (deep arrays would be ambiguous at 40 levels: kept shallow here)
    assert machine.matches("[1,2]") and machine.matches("3") and not machine.matches('["x"]')


def test_shared_any_value_rules_give_the_same_masks(monkeypatch):
    """The "any value" machine's rules are compiled once and copied into each schema that
    uses it: masks along a text equal those of a compile that builds them in place."""
    from pse import compiler

    vocab = shared_vocab("llama3")
    schema = {"type": "object", "properties": {"a": {}, "b": {"type": "array"}},
              "required": ["a"]}
    text = '{"a":[1,{"k":"v"},null],"b":[{},[true]],"z":{"y":-0.5e3}}'
    masks = []
    for shared in (True, False):
        if not shared:
            monkeypatch.setattr(compiler, "_SHARED", {})
        engine = StructuringEngine(vocab, mask_memo=0)
        engine.configure(JsonSchema(schema))
        if shared:
            assert compiler._FRAGMENTS  # the compiled-once rules were copied
        along = []
        for tid in vocab.encode(text):
            along.append(engine.compute_mask())
            assert engine.consume_token(tid)
        along.append(engine.compute_mask())
        masks.append(along)
    assert len(masks[0]) == len(masks[1])
    assert all(np.array_equal(x, y) for x, y in zip(*masks))


def test_large_enums_are_tries():
    values = [f"value_{i}" for i in range(10_000)] + list(range(10_000)) + [2.5, None]
    machine = JsonSchema({"enum": values})
    for text, ok in [('"value_9999"', True), ('"value_"', False), ("77", True),
                     ("77.00", True), ("-0", True), ("2.50", True), ("2.05", False),
                     ("10000", False), ("null", True)]:
        assert machine.matches(text) == ok, text


NUMBER_SPELLINGS = ["1", "1.0", "1.00", "1.5", "1.50", "1.505", "1.5050", "1.05", "1.050",
                    "10", "10.0", "0", "-0", "0.0", "-0.0", "2", "2.0", "15", "15.00", "150"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([1, 1.0, 1.5, 1.505, 1.05, 10, 0, -0.0, 2.0, 15, 150]),
                min_size=1, max_size=5),
       st.sampled_from([None, "integer", "number", ["integer", "string"]]),
       st.sampled_from([None, {"minimum": 1}, {"not": {"type": "integer"}}]),
       st.sampled_from(["http://json-schema.org/draft-04/schema#",
                        "https://json-schema.org/draft/2020-12/schema"]))
def test_enum_numbers_in_every_spelling(values, type_, more, dialect):
    """A number in an enum is its value in any decimal spelling, however the listed values
    share prefixes (1 beside 1.5, 1.5 beside 1.505); in draft 4, 1.0 is not an integer."""
    schema = {"$schema": dialect, "enum": values, **(more or {})}
    if type_ is not None:
        schema["type"] = type_
    validator = jsonschema.validators.validator_for(schema)(schema)
    try:
        machine = JsonSchema(schema)
    except SchemaError:  # unsatisfiable: no spelling may be valid
        assert not any(validator.is_valid(json.loads(t)) for t in NUMBER_SPELLINGS), schema
        return
    for text in NUMBER_SPELLINGS:
        assert machine.matches(text) == validator.is_valid(json.loads(text)), (schema, text)


@pytest.mark.parametrize("order", ["schema", "any"])
def test_hundreds_of_properties(order):
    props = {f"p{i}": {"type": "integer"} for i in range(300)}
    schema = {"type": "object", "properties": props, "required": ["p7", "p250"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # any order: more properties than key bits
        machine = JsonSchema(schema, property_order=order, strict=False)
    assert machine.matches('{"p7":1,"p250":2}')
    assert not machine.matches('{"p7":1}')
    assert machine.matches('{"p7":1,"p12":0,"p250":2}')
    assert machine.matches('{"p250":2,"p7":1}') == (order == "any")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["1", "3", "7", "0.5", "0.01", "1.5", "0.3", "12.25", "100"]),
       st.integers(-10**6, 10**6), st.integers(0, 5), st.integers(0, 3), st.booleans())
def test_multiple_of_against_decimal(m, n, shift, zeros, snap):
    from pse.json_schema import multiple_of_dfa

    x = Decimal(n).scaleb(-shift)
    if snap:
        x = (x // Decimal(m)) * Decimal(m)
    text = format(x, "f")
    if zeros:
        text += ("" if "." in text else ".") + "0" * zeros
    expected = Decimal(text) % Decimal(m) == 0
    assert multiple_of_dfa(Decimal(m)).matches(text.encode()) == expected


def test_multiple_of_in_a_schema():
    machine = JsonSchema({"type": "integer", "multipleOf": 3, "minimum": 0, "maximum": 20})
    assert [n for n in range(-5, 30) if machine.matches(str(n))] == list(range(0, 21, 3))
    machine = JsonSchema({"type": "number", "multipleOf": 0.25, "maximum": 1})
    assert [machine.matches(t) for t in ["0.75", "1.25", "0.3", "-7.75", "1.0"]] == \
        [True, False, False, True, True]


_NAME_CHARS = st.sampled_from(["a", "b", "/", '"', "\\", "\n", "\x01", "\u00e9", "\U0001f600"])


@given(st.lists(st.text(_NAME_CHARS, max_size=4), min_size=1, max_size=4),
       st.lists(st.text(_NAME_CHARS, max_size=4), max_size=4))
def test_names_dfa_spells_names_as_json(names, others):
    """The key names automaton (a trie over spellings) is the regex-built one: the same number
    of states (both minimal), the same verdict on every JSON spelling of the names and of
    other strings (escaped slash, \\u escapes, raw text)."""
    import re

    direct = json_names_dfa(names)
    via_regex = compile_regex("|".join(re.escape(n) for n in names), 0, search=False,
                              char_class=json_char_class, ecma=True)
    assert direct.n_states == via_regex.n_states
    for text in names + others:
        for spelled in {json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1],
                        json.dumps(text, ensure_ascii=False)[1:-1].replace("/", "\\/")}:
            data = spelled.encode()
            assert direct.matches(data) == via_regex.matches(data), (names, spelled)
        if text in names:  # the canonical spelling at least
            assert direct.matches(json.dumps(text, ensure_ascii=False)[1:-1].encode())


@pytest.mark.parametrize("order", ["schema", "any"])
@pytest.mark.parametrize("whitespace", [None, 1])
def test_listed_keys_in_every_json_spelling(order, whitespace):
    """A listed name with a slash or a control character has several JSON spellings ("\\/"
    or "/"; "\\n" or "\\u000a"): each is that property (json.loads + jsonschema judge)."""
    schema = {"properties": {"a": {}, "x/y": {"type": "integer"}, "t\tab": {"type": "string"}},
              "additionalProperties": False}
    machine = JsonSchema(schema, property_order=order, whitespace=whitespace)
    validator = jsonschema.Draft202012Validator(schema)
    texts = ['{"x/y":1}', '{"x\\/y":1}', '{"a":0,"x\\/y":1}', '{"x\\/y":"s"}',
             '{"t\\tab":"s"}', '{"t\\u0009ab":"s"}', '{"t\\u0009ab":1}', '{"x\\/z":1}',
             '{"a":0,"x/y":1,"t\\u0009ab":"s"}', '{"a":0,"x\\/y":1,"x/y":2}']
    for text in texts:
        value = json.loads(text)
        expected = validator.is_valid(value) and len(value) == text.count(":")
        assert machine.matches(text) == expected, text


@pytest.mark.parametrize("names", [
    {"oneOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
    {"oneOf": [{"pattern": "^a"}, {"pattern": "b$"}, {"maxLength": 2}], "minLength": 1},
    {"anyOf": [{"maxLength": 1}, {"pattern": "^z"}]},
    {"allOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
    {"$ref": "#/$defs/lower"},
    {"allOf": [{"$ref": "#/$defs/lower"}, {"maxLength": 2}]},
    {"enum": ["a", "b"], "const": "b"},  # both hold
    {"allOf": [{"maxLength": 1}, {"minLength": 2}]},  # no length fits: no name
    {"anyOf": [{"type": "integer"}, {"const": "a"}]},  # no name is an integer
    False,
])
def test_property_names_combined(names):
    schema = {"$defs": {"lower": {"pattern": "^[a-z]+$"}}, "propertyNames": names}
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for key in ["", "a", "ab", "ax", "xb", "b", "z", "zz", "abc", "abcb", "Ab", "a-b"]:
        assert machine.matches(compact({key: 1})) == validator.is_valid({key: 1}), key


def test_property_names_enum_with_characters_json_escapes():
    """propertyNames enum members holding a quote, a backslash or a slash."""
    schema = {"type": "object", "propertyNames": {"enum": ['a"b', "c/d", "e\\f"]}}
    m = JsonSchema(schema, property_order="any")
    for value, ok in [({'a"b': 1}, True), ({"c/d": 1}, True), ({"e\\f": 1}, True),
                      ({"ab": 1}, False), ({'a"b': 1, "x": 2}, False)]:
        assert m.matches(json.dumps(value, separators=(",", ":"))) == ok, value
    assert m.matches('{"c\\/d":1}')


@given(st.lists(st.text(_NAME_CHARS, max_size=4), min_size=1, max_size=4),
       st.lists(st.text(_NAME_CHARS, max_size=5), max_size=6),
       st.sampled_from(["(?s).*", "a", "^[ab/]+$", '"|\\\\', "^.{2,3}$"]))
def test_keys_without_names_is_the_difference(names, others, pattern):
    """Keys a pattern allows minus the listed names, built over the spelling trie, agree with
    the generic product (difference with the names automaton) on every spelling, and have
    as few states as its minimized form."""
    from pse import automaton

    keys = compile_regex(pattern, 0, search=True, char_class=json_char_class, ecma=True)
    direct = without_names(keys, names)
    generic = automaton.difference(keys, json_names_dfa(names))
    assert direct.n_states == automaton.minimize(generic).n_states  # minimal
    for text in names + others:
        for spelled in {json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1],
                        json.dumps(text, ensure_ascii=False)[1:-1].replace("/", "\\/")}:
            data = spelled.encode()
            assert direct.matches(data) == generic.matches(data), (names, spelled)
        if text in names:
            assert not direct.matches(json.dumps(text, ensure_ascii=False)[1:-1].encode())


@pytest.mark.parametrize("lo, hi", [(0, 1), (0, 3), (1, 1), (2, 4), (3, None), (0, None),
                                    (1, None), (2, 2)])
@pytest.mark.parametrize("whitespace", [None, 1])
def test_item_counts_in_the_register_agree_with_jsonschema(monkeypatch, lo, hi, whitespace):
    """Item bounds too large to unroll are counted in the register (commas, each guarded by
    the maximum; the closing bracket by the minimum). With the unroll limit at 0 every bound
    takes that path: arrays of 0 to 6 items, nested in arrays and beside any-order objects."""
    import pse.json_schema.arrays as arrays

    monkeypatch.setattr(arrays, "MAX_UNROLLED_ITEMS", 0)
    inner = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    schema = {"type": "array", "items": {"type": "array", "items": inner, "minItems": lo}}
    if hi is not None:
        schema["items"]["maxItems"] = hi
    sep = (", ", ": ") if whitespace else (",", ":")
    machine = JsonSchema(schema, property_order="any", whitespace=whitespace)
    for n in range(7):
        for outer in (1, 2):
            value = [[{"a": k} for k in range(n)]] * outer
            ok = jsonschema.Draft202012Validator(schema).is_valid(value)
            assert machine.matches(json.dumps(value, separators=sep)) == ok, (n, outer)
    assert not machine.matches("[[{}]]")


def _token_gaps(text: str) -> list[int]:
    """The places between two tokens of compact JSON `text` (outside strings)."""
    gaps, in_string, escaped = [], False, False
    for i, ch in enumerate(text):
        if in_string:
            escaped = not escaped and ch == "\\"
            in_string = escaped or ch != '"'
            continue
        if i and (text[i - 1] in "[{,:" or ch in "]},:"):
            gaps.append(i)
        in_string = ch == '"'
    return gaps


@pytest.mark.parametrize("schema, values", [
    ({"type": "array", "items": {"type": "integer"}}, [[], [1], [1, 2]]),
    ({"type": "array", "items": {"type": "integer"}, "maxItems": 300}, [[], [1], [1, 2]]),
    ({"type": "array", "items": {"type": "number"}, "uniqueItems": True}, [[], [1], [1, 1]]),
    ({"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": True}, [[], [1], [2, 1]]),
    ({"type": "array", "contains": {"const": 1}, "minContains": 2}, [[1], [1, 1], [2, 1]]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, [{}, {"a": 1}, {"b": 1}]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
     [{}, {"a": 1}]),
    ({"type": "object", "maxProperties": 1}, [{}, {"a": 1}]),
])
@pytest.mark.parametrize("whitespace", [1, 2])
def test_whitespace_bound_holds_in_empty_and_full_brackets(schema, values, whitespace):
    """whitespace=n allows at most n blanks between two tokens, "[" and "]" of an empty
    array too (blanks after the opening and before the close come once there): every
    placement of 0 to n + 1 blanks between the tokens of a few values, against jsonschema and
    the longest run of blanks."""
    from helpers import longest_blank_run

    machine = JsonSchema(schema, whitespace=whitespace)
    valid = jsonschema.Draft202012Validator(schema).is_valid
    checked = 0
    for value in values:
        text = json.dumps(value, separators=(",", ":"))
        gaps = _token_gaps(text)
        for runs in itertools.product(range(whitespace + 2), repeat=len(gaps)):
            spaced = text
            for at, k in sorted(zip(gaps, runs), reverse=True):
                spaced = spaced[:at] + " " * k + spaced[at:]
            expected = valid(value) and longest_blank_run(spaced) <= whitespace
            assert machine.matches(spaced) == expected, spaced
            checked += expected
    assert checked > len(values)


def test_large_item_bounds_compile_without_unrolling():
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 300,
              "maxItems": 100_000}
    m = JsonSchema(schema)
    assert m.compile().n_nodes < 50
    for n in (0, 299, 300, 1000):
        text = json.dumps(list(range(n)), separators=(",", ":"))
        assert m.matches(text) == (n >= 300)


def test_flexible_whitespace():
    """whitespace="flexible" (the issue's name for bounded whitespace) is 20 blanks between
    two tokens, in JsonSchema and Json; other strings are refused by name."""
    from pse import Json
    from pse.json_value import FLEXIBLE_WHITESPACE

    text = json.dumps({"a": [1, {"b": [[[[[["x"]]]]]]}]}, indent=2)  # nine levels deep
    for m in (JsonSchema({}, whitespace="flexible"), Json("flexible")):
        assert m.matches(text)
        assert m.matches("[" + " " * FLEXIBLE_WHITESPACE + "]")
        assert not m.matches("[" + " " * (FLEXIBLE_WHITESPACE + 1) + "]")
    with pytest.raises(SchemaError, match='"flexible"'):
        JsonSchema({}, whitespace="loose")
