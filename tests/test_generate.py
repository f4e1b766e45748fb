"""pse.generate with small random-weights models: every output parses and validates."""

from __future__ import annotations

import json
import re

import pytest

from lm import memorizing_model, qwen, qwen_model, small_model, small_qwen, torch

import pse  # noqa: E402
from pse.torch import greedy, multinomial, top_k, top_p  # noqa: E402

jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = {
    "nested objects": {
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 10},
                    "address": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string", "maxLength": 10},
                            "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                        },
                        "required": ["city", "zip"],
                        "additionalProperties": False,
                    },
                },
                "required": ["name", "address"],
                "additionalProperties": False,
            },
            "active": {"type": "boolean"},
        },
        "required": ["user", "active"],
        "additionalProperties": False,
    },
    "bounded arrays": {
        "type": "object",
        "properties": {
            "points": {"type": "array", "minItems": 2, "maxItems": 5,
                       "items": {"type": "integer", "minimum": -5, "maximum": 5}},
            "pair": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 4},
                                                      {"type": "boolean"}],
                     "items": False, "minItems": 2},
        },
        "required": ["points", "pair"],
        "additionalProperties": False,
    },
    "enums": {
        "type": "object",
        "properties": {
            "color": {"enum": ["red", "green", "blue"]},
            "size": {"enum": ["S", "M", "L", "XL"]},
            "mixed": {"enum": [1, "one", None, True, {"a": [1, 2]}]},
            "fixed": {"const": "v1"},
        },
        "required": ["color", "size", "mixed", "fixed"],
        "additionalProperties": False,
    },
    "number ranges": {
        "type": "object",
        "properties": {
            "temperature": {"type": "number", "minimum": -10.5, "maximum": 40},
            "probability": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "count": {"type": "integer", "minimum": 100, "maximum": 200},
            "offset": {"type": "integer", "exclusiveMaximum": 0, "minimum": -3},
        },
        "required": ["temperature", "probability", "count", "offset"],
        "additionalProperties": False,
    },
    "recursive $ref": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer", "minimum": 0, "maximum": 9},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2},
                },
                "required": ["v"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    },
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_50_generations_parse_and_validate(name):
    schema = SCHEMAS[name]
    vocab = small_qwen()  # Qwen's first 8,192 BPE ranks: a model 20x cheaper per token
    engine = pse.StructuringEngine(vocab)
    engine.configure(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    generator = torch.Generator().manual_seed(len(name))
    samplers = [multinomial(1.0, generator), top_k(50, generator=generator),
                top_p(0.9, generator=generator)]
    texts = set()
    for i in range(50):
        result = pse.generate(small_model(), vocab, "JSON:", engine, max_new_tokens=200,
                              sampler=samplers[i % 3])
        assert result.stats.finished, f"sample {i} did not finish: {result.text!r}"
        value = json.loads(result.text)
        validator.validate(value)
        assert result.value == value
        assert vocab.decode(result.token_ids) == result.text  # no EOS: nothing else allowed
        texts.add(result.text)
    assert len(texts) > 10, "sampling gives different outputs"
    if name == "recursive $ref":
        assert max(map(depth, map(json.loads, texts))) >= 3, "the recursion is exercised"


def depth(node: dict) -> int:
    return 1 + max(map(depth, node.get("kids", [])), default=0)


def test_statistics_add_up():
    vocab = qwen()
    result = pse.generate(qwen_model(), vocab, "JSON:", SCHEMAS["enums"], max_new_tokens=100)
    stats = result.stats
    assert stats.finished and stats.tokens == len(result.token_ids)
    # every token not forced was sampled after one forward pass
    assert stats.forward_passes == stats.tokens - stats.forced_tokens
    assert stats.forced_tokens > 0  # keys and the const are forced
    assert 0 < stats.mask_seconds < stats.seconds
    assert stats.tokens_per_second == pytest.approx(stats.tokens / stats.seconds)


def test_a_pydantic_model_round_trips():
    pydantic = pytest.importorskip("pydantic")
    from typing import Literal

    class Address(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        city: str = pydantic.Field(max_length=12)
        floor: int = pydantic.Field(ge=0, le=50)

    class Person(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        name: str = pydantic.Field(min_length=1, max_length=16)
        role: Literal["admin", "user", "guest"]
        address: Address
        scores: list[int] = pydantic.Field(max_length=3)

    generator = torch.Generator().manual_seed(5)
    for _ in range(5):
        result = pse.generate(small_model(), small_qwen(), "A person:", Person,
                              max_new_tokens=150, sampler=multinomial(1.0, generator))
        assert result.stats.finished, result.text
        person = result.value
        assert isinstance(person, Person) and isinstance(person.address, Address)
        assert Person.model_validate_json(person.model_dump_json()) == person
        assert person.model_dump() == json.loads(result.text)


def test_greedy_with_fast_forward_gives_the_same_text_in_fewer_forward_passes():
    vocab = small_qwen()
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 40},
            "country": {"enum": ["France", "Japan", "Brazil", "Kenya"]},
            "age": {"type": "integer", "minimum": 0, "maximum": 130},
            "languages": {"type": "array", "items": {"type": "string", "maxLength": 20},
                          "maxItems": 3},
        },
        "required": ["name", "country", "age", "languages"],
        "additionalProperties": False,
    }
    text = '{"name":"Ada Lovelace","country":"Kenya","age":36,"languages":["English","French"]}'
    prompt = vocab.encode("Describe a person as JSON: ")
    target = vocab.encode(text) + [vocab.eos_token_ids[0]]
    # a model that has learnt the tokenizer's own tokens of one document
    model = memorizing_model(vocab, prompt, target)
    engine = pse.StructuringEngine(vocab)
    engine.configure(schema)
    plain = pse.generate(model, vocab, prompt, engine, max_new_tokens=80, fast_forward=False)
    assert plain.text == text, "the model reproduces what it learnt"
    fast = pse.generate(model, vocab, prompt, engine, max_new_tokens=80, fast_forward=True)
    assert fast.text == plain.text
    assert fast.token_ids == plain.token_ids  # the forced tokens are the canonical ones
    assert fast.stats.forced_tokens > 0 and plain.stats.forced_tokens == 0
    assert fast.stats.forward_passes == plain.stats.forward_passes - fast.stats.forced_tokens


