"""JSON Schema strings: lengths counted in characters, patterns (lookaheads, anchors), formats."""

from __future__ import annotations

import json
import warnings

import jsonschema
import pytest

from json_schema_helpers import compact
from pse import JsonSchema, SchemaError


def test_large_max_length_is_counted():
    m = JsonSchema({"type": "string", "maxLength": 1_000_000})
    # a count, not states: as many as a string without a bound
    assert m.compile().n_dfa_states == JsonSchema({"type": "string"}).compile().n_dfa_states
    assert m.matches('"' + "x" * 5000 + '"')


def test_unicode_and_escapes_count_as_one_character():
    m = JsonSchema({"type": "string", "minLength": 2, "maxLength": 2})
    for text, ok in [('"é🎉"', True), ('"\\n\\u00e9"', True), ('"a"', False), ('"abc"', False)]:
        assert m.matches(text) == ok, text


def test_a_surrogate_pair_counts_as_one_character():
    """As in the decoded string (jsonschema counts code points): the escapes of one code point
    beyond U+FFFF are one character; a surrogate outside a pair is no character at all."""
    for lo, hi in [(1, 1), (2, 2), (0, 1), (2, None)]:
        schema = {"type": "string", "minLength": lo}
        if hi is not None:
            schema["maxLength"] = hi
        m = JsonSchema(schema)
        for text in ['"\\ud83d\\ude00"', '"\\uD83D\\uDE00x"', '"\\ud7ff\\ue000"', '"😀"']:
            expected = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
            assert m.matches(text) == expected, (schema, text)
    for lone in ['"\\ud83d"', '"\\ude00"', '"\\ud83dx"', '"\\ude00\\ud83d"']:
        assert not JsonSchema({"type": "string"}).matches(lone), lone


def test_pattern_is_a_search_and_spelled_as_json():
    m = JsonSchema({"type": "string", "pattern": 'a"b'})
    assert m.matches('"xxa\\"byy"') and not m.matches('"ab"')
    anchored = JsonSchema({"type": "string", "pattern": "^a+$"})
    assert anchored.matches('"aaa"') and not anchored.matches('"baaa"')


@pytest.mark.parametrize("schema", [
    # lookaheads at the start of an anchored pattern (keywords, reserved prefixes)
    {"type": "string", "pattern": "^(?!(?:if|in)$)[a-z_][a-z0-9_]*$"},
    {"type": "string", "pattern": "^(?!x\\.|y\\.)(?=.{0,4}$)"},
    {"propertyNames": {"pattern": "^(?!_)"}, "patternProperties": {"^(?=a)": {"type": "integer"}}},
    # anchors inside: each path segment "..", a name, or the end
    {"type": "string", "pattern": "^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$"},
    {"type": "string", "pattern": "(^|_)(a|b|x|in|if)(_|$)"},  # (past MAX_ALTERNATIVES)
    # two patterns merged by allOf: each found somewhere
    {"type": "string", "allOf": [{"pattern": "a"}, {"pattern": "^[^x]"}, {"pattern": "b$"}]},
    {"type": "string", "allOf": [{"pattern": "^(?!a)"}, {"pattern": "^(?=.b)"}]},
])
def test_lookaheads_and_inner_anchors_against_jsonschema(schema):
    import itertools

    machine = JsonSchema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)
    texts = ["".join(t) for n in range(6) for t in itertools.product(
        ["a", "b", "x", "_", "/", ".", "in", "if"], repeat=min(n, 3))][:3000]
    values = texts + [{t: 1} for t in texts[:300]] + [{"a": "s"}, {"_a": 1, "b": 2}]
    for value in values:
        assert machine.matches(compact(value)) == validator.is_valid(value), value


def test_a_pattern_counting_words_stays_under_the_state_limit():
    """Large classes (\\S, \\s, with their JSON escapes) are deterministic pieces, so that
    this subset construction tracks one state per character (it went past MAX_DFA_STATES)."""
    import re

    pattern = "^$|(^(?:\\S+\\s+){0,99}\\S+$)"
    machine = JsonSchema({"type": "string", "pattern": pattern})
    for text in ["", "one", "a b", "a  b ", " a", "é\tx", " ".join(["w"] * 100),
                 " ".join(["w"] * 101)]:
        assert machine.matches(json.dumps(text, ensure_ascii=False)) == bool(
            re.search(pattern, text)), text


def test_a_lookahead_not_at_the_start_is_refused_by_name():
    with pytest.raises(SchemaError, match="lookaround"):
        JsonSchema({"type": "string", "pattern": "(?!a)b"})  # (a search: no start to hold at)
    # merged, this one's lookahead would not be at the start: not merged, and said so
    with pytest.raises(SchemaError, match="allOf/1: pattern: conflicting values"):
        JsonSchema({"type": "string", "allOf": [{"pattern": "^(?!a)|b"}, {"pattern": "c"}]})


@pytest.mark.parametrize("pattern", [r"\bfoo", r"foo\b", r"a\Bb"])
def test_word_boundaries_are_refused_by_name(pattern):
    with pytest.raises(SchemaError, match=r"word boundaries \(\\b, \\B\) are not supported"):
        JsonSchema({"type": "string", "pattern": pattern})


def test_standard_formats_no_automaton_checks_are_refused():
    with pytest.raises(SchemaError, match="regex"):
        JsonSchema({"type": "string", "format": "regex"})


def test_hostname_has_at_most_253_characters():
    """RFC 1034/1123: a host name is at most 253 characters, counted as maxLength is (a
    smaller maxLength beside it holds); its opposite (`not`) takes the longer ones; as a key
    name the bound is one no key automaton counts: refused by name."""
    name = ".".join(["a" * 63] * 4)  # 255 characters, labels of 63
    assert len(name[:253]) == 253 and not name[:253].endswith(".")
    m = JsonSchema({"type": "string", "format": "hostname"})
    assert m.matches(json.dumps(name[:253])) and not m.matches(json.dumps(name[:254]))
    m = JsonSchema({"type": "string", "format": "hostname", "maxLength": 10})
    assert m.matches('"abcdefghij"') and not m.matches('"abcdefghijk"')
    m = JsonSchema({"type": "string", "not": {"format": "hostname"}})
    assert m.matches(json.dumps(name[:254])) and m.matches('"-x"') and not m.matches('"ab"')
    with pytest.raises(SchemaError, match="propertyNames: maxLength"):
        JsonSchema({"type": "object", "propertyNames": {"format": "hostname"}})


def test_unknown_format_is_ignored_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = JsonSchema({"type": "string", "format": "colour"})
    assert any("colour" in str(w.message) for w in caught)
    assert m.matches('"anything"')
