"""`Vocabulary`: the exact bytes of every token id of a real tokenizer.

Supported: Hugging Face `tokenizer.json` files with byte-level BPE (Llama 3, Qwen, GPT-4o: the
GPT-2 byte-to-unicode map) or SentencePiece-style pieces ('▁' for a space, byte-fallback tokens
`<0x0A>`); `tokenizers.Tokenizer` objects; `transformers` tokenizers, fast or slow; tiktoken
`Encoding`s; and plain lists of tokens.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from pse._core.byte_kinds import prepare_kinds_below
from pse._core.trie import TokenTrie
from pse.encoders import (LazyTiktoken, LazyTokenizer, Source, encode_with, encoder_from_state,
                          encoder_state)
from pse.errors import VocabularyError

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")

# tokenize_partial: trailing tokens that may be held back, and recent tokens used as context
MAX_HELD_TOKENS = 4
MAX_CONTEXT_TOKENS = 4
# A context for a fragment when there are no recent tokens: a SentencePiece tokenizer then puts
# its dummy '▁' before the newline, which is never merged with what follows.
_SENTINEL_CONTEXT = b"\n"


def gpt2_byte_decoder() -> dict[str, int]:
    """The inverse of the GPT-2 byte-to-unicode map byte-level BPE tokenizers use."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    chars = list(printable)
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


_GPT2_TABLE = {ord(ch): b for ch, b in gpt2_byte_decoder().items()}
# per code point up to the map's highest (and one more for every code point above it): the
# byte it stands for, 256 where it stands for none
_GPT2_LUT = np.full(max(_GPT2_TABLE) + 2, 256, dtype=np.uint16)
_GPT2_LUT[list(_GPT2_TABLE)] = list(_GPT2_TABLE.values())


def _byte_level_bytes(token: str) -> bytes:
    """Bytes of a byte-level BPE token string (text outside the map is taken as UTF-8)."""
    try:
        return bytes(_GPT2_TABLE[ord(ch)] for ch in token)
    except KeyError:
        return token.encode("utf-8")


def _byte_level_pieces(pieces: list[str]) -> list[bytes]:
    """`_byte_level_bytes` of every piece, mapped all at once (numpy over the code points of
    the joined pieces); the few pieces with a character outside the map, one by one."""
    from pse._core.trie import tokens_from_blob

    codes = np.frombuffer("".join(pieces).encode("utf-32-le"), dtype="<u4")
    mapped = _GPT2_LUT[np.minimum(codes, len(_GPT2_LUT) - 1)]
    ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    out = list(tokens_from_blob(mapped.astype(np.uint8).tobytes(), ends,
                                np.ones(len(pieces), dtype=np.uint8)))
    for k in set(np.searchsorted(ends, np.flatnonzero(mapped > 255), side="right").tolist()):
        out[k] = _byte_level_bytes(pieces[k])
    return out


def _sentencepiece_bytes(token: str) -> bytes:
    m = _BYTE_FALLBACK.match(token)
    if m:
        return bytes([int(m.group(1), 16)])
    return token.replace("\u2581", " ").encode("utf-8")


