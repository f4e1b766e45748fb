"""Lark's `GrammarBuilder` fed by pse's reader of Lark's syntax.

A grammar's statements, and those of the grammars it `%import`s, are read by `pse.lark_syntax`
(by lark's own reader where that one leaves the text: a syntax error, which lark words) and given
to lark's builder as lark's `load_grammar` gives them, in about half the time of lark's reader
(see docs/performance.md). Terminals written with terminals are put in place in time linear in
their definitions (`resolve_terminals`).
"""

from __future__ import annotations

import errno
import os

from lark import Tree
from lark.exceptions import GrammarError as LarkGrammarError
from lark.exceptions import UnexpectedToken
from lark.grammar import NonTerminal, Symbol, Terminal
from lark.load_grammar import (
    EXT,
    GrammarBuilder,
    _get_mangle,
    _get_parser,
    _parse_grammar,
    sha256_digest,
    stdlib_loader,
)

from pse import lark_syntax, limits
from pse.errors import GrammarError


def load(text: str, source: str, import_paths: list[str], tree=None) -> tuple:
    """Lark's `Grammar` of `text` and the files it imported ({path: SHA-256 of the text}), as
    lark's `load_grammar` makes them (`tree`: its statements, if `pse.lark_syntax` read them).

    Raises:
        lark.exceptions.LarkError: lark's builder refuses the grammar.
        RecursionError: it nests deeper than MAX_GROUP_DEPTH.
        OSError: an `%import`ed file cannot be read.
        GrammarError: a terminal past MAX_TERMINAL_PARTS.
    """
    builder = _Builder(False, import_paths)
    builder.load_grammar(text, source, tree=tree)
    return builder.build(), builder.used_files


def _parse_lark(text: str, name: str) -> Tree:
    """Lark's tree of the statements of `text`, read by lark's reader.

    Raises:
        lark.exceptions.LarkError: a syntax error, as lark words it (or, where lark 1.3 fails
            to word it, with the line, the column and the token).
    """
    try:
        return _parse_grammar(text, name)
    except TypeError:  # (lark 1.3's match_examples formats a parser state with %d on some
        try:           # texts that end a statement early: the error read again, unworded)
            _get_parser().parse(text + "\n", "start")
        except UnexpectedToken as e:
            raise LarkGrammarError(f"Unexpected token {e.token!r} at line {e.line} column "
                                   f"{e.column} in {name}\n\n{e.get_context(text)}") from None
        raise


