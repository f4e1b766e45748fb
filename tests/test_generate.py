"""pse.generate with small random-weights models: every output parses and validates."""

from __future__ import annotations

import functools
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
    # an engine configured with the class gives an instance too (and so do its copies)
    engine = pse.StructuringEngine(small_qwen())
    engine.configure(Person)
    result = pse.generate(small_model(), small_qwen(), "A person:", engine.copy(),
                          max_new_tokens=150, sampler=multinomial(1.0, generator))
    assert result.stats.finished, result.text
    assert isinstance(result.value, Person)
    engine.configure({"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"],
                      "additionalProperties": False})  # (configured again: no class)
    result = pse.generate(small_model(), small_qwen(), "An object:", engine,
                          max_new_tokens=20, sampler=multinomial(1.0, generator))
    assert result.value == {"a": 1}


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


# -- chat, streaming, stop strings, repetition penalty ------------------------------------------
@functools.lru_cache(maxsize=1)
def qwen3_tokenizer():
    """Qwen3's `transformers` tokenizer, with its chat template, from ../shared."""
    from transformers import AutoTokenizer

    from conftest import tokenizer_path

    return AutoTokenizer.from_pretrained(tokenizer_path("qwen3").parent)


def template_ids(tokenizer, messages, **extra) -> list[int]:
    encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                            tokenize=True, **extra)
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


def test_messages_go_through_the_chat_template():
    tokenizer = qwen3_tokenizer()
    messages = [{"role": "system", "content": "Answer with a number."},
                {"role": "user", "content": "How many legs has a spider?"}]
    schema = {"type": "integer", "minimum": 0, "maximum": 99}
    chat = pse.generate(qwen_model(), tokenizer, structure=schema, messages=messages,
                        max_new_tokens=8)
    plain = pse.generate(qwen_model(), tokenizer, template_ids(tokenizer, messages), schema,
                         max_new_tokens=8)
    assert chat.token_ids == plain.token_ids and chat.text == plain.text
    # a ToolCalls structure shows its tools to the template
    tools = [{"type": "function", "function": {"name": "legs_of", "description": "Legs.",
                                               "parameters": {"type": "object", "properties": {
                                                   "animal": {"type": "string"}}}}}]
    calls = pse.ToolCalls(tools, tool_choice="required", whitespace="compact")
    engine = pse.StructuringEngine(pse.generation._vocabulary(tokenizer))
    engine.configure(calls)
    seen = []
    result = pse.generate(qwen_model(), tokenizer, structure=engine, messages=messages,
                          max_new_tokens=3, on_token=lambda ids, text: seen.append(ids))
    assert seen[0] == result.token_ids[:len(seen[0])]
    with_tools = pse.generate(qwen_model(), tokenizer,
                              template_ids(tokenizer, messages, tools=tools), engine,
                              max_new_tokens=3)
    assert result.token_ids == with_tools.token_ids
    assert "legs_of" in tokenizer.decode(template_ids(tokenizer, messages, tools=tools))
    with pytest.raises(TypeError, match="one of prompt"):
        pse.generate(qwen_model(), tokenizer, "x", schema, messages=messages)
    with pytest.raises(TypeError, match="one of prompt"):
        pse.generate(qwen_model(), tokenizer, structure=schema)
    with pytest.raises(ValueError, match="chat template"):
        pse.generate(small_model(), small_qwen(), structure=schema, messages=messages)
    with pytest.raises(TypeError, match="dicts"):
        pse.generate(qwen_model(), tokenizer, structure=schema, messages="hello")
    with pytest.raises(TypeError, match="needs a structure"):
        pse.generate(qwen_model(), tokenizer, "x")


def test_on_token_streams_every_id_and_the_text():
    pieces = []
    result = pse.generate(small_model(), small_qwen(), "Text:", pse.Freeform(),
                          max_new_tokens=60, sampler=pse.torch.sampling(1.0, seed=3),
                          on_token=lambda ids, text: pieces.append((ids, text)))
    assert [i for ids, _ in pieces for i in ids] == result.token_ids
    assert "".join(text for _, text in pieces) == result.text
    assert all(text == text.encode("utf-8", "replace").decode() for _, text in pieces)


