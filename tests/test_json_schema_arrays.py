"""JSON Schema arrays: items, contains and its counts, item bounds unrolled or counted."""

from __future__ import annotations

import json

import jsonschema
import pytest

from json_schema_helpers import compact
from pse import JsonSchema, SchemaError


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


@pytest.mark.parametrize("lo, hi", [(0, 1), (0, 3), (1, 1), (2, 4), (3, None), (0, None),
                                    (1, None), (2, 2)])
@pytest.mark.parametrize("whitespace", [None, 1])
def test_item_counts_in_the_register_agree_with_jsonschema(monkeypatch, lo, hi, whitespace):
    """Item bounds past COUNTED_ITEMS are counted in the register (commas, each guarded by
    the maximum; the closing bracket by the minimum). With that bound at 0 every bound takes
    that path: arrays of 0 to 6 items, nested in arrays and beside any-order objects."""
    import pse.json_schema.arrays as arrays

    monkeypatch.setattr(arrays, "COUNTED_ITEMS", 0)
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


def test_large_item_bounds_compile_without_unrolling():
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 300,
              "maxItems": 100_000}
    m = JsonSchema(schema)
    assert m.compile().n_nodes < 50
    for n in (0, 299, 300, 1000):
        text = json.dumps(list(range(n)), separators=(",", ":"))
        assert m.matches(text) == (n >= 300)


def test_item_bounds_past_counted_items_are_counted():
    """maxItems 100 of one kind of item is counted, not unrolled into 100 copies of the
    array's states (a third of some schemas' compile); the counts still agree with
    jsonschema at and around the bounds."""
    item = {"type": "object", "properties": {"a": {"type": "integer"}}}
    schema = {"type": "array", "items": item, "minItems": 20, "maxItems": 100}
    m = JsonSchema(schema)
    assert m.compile().n_nodes < 50
    validator = jsonschema.Draft202012Validator(schema)
    for n in (0, 19, 20, 21, 99, 100, 101):
        value = [{"a": k} for k in range(n)]
        assert m.matches(compact(value)) == validator.is_valid(value), n


def test_unique_items_of_listed_values_beside_unknown_keywords():
    # a list of values with keywords of a tool's own beside it (annotations) is still a list:
    # unique items over it are counted as over any list of literals (it was refused as items
    # that can run out of new values)
    schema = {"type": "array", "uniqueItems": True,
              "items": {"enum": [1, 2, "a"], "markdownDescription": "one of three"}}
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for value in [[], [1], [1, 2, "a"], [1, 1], [2, "a", 2], [3], ["a", "b"]]:
        assert machine.matches(compact(value)) == validator.is_valid(value), value
