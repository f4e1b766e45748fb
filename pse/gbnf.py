"""GBNF, the grammar format of llama.cpp (also what XGrammar reads as EBNF), read into the Lark
text that `Grammar` compiles.

GBNF is character-level: rules `name ::= ...` of literals (`"..."` with `\\x`, `\\u`, `\\U`,
`\\t`, `\\r`, `\\n`, `\\\\`, `\\"`, `\\[`, `\\]` escapes), character classes (`[a-z]`, negated
`[^...]`), `.` (any character), rule names, groups, `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`,
`{,n}`, and tokens (`<[id]>` by id, `<text>` by text); `#` starts a comment; `root` is the
start. A rule ends at the end of its line, except inside parentheses and after `|`. Lark with
pse's scannerless reading has the same language: every literal and class becomes an anonymous
terminal, there is nothing `%ignore`d, and a rule's name maps to a Lark name (lower case, `-`
as `_`). Errors name the line and column of the GBNF text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pse.errors import GrammarError

ROOT = "root"
_WORD = re.compile(r"[A-Za-z0-9_-]+")
_SIMPLE_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_READABLE = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


@dataclass
class LarkGrammar:
    """A GBNF grammar as Lark text.

    Attributes:
        text: the Lark grammar.
        start: the Lark name of `root`.
        names: each Lark rule name that differs from its GBNF name -> the GBNF name.
    """

    text: str
    start: str
    names: dict[str, str]

    def gbnf_names(self, message: str) -> str:
        """`message` with Lark's rule names back as the GBNF grammar wrote them."""
        if not self.names:
            return message
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, self.names)) + r")\b")
        return pattern.sub(lambda m: self.names[m.group(1)], message)


def to_lark(text: str) -> LarkGrammar:
    """Read a GBNF grammar into Lark text.

    Raises:
        TypeError: `text` is not a str.
        GrammarError: a syntax error, a rule defined twice, an undefined rule, no `root`
            rule, or a negated token (`!<...>`, which pse does not read); the message names
            the line and column.
    """
    if not isinstance(text, str):
        raise TypeError(f"the grammar text must be a str, got {type(text).__name__}")
    return _Reader(text).read()


