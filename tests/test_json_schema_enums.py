"""JSON Schema enum and const: listed values beside other keywords, numbers in every spelling."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from json_schema_helpers import compact
from pse import JsonSchema, SchemaError


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


@pytest.mark.parametrize("schema", [
    {"type": "string", "enum": ["a", "b", 1, None], "ignoreCase": True, "readonly": 1},
    {"type": ["integer", "null"], "enum": [1, 1.0, 2.5, "1", None], "propertyOrder": 3},
    {"enum": ["a", 1], "maxLength": 0, "x-unknown": {"type": "integer"}},
])
def test_enum_beside_unknown_keywords(schema):
    """Unknown keywords are annotations beside a list of values too (the values are then
    filtered by type alone, not by a machine compiled for the rest of the schema)."""
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for value in ["a", "b", "", 1, 1.0, 2.5, "1", None, "A"]:
        text = compact(value)
        assert machine.matches(text) == validator.is_valid(value), text


def test_enum_less_excluded_values_of_any_type():
    m = JsonSchema({"type": "integer", "enum": [1, 2, 3], "not": {"enum": [2.0]}})
    assert [m.matches(v) for v in ("1", "2", "3", "4")] == [True, False, True, False]


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


LISTED = ["", "a", "ab", "abc", "ba", 0, 3, 4.5, 10, True, None, [], [1], [1, "a"], {},
          {"a": 1}, {"a": "x"}, {"b": 2}]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LISTED), min_size=1, max_size=4),
       st.sampled_from([{"maxLength": 2}, {"pattern": "^a"}, {"minimum": 3},
                        {"multipleOf": 2}, {"maxItems": 1}, {"items": {"type": "integer"}},
                        {"properties": {"a": {"type": "integer"}}}, {"required": ["a"]},
                        {"anyOf": [{"maxLength": 1}, {"minimum": 5}]},
                        {"minProperties": 1, "maxLength": 1}, {"not": {"minimum": 4}}]),
       st.sampled_from(["http://json-schema.org/draft-04/schema#",
                        "http://json-schema.org/draft-07/schema#",
                        "https://json-schema.org/draft/2020-12/schema"]))
def test_listed_values_beside_keywords_of_any_type(values, rest, dialect):
    """Listed values beside other keywords but no `type` are kept where those keywords allow
    them (values of one JSON type are checked within that type, values of several against
    any JSON value): what is valid is what jsonschema finds valid."""
    _judged_as_jsonschema({"$schema": dialect, "enum": values, **rest}, LISTED)


def _judged_as_jsonschema(schema: dict, values: list) -> None:
    """Each of `values` matches the schema's machine exactly where jsonschema finds it valid
    (a schema pse refuses as matching nothing: none is valid)."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    try:
        machine = JsonSchema(schema)
    except SchemaError:  # nothing listed is allowed
        assert not any(validator.is_valid(v) for v in values), schema
        return
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), (schema, value)


LISTED_STRINGS = ["", "a", "ab", "abc", "ba", "é", "aé", "cab", "xyz", "\U0001F600a", "b" * 9]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LISTED_STRINGS), min_size=1, max_size=5),
       st.fixed_dictionaries({}, optional={
           "pattern": st.sampled_from(["^a", "b$", "[ab]{2}", "é", "^(?:ab|c)+$", "^$", "."]),
           "minLength": st.integers(0, 3), "maxLength": st.integers(0, 4),
           "type": st.just("string")}),
       st.sampled_from(["http://json-schema.org/draft-04/schema#",
                        "https://json-schema.org/draft/2020-12/schema"]))
def test_listed_strings_beside_string_keywords(values, rest, dialect):
    """Listed strings beside a pattern and length bounds are kept where those allow them
    (told without a machine: lengths in code points, the pattern's automaton over the text):
    what is valid is what jsonschema finds valid."""
    _judged_as_jsonschema({"$schema": dialect, "enum": values, **rest},
                          LISTED_STRINGS + [1, None])
