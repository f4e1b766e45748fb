"""JSON Schema allOf, anyOf, oneOf and if/then/else: unions, merges, conditions."""

from __future__ import annotations

import json
import warnings

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
    {"propertyNames": {"maxLength": 1}}, {"type": "object", "maxProperties": 1},
    {"required": ["k"], "properties": {"k": {"const": "p"}}},
    {"required": ["k"], "properties": {"k": {"const": "q"}}, "maxLength": 1},
    {"anyOf": [{"const": "x"}, {"const": False}, {"enum": ["xy", None]}]}])


_ONE_OF_VALUES = [None, True, 0, 1.5, "x", "xy", "", [], ["x"], ["xy", "z"], [1], {}, {"a": "x"},
                  {"a": "y"}, {"b": 1}, {"a": "x", "b": 1}, {"a": "y", "b": 2}, {"c": 1},
                  {"a": 1}, {"b": "s"}, {"a": "x", "c": "s"}, {"ab": 1}, {"bb": "s"},
                  {"a": "x", "bc": 1}, {"ab": "x", "b": 1, "c": 2}, {"bc": 1, "c": "s"},
                  {"k": "p"}, {"k": "q"}, {"k": "p", "a": "x"}, {"k": "q", "b": 1}, {"k": 1}]


@settings(max_examples=400)
@given(branches=st.lists(_ONE_OF_BRANCHES, min_size=2, max_size=3),
       rest=st.sampled_from([{}, {"type": "object"}, {"minProperties": 1}, {"maxProperties": 2},
                             {"properties": {"a": {}}, "additionalProperties": False},
                             {"type": ["object", "string"]}]))
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
    {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "null"}]},
    {"anyOf": [{"type": "object", "required": [key], "additionalProperties": False,
                "properties": {key: {"type": "integer"}, "v": {"type": "integer"}}}
               for key in ("a", "b")]}])


_REF_VALUES = [None, 1, 7, 2.5, "a", "ab", "AB", "1.2.3.4", "1.2.3", "2024-02-29", "2023-02-29",
               [], {"v": 1}, {"v": 1, "kids": []}, {"v": 1, "kids": [{"v": 2}]},
               {"v": 1, "kids": [{"v": 2, "kids": [{"w": 3}]}]}, {"v": "x"}, {"v": "X"},
               {"k": "s", "v": "s"}, {"k": "i", "v": 3}, {"k": "s", "v": 3}, {"k": 3}, {"a": 1},
               {"a": 1, "b": 2}, {"v": 1, "a": 1}, {"b": 1}, {"b": "x"}, {"b": 1, "v": "x"}]


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


_DISJOINT_POOL = [
    {"type": "string"}, {"type": ["string", "null"]}, {"enum": ["a", 1]}, {"const": "b"},
    {"type": "object", "required": ["k"], "properties": {"k": {"const": "a"}}},
    {"type": "object", "required": ["k"], "properties": {"k": {"enum": ["b", 1]}}},
    {"type": "object", "properties": {"k": {"allOf": [{"type": "string"}, {"const": "b"}]}}},
    {"type": "object", "additionalProperties": False, "properties": {"m": {}}},
    {"type": "object", "required": ["m"]}, {"properties": {"k": False}},
    {"pattern": "^b"}, {"enum": ["ab", "ba", 2.0, True]}, {"type": "integer"},
    {"not": {"enum": ["a", 1]}}, {"type": "string", "not": {"pattern": "^b"}},
    {"type": "string", "minLength": 2}, {"type": "string", "maxLength": 1},
    {"type": "array", "maxItems": 0}, {"type": ["array", "string"], "minItems": 1},
    {"type": "object", "properties": {"k": {"allOf": [{"enum": ["ab", "ba"]},
                                                      {"pattern": "a$"}]}}},
    {"type": "object", "required": ["k"], "properties": {"k": {"not": {"enum": ["a", "b"]}}}},
    {"not": {"const": "b", "description": "d"}}, {"not": {"const": 1, "enum": [1, 2.0]}},
    {"not": {"enum": ["a", 1], "type": "string"}}]
