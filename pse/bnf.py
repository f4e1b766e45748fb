"""EBNF to BNF: a grammar's rules as alternatives of symbols, for `pse.grammar` to compile.

The readers (`pse.lark_reader` for Lark, `pse.gbnf` for GBNF) give `BnfBuilder` each rule's
parts as they read them: a sequence of parts is spelled out into alternatives (as lark does,
and as the machines share their common prefixes) up to MAX_SPELLED_OUT, beyond which parts
become rules of their own; repetitions are loop rules (`pse.cfg` removes their left recursion).
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from pse.cfg import Alternative, Symbol
from pse.compiler import MAX_NODES
from pse.errors import GrammarError
from pse.limits import check_budget


class BnfGrammar(NamedTuple):
    """A grammar in BNF, as `read_lark` (or `pse.gbnf.to_bnf`) reads it.

    Attributes:
        rules: per rule name, its alternatives (tuples of symbols).
        terminals: lark's terminal definitions (`TerminalDef`: name, pattern).
        ignore_tokens: the names of the `%ignore`d terminals.
        files: the files its `%import`s read (lark's own grammars left out), as
            (path, SHA-256 of the text) pairs.
    """

    rules: dict[str, list[Alternative]]
    terminals: list
    ignore_tokens: list[str]
    files: tuple = ()


# An expansion with optional parts or groups is spelled out into its alternatives (as lark does,
# and as the machines share their common prefixes) up to this many; beyond, the part with the
# most alternatives becomes a rule of its own. A count spells out its copies up to this many
# symbols too; beyond, what it repeats becomes a rule (n nested `{2}` doubled it n times).
MAX_SPELLED_OUT = 16


class BnfBuilder:
    """EBNF to BNF: sequences of parts spelled out into alternatives (`expansion`),
    repetitions (`repeat`), rules made for parts (`part`). `rules` collects the rules."""

    def __init__(self) -> None:
        self.rules: dict[str, list[Alternative]] = {}
        self.parts: dict[tuple, str] = {}  # (kind, alternatives) -> the rule made for them
        self.current = ""  # the rule being read: parts are named after it
        self.owner: dict[str, str] = {}  # a part's rule -> the rule it was made in

    def expansion(self, options: list[list[Alternative]]) -> list[Alternative]:
        """A sequence of parts, each given by its alternatives, spelled out; while that makes
        too many, the part with the most alternatives (or else the last two parts together)
        becomes a rule of its own."""
        check_budget()  # (reading a grammar counts in its compile's time: see pse.grammar)
        options = [alts for alts in options if alts != [()]]
        while len(options) > 1 and _product(map(len, options)) > MAX_SPELLED_OUT:
            k = max(range(len(options)), key=lambda i: len(options[i]))
            if len(options[k]) > 2:
                options[k] = self.one(options[k])
            else:
                options[-2:] = [self.one(_spelled(options[-2:]))]
        return _spelled(options)

    def one(self, alts: list[Alternative], copies: int = 1) -> list[Alternative]:
        """`alts` as one alternative (itself if it is the only non-empty one and one symbol,
        or short enough that `copies` of it spell at most MAX_SPELLED_OUT symbols; else a rule
        of its own) or, when they hold the empty text, that or nothing: the rules made here
        never match the empty text."""
        filled = [alt for alt in alts if alt]
        if len(filled) == 1 and (len(filled[0]) == 1
                                 or copies * len(filled[0]) <= MAX_SPELLED_OUT):
            single = filled
        else:
            single = [(self.part("group", filled),)]
        return single + [()] if len(filled) < len(alts) else single

    def repeat(self, alts: list[Alternative], low: int, high: int | None) -> list[Alternative]:
        """`low` to `high` (None: any number of) texts of `alts`, one after the other."""
        if high is not None and high < low:
            raise GrammarError(f"rule {self.current}: bad range {low}..{high}")
        if max(low, high or 0) > MAX_NODES:  # (each repeat: a parser node at least)
            raise GrammarError(f"rule {self.current}: a count above {MAX_NODES:,} "
                               "(pse.compiler.MAX_NODES)")
        if (low, high) == (0, 1):
            return alts + [()]
        if () in alts:  # each copy may be empty: at most `high` non-empty ones, as `x{0,n}`
            # (`"a"?{300}` spelled as 300 optional parts nested 300 rules deep at its start)
            alts, low = [alt for alt in alts if alt], 0
        if low > 1 and (_product(itertools.repeat(len(alts), low)) > MAX_SPELLED_OUT
                        or low * max(map(len, alts), default=0) > MAX_SPELLED_OUT):
            alts = self.one(alts, copies=low)  # (the copies of one rule: spelling out many
            # copies of several alternatives paired them up one rule at a time, quadratic in
            # the count; of a long one, nested counts made it exponential)
        if high is not None:
            return self.expansion([list(alts) for _ in range(low)]
                                  + [self.up_to(alts, high - low)])
        # one or more: a left-recursive rule, which pse.cfg turns into a loop
        (unit,) = self.one([alt for alt in alts if alt]) if any(alts) else [()]
        if not unit:
            return [()]
        loop = self.part("loop", [])
        self.rules[loop[1]] = [unit, (loop,) + unit]
        more = [(loop,), ()] if low == 0 or () in alts else [(loop,)]
        return self.expansion([list(alts) for _ in range(low - 1)] + [more])

    def up_to(self, alts: list[Alternative], k: int) -> list[Alternative]:
        """At most `k` texts of `alts`, one after the other: spelled out when few, else a
        chain of rules, each one more at most (`alts` once, or `alts` then the next rule)."""
        if k == 0:
            return [()]
        filled = [alt for alt in alts if alt]
        if not filled:
            return [()]
        (unit,) = self.one(filled, copies=k if k < MAX_SPELLED_OUT else 1)
        if k < MAX_SPELLED_OUT:
            return [unit * j for j in range(k + 1)]
        more: list[Alternative] = [unit]
        for _ in range(k - 1):
            check_budget()
            more = [(self.part("upto", [unit] + [unit + alt for alt in more]),)]
        return more + [()]

    def part(self, kind: str, alts: list[Alternative]) -> Symbol:
        """A rule for `alts` (one per distinct content, named after the rule it is in)."""
        key = (kind, tuple(alts)) if alts else None
        name = self.parts.get(key) if key else None
        if name is None:
            name = f"__{self.current}_{kind}_{len(self.rules)}"
            while name in self.rules:
                name += "_"
            self.rules[name] = alts
            self.owner[name] = self.current
            if key:
                self.parts[key] = name
        return ("n", name)


REPEATS = {"?": (0, 1), "*": (0, None), "+": (1, None)}


def _product(numbers) -> int:
    """The product of `numbers`, or MAX_SPELLED_OUT + 1 once it is larger."""
    out = 1
    for n in numbers:
        out *= n
        if out > MAX_SPELLED_OUT:
            return MAX_SPELLED_OUT + 1
    return out


def _spelled(options: list[list[Alternative]]) -> list[Alternative]:
    """Every sequence of one alternative per part, without repeats."""
    out: list[Alternative] = [()]
    for alts in options:
        out = [done + alt for done in out for alt in alts]
    return list(dict.fromkeys(out))
