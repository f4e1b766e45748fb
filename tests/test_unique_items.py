"""uniqueItems over items of any kind: the canonical form that decides equality, agreement
with jsonschema, and masks equal to brute force (repeats refused at their last byte)."""

from __future__ import annotations

import itertools
import json
import random
import warnings

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pse import JsonSchema, StructuringEngine, Vocabulary
from pse._core.stepper import consume_tokens
from pse._core.canonical import canonical_text
from pse.json_spelling import MANY_VALUES, json_char_class, quoted, string_values
from pse.regex import compile_regex
from pse.errors import SchemaError
from conftest import shared_vocab
from test_engine import brute_force, check_along, mask_ids
from json_schema_helpers import generate

UNIQUE = jsonschema.Draft202012Validator({"uniqueItems": True})

SCALARS = (st.none() | st.booleans() | st.integers(-3, 12)
           | st.sampled_from([0.5, 1.0, -0.0, 2.5, 100.0, 1e-7, 12.0])
           | st.text("ab\"\\é\n", max_size=3))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text("ab", max_size=2), inner, max_size=3),
                      max_leaves=6)


def spell(value, rng: random.Random) -> str:
    """One of the many JSON spellings of `value`: key order, escapes, whitespace, and numbers
    written with a fraction or an exponent."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return "{" + ",".join(json.dumps(k, ensure_ascii=rng.random() < 0.5)
                              + rng.choice([":", " : "]) + spell(v, rng) for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + rng.choice([",", " , "]).join(spell(v, rng) for v in value) + "]"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value, ensure_ascii=rng.random() < 0.5)
    if value == int(value):  # integral: 3, 3.0, 3.00, 30e-1, 0.3E1
        n = int(value)
        return rng.choice([str(n), f"{n}.0", f"{n}.00", f"{n}0e-1", f"{n}E0"])
    return json.dumps(value)


@settings(max_examples=400, deadline=None)
@given(VALUES, VALUES, st.integers(0, 1000))
def test_canonical_forms_are_equal_exactly_for_equal_values(a, b, seed):
    rng = random.Random(seed)
    equal = not UNIQUE.is_valid([a, b])
    ka = canonical_text(spell(a, rng).encode())
    kb = canonical_text(spell(b, rng).encode())
    assert ka is not None and kb is not None
    assert (ka == kb) == equal, (a, b, ka, kb)


def test_canonical_form_of_strings_and_numbers():
    assert canonical_text(b'"\\u0061\\/\\""') == canonical_text('"a/\\""'.encode())
    assert canonical_text(b'"\\ud83d\\ude00"') == canonical_text('"\U0001f600"'.encode())
    assert canonical_text(b'"\\ud83d"') != canonical_text(b'"\\ud83e"')
    assert canonical_text(b"10e-1") == canonical_text(b"1.000") == canonical_text(b"1")
    assert canonical_text(b"-0.0") == canonical_text(b"0")
    assert canonical_text(b"1e400") != canonical_text(b"1e401")
    assert canonical_text(b" [ ] ") == b"[]"
    assert canonical_text(b"  ") == b""
    assert canonical_text(b"[1,") is None


SCHEMAS = [
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "number"}, "uniqueItems": True, "maxItems": 3},
    {"type": "array", "items": {"type": "object"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "array", "items": {"type": "number"}},
     "uniqueItems": True, "minItems": 2},
    {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]},
     "uniqueItems": True},
    {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"},
     "uniqueItems": True},
    {"type": "array", "items": {"type": "string"}, "contains": {"const": "a"},
     "uniqueItems": True},
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "maxItems": 300},
    {"type": "array", "uniqueItems": True,
     "items": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
    {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "number"}},
                                "required": ["a"]}, "uniqueItems": True},
    {"uniqueItems": True},
    {"prefixItems": [{"type": "boolean"}, {"type": "boolean"}], "items": False,
     "uniqueItems": True},
    # literals of one type, through a $ref: key bits
    {"type": "array", "items": {"$ref": "#/$defs/e"}, "uniqueItems": True,
     "$defs": {"e": {"type": "string", "enum": ["a", "b", "é", 1]}}},
    # literals through unions: anyOf takes every branch's, oneOf those of exactly one
    {"type": "array", "items": {"type": "string", "oneOf": [{"enum": ["a", "b"]},
                                                           {"enum": ["b", "é", 1]}]},
     "uniqueItems": True},
    {"type": "array", "items": {"anyOf": [{"const": "a"}, {"enum": [1, 2, "a"]}]},
     "uniqueItems": True, "minItems": 1},
    # a pattern whose every prefix goes on to infinitely many strings
    {"type": "array", "items": {"type": "string", "pattern": "^[ab]+$"}, "uniqueItems": True},
]
POOL = ["a", "b", "é", 'a"', 1, 1.0, 2, 0.5, -0.0, 0, [], ["a"], ["a", "a"], [1, 2], [2, 1],
        [1.0, 2], {}, {"a": 1}, {"a": 1.0, "b": "x"}, {"b": "x", "a": 1}, True, None]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(POOL), max_size=4), st.booleans())
def test_unique_arrays_agree_with_jsonschema(schema, value, flexible):
    machine = _machine(schema, flexible)
    text = json.dumps(value, separators=(", ", ": ") if flexible else (",", ":"),
                      ensure_ascii=False)
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert machine.matches(text) == expected, (schema, text)


def _machine(schema: dict, flexible: bool, cache: dict = {}) -> JsonSchema:
    """strict=False with whitespace: objects and arrays as items could then reach a dead end
    (refused in strict mode), but the language is the same."""
    key = (json.dumps(schema), flexible)
    if key not in cache:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cache[key] = JsonSchema(schema, property_order="any", strict=not flexible,
                                    whitespace=2 if flexible else None)
    return cache[key]


def test_a_repeat_is_refused_at_its_last_byte():
    m = JsonSchema({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    assert m.matches('["ab","a', partial=True)
    assert not m.matches('["ab","ab"', partial=True)
    m = JsonSchema({"type": "array", "items": {"type": "object"}, "uniqueItems": True},
                   property_order="any")
    assert not m.matches('[{"a":1,"b":2},{"b":2,"a":1}', partial=True)
    # a number can still grow: refused at the comma
    m = JsonSchema({"type": "array", "items": {"type": "number"}, "uniqueItems": True})
    assert m.matches("[12,12", partial=True)
    assert not m.matches("[12,12,", partial=True)


def test_items_that_can_run_out_of_new_values_are_refused_in_strict_mode():
    for items in ({"type": "integer"}, {"type": "string", "maxLength": 3},
                  {"type": "object", "additionalProperties": False},
                  {"enum": list(range(100))}, {"type": "number", "maximum": 10},
                  {"type": "array", "items": {"type": "null"}, "uniqueItems": True},
                  # a maxLength past what is unrolled: counted, not a string terminal
                  {"type": "string", "pattern": "^[ab]*$", "maxLength": 100}):
        with pytest.raises(SchemaError, match="uniqueItems"):
            JsonSchema({"type": "array", "items": items, "uniqueItems": True})
    # with whitespace, "{" and blanks may leave only "}"
    with pytest.raises(SchemaError, match="uniqueItems"):
        JsonSchema({"type": "array", "items": {"type": "object"}, "uniqueItems": True},
                   whitespace=2)
    with pytest.warns(UserWarning, match="uniqueItems"):
        m = JsonSchema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
                       strict=False)
    assert m.matches("[1,2]") and not m.matches("[1,1.0]")


def _arrays(values: list, most: int | None, spaced: bool = False, lead: list = ()) -> list[str]:
    """Every array of distinct `values` (at most `most`), compact, as json.dumps spells it;
    `spaced`: with or without a blank after each comma too; `lead`: these values first
    (and the empty array)."""
    out = ["[]"] if lead else []
    for k in range(len(values) + 1 if most is None else min(most, len(values)) + 1):
        for seq in itertools.permutations(values, k):
            items = [json.dumps(v, ensure_ascii=False) for v in [*lead, *seq]]
            for seps in itertools.product([",", ", "] if spaced else [","],
                                          repeat=max(len(items) - 1, 0)):
                out.append("[" + "".join(a + b for a, b in zip(items, seps + ("",))) + "]")
    return out


# string items of a few values (the second: every one of them), each a terminal whose states
# count the strings they complete to
COUNTED_STRINGS = [
    ({"type": "string", "pattern": "^(a|b|ab)$"}, ["a", "b", "ab"], None),
    ({"type": "string", "pattern": "^[ab]{1,2}$"}, ["a", "b", "aa", "ab", "ba", "bb"], 4),
    ({"type": "string", "pattern": "^[ab]*$", "maxLength": 1}, ["", "a", "b"], None),
    ({"type": "string", "pattern": "^[12]x$", "maxLength": 2}, ["1x", "2x"], None),
    ({"enum": ["a", "ab", "a/b", "\n", 'b"']}, ["a", "ab", "a/b", "\n", 'b"'], None),
    ({"type": "string", "enum": ["b", "ba", "x", 1], "$comment": "typed"}, ["b", "ba", "x"],
     None),
    ({"anyOf": [{"type": "string", "pattern": "^a$"}, {"type": "string", "pattern": "^(a|b)$"}]},
     ["a", "b"], None),
]


@pytest.mark.parametrize("lead", [False, True])
@pytest.mark.parametrize("spaced", [False, True])
@pytest.mark.parametrize("items, values, most", COUNTED_STRINGS, ids=range(len(COUNTED_STRINGS)))
def test_string_items_that_run_out_leave_no_dead_end(items, values, most, spaced, lead):
    """A prefix is taken exactly when some array of distinct items begins with it: brute force
    over every such array, and every prefix of one followed by any byte (with whitespace,
    a blank only after a comma: the arrays are spelled with those alone). With `lead`, a
    first item "z" of its own (prefixItems): so a few literals are not key bits
    (unique_literals) but strings counted like the others."""
    schema = {"type": "array", "items": items, "uniqueItems": True}
    if most is not None:
        schema["maxItems"] = most + lead
    if lead:
        schema["prefixItems"] = [{"const": "z"}]
    m = JsonSchema(schema, whitespace=1 if spaced else None)
    arrays = _arrays(values, most, spaced, ["z"] if lead else [])
    prefixes = {a[:i] for a in arrays for i in range(len(a) + 1)}
    alphabet = sorted(set("".join(arrays)) | set("\\u0/ "))
    for p in sorted(prefixes | {q + ch for q in prefixes for ch in alphabet
                                if not spaced or ch != " " or q.endswith(",")}):
        assert m.matches(p, partial=True) == (p in prefixes), p
    assert all(m.matches(a) for a in arrays)


@pytest.mark.parametrize("pattern", ["^(a|b|ab)$", "^[ab]{1,3}$", "^(a/b|\\n|\\\\|é|\"x)$",
                                     "^[\\x00-\\x03/é]{0,2}$", "^a+$", "^a[0-9]*b?$"])
def test_string_values_count_strings_not_spellings(pattern):
    """string_values against brute force: every spelling of every completion of a shortest
    prefix reaching each state, told apart by the string json.loads reads."""
    dfa = quoted(compile_regex(pattern, 0, search=True, char_class=json_char_class, ecma=True))
    values = string_values(dfa)
    assert values is not None
    dense = dfa.dense()
    prefix = {0: b""}
    todo = [0]
    while todo:  # a shortest spelling to each state
        s = todo.pop(0)
        for b in np.flatnonzero(dense[s] >= 0).tolist():
            t = int(dense[s, b])
            if t not in prefix:
                prefix[t] = prefix[s] + bytes([b])
                todo.append(t)
    for s, spelled in prefix.items():
        if s == 0:
            continue
        found, stack, infinite = set(), [(s, b"")], False
        while stack:
            t, rest = stack.pop()
            if len(rest) > 24:
                infinite = True
                break
            if dfa.accept[t]:
                found.add(json.loads(spelled + rest))
            stack += [(int(dense[t, b]), rest + bytes([b]))
                      for b in np.flatnonzero(dense[t] >= 0).tolist()]
        if infinite:
            assert values[s] == MANY_VALUES, (pattern, spelled)
        elif values[s] != 0:  # (0: inside an escape, the core searches on)
            assert values[s] == len(found), (pattern, spelled, found)


def test_string_items_in_any_spelling_run_out():
    m = JsonSchema({"type": "array", "items": {"type": "string", "pattern": "^(a/b|\\n|x)$"},
                    "uniqueItems": True})
    # "a\/b" is "a/b"; "\u000A" is "\n": each a repeat however it is spelled
    for seen, prefix in (('"a/b"', '"a\\/'), ('"a\\/b"', '"a/'), ('"\\n"', '"\\u000'),
                         ('"\\u000a"', '"\\'), ('"\\n","x"', '"\\')):
        assert not m.matches(f"[{seen},{prefix}", partial=True), (seen, prefix)
    assert m.matches('["\\n",', partial=True) and m.matches('["a/b","\\u000A"]')
    assert not m.matches('["\\n","x","a/b",', partial=True)
    # a union with an item of another kind: the comma stays open for it
    m = JsonSchema({"type": "array", "uniqueItems": True, "items": {
        "anyOf": [{"enum": ["a"]}, {"type": "object"}]}})
    assert m.matches('["a",', partial=True) and not m.matches('["a","', partial=True)


def test_patterns_and_formats_that_run_out_compile_and_refuse_the_repeat_early():
    # "1x" has nothing left to choose but the closing quote; a date's last digit may be all
    # that is left to choose
    m = JsonSchema({"type": "array", "items": {"type": "string", "pattern": "^[0-9]+x$"},
                    "uniqueItems": True})
    assert m.matches('["1x","1', partial=True) and not m.matches('["1x","1x', partial=True)
    assert m.matches('["1x","11x"]')
    m = JsonSchema({"type": "array", "items": {"type": "string", "format": "date"},
                    "uniqueItems": True})
    assert not m.matches('["2024-01-01","2024-01-01', partial=True)
    assert m.matches('["2024-01-01","2024-01-02"]')


def test_the_search_for_a_new_string_is_not_one_per_spelling():
    # "/" is spelled "/" or "\\/": 2**64 spellings of the one string, searched as one
    m = JsonSchema({"type": "array", "uniqueItems": True,
                    "items": {"type": "string", "pattern": "^/{64}$"}})
    assert not m.matches('["' + "/" * 64 + '",', partial=True)
    assert m.matches('["' + "\\/" * 64 + '"]')


def test_literals_beside_strings_that_run_out_leave_no_dead_end():
    # true, false and null run out as well: a comma is taken only where a new item follows
    for schema, full in (
            ({"type": "array", "uniqueItems": True, "items": {
                "anyOf": [{"type": "string", "pattern": "^a$"}, {"type": "boolean"}]}},
             '["a",true,false'),
            ({"type": "array", "prefixItems": [{}], "items": {"type": "boolean"},
              "uniqueItems": True}, "[1,true,false"),
            ({"type": "array", "items": {"type": ["boolean", "null"]}, "uniqueItems": True,
              "prefixItems": [{"type": "number"}]}, "[1,true,null,false")):
        m = JsonSchema(schema)
        assert m.matches(full + "]") and not m.matches(full + ",", partial=True)
        assert m.matches(full[:full.rindex(",") + 1], partial=True)


def test_unique_arrays_of_items_with_few_values_need_room_for_min_items():
    def array(items, **more):
        return {"type": "array", "items": items, "uniqueItems": True, **more}
    pattern = {"type": "string", "pattern": "^(a|b)$"}
    # two strings cannot fill three places: nothing is valid
    assert JsonSchema({"properties": {"x": array(pattern, minItems=3)}}).matches("{}")
    assert not JsonSchema({"properties": {"x": array(pattern, minItems=3)}}).matches(
        '{"x":[', partial=True)
    m = JsonSchema(array(pattern, minItems=2))
    assert m.matches('["b","a"]') and not m.matches('["a"]')
    # strings and booleans are apart: three values
    both = {"anyOf": [{"type": "string", "pattern": "^a$"}, {"type": "boolean"}]}
    assert JsonSchema(array(both, minItems=3)).matches('[false,"a",true]')
    with pytest.raises(SchemaError, match="nothing is valid"):
        JsonSchema(array(both, minItems=4))
    # where the count is not known, or prefixItems take some of the values: refused
    overlap = {"anyOf": [{"type": "string", "pattern": "^a$"},
                         {"type": "string", "pattern": "^(a|b)$"}]}
    for schema in (array(overlap, minItems=3),
                   array({"pattern": "^a$", "type": "string"}, minItems=2,
                         prefixItems=[pattern])):
        with pytest.raises(SchemaError, match="minItems"):
            JsonSchema(schema)


def test_what_few_values_may_count_is_not_overstated():
    """Schemas whose items have fewer values than they seem to: refused, never a dead end.
    (A union branch's keywords beside the union's; oneOf leaves out what branches share;
    contains counts items that could run out first.)"""
    def array(items, **more):
        return {"type": "array", "items": items, "uniqueItems": True, **more}
    for schema in (
            array({"type": "string", "anyOf": [{"type": "null"},
                                               {"type": "string", "pattern": "^a$"}]},
                  minItems=2),
            array({"oneOf": [{"type": "string", "pattern": "^(a|b)$"},
                             {"type": "string", "pattern": "^b$"}]}, minItems=2),
            array({"type": "string", "pattern": "^(a|b|c)$"}, contains={"enum": ["a", "b"]},
                  minContains=3),
            # (older) only 1.0... can follow 1, a repeat: the branch's type is not the item's
            array({"type": "integer", "anyOf": [{"type": "number"}]})):
        with pytest.raises(SchemaError):
            JsonSchema(schema)
    # properties beside a union of open objects' properties: still open objects
    m = JsonSchema(array({"type": "object", "properties": {"a": {}},
                          "anyOf": [{"properties": {"b": {}}}, {"properties": {"c": {}}}]}))
    assert m.matches('[{},{"a":1}]') and not m.matches('[{},{}]')


def test_unique_arrays_of_unique_arrays_of_few_strings_are_refused():
    # [[], ["a"]] holds every such array: a dead end after the comma
    for items in ({"type": "string", "pattern": "^a$"}, {"enum": ["a"]}):
        with pytest.raises(SchemaError, match="uniqueItems"):
            JsonSchema({"type": "array", "uniqueItems": True,
                        "items": {"type": "array", "uniqueItems": True, "items": items}})


def test_a_string_schema_used_inside_and_outside_a_unique_array():
    """The machines of a referenced string are kept apart: whole inside the unique array
    (counted), quotes around shared contents elsewhere, whichever is compiled first."""
    props = {"one": {"$ref": "#/$defs/s"},
             "many": {"type": "array", "items": {"$ref": "#/$defs/s"}, "uniqueItems": True}}
    for names in (["one", "many"], ["many", "one"]):
        m = JsonSchema({"$defs": {"s": {"type": "string", "pattern": "^(a|b)$"}},
                        "type": "object", "properties": {n: props[n] for n in names}})
        one = '"one":"a"' if names[0] == "one" else ""
        lead = "{" + one + ("," if one else "")
        assert m.matches(lead + '"many":["b","', partial=True)
        assert not m.matches(lead + '"many":["a","b",', partial=True)
        assert m.matches(lead + '"many":["a","b"]' + ("" if one else ',"one":"b"') + "}")


def test_string_items_that_run_out_generate_without_dead_ends():
    vocab = shared_vocab("llama3")
    for items, values, _ in COUNTED_STRINGS:
        schema = {"type": "array", "items": items, "uniqueItems": True,
                  "minItems": len(values) - 1}
        engine = StructuringEngine(vocab)
        engine.configure(JsonSchema(schema))
        rng = random.Random(0)
        for _ in range(6):
            engine.reset()
            text = generate(engine, rng)  # (asserts that no mask is empty)
            if text is not None:
                jsonschema.validate(json.loads(text), schema)


def test_values_with_one_spelling_of_their_own_are_refused_early():
    m = JsonSchema({"type": "array", "uniqueItems": True})
    # a zero with an exponent is 0 however the exponent goes on
    assert not m.matches("[0,0e", partial=True) and not m.matches("[0,-0.0E+", partial=True)
    assert m.matches("[1,0e", partial=True) and m.matches("[0,1e", partial=True)
    # of two members with one key the last counts; an exponent beyond 10^15 is refused
    assert not m.matches('[{"a":1,"a":2},{"a":2}]') and m.matches('[{"a":1,"a":2},{"a":1}]')
    assert not m.matches("[10e1000000000,1e1000000001]")
    assert not m.matches("[1e10000000000000000]")


def test_steppers_with_different_texts_are_refused_not_read_past():
    m = JsonSchema({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    longer = consume_tokens(m.get_steppers(), ['["x","abcdefghij'])[0]
    assert consume_tokens([m.get_steppers()[0], longer], ['"']) == []


def test_a_literal_repeat_is_refused_at_its_first_byte():
    m = JsonSchema({"type": "array", "uniqueItems": True})
    assert m.matches("[1,true]") and not m.matches("[1,1.0]") and not m.matches("[{},{}]")
    assert m.matches("[true,f", partial=True) and not m.matches("[true,t", partial=True)
    assert not m.matches('[null,{"a":[1]},n', partial=True)
    assert m.matches('[{"a":true},{"a":t', partial=True)  # "}" could still be ",..."


# --- masks -----------------------------------------------------------------------------------

def _vocab() -> Vocabulary:
    tokens = ["[", "]", ",", '"', "a", "b", "1", ".", "0", "{", "}", ":", " ", '"a"', 'a"',
              '",', '"]', '","', '"a",', 'b"', '"b', "1,", "1]", "]]", "[[", "],", "0]",
              '"a":', ', "', "t", "true", "tr", "ue", "null", "n", "f", "false", ",t", "e]", "r", "u", "e", "l", "s"]
    return Vocabulary.from_tokens(tokens + ["<eos>"], eos_token_ids=[len(tokens)],
                                  special_token_ids=[len(tokens)])


VOCAB = _vocab()
MASK_SCHEMAS = [
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "number"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "array", "items": {"type": "string"}},
     "uniqueItems": True},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"},
                                            "uniqueItems": True}}},
    {"type": "array", "items": {"type": "object"}, "uniqueItems": True},
    {"type": "array", "uniqueItems": True},
    {"type": "array", "items": {"type": ["boolean", "null", "string"]}, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "pattern": "^a[ab]*$"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "enum": ["a", "b", 1]}, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "pattern": "^(a|b|ab|aab)$"},
     "uniqueItems": True},
]


@pytest.mark.parametrize("schema", MASK_SCHEMAS, ids=range(len(MASK_SCHEMAS)))
@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False), st.booleans())
def test_masks_equal_brute_force_along_random_paths(schema, rng, flexible):
    engine = StructuringEngine(VOCAB)
    try:
        machine = JsonSchema(schema, property_order="any", whitespace=2 if flexible else None)
    except SchemaError:  # objects and arrays as items with whitespace: see _machine
        machine = JsonSchema(schema, property_order="any")
    engine.configure(machine)
    steps = 0
    for _ in range(14):
        got = mask_ids(engine)
        assert got == brute_force(engine)
        assert got, "an empty mask while the structure is incomplete"
        choice = rng.choice(sorted(got))
        if choice in VOCAB.eos_token_ids:
            break
        assert engine.consume_token(choice) is not None
        steps += 1
    # roll back, and the masks are those of the shorter text again
    for _ in range(steps):
        engine.rollback(1)
        assert mask_ids(engine) == brute_force(engine)


def test_listed_arrays_and_objects_take_their_numbers_in_any_decimal_spelling():
    """Items drawn from listed values: a number inside a listed array or object is matched in
    every decimal spelling of its value, as outside a unique array ([1] is [1.0]); a repeat
    in another spelling is refused. (Exponents are not taken, here as anywhere for listed
    numbers.)"""
    items = {"enum": [[1.0], 2, {"a": [1.5, True]}, 3.0, ["x"]]}
    schema = {"type": "array", "uniqueItems": True, "items": items}
    m = JsonSchema(schema)
    for text in ("[[1]]", "[[1.0]]", "[[1],[1.0]]", "[2,[1.00]]", '[{"a":[1.50,true]}]',
                 '[{"a":[1.5,true]},3,["x"]]', "[3,3.0]", "[[2]]", '[{"a":[1.5]}]', "[]"):
        expected = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
        assert m.matches(text) == expected, text
        assert JsonSchema({"type": "array", "items": items}).matches(text) == (
            jsonschema.Draft202012Validator({"type": "array", "items": items}).is_valid(
                json.loads(text))), text
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(m)
    check_along(engine, llama.encode('[[1.0],{"a":[1.50,true]},2]'))
    assert engine.is_accepting()


def test_counted_integer_matches_leave_no_dead_end():
    """Three integers for minContains 3: after [1,2, only 3 (or an item that does not match)
    goes on, and the masks say so (brute force)."""
    llama = shared_vocab("llama3")
    schema = {"type": "array", "uniqueItems": True, "items": True,
              "contains": {"type": "integer", "minimum": 1, "maximum": 3}, "minContains": 3}
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema(schema))
    for text in ('[1,2,3]', '[2,1.0,"x",3]', '[3,2,[1],1]'):
        engine.reset()
        check_along(engine, llama.encode(text))
        assert engine.is_accepting()


def test_masks_equal_brute_force_llama3():
    llama = shared_vocab("llama3")
    schema = {"type": "object", "properties": {"tags": {
        "type": "array", "items": {"type": "string"}, "uniqueItems": True}}}
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema(schema))
    check_along(engine, llama.encode('{"tags":["red","blue","reds","b\\u006cue2"]}'), every=3)
    engine.reset()
    for tid in llama.encode('{"tags":["red","blue","red'):
        assert engine.consume_token(tid) is not None
    allowed = mask_ids(engine)
    assert allowed == brute_force(engine)
    closing = {i for i in range(llama.size) if llama.has_token(i)
               and llama.token_bytes(i).startswith(b'"')}
    assert closing and not allowed & closing  # each would end a second "red"
    assert llama.encode("s")[0] in allowed


def test_parses_that_agree_on_the_items_merge():
    # each item parses two ways (either branch): the seen sets are one, so the live states
    # stay few instead of doubling with each item
    m = JsonSchema({"type": "array", "uniqueItems": True, "items": {"anyOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {"b": {"type": "number"}}}]}})
    text = "[" + ",".join(f'{{"x{i}":1}}' for i in range(14)) + "]"
    assert m.matches(text)
    live = consume_tokens(m.get_steppers(), [text[:-1]])
    assert 0 < len(live) <= 4


def test_contains_beside_unique_items_needs_as_many_different_matches():
    """Two values cannot fill minContains 3 of items all different: nothing is valid (it
    was a dead end after "["). Where the matches' values are counted only from below, refused
    in strict mode. Strings, literals and bounded integers are counted."""
    base = {"type": "array", "uniqueItems": True, "items": {"type": "string"},
            "contains": {"enum": ["a", "b"]}}
    with pytest.raises(SchemaError, match="nothing is valid"):
        JsonSchema({**base, "minContains": 3})
    two = {**base, "minContains": 2}
    m = JsonSchema(two)
    for value in (["b", "x", "a"], ["a", "b"], ["a", "a"], ["a", "x"], []):
        text = json.dumps(value, separators=(",", ":"))
        assert m.matches(text) == jsonschema.Draft202012Validator(two).is_valid(value), value
    overlapping = {**base, "contains": {"anyOf": [{"const": "a"}, {"pattern": "^(a|b)$"}]},
                   "minContains": 3}
    with pytest.raises(SchemaError, match="minContains"):
        JsonSchema(overlapping)
    # integers between bounds: as many values as the range holds (1 and 1.0 are one)
    ints = {"type": "array", "uniqueItems": True, "items": True,
            "contains": {"type": "integer", "minimum": 1, "exclusiveMaximum": 3}}
    with pytest.raises(SchemaError, match="nothing is valid"):
        JsonSchema({**ints, "minContains": 3})  # (it was a dead end after "[1,2,")
    two = {**ints, "minContains": 2}
    m = JsonSchema(two)
    for value in ([1, 2], [1, 1.0], [2, "x", 1], [1, "x"], [1.0, 2], [2.0, 3, 1], [], [0, 1]):
        text = json.dumps(value, separators=(",", ":"))
        assert m.matches(text) == jsonschema.Draft202012Validator(two).is_valid(value), value
    # literals of any kind: as many values as the distinct ones listed that the schema
    # allows; integers of a range: as many as it holds, those the schema allows
    for contains, n in [({"enum": [1, 1.0, 2]}, 2), ({"enum": [True, False, None]}, 3),
                        ({"const": {"a": [1]}}, 1), ({"enum": ["a", 1, [1], {}]}, 4),
                        ({"type": "integer", "enum": [1, 2.5, "a", 3]}, 2),
                        ({"enum": [1, 2, 3], "maximum": 2}, 2), ({"const": 1, "enum": [1, 2]}, 1),
                        ({"type": "integer", "minimum": 1, "maximum": 6, "multipleOf": 2}, 3),
                        ({"type": "integer", "minimum": 0.5, "exclusiveMaximum": 3}, 2)]:
        counted = {"type": "array", "uniqueItems": True, "items": True, "contains": contains}
        with pytest.raises(SchemaError, match="nothing is valid"):
            JsonSchema({**counted, "minContains": n + 1})
        m = JsonSchema({**counted, "minContains": n})
        for value in ([1, 2, 1.0], [True, None, False], [{"a": [1]}], ["a", 1, [1], {}],
                      [2, "x", 1], [1, True], [3, 1], [4, 2, 6], [2.0, 1]):
            text = json.dumps(value, separators=(",", ":"))
            assert m.matches(text) == jsonschema.Draft202012Validator(
                {**counted, "minContains": n}).is_valid(value), (contains, value)
    # where the matches are not counted at all, as before: compiled
    for items, contains in [(True, {"type": "integer", "minimum": 0}),
                            ({"type": "number"}, {"minimum": 5})]:
        JsonSchema({"type": "array", "uniqueItems": True, "items": items,
                    "contains": contains})