_DISJOINT_VALUES = [None, "a", "b", 1, 1.0, 2, 2.0, True, "ab", "ba", {}, {"k": "a"}, {"k": "b"}, {"k": 1},
                    {"m": 1}, {"k": "a", "m": 0}, {"k": "b", "m": 0}, {"m": 1, "n": 2},
                    {"k": "ab"}, {"k": "ba"}, [], [1], ["a", "b"]]


@settings(max_examples=300)
@given(a=st.lists(st.sampled_from(_DISJOINT_POOL), min_size=1, max_size=3),
       b=st.lists(st.sampled_from(_DISJOINT_POOL), min_size=1, max_size=3))
def test_disjoint_branches_share_no_value(a, b):
    # a proof of disjointness (conjunctions as allOf, as merges leave them) holds: no
    # value matches both
    from pse.json_schema.common import _pair_disjoint
    x, y = {"allOf": a}, {**b[0], "allOf": b[1:]}
    if _pair_disjoint(x, y):
        both = jsonschema.Draft202012Validator({"allOf": [x, y]})
        assert not any(both.is_valid(v) for v in _DISJOINT_VALUES)


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


# locators told apart by which key they have (each closed object requires its own), with
# two optional properties they share
_LOCATORS = [{"type": "object", "required": [key], "additionalProperties": False,
              "properties": {key: {"type": "string"}, "all": {"type": "boolean"},
                             "args": {"type": "array", "items": {"type": "integer"}}}}
             for key in ("css", "xpath", "id", "name", "tag", "text", "role", "label")]
# an argument of one of three kinds: two of them may overlap, the third is told apart by
# its "type"; its value may be a locator
_ARGUMENT = {
    "type": "object", "additionalProperties": False,
    "properties": {"name": {"type": "string"}, "type": {"enum": ["s", "n", "loc", "fn"]},
                   "value": {"type": ["string", "number", "object"]}},
    "oneOf": [
        {"properties": {"type": {"enum": ["s", "n", "loc"]}, "name": {"type": "string"}},
         "required": ["type", "name"]},
        {"properties": {"type": {"enum": ["loc", "s"]}, "value": {"anyOf": [
            {"type": ["string", "number"]}, {"$ref": "#/$defs/locator"}]}},
         "required": ["value"]},
        {"properties": {"type": {"const": "fn"}}, "required": ["type"]}]}
_LOCATOR_VALUES = [None, 1, {}, {"css": "a"}, {"css": 1}, {"css": "a", "all": True},
                   {"css": "a", "all": 1}, {"css": "a", "args": [1]}, {"css": "a", "args": ["x"]},
                   {"css": "a", "id": "b"}, {"role": "x", "args": []}, {"all": True},
                   {"label": "x", "other": 1}, {"text": 2, "all": False}]


def _argument_values() -> list:
    values = [{"type": "fn"}, {"type": "fn", "name": "f"}, {"type": "fn", "value": 1}, {}]
    for value in _LOCATOR_VALUES:
        values += [{"type": "loc", "name": "a", "value": value}, {"value": value},
                   {"type": "s", "value": value}, {"type": "n", "name": "a", "value": value}]
    return values


# state nodes of one base, told apart by a pattern on the "type" their base lists
_NODE_KINDS = (("leaf", "entry"), ("branch", "kids"), ("final", "data"), ("history", "deep"),
               ("parallel", "regions"))
_NODE_BASE = {"type": "object", "required": ["type"], "properties": {
    "type": {"enum": [kind for kind, _ in _NODE_KINDS]}, "id": {"type": "string"}}}
