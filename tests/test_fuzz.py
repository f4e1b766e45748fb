"""Property tests over every entry point with random and mutated input: no crash, no hang, no
exception but the documented ones, and nothing invalid accepted.

Each property runs twice: briefly in the default run, and at length under `pytest -m slow`
(excluded by default, see pyproject.toml).
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pse
from conftest import SHARED
from pse import GrammarError, JsonSchema, PSEError, Regex, StructuringEngine, Vocabulary

FAST = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=2000, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def fast_and_slow(strategies: dict):
    """The property as two tests: `test_x` (FAST) and `test_x_long` (SLOW, marked slow)."""

    def wrap(fn):
        fast = FAST(given(**strategies)(fn))
        slow = pytest.mark.slow(SLOW(given(**strategies)(fn)))
        slow.__name__ = fn.__name__ + "_long"
        return fast, slow

    return wrap


# --- mutated maskbench schemas ---------------------------------------------------------------

def _maskbench_sample(n: int) -> list[dict]:
    folder = SHARED / "data" / "maskbench"
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("*.json"))
    step = max(1, len(files) // n)
    return [json.loads(Path(f).read_text()) for f in files[::step][:n]]


MASKBENCH = _maskbench_sample(200)
KEYWORDS = ["type", "properties", "required", "items", "prefixItems", "enum", "const", "anyOf",
            "oneOf", "allOf", "not", "$ref", "minimum", "maximum", "exclusiveMinimum",
            "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
            "additionalProperties", "patternProperties", "uniqueItems", "contains",
            "multipleOf", "minProperties", "maxProperties", "propertyNames", "if", "then",
            "dependentRequired", "$defs", "definitions", "additionalItems", "default"]
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                         st.floats(allow_nan=False, allow_infinity=False),
                         st.text(max_size=12),
                         st.sampled_from(["string", "integer", "object", "array", "null",
                                          "#", "#/$defs/a", "#/properties", "^a+$", "[",
                                          "date-time", "email", "uri", "(a|b)*c{3,}"]))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYWORDS) | st.text(max_size=6),
                                            inner, max_size=4)),
    max_leaves=12)


def _nodes(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nodes(v, path + (i,))


@st.composite
def mutated_schemas(draw):
    """A maskbench schema (with its test instances) after a few random edits: a keyword set to
    a random value, a key removed, a subschema replaced or copied elsewhere."""
    if not MASKBENCH:
        pytest.skip("maskbench not found: set PSE_SHARED")
    data = draw(st.sampled_from(MASKBENCH))
    schema = copy.deepcopy(data["schema"])
    for _ in range(draw(st.integers(1, 3))):
        nodes = [(p, v) for p, v in _nodes(schema) if isinstance(v, dict)]
        if not nodes:
            break
        path, node = draw(st.sampled_from(nodes))
        op = draw(st.sampled_from(["set", "delete", "replace", "graft"]))
        if op == "set":
            node[draw(st.sampled_from(KEYWORDS))] = draw(json_values)
        elif op == "delete" and node:
            del node[draw(st.sampled_from(sorted(node)))]
        elif op == "replace" and node:
            node[draw(st.sampled_from(sorted(node)))] = draw(json_values)
        elif op == "graft":
            _, other = draw(st.sampled_from(nodes))
            node[draw(st.sampled_from(KEYWORDS))] = copy.deepcopy(other)
    return schema, [t["data"] for t in data.get("tests", [])]


def _oracle(schema):
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema, format_checker=cls.FORMAT_CHECKER)
    except Exception:  # the oracle cannot judge a malformed schema
        return None


def check_mutated_schema(case):
    schema, instances = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            structure = JsonSchema(schema)
            structure.compile()
        except PSEError:
            return
    oracle = _oracle(schema)
    for value in instances:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        if structure.matches(text) and oracle is not None:
            # never an invalid instance accepted
            assert oracle.is_valid(value), (schema, text)


test_mutated_schemas, test_mutated_schemas_long = fast_and_slow(
    {"case": mutated_schemas()})(check_mutated_schema)


def check_random_schema(schema):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            JsonSchema(schema).compile()
        except PSEError:
            pass


test_random_schemas, test_random_schemas_long = fast_and_slow(
    {"schema": json_values})(check_random_schema)


# --- regexes ---------------------------------------------------------------------------------

REGEX_PIECES = ["a", "b", "é", ".", "\\d", "\\w", "\\s", "\\b", "[", "]", "^", "-", "(", ")",
                "(?:", "(?=", "(?!", "(?<=", "(?P<n>", "|", "*", "+", "?", "{2}", "{1,3}", "{,2}", "{3,}",
                "\\", "$", "\\1", "[^a]", "[a-c]", "\\u00e9", "\\x41", "(?i)", "*?", "\\Z"]


def check_regex(pieces, probes):
    pattern = "".join(pieces)
    with warnings.catch_warnings():
        # (re warns of sets that a later Python may read differently, as "[[": noise here)
        warnings.simplefilter("ignore", FutureWarning)
        try:
            r = Regex(pattern)
        except GrammarError:
            return
        expected = re.compile(pattern)  # pse refuses what re refuses: this must not raise
    for text in probes:
        assert r.matches(text) == bool(expected.fullmatch(text)), (pattern, text)


test_random_regexes, test_random_regexes_long = fast_and_slow({
    "pieces": st.lists(st.sampled_from(REGEX_PIECES) | st.text(max_size=2), max_size=8),
    "probes": st.lists(st.text(alphabet="abé1 _-A\n", max_size=6), max_size=8),
})(check_regex)


# --- vocabularies from random bytes, and token streams ---------------------------------------

def check_vocabulary(tokens, probe):
    try:
        vocab = Vocabulary.from_tokens(tokens)
    except PSEError:
        return
    texts = dict(enumerate(tokens))
    for i, t in texts.items():
        assert vocab.token_bytes(i) == t
    got = vocab.longest_prefix(probe)
    best = max((t for t in texts.values() if t and probe.startswith(t)), key=len, default=None)
    assert (got[0] if got else None) == best


test_random_vocabularies, test_random_vocabularies_long = fast_and_slow({
    "tokens": st.lists(st.binary(max_size=4), max_size=30),
    "probe": st.binary(max_size=6),
})(check_vocabulary)


STRUCTURES = {
    "json": lambda: pse.Json(),
    "schema": lambda: JsonSchema({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 3}, "b": {"type": "array", "items": {
            "type": "integer", "minimum": -5}}}, "required": ["a"]}),
    "regex": lambda: Regex(r"(ab|é)+[0-9]{1,3}"),
}


def check_token_stream(tokens, kind, stream):
    """Any stream of token ids: a token is accepted exactly when the mask allows it, a refused
    one changes nothing, and rollbacks return to earlier masks."""
    vocab = Vocabulary.from_tokens([b"\x00"] + tokens, eos_token_ids=[0],
                                   special_token_ids=[0])
    engine = StructuringEngine(vocab, mask_memo=4)
    engine.configure(STRUCTURES[kind]())
    masks = []
    for tid in stream:
        if tid == -1:
            if masks:
                engine.rollback(1)
                assert np.array_equal(engine.compute_mask(), masks.pop())
            continue
        tid %= vocab.size
        mask = engine.compute_mask()
        allowed = bool((mask.view(np.uint32)[tid >> 5] >> (tid & 31)) & 1)
        assert engine.consume_token(tid) == allowed
        if allowed:
            masks.append(mask)
        else:
            assert np.array_equal(engine.compute_mask(), mask)


test_token_streams, test_token_streams_long = fast_and_slow({
    "tokens": st.lists(st.binary(min_size=1, max_size=4)
                       | st.sampled_from([b'{"a":"', b'"}', b'[1', b",", b"]", b"ab",
                                          b"\xc3", b"\xa9", b"\xc3\xa9"]),
                       min_size=1, max_size=30),
    "kind": st.sampled_from(sorted(STRUCTURES)),
    "stream": st.lists(st.integers(-1, 40), max_size=40),
})(check_token_stream)


# --- API misuse ------------------------------------------------------------------------------

def check_misuse(arg):
    engine = StructuringEngine(Vocabulary.from_tokens(["a", "b"]))
    try:
        engine.configure(arg)
    except (PSEError, TypeError, ValueError):
        pass
    engine.configure(pse.Phrase("ab"))
    for call in (engine.consume_token, engine.consume, engine.rollback):
        try:
            call(arg)
        except (TypeError, ValueError):
            pass


test_api_misuse, test_api_misuse_long = fast_and_slow(
    {"arg": json_scalars | st.binary(max_size=3) | st.lists(st.integers(), max_size=2)})(
    check_misuse)
