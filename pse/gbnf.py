"""GBNF, the grammar format of llama.cpp (also what XGrammar reads as EBNF), read into BNF rules
that `Grammar` compiles (`to_bnf`), and into the same grammar as Lark text (`to_lark`: what
`Grammar.from_gbnf` keeps as `grammar.text`, and what tests give lark's parser as a reference).

GBNF is character-level: rules `name ::= ...` of literals (`"..."` with `\\x`, `\\u`, `\\U`,
`\\t`, `\\r`, `\\n`, `\\\\`, `\\"`, `\\[`, `\\]` escapes), character classes (`[a-z]`, negated
`[^...]`), `.` (any character), rule names, groups, `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`,
`{,n}`, and tokens (`<[id]>` by id, `<text>` by text); `#` starts a comment; `root` is the
start. A line break inside a literal or a class is one of its characters (as llama.cpp reads
it). A rule ends at the end of its line, except inside parentheses and after `|`. Lark with
pse's scannerless reading has the same language: every literal and class becomes an anonymous
terminal, there is nothing `%ignore`d, and a rule's name maps to a Lark name (lower case, `-`
as `_`). In the BNF, a run of literals and classes (with their groups and repetitions, and
rules of single characters or used once that are regular) becomes one terminal: with nothing
ignored between terminals the language is the same, and a mask does not take a parser step
per character. Errors name the line and column of the GBNF text.

The reader makes a tree of each rule's body: alternatives (lists of sequences), a sequence a
list of items, an item one of ("lit", text), ("class", regex), ("tok", "<...>"),
("ref", rule name), ("group", alternatives), ("rep", item, least, most or None).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from pse import limits
from pse.cfg import Alternative
from pse.compiler import MAX_NODES
from pse.errors import GrammarError
from pse.bnf import BnfBuilder, BnfGrammar
from pse.lark_terminals import counted_terminal_dfa, terminal_dfa

ROOT = "root"
_WORD = re.compile(r"[A-Za-z0-9_-]+")
_SIMPLE_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_READABLE = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
ANY_CHAR = r"[\s\S]"

Item = tuple  # see the module doc
# A regular rule whose regex would be longer than this, or that nests regular rules deeper
# than this, stays a rule of its own (rules that refer to a rule twice, nested, double its
# regex at every level; Python's regex parser recurses per level)
MAX_RULE_REGEX = 4096
MAX_RULE_NESTING = 32
Alternatives = list  # of sequences, each a list of items


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

def to_lark(text: str) -> LarkGrammar:
    """Read a GBNF grammar into Lark text.

    Raises:
        TypeError: `text` is not a str.
        GrammarError: see `to_bnf`.
    """
    try:
        return _LarkWriter(_read(text)).write()
    except RecursionError:  # (the reader and writer recurse per nested group)
        raise GrammarError("GBNF: groups nest too deeply to read") from None


def to_bnf(text: str) -> tuple[BnfGrammar, dict[str, int | str]]:
    """Read a GBNF grammar into BNF rules (named as the GBNF names them; `root` is the start)
    and terminal definitions, with no lark in between.

    Returns:
        The grammar, and {terminal name: special token (its text or its id)} for the
        terminals that stand for special tokens.

    Raises:
        TypeError: `text` is not a str.
        GrammarError: a syntax error, a rule defined twice, an undefined rule, no `root`
            rule, or a negated token (`!<...>`, which pse does not read); the message names
            the line and column. Groups nested more than pse.limits.MAX_GROUP_DEPTH deep
            are one too.
    """
    try:
        return _BnfWriter(_read(text)).write()
    except RecursionError:  # (the reader and writer recurse per nested group)
        raise GrammarError("GBNF: groups nest too deeply to read") from None


def _read(text: str) -> dict[str, Alternatives]:
    if not isinstance(text, str):
        raise TypeError(f"the grammar text must be a str, got {type(text).__name__}")
    return _Reader(text).read()


class _Reader:
    """A recursive-descent reader of GBNF into rule trees (see the module doc)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.rules: dict[str, tuple[int, Alternatives]] = {}  # name -> (where defined, body)
        self.references: list[tuple[str, int]] = []  # (rule name, where)
        self.depth = 0  # groups open (see check_depth)
        self.height = 0  # levels in the items last read (see sequence)

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
    def read(self) -> dict[str, Alternatives]:
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
        return {name: body for name, (_, body) in self.rules.items()}

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

    # -- expressions --------------------------------------------------------------------------
    def alternatives(self, nested: bool) -> Alternatives:
        """The alternatives read; self.height is the most levels in one of their items."""
        alts = [self.sequence(nested)]
        height = self.height
        while self.peek() == "|":
            self.pos += 1
            self.skip_space(newlines=True)
            alts.append(self.sequence(nested))
            height = max(height, self.height)
        self.height = height
        return alts

    def sequence(self, nested: bool) -> list[Item]:
        """The items read; self.height is the most levels in one of them."""
        items: list[Item] = []
        heights: list[int] = []  # per item: groups and repetitions, one inside another
        while True:
            self.skip_space(newlines=nested)
            start = self.pos
            c = self.peek()
            if c not in ("(", "*", "+", "?", "{"):
                heights.append(0)  # (dropped again where nothing is read: see the end)
            if c == '"':
                items.append(self.literal())
            elif c == "[":
                items.append(self.char_class())
            elif c == ".":
                self.pos += 1
                items.append(("class", ANY_CHAR))
            elif c == "(":
                self.depth += 1
                self.check_depth(self.depth)  # (the reader recurses per group open)
                self.pos += 1
                self.skip_space(newlines=True)
                inner = self.alternatives(nested=True)
                self.skip_space(newlines=True)
                if self.peek() != ")":
                    raise self.error("expected ')'", self.pos)
                self.pos += 1
                self.depth -= 1
                items.append(("group", inner))
                heights.append(1 + self.height)
                self.check_depth(heights[-1])
            elif c == "<":
                items.append(self.token())
            elif c == "!":
                raise self.error("negated tokens (!<...>) are not supported by pse")
            elif c and _WORD.match(c):
                name = self.name()
                self.references.append((name, start))
                items.append(("ref", name))
            elif c in ("*", "+", "?", "{"):
                if not items:
                    raise self.error(f"{c!r} with nothing before it to repeat")
                heights[-1] += 1
                self.check_depth(heights[-1])
                items[-1] = self.repeated(items[-1])
            else:
                heights.pop()
                break
        self.height = max(heights, default=0)
        return items

    def check_depth(self, levels: int) -> None:
        """Groups and repetitions nest at most MAX_GROUP_DEPTH deep, `levels` being how
        deep they are here (the reader recurses per group open, the writers per level)."""
        if levels > limits.MAX_GROUP_DEPTH:
            raise self.error("groups and repetitions nest too deeply: more than "
                             f"MAX_GROUP_DEPTH ({limits.MAX_GROUP_DEPTH})")

    def repeated(self, item: Item) -> Item:
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
            if max(low, high or 0) > MAX_NODES:  # (each repeat: a parser node or a state)
                raise self.error(f"a count above {MAX_NODES:,} (pse.compiler.MAX_NODES)",
                                 start)
        return ("rep", item, low, high)

    def token(self) -> Item:
        start = self.pos
        end = self.text.find(">", self.pos)
        if end < 0 or "\n" in self.text[self.pos:end]:
            raise self.error("a token <...> without its '>'")
        token = self.text[self.pos:end + 1]
        if len(token) < 3 or any(c.isspace() for c in token):
            raise self.error(f"a special token is written <|name|> or <[id]>, got {token!r}",
                             start)
        self.pos = end + 1
        return ("tok", token)

    # -- characters ---------------------------------------------------------------------------
    def char(self, where: str, opened: int) -> str:
        """One character of a literal or a class, its escape read (a line break too, as
        llama.cpp reads it; `opened`: where the literal or class opens, named if the text
        ends first)."""
        if self.pos >= len(self.text):
            raise self.error(f"unterminated {where}", opened)
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

    def literal(self) -> Item:
        start = self.pos
        self.pos += 1  # the opening quote
        chars = []
        while self.peek() != '"':
            chars.append(self.char("literal", start))
        self.pos += 1
        return ("lit", "".join(chars))

    def char_class(self) -> Item:
        start = self.pos
        self.pos += 1  # '['
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        parts = []
        while self.peek() != "]":
            low = self.char("character class", start)
            if self.peek() == "-" and self.peek(2)[1:] not in ("]", ""):
                self.pos += 1
                high = self.char("character class", start)
                if high < low:
                    raise self.error(f"range {low!r}-{high!r} runs backwards", start)
                parts.append(_in_class(low) + "-" + _in_class(high))
            else:
                parts.append(_in_class(low))
        self.pos += 1
        if not parts:
            if negated:  # [^]: any character
                return ("class", ANY_CHAR)
            raise self.error("an empty character class matches nothing", start)
        return ("class", "[" + ("^" if negated else "") + "".join(parts) + "]")