_NODES = [{"allOf": [{"$ref": "#/$defs/base"}, {"properties": {
    "type": {"pattern": kind}, extra: {"type": "array", "items": {"type": "integer"}},
    "on": {"type": "object", "additionalProperties": {"type": "string"}},
    "order": {"type": "integer"}, "note": {"type": "string"}}}]} for kind, extra in _NODE_KINDS]
_NODE_VALUES = [{"type": t, **extra} for t in ("leaf", "branch", "final", "other")
                for extra in ({}, {"entry": [1]}, {"kids": ["x"]}, {"on": {"a": 1}},
                              {"data": [], "on": {}}, {"id": 3}, {"order": 1.5, "note": ""})]


# assertions of one kind each, named by the one key they require (the others open)
_ASSERTION_KINDS = ("equal", "exists", "matches", "contains", "isKind", "isNull", "hasItems",
                    "lengthEqual", "isSubset", "snapshot")
_ASSERTIONS = {"type": "object", "additionalProperties": False,
               "properties": {**{kind: True for kind in _ASSERTION_KINDS}, "not": {}},
               "oneOf": [{"required": [kind], "properties": {kind: {
                   "type": "object", "required": ["path"], "additionalProperties": False,
                   "properties": {"path": {"type": "string"}, "value": {}}}}}
                   for kind in _ASSERTION_KINDS]}
_ASSERTION_VALUES = [{}, {"not": 1}, {"equal": {"path": "a"}}, {"equal": {"path": 1}},
                     {"equal": {"path": "a"}, "exists": {"path": "b"}},
                     {"equal": {"path": "a"}, "exists": {"x": 1}}, {"other": {"path": "a"}},
                     {"snapshot": {"path": "a", "value": [1]}, "isNull": 3}, {"isKind": []}]


# types of a serialization format: names of primitives, named references (any name but a
# primitive's), and objects told apart by a "type" that is a reference or a literal
_TYPE_DEFS = {
    "types": {"oneOf": [{"$ref": "#/$defs/primitive"}, {"$ref": "#/$defs/annotated"},
                        {"$ref": "#/$defs/named"}, *({"$ref": f"#/$defs/{kind}"} for kind in (
                            "record", "enum", "array", "map")), {"$ref": "#/$defs/union"}]},
    "primitive": {"type": "string", "enum": ["null", "int", "string"]},
    "annotated": {"type": "object", "required": ["type"],
                  "properties": {"type": {"$ref": "#/$defs/primitive"}}},
    "named": {"type": "string", "not": {"$ref": "#/$defs/primitive"}, "pattern": "^[a-z]+$"},
    "union": {"type": "array", "items": {"$ref": "#/$defs/types"}, "minItems": 1},
    **{kind: {"type": "object", "required": ["type", field], "properties": {
        "type": {"enum": [kind]}, "name": {"type": "string"}, "doc": {"type": "string"},
        field: {"type": "array", "items": {"$ref": "#/$defs/types"}}}}
       for kind, field in (("record", "fields"), ("enum", "symbols"), ("array", "items"),
                           ("map", "values"))}}
_TYPE_VALUES = ["int", "thing", "Thing", ["int", "thing"], [], {"type": "int"},
                {"type": "record", "fields": ["int"]}, {"type": "record", "fields": [{}]},
                {"type": "enum", "symbols": [], "doc": 1}, {"type": "map", "values": ["x"]},
                {"type": "other"}, {"type": "array", "items": [{"type": "null"}]}]


# a field's options, each allowed for some of its types (draft 7 dependencies)
_FIELD_TYPES = ["text", "number", "date", "geo", "document", "token"]
_FIELD = {"type": "object", "additionalProperties": False, "properties": {
    "type": {"enum": _FIELD_TYPES}, **{f"o{i}": {"type": "boolean"} for i in range(10)}},
    "dependencies": {f"o{i}": {"properties": {"type": {"enum": _FIELD_TYPES[i % 3:i % 5 + 1]}}}
                     for i in range(10)}}
