"""Fast-forward: forced bytes against brute force, forced tokens against the tokenizer's own
encoding of the final text (seeds/fast_forward.md)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from conftest import shared_vocab
from pse import (AnyOf, Chain, Character, Json, JsonSchema, Loop, Optional, Phrase, Regex,
                 StateMachine, StructuringEngine, Vocabulary)
from pse._core.forced import Boundary
from pse.vocabulary import utf8_complete_length
from test_engine import small_vocab
from test_properties import ALPHABET, json_values, trees
from test_vocabulary import _sentencepiece_tokenizer


def ids_of(vocab: Vocabulary, *pieces: str) -> list[int]:
    out = []
    for p in pieces:
        tid = vocab.lookup(p)
        assert tid is not None, p
        out.append(tid)
    return out


def replay_canonical(engine: StructuringEngine, text: str | bytes) -> int:
    """Replay the tokenizer's own encoding of `text`, taking the forced tokens whenever there
    are some; each must be the reference token at its position. Returns how many were forced."""
    vocab = engine.vocab
    tokens = vocab.encode(text)
    engine.reset()
    k = forced = 0
    while k < len(tokens):
        ff = engine.compute_ff_tokens()
        if ff:
            assert ff == tokens[k:k + len(ff)], (
                text, vocab.decode_bytes(tokens[:k]),
                [vocab.token_bytes(i) for i in ff],
                [vocab.token_bytes(i) for i in tokens[k:k + len(ff)]])
            assert engine.consume_tokens(ff) == len(ff)
            k += len(ff)
            forced += len(ff)
            continue
        assert engine.consume_token(tokens[k]), (text, k)
        k += 1
    assert engine.is_accepting(), text
    assert engine.compute_ff_tokens() == []
    return forced


# --- the specification's examples (Llama 3) --------------------------------------------------

ORDER_SCHEMA = {"type": "object", "properties": {"orderId": {"type": "string"},
                                                 "orderName": {"type": "string"}},
                "required": [], "additionalProperties": False}
PERSON_SCHEMA = {"type": "object",
                 "properties": {"name_of_the_person": {"type": "string"},
                                "age": {"type": "integer"}},
                 "required": ["name_of_the_person", "age"], "additionalProperties": False}


def test_tokenize_partial_examples():
    llama = shared_vocab("llama3")
    assert llama.tokenize_partial(b"order") == ([], b"order")
    tokens, leftover = llama.tokenize_partial(b'name_of_the_person"',
                                              recent_tokens=llama.encode('{"'))
    assert tokens == ids_of(llama, "name", "_of", "_the", "_person")
    assert leftover == b'"'
    # without a structure any longer token counts: '}' starts '},' and others
    assert llama.tokenize_partial("}") == ([], b"}")
    # tokens start with '@' but none with a newline and '@': only '@' is held back
    assert llama.tokenize_partial("\n@") == (ids_of(llama, "\n"), b"@")


def test_order_is_forced_but_not_its_token():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(ORDER_SCHEMA)
    assert engine.compute_ff_bytes() == b"{"
    assert engine.consume_tokens(llama.encode('{"')) == 1
    assert engine.compute_ff_bytes() == b"order"
    assert engine.compute_ff_tokens() == []   # orderId is one token; order+Id is not canonical


@pytest.mark.parametrize("whitespace, forced", [(2, b'name_of_the_person"'),
                                                (None, b'name_of_the_person":"')])
def test_name_of_the_person(whitespace, forced):
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema(PERSON_SCHEMA, whitespace=whitespace))
    assert engine.consume_tokens(llama.encode('{"')) == 1
    assert engine.compute_ff_bytes() == forced
    ff = engine.compute_ff_tokens()
    assert ff == ids_of(llama, "name", "_of", "_the", "_person")  # '"' (or '":"') held back
    assert engine.consume_tokens(ff) == 4
    for text in ['{"name_of_the_person":"Ann","age":3}', '{"name_of_the_person":"","age":-1}']:
        assert replay_canonical(engine, text) > 0


def test_forced_tokens_of_a_whole_phrase_at_the_start():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(Phrase("Hello, world!") + AnyOf(Phrase(" Bye."), Phrase(" Bye!")))
    assert engine.compute_ff_bytes() == b"Hello, world! Bye"
    ff = engine.compute_ff_tokens()
    for text in ["Hello, world! Bye.", "Hello, world! Bye!"]:
        assert ff == llama.encode(text)[:len(ff)]
        replay_canonical(engine, text)
    assert ff == llama.encode("Hello, world! Bye")  # no allowed token spans its end


def test_recent_tokens_give_the_tokenizer_its_context():
    """Alone, '$name' is one pre-token (and one token); after '!' the tokenizer splits '!$'
    from 'name', so the canonical tokens are '$', 'name'."""
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure((Phrase("!") | Phrase("?")) + Phrase("$name"))
    assert engine.compute_ff_bytes() == b""
    assert engine.consume_token(llama.lookup("!"))
    assert engine.compute_ff_bytes() == b"$name"
    assert llama.encode("$name") == ids_of(llama, "$name")
    assert engine.compute_ff_tokens() == ids_of(llama, "$", "name") == llama.encode("!$name")[1:]
    assert replay_canonical(engine, "!$name") == 2
    assert replay_canonical(engine, "?$name") == 1    # '?$' is one token: 'name' is forced


# --- forced bytes against brute force ----------------------------------------------------------

def brute_forced(machine: StateMachine, prefix: bytes, limit: int = 64) -> bytes:
    """Forced bytes by brute force over the consume path: while the prefix is not complete
    and exactly one byte value extends it, that byte is forced."""
    out = b""
    while len(out) < limit and not machine.matches(prefix + out):
        nxt = [b for b in range(256) if machine.matches(prefix + out + bytes([b]), partial=True)]
        if len(nxt) != 1:
            break
        out += bytes(nxt)
    return out


def brute_spans(machine: StateMachine, vocab: Vocabulary, prefix: bytes, data: bytes,
                start: int) -> bool:
    suffix = data[start:]
    return any(tok.startswith(suffix) and len(tok) > len(suffix)
               and machine.matches(prefix + data[:start] + tok, partial=True)
               for tok in (vocab.token_bytes(i) for i in range(vocab.size)
                           if vocab.has_token(i) and i not in vocab.special_token_ids))


@settings(max_examples=60)
@given(trees, st.data())
def test_forced_bytes_and_spans_equal_brute_force(tree, data):
    machine, regex = tree
    text = data.draw(st.from_regex(re.compile(regex), fullmatch=True).filter(
        lambda t: set(t) <= set(ALPHABET)))
    raw = text.encode()
    vocab = small_vocab()
    engine = StructuringEngine(vocab)
    engine.configure(machine)
    for k in range(len(raw) + 1):
        if k:
            assert engine.matcher.advance(raw[k - 1:k])
        forced = engine.compute_ff_bytes()
        assert forced == brute_forced(machine, raw[:k]), (regex, raw[:k])
        if forced:
            boundary = Boundary(engine.matcher, forced)
            for start in range(len(forced)):
                assert boundary.spanned_from(start) == brute_spans(
                    machine, vocab, raw[:k], forced, start), (regex, raw[:k], forced, start)


def test_forced_bytes_stop_at_the_bound_and_at_accept():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(Phrase("abcdefgh") + Optional(Phrase("ijk")))
    assert engine.compute_ff_bytes() == b"abcdefgh"  # it could end there
    assert engine.compute_ff_bytes(max_bytes=3) == b"abc"
    assert engine.compute_ff_bytes(max_bytes=0) == b""
    assert engine.consume_tokens(llama.encode("abcdefgh")) > 0
    assert engine.compute_ff_bytes() == b""
    with pytest.raises(ValueError, match="max_bytes"):
        engine.compute_ff_bytes(-1)
    with pytest.raises(ValueError, match="max_bytes"):
        engine.compute_ff_tokens("8")


# --- canonical forced tokens on every kind of structure -----------------------------------------

NAMES = ["id", "name", "order", "orderId", "orderName", "name_of_the_person", "age", "type",
         "value", "values", "item_id", "first_name", "last_name", "e-mail", "clé", "日本語",
         "x", "userName", "user", "🎉"]
TEXT = st.text(st.sampled_from(list("abcxyz ABC_-.,:;!?'\"\\/{}[]0159éß日本🎉\n\t")),
               max_size=12)


@st.composite
def schemas(draw, depth: int = 0):
    """(schema, instance strategy): random JSON Schemas with instances valid in schema order."""
    kinds = ["string", "enum", "const", "integer", "boolean", "null", "number"]
    if depth < 2:
        kinds += ["object", "object", "array"]
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        return {"type": "string"}, TEXT
    if kind == "enum":
        values = draw(st.lists(st.sampled_from(NAMES) | TEXT, min_size=1, max_size=4,
                               unique=True))
        return {"enum": values}, st.sampled_from(values)
    if kind == "const":
        value = draw(st.sampled_from(NAMES) | st.integers(-99, 99))
        return {"const": value}, st.just(value)
    if kind == "integer":
        return {"type": "integer", "minimum": -500}, st.integers(-500, 10**6)
    if kind == "number":
        return {"type": "number"}, st.floats(-1e6, 1e6, allow_nan=False)
    if kind == "boolean":
        return {"type": "boolean"}, st.booleans()
    if kind == "null":
        return {"type": "null"}, st.none()
    if kind == "array":
        item, item_values = draw(schemas(depth + 1))
        return {"type": "array", "items": item}, st.lists(item_values, max_size=3)
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    props = [(n, draw(schemas(depth + 1))) for n in names]
    required = [n for n in names if draw(st.booleans())]
    schema = {"type": "object", "properties": {n: s for n, (s, _) in props},
              "required": required, "additionalProperties": False}

    @st.composite
    def instance(draw2):
        out = {}
        for n, (_, values) in props:
            if n in required or draw2(st.booleans()):
                out[n] = draw2(values)
        return out

    return schema, instance()


def _schema_case(tokenizer: str, data, whitespace) -> None:
    schema, values = data.draw(schemas())
    instance = data.draw(values)
    vocab = shared_vocab(tokenizer)
    engine = StructuringEngine(vocab)
    engine.configure(JsonSchema(schema, whitespace=whitespace))
    replay_canonical(engine, json.dumps(instance, separators=(",", ":"), ensure_ascii=False))


@settings(max_examples=150)
@given(st.data(), st.sampled_from([None, None, 2]))
def test_forced_tokens_are_canonical_on_random_schemas(data, whitespace):
    _schema_case("llama3", data, whitespace)


@pytest.mark.parametrize("tokenizer", ["qwen3", "gpt4o"])
@settings(max_examples=40)
@given(data=st.data())
def test_forced_tokens_are_canonical_with_other_tokenizers(tokenizer, data):
    _schema_case(tokenizer, data, None)


def test_bpe_merges_depend_on_where_a_pre_token_ends():
    r"""Forced `0:\\"` (the string `0:\` in JSON) is `0`, `:\`, `\"` alone; `\"]` may span its
    end, but dropping `\"` is not enough: the final text `0:\\"]` is `0`, `:\\`, `"]`."""
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema({"type": "array", "items": {"enum": ["0:\\"]}}))
    assert engine.consume_tokens(llama.encode('["')) == 1
    assert engine.compute_ff_bytes() == b'0:\\\\"'
    assert llama.encode(b'0:\\\\"') == ids_of(llama, "0", ":\\", '\\"')
    assert engine.compute_ff_tokens() == ids_of(llama, "0")
    replay_canonical(engine, '["0:\\\\"]')


PUNCTUATION = st.text(st.sampled_from(list(':\\"{}[],.;!?\'()<>=+-*/_ 059abXY\n\t$#@%&|~`é日')),
                      min_size=1, max_size=8)


@settings(max_examples=50)
@given(st.lists(PUNCTUATION, min_size=1, max_size=4, unique=True), st.data(),
       st.sampled_from(["llama3", "qwen3", "gpt4o"]))
def test_forced_tokens_are_canonical_on_punctuation_enums(values, data, tokenizer):
    """Enums of punctuation runs: pre-tokens whose merges depend on what follows."""
    if data.draw(st.booleans()):
        schema = {"type": "array", "items": {"enum": values}}
        instance = data.draw(st.lists(st.sampled_from(values), max_size=3))
    else:
        schema = {"type": "object", "properties": {v: {"enum": values} for v in values},
                  "required": values, "additionalProperties": False}
        instance = {v: data.draw(st.sampled_from(values)) for v in values}
    engine = StructuringEngine(shared_vocab(tokenizer))
    engine.configure(JsonSchema(schema))
    replay_canonical(engine, json.dumps(instance, separators=(",", ":"), ensure_ascii=False))


@settings(max_examples=60)
@given(json_values)
def test_forced_tokens_are_canonical_on_any_json(value):
    engine = StructuringEngine(shared_vocab("llama3"))
    engine.configure(Json())
    replay_canonical(engine, json.dumps(value, separators=(",", ":"), ensure_ascii=False))


@settings(max_examples=80)
@given(trees, st.data(), st.booleans())
def test_forced_tokens_are_canonical_on_combinators_and_regexes(tree, data, as_regex):
    machine, regex = tree
    text = data.draw(st.from_regex(re.compile(regex), fullmatch=True).filter(
        lambda t: set(t) <= set(ALPHABET)))
    engine = StructuringEngine(shared_vocab("llama3"))
    engine.configure(Regex(regex) if as_regex else machine)
    replay_canonical(engine, text)


WORDS = ["function", "functional", "fun", "return", "returns", " the", " then", "the", "Hello",
         "Hello world", "http://", "https://", "日本", "日本語", "é", "è", "\n", "  "]


@settings(max_examples=80)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), min_size=1,
                max_size=4), st.data())
def test_forced_tokens_are_canonical_on_word_sequences(choices, data):
    """A chain of AnyOfs of words that share prefixes (and UTF-8 lead bytes)."""
    machine = Chain(*(AnyOf(*(Phrase(w) for w in ws)) if len(ws) > 1 else Phrase(ws[0])
                      for ws in choices))
    text = "".join(data.draw(st.sampled_from(ws)) for ws in choices)
    assert machine.matches(text)
    engine = StructuringEngine(shared_vocab("llama3"))
    engine.configure(machine)
    replay_canonical(engine, text)


def test_structures_of_every_kind_force_canonical_tokens():
    llama = shared_vocab("llama3")
    cases = [
        (Loop(Phrase("item") + Character("0123456789", 1, 3), 1, 4, separator=Phrase(", ")),
         "item1, item22, item333"),
        (Phrase("SELECT ") + AnyOf(Phrase("name"), Phrase("names")) + Phrase(" FROM users;"),
         "SELECT names FROM users;"),
        (Regex(r"(?:https://example\.com/[a-z]{1,8}/)+(?:index|main)\.html"),
         "https://example.com/docs/https://example.com/a/index.html"),
        (JsonSchema({"type": "array", "items": {"enum": ["reddish brown", "green"]},
                     "minItems": 2}), '["green","reddish brown"]'),
        (Json(), '{"a":[1,2,{"b":null}],"c":"ü","d":nul'),  # ends in a forced 'l'
    ]
    for machine, text in cases:
        engine = StructuringEngine(llama)
        engine.configure(machine)
        if text.endswith("nul"):
            engine.consume_tokens(llama.encode(text))
            assert engine.compute_ff_bytes() == b"l"
            assert engine.compute_ff_tokens() == ids_of(llama, "l")  # nothing can follow 'l'
            continue
        assert replay_canonical(engine, text) > 0, text


# --- UTF-8 tails -------------------------------------------------------------------------------

def test_forced_bytes_ending_inside_a_character():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    # 本 e6 9c ac and 曜 e6 9b 9c share their lead byte: the forced bytes end inside one
    engine.configure(Phrase("今日は") + AnyOf(Phrase("本"), Phrase("曜")))
    forced = engine.compute_ff_bytes()
    assert forced == "今日は".encode() + b"\xe6"
    assert utf8_complete_length(forced) == len(forced) - 1
    ff = engine.compute_ff_tokens()
    assert llama.decode_bytes(ff) in ("今日は".encode(), "今日".encode(), "今".encode(), b"")
    for text in ["今日は本", "今日は曜"]:
        assert ff == llama.encode(text)[:len(ff)]
        replay_canonical(engine, text)


def test_forced_bytes_starting_inside_a_character():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(Phrase("é world") | Phrase("日本"))
    assert engine.consume_token(llama.lookup(b"\xc3"))   # half of é, a token of its own
    assert engine.compute_ff_bytes() == b"\xa9 world"
    # the tokenizer's own tokens take é whole: no token starting at \xa9 is canonical
    assert engine.compute_ff_tokens() == []
    assert engine.consume_token(llama.lookup(b"\xa9"))
    ff = engine.compute_ff_tokens()
    assert ff == ids_of(llama, " world") == llama.encode("é world")[1:]
    assert engine.consume_tokens(ff) == 1 and engine.is_accepting()


def test_utf8_complete_length():
    assert utf8_complete_length(b"") == 0
    assert utf8_complete_length("aé".encode()) == 3
    assert utf8_complete_length("aé".encode()[:2]) == 1
    assert utf8_complete_length("🎉".encode()[:3]) == 0
    assert utf8_complete_length(b"\xa9\xa9") == 2      # not UTF-8 at all: nothing to wait for


# --- SentencePiece: the dummy prefix ---------------------------------------------------------

def _unigram_vocab() -> tuple[Vocabulary, dict[str, int]]:
    """A SentencePiece-style (Unigram, Metaspace with a dummy prefix) tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    words = ["▁", "▁hello", "hello", "▁world", "world", "▁wor", "wor", "ld", "▁he", "he",
             "llo", "▁the", "the", "re", "▁there", "h", "e", "l", "o", "w", "r", "d", "t",
             "{", "}", '"', '":', "▁{", "▁\""]
    pieces += words
    scores = [(p, 0.0 if p.startswith("<") else -float(len(pieces) - i) / 100)
              for i, p in enumerate(pieces)]
    for i, p in enumerate(words):
        scores[len(pieces) - len(words) + i] = (p, -1.0 / len(p))
    tok = Tokenizer(models.Unigram(scores, unk_id=0, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁",
                                                        prepend_scheme="always"),
                                     decoders.ByteFallback()])
    tok.add_special_tokens(["<s>", "</s>"])
    vocab = Vocabulary.from_tokenizer(tok, eos_token_ids=[2])
    return vocab, {p: i for i, p in enumerate(pieces)}


