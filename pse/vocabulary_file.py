"""A `Vocabulary` saved to one file and loaded back (`Vocabulary.save`, `Vocabulary.load`).

The file: MAGIC (8 bytes), the format version (uint32, little-endian), the header's length
(uint32), the header (JSON, UTF-8), zero bytes up to a multiple of 64, then the payload: the
arrays, each at a multiple of 64 from the payload's start, little-endian.

The header records pse's version, the vocabulary's digest (`Vocabulary.digest`), its size, EOS
and special ids, the tokenizer file it was read from (kind, absolute path, SHA-256, and for a
.tiktoken file the pattern and special tokens it was read with), the SHA-256 and size of the
payload, and where each array is. The arrays: the bytes of every token end to end (`blob`),
where each ends (`ends`, int64), which ids have a token (`present`), and the flat trie's node
arrays (`TokenTrie.arrays`), so loading builds nothing but the tuple of token bytes.

`load` refuses, with a `VocabularyError` saying which, a file that is not one of these, of
another format version or pse version, truncated or altered (the payload's SHA-256, then the
digest of what was read), whose trie indexes out of bounds, or whose tokenizer file is absent or
differs from the one it was built from (its SHA-256).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pse._core.trie import TokenTrie, check_trie_tokens, tokens_from_blob
from pse.encoders import LazyTiktoken, LazyTokenizer, Source
from pse.errors import VocabularyError

if TYPE_CHECKING:
    from pse.vocabulary import Vocabulary

MAGIC = b"\x93PSEVOC\n"  # a non-ASCII first byte and a newline: no text file starts so
FORMAT_VERSION = 1
ALIGN = 64
_PREFIX = struct.Struct("<8sII")  # magic, format version, header length

# each array's dtype in the file (little-endian); the trie's in TokenTrie's order
_DTYPES = {"blob": "u1", "ends": "<i8", "present": "u1", "node_byte": "u1", "node_depth": "<u2",
           "node_end": "<i4", "node_tok_off": "<i4", "tok_ids": "<i4", "node_parent": "<i4",
           "tok_node": "<i4"}


def token_arrays(tokens: tuple[bytes | None, ...]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """(blob, ends, present): every token's bytes end to end, where each ends (int64), and
    1 where an id has a token (0: a gap)."""
    n = len(tokens)
    present = np.fromiter((t is not None for t in tokens), dtype=np.uint8, count=n)
    lengths = np.fromiter((len(t) if t is not None else 0 for t in tokens), dtype=np.int64,
                          count=n)
    return b"".join([t for t in tokens if t]), np.cumsum(lengths, dtype=np.int64), present


def vocabulary_digest(size: int, eos: tuple[int, ...], special: frozenset[int], blob: bytes,
                      ends: np.ndarray, present: np.ndarray) -> str:
    """SHA-256 of a vocabulary's size, EOS ids, special ids and the bytes of every id."""
    h = hashlib.sha256(b"pse vocabulary 1\n")
    h.update(json.dumps([size, list(eos), sorted(special)]).encode())
    h.update(present.astype("u1").tobytes())
    h.update(ends.astype("<i8").tobytes())
    h.update(blob)
    return h.hexdigest()


