"""Why a token is refused: `StructuringEngine.explain(token)`.

The token's bytes go through a copy of the engine's parser one at a time; the first byte no
live state takes is where the token is refused. The place is named by what the structure is:
a JSON path and the schema there in words for `JsonSchema` and `Json` (`at $.days: an integer
at most 14; "30" exceeds it`), the grammar rules the parser is inside for grammars and named
`Forward`s (`in rule expr > rule term, at character 5: ...`), else the character position.
What the structure allows there is always given as bytes (`'0'-'9', '}'`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pse.byte_words import byte_text, bytes_words
from pse.json_schema import JsonSchema
from pse.json_value import Json
from pse.json_words import (json_place, path_text, quoted, schema_at, schema_words,
                            value_words)

_ENDS_SCALAR = frozenset(b" \t\n\r,:}]")


@dataclass(frozen=True)
class Explanation:
    """Whether a token may come next, and if not, where and why it is refused.

    Attributes:
        token: the token's bytes.
        allowed: the structure takes the whole token here (the mask allows it).
        offset: the bytes of the token taken before the refused one (where allowed: all).
        position: the characters of the text (committed tokens, then the token's taken
            bytes) before the refused byte.
        place: a JSON path (`$.days`), the named rules the parser is inside (`rule expr >
            rule term`), or "" where the structure names none.
        expected: what the structure allows at the place, in words (for JSON, the schema
            there; else the bytes).
        reason: why the token is refused (empty where it is allowed).
        message: all of it in one line (also `str(explanation)`).
    """

    token: bytes
    allowed: bool
    offset: int
    position: int
    place: str
    expected: str
    reason: str
    message: str

    def __str__(self) -> str:
        return self.message


def explain(engine: Any, token: int | str | bytes) -> Explanation:
    """Why `token` is refused by `engine` (a StructuringEngine) in its current state, or that
    it is allowed; the engine is left as it is.

    Raises:
        TypeError: `token` is not an id, str or bytes.
        ValueError: an id outside the vocabulary.
        RuntimeError: the engine has no structure.
    """
    matcher, vocab = engine.matcher, engine.vocab
    special_id = None
    if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
        token_id = int(token)
        if not 0 <= token_id < vocab.size:
            raise ValueError(f"token id {token_id} is out of range (0 <= id < {vocab.size})")
        if (not vocab.has_token(token_id) or token_id in vocab.special_token_ids
                or token_id in vocab.eos_token_ids or not vocab.token_bytes(token_id)):
            special_id = token_id
            data = vocab.token_bytes(token_id) if vocab.has_token(token_id) else b""
        else:
            data = vocab.token_bytes(token_id)
    elif isinstance(token, (str, bytes, bytearray)):
        data = token.encode("utf-8") if isinstance(token, str) else bytes(token)
    else:
        raise TypeError(f"token must be an id, str or bytes, not {type(token).__name__}")
    text = _committed_text(engine)
    if matcher.finished:
        return _explained(data, False, 0, text, "", "nothing",
                          "the text has ended (an end token was committed)")
    if special_id is not None:
        return _special(engine, special_id, data, text)
    if not data:
        raise ValueError("an empty token: nothing to explain")
    probe = matcher.copy()
    for i in range(len(data)):
        if not probe.advance(data[i:i + 1]):  # (then the probe is left where it was)
            allowed_bytes, end = _next(probe)
            what = f"{byte_text(data[i])} is refused"
            return _place_and_reason(engine, data, i, text, what, allowed_bytes, end, data[i])
    return _explained(data, True, len(data), text, "", "", "")


def _committed_text(engine: Any) -> bytes:
    vocab = engine.vocab
    special = vocab.special_token_ids | frozenset(vocab.eos_token_ids)
    return vocab.decode_bytes(t for t in engine._committed if t not in special)


def _next(matcher: Any) -> tuple[set[int], bool]:
    allowed: set[int] = set()
    for stepper in matcher.steppers():
        allowed.update(stepper.next_bytes())
    return allowed, matcher.is_accepting()


def _special(engine: Any, token_id: int, data: bytes, text: bytes) -> Explanation:
    if _mask_allows(engine, [token_id]):
        return _explained(data, True, len(data), text, "", "", "")
    allowed_bytes, end = _next(engine.matcher)
    vocab = engine.vocab
    if token_id in vocab.eos_token_ids:
        what = "the end of the text is refused"
    elif token_id in vocab.special_token_ids:
        name = data.decode("utf-8", errors="replace") or f"token {token_id}"
        what = f"the special token {name!r} is refused"
    else:
        what = f"token {token_id} (no text) is refused"
    return _place_and_reason(engine, data, 0, text, what, allowed_bytes, end, None)


def _place_and_reason(engine: Any, data: bytes, i: int, text: bytes, what: str,
                      allowed_bytes: set[int], end: bool, refused: int | None) -> Explanation:
    allowed_words = bytes_words(allowed_bytes, end)
    specials = _special_words(engine)
    if specials:
        allowed_words = specials if allowed_words == "nothing" else f"{allowed_words}, {specials}"
    generic = f"{what} (allowed: {allowed_words})"
    root = _json_root(engine.structure)
    if root is not _NOT_JSON:
        try:
            return _json_explained(data, i, text, root, refused, allowed_words, generic)
        except Exception:  # (words about the place are a help: never a new error)
            return _explained(data, False, i, text, "", allowed_words, generic)
    labels = _rule_labels(engine)
    return _explained(data, False, i, text, labels, allowed_words, generic)


def _json_explained(data: bytes, i: int, text: bytes, root: Any, refused: int | None,
                    allowed_words: str, generic: str) -> Explanation:
    """The explanation of a JSON structure's refusal: the path, the schema there in words, and
    why the value written so far does not fit where one plain reason says it."""
    before = text + data[:i]
    place = json_place(before)
    schemas = schema_at(root, place.path)
    expected = _joined(schema_words(root, s) for s in schemas) or allowed_words
    if place.in_key:
        reason = _key_reason(schemas, before, place.start, refused) or generic
    else:
        got = _value_so_far(before, place.start, refused)
        reason = (value_words(root, schemas, got) if got and schemas else None) or generic
    return _explained(data, False, i, text, path_text(place.path), expected, reason)


_NOT_JSON = object()


def _special_words(engine: Any) -> str:
    """The special tokens (not the end) the engine allows now, by name."""
    vocab = engine.vocab
    ids = sorted(vocab.special_token_ids - frozenset(vocab.eos_token_ids))
    if not ids:
        return ""
    names = [_shown(vocab.token_bytes(t)) if vocab.has_token(t) else f"token {t}"
             for t in _mask_allows(engine, ids)]
    return ", ".join(f"the special token {n}" for n in names)


def _mask_allows(engine: Any, ids: list[int]) -> list[int]:
    """Those of `ids` the engine's mask allows."""
    words = engine.compute_mask().view(np.uint32)
    return [t for t in ids if (int(words[t >> 5]) >> (t & 31)) & 1]