_FIELD_VALUES = [{}, {"o0": True}, {"o0": True, "o9": False}, {"o0": 1}, {"type": "text"},
                 {"type": "other"}, {"type": "other", "o3": True}, *(
                     {"type": t, f"o{i}": True, f"o{j}": False}
                     for t in _FIELD_TYPES for i, j in ((0, 1), (2, 7), (4, 9)))]


# kinds told apart by a required "kind", written without "type": "object" (every kind
# holds for any other value), and the same kinds as objects or strings of one length each
_UNTYPED_KINDS = [{"required": ["kind"], "properties": {
    "kind": {"const": f"k{i}"}, f"a{i}": {"type": "integer"}, f"b{i}": {"type": "string"},
    "c": {"type": "boolean"}, f"d{i}": {"type": "null"}, f"e{i}": {"type": "array"}}}
    for i in range(8)]
_KIND_VALUES = [3, None, [], "x", "xx", "xxxxxxxxxx", {}, {"kind": "k1"}, {"kind": "k1", "a1": 1},
                {"kind": "k1", "a1": "x"}, {"kind": "k9"}, {"a1": 1}, {"kind": "k7", "e7": [1]},
                {"kind": "k7", "e6": 1}]


# targets told apart by their builder: one of eight named ones, or a custom one (any other
# name), each with options of its own
_BUILDERS = [f"@x/build:{name}" for name in ("app", "lib", "test", "lint", "serve", "e2e",
                                              "i18n", "server")]
_TARGETS = {"oneOf": [
    {"type": "object", "required": ["builder"], "properties": {
        "builder": {"type": "string", "not": {"enum": _BUILDERS}},
        "options": {"type": "object"}, "configurations": {"type": "object"}}},
    *({"type": "object", "required": ["builder"], "properties": {
        "builder": {"const": name}, "options": {"type": "object", "properties": {
            "a": {"type": "string"}, f"o{i}": {"type": "integer"}, f"p{i}": {"type": "boolean"}},
            "additionalProperties": False}}} for i, name in enumerate(_BUILDERS))]}
_TARGET_VALUES = [{}, {"builder": "mine"}, {"builder": "mine", "options": {"z": 1}},
                  {"builder": _BUILDERS[2]}, {"builder": _BUILDERS[2], "options": {"o2": 1}},
                  {"builder": _BUILDERS[2], "options": {"o3": 1}}, {"builder": 3},
                  {"builder": _BUILDERS[7], "options": {"a": "s", "p7": True}},
                  {"builder": _BUILDERS[7], "options": {"a": 1}}, {"options": {}}]


# tasks named by a union of literal names (with keywords of their own), each task's inputs
# chosen by a pattern on the name
_TASKS = {"type": "object", "properties": {"task": {"anyOf": [
    {"enum": [f"T{i}@1"], "doNotSuggest": False} for i in range(40)]}},
    "anyOf": [{"required": ["task"], "properties": {
        "task": {"pattern": f"^T{i}@1$"}, "inputs": {"type": "object", "properties": {
            f"in{i}": {"type": "string"}}, "additionalProperties": False}}} for i in range(40)]}
_TASK_VALUES = [{"task": "T1@1"}, {"task": "T1@2"}, {"task": "X"}, {"task": "T3@1", "inputs": {}},
                {"task": "T3@1", "inputs": {"in3": "a"}}, {"task": "T3@1", "inputs": {"in4": "a"}},
                {"task": "T39@1", "inputs": {"in39": 1}}, {}, "T1@1"]


