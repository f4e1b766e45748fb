"""Lark's grammar syntax read by hand: the statements of a Lark grammar as the tree lark's own
reader makes of them (its LALR parser, then its `PrepareGrammar` pass), in a fraction of the
time (lark's parse was about half of the SQL grammar's compile).

The tokens are lark's own: its meta-grammar's terminals (`lark.load_grammar.TERMINALS`), tried
in the order lark's lexer tries them (at each token, those that can start with its first
character: `_scanner`). The statements follow lark's
meta-grammar (`lark.load_grammar.RULES`) by recursive descent. Anything this reader does not
expect raises `Unread`: the caller then has lark read the text (which also words the errors).
tests/test_lark_syntax.py checks the trees against lark's on every grammar of the test suite.
"""

from __future__ import annotations

import re

from lark import Token, Tree
from lark.grammar import NonTerminal, Terminal
from lark.lexer import PatternRE
from lark.load_grammar import TERMINALS

from pse import limits

# tokens between which nothing is said
SKIPPED = ("WS", "COMMENT", "BACKSLASH")
# the tokens an expression starts with
ATOM_START = frozenset(("_LPAR", "_LBRA", "TERMINAL", "RULE", "STRING", "REGEXP"))


class Unread(Exception):
    """Text this reader leaves to lark's (a syntax error, or a form it does not expect)."""


# The characters each of lark's tokens can start with (see _scanner). Only a COMMENT
# (`\s*//...`) can start with any other (a blank), and a NUMBER (`[+-]?\d+`) with a digit
# other than 0-9: the scanner of the other characters leaves it unread (lark reads it).
_STARTS = {
    "REGEXP": "/", "STRING": '"', "COMMENT": "/#\r\n \t", "WS": " \t",
    "RULE": "abcdefghijklmnopqrstuvwxyz_",
    "TERMINAL": "ABCDEFGHIJKLMNOPQRSTUVWXYZ_", "_NL_OR": "\r\n", "_NL": "\r\n",
    "BACKSLASH": "\\", "NUMBER": "+-0123456789", "_OVERRIDE": "%", "_DECLARE": "%",
    "_EXTEND": "%", "_IGNORE": "%", "_IMPORT": "%", "RULE_MODIFIERS": "!?", "_DOTDOT": ".",
    "_TO": "-", "OP": "+*?", "_DOT": ".", "_LBRA": "[", "_LBRACE": "{", "_LPAR": "(",
    "_OR": "|", "_RBRA": "]", "_RBRACE": "}", "_RPAR": ")", "TILDE": "~", "_COLON": ":",
    "_COMMA": ",",
}


# lark's lexer's order: it tries its terminals in this order and takes the first that matches
_ORDER = [name for name, pattern in sorted(TERMINALS.items(), key=lambda item: (
    -PatternRE(item[1]).max_width, -len(item[1]), item[0]))]
# per first character (any other: "") the tokens that can start with it, in that order (a
# terminal of lark's missing from _STARTS, from a release this was not written for, can
# start with any)
_STARTING = {char: tuple(name for name in _ORDER if char in _STARTS.get(name, char))
             for char in set("".join(_STARTS.values()))}
_STARTING[""] = tuple(name for name in _ORDER if name == "COMMENT" or name not in _STARTS)
# tokens of one character that no other token starts with, taken without a regex
_SINGLE = {char: kind for char, kind in [
    ("[", "_LBRA"), ("{", "_LBRACE"), ("(", "_LPAR"), ("|", "_OR"), ("]", "_RBRA"),
    ("}", "_RBRACE"), (")", "_RPAR"), ("~", "TILDE"), (":", "_COLON"), (",", "_COMMA"),
    ("*", "OP")] if _STARTING[char] == (kind,)}
_SCANNERS: dict[str, re.Pattern] = {}  # first character -> its scanner, made when first met


def _scanner(char: str) -> re.Pattern:
    """The scanner of the tokens that can start with `char` (a tenth of the SQL grammar's
    compile was one regex of all of lark's terminals tried in turn at each token; made when
    first met: compiling them all took 6 ms)."""
    found = _SCANNERS.get(char)
    if found is None:
        names = _STARTING.get(char, _STARTING[""])
        found = _SCANNERS[char] = re.compile("|".join(
            f"(?P<{name}>{TERMINALS[name]})" for name in names))
    return found


