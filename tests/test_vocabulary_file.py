"""Vocabulary.save / Vocabulary.load: a loaded vocabulary equals the one saved in everything
(token bytes, ids, trie, masks, encoding); a damaged, truncated, foreign or outdated file, or a
tokenizer file other than the one it was built from, raises VocabularyError."""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pse
from conftest import TOKENIZER_NAMES, shared_vocab, tokenizer_path
from helpers import errors_in_threads
from pse import JsonSchema, StructuringEngine, Vocabulary, VocabularyError
from pse import vocabulary_file
from pse._core.trie import TokenTrie
from test_vocabulary import CORPUS

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
    "n": {"type": "number"}, "ok": {"type": "boolean"}}, "required": ["name", "n"]}
INSTANCE = '{"name":"Zoë 東京 🎉","tags":["a b","\\"q\\""],"n":-12.5e3,"ok":true}'
PROBES = [b'{"name":', b" example ", b"(.", b"-1.2", b"\xe6\x9d\xb1\xe4", b"zzzzqqq", b"",
          b"<|end", b"\n\n\n", b"  ", bytes(range(256))]


def assert_equal_vocabularies(a: Vocabulary, b: Vocabulary) -> None:
    """Equal in everything a caller or an engine reads."""
    assert a.size == b.size and len(a) == len(b)
    assert a.eos_token_ids == b.eos_token_ids
    assert a.special_token_ids == b.special_token_ids
    assert a._tokens == b._tokens
    assert a.digest == b.digest
    tokens_a, kind_a = a.token_table()
    tokens_b, kind_b = b.token_table()
    assert tokens_a == tokens_b and np.array_equal(kind_a, kind_b)
    arrays_a, arrays_b = a.trie.arrays(), b.trie.arrays()
    assert arrays_a.keys() == arrays_b.keys()
    for name in arrays_a:
        assert arrays_a[name].dtype == arrays_b[name].dtype, name
        assert np.array_equal(arrays_a[name], arrays_b[name]), name
    assert a.trie.n_nodes == b.trie.n_nodes and a.trie.max_depth == b.trie.max_depth
    assert np.array_equal(a.trie.kinds_below, b.trie.kinds_below)
    for probe in PROBES + [t for t in a._tokens[:: max(1, len(a._tokens) // 200)] if t]:
        assert a.lookup(probe) == b.lookup(probe)
        assert a.longest_prefix(probe) == b.longest_prefix(probe)
        assert a.tokens_with_prefix(probe[:2]) == b.tokens_with_prefix(probe[:2])
        assert a.trie.extends(probe) == b.trie.extends(probe)


def masks_along(vocab: Vocabulary, ids: list[int]) -> list[np.ndarray]:
    engine = StructuringEngine(vocab)
    engine.configure(JsonSchema(SCHEMA))
    masks = []
    for tid in ids:
        masks.append(engine.compute_mask().copy())
        assert engine.consume_token(tid)
    masks.append(engine.compute_mask().copy())
    assert engine.is_accepting()
    return masks


# --- the shared tokenizers ------------------------------------------------------------------

@pytest.mark.parametrize("name", TOKENIZER_NAMES)
def test_round_trip_of_a_shared_tokenizer(name, tmp_path):
    built = shared_vocab(name)
    saved = tmp_path / f"{name}.vocab"
    built.save(saved)
    loaded = Vocabulary.load(saved)
    assert_equal_vocabularies(built, loaded)
    # it encodes with the tokenizer file it was checked against
    for text in CORPUS:
        assert loaded.encode(text) == built.encode(text)
    ids = built.encode(INSTANCE)
    assert loaded.decode(ids) == INSTANCE
    got, expected = masks_along(loaded, ids), masks_along(built, ids)
    assert all(np.array_equal(g, e) for g, e in zip(got, expected))
    # the same file given explicitly
    assert Vocabulary.load(saved, tokenizer_file=tokenizer_path(name)).digest == built.digest


def test_a_fresh_build_equals_a_load_of_it(tmp_path):
    """Two builds of one file are equal, and equal to what loading either gives."""
    path = tokenizer_path("gpt4o")
    first, second = Vocabulary.from_file(path), Vocabulary.from_file(path)
    assert_equal_vocabularies(first, second)
    first.save(tmp_path / "v")
    assert_equal_vocabularies(Vocabulary.load(tmp_path / "v"), second)


def test_the_tokenizer_file_must_be_the_one_it_was_built_from(tmp_path):
    shared_vocab("llama3").save(tmp_path / "llama.vocab")
    with pytest.raises(VocabularyError, match="is not the tokenizer file"):
        Vocabulary.load(tmp_path / "llama.vocab", tokenizer_file=tokenizer_path("qwen3"))


def test_lookups_of_every_token_against_a_dict(name="qwen3"):
    """The flat trie's lookup and longest_prefix (what replaced the datrie) give, for every
    token, the lowest id of its bytes, as a dict built from the token bytes does."""
    vocab = shared_vocab(name)
    canonical: dict[bytes, int] = {}
    for i in range(vocab.size):
        if vocab.has_token(i) and i not in vocab.special_token_ids and vocab.token_bytes(i):
            canonical.setdefault(vocab.token_bytes(i), i)
    for data, i in canonical.items():
        assert vocab.lookup(data) == i
        assert vocab.longest_prefix(data) == (data, i)
    assert set(vocab.tokens_with_prefix(b"")) == set(canonical.values())
    order = [vocab.token_bytes(i) for i in vocab.tokens_with_prefix(b"")]
    assert order == sorted(order)


# --- small vocabularies ---------------------------------------------------------------------

def small_vocab() -> Vocabulary:
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abc", b"", None, b"ab", b"\xe6\x9d",
                                                 b"<eos>", b"<pad>", None]
    return Vocabulary.from_tokens(tokens, eos_token_ids=[264], special_token_ids=[264, 265],
                                  n_vocab=300)


def test_round_trip_of_from_tokens(tmp_path):
    vocab = small_vocab()
    vocab.save(tmp_path / "small.vocab")
    loaded = Vocabulary.load(tmp_path / "small.vocab")
    assert_equal_vocabularies(vocab, loaded)
    assert loaded.size == 300 and not loaded.has_token(259) and loaded.token_bytes(258) == b""
    assert loaded.lookup(b"ab") == 256  # the lowest of two ids
    assert loaded.encode("abcab") == vocab.encode("abcab") == [257, 256]
    with pytest.raises(VocabularyError, match="not read from a tokenizer file"):
        Vocabulary.load(tmp_path / "small.vocab", tokenizer_file=tokenizer_path("llama3"))


@settings(max_examples=60)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=5), st.sampled_from([b"a" * 80 + b"x",
                                                                              b"a" * 80])),
                min_size=1, max_size=60),
       st.data())