class _Reader:
    """A recursive-descent reader that writes the Lark text as it goes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.rules: dict[str, tuple[int, str]] = {}  # GBNF name -> (where defined, Lark body)
        self.references: list[tuple[str, int]] = []  # (GBNF name, where)
        self.lark_names: dict[str, str] = {}
        self.taken: set[str] = set()
        self.parts: dict[str, str] = {}  # Lark body -> the helper rule that holds it

    # -- positions and errors -----------------------------------------------------------------
    def error(self, message: str, pos: int | None = None) -> GrammarError:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return GrammarError(f"GBNF line {line}, column {column}: {message}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos:self.pos + n]

    def skip_space(self, newlines: bool) -> None:
        """Blanks and comments; newlines too where a rule may go on."""
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c in " \t" or (newlines and c in "\r\n"):
                self.pos += 1
            elif c == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                break

    # -- rules --------------------------------------------------------------------------------
    def read(self) -> LarkGrammar:
        while True:
            self.skip_space(newlines=True)
            if self.pos >= len(self.text):
                break
            self.rule()
        if ROOT not in self.rules:
            raise GrammarError("GBNF: no `root` rule (the start of the grammar)")
        for name, where in self.references:
            if name not in self.rules:
                raise self.error(f"undefined rule {name!r}", where)
        lines = [f"{self.lark_name(name)}: {body}" for name, (_, body) in self.rules.items()]
        lines += [f"{name}: {body}" for body, name in self.parts.items()]
        renamed = {self.lark_name(n): n for n in self.rules if self.lark_name(n) != n}
        return LarkGrammar("\n".join(lines) + "\n", self.lark_name(ROOT), renamed)

    def rule(self) -> None:
        start = self.pos
        name = self.name()
        if name is None:
            raise self.error(f"expected a rule name, got {self.peek()!r}")
        if name in self.rules:
            line = self.text.count("\n", 0, self.rules[name][0]) + 1
            raise self.error(f"rule {name!r} is defined twice (first at line {line})", start)
        self.skip_space(newlines=False)
        if self.peek(3) != "::=":
            raise self.error(f"expected '::=' after the rule name {name!r}")
        self.pos += 3
        self.skip_space(newlines=True)
        body = self.alternatives(nested=False)
        self.skip_space(newlines=False)
        if self.pos < len(self.text) and self.text[self.pos] not in "\r\n":
            raise self.error(f"unexpected {self.peek()!r} in rule {name!r}")
        self.rules[name] = (start, body)

    def name(self) -> str | None:
        match = _WORD.match(self.text, self.pos)
        if match is None:
            return None
        self.pos = match.end()
        return match.group()

    def lark_name(self, name: str) -> str:
        """A Lark rule name of its own for each GBNF name."""
        if name not in self.lark_names:
            base = name.lower().replace("-", "_").strip("_") or "rule"
            self.lark_names[name] = self.fresh(base if base[0].isalpha() else "r" + base)
        return self.lark_names[name]

    def fresh(self, base: str) -> str:
        candidate, n = base, 1
        while candidate in self.taken:
            n += 1
            candidate = f"{base}_{n}"
        self.taken.add(candidate)
        return candidate

    def part(self, body: str) -> str:
        """A rule of its own for an optional, counted or alternative part: lark multiplies
        such parts out inside a rule (`a? b? c{0,15}` is 2 x 2 x 16 expansions)."""
        if body not in self.parts:
            self.parts[body] = self.fresh("part")
        return self.parts[body]

    # -- expressions --------------------------------------------------------------------------
    def alternatives(self, nested: bool) -> str:
        alts = [self.sequence(nested)]
        while self.peek() == "|":
            self.pos += 1
            self.skip_space(newlines=True)
            alts.append(self.sequence(nested))
        return " | ".join(alts)

    def sequence(self, nested: bool) -> str:
        items: list[str] = []
        while True:
            self.skip_space(newlines=nested)
            start = self.pos
            c = self.peek()
            if c == '"':
                items.append(self.literal())
            elif c == "[":
                items.append(self.char_class())
            elif c == ".":
                self.pos += 1
                items.append(r"/[\s\S]/")
            elif c == "(":
                self.pos += 1
                self.skip_space(newlines=True)
                inner = self.alternatives(nested=True)
                self.skip_space(newlines=True)
                if self.peek() != ")":
                    raise self.error("expected ')'", self.pos)
                self.pos += 1
                if not inner.replace("|", "").strip():
                    items.append("")
                else:
                    items.append(self.part(inner) if "|" in inner else f"({inner})")
            elif c == "<":
                items.append(self.token())
            elif c == "!":
                raise self.error("negated tokens (!<...>) are not supported by pse")
            elif c and _WORD.match(c):
                name = self.name()
                self.references.append((name, start))
                items.append(self.lark_name(name))
            elif c in ("*", "+", "?", "{"):
                if not items:
                    raise self.error(f"{c!r} with nothing before it to repeat")
                items[-1] = self.repeated(items[-1])
            else:
                break
        return " ".join(item for item in items if item)

    def repeated(self, item: str) -> str:
        start = self.pos
        c = self.peek()
        self.pos += 1
        if c in "*+?":
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        else:
            close = self.text.find("}", self.pos)
            match = re.fullmatch(r"\s*(\d*)\s*(?:(,)\s*(\d*)\s*)?",
                                 self.text[self.pos:close]) if close >= 0 else None
            if match is None or not (match.group(1) or match.group(2)):
                raise self.error("expected {m}, {m,}, {m,n} or {,n}", start)
            self.pos = close + 1
            low_text, comma, high_text = match.groups()
            low = int(low_text or 0)
            high = low if comma is None else int(high_text) if high_text else None
            if high is not None and high < low:
                raise self.error(f"{{{low},{high}}}: the most is below the least", start)
        if not item or high == 0:  # the empty text, however often
            return ""
        operand = f"({item})"
        if high is None:
            if low <= 1:
                return f"{operand}{'*+'[low]}"
            return self.part(f"{operand} ~ {low} {operand}*")
        if (low, high) == (1, 1):
            return item
        if (low, high) == (0, 1):
            return self.part(f"{item} |")
        return self.part(f"{operand} ~ {low}" if low == high else f"{operand} ~ {low}..{high}")

    def token(self) -> str:
        end = self.text.find(">", self.pos)
        if end < 0 or "\n" in self.text[self.pos:end]:
            raise self.error("a token <...> without its '>'")
        token = self.text[self.pos:end + 1]
        self.pos = end + 1
        return token

    # -- characters ---------------------------------------------------------------------------
    def char(self, where: str) -> str:
        """One character of a literal or a class, its escape read."""
        if self.pos >= len(self.text) or self.text[self.pos] in "\r\n":
            raise self.error(f"unterminated {where}")
        c = self.text[self.pos]
        self.pos += 1
        if c != "\\":
            return c
        e = self.peek()
        self.pos += 1
        if e in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[e]
        if e in _HEX_ESCAPES:
            digits = self.text[self.pos:self.pos + _HEX_ESCAPES[e]]
            if len(digits) != _HEX_ESCAPES[e] or not re.fullmatch(r"[0-9A-Fa-f]+", digits):
                raise self.error(f"\\{e} needs {_HEX_ESCAPES[e]} hex digits", self.pos - 2)
            self.pos += len(digits)
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise self.error(f"\\{e}{digits} is not a Unicode scalar value", self.pos - 2
                                 - len(digits))
            return chr(code)
        raise self.error(f"unknown escape \\{e}", self.pos - 2)

    def literal(self) -> str:
        self.pos += 1  # the opening quote
        chars = []
        while self.peek() != '"':
            chars.append(self.char("literal"))
        self.pos += 1
        return '"' + "".join(map(_in_string, chars)) + '"' if chars else ""

    def char_class(self) -> str:
        start = self.pos
        self.pos += 1  # '['
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        parts = []
        while self.peek() != "]":
            low = self.char("character class")
            if self.peek() == "-" and self.peek(2)[1:] not in ("]", ""):
                self.pos += 1
                high = self.char("character class")
                if high < low:
                    raise self.error(f"range {low!r}-{high!r} runs backwards", start)
                parts.append(_in_class(low) + "-" + _in_class(high))
            else:
                parts.append(_in_class(low))
        self.pos += 1
        if not parts:
            if negated:  # [^]: any character
                return r"/[\s\S]/"
            raise self.error("an empty character class matches nothing", start)
        return "/[" + ("^" if negated else "") + "".join(parts) + "]/"


def _escape(c: str) -> str:
    """A character as an escape that Lark's literal reading turns back into it."""
    code = ord(c)
    if c in _READABLE:
        return _READABLE[c]
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _in_string(c: str) -> str:
    """A character inside a Lark string literal."""
    if c == "\\":
        return "\\\\"
    if c == '"':
        return '\\"'
    return c if " " <= c <= "~" else _escape(c)


def _in_class(c: str) -> str:
    """A character inside a regex class inside a Lark regex literal."""
    if c in "\\]^-[/":
        return "\\" + c
    return c if " " <= c <= "~" else _escape(c)