def tokens(text: str) -> tuple[list[str], list[str]]:
    """The kinds and the texts of the tokens of `text` (a newline added at the end, as lark
    does), blanks and comments left out, `$END` last. Blanks before a token are passed over:
    only WS and COMMENT (both left out) can start with one, and a COMMENT after blanks is one
    at the first character after them too."""
    text += "\n"
    kinds, texts = [], []
    pos, end = 0, len(text)
    single, scanners = _SINGLE, _SCANNERS
    while pos < end:
        while text[pos] in " \t":  # (the text ends with a newline)
            pos += 1
        char = text[pos]
        kind = single.get(char)
        if kind is not None:
            kinds.append(kind)
            texts.append(char)
            pos += 1
            continue
        scanner = scanners.get(char)
        m = (scanner if scanner is not None else _scanner(char)).match(text, pos)
        if m is None or m.end() == pos:
            raise Unread(pos)
        kind = m.lastgroup
        if kind not in SKIPPED:
            kinds.append(kind)
            texts.append(m.group())
        pos = m.end()
    kinds.append("$END")
    texts.append("")
    return kinds, texts


def parse(text: str) -> Tree:
    """The grammar `text` as lark's reader leaves it: a `start` tree of statements.

    Raises:
        Unread: a syntax error, or a form this reader does not expect.
        RecursionError: groups (or template arguments) nest more than MAX_GROUP_DEPTH deep.
    """
    return _Reader(*tokens(text)).start()


# the tokens of statements that rewrite rules (templates, %override, %extend)
REWRITING = frozenset(("_LBRACE", "_OVERRIDE", "_EXTEND"))


def parse_apart(text: str) -> tuple[Tree, list | None, list[str], list[str]]:
    """`parse`, the rule statements left out of the tree where no statement rewrites rules
    (templates, `%override`, `%extend`): the tree, each rule's head (its modifiers, its name,
    where its expansions start among the tokens: `pse.lark_reader` reads them from there), or
    None where the tree holds the rules, and the kinds and texts of the tokens.

    Raises:
        Unread, RecursionError: as `parse`.
    """
    kinds, texts = tokens(text)
    heads = None if REWRITING.intersection(kinds) else []
    return _Reader(kinds, texts, heads).start(), heads, kinds, texts