@pytest.mark.parametrize("schema, values", [
    (_TASKS, _TASK_VALUES),
    ({"oneOf": _UNTYPED_KINDS}, _KIND_VALUES),
    ({"oneOf": [{**kind, "type": ["object", "string"], "minLength": i + 1, "maxLength": i + 1}
                for i, kind in enumerate(_UNTYPED_KINDS)]}, _KIND_VALUES),
    ({"$schema": "http://json-schema.org/draft-07/schema#", **_FIELD}, _FIELD_VALUES),
    ({"$defs": _TYPE_DEFS, "$ref": "#/$defs/types"}, _TYPE_VALUES),
    (_ASSERTIONS, _ASSERTION_VALUES),
    ({"$defs": {"base": _NODE_BASE}, "oneOf": _NODES}, _NODE_VALUES),
    ({"oneOf": [{"anyOf": _LOCATORS}, {"required": ["all"]}]}, _LOCATOR_VALUES),
    ({"not": {"anyOf": _LOCATORS}}, _LOCATOR_VALUES),
    ({"$defs": {"locator": {"oneOf": _LOCATORS}}, **_ARGUMENT}, _argument_values()),
    ({"$defs": {"locator": {"oneOf": _LOCATORS}}, "not": _ARGUMENT}, _argument_values()),
    (_TARGETS, _TARGET_VALUES)])
def test_unions_told_apart_need_few_subschemas(schema, values, monkeypatch):
    # "none of eight locators": each one's opposite is an anyOf of five ways to fail, and
    # their conjunction multiplies out to 5**8 combinations; case by case on the key present
    # it is eight. The argument's third kind shares no value with the others (its "type"
    # beside the properties of the whole oneOf): it needs no opposites at all, nor do the
    # state nodes (each "type" pattern leaves one of the base's values). An assertion's kind
    # fails where its key is absent or its value fails: one object shape, where "absent"
    # and "present and failing" were two branches, 2**9 combinations for each kind. The
    # types share no value either, once references inside are followed (a named type is
    # `not` a primitive). A field's options, each allowed with some of its types, are
    # taken case by case on the type, where present or absent for each one they made 2**10
    # combinations. Kinds that share every value but objects have objects and the other
    # values compiled apart. A union of literal names is one list where it meets each
    # task's pattern. A custom builder (any name but the eight) shares no value with the
    # named ones. (The limit lowered: each schema multiplied out past it.)
    monkeypatch.setattr(pse.json_schema.compile, "MAX_SCHEMA_NODES", 1000)
    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert any(validator.is_valid(v) for v in values)
    assert not all(validator.is_valid(v) for v in values)
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


_DRAFT4 = "http://json-schema.org/draft-04/schema#"
_NUMBERED = [{"type": "integer", "enum": [1, 2]}, {"enum": ["a"]}]


@pytest.mark.parametrize("schema, values", [
    # literal branches merged into one list keep what their type says (1.0 is no integer in
    # draft 4)
    ({"$schema": _DRAFT4, "anyOf": _NUMBERED}, [1, 1.0, 2.0, "a", 3]),
    ({"$schema": _DRAFT4, "oneOf": _NUMBERED}, [1, 1.0, 2.0, "a", 3]),
    ({"$schema": _DRAFT4, "allOf": [{"anyOf": _NUMBERED}, {"minimum": 0}]}, [1, 1.0, "a"]),
    # dependencies taken case by case list the property in every case: not beside
    # unevaluatedProperties, where that would count it as evaluated
    ({"dependentSchemas": {"k1": {"properties": {"p": {"enum": ["x"]}}},
                           "k2": {"properties": {"p": {"enum": ["y"]}}}},
      "properties": {"k1": {}, "k2": {}}, "unevaluatedProperties": False},
     [{}, {"p": "x"}, {"p": 1}, {"k1": 0}, {"k1": 0, "p": "x"}, {"k1": 0, "p": "y"}]),
    # the same text under another base refers to another schema: no proof of disjointness
    ({"$defs": {"q": {"type": "string"}}, "oneOf": [
        {"$id": "http://example.com/b", "$defs": {"q": {"type": "integer"}},
         "properties": {"p": {"$ref": "#/$defs/q"}}},
        {"not": {"properties": {"p": {"$ref": "#/$defs/q"}}}}]},
     [{"p": 1}, {"p": "s"}, {"p": None}, 3]),
    # listed values of several types beside a type: objects and the rest split once
    ({"oneOf": [{"enum": [{"a": 1}, "b"]}, {"type": "string"}]}, [{"a": 1}, "b", "c", {"a": 2}]),
    ({"oneOf": [{"const": {"a": 1}}, {"const": "a"}, {"const": {"a": 2}}, {"type": "string"}]},
     [{"a": 1}, {"a": 2}, "a", "b", {}])])
