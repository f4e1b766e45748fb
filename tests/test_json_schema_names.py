"""JSON Schema key names: propertyNames, and listed names in every JSON spelling."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, strategies as st

from json_schema_helpers import compact
from pse import JsonSchema
from pse._core.structure import class_cuts
from pse.json_spelling import json_char_class, json_names_dfa, without_names
from pse.regex import compile_regex


_NAME_CHARS = st.sampled_from(["a", "b", "/", '"', "\\", "\n", "\x01", "\u00e9", "\U0001f600"])


@given(st.lists(st.text(_NAME_CHARS, max_size=4), min_size=1, max_size=4),
       st.lists(st.text(_NAME_CHARS, max_size=4), max_size=4))
def test_names_dfa_spells_names_as_json(names, others):
    """The key names automaton (a trie over spellings) is the regex-built one: the same number
    of states (both minimal), the same verdict on every JSON spelling of the names and of
    other strings (escaped slash, \\u escapes, raw text)."""
    import re

    direct = json_names_dfa(names)
    via_regex = compile_regex("|".join(re.escape(n) for n in names), 0, search=False,
                              char_class=json_char_class, ecma=True)
    assert direct.n_states == via_regex.n_states
    for text in names + others:
        for spelled in {json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1],
                        json.dumps(text, ensure_ascii=False)[1:-1].replace("/", "\\/")}:
            data = spelled.encode()
            assert direct.matches(data) == via_regex.matches(data), (names, spelled)
        if text in names:  # the canonical spelling at least
            assert direct.matches(json.dumps(text, ensure_ascii=False)[1:-1].encode())


@pytest.mark.parametrize("order", ["schema", "any"])
@pytest.mark.parametrize("whitespace", [None, 1])
def test_listed_keys_in_every_json_spelling(order, whitespace):
    """A listed name with a slash or a control character has several JSON spellings ("\\/"
    or "/"; "\\n" or "\\u000a"): each is that property (json.loads + jsonschema judge)."""
    schema = {"properties": {"a": {}, "x/y": {"type": "integer"}, "t\tab": {"type": "string"}},
              "additionalProperties": False}
    machine = JsonSchema(schema, property_order=order, whitespace=whitespace)
    validator = jsonschema.Draft202012Validator(schema)
    texts = ['{"x/y":1}', '{"x\\/y":1}', '{"a":0,"x\\/y":1}', '{"x\\/y":"s"}',
             '{"t\\tab":"s"}', '{"t\\u0009ab":"s"}', '{"t\\u0009ab":1}', '{"x\\/z":1}',
             '{"a":0,"x/y":1,"t\\u0009ab":"s"}', '{"a":0,"x\\/y":1,"x/y":2}']
    for text in texts:
        value = json.loads(text)
        expected = validator.is_valid(value) and len(value) == text.count(":")
        assert machine.matches(text) == expected, text


@pytest.mark.parametrize("names", [
    {"oneOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
    {"oneOf": [{"pattern": "^a"}, {"pattern": "b$"}, {"maxLength": 2}], "minLength": 1},
    {"anyOf": [{"maxLength": 1}, {"pattern": "^z"}]},
    {"allOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
    {"$ref": "#/$defs/lower"},
    {"allOf": [{"$ref": "#/$defs/lower"}, {"maxLength": 2}]},
    {"enum": ["a", "b"], "const": "b"},  # both hold
    {"allOf": [{"maxLength": 1}, {"minLength": 2}]},  # no length fits: no name
    {"anyOf": [{"type": "integer"}, {"const": "a"}]},  # no name is an integer
    False,
])
def test_property_names_combined(names):
    schema = {"$defs": {"lower": {"pattern": "^[a-z]+$"}}, "propertyNames": names}
    machine = JsonSchema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for key in ["", "a", "ab", "ax", "xb", "b", "z", "zz", "abc", "abcb", "Ab", "a-b"]:
        assert machine.matches(compact({key: 1})) == validator.is_valid({key: 1}), key


def test_property_names_enum_with_characters_json_escapes():
    """propertyNames enum members holding a quote, a backslash or a slash."""
    schema = {"type": "object", "propertyNames": {"enum": ['a"b', "c/d", "e\\f"]}}
    m = JsonSchema(schema, property_order="any")
    for value, ok in [({'a"b': 1}, True), ({"c/d": 1}, True), ({"e\\f": 1}, True),
                      ({"ab": 1}, False), ({'a"b': 1, "x": 2}, False)]:
        assert m.matches(json.dumps(value, separators=(",", ":"))) == ok, value
    assert m.matches('{"c\\/d":1}')


@given(st.lists(st.text(_NAME_CHARS, max_size=4), min_size=1, max_size=4),
       st.lists(st.text(_NAME_CHARS, max_size=5), max_size=6),
       st.sampled_from(["(?s).*", "a", "^[ab/]+$", '"|\\\\', "^.{2,3}$"]))
def test_keys_without_names_is_the_difference(names, others, pattern):
    """Keys a pattern allows minus the listed names, built over the spelling trie, agree with
    the generic product (difference with the names automaton) on every spelling, and have
    as few states as its minimized form."""
    from pse import automaton, products

    keys = compile_regex(pattern, 0, search=True, char_class=json_char_class, ecma=True)
    direct = without_names(keys, names)
    generic = products.difference(keys, json_names_dfa(names))
    assert direct.n_states == automaton.minimize(generic).n_states  # minimal
    assert (direct.cuts() == class_cuts(direct.trans)).all()  # (made with the rows)
    for text in names + others:
        for spelled in {json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1],
                        json.dumps(text, ensure_ascii=False)[1:-1].replace("/", "\\/")}:
            data = spelled.encode()
            assert direct.matches(data) == generic.matches(data), (names, spelled)
        if text in names:
            assert not direct.matches(json.dumps(text, ensure_ascii=False)[1:-1].encode())
    # its key (see DFA.key) names the key automaton and the set of names, not the content
    again = without_names(compile_regex(pattern, 0, search=True, char_class=json_char_class,
                                        ecma=True), list(reversed(names)))
    assert again.key() == direct.key() and len(direct.key()) == 3
    assert without_names(keys, names + ["\x00"]).key() != direct.key()


def test_key_states_without_empty_made_once_per_size():
    """The key states of an automaton that accepts the empty key, moved for the compiler
    (KeyStates.without_empty), are made once per size and shared by every structure using
    that automaton; another size gets its own, equal to one made fresh."""
    from pse.json_spelling import KeyStates, without_names_states

    keys = compile_regex("(?s).*", 0, search=True, char_class=json_char_class, ecma=True)
    _, states = without_names_states(keys, ["alpha", "beta"])
    n = 7

    def fresh(size: int) -> KeyStates:
        return KeyStates(states.residual, states.derived, states.trie,
                         states.is_name).without_empty(size)

    moved = states.without_empty(n)
    assert states.without_empty(n) is moved
    for size in (n, n + 3):
        got, want = states.without_empty(size), fresh(size)
        assert (got.residual, got.derived) == (want.residual, want.derived)
        assert got.residual != states.residual or got.derived != states.derived
