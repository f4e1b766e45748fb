"""`Grammar`: a grammar in Lark's EBNF syntax (or GBNF, `Grammar.from_gbnf`), compiled to state
machines.

The grammar is read into BNF rules and terminal definitions (`pse.lark_reader`: lark reads the
text, its imports and templates, and pse rewrites the EBNF; `pse.gbnf` for GBNF, without lark);
from there the compilation is ours: terminals become byte DFAs (`pse.lark_terminals`), rules
are rewritten without left recursion (`pse.cfg`), and each rule becomes a machine whose
alternatives share their common prefixes. The language is the one lark's Earley parser accepts
with `lexer="dynamic_complete"` (scannerless): `%ignore`d text may come before, between and
after terminals, never inside one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Iterable

from pse import automaton, compile_cache, limits
from pse.cfg import Alternative, Symbol, cycles, post_order, rewrite
from pse.errors import GrammarError
from pse.bnf import BnfGrammar
from pse.lark_reader import read_lark
from pse.lark_terminals import (
    counted_followed_by_ignored, counted_terminal_dfa, followed_by_ignored, literal_dfa,
    terminal_dfa)
from pse.machines import (
    Chain, CountedTerminal, DfaTerminal, Forward, Loop, Optional, SpecialToken, StateMachine,
)


class Grammar(StateMachine):
    """The texts a Lark grammar derives from its start rule.

    Args:
        text: the grammar, in Lark's syntax.
        start: the start rule.
        import_paths: folders searched by `%import` (lark's own `common` is always there):
            one folder (a str or path) or several.
        source_path: the file the grammar came from (relative `%import .x` are resolved
            beside it; named in errors).

    Special tokens are written as llguidance writes them: `<|python_tag|>` (any `<...>` outside
    strings and regexes: a token by its text) or `<[128010]>` (by id); see `SpecialToken`.

    With the compile cache on (`pse.set_cache_dir`), a grammar compiled before (same text,
    start rule, paths, imported files and pse) is loaded, not compiled; its machine tree is
    built only if something asks for it (`state_graph`).

    Raises:
        TypeError: `text` or `start` is not a str, a folder or `source_path` not a str or path.
        GrammarError: lark cannot read the grammar, a construct cannot be compiled (a
            lookaround in a terminal, a `%declare`d terminal with no pattern, a terminal that
            matches no text), or the start rule derives nothing; the message names the rule
            or terminal, and the line of a terminal or of a syntax error.
    """

    def __init__(self, text: str, start: str = "start",
                 import_paths: str | os.PathLike | Iterable[str | os.PathLike] = (),
                 source_path: str | os.PathLike | None = None) -> None:
        if not isinstance(text, str):
            raise TypeError(f"the grammar text must be a str, got {type(text).__name__}")
        if not isinstance(start, str):
            raise TypeError(f"start must be a str (one rule name), got {type(start).__name__}")
        if isinstance(import_paths, (str, os.PathLike)):  # (one folder, not its characters)
            import_paths = [import_paths]
        self.import_paths = [_path(p, "import_paths: a folder") for p in import_paths]
        self.text, self.start = text, start
        self.source_path = None if source_path is None else _path(source_path, "source_path")
        self.gbnf: str | None = None  # (see from_gbnf)
        self._setup()

    def _setup(self) -> None:
        """The compiled structure from the compile cache, else the machine tree."""
        super().__init__(None, start_state=0, end_states=("$",))
        self._graph: dict | None = None
        self._files: tuple = ()
        found = compile_cache.lookup(self)
        if found is not None:  # compiled before: the machine tree waits until asked for
            self._compiled, extra = found
            self._files = tuple(map(tuple, extra["files"]))
        else:
            self._build()

    def _build(self) -> None:
        """The machine tree: the grammar read and its rules made machines."""
        if self.gbnf is None:
            source_path = self.source_path
            # one compile budget (and no garbage collection) from the text to the machines
            with limits.compile_budget(f"the grammar {source_path or ''}".rstrip()):
                lark_text, specials = _special_tokens(self.text, source_path or "grammar")
                parser = read_lark(lark_text, self.start, list(self.import_paths), source_path)
                root = _Builder(parser, self.text, source_path, specials).build(self.start)
        else:
            from pse.gbnf import ROOT, to_bnf

            with limits.compile_budget("the GBNF grammar"):  # (as for Lark)
                parser, specials = to_bnf(self.gbnf)
                root = _Builder(parser, self.gbnf, "GBNF", specials, marked=False).build(ROOT)
        self._files = parser.files
        self._graph = {0: [(root, "$")]}

    @property
    def state_graph(self) -> dict:
        """The machine tree's top (see StateMachine); built on first use when the compile
        cache gave the compiled structure."""
        if self._graph is None:
            self._build()
        return self._graph

    @state_graph.setter
    def state_graph(self, graph: dict) -> None:
        self._graph = graph

    def cache_key(self) -> str | None:
        """The GBNF text, or the Lark text with its start rule, source path, import paths and
        lark's version; None for a subclass."""
        if type(self) is not Grammar:
            return None
        if self.gbnf is not None:
            from pse import gbnf

            if not isinstance(self.gbnf, str):
                return None
            return json.dumps(["Grammar", "gbnf", gbnf.MAX_RULE_REGEX, gbnf.MAX_RULE_NESTING,
                               self.gbnf])
        source = None if self.source_path is None else str(self.source_path)
        return json.dumps(["Grammar", "lark", _lark_version(), self.start, source,
                           self.import_paths, self.text])

    def _cache_extra(self) -> dict:
        return {"files": [list(f) for f in self._files]}

    def _cache_valid(self, extra: dict) -> bool:
        """Whether each file the grammar's `%import`s read is still the same (a file that
        would now be found before it is not noticed)."""
        files = extra.get("files")
        if not (isinstance(files, list) and all(
                isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)
                for f in files)):
            raise ValueError("its imported files are malformed")
        for path, digest in files:
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                return False
            if hashlib.sha256(text.encode("utf-8")).hexdigest() != digest:
                return False
        return True

    @classmethod
    def from_lark(cls, text: str, start: str = "start") -> Grammar:
        """A grammar from Lark text (`%import` finds lark's `common` grammar).

        Args:
            text: the grammar.
            start: the start rule.

        Raises:
            GrammarError: see `Grammar`.
        """
        return cls(text, start=start)

    @classmethod
    def from_gbnf(cls, text: str) -> Grammar:
        """A grammar from GBNF text, llama.cpp's format (`root` is the start; see `pse.gbnf`).
        The GBNF text is kept as `grammar.gbnf`; `grammar.text` is the same grammar in Lark's
        syntax (made on first use).

        Args:
            text: the grammar.

        Raises:
            GrammarError: see `pse.gbnf.to_bnf` (syntax errors name the line and column) and
                `Grammar` (the messages name the GBNF rules).
        """
        from pse.gbnf import ROOT

        grammar = cls.__new__(cls)
        grammar.gbnf, grammar.start, grammar.source_path = text, ROOT, None
        grammar._text = None
        grammar.import_paths = []
        grammar._setup()
        return grammar

    @property
    def text(self) -> str:
        """The grammar in Lark's syntax (for a GBNF grammar: what it is in Lark's)."""
        if self._text is None:
            from pse.gbnf import to_lark

            self._text = to_lark(self.gbnf).text
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text = value

    @classmethod
    def from_file(cls, path: str | os.PathLike, start: str = "start") -> Grammar:
        """A grammar from a file: GBNF where its name ends with `.gbnf` (see `from_gbnf`),
        else Lark (its `%import`s are also looked up in its folder).

        Args:
            path: the file.
            start: the start rule (a GBNF grammar's is `root`).

        Raises:
            OSError: the file cannot be read.
            ValueError: a `start` other than the default for a GBNF file.
            GrammarError: see `Grammar` and `from_gbnf`.
        """
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".gbnf":
            if start != "start":
                raise ValueError(f"{path}: a GBNF grammar starts at its rule root, not "
                                 f"{start!r} (start is for Lark grammars)")
            return cls.from_gbnf(text)
        return cls(text, start=start, import_paths=[str(path.parent)], source_path=str(path))

    def __repr__(self) -> str:
        where = f", source_path={self.source_path!r}" if self.source_path else ""
        return f"Grammar(start={self.start!r}{where})"