def test_text_stream_holds_back_split_characters_and_stop_strings():
    from pse.generation import _TextStream

    vocab = pse.Vocabulary.from_tokens([b"a", b"\xc3", b"\xa9", b"st", b"op", b"s", b"<e>"],
                                       eos_token_ids=[6], special_token_ids=[6])
    stream = _TextStream(vocab, {6}, ())
    assert [stream.push([0]), stream.push([1]), stream.push([2]), stream.push([6])] == \
           ["a", "", "\u00e9", ""]
    assert stream.close() == "" and stream.text == "a\u00e9"
    stream = _TextStream(vocab, {6}, ("stop",))
    shown = [stream.push([i]) for i in (0, 3, 5, 3, 4, 0)]
    # "a" + "st" + "s" + "st" + "op": "stop" begins at the second "st"; nothing of it shows
    assert "".join(shown) + stream.close() == "asts" and stream.text == "asts"
    assert stream.stopped and shown[-1] == ""


def test_a_stop_string_ends_generation_and_is_cut():
    vocab = small_qwen()
    base = pse.generate(small_model(), vocab, "Text:", pse.Freeform(), max_new_tokens=40,
                        sampler=greedy)
    assert len(base.text) > 12, base.text
    stop = base.text[8:11]
    pieces = []
    cut = pse.generate(small_model(), vocab, "Text:", pse.Freeform(), max_new_tokens=40,
                       sampler=greedy, stop=["\x00never", stop],
                       on_token=lambda ids, text: pieces.append(text))
    assert cut.text == base.text[:base.text.find(stop)] == "".join(pieces)
    assert cut.stats.finish_reason == "stop_string" and not cut.stats.finished
    assert cut.value is None and cut.token_ids == base.token_ids[:len(cut.token_ids)]
    assert base.stats.finish_reason in ("stop", "length")
    for bad in ("", [""], [3]):
        with pytest.raises(ValueError, match="stop"):
            pse.generate(small_model(), vocab, "x", pse.Freeform(), stop=bad)


def test_repetition_penalty_is_the_one_of_transformers():
    from transformers import RepetitionPenaltyLogitsProcessor

    from pse.generation import _penalized

    logits = torch.randn(64, generator=torch.Generator().manual_seed(0))
    logits[3] = float("-inf")  # a masked token stays masked
    seen = {0, 3, 5, 17, 63}
    got = []
    _penalized(lambda x: got.append(x.clone()) or 0, 1.3, seen)(logits.clone())
    expected = RepetitionPenaltyLogitsProcessor(1.3)(torch.tensor([sorted(seen)]),
                                                     logits.clone().view(1, -1))[0]
    assert torch.equal(got[0], expected) and got[0][3] == float("-inf")
    vocab = small_qwen()
    plain = pse.generate(small_model(), vocab, "Text:", pse.Freeform(), max_new_tokens=30)
    penalized = pse.generate(small_model(), vocab, "Text:", pse.Freeform(), max_new_tokens=30,
                             repetition_penalty=1.5)
    assert len(set(penalized.token_ids)) >= len(set(plain.token_ids))
    with pytest.raises(ValueError, match="repetition_penalty"):
        pse.generate(small_model(), vocab, "x", pse.Freeform(), repetition_penalty=0)


def test_no_deprecation_warnings_from_transformers(capfd):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pse.generate(small_model(), small_qwen(), "x", pse.Json(), max_new_tokens=6)
    assert "deprecated" not in capfd.readouterr().err


