"""An object's members as machines (objects.py decides which, and with what key bits): each
member's opening (its key, with the comma before it and, compact, the colon after it) guarded
by the object's registers, then its value; the members in schema order or in any order.
"""

from __future__ import annotations

import functools
from json.encoder import encode_basestring
from typing import Any, Callable

from pse import automaton
from pse.json_spelling import KeyStates, json_names_dfa
from pse.machines import Chain, DfaTerminal, StateMachine, Terminal
from pse.registers import KEY_CLOSE, KEY_OPEN, Guard, Guarded
from pse.regex import compile_regex

# An object member: its opening (the key, or a comma and the key) made for its place, first
# or not, and the rest (the value) one machine wherever the member stands.
Member = tuple[Callable[[bool], StateMachine], StateMachine]


@functools.lru_cache(maxsize=64)
def _comma_dfa(ws: int) -> automaton.DFA:
    """A comma with at most `ws` blanks on each side."""
    if not ws:
        return automaton.literal_dfa(b",")
    blank = f"[ \\t\\n\\r]{{0,{ws}}}"
    return compile_regex(f"{blank},{blank}")


@functools.lru_cache(maxsize=4096)
def _comma_then_dfa(ws: int, text: str) -> automaton.DFA:
    """`_comma_dfa(ws)` then `text` (a member's key): one per key, built without a subset
    construction (a key starts with a quote, which no comma's blank is)."""
    return automaton.then_literal(_comma_dfa(ws), text.encode())