def _path(value, what: str) -> str:
    """`value` (a str or path) as a str; TypeError naming `what` for anything else."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} must be a str or a path, got {type(value).__name__}")
    return os.fsdecode(value)


@functools.lru_cache(maxsize=1)
def _lark_version() -> str:
    """lark's version (it reads Lark grammars and holds the `common` they import), without
    importing lark."""
    from importlib import metadata

    try:
        return metadata.version("lark")
    except metadata.PackageNotFoundError:
        return "?"


class _Builder:
    """Lark's rules and terminals -> machines."""

    def __init__(self, parser: BnfGrammar, text: str, source_path: str | None,
                 specials: dict[str, int | str], marked: bool = True) -> None:
        self.text, self.source = text, source_path or "grammar"
        self.specials = specials
        # a terminal pattern holding SPECIAL_MARK is a special token written inside a terminal
        # (only where the text went through _special_tokens: GBNF's tokens are not marked)
        self.marked = marked
        self.rules: dict[str, list[Alternative]] = parser.rules
        self.defs = {str(t.name): t for t in parser.terminals}
        self.regexes: dict[str, str] = {}  # terminal name -> its regex (see regex_of)
        self.ignore_names = [str(name) for name in parser.ignore_tokens]  # (see `where`)
        ignored = [self.terminal_dfa(name) for name in self.ignore_names]
        self.ignored = ignored
        self.ignore_key = tuple(sorted(self.regex_of(str(n)) for n in parser.ignore_tokens))
        self.terminals: dict[str, StateMachine] = {}
        self.machines: dict[str, StateMachine] = {}
        self.loops: dict[str, StateMachine] = {}

    # -- terminals ----------------------------------------------------------------------------
    def regex_of(self, name: str) -> str:
        """The regex of terminal `name` (made once: lark's `to_regexp` is Python)."""
        regex = self.regexes.get(name)
        if regex is None:
            regex = self.regexes[name] = self.new_regex(name)
        return regex

    def new_regex(self, name: str) -> str:
        definition = self.defs.get(name)
        if definition is None:
            raise GrammarError(f"{self.source}: terminal {name} ({self.where(name)}) has no "
                               "pattern (declared with %declare?): it cannot be matched")
        regex = definition.pattern.to_regexp()
        if self.marked and SPECIAL_MARK[1:] in regex and name not in self.specials:
            raise GrammarError(f"{self.source}: terminal {name} ({self.where(name)}) holds a "
                               "special token: a special token is no text, write it in a rule")
        return regex

    def terminal_dfa(self, name: str) -> automaton.DFA:
        try:
            regex, pattern = self.regex_of(name), self.defs[name].pattern
            # (a string, lark's PatternStr: its automaton made directly)
            if pattern.type == "str" and pattern.value and set(pattern.flags) <= {"i"}:
                return literal_dfa(pattern.value, "i" in pattern.flags)
            return terminal_dfa(regex)
        except GrammarError as e:
            raise self.terminal_error(name, e) from None

    def terminal_error(self, name: str, error: GrammarError) -> GrammarError:
        """`error` naming the terminal `name` and where it is (as it is where regex_of named
        it)."""
        if str(error).startswith(self.source):
            return error
        return GrammarError(f"{self.source}: terminal {name} ({self.where(name)}): {error}")

    def terminal(self, name: str) -> StateMachine:
        if name in self.specials:
            if name not in self.machines:
                token: StateMachine = SpecialToken(self.specials[name])
                if self.ignored:  # %ignore'd text may follow it, as it follows terminals
                    token = Chain(token, self.ignored_text())
                self.machines[name] = token
            return self.machines[name]
        if name not in self.terminals:
            counted = self.counted_terminal(name)
            if counted is not None:
                self.terminals[name] = counted
                return counted
            dfa = self.terminal_dfa(name)
            if not any(dfa.accept):  # (lark takes it, and the rules using it match nothing)
                raise self.terminal_error(name, GrammarError(
                    f"regex {self.regex_of(name)!r} matches no text"))
            if self.ignored:
                dfa = followed_by_ignored(dfa, self.ignored)
            key = ("lark", self.regex_of(name), self.ignore_key)
            self.terminals[name] = DfaTerminal(dfa, name, key)
        return self.terminals[name]

    def ignored_text(self) -> DfaTerminal:
        """Any run of %ignore'd texts, the empty one too."""
        return DfaTerminal(followed_by_ignored(None, self.ignored), "ignored",
                           ("lark-ignored", self.ignore_key))

    def counted_terminal(self, name: str) -> StateMachine | None:
        """The terminal `name` with its long repeat counted at run time (see
        lark_terminals.counted_terminal_dfa), or None where terminal_dfa is to make it.
        %ignore'd text follows it in its automaton, where it can be appended so; where it
        cannot (`/[a-z ]{1,20000}/` with `%ignore " "`: a state could stand for an iteration
        and for ignored text, and the count would depend on the path), as a machine of its
        own after it, also where the terminal would fit unrolled. Kept apart, a run of text both could
        read is read both ways: each place where the terminal may start after ignored text
        is a count of its own, a live state until it passes the repeat's least (past it,
        the core keeps the smallest count alone: a few live states for 1,000 blanks)."""
        definition = self.defs.get(name)
        if definition is None or definition.pattern.type == "str":
            return None  # (terminal_dfa: a %declare'd name's error, a string's automaton)
        try:
            found = counted_terminal_dfa(self.regex_of(name))
        except GrammarError as e:
            raise self.terminal_error(name, e) from None
        if found is None:
            return None
        dfa, counted, fewest, most = found
        apart = False
        if self.ignored:
            followed = counted_followed_by_ignored(dfa, counted, self.ignored)
            if followed is None:
                apart = True
            else:
                dfa, counted = followed
        try:
            terminal = CountedTerminal(dfa, counted, fewest, most, name)
        except GrammarError:  # counts the run-time check cannot tabulate: unrolled
            return None
        if not terminal.matches_some_length():
            return None
        return Chain(terminal, self.ignored_text()) if apart else terminal

    def where(self, name: str) -> str:
        """'line N' of the definition of `name`, or of the rules that use it, or of the
        `%ignore` that names it or writes it out (lark names the latter `__IGNORE_<k>`)."""
        line = _definition_line(self.text, name)
        if line is not None:
            return f"line {line}"
        users = sorted({rule for rule, alts in self.rules.items()
                        for alt in alts if ("t", name) in alt or ("n", name) in alt})
        parts = []
        for rule in users:
            rule_line = _definition_line(self.text, rule)
            parts.append(f"rule {rule}" + (f" at line {rule_line}" if rule_line else ""))
        if parts:
            return "used in " + ", ".join(parts)
        if name in self.ignore_names:
            # (the k-th %ignore of the text, as lark counts them, where it was written here)
            lines = [k + 1 for k, text in enumerate(self.text.splitlines())
                     if text.lstrip().startswith("%ignore")]
            k = self.ignore_names.index(name)
            return f"%ignore at line {lines[k]}" if k < len(lines) else "%ignore"
        return "imported"

    # -- rules --------------------------------------------------------------------------------
    def build(self, start: str) -> StateMachine:
        try:
            grammar = rewrite(self.rules, start)
        except GrammarError as e:  # (of its kind: MatchesNothing stays one)
            raise type(e)(f"{self.source}: {e}") from None
        self.alts, self.tails = grammar.alternatives, grammar.tails
        refs = {name: sorted({s for alt in self.alts[name] + self.tails[name]
                              for kind, s in alt if kind != "t"}) for name in self.alts}
        self.recursive = {name for comp in cycles(refs) for name in comp}
        # each rule built after the rules it uses, a recursive one as a Forward whose body is
        # set once every rule exists: no Python recursion follows a chain of rules. A rule
        # that would nest more than MAX_INLINED_RULES rules inside it (`x ~ 1..5000` is a
        # chain of 5,000) is called rather than inlined: the compiler refuses machines
        # nested past its MAX_DEPTH
        self.bodies_pending: list[str] = []
        self.called: set[str] = set()
        nesting: dict[str, int] = {}
        for name in post_order(refs, start):
            inside = [nesting.get(r, 0) for r in refs[name] if r not in self.recursive]
            nesting[name] = 1 + max(inside, default=0)
            if nesting[name] > MAX_INLINED_RULES and name not in self.recursive:
                self.called.add(name)
                nesting[name] = 0
            self.nonterminal(name)
        for name in self.bodies_pending:
            self.machines[name].set(self.labeled(name, self.rule_body(name)))
        graph: dict = {}
        here: object = 0
        if self.ignored:
            graph[0] = [(self.ignored_text(), 1)]
            here = 1
        ends = [here] if grammar.start_nullable else []
        if start in self.alts:
            graph.setdefault(here, []).append((self.nonterminal(start), "$"))
            ends.append("$")
        return StateMachine(graph, start_state=0, end_states=ends)

    def nonterminal(self, name: str) -> StateMachine:
        if name in self.machines:
            return self.machines[name]
        if name in self.recursive:  # (its body: see build)
            self.bodies_pending.append(name)
            forward = self.machines[name] = Forward(name=f"rule {name}")
            return forward
        machine = self.labeled(name, self.rule_body(name))
        if name in self.called:
            machine = Forward(name=f"rule {name}").set(machine)
        self.machines[name] = machine
        return machine

    @staticmethod
    def labeled(name: str, body: StateMachine) -> StateMachine:
        """The body of rule `name` (a new machine), labeled for explanations; not the rules
        a grammar's repetitions and groups were rewritten into (`__...`)."""
        if not name.startswith("__"):
            body.label = f"rule {name}"
        return body

    def rule_body(self, name: str) -> StateMachine:
        body = self.alternatives(self.alts[name])
        if self.tails[name]:
            return Chain(body, self.tail_loop(name))
        return body

    def tail_loop(self, name: str) -> StateMachine:
        if name not in self.loops:
            self.loops[name] = Loop(self.alternatives(self.tails[name]))
        return self.loops[name]

    def alternatives(self, alts: list[Alternative]) -> StateMachine:
        """One machine for all alternatives, common prefixes shared (a trie of symbols)."""
        graph: dict[int, list] = {}
        child: dict[tuple[int, Symbol], int] = {}
        ends = []
        for alt in alts:
            state = 0
            for sym in alt:
                nxt = child.get((state, sym))
                if nxt is None:
                    nxt = child[(state, sym)] = len(child) + 1
                    graph.setdefault(state, []).append((self.symbol(sym), nxt))
                state = nxt
            ends.append(state)
        return StateMachine(graph, start_state=0, end_states=sorted(set(ends)))

    def symbol(self, sym: Symbol) -> StateMachine:
        kind, name = sym
        if kind == "t":
            return self.terminal(name)
        if kind == "n":
            return self.nonterminal(name)
        if kind == "o":
            return Optional(self.nonterminal(name))
        return self.tail_loop(name)