class Vocabulary:
    """The exact bytes of every token id, with prefix look-ups and the flat trie.

    Build one with `from_file`, `from_tokenizer` or `from_tokens`; `save` one to a file and
    `load` it back in tens of milliseconds. A vocabulary never changes once made, so threads
    share it freely.

    Attributes:
        size: the width of a mask: the highest id + 1, or `n_vocab` when that is larger.
        eos_token_ids: ids that end generation.
        special_token_ids: ids no structure ever allows (their bytes are not text).
    """

    def __init__(self, tokens: Sequence[bytes | None], special_token_ids: Iterable[int] = (),
                 eos_token_ids: Iterable[int] = (), n_vocab: int | None = None,
                 encoder: Any = None) -> None:
        """Use the `from_*` constructors; `tokens[i]` is the bytes of id i (None: no such id)."""
        # a tuple: the garbage collector does not track it (its items are plain values)
        self._tokens: tuple[bytes | None, ...] = tuple(tokens)
        highest = len(self._tokens)
        if n_vocab is not None:
            if isinstance(n_vocab, bool) or not isinstance(n_vocab, int) or n_vocab < highest:
                raise VocabularyError(
                    f"n_vocab={n_vocab!r} is smaller than the tokenizer ({highest} ids); it must "
                    "be an int >= the highest id + 1 (the width of the model's logits)")
            if n_vocab > MAX_TOKEN_ID + 1:
                raise VocabularyError(f"n_vocab={n_vocab} is above {MAX_TOKEN_ID + 1} "
                                      "(pse.vocabulary.MAX_TOKEN_ID + 1)")
        self.size: int = max(highest, n_vocab or 0)
        self.special_token_ids: frozenset[int] = frozenset(self._check_ids(special_token_ids))
        self.eos_token_ids: tuple[int, ...] = tuple(self._check_ids(eos_token_ids))
        self._encoder = encoder
        self._init_lazy()
        self.trie: TokenTrie = TokenTrie.from_token_list(self._tokens, self.special_token_ids)
        self._prepare_masks()

    def _prepare_masks(self) -> None:
        """Make now what every mask needs and only the vocabulary decides (a few ms): the
        token table and the trie's kinds of bytes below each node. Then a vocabulary is ready
        to mask when made, and nothing is made lazily under a walk."""
        self.token_table()
        prepare_kinds_below(self.trie)

    def _init_lazy(self) -> None:
        """The attributes made on first use (the token table, the special tokens by text,
        the digest). Each is a pure function of the tokens and ids: two threads racing to make
        one make equal values, and either is kept. And the tokenizer file it was read from."""
        self._source: Source | None = None
        self._token_table: tuple[tuple[bytes | None, ...], np.ndarray] | None = None
        self._special_by_text: dict[bytes, int] | None = None
        self._digest: str | None = None
        self._present: np.ndarray | None = None  # uint8 per id: 1 where it has a token

    def _check_ids(self, ids: Iterable[int]) -> list[int]:
        out = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.size:
                raise VocabularyError(f"token id {i!r} is out of range (0 <= id < {self.size})")
            out.append(i)
        return out

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def from_tokens(cls, tokens: Sequence[str | bytes | None], eos_token_ids: Iterable[int] = (),
                    special_token_ids: Iterable[int] = (), n_vocab: int | None = None,
                    ) -> Vocabulary:
        """A vocabulary whose id i is `tokens[i]` (str is UTF-8 encoded; None leaves a gap).

        Raises:
            TypeError: a token is neither str, bytes nor None.
            VocabularyError: an id is out of range.
        """
        out: list[bytes | None] = []
        for i, t in enumerate(tokens):
            if isinstance(t, str):
                out.append(t.encode("utf-8"))
            elif isinstance(t, (bytes, bytearray)):
                out.append(bytes(t))
            elif t is None:
                out.append(None)
            else:
                raise TypeError(f"token {i} must be str, bytes or None, not {type(t).__name__}")
        return cls(out, special_token_ids, eos_token_ids, n_vocab)

    @classmethod
    def from_file(cls, path: str | Path, eos_token_ids: Iterable[int] | None = None,
                  n_vocab: int | None = None, special_tokens: Mapping[str, int] | None = None,
                  pattern: str | None = None) -> Vocabulary:
        """Read a Hugging Face `tokenizer.json`, or a tiktoken BPE file (`*.tiktoken`).

        For a tokenizer.json, the EOS ids come from `eos_token_ids`, else from the `eos_token`
        of a `tokenizer_config.json` beside the file.

        A `.tiktoken` file holds one token per line, its bytes in base64 and its rank (= id).
        It does not record its special tokens nor the regex that splits text before BPE, so
        they are arguments (the package that ships the file documents them). The EOS ids come
        from `eos_token_ids`, else `<|endoftext|>` when `special_tokens` has it (tiktoken's
        end-of-text token).

        Args:
            path: the file.
            eos_token_ids: ids that end generation.
            n_vocab: the width of the model's logits, when wider than the tokenizer.
            special_tokens: `.tiktoken` only: {text: id} of the special tokens.
            pattern: `.tiktoken` only: the pre-tokenization regex; with it (and the `tiktoken`
                package) `encode` is the tokenizer's own BPE. Without it `encode` takes the
                longest token first, which is not always the BPE's tokenization.

        Raises:
            VocabularyError: the file is missing or not a file pse can read, a special token's
                id collides with a token's, or `pattern` is given without `tiktoken` installed.
            ValueError: `special_tokens` or `pattern` given for a tokenizer.json.
        """
        path = Path(path)
        if path.suffix == ".tiktoken":
            return _from_tiktoken_file(cls, path, eos_token_ids, n_vocab, special_tokens,
                                       pattern)
        if special_tokens is not None or pattern is not None:
            raise ValueError("special_tokens and pattern are for .tiktoken files; a "
                             "tokenizer.json holds its own")
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise VocabularyError(f"cannot read tokenizer file {str(path)!r}: {e}") from None
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise VocabularyError(f"{str(path)!r} is not JSON ({e}); expected a Hugging Face "
                                  "tokenizer.json") from None
        tokens, special, added = _tokens_from_tokenizer_json(data, str(path))
        del data  # (the parsed file, merges and all: freed before the trie is built)
        if eos_token_ids is None:
            eos_token_ids = _eos_from_config(path.parent / "tokenizer_config.json", added)
        # parsing the file into a `tokenizers.Tokenizer` waits for the first `encode`
        vocab = cls(tokens, special, eos_token_ids, n_vocab, LazyTokenizer(raw))
        vocab._source = Source("tokenizer.json", path, data=raw)
        return vocab

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, eos_token_ids: Iterable[int] | None = None,
                       n_vocab: int | None = None) -> Vocabulary:
        """From a `tokenizers.Tokenizer`, a `transformers` tokenizer (fast or slow) or a
        tiktoken `Encoding`.

        Raises:
            TypeError: the object is none of those.
            VocabularyError: the tokenizer's pieces cannot be turned into bytes.
        """
        kind = type(tokenizer).__module__.split(".")[0]
        if kind == "tokenizers" and hasattr(tokenizer, "to_str"):
            text = tokenizer.to_str()
            tokens, special, added = _tokens_from_tokenizer_json(json.loads(text), "tokenizer")
            return cls(tokens, special, eos_token_ids or (), n_vocab, tokenizer)
        if kind == "tiktoken" or hasattr(tokenizer, "decode_single_token_bytes"):
            return _from_tiktoken(cls, tokenizer, eos_token_ids, n_vocab)
        if hasattr(tokenizer, "convert_ids_to_tokens") and hasattr(tokenizer, "get_vocab"):
            return _from_transformers(cls, tokenizer, eos_token_ids, n_vocab)
        raise TypeError(
            f"unsupported tokenizer type {type(tokenizer).__module__}.{type(tokenizer).__name__}; "
            "expected a tokenizers.Tokenizer, a transformers tokenizer or a tiktoken Encoding")

    # -- queries ------------------------------------------------------------------------------
    def token_bytes(self, token_id: int) -> bytes:
        """The exact bytes of `token_id` (special tokens: their text).

        Raises:
            VocabularyError: no token has that id.
        """
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise TypeError(f"a token id is an int, not {type(token_id).__name__}")
        if not 0 <= token_id < len(self._tokens) or self._tokens[token_id] is None:
            raise VocabularyError(f"no token has id {token_id} (vocabulary size {self.size})")
        return self._tokens[token_id]  # type: ignore[return-value]

    def token_table(self) -> tuple[tuple[bytes | None, ...], np.ndarray]:
        """Per id (0 .. size-1): the token's bytes (None: no token) and its kind, as uint8:
        0 text a structure can match, 1 EOS, 2 another special token or no token. Built once
        (every configured engine asks for it); both are shared, so read-only."""
        if self._token_table is None:
            tokens = self._tokens + (None,) * (self.size - len(self._tokens))
            kind = np.full(self.size, 2, dtype=np.uint8)
            present = self._present
            if present is None:
                present = np.fromiter((b is not None for b in self._tokens), dtype=np.uint8,
                                      count=len(self._tokens))
            kind[:len(self._tokens)][present.astype(bool)] = 0
            kind[list(self.special_token_ids)] = 2
            kind[list(self.eos_token_ids)] = 1
            kind.setflags(write=False)
            self._token_table = (tokens, kind)
        return self._token_table

    def has_token(self, token_id: int) -> bool:
        """True when `token_id` names a token (ids can have gaps)."""
        return 0 <= token_id < len(self._tokens) and self._tokens[token_id] is not None

    def lookup(self, data: bytes | str) -> int | None:
        """The id of the token whose bytes are exactly `data` (not special), or None. When
        several ids have those bytes, the lowest (the canonical one)."""
        found = self.trie.lookup(_as_bytes(data))
        return None if found < 0 else found

    def special_token_id(self, token: int | str) -> int:
        """The id of the token `SpecialToken(token)` names: an id of this vocabulary, or a
        text: that of a special token, else that of a text token whose bytes it is exactly.

        Raises:
            VocabularyError: no token has that id or that text.
            TypeError: `token` is neither an int nor a str.
        """
        if isinstance(token, bool) or not isinstance(token, (int, str)):
            raise TypeError(f"a special token is an id or a text, not {type(token).__name__}")
        if isinstance(token, int):
            if not self.has_token(token):
                raise VocabularyError(f"SpecialToken({token}): no token has id {token} "
                                      f"(vocabulary size {self.size})")
            return token
        if self._special_by_text is None:
            by_text: dict[bytes, int] = {}
            for i in sorted(self.special_token_ids):
                if self._tokens[i] is not None:
                    by_text.setdefault(self._tokens[i], i)
            self._special_by_text = by_text
        data = token.encode("utf-8")
        found = self._special_by_text.get(data, self.lookup(data))
        if found is None:
            raise VocabularyError(f"SpecialToken({token!r}): this vocabulary has no token "
                                  f"{token!r}")
        return found

    def has_special_token(self, token: int | str) -> bool:
        """Whether `special_token_id(token)` finds a token."""
        try:
            self.special_token_id(token)
        except VocabularyError:
            return False
        return True

    def longest_prefix(self, data: bytes | str) -> tuple[bytes, int] | None:
        """The longest (non-special) token that is a prefix of `data`, as (bytes, id)."""
        data = _as_bytes(data)
        found = self.trie.longest_prefix(data)
        if found is None:
            return None
        length, tid = found
        return data[:length], tid

    def tokens_with_prefix(self, prefix: bytes | str) -> list[int]:
        """Ids of the (non-special) tokens that start with `prefix`, in byte order (of
        several ids with the same bytes, the lowest)."""
        return self.trie.ids_with_prefix(_as_bytes(prefix))

    def encode(self, text: bytes | str) -> list[int]:
        """Token ids for `text`, as the tokenizer encodes it (no special tokens added).

        Vocabularies without a tokenizer (`from_tokens`), and bytes that are not UTF-8, are
        encoded greedily, longest token first.
        """
        data = _as_bytes(text)
        if self._encoder is not None:
            try:
                decoded = data.decode("utf-8")
            except UnicodeDecodeError:
                decoded = None
            if decoded is not None:
                return list(encode_with(self._encoder, decoded))
        return self._greedy_encode(data)

    def _greedy_encode(self, data: bytes) -> list[int]:
        ids = []
        i = 0
        while i < len(data):
            found = self.longest_prefix(data[i:])
            if found is None:
                raise VocabularyError(f"no token covers byte {data[i]:#04x} at offset {i}")
            ids.append(found[1])
            i += len(found[0])
        return ids

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of the tokens, joined."""
        return b"".join(self.token_bytes(i) for i in ids)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of the tokens (an incomplete UTF-8 character is replaced)."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def tokenize_partial(self, new_bytes: bytes | str, recent_tokens: Iterable[int] = (), *,
                         spans: Callable[[int], bool] | None = None,
                         ) -> tuple[list[int], bytes]:
        """Tokenize bytes that will surely come next, keeping only the tokens that stay the
        tokenizer's own (canonical) tokens whatever follows them.

        The bytes are encoded with the tokenizer after the text of a few recent tokens (the
        tokenizer's pre-tokenization can depend on them; a SentencePiece dummy prefix is
        stripped). Then up to MAX_HELD_TOKENS trailing tokens are held back: from the first
        position i within them from which a token could run past the end (`spans(i)`), every
        token reaching i or beyond is dropped, and so is every token the tokenizer writes
        differently when the text stops anywhere from i on (BPE merges within a pre-token
        depend on where it ends). An incomplete UTF-8 character at the end is held back too.

        Args:
            new_bytes: the bytes that come next.
            recent_tokens: ids committed just before them (the last MAX_CONTEXT_TOKENS are
                used as context).
            spans: spans(i) tells whether some token starting with new_bytes[i:end] and longer
                may come, where `end` is utf8_complete_length(new_bytes); default: whether the
                vocabulary has such a token at all (a structure narrows it down).

        Returns:
            (tokens, leftover): the tokens, and the bytes of new_bytes after them.

        Raises:
            TypeError: new_bytes is not str or bytes.
            ValueError: a recent token is not an id of this vocabulary.
        """
        data = _as_bytes(new_bytes)
        recent = [self._context_id(t) for t in recent_tokens][-MAX_CONTEXT_TOKENS:]
        body = data[:utf8_complete_length(data)]
        tokens, context = self._encode_continuation(body, recent) if body else ([], b"")
        if not tokens:
            return [], data
        if spans is None:
            spans = lambda i: self.trie.extends(body[i:])  # noqa: E731
        held = tokens[-MAX_HELD_TOKENS:]
        tail = sum(len(self._tokens[i]) for i in held)  # type: ignore[arg-type]
        keep = len(body)
        for start in range(len(body) - tail, len(body)):
            if spans(start):
                keep = start
                break
        n, end = len(tokens), len(body)
        while n and end > keep:
            n -= 1
            end -= len(self._tokens[tokens[n]])  # type: ignore[arg-type]
        # BPE merges inside a pre-token depend on where it ends: keep only the tokens the
        # tokenizer also produces when the text stops anywhere from `keep` on
        for stop in range(keep, len(body)):
            if not n:
                break
            if utf8_complete_length(body[:stop]) != stop:
                continue  # the text cannot stop inside a character
            cut = self._encode_after(context, body[:stop]) or []
            stable = 0
            while stable < n and stable < len(cut) and cut[stable] == tokens[stable]:
                stable += 1
            n = stable
        end = sum(len(self._tokens[i]) for i in tokens[:n])  # type: ignore[arg-type]
        return tokens[:n], data[end:]

    def _context_id(self, token_id: Any) -> int:
        if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
            raise ValueError(f"a recent token is an id (int), got {type(token_id).__name__}")
        if not 0 <= token_id < self.size:
            raise ValueError(f"recent token id {token_id} is out of range (0 <= id < {self.size})")
        return int(token_id)

    def _encode_continuation(self, body: bytes, recent: list[int]) -> tuple[list[int], bytes]:
        """The tokenizer's tokens for `body` as it continues the text of `recent` (or of
        fewer of them when the tokenizer merges across their end), and the context used;
        [] when no context gives a clean cut or the tokens would include a special one."""
        # only text tokens give context: stop at the last special token or gap
        start = len(recent)
        while start and self.has_token(recent[start - 1]) \
                and recent[start - 1] not in self.special_token_ids:
            start -= 1
        for k in range(start, len(recent) + 2):
            if k < len(recent):
                context = b"".join([self._tokens[i] for i in recent[k:]])  # type: ignore[misc]
            else:
                context = b"" if k == len(recent) else _SENTINEL_CONTEXT
            tokens = self._encode_after(context, body)
            if tokens is not None:
                return tokens, context
        return [], b""

    def _encode_after(self, context: bytes, body: bytes) -> list[int] | None:
        """Tokens of `body` when the tokenizer encodes context + body and cuts at the end of
        the context; None when it does not cut there or changes the text."""
        text = context + body
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            return None
        ids = self.encode(text)
        pieces = [self._tokens[i] if self.has_token(i) and i not in self.special_token_ids
                  else None for i in ids]
        if any(p is None for p in pieces):
            return None
        decoded = b"".join(pieces)  # type: ignore[arg-type]
        extra = len(decoded) - len(text)
        # a SentencePiece tokenizer may put its dummy prefix blank in front
        if extra < 0 or decoded[extra:] != text or decoded[:extra].strip(b" "):
            return None
        pos = k = 0
        while pos < extra + len(context):
            pos += len(pieces[k])  # type: ignore[arg-type]
            k += 1
        return ids[k:] if pos == extra + len(context) else None

    @property
    def digest(self) -> str:
        """SHA-256 (hex) of what this vocabulary is: its size, EOS and special ids and the
        bytes of every id. Equal vocabularies have equal digests, however they were made or
        loaded (the tokenizer behind `encode` is not part of it)."""
        if self._digest is None:
            from pse.vocabulary_file import token_arrays, vocabulary_digest

            self._digest = vocabulary_digest(self.size, self.eos_token_ids,
                                             self.special_token_ids, *token_arrays(self._tokens))
        return self._digest

    def save(self, path: str | Path) -> None:
        """Write this vocabulary to one file, for `Vocabulary.load` (tens of milliseconds
        instead of building it again). The file records the tokenizer file the vocabulary was
        read from (its path and SHA-256), which `load` checks; it is written to a temporary
        file beside `path`, then renamed over it.

        Args:
            path: the file to write (replaced when it exists).

        Raises:
            VocabularyError: the vocabulary was made by `from_tokenizer` (from a tokenizer
                object, not a file: the file could not bring its tokenizer back), or the file
                cannot be written.
        """
        from pse.vocabulary_file import save

        save(self, Path(path))

    @classmethod
    def load(cls, path: str | Path, tokenizer_file: str | Path | None = None) -> Vocabulary:
        """A vocabulary `save` wrote, equal in everything to the one saved (token bytes, EOS
        and special ids, size, the trie, `digest`), after checking it.

        A vocabulary read from a tokenizer file is checked against that file: `tokenizer_file`
        when given, else the path recorded when it was saved. The file must be there and have
        the SHA-256 recorded (it is also what `encode` uses). A vocabulary made by
        `from_tokens` has no tokenizer file (`tokenizer_file` must then be None).

        Args:
            path: a file `Vocabulary.save` wrote.
            tokenizer_file: the tokenizer file the vocabulary was read from (default: where
                it was when the vocabulary was saved).

        Raises:
            VocabularyError: `path` cannot be read, is not a vocabulary file, is of another
                format version or was saved by another version of pse, is truncated or
                damaged; or the tokenizer file is missing or is not the one the vocabulary
                was read from.
        """
        from pse.vocabulary_file import load

        return load(cls, Path(path), tokenizer_file)

    def __len__(self) -> int:
        return sum(t is not None for t in self._tokens)

    def __reduce__(self):
        source = self._source.record() if self._source is not None else None
        return (_rebuild, (self._tokens, sorted(self.special_token_ids), self.eos_token_ids,
                           self.size, encoder_state(self._encoder), source))

    def __repr__(self) -> str:
        return f"<Vocabulary size={self.size} tokens={len(self)} eos={list(self.eos_token_ids)}>"


def utf8_complete_length(data: bytes) -> int:
    """The length of the longest prefix of `data` that does not end inside a UTF-8 character
    (bytes that are not UTF-8 at all count as complete)."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        b = data[n - back]
        if b & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead byte
        need = 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else 4 if b & 0xF8 == 0xF0 else 1
        return n - back if back < need else n
    return n


