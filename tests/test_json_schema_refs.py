"""JSON Schema references: $ref, dynamic and remote refs, draft-4 id, recursion through them."""

from __future__ import annotations

import json

import jsonschema
import pytest

from helpers import run_tokens
from json_schema_helpers import compact
from pse import (
    Chain, Forward, Grammar, JsonSchema, MatchesNothing, Phrase, SchemaError,
    StructuringEngine, Vocabulary,
)


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


@pytest.mark.parametrize("ident", ["urn:example:tree", "tag:example.com,2026:tree",
                                   "https://example.com/tree"])
def test_fragments_point_into_an_embedded_resource_of_any_scheme(ident):
    """Inside a subschema with its own $id, "#" and "#/$defs/..." are that resource, not the
    document, whether or not urllib takes the id's scheme for a hierarchical one."""
    tree = {"$id": ident, "$defs": {"leaf": {"type": "integer"}}, "type": "object",
            "properties": {"left": {"anyOf": [{"$ref": "#"}, {"$ref": "#/$defs/leaf"}]}},
            "required": ["left"]}
    schema = {"type": "object", "properties": {"tree": tree}, "required": ["tree"]}
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for value in ({"tree": {"left": 1}}, {"tree": {"left": {"left": {"left": 2}}}},
                  {"tree": {"left": {"tree": {"left": 1}}}}, {"tree": {"left": "x"}},
                  {"tree": {"left": {"left": {}}}}):
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_references_leading_only_to_themselves_are_refused():
    for defs in ({"p": {"$ref": "#/$defs/p"}}, {"p": {"$ref": "#/$defs/q"},
                                                "q": {"$ref": "#/$defs/p"}}):
        with pytest.raises(SchemaError, match="refers only to itself"):
            JsonSchema({"$defs": defs, "properties": {"a": {"$ref": "#/$defs/p"}}})


def test_references_circling_through_unions_are_refused_by_name():
    """A reference that reaches itself through anyOf or oneOf alone (a validator recurses
    without end) was expanded inline until MAX_SCHEMA_DEPTH, with a pointer of hundreds of
    characters: now a SchemaError that names it, as short as the schema's own pointers."""
    for x in ({"anyOf": [{"$ref": "#/$defs/x"}]},
              {"anyOf": [{"$ref": "#/$defs/x"}], "type": "string"},
              {"oneOf": [{"$ref": "#/$defs/y"}], "minLength": 1},
              {"anyOf": [{"allOf": [{"$ref": "#/$defs/x"}]}], "type": "string"}):
        schema = {"$defs": {"x": x, "y": {"anyOf": [{"$ref": "#/$defs/x"}], "maxLength": 3}},
                  "anyOf": [{"$ref": "#/$defs/x"}]}
        with pytest.raises(SchemaError, match="#/\\$defs/x") as e:
            JsonSchema(schema)
        assert "MAX_SCHEMA_DEPTH" not in str(e.value) and len(str(e.value)) < 200, e.value


def test_recursion_through_a_union_beside_other_keywords_compiles():
    """The check above follows applicators only: a reference back through items (a value
    read between) is recursion, and agrees with jsonschema."""
    schema = {"$defs": {"x": {"anyOf": [{"type": "integer"},
                                         {"type": "array", "items": {"$ref": "#/$defs/x"}}],
                              "description": "a nested list of integers"}},
              "title": "nested", "anyOf": [{"$ref": "#/$defs/x"}], "maxItems": 2}
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for value in (1, [1, [2, [3]]], [1, 2, 3], [[1, "a"]], "a", [[[[]]]]):
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_property_names_referring_to_themselves_are_refused():
    for names in ({"$ref": "#/$defs/p"}, {"anyOf": [{"$ref": "#/$defs/p"}, {"const": "a"}]}):
        schema = {"$defs": {"p": names}, "propertyNames": {"$ref": "#/$defs/p"}}
        with pytest.raises(SchemaError, match="MAX_SCHEMA_DEPTH"):
            JsonSchema(schema)


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


