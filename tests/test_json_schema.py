"""JsonSchema in general: agreement, bad schemas, the engine, limits, generations, whitespace."""

from __future__ import annotations

import itertools
import json
import warnings

import jsonschema
import numpy as np
import pytest

from conftest import shared_vocab
from json_schema_helpers import INSTANCES, SCHEMAS, assert_generations_validate, compact
from pse import JsonSchema, SchemaError, StructuringEngine, Vocabulary


# objects open to any key: agreement only (random generations of them seldom close in time)
OPEN_OBJECTS = [
    {"type": "object"},
    {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "minProperties": 1},
]


@pytest.mark.parametrize("schema", SCHEMAS + OPEN_OBJECTS,
                         ids=range(len(SCHEMAS) + len(OPEN_OBJECTS)))
def test_agrees_with_jsonschema(schema):
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema,
                                                format_checker=jsonschema.FormatChecker())
    for value in INSTANCES:
        expected = validator.is_valid(value)
        assert machine.matches(compact(value)) == expected, (schema, value)


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


def test_schema_from_text_and_bad_schemas():
    assert JsonSchema('{"type": "integer"}').matches("12")
    with pytest.raises(SchemaError, match="not valid JSON") as raised:
        JsonSchema("{nope")
    assert "pse.Grammar" not in str(raised.value)
    with pytest.raises(SchemaError, match=r"not valid JSON.*pse\.Grammar\(text\) for a Lark"):
        StructuringEngine(Vocabulary.from_tokens(["a", "b"])).configure('start: "a"')
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
    with pytest.raises(SchemaError, match=r"got list"):
        JsonSchema([{"type": "integer"}])
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int

    with pytest.raises(SchemaError, match=r"Point\.model_json_schema\(\)"):
        JsonSchema(Point)


def test_not_strict_approximates_with_a_warning():
    # [] matches both branches, so oneOf rejects it; anyOf, the approximation, does not
    with pytest.warns(UserWarning, match="oneOf"):
        m = JsonSchema({"oneOf": [{"type": "array"}, {"uniqueItems": True}]}, strict=False)
    assert m.matches("[]") and m.warnings


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
    # an anchor (draft 4: an "id" fragment) on an object that loses a keyword: the reference
    # finds the object without it
    ({"$schema": "http://json-schema.org/draft-04/schema#",
      "definitions": {"a": {"id": "#foo", "type": "integer", "const": 3}},
      "properties": {"x": {"$ref": "#foo"}}}, [{"x": 5}, {"x": 3}, {"x": "a"}]),
    ({"$schema": "https://json-schema.org/draft/2019-09/schema",
      "$defs": {"a": {"$anchor": "foo", "type": "array", "prefixItems": [{"type": "string"}]}},
      "properties": {"x": {"$ref": "#foo"}}}, [{"x": [1]}, {"x": ["a"]}, {"x": 3}]),
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


