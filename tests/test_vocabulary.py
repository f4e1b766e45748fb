"""Vocabulary: exact token bytes for real tokenizers, prefix look-ups, bad input."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, strategies as st

from conftest import TOKENIZER_NAMES, shared_vocab, tokenizer_path
from pse import Vocabulary, VocabularyError
from pse._core.trie import TokenTrie

CORPUS = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    'def f(x):\n    return {"a": [1, 2.5e-3, None]}  # comment\n\tpass\r\n',
    '{"name":"Zoë","tags":["naïve","façade"],"emoji":"🎉👩‍💻","n":-12.5}',
    "東京は日本の首都です。北京欢迎你。서울특별시 Ελληνικά русский язык",
    "   leading spaces and trailing   \n\n\n",
    "special-ish text <|endoftext|> <s> </s> [INST] ``` ~~~ \\u00e9 \u2581",
    "Ünïcödé ßtrâñgé chars: ½ ¾ µ ¶ § © ® ™ ∑ ∫ √ ≈ ≠ ≤ ≥ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]


@pytest.fixture(params=TOKENIZER_NAMES)
def name(request):
    return request.param


def _reference(name):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(tokenizer_path(name)))


def test_corpus_round_trips(name):
    vocab = shared_vocab(name)
    ref = _reference(name)
    for text in CORPUS:
        ids = ref.encode(text, add_special_tokens=False).ids
        assert b"".join(vocab.token_bytes(i) for i in ids) == text.encode("utf-8")
        assert vocab.decode(ids) == ref.decode(ids, skip_special_tokens=False) == text
        assert vocab.encode(text) == ids


def test_every_token_matches_the_tokenizers_own_decoding(name):
    vocab = shared_vocab(name)
    ref = _reference(name)
    ids = [i for i in range(vocab.size) if vocab.has_token(i)]
    decoded = ref.decode_batch([[i] for i in ids], skip_special_tokens=False)
    checked = 0
    for i, text in zip(ids, decoded):
        raw = vocab.token_bytes(i)
        try:
            expected = raw.decode("utf-8")
        except UnicodeDecodeError:
            assert "\ufffd" in text  # the tokenizer cannot show half a character either
            continue
        assert text == expected, (i, raw, text)
        checked += 1
    assert checked > 0.9 * len(ids)


def test_sizes_ids_and_eos():
    llama = shared_vocab("llama3")
    assert llama.size == 128256 and llama.eos_token_ids == (128001,)
    assert 128001 in llama.special_token_ids
    gpt4o = shared_vocab("gpt4o")
    assert gpt4o.size == 200019 and len(gpt4o) == 200000  # ids are not contiguous
    missing = [i for i in range(gpt4o.size) if not gpt4o.has_token(i)]
    assert missing
    with pytest.raises(VocabularyError, match="no token has id"):
        gpt4o.token_bytes(missing[0])
    qwen = shared_vocab("qwen3")
    assert qwen.eos_token_ids and qwen.token_bytes(qwen.eos_token_ids[0]) == b"<|im_end|>"


def test_special_tokens_are_not_text():
    llama = shared_vocab("llama3")
    eos = llama.eos_token_ids[0]
    assert llama.token_bytes(eos) == b"<|end_of_text|>"
    assert llama.lookup(b"<|end_of_text|>") is None
    found = llama.longest_prefix(b"<|end_of_text|>")
    assert found is None or found[1] not in llama.special_token_ids


def test_n_vocab_pads_and_eos_argument_wins():
    path = tokenizer_path("llama3")
    v = Vocabulary.from_file(path, n_vocab=128512, eos_token_ids=[128009])
    assert v.size == 128512 and v.eos_token_ids == (128009,)
    assert not v.has_token(128300)
    with pytest.raises(VocabularyError, match="n_vocab"):
        Vocabulary.from_file(path, n_vocab=1000)


def test_pickle_round_trip():
    v = shared_vocab("llama3")
    w = pickle.loads(pickle.dumps(v))
    assert w.size == v.size and w.eos_token_ids == v.eos_token_ids
    assert all(w.token_bytes(i) == v.token_bytes(i) for i in range(0, v.size, 97))
    assert w.encode("Hello world") == v.encode("Hello world")
    assert w.longest_prefix(b"Hello world") == v.longest_prefix(b"Hello world")


def test_trie_memory_and_shape():
    v = shared_vocab("llama3")
    assert v.trie.nbytes < 20_000_000
    arrays = v.trie.arrays()
    n = v.trie.n_nodes
    assert arrays["node_end"][0] == n
    assert len(arrays["tok_ids"]) == len(v) - len(v.special_token_ids)
    # parents spell each token back from the node its bytes end at
    parent, byte, tok_node = arrays["node_parent"], arrays["node_byte"], arrays["tok_node"]
    for i in range(0, v.size, 379):
        if not v.has_token(i) or i in v.special_token_ids:
            continue
        node, spelled = tok_node[i], []
        while node != 0:
            spelled.append(byte[node])
            node = parent[node]
        assert bytes(reversed(spelled)) == v.token_bytes(i)


# --- a SentencePiece-style vocabulary with byte fallback --------------------------------------


def _sentencepiece_tokenizer():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces += ["▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "▁he", "▁hel", "▁hello", "▁w",
               "▁world", "é", "▁é"]
    vocab = {p: i for i, p in enumerate(pieces)}
    model = models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True)
    tok = Tokenizer(model)
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(["<s>", "</s>"])
    return tok, vocab


def test_sentencepiece_style_with_byte_fallback():
    tok, pieces = _sentencepiece_tokenizer()
    v = Vocabulary.from_tokenizer(tok, eos_token_ids=[pieces["</s>"]])
    assert v.token_bytes(pieces["▁hello"]) == b" hello"
    assert v.token_bytes(pieces["<0x0A>"]) == b"\n"
    assert v.token_bytes(pieces["<0xC3>"]) == b"\xc3"
    assert v.token_bytes(pieces["é"]) == "é".encode()
    assert pieces["</s>"] in v.special_token_ids and v.eos_token_ids == (pieces["</s>"],)
    ids = tok.encode("hello world\n").ids
    assert v.decode_bytes(ids) == b" hello world\n"  # the tokenizer's dummy-prefix space


def test_sentencepiece_from_file(tmp_path):
    tok, pieces = _sentencepiece_tokenizer()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>"}))
    v = Vocabulary.from_file(path)
    assert v.eos_token_ids == (pieces["</s>"],)
    assert v.token_bytes(pieces["▁world"]) == b" world"


# --- other tokenizer objects -----------------------------------------------------------------


def test_tiktoken_encoding():
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is in the test extra")
    llama = shared_vocab("llama3")
    ranks = {llama.token_bytes(i): i for i in range(128000)}
    enc = tiktoken.Encoding("llama3-test", pat_str=r"\s+|\S+", mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 128001, "<|other|>": 128005})
    v = Vocabulary.from_tokenizer(enc)
    assert v.size == 128006 and v.eos_token_ids == (128001,)
    assert Vocabulary.from_tokenizer(enc, eos_token_ids=[128005]).eos_token_ids == (128005,)
    assert 128001 in v.special_token_ids
    assert all(v.token_bytes(i) == llama.token_bytes(i) for i in range(0, 128000, 13))
    text = "Hello wörld 🎉"
    assert v.decode_bytes(v.encode(text)) == text.encode()


def test_transformers_fast_tokenizer():
    transformers = pytest.importorskip("transformers", reason="transformers is in the test extra")
    path = tokenizer_path("qwen3")
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="<|im_end|>")
    v = Vocabulary.from_tokenizer(tok)
    ref = shared_vocab("qwen3")
    assert v.size == ref.size and v.eos_token_ids == (tok.eos_token_id,)
    for text in CORPUS:
        ids = v.encode(text)
        assert v.decode_bytes(ids) == text.encode()


def test_transformers_slow_byte_level_tokenizer(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is in the test extra")
    data = json.loads(tokenizer_path("llama3").read_text())
    (tmp_path / "vocab.json").write_text(json.dumps(data["model"]["vocab"]))
    merges = data["model"]["merges"]
    lines = [" ".join(m) if isinstance(m, list) else m for m in merges]
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(lines) + "\n")
    tok = transformers.GPT2Tokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    v = Vocabulary.from_tokenizer(tok)
    llama = shared_vocab("llama3")
    assert all(v.token_bytes(i) == llama.token_bytes(i) for i in range(0, 128000, 7))


# --- prefix look-ups against brute force ------------------------------------------------------

byte_strings = st.binary(min_size=1, max_size=6)


@given(st.lists(byte_strings, min_size=1, max_size=40), st.lists(st.binary(max_size=8), max_size=20))
def test_prefix_lookups_against_brute_force(tokens, probes):
    v = Vocabulary.from_tokens(tokens)
    canonical = {}
    for i, t in enumerate(tokens):
        canonical.setdefault(t, i)
    for probe in probes + tokens:
        prefixes = [t for t in canonical if probe.startswith(t)]
        expected = max(prefixes, key=len) if prefixes else None
        got = v.longest_prefix(probe)
        assert (got[0] if got else None) == expected
        if got:
            assert got[1] == canonical[got[0]]
        assert v.lookup(probe) == canonical.get(probe)
        starting = sorted(canonical[t] for t in canonical if t.startswith(probe))
        assert sorted(v.tokens_with_prefix(probe)) == starting


def reference_trie(pairs):
    """The flat trie's arrays, built the plain way: sort (bytes, id), then one node per new
    byte in depth-first order."""
    items = sorted((b, i) for b, i in pairs if b)
    node_byte, node_depth, node_end, node_parent, node_tok_off = [0], [0], [0], [0], [0]
    tok_ids, tok_node = [], [-1] * (max([i for _, i in items], default=0) + 1)
    path, prev = [], b""
    for tok, tid in items:
        common = 0
        while common < min(len(tok), len(prev)) and tok[common] == prev[common]:
            common += 1
        while len(path) > common:
            node_end[path.pop()] = len(node_byte)
        for d in range(common, len(tok)):
            node_parent.append(path[-1] if path else 0)
            node_byte.append(tok[d])
            node_depth.append(d + 1)
            node_end.append(0)
            node_tok_off.append(len(tok_ids))
            path.append(len(node_byte) - 1)
        tok_node[tid] = path[-1]
        tok_ids.append(tid)
        prev = tok
    while path:
        node_end[path.pop()] = len(node_byte)
    node_end[0] = len(node_byte)
    node_tok_off.append(len(tok_ids))
    return {"node_byte": node_byte, "node_depth": node_depth, "node_end": node_end,
            "node_tok_off": node_tok_off, "tok_ids": tok_ids or [0], "node_parent": node_parent,
            "tok_node": tok_node}


long_prefix = st.sampled_from([b"", b"a" * 70, b"a" * 70 + b"b", b"\xff" * 3])


@given(st.lists(st.tuples(long_prefix, st.binary(max_size=4)).map(b"".join), max_size=120),
       st.data())
def test_trie_arrays_against_a_plain_build(tokens, data):
    """The trie's sort (radix, then comparisons for few or long-shared entries) and layout
    give the arrays a plain sort and loop give; duplicates keep every id, lowest first."""
    ids = data.draw(st.permutations(range(len(tokens))))
    pairs = list(zip(tokens, ids))
    expected = reference_trie(pairs)
    for trie in (TokenTrie(pairs), TokenTrie.from_token_list(
            tuple(t for t, _ in sorted(pairs, key=lambda p: p[1])), ())):
        got = trie.arrays()
        assert {k: v.tolist() for k, v in got.items()} == expected
        assert trie.max_depth == max([len(t) for t in tokens], default=0)


def test_every_byte_value():
    tokens = [bytes([b]) for b in range(256)] + [bytes([b, 255 - b]) for b in range(256)]
    v = Vocabulary.from_tokens(tokens)
    for b in range(256):
        assert v.lookup(bytes([b])) == b
        assert v.longest_prefix(bytes([b, 255 - b, 7])) == (bytes([b, 255 - b]), 256 + b)
        assert sorted(v.tokens_with_prefix(bytes([b]))) == [b, 256 + b]
    assert v.decode_bytes(v.encode(bytes(range(256)))) == bytes(range(256))


def test_llama3_prefix_lookups_against_brute_force():
    v = shared_vocab("llama3")
    all_tokens = {v.token_bytes(i): i for i in range(v.size)
                  if v.has_token(i) and i not in v.special_token_ids}
    for probe in [b'{"name":', b" example ", b"(.", b"-1.2", b"\xe6\x9d\xb1\xe4", b"zzzzqqq"]:
        prefixes = [t for t in all_tokens if probe.startswith(t)]
        assert v.longest_prefix(probe)[0] == max(prefixes, key=len)
        starting = {i for t, i in all_tokens.items() if t.startswith(probe[:2])}
        assert set(v.tokens_with_prefix(probe[:2])) == starting


# --- bad input ------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(VocabularyError, match="cannot read tokenizer file"):
        Vocabulary.from_file(tmp_path / "nope.json")


def test_malformed_file(tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(VocabularyError, match="not JSON"):
        Vocabulary.from_file(bad)
    bad.write_text('{"model": {"type": "WordPiece", "vocab": {"a": 0}}, "decoder": {"type": "WordPiece"}}')
    with pytest.raises(VocabularyError, match="cannot tell how pieces map to bytes"):
        Vocabulary.from_file(bad)
    bad.write_text('{"version": "1.0"}')
    with pytest.raises(VocabularyError, match="no 'model' section"):
        Vocabulary.from_file(bad)


def test_unknown_tokenizer_type():
    with pytest.raises(TypeError, match="unsupported tokenizer type"):
        Vocabulary.from_tokenizer(object())


def test_ids_out_of_range():
    with pytest.raises(VocabularyError, match="out of range"):
        Vocabulary.from_tokens(["a", "b"], eos_token_ids=[2])
    v = Vocabulary.from_tokens(["a", "b"])
    with pytest.raises(VocabularyError, match="no token has id 5"):
        v.token_bytes(5)
    with pytest.raises(TypeError):
        v.token_bytes("a")
    with pytest.raises(TypeError, match="token 1"):
        Vocabulary.from_tokens(["a", 3])