def test_round_trip_of_any_token_list(tokens, data):
    import tempfile
    from pathlib import Path

    special = data.draw(st.sets(st.integers(0, len(tokens) - 1), max_size=3))
    vocab = Vocabulary.from_tokens(tokens, special_token_ids=special,
                                   eos_token_ids=sorted(special)[:1])
    with tempfile.TemporaryDirectory() as tmp:
        vocab.save(Path(tmp) / "v")
        assert_equal_vocabularies(vocab, Vocabulary.load(Path(tmp) / "v"))


def test_masks_of_a_loaded_small_vocabulary(tmp_path):
    tokens = [bytes([b]) for b in range(32, 127)] + ["é".encode(), b'{"', b'":', b'"}', b"na",
                                                      b"me", b"true", b"12", b'","', b"<eos>"]
    vocab = Vocabulary.from_tokens(tokens, eos_token_ids=[len(tokens) - 1],
                                   special_token_ids=[len(tokens) - 1])
    vocab.save(tmp_path / "v")
    loaded = Vocabulary.load(tmp_path / "v")
    ids = vocab.encode('{"name":"né","n":12,"ok":true}')
    got, expected = masks_along(loaded, ids), masks_along(vocab, ids)
    assert all(np.array_equal(g, e) for g, e in zip(got, expected))


# --- a tokenizer.json in a temporary folder ---------------------------------------------------

