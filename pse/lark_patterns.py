"""The patterns lark's passes make of a Lark grammar's literals and terminal definitions, and
the terminals lark makes for the strings and regexes written in rules, made by pse in lark's
terms (lark's transformers, which cost more than the rest of reading the SQL grammar's
terminals, run only where lark raises, to word its error).

`tests/test_lark_syntax.py` compares each with lark's own: the patterns of the test suite's
grammars and of random ones, the names given to random strings and regexes.
"""

from __future__ import annotations

import functools


def terminal_definitions(grammar) -> list:
    """Lark's terminal definitions, each a pattern, as `Grammar.compile` makes them: read by
    `_TerminalPatterns`, or by lark's passes where that one stops (an error: lark words it)."""
    from lark.lexer import TerminalDef

    patterns = _TerminalPatterns()
    try:
        return [TerminalDef(name, patterns.of(tree), priority)
                for name, (tree, priority) in grammar.term_defs if tree is not None]
    except Exception:  # (any: lark's passes decide, on the trees as they were, and word
        return _lark_terminal_definitions(grammar)  # the error; pse's walk changes none)


def _lark_terminal_definitions(grammar) -> list:
    """`terminal_definitions` by lark's own passes (they change the trees)."""
    from lark.exceptions import GrammarError as LarkGrammarError
    from lark.lexer import TerminalDef
    from lark.load_grammar import TerminalTreeToPattern

    for name, (tree, _) in grammar.term_defs:
        if tree is not None:
            expansions = list(tree.find_data("expansion"))
            if len(expansions) == 1 and not expansions[0].children:
                raise LarkGrammarError(f"Terminals cannot be empty ({name})")
    to_pattern = literals() * TerminalTreeToPattern()
    return [TerminalDef(name, to_pattern.transform(tree), priority)
            for name, (tree, priority) in grammar.term_defs if tree is not None]


class _NotRead(Exception):
    """A terminal's tree `_TerminalPatterns` leaves to lark's passes."""


class _TerminalPatterns:
    """A terminal's tree to the pattern lark's `PrepareLiterals` and `TerminalTreeToPattern`
    make of it, in one walk (lark's transformers took a millisecond on the SQL grammar's seven
    terminals). Raises `_NotRead` where lark would raise, or on a form it does not know.
    Terminals made of terminals share subtrees: each is read once; and nest as deep as they
    are made of one another: the walk keeps a stack of its own, as lark's passes do."""

    def __init__(self) -> None:
        from lark import Tree
        from lark.lexer import PatternRE, PatternStr

        self.tree, self.re, self.str = Tree, PatternRE, PatternStr
        self.range = literals().range  # (bound once: each access makes lark's wrapper)
        self.done: dict[int, object] = {}  # id of a subtree -> its pattern

    def of(self, tree):
        expansions = [node for node in _subtrees(tree) if node.data == "expansion"]
        if len(expansions) == 1 and not expansions[0].children:
            raise _NotRead("an empty terminal")
        todo = [(tree, False)]  # (a subtree, whether its subtrees are read)
        while todo:
            node, ready = todo.pop()
            if id(node) in self.done:
                continue
            if ready:
                self.done[id(node)] = self.read(node)
                continue
            if not isinstance(node, self.tree):
                raise _NotRead(node)
            todo.append((node, True))
            if node.data not in ("literal", "range"):  # (their children are tokens)
                todo += [(child, False) for child in node.children
                         if isinstance(child, self.tree) and id(child) not in self.done]
        return self.done[id(tree)]

    def pattern(self, node):
        """The pattern of a subtree of the node being read (read before it)."""
        found = self.done.get(id(node))
        if found is None:  # (not a tree: a symbol lark's passes leave as it is)
            raise _NotRead(node)
        return found

    def read(self, node):
        data, children = node.data, node.children
        if data == "value" and len(children) == 1:
            return self.pattern(children[0])
        if data == "literal":
            (literal,) = children
            return literal_pattern(literal)
        if data == "range":
            return self.range(*children).children[0]
        if data == "expansion":
            items = [self.pattern(child) for child in children]
            if len(items) <= 1:
                return items[0] if items else self.str("")
            return self.re("".join(item.to_regexp() for item in items), ())
        if data == "expansions":
            alts = [self.pattern(child) for child in children]
            if len(alts) == 1:
                return alts[0]
            # (lark's order: the longest first, which Python's re needs and pse does not)
            alts.sort(key=_longest_first)
            return self.re(f"(?:{'|'.join(alt.to_regexp() for alt in alts)})", ())
        if data == "maybe" and len(children) == 1:
            inner = self.pattern(children[0])
            return self.re(f"(?:{inner.to_regexp()})?", inner.flags)
        if data == "expr" and len(children) >= 2:
            inner, op = self.pattern(children[0]), children[1]
            if op == "~":
                if len(children) not in (3, 4):
                    raise _NotRead(node)
                low, high = int(children[2]), int(children[-1])
                if high < low:
                    raise _NotRead("a bad range")  # (lark words it)
                op = f"{{{low}}}" if len(children) == 3 else f"{{{low},{high}}}"
            elif len(children) != 2:
                raise _NotRead(node)
            return self.re(f"(?:{inner.to_regexp()}){op}", inner.flags)
        raise _NotRead(node)  # (an alias, or a tree lark's passes leave as it is)


def _longest_first(pattern) -> tuple:
    """Lark's order of a terminal's alternatives: the longest (widest) first."""
    if pattern.type == "str":
        return (-len(pattern.value), -len(pattern.value), -len(pattern.value))
    low, high = _regexp_width(pattern.to_regexp())
    return (-high, -low, -len(pattern.value))