def _json_root(structure: Any) -> Any:
    """The schema a JSON structure's text must fit (True for any JSON value)."""
    if isinstance(structure, JsonSchema):
        return structure.schema
    if isinstance(structure, Json):
        return True
    return _NOT_JSON


def _value_so_far(before: bytes, start: int | None, refused: int | None) -> str:
    """The value being written, with the refused byte where it goes on the value."""
    if start is None:
        got = b"" if refused is None or refused in _ENDS_SCALAR else bytes([refused])
    else:
        got = before[start:]
        in_string = got[:1] == b'"'
        if refused is not None and (in_string or refused not in _ENDS_SCALAR):
            got += bytes([refused])
    return got.decode("utf-8", errors="replace")


def _key_reason(schemas: list[Any], before: bytes, start: int | None,
                refused: int | None) -> str | None:
    """`no property name starts with "x"` where every schema there closes its object to
    listed names and the key written so far starts none of them."""
    if start is None or refused is None or refused == 0x22:
        return None
    key = (before[start + 1:] + bytes([refused])).decode("utf-8", errors="replace")
    for schema in schemas:
        if not isinstance(schema, dict) or schema.get("additionalProperties") is not False \
                or "patternProperties" in schema:
            return None
        if any(str(name).startswith(key) for name in schema.get("properties") or ()):
            return None
    return f"no property name starts with {quoted(key)}" if schemas else None


def _rule_labels(engine: Any) -> str:
    """The named rules the live parser states are inside: `rule expr > rule term`, several
    states' joined by " or "."""
    stacks = []
    for stepper in engine.matcher.steppers():
        key = stepper.state_key()
        labels = " > ".join(label for label in stepper.structure.rules_of(*key[:3])
                            if not label.startswith("rule __"))  # (not the user's: the
        # rules a grammar's repetitions and groups were rewritten into)
        if labels and labels not in stacks:
            stacks.append(labels)
    return " or ".join(stacks[:3]) + (" or ..." if len(stacks) > 3 else "")


def _joined(words: Any) -> str:
    unique = list(dict.fromkeys(words))
    return " or ".join(unique)


def _explained(data: bytes, allowed: bool, i: int, text: bytes, place: str, expected: str,
               reason: str) -> Explanation:
    position = len((text + data[:i]).decode("utf-8", errors="replace"))
    if allowed:
        message = f"{_shown(data)} is allowed here"
    elif place.startswith("$"):
        message = f"at {place}: {expected}; {reason}"
    elif place:
        message = f"in {place}, at character {position + 1}: {reason}"
    else:
        message = f"at character {position + 1}: {reason}"
    return Explanation(data, allowed, i, position, place, expected, reason, message)


def _shown(data: bytes) -> str:
    return repr(data.decode("utf-8", errors="replace"))