def test_unfinished_generation_has_no_value():
    vocab = small_qwen()
    schema = {"type": "array", "items": {"type": "string"}, "minItems": 30}
    result = pse.generate(small_model(), vocab, "x", schema, max_new_tokens=12)
    assert not result.stats.finished and result.value is None
    assert result.stats.tokens == len(result.token_ids) == 12
    assert result.text.startswith('["')


def test_other_structures_give_their_text():
    vocab = small_qwen()
    regex = pse.Regex(r"[A-Z]{2}-\d{3}")
    result = pse.generate(small_model(), vocab, "Code:", regex, max_new_tokens=20,
                          sampler=greedy)
    assert re.fullmatch(r"[A-Z]{2}-\d{3}", result.text) and result.value == result.text
    value = pse.generate(small_model(), vocab, "Any JSON:", pse.Json(), max_new_tokens=60,
                         sampler=top_k(5, generator=torch.Generator().manual_seed(0)))
    if value.stats.finished:
        assert value.value == json.loads(value.text)
    else:
        assert value.value is None and value.stats.tokens == 60


def test_generate_checks_its_arguments():
    vocab = small_qwen()
    model = small_model()
    with pytest.raises(ValueError, match="empty"):
        pse.generate(model, vocab, "", pse.Json())
    with pytest.raises(ValueError, match="max_new_tokens"):
        pse.generate(model, vocab, "x", pse.Json(), max_new_tokens=0)
    with pytest.raises(TypeError, match="prompt"):
        pse.generate(model, vocab, 3.5, pse.Json())
    engine = pse.StructuringEngine(vocab)
    engine.configure(pse.Json())
    other = pse.Vocabulary.from_tokens(["a", "b"])
    with pytest.raises(ValueError, match="another Vocabulary"):
        pse.generate(model, other, "x", engine)
    with pytest.raises(ValueError, match="columns"):  # logits narrower than the vocabulary
        pse.generate(small_model(), qwen(), [1, 2], pse.Json(), max_new_tokens=3)