class _LarkWriter:
    """Rule trees -> Lark text, with a rule of its own for each alternative, optional or
    counted part (lark multiplies such parts out inside a rule: `a? b? c{0,15}` is 2 x 2 x
    16 expansions)."""

    def __init__(self, rules: dict[str, Alternatives]) -> None:
        self.rules = rules
        self.lark_names: dict[str, str] = {}
        self.taken: set[str] = set()
        self.parts: dict[str, str] = {}  # Lark body -> the helper rule that holds it

    def write(self) -> LarkGrammar:
        bodies = {name: self.alternatives(body) for name, body in self.rules.items()}
        lines = [f"{self.lark_name(name)}: {body}" for name, body in bodies.items()]
        lines += [f"{name}: {body}" for body, name in self.parts.items()]
        renamed = {self.lark_name(n): n for n in self.rules if self.lark_name(n) != n}
        return LarkGrammar("\n".join(lines) + "\n", self.lark_name(ROOT), renamed)

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
        if body not in self.parts:
            self.parts[body] = self.fresh("part")
        return self.parts[body]

    def alternatives(self, alts: Alternatives) -> str:
        return " | ".join(self.sequence(seq) for seq in alts)

    def sequence(self, items: list[Item]) -> str:
        return " ".join(text for text in map(self.item, items) if text)

    def item(self, item: Item) -> str:
        kind = item[0]
        if kind == "lit":
            return '"' + "".join(map(_in_string, item[1])) + '"' if item[1] else ""
        if kind == "class":
            return "/" + item[1] + "/"
        if kind == "tok":
            return item[1]
        if kind == "ref":
            return self.lark_name(item[1])
        if kind == "group":
            texts = [self.sequence(seq) for seq in item[1]]
            if not any(texts):
                return ""
            inner = " | ".join(texts)
            return self.part(inner) if len(texts) > 1 else f"({inner})"
        return self.repeated(item)

    def repeated(self, item: Item) -> str:
        _, inner, low, high = item
        text = self.item(inner)
        if not text or high == 0:  # the empty text, however often
            return ""
        operand = f"({text})"
        if high is None:
            if low <= 1:
                return f"{operand}{'*+'[low]}"
            return self.part(f"{operand} ~ {low} {operand}*")
        if (low, high) == (1, 1):
            return text
        if (low, high) == (0, 1):
            return self.part(f"{text} |")
        return self.part(f"{operand} ~ {low}" if low == high else f"{operand} ~ {low}..{high}")