class Members:
    """The members of one object, for a JSON Schema compiler (`phrase`, `colon`, `ws`): their
    guards count keys when the object bounds their number (`counted`: minProperties `n_min`,
    maxProperties `n_max`, with `reserve` the key bits of the keys that must still come)
    and, in any order (`any_order`), refuse a key bit already set."""

    def __init__(self, compiler: Any, any_order: bool, counted: bool, n_min: int,
                 n_max: int | None, reserve: int) -> None:
        self.compiler = compiler
        self.ws = compiler.ws
        self.any_order = any_order
        self.counted = counted
        self.n_min = n_min
        self.n_max = n_max
        self.reserve = reserve

    def guard(self, b: int, met: int = 0, item: int = 0, forbid: int = 0, least: int = 0,
              need: int = 0, clauses: tuple = ()) -> Guard | None:
        """The guard of a key that sets key bit `b` and the requirement bits `met` (None:
        nothing to check or set)."""
        if not (b or met or self.counted or item or need or clauses):
            return None
        n_max = self.n_max
        return Guard(forbid=b if self.any_order else forbid, need=need, clauses=clauses,
                     set=b | met, inc=int(self.counted), min_props=least, max_props=n_max,
                     reserve=self.reserve, cap=n_max if n_max is not None else self.n_min,
                     item=item)

    def opening(self, text: str, first: bool, guard: Guard | None) -> StateMachine:
        """The start of a member: its key (or opening quote) with the comma before it, one
        terminal, so that a guard that refuses the key refuses the comma too."""
        term = self.compiler.phrase(text) if first else self.comma_then(text)
        return term if guard is None else Guarded(term, guard)

    def spelled_key(self, name: str, first: bool, guard: Guard | None) -> StateMachine:
        """`opening` for a name JSON can spell in more than one way (a slash, a quote, a
        backslash or a control character: "\\/" or "/", "\\n" or "\\u000a"): every spelling,
        as one terminal."""
        nfa = automaton.NFA()
        parts = []
        if not first:
            parts.append(automaton.embed(nfa, _comma_dfa(self.ws)))
        parts += [automaton.literal(nfa, b'"'), automaton.embed(nfa, json_names_dfa([name])),
                  automaton.literal(nfa, b'"' if self.ws else b'":')]
        dfa = automaton.minimize(automaton.determinize(nfa, automaton.concat(nfa, parts)))
        term = DfaTerminal(dfa, f"key {name!r}")
        return term if guard is None else Guarded(term, guard)

    def comma_then(self, text: str) -> Terminal:
        """`,` then `text`, with the blanks allowed around the comma, as one terminal."""
        if not self.ws:
            return self.compiler.phrase("," + text)
        # (a key of its own: hashing the automaton's transitions costs more than this)
        return DfaTerminal(_comma_then_dfa(self.ws, text), f",{text}",
                           key=("comma then", self.ws, text))

    def named(self, name: str, m: StateMachine, guard: Guard | None) -> Member:
        """The member of key `name` with value `m`."""
        if any(ord(c) < 0x20 or c in '"\\/' for c in name):
            return (functools.partial(self.spelled_key, name, guard=guard),
                    m if not self.ws else Chain(self.compiler.colon(), m))
        text = encode_basestring(name)  # (json.dumps(name, ensure_ascii=False))
        if not self.ws:  # compact: the colon joins the key's terminal
            return functools.partial(self.opening, text + ":", guard=guard), m
        return functools.partial(self.opening, text, guard=guard), Chain(self.compiler.colon(), m)

    def other(self, keys: automaton.DFA, m: StateMachine, where: str, states: KeyStates | None,
              met: int, keep: bool, clauses: tuple) -> Member:
        """The member of the keys not listed whose contents `keys` spells (`states`: their
        key states), with value `m`; `keep`: a repeat of the key is refused at its quote."""
        rest = DfaTerminal(keys, f"keys at {where}", states=states)
        guard = self.guard(0, met, KEY_OPEN if keep else 0, clauses=clauses)
        quote: StateMachine = self.compiler.phrase('":' if not self.ws else '"')
        if keep:
            quote = Guarded(quote, Guard(item=KEY_CLOSE))
        close = quote if not self.ws else Chain(quote, self.compiler.colon())
        return functools.partial(self.opening, '"', guard=guard), Chain(rest, close, m)

    def in_any_order(self, members: list[Member]) -> tuple[StateMachine, Any]:
        """Members in any order (the guards refuse a key twice), and the end state of an
        empty object."""
        graph: dict = {"first": [], "more": []}
        for i, (open_, tail) in enumerate(members):
            graph["first"].append((open_(True), ("member", i)))
            graph["more"].append((open_(False), ("member", i)))
            graph[("member", i)] = [(tail, "more")]
        return StateMachine(graph, start_state="first", end_states=["first", "more"]), "first"

    def in_order(self, members: list[tuple[list[Member], bool]],
                 others: list[Member]) -> tuple[StateMachine, Any]:
        """Named members in schema order (optional ones skippable), then other keys, and the
        end state of an empty object. A member's opening is made for its place (first in the
        object, or after a comma); the rest of the member (its value) is one copy whatever
        the place. A named member may come in kinds (see SOME_PROPERTY), each a member of its
        own at the same place."""
        graph: dict = {}
        n = len(members)
        # states as ints (cheaper to make, hash and collect than tuples): 2i + first before
        # member i (first: no member yet), then one per kind of member and of other key
        free = 2 * n + 2
        empty = self.compiler.phrase("")
        first_possible = True  # can member i be the first? (all before it are optional)
        for i, (kinds, req) in enumerate(members):
            # (lists: Cython would type these tuples as C tuples of unequal lengths)
            places = [True] if i == 0 else [True, False] if first_possible else [False]
            for first in places:
                edges = graph.setdefault(2 * i + first, [])
                for v, (open_, _) in enumerate(kinds):
                    edges.append((open_(first), free + v))
                if not req:
                    edges.append((empty, 2 * (i + 1) + first))
            for v, (_, tail) in enumerate(kinds):
                graph[free + v] = [(tail, 2 * (i + 1))]
            free += len(kinds)
            first_possible = first_possible and not req
        ends = [2 * n] + ([2 * n + 1] if first_possible else [])
        for end in ends:
            graph.setdefault(end, [])
        for j, (open_, tail) in enumerate(others):
            for end in ends:
                graph[end].append((open_(bool(end & 1)), free + j))
            graph[free + j] = [(tail, 2 * n)]
        return StateMachine(graph, start_state=1, end_states=ends), 2 * n + 1