@functools.lru_cache(maxsize=4096)
def _regexp_width(regexp: str) -> tuple[int, int]:
    """The shortest and longest text `regexp` matches (as lark measures them: parsing it each
    time took a tenth of reading the SQL grammar's terminals)."""
    from lark.utils import get_regexp_width

    return tuple(get_regexp_width(regexp))


def _subtrees(tree) -> list:
    """The subtrees of `tree`, each once (lark's `iter_subtrees`, without its order)."""
    from lark import Tree

    seen, todo = {id(tree): tree}, [tree]
    while todo:
        for child in todo.pop().children:
            if isinstance(child, Tree) and id(child) not in seen:
                seen[id(child)] = child
                todo.append(child)
    return list(seen.values())


@functools.cache
def anonymous_class() -> type:
    """Lark's PrepareAnonTerminals, faster (see AnonymousTerminals): made when first asked
    for, as lark is imported only where a Lark grammar is read."""
    from lark.grammar import Terminal
    from lark.lexer import PatternStr, TerminalDef
    from lark.load_grammar import _TERMINAL_NAMES, PrepareAnonTerminals, inline_args

    class AnonymousTerminals(PrepareAnonTerminals):
        """Lark's PrepareAnonTerminals: a terminal for each string or regex written in a rule,
        named as lark names it, its patterns looked up by (type, text, flags) where lark hashes
        its Pattern objects in Python (lark's naming was a third of reading the SQL grammar's
        rules). `terminal_for` is lark's `pattern` for pse's walk of the rules (`_LarkTrees`),
        which calls it without lark's wrapper (a name no tree of lark's meta-grammar has: lark's
        transformers call a method by the name of the tree they meet)."""

        def __init__(self, terminals: list) -> None:
            super().__init__(terminals)
            # (in place of lark's `term_reverse`, which only lark's `pattern` reads)
            self.by_key = {_pattern_key(t.pattern): t for t in terminals}

        def terminal_for(self, p):
            """The terminal (a `Terminal` symbol) of the pattern `p` of a string or regex."""
            key = _pattern_key(p)
            known = self.by_key.get(key)
            name = None
            if isinstance(p, PatternStr):
                if known is not None:  # (one the grammar defines)
                    name = known.name
                else:
                    name = _TERMINAL_NAMES.get(p.value)
                    if name is None and is_name(p.value) and p.value.upper() not in self.term_set:
                        name = p.value.upper()
                    if name in self.term_set:
                        name = None
            elif known is not None:  # (a regex)
                name = known.name
            if name is None:
                name = f"__ANON_{self.i}"
                self.i += 1
            if name not in self.term_set:
                assert known is None  # (as lark's)
                self.term_set.add(name)
                definition = self.by_key[key] = TerminalDef(name, p)
                self.terminals.append(definition)
            keep = self.rule_options and self.rule_options.keep_all_tokens
            return Terminal(name, filter_out=False if keep else isinstance(p, PatternStr))

        pattern = inline_args(terminal_for)  # (lark's transformers call it so)

    return AnonymousTerminals


def _pattern_key(pattern) -> tuple:
    """What makes lark's patterns equal (`Pattern.__eq__`)."""
    return type(pattern), pattern.value, pattern.flags


def is_name(text: str) -> bool:
    """Lark's test of a string that names its own terminal (`"select"`: SELECT): a Python
    identifier's letters (lark's `is_id_continue` and `is_id_start`, decided here without
    them for ASCII)."""
    if not text:
        return False
    if text.isascii():
        return (text[0].isalpha() or text[0] == "_") and text.replace("_", "a").isalnum()
    from lark.utils import is_id_continue, is_id_start

    return is_id_continue(text) and is_id_start(text[0])


def literals():
    """Lark's PrepareLiterals (a literal's tree to its pattern's), reading a plain literal
    itself (see `plain_pattern`)."""
    return _literals_class()()


@functools.cache
def _literals_class() -> type:
    from lark import v_args
    from lark.load_grammar import ST, PrepareLiterals

    @v_args(inline=True)
    class Literals(PrepareLiterals):
        def literal(self, literal):
            return ST("pattern", [literal_pattern(literal)])

    return Literals


def literal_pattern(literal):
    """The pattern of a string or regex literal (a `Token`), as lark's `PrepareLiterals` makes
    it."""
    from lark.load_grammar import _literal_to_pattern

    return plain_pattern(literal) or _literal_to_pattern(literal)


def plain_pattern(literal):
    """The pattern lark makes of a string or regex literal (a `Token`), where its text is
    printable (no control character: `literal_eval` reads a carriage return as a newline and
    refuses a NUL; no lone surrogate) and holds no backslash or quote, and its flags are
    lark's: the text itself (most literals, keywords and punctuation, are such). Lark reads
    every literal through `literal_eval`, much of a grammar's reading (docs/performance.md);
    None where it is not plain (lark reads it)."""
    from lark.lexer import PatternRE, PatternStr

    text = literal.value
    flags_at = max(text.rfind("/"), text.rfind('"')) + 1
    body, flags = text[1:flags_at - 1], text[flags_at:]
    if literal.type not in ("STRING", "REGEXP") or flags_at < 2 or not body \
            or text[0] != text[flags_at - 1] or text[0] != ('"' if literal.type == "STRING"
                                                           else "/") \
            or not body.isprintable() or "\\" in body or "'" in body \
            or any(f not in "imslux" for f in flags):
        return None
    return (PatternStr if literal.type == "STRING" else PatternRE)(body, flags, raw=text)
