"""Read a Lark grammar into BNF rules and terminal definitions.

Lark reads the text: its syntax, `%import`, `%ignore`, `%declare`, templates, terminals built
from other terminals, anonymous terminals for the strings in rules. The EBNF operators are
pse's to rewrite: lark's own pass (`Grammar.compile`) writes each group of alternatives, each
`?` and `[...]` inside an expansion out into copies of it (`a? b? c?` becomes 2**3
alternatives), which costs more time than the rest of a grammar's compile and makes the rules
larger. Here each group, optional part and repetition becomes a rule of its own instead
(`pse.cfg` then removes the left recursion of the repetitions, and the empty alternatives).

This reads lark's grammar trees, which are not lark's public API: pyproject.toml bounds the lark
releases it was written for.
"""

from __future__ import annotations

from typing import NamedTuple

from pse.cfg import Alternative, Symbol
from pse.errors import GrammarError


class LarkGrammar(NamedTuple):
    """A grammar as lark reads it, its EBNF rewritten to BNF.

    Attributes:
        rules: per rule name, its alternatives (tuples of symbols).
        terminals: lark's terminal definitions (`TerminalDef`: name, pattern).
        ignore_tokens: the names of the `%ignore`d terminals.
    """

    rules: dict[str, list[Alternative]]
    terminals: list
    ignore_tokens: list[str]


def read_lark(text: str, start: str, import_paths: list[str],
              source_path: str | None) -> LarkGrammar:
    """The BNF rules and terminals of the Lark grammar `text`.

    Raises:
        GrammarError: lark cannot read the grammar (its message), or `start` is not a rule.
    """
    from lark.exceptions import LarkError
    from lark.load_grammar import load_grammar

    where = source_path or "grammar"
    try:
        grammar, _ = load_grammar(text, source_path or "<string>", import_paths, False)
        terminals = _terminals(grammar)
        rules = _rules(grammar, terminals)
    except LarkError as e:
        raise GrammarError(f"{where}: lark cannot read the grammar: {e}") from None
    if start not in rules:
        raise GrammarError(f"{where}: the start rule {start!r} is not defined")
    return LarkGrammar(rules, terminals, list(grammar.ignore))


def _terminals(grammar) -> list:
    """Lark's terminal definitions, each a pattern (as `Grammar.compile` makes them)."""
    from lark.exceptions import GrammarError as LarkGrammarError
    from lark.lexer import TerminalDef
    from lark.load_grammar import PrepareLiterals, TerminalTreeToPattern

    for name, (tree, _) in grammar.term_defs:
        if tree is not None:
            expansions = list(tree.find_data("expansion"))
            if len(expansions) == 1 and not expansions[0].children:
                raise LarkGrammarError(f"Terminals cannot be empty ({name})")
    to_pattern = PrepareLiterals() * TerminalTreeToPattern()
    return [TerminalDef(name, to_pattern.transform(tree), priority)
            for name, (tree, priority) in grammar.term_defs if tree is not None]


def _rules(grammar, terminals: list) -> dict[str, list[Alternative]]:
    """Every rule (templates instantiated) as BNF alternatives; `terminals` gains lark's
    anonymous terminals for the strings written in rules."""
    from lark.grammar import RuleOptions
    from lark.load_grammar import (ApplyTemplates, PrepareAnonTerminals, PrepareLiterals,
                                   ValidateSymbols)

    anonymous = PrepareAnonTerminals(terminals)
    rule_defs = list(grammar.rule_defs)
    prepare = PrepareLiterals() * ValidateSymbols() * anonymous * ApplyTemplates(rule_defs)
    bnf = _Bnf()
    i = 0
    while i < len(rule_defs):  # (instantiating a template appends to rule_defs)
        name, params, tree, options = rule_defs[i]
        i += 1
        if params:  # a template: only its instances are rules
            continue
        # (as lark: `!rule` keeps its anonymous terminals in the parse tree)
        anonymous.rule_options = (RuleOptions(keep_all_tokens=True)
                                  if options and options.keep_all_tokens else None)
        bnf.rule(str(name), prepare.transform(tree))
    return bnf.rules


class _Bnf:
    """Lark's rule trees (after its literals, symbols and templates are prepared) to BNF."""

    def __init__(self) -> None:
        self.rules: dict[str, list[Alternative]] = {}
        self.parts: dict[tuple, str] = {}  # (kind, alternatives) -> the rule made for them
        self.current = ""

    def rule(self, name: str, tree) -> None:
        self.current = name
        self.rules[name] = self.alternatives(tree)

    def alternatives(self, node) -> list[Alternative]:
        data = getattr(node, "data", None)
        if data == "expansions":
            out: dict[Alternative, None] = {}
            for child in node.children:
                out.update(dict.fromkeys(self.alternatives(child)))
            return list(out)
        if data == "alias":  # (the alias names the parse tree's node: no language)
            return self.alternatives(node.children[0])
        return [self.sequence(node)]

    def sequence(self, node) -> Alternative:
        """The symbols of `node` in a sequence: a group of several alternatives, an optional
        part or a repetition is one symbol, a rule of its own."""
        from lark.grammar import NonTerminal, Terminal

        if isinstance(node, Terminal):
            return (("t", node.name),)
        if isinstance(node, NonTerminal):
            return (("n", node.name),)
        data = node.data
        if data == "expansion":
            return tuple(s for child in node.children for s in self.sequence(child))
        if data in ("expansions", "alias"):
            alts = self.alternatives(node)
            return alts[0] if len(alts) == 1 else (self.part("group", alts),)
        if data == "maybe":
            return (self.part("opt", self.alternatives(node.children[0]) + [()]),)
        if data == "expr":
            return self.repeated(node)
        raise GrammarError(f"rule {self.current}: lark's grammar tree holds {data!r}, which "
                           "this reader does not know (a lark release it was not written "
                           "for?)")

    def repeated(self, node) -> Alternative:
        item, op, *counts = node.children
        alts = self.alternatives(item)
        one = alts[0] if len(alts) == 1 else (self.part("group", alts),)
        if op == "?":
            return (self.part("opt", alts + [()]),)
        if op in ("*", "+"):  # (left-recursive, as pse.cfg turns it into a loop)
            loop = self.part("star" if op == "*" else "plus", [])  # (its body below)
            self.rules[loop[1]] = [() if op == "*" else one, (loop,) + one]
            return (loop,)
        if op != "~":
            raise GrammarError(f"rule {self.current}: unknown operator {op!r}")
        low, high = int(counts[0]), int(counts[-1])
        if high < low:
            raise GrammarError(f"rule {self.current}: bad range {low}..{high}")
        # at most `high - low` more: a chain of optional rules, each one more at most
        more: Alternative = ()
        for _ in range(high - low):
            more = (self.part("opt", [(), one + more]),)
        return one * low + more

    def part(self, kind: str, alts: list[Alternative]) -> Symbol:
        """A rule for `alts` (one per distinct content, named after the rule it is in)."""
        key = (kind, tuple(alts)) if alts else None
        name = self.parts.get(key) if key else None
        if name is None:
            name = f"__{self.current}_{kind}_{len(self.rules)}"
            while name in self.rules:
                name += "_"
            self.rules[name] = alts
            if key:
                self.parts[key] = name
        return ("n", name)