class _Builder(GrammarBuilder):
    """Lark's builder, its statements read by `pse.lark_syntax`: `load_grammar` and
    `do_import` are lark's steps in pse's words (the rest is lark's own)."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        # terminals' trees put in place, here or in the grammars imported: id -> (the tree,
        # how deep its terminals nest, its parts; see resolve_terminals)
        self.resolved: dict[int, tuple] = {}

    def load_grammar(self, grammar_text: str, grammar_name: str = "<?>",
                     mangle=None, tree=None) -> None:
        """The definitions of `grammar_text` (its imports first; `tree`: its statements, if
        read before), names passed through `mangle` when it is imported."""
        if tree is None:
            try:
                tree = lark_syntax.parse(grammar_text)
            except lark_syntax.Unread:
                tree = _parse_lark(grammar_text, grammar_name)
        imports: dict[tuple, tuple] = {}  # dotted path -> (base path, {name: alias})
        for stmt in tree.children:
            if stmt.data == "import":
                path, base, aliases = self._unpack_import(stmt, grammar_name)
                base_before, names = imports.setdefault(path, (base, {}))
                if base_before != base:
                    raise LarkGrammarError(f"%import of {'.'.join(path)} both from lark's "
                                           "grammars and from beside the grammar")
                names.update(aliases)
        for path, (base, aliases) in imports.items():
            self.do_import(path, base, aliases, mangle)
        for stmt in tree.children:
            if stmt.data in ("term", "rule"):
                self._define(*self._unpack_definition(stmt, mangle))
            elif stmt.data == "override":
                self._define(*self._unpack_definition(stmt.children[0], mangle), override=True)
            elif stmt.data == "extend":
                self._extend(*self._unpack_definition(stmt.children[0], mangle))
            elif stmt.data == "ignore":
                if mangle is None:  # (an imported grammar's %ignore is its own)
                    self._ignore(*stmt.children)
            elif stmt.data == "declare":
                for symbol in stmt.children:
                    name = symbol.name if mangle is None else mangle(symbol.name)
                    self._define(name, isinstance(symbol, Terminal), None)
        resolve_terminals({name: d.tree for name, d in self._definitions.items() if d.is_term},
                          self.resolved)

    def validate(self) -> None:
        """Lark's checks before `build`, each definition's tree walked once: where they may
        fail (a template, a symbol used but not defined, an `%ignore` of nothing), lark's own
        `validate` runs and raises its error. Lark's walks each tree twice over lists of its
        subtrees (for template uses, then for the symbols used): a sixth of reading the
        bundled SQL grammar."""
        defined = self._definitions
        if any(d.params for d in defined.values()) or not set(defined).issuperset(
                self._ignore_names) or not all(
                _uses_defined(d.tree, defined) for d in defined.values() if d.tree is not None):
            super().validate()

    def do_import(self, dotted_path: tuple, base_path, aliases: dict, base_mangle=None) -> None:
        """The definitions `aliases` names in the grammar file at `dotted_path` (under their
        aliases), and those they use (under names prefixed with the path), found in the
        import paths, then beside the grammar (`base_path`), then among lark's grammars."""
        mangle = _get_mangle("__".join(dotted_path), aliases, base_mangle)
        file = os.path.join(*dotted_path) + EXT
        places = [*self.import_paths, *([base_path] if base_path is not None else []),
                  stdlib_loader]
        for place in places:
            try:
                if callable(place):  # (lark's grammars, a package's resources)
                    path, text = place(base_path, file)
                else:
                    path = os.path.join(place, file)
                    with open(path, encoding="utf8") as f:
                        text = f.read()
            except OSError:
                continue
            except UnicodeDecodeError as e:
                raise GrammarError(f"%import {'.'.join(dotted_path)}: {path} is not UTF-8 "
                                   f"text ({e.reason} at byte {e.start})") from None
            digest = sha256_digest(text)
            if self.used_files.setdefault(path, digest) != digest:
                raise LarkGrammarError(f"the grammar file {path} changed while it was read")
            imported = _Builder(self.global_keep_all_tokens, self.import_paths,
                                self.used_files)
            imported.load_grammar(text, path, mangle)
            self.resolved.update(imported.resolved)
            imported._remove_unused(map(mangle, aliases))
            for name in imported._definitions:
                if name in self._definitions:
                    raise LarkGrammarError(f"Cannot import '{name}' from '{file}': Symbol "
                                           "already defined.")
            self._definitions.update(imported._definitions)
            return
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), file)


# A terminal made of terminals, each in place of its name (again and again), holds at most this
# many parts: lark's passes over it take time in that size, and 20 terminals each made of the
# next twice are a million parts.
MAX_TERMINAL_PARTS = 100_000