def test_sentencepiece_dummy_prefix_is_stripped():
    vocab, ids = _unigram_vocab()
    assert vocab.token_bytes(vocab.encode("hello")[0]).startswith(b" ")  # the dummy prefix
    # a fragment after nothing: no dummy-prefix token, the bytes exactly
    tokens, leftover = vocab.tokenize_partial(b"hello world")
    assert vocab.decode_bytes(tokens) + leftover == b"hello world"
    assert tokens and tokens[0] == ids["hello"]
    # after recent tokens, as the tokenizer encodes the whole text
    full = vocab.encode("hello there world")
    assert vocab.decode_bytes(full) == b" hello there world"
    tokens, leftover = vocab.tokenize_partial(b" there world", recent_tokens=full[:1])
    assert tokens == full[1:1 + len(tokens)] and tokens
    assert vocab.decode_bytes(tokens) + leftover == b" there world"


def test_sentencepiece_engine_forces_canonical_tokens():
    vocab, ids = _unigram_vocab()
    engine = StructuringEngine(vocab)
    engine.configure(Phrase("hello world") + Optional(Phrase("!")))
    ff = engine.compute_ff_tokens()
    assert ff == [ids["hello"], ids["▁world"]]
    assert engine.consume_tokens(ff) == 2 and engine.is_accepting()
    tok, pieces = _sentencepiece_tokenizer()       # the BPE-style one: same stripping
    bpe = Vocabulary.from_tokenizer(tok, eos_token_ids=[pieces["</s>"]])
    tokens, leftover = bpe.tokenize_partial(b"hello")
    assert bpe.decode_bytes(tokens) + leftover == b"hello"
    assert all(not bpe.token_bytes(t).startswith(b" ") for t in tokens)