def byte_level_tokenizer(path, extra: list[str] = ()):
    """A small byte-level BPE tokenizer.json (GPT-2's byte map), with an added special token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    from pse.vocabulary import gpt2_byte_decoder

    alphabet = sorted(gpt2_byte_decoder(), key=lambda ch: gpt2_byte_decoder()[ch])
    pieces = alphabet + ["Ġt", "he", "Ġthe", "Ġw", "or", "ld", *extra]
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "w"), ("o", "r"), ("l", "d")]
    tok = Tokenizer(models.BPE(vocab={p: i for i, p in enumerate(pieces)}, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|end|>"])
    tok.save(str(path))
    path.with_name("tokenizer_config.json").write_text(json.dumps({"eos_token": "<|end|>"}))
    return path


def test_a_saved_vocabulary_is_checked_against_its_tokenizer_file(tmp_path):
    source = byte_level_tokenizer(tmp_path / "tokenizer.json")
    vocab = Vocabulary.from_file(source)
    saved = tmp_path / "v.vocab"
    vocab.save(saved)
    loaded = Vocabulary.load(saved)
    assert_equal_vocabularies(vocab, loaded)
    assert loaded.encode(" the world") == vocab.encode(" the world")
    assert loaded.eos_token_ids == vocab.eos_token_ids and len(vocab.eos_token_ids) == 1

    # moved: found where it is told
    moved = tmp_path / "elsewhere.json"
    source.rename(moved)
    with pytest.raises(VocabularyError, match="cannot be read.*tokenizer_file"):
        Vocabulary.load(saved)
    again = Vocabulary.load(saved, tokenizer_file=moved)
    assert again.encode(" the world") == vocab.encode(" the world")
    # saved again, it records the new place
    again.save(saved)
    assert Vocabulary.load(saved).digest == vocab.digest

    # changed: refused, whether found by its recorded path or given
    moved.write_bytes(moved.read_bytes() + b"\n")
    with pytest.raises(VocabularyError, match="is not the tokenizer file.*SHA-256"):
        Vocabulary.load(saved)
    other = byte_level_tokenizer(tmp_path / "other.json", extra=["Ġwor"])
    with pytest.raises(VocabularyError, match="is not the tokenizer file"):
        Vocabulary.load(saved, tokenizer_file=other)


def test_byte_level_pieces_outside_the_byte_map(tmp_path):
    """Pieces with a character the GPT-2 map lacks are taken as UTF-8, as before."""
    from pse.vocabulary import _byte_level_bytes, _byte_level_pieces

    source = byte_level_tokenizer(tmp_path / "tokenizer.json", extra=["a b", "x€", "Ġ€"])
    vocab = Vocabulary.from_file(source)
    data = json.loads(source.read_text())
    for piece, i in data["model"]["vocab"].items():
        assert vocab.token_bytes(i) == _byte_level_bytes(piece)
    assert vocab.token_bytes(data["model"]["vocab"]["x€"]) == "x€".encode()
    pieces = ["", "Ġ", "a b", "ĊĊ", "€", "Ā", "ÿ", "\x00", "ĠĠ€Ġ"]
    assert _byte_level_pieces(pieces) == [_byte_level_bytes(p) for p in pieces]


@given(st.lists(st.text(alphabet=st.sampled_from("aĠĊé€ \x7fĀłŃń"), max_size=6), max_size=30))
def test_byte_level_pieces_against_one_by_one(pieces):
    from pse.vocabulary import _byte_level_bytes, _byte_level_pieces

    assert _byte_level_pieces(pieces) == [_byte_level_bytes(p) for p in pieces]


def test_tiktoken_file_round_trip(tmp_path):
    pytest.importorskip("tiktoken")
    path = tmp_path / "t.tiktoken"
    pairs = [(0, b"a"), (1, b"b"), (2, b" "), (3, b"ab"), (4, b"ba")]
    path.write_bytes(b"".join(base64.b64encode(t) + b" " + str(i).encode() + b"\n"
                              for i, t in pairs))
    vocab = Vocabulary.from_file(path, pattern=r" ?[ab]+", special_tokens={"<|endoftext|>": 5})
    vocab.save(tmp_path / "v")
    loaded = Vocabulary.load(tmp_path / "v")
    assert_equal_vocabularies(vocab, loaded)
    assert loaded.encode("bab ab") == vocab.encode("bab ab") == [1, 3, 2, 3]  # tiktoken's BPE
    assert pickle.loads(pickle.dumps(loaded)).encode("bab") == [1, 3]
    plain = Vocabulary.from_file(path)
    plain.save(tmp_path / "p")
    assert Vocabulary.load(tmp_path / "p").encode("bab") == plain.encode("bab") == [4, 1]
    path.write_bytes(path.read_bytes() + b"YWFh 6\n")
    with pytest.raises(VocabularyError, match="is not the tokenizer file"):
        Vocabulary.load(tmp_path / "v")


def test_pickled_vocabulary_keeps_its_source(tmp_path):
    source = byte_level_tokenizer(tmp_path / "tokenizer.json")
    vocab = pickle.loads(pickle.dumps(Vocabulary.from_file(source)))
    vocab.save(tmp_path / "v")
    assert Vocabulary.load(tmp_path / "v").digest == vocab.digest
    source.write_bytes(source.read_bytes() + b" ")
    with pytest.raises(VocabularyError, match="is not the tokenizer file"):
        Vocabulary.load(tmp_path / "v")


def test_a_vocabulary_from_a_tokenizer_object_cannot_be_saved(tmp_path):
    from tokenizers import Tokenizer

    source = byte_level_tokenizer(tmp_path / "tokenizer.json")
    vocab = Vocabulary.from_tokenizer(Tokenizer.from_file(str(source)))
    with pytest.raises(VocabularyError, match="only a vocabulary read with"):
        vocab.save(tmp_path / "v")
    assert not (tmp_path / "v").exists()


def test_loads_in_threads(tmp_path):
    source = byte_level_tokenizer(tmp_path / "tokenizer.json")
    Vocabulary.from_file(source).save(tmp_path / "v")
    loaded = Vocabulary.load(tmp_path / "v")  # its tokenizer parsed by the first encode
    results = []

    def work():
        other = Vocabulary.load(tmp_path / "v")
        results.append((loaded.encode(" the world"), other.encode(" the world"), other.digest))

    assert not errors_in_threads(work, 4) and len(set(map(repr, results))) == 1


# --- bad files ------------------------------------------------------------------------------

def parts(path):
    """(format version, header, payload) of a saved file."""
    data = path.read_bytes()
    magic, version, head_len = vocabulary_file._PREFIX.unpack_from(data)
    start = vocabulary_file._PREFIX.size + head_len
    start += -start % vocabulary_file.ALIGN
    header = json.loads(data[vocabulary_file._PREFIX.size:vocabulary_file._PREFIX.size + head_len])
    return version, header, bytearray(data[start:])


def write_parts(path, version, header, payload, reseal=True):
    """Write a file from its parts; `reseal`: record the payload's new SHA-256 (a forger's
    file, which only the checks of its contents can refuse)."""
    if reseal:
        header["payload"]["sha256"] = hashlib.sha256(payload).hexdigest()
    head = json.dumps(header).encode()
    prefix = vocabulary_file._PREFIX.pack(vocabulary_file.MAGIC, version, len(head)) + head
    path.write_bytes(prefix + bytes(-len(prefix) % vocabulary_file.ALIGN) + bytes(payload))


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "small.vocab"
    small_vocab().save(path)
    return path


def test_a_damaged_payload(saved):
    version, header, payload = parts(saved)
    payload[len(payload) // 2] ^= 0x40
    write_parts(saved, version, header, payload, reseal=False)
    with pytest.raises(VocabularyError, match="damaged.*SHA-256"):
        Vocabulary.load(saved)


def test_a_damaged_header(saved):
    data = bytearray(saved.read_bytes())
    data[vocabulary_file._PREFIX.size + 3] = ord("}")
    saved.write_bytes(bytes(data))
    with pytest.raises(VocabularyError, match="header is damaged"):
        Vocabulary.load(saved)


def test_forged_tokens_and_trie(saved):
    version, header, payload = parts(saved)
    blob_at = header["arrays"]["blob"][0]
    payload[blob_at] ^= 1  # a token's bytes, with the payload's checksum made to match
    write_parts(saved, version, header, payload)
    with pytest.raises(VocabularyError, match="damaged.*not the trie of its tokens"):
        Vocabulary.load(saved)  # (the trie spells the old bytes)
    payload[blob_at] ^= 1
    forged = dict(header, digest="0" * 64)
    write_parts(saved, version, forged, payload)
    with pytest.raises(VocabularyError, match="damaged: its tokens do not have the digest"):
        Vocabulary.load(saved)
    ids_at = header["arrays"]["tok_ids"][0]
    payload[ids_at:ids_at + 4] = struct.pack("<i", 10 ** 6)  # an id past the vocabulary
    write_parts(saved, version, header, payload)
    with pytest.raises(VocabularyError, match="damaged.*not a consistent trie"):
        Vocabulary.load(saved)
    payload[ids_at:ids_at + 4] = struct.pack("<i", 0)
    end_at = header["arrays"]["node_end"][0]
    payload[end_at + 4:end_at + 8] = struct.pack("<i", 10 ** 6)  # a subtree past the end
    write_parts(saved, version, header, payload)
    with pytest.raises(VocabularyError, match="not a consistent trie"):
        Vocabulary.load(saved)
    version, header, payload = parts(saved)
    header["arrays"]["ends"][0] += 64 * 10 ** 6  # an array outside the file
    write_parts(saved, version, header, payload)
    with pytest.raises(VocabularyError, match="outside the file"):
        Vocabulary.load(saved)


def test_a_forged_trie_that_stays_in_bounds(saved):
    """A trie whose indexes are all in range but which does not hold the tokens (two ids
    swapped, a listed id whose token ends elsewhere): refused, not masked with."""
    version, header, payload = parts(saved)
    ids_at, n = header["arrays"]["tok_ids"][0], header["arrays"]["tok_ids"][1]
    ids = list(struct.unpack_from(f"<{n}i", payload, ids_at))
    k = next(i for i in range(n - 1) if ids[i] != ids[i + 1])
    ids[k], ids[k + 1] = ids[k + 1], ids[k]
    struct.pack_into(f"<{n}i", payload, ids_at, *ids)
    write_parts(saved, version, header, payload)
    with pytest.raises(VocabularyError, match="damaged.*not the trie of its tokens"):
        Vocabulary.load(saved)


@pytest.mark.parametrize("keep", [0, 4, 10, 16, 40, 200, -1000, -1])
def test_a_truncated_file(saved, keep):
    data = saved.read_bytes()
    saved.write_bytes(data[:keep])
    with pytest.raises(VocabularyError, match="not a pse vocabulary|truncated|header is damaged"):
        Vocabulary.load(saved)


def test_bytes_appended(saved):
    saved.write_bytes(saved.read_bytes() + b"\0" * 64)
    with pytest.raises(VocabularyError, match="bytes appended"):
        Vocabulary.load(saved)


def test_files_of_other_formats(tmp_path):
    npz = tmp_path / "arrays.npz"
    np.savez(npz, a=np.arange(10))
    pickled = tmp_path / "v.pickle"
    pickled.write_bytes(pickle.dumps(small_vocab()))
    text = tmp_path / "tokenizer.json"
    text.write_text('{"model": {}}')
    for path in (npz, pickled, text):
        with pytest.raises(VocabularyError, match="is not a pse vocabulary file"):
            Vocabulary.load(path)
    with pytest.raises(VocabularyError, match="cannot read vocabulary file"):
        Vocabulary.load(tmp_path / "missing.vocab")


def test_another_format_version(saved):
    version, header, payload = parts(saved)
    write_parts(saved, version + 1, header, payload)
    with pytest.raises(VocabularyError, match=f"format {version + 1}.*build the vocabulary again"):
        Vocabulary.load(saved)


def test_another_pse_version(saved, monkeypatch):
    monkeypatch.setattr(pse, "__version__", "0.0.1-other")
    with pytest.raises(VocabularyError, match=r"saved by pse \S+; this is pse 0.0.1-other"):
        Vocabulary.load(saved)


def test_a_file_that_cannot_be_written(tmp_path):
    with pytest.raises(VocabularyError, match="cannot write vocabulary file"):
        small_vocab().save(tmp_path / "no such folder" / "v")


def test_trie_from_bad_arrays():
    good = TokenTrie([(b"ab", 0), (b"a", 1)]).arrays()
    assert TokenTrie.from_arrays({k: v.copy() for k, v in good.items()}, 2).n_nodes == 3
    with pytest.raises(ValueError, match="missing"):
        TokenTrie.from_arrays({k: v for k, v in good.items() if k != "tok_ids"}, 2)
    with pytest.raises(ValueError, match="int32"):
        TokenTrie.from_arrays({**good, "node_end": good["node_end"].astype(np.int64)}, 2)
    with pytest.raises(ValueError, match="inconsistent sizes"):
        TokenTrie.from_arrays(good, 1)  # an id past the vocabulary
    parent = good["node_parent"].copy()
    parent[2] = 2
    with pytest.raises(ValueError, match="not a consistent trie"):
        TokenTrie.from_arrays({**good, "node_parent": parent}, 2)