def save(vocab: Vocabulary, path: Path) -> None:
    """Write `vocab` to `path` (replaced whole: a reader never sees half a file)."""
    import pse

    source = vocab._source
    if source is None and vocab._encoder is not None:
        raise VocabularyError(
            "only a vocabulary read with Vocabulary.from_file (or made with from_tokens) can be "
            f"saved: this one's tokenizer is a {type(vocab._encoder).__name__} object, which "
            "the file could not bring back; build it with Vocabulary.from_file(tokenizer.json)")
    blob, ends, present = token_arrays(vocab._tokens)
    arrays: dict[str, np.ndarray] = {"blob": np.frombuffer(blob, dtype=np.uint8), "ends": ends,
                                     "present": present, **vocab.trie.arrays()}
    layout, offset = {}, 0
    for name, arr in arrays.items():
        arr = arrays[name] = np.ascontiguousarray(arr, dtype=_DTYPES[name])
        layout[name] = [offset, arr.size]
        offset += -(-arr.nbytes // ALIGN) * ALIGN
    payload = bytearray(offset)
    for name, arr in arrays.items():
        start = layout[name][0]
        payload[start:start + arr.nbytes] = arr.tobytes()
    header = {
        "pse": pse.__version__,
        "digest": vocab.digest,
        "size": vocab.size,
        "eos_token_ids": list(vocab.eos_token_ids),
        "special_token_ids": sorted(vocab.special_token_ids),
        "source": source.record() if source is not None else None,
        "payload": {"size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()},
        "arrays": layout,
    }
    head = json.dumps(header).encode()
    prefix = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(head)) + head
    prefix += bytes(-len(prefix) % ALIGN)
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(prefix)
                f.write(payload)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise VocabularyError(f"cannot write vocabulary file {str(path)!r}: {e}") from None


def load(cls: type[Vocabulary], path: Path, tokenizer_file: str | Path | None) -> Vocabulary:
    """The vocabulary saved in `path`, checked (see the module's docstring)."""
    import pse

    where = repr(str(path))
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise VocabularyError(f"cannot read vocabulary file {where}: {e}") from None
    if len(data) < _PREFIX.size or not data.startswith(MAGIC):
        raise VocabularyError(f"{where} is not a pse vocabulary file (Vocabulary.save writes "
                              "them)")
    _, version, head_len = _PREFIX.unpack_from(data)
    if version != FORMAT_VERSION:
        raise VocabularyError(f"{where} is in vocabulary file format {version}; this pse "
                              f"({pse.__version__}) reads format {FORMAT_VERSION}: build the "
                              "vocabulary again (Vocabulary.from_file) and save it")
    start = _PREFIX.size + head_len
    start += -start % ALIGN
    try:
        header = json.loads(data[_PREFIX.size:_PREFIX.size + head_len])
        if not isinstance(header, dict):
            raise ValueError("not an object")
        saved_by = header["pse"]
        payload_size, payload_sha = header["payload"]["size"], header["payload"]["sha256"]
        if not isinstance(payload_size, int) or not isinstance(payload_sha, str):
            raise ValueError("the payload's size or SHA-256")
    except (ValueError, KeyError, TypeError) as e:
        raise VocabularyError(f"{where}: the header is damaged or truncated ({e})") from None
    if saved_by != pse.__version__:
        raise VocabularyError(f"{where} was saved by pse {saved_by}; this is pse "
                              f"{pse.__version__}: build the vocabulary again "
                              "(Vocabulary.from_file) and save it")
    if len(data) != start + payload_size:
        raise VocabularyError(f"{where} is truncated or has bytes appended ({len(data)} bytes; "
                              f"the header says {start + payload_size})")
    payload = memoryview(data)[start:]
    if hashlib.sha256(payload).hexdigest() != payload_sha:
        raise VocabularyError(f"{where} is damaged: its arrays do not have the SHA-256 the "
                              "header records")
    try:
        arrays = _arrays(data, start, payload_size, header["arrays"])
        size, eos, special = header["size"], header["eos_token_ids"], header["special_token_ids"]
        record = header["source"]
        digest = header["digest"]
        blob_at = start + header["arrays"]["blob"][0]
        blob = data[blob_at:blob_at + arrays["blob"].size]
        tokens = tokens_from_blob(blob, arrays["ends"], arrays["present"])
        if not isinstance(size, int) or size < len(tokens):
            raise ValueError(f"size {size!r}")
        vocab = cls.__new__(cls)
        vocab._tokens = tokens
        vocab.size = size
        vocab.special_token_ids = frozenset(vocab._check_ids(special))
        vocab.eos_token_ids = tuple(vocab._check_ids(eos))
        vocab._encoder = None
        vocab._init_lazy()
        vocab.trie = TokenTrie.from_arrays(arrays, len(tokens))
        check_trie_tokens(vocab.trie, tokens, vocab.special_token_ids)
    except (ValueError, KeyError, TypeError, IndexError, VocabularyError) as e:
        raise VocabularyError(f"{where} is damaged ({e})") from None
    if vocabulary_digest(vocab.size, vocab.eos_token_ids, vocab.special_token_ids, blob,
                         arrays["ends"], arrays["present"]) != digest:
        raise VocabularyError(f"{where} is damaged: its tokens do not have the digest the "
                              "header records")
    vocab._digest = digest
    vocab._present = arrays["present"]
    vocab._prepare_masks()
    if record is None:
        if tokenizer_file is not None:
            raise VocabularyError(f"{where} holds a vocabulary made from a list of tokens, not "
                                  "read from a tokenizer file: there is no tokenizer_file to "
                                  "check it against")
        return vocab
    try:
        kind, recorded_path, sha = record["kind"], record["path"], record["sha256"]
        if kind not in ("tokenizer.json", "tiktoken"):
            raise ValueError(f"tokenizer kind {kind!r}")
    except (KeyError, TypeError, ValueError) as e:
        raise VocabularyError(f"{where}: the header is damaged ({e})") from None
    source_path = Path(tokenizer_file if tokenizer_file is not None else recorded_path)
    try:
        raw = source_path.read_bytes()
    except OSError as e:
        raise VocabularyError(
            f"{where} was built from the tokenizer file {recorded_path!r}, and "
            f"{str(source_path)!r} cannot be read ({e.strerror or e}): pass "
            "tokenizer_file=<that file> (load checks the vocabulary against it)") from None
    if hashlib.sha256(raw).hexdigest() != sha:
        raise VocabularyError(
            f"{str(source_path)!r} is not the tokenizer file {where} was built from (the "
            f"SHA-256 differs: the file changed, or it is another tokenizer's; built from "
            f"{recorded_path!r}): build the vocabulary again with Vocabulary.from_file and "
            "save it")
    vocab._source = Source(kind, source_path, sha256=sha, options={
        k: v for k, v in record.items() if k not in ("kind", "path", "sha256")})
    if kind == "tokenizer.json":
        vocab._encoder = LazyTokenizer(raw)
    elif record.get("pattern") is not None:
        special_ids = vocab.special_token_ids
        vocab._encoder = LazyTiktoken(
            source_path.stem, record["pattern"],
            lambda: {b: i for i, b in enumerate(tokens) if b is not None and i not in special_ids},
            dict(record.get("special_tokens") or {}))
    return vocab


def _arrays(data: bytes, start: int, payload_size: int, layout: Any) -> dict[str, np.ndarray]:
    """The arrays the layout ({name: [offset, count]}) places in the payload, read in place
    (native byte order)."""
    if not isinstance(layout, dict) or set(layout) != set(_DTYPES):
        raise ValueError("the header's arrays are not the expected ones")
    out = {}
    for name, dtype in _DTYPES.items():
        offset, count = layout[name]
        dt = np.dtype(dtype)
        if not (isinstance(offset, int) and isinstance(count, int) and offset % ALIGN == 0
                and 0 <= offset and 0 <= count and offset + count * dt.itemsize <= payload_size):
            raise ValueError(f"array {name!r} lies outside the file")
        arr = np.frombuffer(data, dtype=dt, count=count, offset=start + offset)
        out[name] = arr if dt.isnative else arr.astype(dt.newbyteorder("="))
    return out
