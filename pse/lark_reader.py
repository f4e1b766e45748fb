"""Read a Lark grammar into BNF rules and terminal definitions.

Lark's builder reads the text (its syntax read by `pse.lark_syntax`, in lark's own terms, and
given to the builder by `pse.lark_builder`): `%import`, `%ignore`, `%declare`, templates,
terminals built from other terminals, anonymous terminals for the strings in rules. The EBNF
operators are pse's to rewrite: lark's own pass (`Grammar.compile`) writes each group of
alternatives, each `?` and `[...]` inside an expansion out into copies of it, however many
(`a? b? c? ...` becomes 2**n alternatives), which cost more time than the rest of a grammar's
compile. Here an
expansion is spelled out only up to MAX_SPELLED_OUT alternatives; beyond, parts become rules
of their own; repetitions are loop rules (`pse.cfg` removes their left recursion).

This reads lark's grammar trees, which are not lark's public API: pyproject.toml bounds the lark
releases it was written for.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from pse import lark_patterns, limits
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


def read_lark(text: str, start: str, import_paths: list[str],
              source_path: str | None) -> BnfGrammar:
    """The BNF rules and terminals of the Lark grammar `text`.

    Raises:
        GrammarError: lark cannot read the grammar (its message), an `%import`ed file cannot
            be read, `start` is not a rule, or one past a limit; each message starts with
            `source_path` (or "grammar").
    """
    from lark.exceptions import LarkError

    from pse import lark_builder  # (lark is imported only where a Lark grammar is read)

    where = source_path or "grammar"
    try:
        grammar, used = lark_builder.load(text, source_path or "<string>", import_paths)
        terminals = lark_patterns.terminal_definitions(grammar)
        rules = _rules(grammar, terminals)
    except LarkError as e:
        raise GrammarError(f"{where}: lark cannot read the grammar: {e}") from None
    except RecursionError:  # (lark's passes and pse's reader recurse per nested group)
        raise GrammarError(f"{where}: the grammar nests too deeply to read (groups, and "
                           "terminals made of terminals, nest at most MAX_GROUP_DEPTH = "
                           f"{limits.MAX_GROUP_DEPTH} deep)") from None
    except OSError as e:  # (an %import's file)
        raise GrammarError(f"{where}: an %import cannot be read: {e.strerror or e}: "
                           f"{e.filename!r} (import_paths: {import_paths})") from None
    except GrammarError as e:  # (pse's reader's: named by the grammar, as lark's are)
        if type(e) is not GrammarError or str(e).startswith(f"{where}: "):
            raise
        raise GrammarError(f"{where}: {e}") from None
    if start not in rules:
        raise GrammarError(f"{where}: the start rule {start!r} is not defined")
    files = tuple(sorted((path, digest) for path, digest in used.items()
                         if isinstance(path, str)))  # (lark's own: a PackageResource)
    return BnfGrammar(rules, terminals, list(grammar.ignore), files)


def _rules(grammar, terminals: list) -> dict[str, list[Alternative]]:
    """Every rule (templates instantiated) as BNF alternatives; `terminals` gains lark's
    anonymous terminals for the strings written in rules."""
    from lark.grammar import RuleOptions
    from lark.load_grammar import ApplyTemplates, ValidateSymbols

    anonymous = lark_patterns.anonymous_class()(terminals)
    rule_defs = list(grammar.rule_defs)
    # lark's passes over each rule's tree; without templates, `_LarkTrees` does their work
    # (literals to anonymous terminals) as it reads the tree, in one walk instead of four
    prepare = None
    if any(params for _, params, _, _ in rule_defs):
        prepare = (lark_patterns.literals() * ValidateSymbols() * anonymous
                   * ApplyTemplates(rule_defs))
    bnf = _LarkTrees(anonymous)
    i = 0
    while i < len(rule_defs):  # (instantiating a template appends to rule_defs)
        name, params, tree, options = rule_defs[i]
        i += 1
        if params:  # a template: only its instances are rules
            continue
        if tree is None:  # (lark's builder crashes on it later)
            raise GrammarError(f"rule {name} is declared with %declare but has no "
                               "definition: only terminals can be declared")
        # (as lark: `!rule` keeps its anonymous terminals in the parse tree)
        anonymous.rule_options = (RuleOptions(keep_all_tokens=True)
                                  if options and options.keep_all_tokens else None)
        bnf.rule(str(name), prepare.transform(tree) if prepare else tree)
    # (lark's builder takes `%import common.NUMBER -> number` as a terminal spelled in lower
    # case, which no rule may use; lark refuses it only when it builds its parser)
    defined = {str(t.name) for t in terminals}
    for name, alts in bnf.rules.items():
        for symbol in sorted({symbol for alt in alts for kind, symbol in alt if kind == "n"}):
            if symbol not in bnf.rules:
                hint = (f" (a terminal has that name: import it under an upper-case one, "
                        f"-> {symbol.upper()})" if symbol in defined else "")
                raise GrammarError(f"rule {bnf.owner.get(name, name)}: uses the undefined "
                                   f"rule {symbol!r}{hint}")
    return bnf.rules


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


class _LarkTrees(BnfBuilder):
    """Lark's rule trees to BNF: as its parser leaves them (strings and regexes become
    anonymous terminals here, by lark's own naming), or after its passes that instantiate
    templates."""

    def __init__(self, anonymous) -> None:
        from lark.grammar import NonTerminal, Terminal

        super().__init__()
        self.symbols = ((Terminal, "t"), (NonTerminal, "n"))
        # lark's PrepareAnonTerminals names a literal's terminal, PrepareLiterals makes a
        # range's pattern (bound once: each access to a lark transformer's method makes a
        # wrapper)
        self.name_terminal = anonymous.terminal_for
        self.range = lark_patterns.literals().range
        # a literal's alternatives by its tokens: one spelled many times is read once (lark
        # names the same pattern the same terminal each time)
        self.by_literal: dict[tuple, list[Alternative]] = {}

    def rule(self, name: str, tree) -> None:
        self.current = name
        self.rules[name] = self.alternatives(tree)

    def alternatives(self, node) -> list[Alternative]:
        """The alternatives `node` stands for, each a tuple of symbols."""
        for kind, letter in self.symbols:
            if isinstance(node, kind):
                return [((letter, node.name),)]
        data = node.data
        if data == "expansions":
            out: dict[Alternative, None] = {}
            for child in node.children:
                out.update(dict.fromkeys(self.alternatives(child)))
            return list(out)
        if data == "alias":  # (the alias names the parse tree's node: no language)
            return self.alternatives(node.children[0])
        if data == "value":
            return self.alternatives(node.children[0])
        if data in ("literal", "range"):  # a string, regex or range: its terminal
            key = (data, *((token.type, str(token)) for token in node.children))
            found = self.by_literal.get(key)
            if found is None:
                try:
                    pattern = (lark_patterns.literal_pattern(*node.children) if data == "literal"
                               else self.range(*node.children).children[0])
                except AssertionError:  # (lark's check of a range's ends)
                    raise GrammarError(f"rule {self.current}: the ends of a range must be "
                                       f"single characters: "
                                       f"{' .. '.join(map(str, node.children))}") from None
                found = self.by_literal[key] = self.alternatives(self.name_terminal(pattern))
            return list(found)
        if data == "expansion":
            return self.expansion([self.alternatives(child) for child in node.children])
        if data == "maybe":
            return self.alternatives(node.children[0]) + [()]
        if data == "expr":
            item, op, *counts = node.children
            alts = self.alternatives(item)
            if op in REPEATS:
                return self.repeat(alts, *REPEATS[op])
            if op != "~":
                raise GrammarError(f"rule {self.current}: unknown operator {op!r}")
            return self.repeat(alts, int(counts[0]), int(counts[-1]))
        raise GrammarError(f"rule {self.current}: lark's grammar tree holds {data!r}, which "
                           "this reader does not know (a lark release it was not written "
                           "for?)")


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
