"""The tokenizers behind `Vocabulary.encode`, made on first use, and the record of the
tokenizer file a vocabulary was read from (what `Vocabulary.save` writes and `load` checks)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable

from pse.errors import VocabularyError
from pse.lazy import Lazy


class LazyTokenizer:
    """A `tokenizers.Tokenizer` parsed from its JSON (text, or UTF-8 bytes as read from the
    file) on first use; one thread parses it, others wait for it."""

    def __init__(self, text: str | bytes) -> None:
        self.text = text
        self._tokenizer: Lazy[Any] = Lazy(self._parse)

    def get(self) -> Any:
        """The tokenizer, parsed by the first call (others wait for it)."""
        return self._tokenizer.get()

    def _parse(self) -> Any:
        from tokenizers import Tokenizer

        try:
            text = self.text if isinstance(self.text, str) else self.text.decode("utf-8")
            return Tokenizer.from_str(text)
        except Exception as e:  # a file pse can read but this tokenizers version cannot
            raise VocabularyError(f"the tokenizers library cannot load this tokenizer: {e}"
                                  ) from None


class Source:
    """The tokenizer file a vocabulary was read from: what `Vocabulary.save` records and
    `Vocabulary.load` checks. Its SHA-256 is taken from the bytes read (when first asked)."""

    def __init__(self, kind: str, path: Path, data: bytes | None = None, sha256: str = "",
                 options: dict | None = None) -> None:
        self.kind = kind  # "tokenizer.json" or "tiktoken"
        self.path = os.path.abspath(path)  # absolute, symbolic links kept as given
        self._data = data
        self._sha256 = sha256
        self.options = options or {}  # tiktoken: {"pattern", "special_tokens"}

    @property
    def sha256(self) -> str:
        """The file's SHA-256 (hex), as it was read."""
        if not self._sha256:
            self._sha256 = hashlib.sha256(self._data).hexdigest()  # type: ignore[arg-type]
            self._data = None
        return self._sha256

    def record(self) -> dict:
        """What a saved vocabulary's header records of its tokenizer file (JSON values)."""
        return {"kind": self.kind, "path": self.path, "sha256": self.sha256, **self.options}

    @classmethod
    def from_record(cls, record: dict) -> Source:
        """The Source a `record` describes."""
        options = {k: v for k, v in record.items() if k not in ("kind", "path", "sha256")}
        return cls(record["kind"], Path(record["path"]), sha256=record["sha256"],
                   options=options)


def encoder_state(encoder: Any) -> Any:
    """A picklable state of a vocabulary's tokenizer: a `tokenizers` one as its JSON text
    (parsed again on first use), another as itself."""
    if encoder is None:
        return None
    if isinstance(encoder, LazyTokenizer):
        text = encoder.text
        return ("tokenizers", text if isinstance(text, str) else text.decode("utf-8"))
    if type(encoder).__module__.startswith("tokenizers"):
        return ("tokenizers", encoder.to_str())
    return ("object", encoder)


def encoder_from_state(state: Any) -> Any:
    """The tokenizer `encoder_state` gave the state of."""
    if state is None:
        return None
    kind, value = state
    return LazyTokenizer(value) if kind == "tokenizers" else value


def encode_with(encoder: Any, text: str) -> list[int]:
    """The ids `encoder` (any tokenizer a vocabulary holds) gives `text`, no special tokens
    added."""
    if isinstance(encoder, (LazyTokenizer, LazyTiktoken)):
        encoder = encoder.get()
    module = type(encoder).__module__.split(".")[0]
    if module == "tokenizers":
        return encoder.encode(text, add_special_tokens=False).ids
    if module == "tiktoken" or hasattr(encoder, "encode_ordinary"):
        return encoder.encode_ordinary(text)
    return encoder.encode(text, add_special_tokens=False)


class LazyTiktoken:
    """A `tiktoken.Encoding` built from a .tiktoken file's ranks on first use (the ranks: a
    dict, or a function making it)."""

    def __init__(self, name: str, pattern: str,
                 ranks: dict[bytes, int] | Callable[[], dict[bytes, int]],
                 special_tokens: dict[str, int]) -> None:
        self.args = (name, pattern, ranks, special_tokens)
        self._encoding: Lazy[Any] = Lazy(self._build)

    def get(self) -> Any:
        """The encoding, built by the first call (others wait for it)."""
        return self._encoding.get()

    def _build(self) -> Any:
        import tiktoken

        name, pattern, ranks, special = self._args()
        return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks,
                                 special_tokens=special)

    def _args(self) -> tuple:
        name, pattern, ranks, special = self.args
        if callable(ranks):
            self.args = (name, pattern, ranks(), special)
        return self.args

    def __getstate__(self) -> tuple:
        return self._args()

    def __setstate__(self, args: tuple) -> None:
        self.args = args
        self._encoding = Lazy(self._build)