def resolve_terminals(term_trees: dict, resolved: dict[int, tuple]) -> None:
    """Put each terminal named in a terminal's definition in place of its name, the trees
    shared, as lark's `resolve_term_references` does, in time linear in the definitions:
    lark's goes over every tree again until nothing changes (a chain of 20,000 terminals took
    11 minutes, 30 terminals each made of the next twice would take years). `resolved` holds
    the trees put in place before (by id: the tree, how deep terminals nest in it, its parts
    spelled out; an imported grammar's), which are counted, not walked again (their size
    spelled out is what is bounded), and gains those put in place here.

    Raises:
        lark.exceptions.GrammarError: a terminal is made of itself (lark's message), of a rule,
            or of a `%declare`d terminal (which has no pattern).
        RecursionError: terminals made of terminals nest more than MAX_GROUP_DEPTH deep
            (lark's later passes recurse per level).
        GrammarError: a terminal made of terminals holds more than MAX_TERMINAL_PARTS parts
            with them in place of their names.
    """
    places: dict[str, list] = {}  # name -> (its `value` nodes naming a terminal, the name)
    parts: dict[str, int] = {}  # name -> its definition's nodes, then spelled out
    below: dict[str, int] = {}  # name -> the depth of the trees in place in it before
    for name, tree in term_trees.items():
        if tree is not None:  # (else %declare'd)
            places[name], parts[name], below[name] = _walk(name, tree, term_trees, resolved)
    bound = limits.MAX_GROUP_DEPTH
    depth: dict[str, int] = {}  # (1: made of no terminal)
    for root, first in places.items():  # each definition's terminals before it, depth first
        path, todo = [root], [iter(first)]  # (iterative: a chain may be long before refused)
        on_path = {root}
        while path and root not in depth:
            step = next(todo[-1], None)
            if step is not None:
                if step[1] in on_path:
                    raise LarkGrammarError(f"Recursion in terminal '{step[1]}' (recursion is "
                                           "only allowed in rules, not terminals)")
                if step[1] not in depth:
                    path.append(step[1])
                    on_path.add(step[1])
                    todo.append(iter(places[step[1]]))
                continue
            name = path.pop()
            on_path.discard(name)
            todo.pop()
            used = [used for _, used in places[name]]
            depth[name] = 1 + max(below[name], max(map(depth.__getitem__, used), default=0))
            parts[name] += sum(map(parts.__getitem__, used))
            if depth[name] > bound:
                raise RecursionError(f"terminal {name} is made of terminals nested more than "
                                     f"{bound} deep")
            if depth[name] > 1 and parts[name] > MAX_TERMINAL_PARTS:
                raise GrammarError(f"terminal {name}: with the terminals it is made of in place "
                                   f"of their names, more than {MAX_TERMINAL_PARTS:,} parts "
                                   "(pse.lark_builder.MAX_TERMINAL_PARTS): make the parts used "
                                   "many times rules")
    for name, found in places.items():
        for node, used in found:
            node.children[0] = term_trees[used]
        resolved[id(term_trees[name])] = (term_trees[name], depth[name], parts[name])


def _uses_defined(tree, defined: dict) -> bool:
    """Whether definition `tree` uses no template and, within its `expansion` nodes, only
    symbols in `defined` (what lark's `validate` checks of a definition without parameters).
    Each node once (terminals put in place share their trees), and once more where it is
    first reached outside an `expansion` and then inside one."""
    seen: set[tuple[int, bool]] = set()
    todo = [(tree, tree.data == "expansion")]
    while todo:
        node, inside = todo.pop()
        if node.data == "template_usage":
            return False
        for child in node.children:
            if isinstance(child, Tree):
                below = inside or child.data == "expansion"
                if (id(child), below) not in seen:
                    seen.add((id(child), below))
                    todo.append((child, below))
            elif inside and isinstance(child, Symbol) and child.name not in defined:
                return False
    return True


def _walk(name: str, tree, term_trees: dict, resolved: dict[int, tuple]) -> tuple:
    """Terminal `name`'s definition `tree`: its `value` nodes naming a terminal (with the
    name), its nodes (and the parts of the trees in place in it before: see
    resolve_terminals), and how deep terminals nest in those."""
    places, nodes, deepest = [], 0, 0
    todo = [tree]
    while todo:
        node = todo.pop()
        nodes += 1
        item = node.children[0] if node.data == "value" else None
        if isinstance(item, NonTerminal):
            raise LarkGrammarError(f"Rules aren't allowed inside terminals ({item} in {name})")
        if isinstance(item, Terminal):
            if item.name not in term_trees:  # (lark's words)
                raise LarkGrammarError(f"Terminal used but not defined: {item.name}")
            if term_trees[item.name] is None:
                raise LarkGrammarError(f"Terminal {name} is made of {item.name}, which is "
                                       "%declare'd: it has no pattern to match")
            places.append((node, item.name))
        elif id(item) in resolved:  # (a terminal put in place before: counted, not walked)
            _, depth, parts = resolved[id(item)]
            nodes += parts
            deepest = max(deepest, depth)
        else:
            todo += [child for child in node.children if isinstance(child, Tree)]
    return places, nodes, deepest
