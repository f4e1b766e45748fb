"""Read a Lark grammar into BNF rules and terminal definitions.

Lark's builder reads the text (its syntax read by `pse.lark_syntax`, in lark's own terms, and
given to the builder by `pse.lark_builder`): `%import`, `%ignore`, `%declare`, templates,
terminals built from other terminals, anonymous terminals for the strings in rules. The EBNF
operators are pse's to rewrite (`pse.bnf`): lark's own pass (`Grammar.compile`) writes each
group of alternatives, each `?` and `[...]` inside an expansion out into copies of it, however
many (`a? b? c? ...` becomes 2**n alternatives), which cost more time than the rest of a
grammar's compile.

A grammar's own rules are read straight from its tokens into BNF (`_LarkRules`), past lark's
trees and builder, where nothing rewrites them before: no template, `%override` or `%extend`.
Where that reading meets anything lark's builder would refuse (a symbol not defined, a name
defined twice, ...), the grammar is read again the whole way through lark's builder, which
decides, and words the error.

This reads lark's grammar trees, which are not lark's public API: pyproject.toml bounds the lark
releases it was written for.
"""

from __future__ import annotations

from pse import lark_patterns, limits
from pse.bnf import REPEATS, BnfBuilder, BnfGrammar
from pse.cfg import Alternative
from pse.errors import GrammarError


class _NotPlain(Exception):
    """A grammar's own rules as `_LarkRules` read them are not what lark's builder would accept
    as they are: the grammar is read through lark's builder instead."""


def read_lark(text: str, start: str, import_paths: list[str],
              source_path: str | None) -> BnfGrammar:
    """The BNF rules and terminals of the Lark grammar `text`.

    Raises:
        GrammarError: lark cannot read the grammar (its message), an `%import`ed file cannot
            be read, `start` is not a rule, or one past a limit; each message starts with
            `source_path` (or "grammar").
    """
    from lark.exceptions import LarkError

    # (lark is imported only where a Lark grammar is read)
    from pse import lark_builder, lark_syntax

    where = source_path or "grammar"
    source = source_path or "<string>"
    try:
        try:  # the grammar's own rules read from its tokens (see the module's doc); on any
            # error, read again through lark's builder, which decides (also where the error
            # would be the same: a spent compile budget raises again within 16 checks)
            tree, heads, kinds, texts = lark_syntax.parse_apart(text)
            grammar, used = lark_builder.load(text, source, import_paths, tree)
            terminals = lark_patterns.terminal_definitions(grammar)
            rules = _rules(grammar, terminals,
                           None if heads is None else (heads, kinds, texts))
        except (lark_syntax.Unread, _NotPlain, LarkError, GrammarError, RecursionError,
                OSError):
            grammar, used = lark_builder.load(text, source, import_paths)  # (lark decides)
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


def _rules(grammar, terminals: list, own: tuple | None = None) -> dict[str, list[Alternative]]:
    """Every rule (templates instantiated) as BNF alternatives; `terminals` gains lark's
    anonymous terminals for the strings written in rules. `own`: the grammar's own rules,
    which `grammar` then lacks, as `lark_syntax.parse_apart` leaves them (their heads, the
    kinds and texts of the tokens).

    Raises:
        _NotPlain: `own` holds what lark's builder would refuse.
    """
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
    bnf = _LarkRules(anonymous)
    keep_all = RuleOptions(keep_all_tokens=True)
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
        anonymous.rule_options = keep_all if options and options.keep_all_tokens else None
        bnf.rule(str(name), prepare.transform(tree) if prepare else tree)
    if own is not None:  # (after the imported rules, as lark's builder defines them)
        if prepare is not None:  # (an imported template's instances: lark's builder has
            raise _NotPlain("templates")  # them after the grammar's own rules)
        heads, kinds, texts = own
        defined = {name for name, _ in grammar.term_defs}
        defined.update(name for name, *_ in rule_defs)
        for _, name, _ in heads:
            if name in defined:
                raise _NotPlain(name)  # (defined twice)
            defined.add(name)
        bnf.kinds, bnf.texts = kinds, texts
        for modifiers, name, at in heads:
            if "?" in modifiers and name.startswith("_"):
                raise _NotPlain(name)  # (lark refuses `?_rule`)
            anonymous.rule_options = keep_all if "!" in modifiers else None
            bnf.read_rule(name, at)
        if not bnf.used <= defined:
            raise _NotPlain(bnf.used - defined)  # (lark words it)
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
            return self.literal(data, node.children)
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

    def literal(self, data: str, tokens: list) -> list[Alternative]:
        """The alternatives (its terminal) of a "literal" (a string or regex token) or of a
        "range" (two string tokens)."""
        key = (data, *((token.type, str(token)) for token in tokens))
        found = self.by_literal.get(key)
        return list(found if found is not None else self.new_literal(key, tokens))

    def new_literal(self, key: tuple, tokens: list) -> list[Alternative]:
        """`literal`'s alternatives, the first time its tokens are met (`key`: by_literal's)."""
        data = key[0]
        try:
            pattern = (lark_patterns.literal_pattern(*tokens) if data == "literal"
                       else self.range(*tokens).children[0])
        except AssertionError:  # (lark's check of a range's ends)
            raise GrammarError(f"rule {self.current}: the ends of a range must be single "
                               f"characters: {' .. '.join(map(str, tokens))}") from None
        found = self.by_literal[key] = self.alternatives(self.name_terminal(pattern))
        return found


