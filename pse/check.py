"""Does a text fit a structure, and if not, where does it stop fitting: `pse check`.

The text goes through the engine one byte at a time (a vocabulary of the 256 bytes), the
way a model's tokens would, so the first refused token is the first byte no completion of
the structure can have there. No model is involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pse.byte_words import byte_text, bytes_words
from pse.engine import StructuringEngine
from pse.vocabulary import Vocabulary

__all__ = ["END", "Verdict", "byte_text", "byte_vocabulary", "check", "describe"]

END = 256  # the end-of-text id of the byte vocabulary
BLANKS = b" \t\n\r"


@dataclass(frozen=True)
class Verdict:
    """Whether a text fits a structure; where it does not, the place and what could come there.

    Attributes:
        fits: the whole text is taken and completes the structure.
        offset: the bytes before the first refused byte (where it fits, the text's length;
            where it ends too early, the length without the blanks after it).
        line: the 1-based line of `offset`.
        column: the 1-based column of `offset`, in characters.
        refused: the byte refused at `offset`, or None (it fits, or the text ends too early).
        allowed: the bytes the structure allows at `offset`, and END (256) where the text may
            end there (empty where it fits).
        why: the engine's explanation of the refused byte or end (`StructuringEngine.explain`:
            for a JSON Schema, the path and the schema there in words); empty where it fits.
    """

    fits: bool
    offset: int
    line: int
    column: int
    refused: int | None = None
    allowed: frozenset[int] = field(default=frozenset())
    why: str = ""

    @property
    def expected(self) -> str:
        """`allowed` in words (see describe)."""
        return describe(self.allowed) if not self.fits else ""

    @property
    def ends_early(self) -> bool:
        """Every byte is taken but the structure is not complete."""
        return not self.fits and self.refused is None


_BYTES: Vocabulary | None = None


def byte_vocabulary() -> Vocabulary:
    """A vocabulary whose token i < 256 is byte i, and 256 the end of the text."""
    global _BYTES
    if _BYTES is None:
        _BYTES = Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b"<end>"],
                                        eos_token_ids=[END], special_token_ids=[END])
    return _BYTES


def check(structure, text: str | bytes, blanks_around: bool = False) -> Verdict:
    """Run `text` through `structure` byte by byte.

    Args:
        structure: a StateMachine (JsonSchema, Grammar, combinators, ...).
        text: the text; str is UTF-8 encoded.
        blanks_around: blanks (space, tab, newline, return) before and after the text are
            not the structure's (JSON text may have them around its value, a file ends with a
            newline); places are still counted in the whole text.

    Raises:
        GrammarError: the structure does not compile.
    """
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    first, stop = 0, len(data)
    if blanks_around:
        first = len(data) - len(data.lstrip(BLANKS))
        stop = max(first, len(data.rstrip(BLANKS)))
    engine = StructuringEngine(byte_vocabulary())
    engine.configure(structure)
    for offset in range(first, stop):
        if not engine.consume_token(data[offset]):
            return _verdict(data, offset, False, data[offset], engine)
    if engine.is_accepting():
        return _verdict(data, len(data), True, None, None)
    return _verdict(data, stop, False, None, engine)


def _verdict(data: bytes, offset: int, fits: bool, refused: int | None,
             engine: StructuringEngine | None) -> Verdict:
    before = data[:offset].decode("utf-8", errors="replace")
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    if engine is None:
        return Verdict(fits, offset, line, column)
    allowed = frozenset(engine.allowed_token_ids().tolist())
    why = engine.explain(END if refused is None else refused).message
    return Verdict(fits, offset, line, column, refused, allowed, why)


def describe(allowed: set[int] | frozenset[int]) -> str:
    """Ids of the byte vocabulary in words: runs of bytes (`'0'-'9'`), `the end of the text`;
    most bytes as `any byte but ...`."""
    return bytes_words({b for b in allowed if b < 256}, END in allowed)