@pytest.mark.parametrize("schema, warned", [
    ({"type": "object", "properties": {"name": {"type": "string", "minLenght": 2}},
      "requried": ["name"]},
     {"#/properties/name/minLenght": "'minLength'", "#/requried": "'required'"}),
    ({"anyof": [{"type": "integer"}], "Maximum": 3, "type:": "string"},
     {"#/anyof": "'anyOf'", "#/Maximum": "'maximum'", "#/type:": "'type'"}),
    ({"type": "integer", "nullable": True}, {"#/nullable": "'type'"}),
    ({"type": "integer", "nullable": False}, {}),  # (what it says is so already)
    # draft 7: a $ref's siblings are ignored, keywords or not
    ({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {
        "type": "string"}}, "$ref": "#/definitions/a", "minLenght": 2}, {}),
    ({"$defs": {"a": {"type": "array", "maxItmes": 1}}, "$ref": "#/$defs/a",
      "additonalProperties": False}, {"#/$defs/a/maxItmes": "'maxItems'",
                                      "#/additonalProperties": "'additionalProperties'"}),
    # keys put out of use, extensions, short or distant ones, annotations: no word
    ({"type": "string", "_format": "date", "//pattern": "^a", "x-order": 1, "form": "x",
      "note": "n", "example": "e", "constraints": 2, "propertiesOrder": ["a"]}, {}),
    # `$` keys near a reference keyword (a maskbench schema has `"items": {"$rel": ...}`)
    ({"type": "array", "items": {"$rel": "#/$defs/s"}, "$defs": {"s": {"type": "string"}}},
     {"#/items/$rel": "'$ref'"}),
    ({"$defs": {"n": {"type": "integer"}}, "anyOf": [{"$Ref": "#/$defs/n"}, {"$reff": "#"},
                                                       {"$dynamicReff": "#"}]},
     {"#/anyOf/0/$Ref": "'$ref'", "#/anyOf/1/$reff": "'$ref'",
      "#/anyOf/2/$dynamicReff": "'$dynamicRef'"}),
    # `$` extensions, and keys as near another `$` keyword (`$def`: `$defs` or `$ref`?)
    ({"type": "string", "$default": "a", "$license": "x", "$$target": 1, "$$ref": "#/a",
      "$def": {}, "$ids": "x"}, {}),
])
def test_misspelled_keywords_warn(schema, warned):
    """A key that is no keyword constrains nothing (as jsonschema reads it); where it likely
    meant a keyword that constrains, a warning names its pointer and the keyword."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        machine = JsonSchema(schema)
    for value in ["ab", "a", 3, 4, None, [1], ["a"], {"name": "a"}, {"name": "ab"}, {}]:
        assert machine.matches(compact(value)) == validator.is_valid(value), value
    texts = [str(w.message) for w in caught if "is not a keyword:" in str(w.message)]
    assert len(texts) == len(warned), texts
    for pointer, meant in warned.items():
        assert any(t.startswith(f"pse: {pointer}: ") and meant in t for t in texts), pointer
    assert sorted(t.removeprefix("pse: ") for t in texts) == sorted(machine.warnings)


def test_a_boolean_exclusive_bound_of_a_later_draft_warns():
    # a bool is no valid exclusiveMaximum after draft 4: read as draft 4 reads it, and said
    for schema, warned in (({"type": "number", "maximum": 3, "exclusiveMaximum": True}, True),
                           ({"$schema": "http://json-schema.org/draft-04/schema#",
                             "type": "number", "maximum": 3, "exclusiveMaximum": True}, False)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            machine = JsonSchema(schema)
        assert machine.matches("2") and not machine.matches("3")
        texts = [str(w.message) for w in caught if "draft 4's" in str(w.message)]
        assert len(texts) == warned, texts
        assert all(t.startswith("pse: #/exclusiveMaximum: ") for t in texts)


def test_a_resource_of_another_draft_inside_a_document_warns():
    inner = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}
    same = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        JsonSchema({"type": "object", "properties": {"a": inner, "b": same}})
    texts = [str(w.message) for w in caught if "another draft" in str(w.message)]
    assert len(texts) == 1 and texts[0].startswith("pse: #/properties/a/$schema: "), texts


def test_one_edit_is_a_damerau_distance_of_one():
    """`_one_edit` against the Damerau (optimal string alignment) distance over short words
    of three letters."""
    from pse.json_schema.common import _one_edit

    def distance(a: str, b: str) -> int:
        d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
                              d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
                if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
        return d[len(a)][len(b)]

    words = ["".join(p) for n in range(1, 5) for p in itertools.product("abc", repeat=n)]
    for a in words:
        for b in words:
            assert _one_edit(a, b) == (distance(a, b) == 1), (a, b)


# --- random generations validate (jsonschema is the oracle) ----------------------------------

@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_generated_values_validate(schema):
    assert_generations_validate(schema, "schema", seed=0)


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


@pytest.mark.parametrize("schema, pointer", [
    ({"properties": {"a": {"minLength": -1}}}, "#/properties/a/minLength: minLength: "),
    ({"allOf": [{}, {"properties": {"a/b": {"maxItems": "x"}}}]},
     "#/allOf/1/properties/a~1b/maxItems: maxItems: "),
    ({"dependencies": {"a": ["b"], "c": {"items": [True, {"type": 3}]}}},
     "#/dependencies/c/items/1/type: type: "),
    ({"$defs": {"x": 3}, "type": "string"}, "#/$defs: $defs: "),
])
def test_a_malformed_keyword_is_named_by_its_pointer(schema, pointer):
    """The document is checked without pointers first; the error still names the place."""
    with pytest.raises(SchemaError) as raised:
        JsonSchema(schema)
    assert str(raised.value).startswith(pointer)


def assert_copied_rules_tables_are_the_general_ones(machine) -> None:
    """The nodes of the shared rules `machine` copies are written from the fragment's rows
    (`_Fragment.node_rows`, in its numbers, mapped to the structure's): the same tables as
    finding each node's entries the general way."""
    from pse import compiler

    tables = []
    for mapped in (True, False):
        c = compiler._Compiler()
        root = c.rule_for(machine)
        c.build_rules()
        assert c.copied  # (the structure copies shared rules: the test compares something)
        if not mapped:
            c.copied = {}
        tables.append(c.tables(root))
    assert tables[0].keys() == tables[1].keys()
    for key, value in tables[0].items():
        other = tables[1][key]
        assert (np.array_equal(value, other) if isinstance(value, np.ndarray)
                else value == other), key


@pytest.mark.parametrize("schema", [
    {}, {"type": "object"}, {"type": "array", "minItems": 1},
    {"type": "object", "properties": {"a": {"type": "object"}}, "required": ["a"]},
    {"anyOf": [{"type": "object", "properties": {"x": {}}},
               {"type": "array", "items": {"type": "object", "maxProperties": 2}}]}])
@pytest.mark.parametrize("whitespace", [None, 2])
def test_copied_any_value_tables_are_the_general_ones(schema, whitespace):
    assert_copied_rules_tables_are_the_general_ones(JsonSchema(schema, whitespace=whitespace))


def test_copied_rules_of_a_shared_grammar_are_the_general_ones():
    """A shared machine of several rules calling each other (the any value is one rule)."""
    from pse import AnyOf, Chain, Forward, Optional, Phrase
    from pse.compiler import share_rules

    a, b = Forward(name="a"), Forward(name="b")
    a.set(AnyOf(Phrase("x"), Chain(Phrase("("), b, Phrase(")"))))
    b.set(AnyOf(Phrase("y"), Chain(Phrase("["), a, Optional(b), Phrase("]"))))
    shared = Forward(name="s")  # (called, not inlined: a rule, copied)
    shared.set(Chain(a, Optional(b), Phrase(";")))
    share_rules(shared)
    machine = Chain(Phrase("<"), shared, Phrase(">"), Optional(shared))
    assert_copied_rules_tables_are_the_general_ones(machine)
    assert machine.matches("<x;>") and machine.matches("<([(y)y])y;>([x]);")
    assert not machine.matches("<x>") and not machine.matches("<(y;>")