class _LarkRules(_LarkTrees):
    """`_LarkTrees`, and a grammar's own rules read from its tokens (`read_rule`): lark's
    meta-grammar, as `lark_syntax._Reader` reads it, each part's alternatives made as it is
    read, in the order `_LarkTrees` walks the tree `_Reader` would make (terminals are named
    in that order). Raises `_NotPlain` on a form it does not expect."""

    def __init__(self, anonymous) -> None:
        super().__init__(anonymous)
        from lark import Token

        from pse.lark_syntax import ATOM_START

        self.token, self.atom_start = Token, ATOM_START
        self.kinds: list[str] = []
        self.texts: list[str] = []
        self.i = 0
        self.depth = 0  # groups open (pse.limits.MAX_GROUP_DEPTH, as lark_syntax._Reader)
        self.used: set[str] = set()  # the symbols the rules read use

    def read_rule(self, name: str, at: int) -> None:
        """Rule `name`, its expansions from token `at` to the end of the statement."""
        self.current, self.i = name, at
        alts = self.expansions()
        if self.kinds[self.i] != "_NL":
            raise _NotPlain(self.i)
        self.rules[name] = alts

    def expansions(self) -> list[Alternative]:
        out = dict.fromkeys(self.alias())
        while self.kinds[self.i] in ("_OR", "_NL_OR"):
            self.i += 1
            out.update(dict.fromkeys(self.alias()))
        return list(out)

    def alias(self) -> list[Alternative]:
        parts = []
        while self.kinds[self.i] in self.atom_start:
            parts.append(self.expr())
        alts = self.expansion(parts)
        if self.kinds[self.i] == "_TO":  # (the alias names the parse tree's node)
            if self.kinds[self.i + 1] != "RULE":
                raise _NotPlain(self.i)
            if self.depth:  # (lark's builder checks the name of an alias inside a group)
                self.used.add(self.texts[self.i + 1])
            self.i += 2
        return alts

    def expr(self) -> list[Alternative]:
        alts = self.atom()
        kind = self.kinds[self.i]
        if kind == "OP":
            op = self.texts[self.i]
            self.i += 1
            if op not in REPEATS:
                raise _NotPlain(op)
            return self.repeat(alts, *REPEATS[op])
        if kind == "TILDE":
            low = high = self.number(self.i + 1)
            self.i += 2
            if self.kinds[self.i] == "_DOTDOT":
                high = self.number(self.i + 1)
                self.i += 2
            return self.repeat(alts, low, high)
        return alts

    def number(self, i: int) -> int:
        if self.kinds[i] != "NUMBER":
            raise _NotPlain(i)
        return int(self.texts[i])

    def atom(self) -> list[Alternative]:
        kind = self.kinds[self.i]
        if kind in ("_LPAR", "_LBRA"):
            self.i += 1
            self.depth += 1
            if self.depth > limits.MAX_GROUP_DEPTH:
                raise _NotPlain("deep")  # (lark_syntax words it)
            alts = self.expansions()
            if self.kinds[self.i] != ("_RPAR" if kind == "_LPAR" else "_RBRA"):
                raise _NotPlain(self.i)
            self.i += 1
            self.depth -= 1
            return alts if kind == "_LPAR" else alts + [()]
        return self.value()

    def value(self) -> list[Alternative]:
        kind, text = self.kinds[self.i], self.texts[self.i]
        self.i += 1
        if kind == "TERMINAL" or kind == "RULE":
            self.used.add(text)
            return [(("t" if kind == "TERMINAL" else "n", text),)]
        if kind == "STRING" and self.kinds[self.i] == "_DOTDOT":
            if self.kinds[self.i + 1] != "STRING":
                raise _NotPlain(self.i)
            self.i += 2
            return self.literal_read(("range", (kind, text), (kind, self.texts[self.i - 1])))
        if kind in ("STRING", "REGEXP"):
            return self.literal_read(("literal", (kind, text)))
        raise _NotPlain(self.i)

    def literal_read(self, key: tuple) -> list[Alternative]:
        """`literal`'s alternatives by its key (lark `Token`s made only the first time)."""
        found = self.by_literal.get(key)
        if found is None:
            found = self.new_literal(key, [self.token(kind, text) for kind, text in key[1:]])
        return list(found)