# -- batches ------------------------------------------------------------------------------------
BATCH_STRUCTURES = [
    SCHEMAS["nested objects"],
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 50},
     "minItems": 1, "maxItems": 4},
    {"enum": ["yes", "no", "maybe"]},
    pse.Regex(r"[a-z]{3,9}@[a-z]{2,5}\.(com|org)"),
]
BATCH_PROMPTS = ["A user record:", "Some numbers, as a JSON list of integers under fifty:",
                 "Answer:", "An e-mail address, please:"]


@pytest.mark.parametrize("fast_forward", [True, False])
def test_a_batch_gives_each_row_what_it_gives_alone(fast_forward):
    vocab, model = small_qwen(), small_model(2)
    alone = [pse.generate(model, vocab, p, s, max_new_tokens=60, fast_forward=fast_forward)
             for p, s in zip(BATCH_PROMPTS, BATCH_STRUCTURES)]
    seen: dict[int, list] = {i: [] for i in range(len(BATCH_PROMPTS))}
    batch = pse.generate(model, vocab, BATCH_PROMPTS, BATCH_STRUCTURES, max_new_tokens=60,
                         fast_forward=fast_forward,
                         on_token=lambda row, ids, text: seen[row].append((ids, text)))
    assert isinstance(batch, list) and len(batch) == len(alone)
    for i, (one, row) in enumerate(zip(alone, batch)):
        assert row.token_ids == one.token_ids, i
        assert row.text == one.text and row.value == one.value
        assert row.stats.finish_reason == one.stats.finish_reason
        assert (row.stats.forced_tokens, row.stats.forward_passes) == \
               (one.stats.forced_tokens, one.stats.forward_passes)
        assert [t for ids, _ in seen[i] for t in ids] == row.token_ids
        assert "".join(text for _, text in seen[i]) == row.text
    lengths = {len(r.token_ids) for r in batch}
    assert len(lengths) > 1, "rows of different lengths: some end while others go on"
    assert sum(r.stats.finished for r in batch) >= 3


def test_a_batch_of_chats_and_one_structure_for_all():
    tokenizer = qwen3_tokenizer()
    chats = [[{"role": "user", "content": "A number?"}],
             [{"role": "system", "content": "Be brief."},
              {"role": "user", "content": "Another number, please?"}]]
    schema = {"type": "integer", "minimum": 0, "maximum": 999}
    batch = pse.generate(qwen_model(), tokenizer, structure=schema, messages=chats,
                         max_new_tokens=6)
    for chat, row in zip(chats, batch):
        one = pse.generate(qwen_model(), tokenizer, structure=schema, messages=chat,
                           max_new_tokens=6)
        assert row.token_ids == one.token_ids
    again = pse.generate_batch(qwen_model(), tokenizer, structures=schema, messages=chats,
                               max_new_tokens=6)
    assert [r.token_ids for r in again] == [r.token_ids for r in batch]


def test_batch_masks_are_computed_on_the_overlap_thread(monkeypatch):
    import threading

    from pse import decoding

    threads = []
    real = decoding._fill

    def spy(*args):
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(decoding, "_fill", spy)
    pse.generate(small_model(), small_qwen(), BATCH_PROMPTS[:2], BATCH_STRUCTURES[:2],
                 max_new_tokens=10)
    assert threads and all(name.startswith("pse-overlap") for name in threads)


def test_batch_arguments_are_checked():
    vocab, model = small_qwen(), small_model()
    with pytest.raises(ValueError, match="2 structures for 3 rows"):
        pse.generate_batch(model, vocab, ["a", "b", "c"], [pse.Json(), pse.Json()])
    with pytest.raises(ValueError, match="at least one"):
        pse.generate_batch(model, vocab, [], pse.Json())
    with pytest.raises(TypeError, match="not both"):
        pse.generate_batch(model, vocab, ["a"], pse.Json(), messages=[[]])
    other = pse.StructuringEngine(pse.Vocabulary.from_tokens(["a", "b"]))
    other.configure(pse.Phrase("a"))
    with pytest.raises(ValueError, match="different vocabularies"):
        pse.generate_batch(model, qwen3_tokenizer(), ["a", "b"], [other, pse.Json()])