def test_shortcuts_keep_the_meaning(schema, values):
    # (each of these was judged otherwise, or refused, by the first version of a shortcut)
    validator = jsonschema.validators.validator_for(schema)(schema)
    machine = JsonSchema(schema, property_order="any")
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


_KINDS = ["a", "b", "c", 1, None]


@settings(max_examples=200)
@given(listed=st.lists(st.lists(st.sampled_from(_KINDS), unique=True, min_size=1, max_size=3),
                       min_size=2, max_size=4),
       const=st.booleans(), closed=st.booleans(),
       values=st.lists(st.fixed_dictionaries({}, optional={
           "kind": st.sampled_from([*_KINDS, "z", 2.5]), **{f"o{i}": st.just(i) for i in range(4)},
           "x": st.just(0)}), min_size=8, max_size=8))
def test_dependencies_on_one_property_agree_with_jsonschema(listed, const, closed, values):
    # each option allows some kinds (taken case by case on "kind": see dependent_cases)
    dependent = {f"o{i}": {"properties": {"kind": {"const": v[0]} if const and len(v) == 1
                                          else {"enum": v}}} for i, v in enumerate(listed)}
    schema = {"dependentSchemas": dependent, "dependentRequired": {"o0": ["x"]}}
    if closed:
        schema |= {"additionalProperties": False, "properties": {
            "kind": True, "x": True, **{f"o{i}": True for i in range(4)}}}
    validator = jsonschema.Draft202012Validator(schema)
    machine = JsonSchema(schema, property_order="any")
    for value in [*values, 3, "o0"]:
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


def test_retried_compile_shares_the_first_attempts_budget(monkeypatch):
    """A schema compiled again with oneOf as anyOf (it multiplied out) runs the retry within
    the budget the first attempt started (pse.limits.COMPILE_SECONDS for both together)."""
    from pse import limits

    kinds = [{"type": "object", "properties": {"kind": {"const": name}, "options": {
        "type": "object", "properties": {f"o{i}": {"type": "integer"}}}}}
        for i, name in enumerate(["a", "b", "c", "d", "e", "f"])]
    monkeypatch.setattr(pse.json_schema.compile, "MAX_SCHEMA_NODES", 300)
    started = []
    real = limits._Budget.__init__

    def counted(self, *args):
        started.append(args)
        real(self, *args)

    monkeypatch.setattr(limits._Budget, "__init__", counted)
    with pytest.warns(UserWarning, match="every oneOf is taken as anyOf"):
        machine = JsonSchema({"oneOf": kinds}, strict=False)
    assert not machine._one_of_apart  # (retried)
    assert len(started) == 1, started


