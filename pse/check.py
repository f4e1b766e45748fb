"""Does a text fit a structure, and if not, where does it stop fitting: `pse check`.

The text goes through the engine one byte at a time (a vocabulary of the 256 bytes), the
way a model's tokens would, so the first refused token is the first byte no completion of
the structure can have there. No model is involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pse.engine import StructuringEngine
from pse.vocabulary import Vocabulary

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
    """

    fits: bool
    offset: int
    line: int
    column: int
    refused: int | None = None
    allowed: frozenset[int] = field(default=frozenset())

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
    allowed = frozenset(engine.allowed_token_ids().tolist()) if engine else frozenset()
    return Verdict(fits, offset, line, column, refused, allowed)


def describe(allowed: set[int] | frozenset[int]) -> str:
    """Ids of the byte vocabulary in words: runs of bytes (`'0'-'9'`), `the end of the text`;
    most bytes as `any byte but ...`."""
    end = END in allowed
    allowed = {b for b in allowed if b < 256}
    if len(allowed) > 128:
        parts = ["any byte but " + (_runs(set(range(256)) - allowed) or "none")]
    else:
        parts = [_runs(allowed)] if allowed else []
    if end:
        parts.append("the end of the text")
    return ", ".join(parts) if parts else "nothing"


def _runs(values: set[int]) -> str:
    out, ordered = [], sorted(values)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        lo, hi = ordered[i], ordered[j]
        if hi - lo >= 2:
            out.append(f"{byte_text(lo)}-{byte_text(hi)}")
        else:
            out += [byte_text(b) for b in range(lo, hi + 1)]
        i = j + 1
    return ", ".join(out)


def byte_text(b: int) -> str:
    """A byte as a quoted character where printable, else as an escape (`'\\n'`, `0x80`)."""
    if b in (0x27, 0x5C):  # (apostrophe and backslash escaped, as Python writes them)
        return "'\\" + chr(b) + "'"
    if 0x20 <= b < 0x7F:
        return f"'{chr(b)}'"
    named = {0x09: "'\\t'", 0x0A: "'\\n'", 0x0D: "'\\r'"}
    return named.get(b, f"0x{b:02x}")