def test_reference_to_a_false_schema_allows_nothing_there():
    schema = {"$defs": {"no": False}, "properties": {"x": {"$ref": "#/$defs/no"}}}
    m = JsonSchema(schema)
    assert m.matches('{"y":1}') and not m.matches('{"x":1}')
    with pytest.raises(SchemaError, match="false"):
        JsonSchema({"$ref": "#/$defs/no", "$defs": {"no": False}})


_LINKED = {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"type": "integer"}},
           "required": ["a", "b"]}


@pytest.mark.parametrize("schema, order", [
    ({"type": "array", "items": {"$ref": "#"}, "minItems": 1}, "schema"),
    ({"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}},
                      "required": ["next"]}}, "$ref": "#/$defs/n"}, "schema"),
    # counted or required in a register (guards): the compile's trim saw `{}` as a way out
    ({"type": "object", "additionalProperties": {"$ref": "#"}, "minProperties": 1}, "schema"),
    ({"type": "object", "additionalProperties": {"$ref": "#"}, "minProperties": 2,
      "maxProperties": 3}, "schema"),
    ({"type": "object", "patternProperties": {"^a": {"$ref": "#"}},
      "additionalProperties": False, "minProperties": 1}, "schema"),
    (_LINKED, "any"),
])
def test_a_recursion_that_no_value_ends_is_a_schema_error(schema, order):
    """Every value such a schema allows holds another of its kind: no JSON value is valid
    (jsonschema recurses without end on any instance it could accept). The compile refused
    it as a GrammarError, "the structure matches nothing", not naming the schema: now a
    SchemaError, as a false schema is, both when compiled and when an engine is configured."""
    with pytest.raises(SchemaError, match="#: nothing is valid.*\\$ref recursion"):
        JsonSchema(schema, property_order=order).compile()
    machine = JsonSchema(schema, property_order=order)
    with pytest.raises(SchemaError, match="#: nothing is valid"):
        StructuringEngine(Vocabulary.from_tokens(["[", "]", "{", "}"])).configure(machine)


def test_a_property_that_no_value_ends_is_never_begun():
    """An optional property whose schema allows no value (its objects must each hold another,
    counted by minProperties) leaves the object valid without it; the masks led into it, and
    into nesting without end (`{"x":{"a":{...` never complete)."""
    endless = {"type": "object", "additionalProperties": {"$ref": "#/$defs/endless"},
               "minProperties": 1}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/endless"},
                                               "y": {"type": "integer"}},
              "$defs": {"endless": endless}}
    machine = JsonSchema(schema)
    for text in ('{"y":1}', "{}", '{"z":{"a":{}}}'):
        assert machine.matches(text) and jsonschema.validators.validator_for(schema)(
            schema).is_valid(json.loads(text))
    assert run_tokens(machine, ['{"x"']) == []
    assert run_tokens(machine, ['{"y":1,"x"']) == []
    assert run_tokens(machine, ['{"y":1,"z"']) != []


def test_the_error_names_the_definition_that_never_ends():
    """The root has no value because a required property's definition has none: the error
    names that definition (the compiler's MatchesNothing labels the rules nothing ends)."""
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "required": ["a"],
              "$defs": {"x": {"type": "array", "items": {"$ref": "#/$defs/x"},
                              "minItems": 1}}}
    with pytest.raises(SchemaError, match="no value ends: #/\\$defs/x\\)$"):
        JsonSchema(schema).compile()


def test_a_grammar_that_matches_nothing_is_its_own_error():
    """Outside a JsonSchema the error stays a GrammarError: its subclass MatchesNothing,
    naming the rules that nothing ends where they have names."""
    s = Forward()
    s.set(Chain(Phrase("a"), s))
    with pytest.raises(MatchesNothing, match="matches nothing$"):
        s.compile()
    named = Forward(name="endless")
    named.set(Chain(Phrase("a"), named))
    with pytest.raises(MatchesNothing, match="matches nothing: no text ends endless$") as e:
        Chain(Phrase("b"), named).compile()
    assert e.value.labels == ("endless",)
    with pytest.raises(MatchesNothing, match="matches nothing"):
        Grammar.from_lark('start: start "a"\n').compile()
