"""JSON Schema allOf, anyOf, oneOf and if/then/else: unions, merges, conditions."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from json_schema_helpers import compact
import pse.json_schema
from pse import JsonSchema, SchemaError


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
