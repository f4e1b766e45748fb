"""The bundled grammars: Lark files in this package, compiled to `pse.Grammar`s.

`names()` lists them; `load(name)` compiles one. Each file begins with a comment saying what
it accepts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

from pse.grammar import Grammar

_HERE = Path(__file__).resolve().parent
_TERMINAL_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def names() -> list[str]:
    """The names of the bundled grammars, sorted (`load` takes them)."""
    return sorted(p.stem for p in _HERE.glob("*.lark"))


def path(name: str) -> Path:
    """The file of bundled grammar `name`.

    Raises:
        ValueError: no bundled grammar has that name.
    """
    if not isinstance(name, str) or name not in names():
        raise ValueError(f"no bundled grammar named {name!r}; there are {names()}")
    return _HERE / f"{name}.lark"


def load(name: str, start: str = "start", **choices: Sequence[str]) -> Grammar:
    """Compile a bundled grammar.

    Args:
        name: one of `names()`: "arithmetic", "csv", "json", "sql", "tool_call".
        start: the start rule.
        **choices: TERMINAL=[texts]: that terminal of the grammar matches exactly one of the
            texts instead (`load("tool_call", FUNCTION_NAME=["get_weather", "search"])`).

    Returns:
        The grammar, a StateMachine (`engine.configure(grammar)`).

    Raises:
        ValueError: an unknown name, a terminal the grammar does not define, or an empty
            list of texts or an empty text.
        TypeError: texts that are not a list of str.
        GrammarError: the grammar cannot be compiled.
    """
    file = path(name)
    text = file.read_text(encoding="utf-8")
    for terminal, texts in choices.items():
        if not re.search(rf"^{re.escape(terminal)}\s*:", text, re.MULTILINE) \
                or not _TERMINAL_NAME.fullmatch(terminal):
            raise ValueError(f"grammar {name!r} defines no terminal {terminal}")
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"{terminal}: expected a list of str, got {texts!r}")
        if not texts or not all(texts):
            raise ValueError(f"{terminal}: expected a non-empty list of non-empty texts")
        # a JSON string literal is also a valid Lark string literal
        alternatives = " | ".join(json.dumps(t, ensure_ascii=False) for t in texts)
        text += f"\n%override {terminal}: {alternatives}\n"
    return Grammar(text, start=start, import_paths=[str(_HERE)], source_path=str(file))
