"""JSON Schema objects: property order, repeated keys, key bits, dependencies, unevaluated keys."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from conftest import shared_vocab
from json_schema_helpers import INSTANCES, SCHEMAS, assert_generations_validate, compact
from pse import JsonSchema, SchemaError, StructuringEngine


def test_schema_order_of_properties():
    m = JsonSchema({"properties": {"a": {}, "b": {}}})
    assert m.matches('{"a":1,"b":2}') and m.matches('{"b":2}')
    assert not m.matches('{"b":2,"a":1}')  # listed properties come in schema order
    assert m.matches('{"a":1,"z":3}') and not m.matches('{"a":1,"a":3}')


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


def test_draft_2020_keeps_dependencies():
    """2020-12 split `dependencies` in two, but the official suite's optional tests (and
    users) still expect the old keyword to hold."""
    m = JsonSchema({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}})
    assert [m.matches(compact(v)) for v in ({"a": 1}, {"a": 1, "b": 2}, {"c": 1},
                                            {"c": 1, "d": 2})] == [False, True, False, True]


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
