"""Bytes in words, for messages about what a structure allows: `'0'-'9', '}'`."""

from __future__ import annotations

from typing import Iterable


def bytes_words(allowed: Iterable[int], end: bool = False) -> str:
    """Byte values in words: runs (`'0'-'9'`), single bytes (`'}'`), most of the 256 as `any
    byte but ...`, and `the end of the text` where `end`; `nothing` for none."""
    allowed = set(allowed)
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