def test_one_of_that_multiplies_out_is_any_of_without_strict(monkeypatch):
    # six builders that do not require their "builder" key: an object without it must match
    # exactly one builder's options, and each branch carries the others' opposites, which
    # multiply out. Without strict, the schema is compiled again with oneOf as anyOf, saying
    # so once; the warnings of the first attempt are not given twice
    kinds = [{"type": "object", "properties": {
        "builder": {"const": name}, "options": {"type": "object", "properties": {
            "a": {"type": "string", "format": "html-selector"}, f"o{i}": {"type": "integer"},
            f"p{i}": {"type": "boolean"}}, "additionalProperties": False}}}
        for i, name in enumerate(["app", "lib", "test", "lint", "serve", "e2e"])]
    schema = {"oneOf": kinds}
    monkeypatch.setattr(pse.json_schema.compile, "MAX_SCHEMA_NODES", 1000)
    with pytest.warns(UserWarning, match="html-selector"):  # (given before the error)
        with pytest.raises(SchemaError, match="MAX_SCHEMA_NODES"):
            JsonSchema(schema, property_order="any")
    with warnings.catch_warnings(record=True) as given:
        warnings.simplefilter("always")
        machine = JsonSchema(schema, property_order="any", strict=False)
    texts = [str(w.message) for w in given]
    assert len(texts) == len(set(texts)) == len(machine.warnings), texts
    assert sum("every oneOf is taken as anyOf" in t for t in texts) == 1, texts
    assert any("html-selector" in t for t in texts), texts
    assert "every oneOf is taken as anyOf" in machine.warnings[0]
    assert all(w.filename == __file__ for w in given)  # (the line making the JsonSchema)
    as_any_of = jsonschema.Draft202012Validator({"anyOf": kinds})
    as_one_of = jsonschema.Draft202012Validator(schema)
    values = [{}, {"builder": "app"}, {"builder": "lib", "options": {"o1": 1}},
              {"builder": "lib", "options": {"o2": 1}}, {"options": {"o3": 1, "a": "x"}},
              {"options": {"a": "x"}}, {"builder": "other"}, {"options": {"o3": "x"}}, 3]
    assert any(as_any_of.is_valid(v) and not as_one_of.is_valid(v) for v in values)
    for value in values:
        assert machine.matches(compact(value)) == as_any_of.is_valid(value), value


def test_long_integers_are_told_apart():
    # 10**30 and 10**30 + 1 differ past 28 digits (a Decimal's default precision)
    from pse.json_schema.common import _pair_disjoint
    big = 10**30
    assert not _pair_disjoint({"const": big + 1}, {"not": {"const": big}})
    machine = JsonSchema({"enum": [big, big + 1]})
    assert machine.matches(str(big)) and machine.matches(str(big + 1))
    assert not machine.matches(str(big + 2))


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


@pytest.mark.parametrize("schema, values", [
    # merges make {"const": 1} and {"const": true}: alike to ==, not to JSON
    ({"prefixItems": [{"allOf": [{"const": 1}, {"minItems": 0}]},
                      {"allOf": [{"const": True}, {"minItems": 0}]}]},
     [[1, True], [1, 1], [True, True], [True, 1]]),
    # each oneOf branch carries the others' opposites, made anew for every branch and in
    # every recursion: those made alike compile once, their meaning kept
    ({"$defs": {"node": {"oneOf": [
        {"type": "object", "required": [k], "properties": {k: {"$ref": "#/$defs/node"}}}
        for k in "abc"] + [{"type": "integer"}]}}, "$ref": "#/$defs/node"},
     [1, {"a": 1}, {"a": 1, "b": 2}, {"a": {"b": 2}}, {"a": {"b": {"a": 1, "c": 1}}},
      {"c": {"c": {"c": 3}}}, {}, {"a": {}}])])
def test_subschemas_made_alike_keep_their_meaning(schema, values):
    validator = jsonschema.validators.validator_for(schema)(schema)
    machine = JsonSchema(schema, property_order="any")
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_subschemas_made_alike_keep_their_order():
    # the order of properties counts (property_order="schema"): merged objects alike but
    # for it (their values one Python object) are two
    value = {"type": "integer"}
    m = JsonSchema({"prefixItems": [
        {"allOf": [{"properties": {"a": value, "b": value}}, {"minProperties": 0}]},
        {"allOf": [{"properties": {"b": value, "a": value}}, {"minProperties": 0}]}]})
    assert m.matches('[{"a":1,"b":2},{"b":1,"a":2}]')
    assert not m.matches('[{"a":1,"b":2},{"a":1,"b":2}]')