class _Reader:
    def __init__(self, kinds: list[str], texts: list[str], heads: list | None = None) -> None:
        # (a lark Token is made only for a token the tree holds: most are punctuation)
        self.kinds, self.texts = kinds, texts
        self.i = 0
        self.depth = 0  # groups open (see enter)
        self.heads = heads  # rule statements left out of the tree (see parse_apart)

    def peek(self) -> str:
        return self.kinds[self.i]

    def take(self, kind: str) -> Token:
        """The next token, which must be of `kind`, for the tree."""
        self.expect(kind)
        return Token(kind, self.texts[self.i - 1])

    def expect(self, kind: str) -> None:
        """Past the next token, which must be of `kind` (punctuation: the tree holds none)."""
        if self.kinds[self.i] != kind:
            raise Unread(self.i)
        self.i += 1

    def skip(self, kind: str) -> bool:
        if self.kinds[self.i] == kind:
            self.i += 1
            return True
        return False

    def enter(self) -> None:
        """One group deeper (the reader recurses per group: see pse.limits.MAX_GROUP_DEPTH)."""
        self.depth += 1
        if self.depth > limits.MAX_GROUP_DEPTH:
            raise RecursionError("groups nest more than MAX_GROUP_DEPTH "
                                 f"({limits.MAX_GROUP_DEPTH})")

    # statements
    def start(self) -> Tree:
        if self.peek() == "$END":
            raise Unread(0)  # lark's meta-grammar wants one statement or line at least
        items = []
        while self.peek() != "$END":
            if not self.skip("_NL"):
                if self.heads is not None and self.kinds[self.i] in ("RULE", "RULE_MODIFIERS"):
                    self.rule_head()
                else:
                    items.append(self.statement())
        return Tree("start", items)

    def statement(self) -> Tree:
        kind = self.peek()
        if kind in ("RULE", "RULE_MODIFIERS"):
            return self.rule()
        if kind == "TERMINAL":
            return self.term()
        self.i += 1
        if kind == "_IGNORE":
            exp = self.expansions()
            self.expect("_NL")
            return Tree("ignore", [exp])
        if kind == "_DECLARE":
            symbols = [self.symbol()]
            while self.peek() != "_NL":
                symbols.append(self.symbol())
            self.expect("_NL")
            return Tree("declare", symbols)
        if kind in ("_OVERRIDE", "_EXTEND"):
            inner = self.term() if self.peek() == "TERMINAL" else self.rule()
            return Tree(kind[1:].lower(), [inner])
        if kind == "_IMPORT":
            return self.imports()
        raise Unread(self.i)  # (errors: lark reads those, and words them)

    def imports(self) -> Tree:
        """`%import` of a name (`-> alias`), or of a list of names, from a dotted path
        (`.`: relative to the grammar's file)."""
        relative = self.skip("_DOT")
        names = [self.name()]
        while self.skip("_DOT"):
            names.append(self.name())
        children = [Tree("import_rel" if relative else "import_lib", names)]
        if self.skip("_LPAR"):
            listed = [self.name()]
            while self.skip("_COMMA"):
                listed.append(self.name())
            self.expect("_RPAR")
            children.append(Tree("name_list", listed))
        elif self.skip("_TO"):
            children.append(self.name())
        self.expect("_NL")
        return Tree("import", children)

    def name(self) -> Token:
        kind = self.peek()
        if kind not in ("RULE", "TERMINAL"):
            raise Unread(self.i)
        return self.take(kind)

    def rule(self) -> Tree:
        modifiers = [self.take("RULE_MODIFIERS")] if self.peek() == "RULE_MODIFIERS" else []
        name = self.take("RULE")
        params = []
        if self.skip("_LBRACE"):
            params.append(self.take("RULE"))
            while self.skip("_COMMA"):
                params.append(self.take("RULE"))
            self.expect("_RBRACE")
        priority = [self.take("NUMBER")] if self.skip("_DOT") else []
        self.expect("_COLON")
        exp = self.expansions()
        self.expect("_NL")
        return Tree("rule", [Tree("rule_modifiers", modifiers), name,
                             Tree("template_params", params), Tree("priority", priority), exp])

    def rule_head(self) -> None:
        """A rule statement into `heads`, its expansions passed over (no template: see
        parse_apart)."""
        modifiers = self.texts[self.i - 1] if self.skip("RULE_MODIFIERS") else ""
        self.expect("RULE")
        name = self.texts[self.i - 1]
        if self.skip("_DOT"):
            self.expect("NUMBER")  # (a rule's priority: only lark's parse trees heed it)
        self.expect("_COLON")
        self.heads.append((modifiers, name, self.i))
        while self.kinds[self.i] != "_NL":
            if self.kinds[self.i] == "$END":
                raise Unread(self.i)
            self.i += 1
        self.i += 1

    def term(self) -> Tree:
        name = self.take("TERMINAL")
        head = [name, self.take("NUMBER")] if self.skip("_DOT") else [name]
        self.expect("_COLON")
        exp = self.expansions()
        self.expect("_NL")
        return Tree("term", head + [exp])

    def symbol(self):
        kind, text = self.kinds[self.i], self.texts[self.i]
        self.i += 1
        if kind == "TERMINAL":
            return Terminal(text, filter_out=text.startswith("_"))
        if kind == "RULE":
            return NonTerminal(text)
        raise Unread(self.i)

    # expansions
    def expansions(self) -> Tree:
        alts = [self.alias()]
        while self.peek() in ("_OR", "_NL_OR"):
            self.i += 1
            alts.append(self.alias())
        return Tree("expansions", alts)

    def alias(self) -> Tree:
        exprs = []
        while self.peek() in ATOM_START:
            exprs.append(self.expr())
        exp = Tree("expansion", exprs)
        if self.skip("_TO"):
            self.expect("RULE")
            return Tree("alias", [exp, NonTerminal(self.texts[self.i - 1])])
        return exp

    def expr(self):
        atom = self.atom()
        kind = self.peek()
        if kind == "OP":
            return Tree("expr", [atom, self.take("OP")])
        if kind == "TILDE":
            parts = [atom, self.take("TILDE"), self.take("NUMBER")]
            if self.skip("_DOTDOT"):
                parts.append(self.take("NUMBER"))
            return Tree("expr", parts)
        return atom

    def atom(self):
        if self.skip("_LPAR"):
            self.enter()
            exp = self.expansions()
            self.expect("_RPAR")
            self.depth -= 1
            return exp
        if self.skip("_LBRA"):
            self.enter()
            exp = self.expansions()
            self.expect("_RBRA")
            self.depth -= 1
            return Tree("maybe", [exp])
        return self.value()

    def value(self) -> Tree:
        kind, text = self.kinds[self.i], self.texts[self.i]
        self.i += 1
        if kind == "TERMINAL":
            return Tree("value", [Terminal(text, filter_out=text.startswith("_"))])
        if kind == "RULE":
            rule = NonTerminal(text)
            if not self.skip("_LBRACE"):
                return Tree("value", [rule])
            self.enter()
            args = [self.value()]
            while self.skip("_COMMA"):
                args.append(self.value())
            self.expect("_RBRACE")
            self.depth -= 1
            return Tree("value", [Tree("template_usage", [rule] + args)])
        if kind == "STRING" and self.skip("_DOTDOT"):
            return Tree("value", [Tree("range", [Token(kind, text), self.take("STRING")])])
        if kind in ("STRING", "REGEXP"):
            return Tree("value", [Tree("literal", [Token(kind, text)])])
        raise Unread(self.i)