# Rules nested inside one another (each inlined into the one using it) before the next is
# called instead: the compiler's MAX_DEPTH (400 machines) holds about three machines per rule
MAX_INLINED_RULES = 64

SPECIAL_PREFIX = "PSE_SPECIAL_TOKEN_"
# the text lark is given for a special token's terminal: only a terminal that holds one has it
SPECIAL_MARK = "\x00PSESPECIALTOKEN"
# the text up to the next special token: anything but a string, a regex or a comment, or one
# of them (a string or regex up to its closing quote or slash, or else its line's end; a
# regex's flags are letters, passed over as text)
_BEFORE_SPECIAL = re.compile(
    r'(?:[^"/<]+|//[^\n]*|"(?:[^"\\\n]|\\[\s\S]?)*"?|/(?:[^/\\\n]|\\[\s\S]?)*/?)*')


def _special_tokens(text: str, source: str) -> tuple[str, dict[str, int | str]]:
    """The grammar with each special token (`<|python_tag|>`, `<[128010]>`: a `<...>` outside
    strings, regexes and comments) replaced by a terminal of its own, defined at the end (so
    lines keep their numbers), and {terminal name: the token, its text or its id}."""
    if "<" not in text:  # (most grammars: nothing to replace)
        return text, {}
    out: list[str] = []
    specials: dict[str, int | str] = {}
    names: dict[int | str, str] = {}
    i, n = 0, len(text)
    while True:
        j = _BEFORE_SPECIAL.match(text, i).end()  # (the text before is copied as it is)
        if j >= n:
            out.append(text[i:])
            break
        out.append(text[i:j])
        end = text.find(">", j)
        body = text[j:end + 1] if end >= 0 else ""
        if end < 0 or len(body) < 3 or any(c.isspace() for c in body):
            line = text.count("\n", 0, j) + 1
            raise GrammarError(f"{source}: line {line}: a special token is written "
                               f"<|name|> or <[id]>, got {text[j:j + 20]!r}")
        ident = re.fullmatch(r"<\[(\d+)\]>", body)
        token: int | str = int(ident.group(1)) if ident else body
        if token not in names:
            names[token] = f"{SPECIAL_PREFIX}{len(names)}"
            specials[names[token]] = token
        out.append(f" {names[token]} ")
        i = end + 1
    # (lark needs a pattern for each; the builder puts the special token in its place)
    out += [f"\n{name}: {json.dumps(SPECIAL_MARK + name)}" for name in specials]
    return "".join(out), specials


def _definition_line(text: str, name: str) -> int | None:
    """The line where rule or terminal `name` is defined in `text` (1-based)."""
    found = re.search(rf"^[ \t]*[?!]?{re.escape(name)}\b[ \t]*(\{{[^}}]*\}}[ \t]*)?"
                      rf"(\.-?\d+)?[ \t]*:", text, re.MULTILINE)
    if found is None:
        return None
    return text.count("\n", 0, found.start()) + 1
