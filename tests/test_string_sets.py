"""String schemas whose allOf, anyOf, oneOf, not and if/then/else are taken as sets of strings
(pse.json_schema.string_sets), judged against jsonschema."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pse.json_schema.compile
import pse.json_schema.string_sets
from pse import JsonSchema, SchemaError
from test_unique_items import _arrays

# patterns that Python's `re` (jsonschema's) and ECMA 262 read alike, over ASCII
PATTERNS = ["ab", "^a", "b$", "^[ab]*$", "\\d", "a.c", "^.{3}$", "[xyz]", "1.*2", "^$"]
ALPHABET = "abcxyz12 "


def _leaf():
    return st.one_of(
        st.sampled_from(PATTERNS).map(lambda p: {"pattern": p}),
        st.integers(0, 5).map(lambda n: {"minLength": n}),
        st.integers(0, 5).map(lambda n: {"maxLength": n}),
        st.lists(st.text(ALPHABET, max_size=3), min_size=1, max_size=3, unique=True).map(
            lambda v: {"enum": v}),
        st.sampled_from([{"type": "integer"}, {"type": ["string", "null"]}, True, False,
                         {"const": 3}, {"minimum": 2}]))


def _schema(leaves):
    return st.one_of(
        st.lists(leaves, min_size=1, max_size=3).map(lambda b: {"anyOf": b}),
        st.lists(leaves, min_size=1, max_size=3).map(lambda b: {"allOf": b}),
        st.lists(leaves, min_size=1, max_size=3).map(lambda b: {"oneOf": b}),
        leaves.map(lambda b: {"not": b}),
        st.tuples(leaves, leaves, leaves).map(
            lambda t: {"if": t[0], "then": t[1], "else": t[2]}))


SCHEMAS = st.recursive(_leaf(), _schema, max_leaves=8)


def _texts(rng: random.Random, n: int) -> list[str]:
    return [""] + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 7)))
                   for _ in range(n)]


def _agrees(schema: dict, texts: list[str]) -> None:
    machine = JsonSchema(schema)
    oracle = jsonschema.Draft202012Validator(schema)
    for text in texts:
        assert machine.matches(json.dumps(text)) == oracle.is_valid(text), (schema, text)
    assert not machine.matches("3") and not machine.matches("null")


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(SCHEMAS, st.randoms(use_true_random=False))
def test_sets_of_strings_match_jsonschema(monkeypatch_sets, sub, rng):
    # every combination taken as a set (no branch count to reach), on short texts; "@"
    # keeps the schema from allowing nothing (a compile error)
    _agrees({"type": "string", "anyOf": [sub, {"const": "@"}]}, ["@", *_texts(rng, 60)])


@pytest.fixture
def monkeypatch_sets(monkeypatch):
    monkeypatch.setattr(pse.json_schema.string_sets, "MIN_SET_BRANCHES", 0)


def _nested(kind: str) -> dict:
    # 9 x 9 x 9 branches when unions inside allOf are multiplied out (maskbench's
    # Handwritten---allany16, smaller)
    return {"type": "string", "allOf": [
        {"not": {"allOf": [{"not": {kind: [{"pattern": p} for p in group]}}
                           for group in groups]}}
        for groups in [[["ab", "^a"], ["b$", "x"], ["1.*2", "y"]],
                       [["\\d", "c"], ["^[ab]*$", "z"], ["a.c", "^.{3}$"]],
                       [["xy", "^b"], ["2$", "ba"], ["cc", "^1"]]]]}


@pytest.mark.parametrize("kind", ["anyOf", "oneOf"])
def test_unions_inside_allof_do_not_multiply_out(monkeypatch, kind):
    schema = _nested(kind)
    monkeypatch.setattr(pse.json_schema.compile, "MAX_SCHEMA_NODES", 50)
    _agrees(schema, _texts(random.Random(1), 3000))
    # taken one branch at a time, the same schema passes the bound: the test can fail
    monkeypatch.setattr(pse.json_schema.string_sets, "MIN_SET_BRANCHES", 1 << 30)
    with pytest.raises(pse.MultipliedOut):
        JsonSchema(schema)


def test_lengths_too_long_to_unroll_are_counted():
    # maxLength 200 is counted at run time around the set's automaton
    schema = _nested("anyOf")
    schema["minLength"], schema["maxLength"] = 4, 200
    rng = random.Random(2)
    texts = _texts(rng, 2000) + ["a" * n + "b1x2" for n in (190, 195, 196, 197, 250)]
    _agrees(schema, texts)


def test_sets_inside_unique_arrays():
    # items of a unique array are strings seen whole (quote to quote), one automaton whose
    # states count the strings they complete to: exact, so strict compiles it
    item = _nested("anyOf")
    schema = {"type": "array", "items": item, "uniqueItems": True}
    machine = JsonSchema(schema, strict=True)
    oracle = jsonschema.Draft202012Validator(schema)
    rng = random.Random(3)
    texts = [t for t in _texts(rng, 400) if jsonschema.Draft202012Validator(item).is_valid(t)]
    assert len(texts) > 20
    for a, b in zip(texts, texts[1:] + texts[:1]):
        for value in ([a, b], [a, a], [a, b, a]):
            text = json.dumps(value, separators=(",", ":"))
            assert machine.matches(text) == oracle.is_valid(value), value


def test_references_and_formats_in_sets():
    defs = {"d": {"format": "date"}, "w": {"pattern": "^[a-c]+$", "maxLength": 4}}
    schema = {"type": "string", "$defs": defs, "allOf": [
        {"anyOf": [{"$ref": "#/$defs/d"}, {"$ref": "#/$defs/w"}, {"const": "x"}]},
        {"not": {"anyOf": [{"pattern": "^b"}, {"pattern": "-02-"}]}},
        {"anyOf": [{"pattern": "a"}, {"pattern": "0"}, {"const": "x"}]}]}
    texts = ["2024-01-31", "2024-02-01", "2024-13-01", "abc", "bca", "aaaaa", "x", "", "cab",
             "2024-01-3", "a"]
    machine = JsonSchema(schema, strict=True)
    oracle = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    for text in texts:
        assert machine.matches(json.dumps(text)) == oracle.is_valid(text), text


_THREE_UNIONS = [{"anyOf": [{"maxLength": 64}, {"pattern": "^a"}, {"pattern": "^b"}]},
                 {"anyOf": [{"pattern": "1"}, {"pattern": "2"}, {"pattern": "3"}, {"pattern": ""}]},
                 {"anyOf": [{"pattern": "5"}, {"pattern": "6"}, {"pattern": "7"}, {"pattern": "^"}]}]


@pytest.mark.parametrize("schema", [
    # const and enum side by side: both hold
    {"anyOf": [{"type": "string", "const": "a", "enum": ["b", "a "], "allOf": _THREE_UNIONS},
               {"type": "integer"}]},
    {"anyOf": [{"type": "string", "const": "a1", "enum": ["a1", "b"], "allOf": _THREE_UNIONS},
               {"type": "integer"}]},
    # a length bound past 64 below its least: nothing
    {"anyOf": [{"type": "string", "minLength": 70, "maxLength": 69, "allOf": _THREE_UNIONS},
               {"type": "integer"}]},
    # a length bound past 64 that the set's automaton cannot count (a branch of at most 64
    # characters): compiled one branch at a time
    {"type": "string", "maxLength": 100, "allOf": _THREE_UNIONS},
    {"type": "string", "minLength": 66, "allOf": _THREE_UNIONS},
    # a format whose own length is past 64 (hostname: 253): one branch at a time
    {"type": "string", "allOf": [*_THREE_UNIONS, {"anyOf": [{"format": "hostname"},
                                                             {"pattern": "^a"}]}]},
])
def test_edge_cases_match_jsonschema(schema):
    machine = JsonSchema(schema, strict=True)
    oracle = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    rng = random.Random(4)
    texts = [*_texts(rng, 300), "a", "a1", "a 1", "b", "a.b-c1", *(
        c * n + "1" for c in "ab5" for n in (63, 64, 65, 66, 69, 70, 99, 100, 101))]
    for text in texts:
        assert machine.matches(json.dumps(text)) == oracle.is_valid(text), (schema, text)
    assert machine.matches("3") == oracle.is_valid(3)


# a set of three strings ("b" is left out): its prefixes run out of new strings
FEW = {"type": "string", "allOf": [{"anyOf": [{"pattern": "^(a|b|ab)$"}, {"const": "ba"}]},
                                   {"not": {"const": "b"}}]}


@pytest.mark.parametrize("ref", [False, True])
@pytest.mark.parametrize("spaced", [False, True])
def test_unique_arrays_of_sets_that_run_out_leave_no_dead_end(monkeypatch, spaced, ref):
    """Brute force, as test_unique_items does for patterns: a prefix is taken exactly when
    some array of distinct items begins with it. `ref`: the items through a reference."""
    schema = {"type": "array", "items": FEW, "uniqueItems": True}
    if ref:
        schema.update({"$defs": {"few": FEW}, "items": {"$ref": "#/$defs/few"}})
    ws = 1 if spaced else None
    # compiled one branch at a time, the items' prefixes are not counted: refused (so the
    # test can fail)
    with pytest.raises(SchemaError, match="uniqueItems"):
        JsonSchema(schema, whitespace=ws)
    monkeypatch.setattr(pse.json_schema.string_sets, "MIN_SET_BRANCHES", 0)
    m = JsonSchema(schema, whitespace=ws)
    arrays = _arrays(["a", "ab", "ba"], None, spaced)
    prefixes = {a[:i] for a in arrays for i in range(len(a) + 1)}
    alphabet = sorted(set("".join(arrays)) | set("\\u0/ b"))
    for p in sorted(prefixes | {q + ch for q in prefixes for ch in alphabet
                                if not spaced or ch != " " or q.endswith(",")}):
        assert m.matches(p, partial=True) == (p in prefixes), p
    # three strings fill three places, not four
    assert JsonSchema(dict(schema, minItems=3)).matches('["ba","a","ab"]')
    with pytest.raises(SchemaError, match="nothing is valid"):
        JsonSchema(dict(schema, minItems=4))


def test_unique_arrays_of_a_set_of_no_strings(monkeypatch):
    monkeypatch.setattr(pse.json_schema.string_sets, "MIN_SET_BRANCHES", 0)
    none = {"type": "string", "allOf": [{"anyOf": [{"const": "a"}, {"const": "b"}]},
                                        {"not": {"pattern": "^[ab]$"}}]}
    m = JsonSchema({"type": "array", "items": none, "uniqueItems": True})
    assert m.matches("[]") and not m.matches('["', partial=True)
    with pytest.raises(SchemaError, match="nothing is valid"):
        JsonSchema({"type": "array", "items": none, "uniqueItems": True, "minItems": 1})


def test_sets_the_array_does_not_compile_as_written_are_not_counted():
    """A union's branch compiles with the keywords beside the union (here an unknown one),
    and items that `contains` matches compile merged with it: not the set the check would
    count, so strict mode refuses them as before (at 9c293e7 the first compiled, with a dead
    end after five items). Without the sibling, the branch is the set itself: exact."""
    wide = {"type": "string", "allOf": [
        {"anyOf": [{"maxLength": 0}] + [{"pattern": f"^{c}$"} for c in "acdef"]},
        {"anyOf": [{"maxLength": 1}] + [{"pattern": f"^{c}$"} for c in "ghijk"]}]}
    beside = {"type": "array", "uniqueItems": True, "items": {"anyOf": [wide], "x-note": 1}}
    with pytest.raises(SchemaError, match="uniqueItems"):
        JsonSchema(beside)
    contained = {"type": "array", "uniqueItems": True, "items": wide,
                 "contains": {"pattern": "^[ac]$"}}
    with pytest.raises(SchemaError, match="uniqueItems"):
        JsonSchema(contained)
    alone = JsonSchema({"type": "array", "uniqueItems": True, "items": {"anyOf": [wide]}})
    assert alone.matches('["","a","c","d","e"]')
    assert not alone.matches('["","a","c","d","e","f","', partial=True)
