"""JSON Schema not: opposites of literals, arrays and object shapes (SOME_PROPERTY)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from conftest import shared_vocab
from json_schema_helpers import assert_generations_validate, compact
from pse import JsonSchema, SchemaError, StructuringEngine


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