class _BnfWriter(BnfBuilder):
    """Rule trees -> BNF (the GBNF rule names kept), the way `BnfBuilder` writes Lark's EBNF:
    a terminal per distinct literal, class and special token."""

    def __init__(self, rules: dict[str, Alternatives]) -> None:
        super().__init__()
        self.tree = rules
        self.rules.update({name: [] for name in rules})  # (names parts must not take)
        self.terminals: dict[tuple[str, str], str] = {}  # (kind, literal or regex) -> name
        self.definitions: list = []
        self.specials: dict[str, int | str] = {}
        # rules whose language is regular, with no recursion, that a run may take in: a run
        # that refers to them is regular too, and fuses into one terminal. Only rules of
        # single characters (a letter, a digit: a terminal per character would be a parser
        # step per byte) and rules used once: a rule fused into each of its places is a
        # terminal per place, each with its own cached mask parts (JSON's string in three
        # places costs three first walks of the trie instead of one)
        uses = Counter(_refs(rules))
        # name -> (regex, nullable, single characters, nesting), each found once, from the
        # rules already in (the fixpoint adds a rule after those it refers to)
        self.regular: dict[str, tuple[str, bool, bool, int]] = {}
        grown = True
        while grown:
            grown = False
            for name, body in rules.items():
                group = ("group", body)
                if name in self.regular or not self.is_regular(group):
                    continue
                single = self.one_character(group)
                if uses[name] != 1 and not single:
                    continue
                regex = self.regex(group)
                nesting = 1 + max((self.regular[r][3] for r in _refs(body)), default=0)
                if len(regex) <= MAX_RULE_REGEX and nesting <= MAX_RULE_NESTING:
                    self.regular[name] = (regex, self.nullable(group), single, nesting)
                    grown = True

    def write(self) -> tuple[BnfGrammar, dict[str, int | str]]:
        for name, body in self.tree.items():
            self.current = name
            self.rules[name] = self.alternatives(body)
        return BnfGrammar(self.rules, self.definitions, []), self.specials

    def alternatives(self, alts: Alternatives) -> list[Alternative]:
        out: dict[Alternative, None] = {}
        for seq in alts:
            out.update(dict.fromkeys(self.expansion(self.sequence(seq))))
        return list(out)

    def sequence(self, seq: list[Item]) -> list[list[Alternative]]:
        """The parts of a sequence, each given by its alternatives. A run of regular items
        (no tokens, no rules but regular ones), longer than one literal or class, becomes one
        terminal where it cannot match the empty text: GBNF spells strings and numbers
        character by character, and a terminal per character would cost a parser step per
        character of every token a mask tries (the language is the same: nothing is ignored
        between terminals)."""
        out: list[list[Alternative]] = []
        run: list[Item] = []
        for item in [*seq, ("ref", None)]:  # (the sentinel ends the last run)
            if self.is_regular(item):
                run.append(item)
                continue
            fused = None
            if (len(run) > 1 or (run and run[0][0] in ("group", "rep"))) \
                    and not all(map(self.nullable, run)):
                fused = self.fused("".join(map(self.regex, run)))
            if fused is not None:
                out.append([(("t", fused),)])
            else:
                out += [self.item(i) for i in run]
            run = []
            if item[1] is not None:
                out.append(self.item(item))
        return out

    def fused(self, regex: str) -> str | None:
        """The terminal of a regex made of several items, or None where its automaton is
        past the automaton limits (the items stay terminals of their own)."""
        try:  # (cached: the grammar's builder finds it made)
            if counted_terminal_dfa(regex) is None:
                terminal_dfa(regex)
        except GrammarError:
            return None
        return self.terminal("class", regex)

    def item(self, item: Item) -> list[Alternative]:
        kind = item[0]
        if (kind == "rep" and self.is_regular(item[1]) and not self.nullable(item[1])
                and item[3] != 0):
            # a repeated regular item: one terminal for one or more repeats (or none)
            _, inner, low, high = item
            regex = "(?:" + self.regex(inner) + ")" + _quantifier(max(low, 1), high)
            fused = self.fused(regex)
            if fused is not None:
                return [(("t", fused),), ()] if low == 0 else [(("t", fused),)]
        if kind == "ref":
            return [(("n", item[1]),)]
        if kind == "group":
            return self.alternatives(item[1])
        if kind == "rep":
            return self.repeat(self.item(item[1]), item[2], item[3])
        if kind == "lit" and not item[1]:
            return [()]
        return [(("t", self.terminal(kind, item[1])),)]

    def is_regular(self, item: Item) -> bool:
        """Whether `item` holds no token and no rule but regular ones (a regular language)."""
        kind = item[0]
        if kind in ("lit", "class"):
            return True
        if kind == "ref":
            return item[1] in self.regular
        if kind == "group":
            return all(self.is_regular(i) for seq in item[1] for i in seq)
        return kind == "rep" and self.is_regular(item[1])

    def one_character(self, item: Item) -> bool:
        """Whether a regular `item` matches single characters only."""
        kind = item[0]
        if kind == "lit":
            return len(item[1]) == 1
        if kind == "class":
            return True
        if kind == "ref":
            return self.regular[item[1]][2]
        return kind == "group" and all(len(seq) == 1 and self.one_character(seq[0])
                                       for seq in item[1])

    def nullable(self, item: Item) -> bool:
        """Whether a regular `item` matches the empty text."""
        kind = item[0]
        if kind == "lit":
            return not item[1]
        if kind == "ref":
            return self.regular[item[1]][1]
        if kind == "group":
            return any(all(map(self.nullable, seq)) for seq in item[1])
        if kind == "rep":
            return item[2] == 0 or item[3] == 0 or self.nullable(item[1])
        return False

    def regex(self, item: Item) -> str:
        """A regular `item` as a regex (Python's syntax, which pse.regex reads)."""
        kind = item[0]
        if kind == "lit":
            return re.escape(item[1])
        if kind == "class":
            return item[1]
        if kind == "ref":
            return "(?:" + self.regular[item[1]][0] + ")"
        if kind == "group":
            return "(?:" + "|".join("".join(map(self.regex, seq)) for seq in item[1]) + ")"
        _, inner, low, high = item
        return "" if high == 0 else "(?:" + self.regex(inner) + ")" + _quantifier(low, high)

    def terminal(self, kind: str, value: str) -> str:
        """The name of the terminal for a literal, a class (its regex) or a special token."""
        name = self.terminals.get((kind, value))
        if name is None:
            from lark.lexer import PatternRE, PatternStr, TerminalDef

            if kind == "tok":
                name = f"TOKEN_{len(self.specials)}"
                ident = re.fullmatch(r"<\[(\d+)\]>", value)
                self.specials[name] = int(ident.group(1)) if ident else value
            else:
                name = f"{'LITERAL' if kind == 'lit' else 'CLASS'}_{len(self.definitions)}"
                pattern = PatternStr(value) if kind == "lit" else PatternRE(value)
                self.definitions.append(TerminalDef(name, pattern))
            self.terminals[(kind, value)] = name
        return name


def _refs(tree) -> Iterator[str]:
    """The rule names that a tree of rules, alternatives and items refers to, once per
    place."""
    if isinstance(tree, dict):
        for body in tree.values():
            yield from _refs(body)
    elif isinstance(tree, list):
        for part in tree:
            yield from _refs(part)
    elif tree[0] == "ref":
        yield tree[1]
    elif tree[0] == "group":
        yield from _refs(tree[1])
    elif tree[0] == "rep":
        yield from _refs(tree[1])


def _quantifier(low: int, high: int | None) -> str:
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    return "?" if (low, high) == (0, 1) else f"{{{low},{high}}}"


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
