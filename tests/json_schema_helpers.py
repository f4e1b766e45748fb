"""Shared by the JSON Schema tests: sample schemas and instances, compact JSON, generations."""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np

from conftest import shared_vocab
from pse import JsonSchema, StructuringEngine


SCHEMAS = [
    {"type": "object",
     "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 8},
                    "age": {"type": "integer", "minimum": 0, "maximum": 150},
                    "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "maxItems": 3},
                    "email": {"type": "string", "format": "email"},
                    "ok": {"type": "boolean"}, "none": {"type": "null"}},
     "required": ["name"]},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
     "items": False, "minItems": 1},
    {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4},
    {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer", "exclusiveMinimum": -5, "exclusiveMaximum": 5},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}},
     "$ref": "#/$defs/node"},
    {"anyOf": [{"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"}, {"type": "integer"}]},
    {"oneOf": [{"type": "string"}, {"type": "null"}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
               {"properties": {"b": {"const": "x"}}}]},
    {"type": "object", "additionalProperties": {"type": "integer"},
     "properties": {"fixed": {"type": "string"}}},
    {"type": "string", "pattern": "ab+", "maxLength": 5},
    {"type": "string", "format": "date-time"},
    {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
                                      "ip": {"type": "string", "format": "ipv4"}},
     "additionalProperties": False, "required": ["id"]},
    {"enum": [1, "two", None, [3], {"four": 4}]},
    {"type": "object", "properties": {"id": {"type": "integer"}, "x-id": {"type": "string"}},
     "patternProperties": {"^x-": {"type": "string", "maxLength": 3}, "^n_": {"type": "number"}},
     "additionalProperties": False},
    {"type": "number", "minimum": -1.5, "exclusiveMaximum": 2},
    {"enum": ["a", 1, "bb"], "type": "string", "maxLength": 1},
    {"type": "object", "oneOf": [
        {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]},
        {"properties": {"z": {"type": "null"}}, "required": ["z"],
         "additionalProperties": False}]},
    {"properties": {"gone": {"not": {}}, "t": {"not": {"type": ["string", "null"]}}}},
]


INSTANCES = [
    {"name": "Al", "age": 30, "tags": ["a", 3]}, {"name": "A"}, {"name": "Bob", "age": 151},
    {"name": "Bob", "tags": ["a", "a", "b", "a"]}, {"name": "Bo", "email": "x@y.com"},
    {"name": "Bo", "extra": [1]}, {"name": "Bo", "email": "nope"}, [1, "a"], [1, "a", 2], [],
    ["x"], [1.5, 2], [1, 2, 3, 4, 5], {"value": 1, "children": [{"value": -4}]},
    {"value": 5}, {"value": 1, "children": [{"value": 1, "x": 2}]}, "AB-123", "ab-123", 17,
    "str", None, {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"b": "x"}, {"fixed": "s", "n": 2},
    {"fixed": "s", "n": "2"}, "xaby", "abbbbb", "2024-02-29T12:30:00Z", "2024-13-01T00:00:00Z",
    {"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "10.0.0.255"},
    {"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "10.0.0.256"}, 1, "two", [3],
    {"four": 4}, {"four": 5}, 1.5, {"name": "Bo", "age": -1}, {"name": "Bo", "age": 0},
    {"id": 1, "x-a": "s"}, {"id": 1, "x-a": 2}, {"x-": "s", "n_1": 2.5}, {"other": 1},
    {"id": "1"}, {"x-id": "long text"}, {"x-abc": "long"}, -1.5, -1.6, 1.99, 2, "a", "bb",
    {"kind": "a", "x": 1}, {"kind": "b", "x": 1}, {"kind": "c"}, {"z": None}, {"z": None, "q": 1},
    {"gone": 1}, {"t": 1}, {"t": "s"}, {"t": [None]},
]


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_LENGTHS: dict = {}


def generate(engine: StructuringEngine, rng: random.Random, max_tokens: int = 150):
    """Sample tokens from the mask (mostly short ones, so that structures close) until EOS;
    the text, or None when it did not finish."""
    vocab = engine.vocab
    if id(vocab) not in _LENGTHS:
        _LENGTHS[id(vocab)] = np.array([len(vocab.token_bytes(i)) if vocab.has_token(i) else 0
                                        for i in range(vocab.size)])
    lengths = _LENGTHS[id(vocab)]
    eos = vocab.eos_token_ids[0]
    tokens = []
    for _ in range(max_tokens):
        allowed = engine.allowed_token_ids()
        assert len(allowed), "empty mask"
        choices = allowed[allowed != eos]
        if eos in allowed and (not len(choices) or rng.random() < 0.5):
            return vocab.decode_bytes(tokens)
        short = choices[lengths[choices] <= 2]
        pool = short if len(short) and rng.random() < 0.8 else choices
        tid = int(pool[rng.randrange(len(pool))])
        assert engine.consume_token(tid)
        tokens.append(tid)
    return None


def assert_generations_validate(schema: dict, property_order: str, seed: int) -> None:
    """15 random generations; at least 3 finish, and every one that does validates."""
    vocab = shared_vocab("llama3")
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(seed)
    engine = StructuringEngine(vocab)
    engine.configure(JsonSchema(schema, property_order=property_order))
    finished = 0
    for _ in range(15):
        engine.reset()
        text = generate(engine, rng)
        if text is None:
            continue
        finished += 1
        validator.validate(json.loads(text))
    assert finished >= 3