def _as_bytes(data: bytes | str) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"expected str or bytes, got {type(data).__name__}")


def _rebuild(tokens, special, eos, size, encoder_state, source=None) -> Vocabulary:
    vocab = Vocabulary(tokens, special, eos, size, encoder_from_state(encoder_state))
    if source is not None:
        vocab._source = Source.from_record(source)
    return vocab


def _from_tiktoken_file(cls, path: Path, eos_token_ids, n_vocab, special_tokens,
                        pattern) -> Vocabulary:
    """A Vocabulary from a tiktoken BPE file: lines `<base64 bytes> <rank>`, rank = id."""
    import base64
    import binascii

    try:
        raw = path.read_bytes()
        lines = raw.splitlines()
    except OSError as e:
        raise VocabularyError(f"cannot read tokenizer file {str(path)!r}: {e}") from None
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError("expected two fields")
            token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
        except (ValueError, binascii.Error) as e:
            raise VocabularyError(f"{str(path)!r} line {number}: not '<base64 token> <rank>' "
                                  f"({e})") from None
        if rank < 0 or token in ranks:
            raise VocabularyError(f"{str(path)!r} line {number}: "
                                  + ("negative rank" if rank < 0 else f"token {token!r} repeated"))
        ranks[token] = rank
    if not ranks:
        raise VocabularyError(f"{str(path)!r} holds no tokens")
    special = dict(special_tokens or {})
    for text, i in special.items():
        if not isinstance(text, str) or isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise VocabularyError(f"special_tokens must map text to an id >= 0, got "
                                  f"{text!r}: {i!r}")
    highest = max(list(ranks.values()) + list(special.values()))
    tokens: list[bytes | None] = [None] * (highest + 1)
    for token, rank in ranks.items():
        if tokens[rank] is not None:
            raise VocabularyError(f"{str(path)!r}: two tokens have rank {rank}")
        tokens[rank] = token
    for text, i in special.items():
        if tokens[i] is not None:
            raise VocabularyError(f"special token {text!r} has id {i}, which the file gives "
                                  f"to {tokens[i]!r}")
        tokens[i] = text.encode("utf-8")
    if eos_token_ids is None:
        eos_token_ids = [special["<|endoftext|>"]] if "<|endoftext|>" in special else []
    encoder = None
    if pattern is not None:
        if importlib.util.find_spec("tiktoken") is None:
            raise VocabularyError("encoding with a .tiktoken file's pattern needs the tiktoken "
                                  "package: pip install tiktoken")
        encoder = LazyTiktoken(path.stem, pattern, ranks, special)
    vocab = cls(tokens, special.values(), eos_token_ids, n_vocab, encoder)
    vocab._source = Source("tiktoken", path, data=raw,
                            options={"pattern": pattern, "special_tokens": special})
    return vocab