# --- the engine API ----------------------------------------------------------------------------

def test_context_follows_rollback_reset_and_copy():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema(PERSON_SCHEMA, whitespace=2))
    engine.consume_tokens(llama.encode('{"'))
    expected = engine.compute_ff_tokens()
    other = engine.copy()
    engine.consume_tokens(expected)
    assert other.compute_ff_tokens() == expected
    engine.rollback(len(expected))
    assert engine.compute_ff_tokens() == expected
    engine.reset()
    assert engine.compute_ff_bytes() == b"{"
    eos = llama.eos_token_ids[0]
    engine.configure(Phrase("ok"))
    engine.consume_tokens(llama.encode("ok") + [eos])
    assert engine.is_finished and engine.compute_ff_tokens() == [] == \
        [b for b in engine.compute_ff_bytes()]


def test_tokenize_partial_bad_input():
    llama = shared_vocab("llama3")
    with pytest.raises(TypeError):
        llama.tokenize_partial(12)
    with pytest.raises(ValueError, match="out of range"):
        llama.tokenize_partial(b"x", recent_tokens=[10**7])
    with pytest.raises(ValueError, match="id"):
        llama.tokenize_partial(b"x", recent_tokens=["a"])
    assert llama.tokenize_partial(b"") == ([], b"")
    assert llama.tokenize_partial("日本"[:1].encode()[:2]) == ([], "日".encode()[:2])
    with pytest.raises(ValueError, match="does not allow"):
        engine = StructuringEngine(llama)
        engine.configure(Phrase("ab"))
        Boundary(engine.matcher, b"b")


def test_forced_tokens_in_lark_grammars_and_any_order_objects():
    from pse import Grammar, grammars

    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(Grammar.from_lark('start: "SELECT name_of_the_person FROM " /[a-z]+/'))
    assert engine.compute_ff_bytes() == b"SELECT name_of_the_person FROM "
    assert replay_canonical(engine, "SELECT name_of_the_person FROM people") > 0
    engine.configure(grammars.load("sql"))
    replay_canonical(engine, "SELECT a, b FROM t WHERE a = 1")
    engine.configure(JsonSchema(PERSON_SCHEMA, property_order="any"))
    assert replay_canonical(engine, '{"age":3,"name_of_the_person":"Al"}') > 0