def _tokens_from_tokenizer_json(data: Any, where: str):
    """(tokens by id, special ids, {content: id} of added tokens) from tokenizer.json data."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise VocabularyError(f"{where}: no 'model' section; expected a Hugging Face "
                              "tokenizer.json")
    model = data["model"]
    vocab = model.get("vocab")
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        if not all(isinstance(e, list) and e and isinstance(e[0], str) for e in vocab):
            raise VocabularyError(f"{where}: a Unigram vocabulary is a list of [piece, score]")
        pieces = {entry[0]: i for i, entry in enumerate(vocab)}
    elif isinstance(vocab, dict):
        pieces = vocab
    else:
        raise VocabularyError(f"{where}: model type {model.get('type')!r} has no vocabulary "
                              "pse can read (expected BPE, Unigram or WordLevel)")
    style = _piece_style(data)
    if style is None:
        raise VocabularyError(
            f"{where}: cannot tell how pieces map to bytes (decoder "
            f"{json.dumps(data.get('decoder'))[:120]}); supported: byte-level BPE (ByteLevel) "
            "and SentencePiece-style pieces (Metaspace, or Replace '▁' with ByteFallback)")
    added_tokens = data.get("added_tokens") or []
    for t in added_tokens:
        if not (isinstance(t, dict) and isinstance(t.get("content"), str)
                and _is_token_id(t.get("id"))):
            raise VocabularyError(f"{where}: an added token is not {{'id': an int from 0 to "
                                  f"{MAX_TOKEN_ID}, 'content': a str}}: {str(t)[:80]}")
    for piece, i in pieces.items():
        if not _is_token_id(i):
            raise VocabularyError(f"{where}: the id of piece {piece!r} is not an int from 0 to "
                                  f"{MAX_TOKEN_ID} (MAX_TOKEN_ID): {i!r}")
    added = {t["content"]: t["id"] for t in added_tokens}
    special = {t["id"] for t in added_tokens if t.get("special")}
    ids = list(pieces.values())
    highest = max(ids + list(added.values()) + [-1])
    tokens: list[bytes | None] = [None] * (highest + 1)
    if style == "byte_level":
        for i, b in zip(ids, _byte_level_pieces(list(pieces))):
            tokens[i] = b
    else:
        for piece, i in pieces.items():
            tokens[i] = _sentencepiece_bytes(piece)
    for t in added_tokens:
        # added tokens are stored as plain text, not in the model's piece alphabet
        tokens[t["id"]] = t["content"].encode("utf-8")
    return tokens, special, added


# The highest token id a vocabulary may have: every id costs a slot (and a bit per mask row),
# so an id past it in a tokenizer file is refused rather than allocated (the largest
# vocabularies in use have a few hundred thousand ids).
MAX_TOKEN_ID = (1 << 24) - 1


def _is_token_id(i: Any) -> bool:
    return isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_TOKEN_ID


def _piece_style(data: dict) -> str | None:
    found = json.dumps([data.get("decoder"), data.get("pre_tokenizer")])
    if '"ByteLevel"' in found:
        return "byte_level"
    if '"Metaspace"' in found or "\u2581" in found or "\\u2581" in found:
        return "sentencepiece"
    return None


def _eos_from_config(config_path: Path, added: dict[str, int]) -> list[int]:
    if not config_path.is_file():
        return []
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise VocabularyError(f"cannot read {str(config_path)!r}: {e}") from None
    eos = config.get("eos_token")
    if isinstance(eos, dict):
        eos = eos.get("content")
    if isinstance(eos, str) and eos in added:
        return [added[eos]]
    return []


def _from_tiktoken(cls, enc: Any, eos_token_ids, n_vocab) -> Vocabulary:
    special_map = dict(getattr(enc, "_special_tokens", {}) or {})
    highest = enc.max_token_value if hasattr(enc, "max_token_value") else enc.n_vocab - 1
    tokens: list[bytes | None] = [None] * (highest + 1)
    special_ids = set(special_map.values())
    for i in range(highest + 1):
        if i in special_ids:
            continue
        try:
            tokens[i] = enc.decode_single_token_bytes(i)
        except (KeyError, ValueError):
            tokens[i] = None
    for text, i in special_map.items():
        tokens[i] = text.encode("utf-8")
    if eos_token_ids is None:
        eot = special_map.get("<|endoftext|>")  # what tiktoken's own `eot_token` names
        eos_token_ids = [eot] if eot is not None else []
    return cls(tokens, special_ids, eos_token_ids, n_vocab, enc)


def _from_transformers(cls, tok: Any, eos_token_ids, n_vocab) -> Vocabulary:
    backend = getattr(tok, "backend_tokenizer", None)
    special = set(getattr(tok, "all_special_ids", []) or [])
    if eos_token_ids is None:
        eos = getattr(tok, "eos_token_id", None)
        eos_token_ids = [eos] if isinstance(eos, int) else list(eos or [])
    if backend is not None:  # a fast tokenizer: read its tokenizer.json
        tokens, json_special, _ = _tokens_from_tokenizer_json(json.loads(backend.to_str()),
                                                              type(tok).__name__)
        return cls(tokens, special | json_special, eos_token_ids, n_vocab, tok)
    vocab = tok.get_vocab()
    highest = max(vocab.values())
    pieces = tok.convert_ids_to_tokens(list(range(highest + 1)))
    byte_decoder = getattr(tok, "byte_decoder", None)
    added = set(getattr(tok, "added_tokens_encoder", {}) or {})
    tokens: list[bytes | None] = [None] * (highest + 1)
    for i, piece in enumerate(pieces):
        if piece is None:
            continue
        if piece in added:
            tokens[i] = piece.encode("utf-8")
        elif byte_decoder is not None:
            tokens[i] = bytes(byte_decoder[ch] for ch in piece)
        elif hasattr(tok, "sp_model") or "\u2581" in piece:
            tokens[i] = _sentencepiece_bytes(piece)
        else:
            raise VocabularyError(
                f"{type(tok).__name__}: cannot tell how piece {piece!r} maps to bytes; "
                "supported: byte-level BPE and SentencePiece tokenizers")
    return cls(tokens, special, eos_token_ids, n_vocab, tok)
