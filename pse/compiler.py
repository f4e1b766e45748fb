"""Compile a machine tree into the flat tables of the core (`CompiledStructure`).

Steps:
1. Terminals become byte DFAs, shared by key. Composite machines are inlined into rules
   (recursive transition networks); a `Forward`, a machine that contains itself, or a large
   composite becomes a rule of its own that is called (a frame is pushed). A machine marked
   with `share_rules` (JSON Schema's "any value") has its rules built once, through step 2,
   and copied into each structure.
2. Rules that match nothing are dropped; then each rule is reduced (in C, see
   pse/_core/rules.pyx): epsilon edges eliminated, only the nodes kept that can be reached and
   can finish (so no parser state is a dead end), bisimilar nodes merged.
3. Per node, the closure over calls is precomputed: the terminals that can start there, with
   the frames to push on the way and the guard on the rule's register (see registers.py).
   The step at run time is then a table lookup.
"""

from __future__ import annotations

import threading
from typing import Any, Hashable, Sequence

import numpy as np

from pse import automaton, compile_cache, limits
from pse.bounded_cache import BoundedCache
from pse._core.automata import start_moved
from pse._core.rules import reduce_rule
from pse._core.structure import CompiledStructure, pack_dfas
from pse.errors import GrammarError, MatchesNothing
from pse.machines import DfaTerminal, Forward, StateMachine, Terminal, use_compiler
from pse.json_spelling import string_values
from pse.registers import Guard, Guarded, Scope

# Composite machines larger than this (in inlined nodes) become rules of their own.
INLINE_LIMIT = 256
# A structure with more parser nodes than this is refused (compile time and memory).
MAX_NODES = 100_000
# Rules with more live nodes than this are not searched for bisimilar nodes to merge
# (pse._core.rules.reduce_rule: merging saves parser states, it never changes the language).
MERGE_LIMIT = 5_000
# Machines nested in machines (without a Forward between them) deeper than this are refused,
# and so are rules whose first terminal is reached through more than MAX_LEFT_CALLS nested
# calls: the compiler recurses over that nesting (a RecursionError would name nothing). A JSON
# Schema MAX_SCHEMA_DEPTH (100) subschemas deep nests its machines about 300 deep.
MAX_DEPTH = 400
MAX_LEFT_CALLS = 200
# Entries over all nodes (a node's entries: the terminals that can start there, each with the
# frames it pushes); calls that can match empty multiply them.
MAX_ENTRIES = 2_000_000
UNBOUNDED = -1


class _Rule:
    def __init__(self, name: str, label: str = "") -> None:
        self.name = name
        # for explanations (pse.explain): per node, the labels of the machines it is inside
        # (a grammar's rules, a named Forward), the rule's own first
        self.base: tuple[str, ...] = (label,) if label else ()
        self.paths: list[tuple[str, ...]] = []
        # ... and per terminal edge (terminal, target node) whose labels are not its target's
        # (a labeled machine's last terminal: its end is outside): what a parser state inside
        # the terminal is in
        self.edge_paths: dict[tuple[int, int], tuple[str, ...]] = {}
        self.eps: list[list[int]] = []
        self.terms: list[list[tuple[int, int, int]]] = []  # (terminal, target node, guard)
        self.calls: list[list[tuple[int, int]]] = []  # (rule, return node)
        self.start = self.new_node(self.base)
        self.end = self.new_node(self.base)
        self.ends: set[int] = {self.end}
        self.done = False  # reduced by trim (or copied from a shared fragment, reduced there)

    def new_node(self, path: tuple[str, ...]) -> int:
        if len(self.eps) >= MAX_NODES:
            raise GrammarError(f"the structure needs more than {MAX_NODES} parser nodes "
                               f"(MAX_NODES) in {self.name}")
        self.eps.append([])
        self.paths.append(path)
        self.terms.append([])
        self.calls.append([])
        return len(self.eps) - 1


# How the core runs a terminal (structure.pxd's term_counted): its DFA once, its unit repeated,
# or its DFA with the characters of a match counted.
TERM_PLAIN, TERM_UNITS, TERM_CHARS = 0, 1, 2
# dfa_boundary's bits for a TERM_CHARS terminal's states (see _core/structure.pxd)
DFA_COUNTED, DFA_FULL_STOP = 1, 2


class _Terminal:
    def __init__(self, dfa: automaton.DFA, kind: int, min_count: int, max_count: int,
                 key: Hashable, states: Any, lengths: tuple | None,
                 special: tuple[int | str, bool] | None = None) -> None:
        self.dfa, self.kind, self.min, self.max = dfa, kind, min_count, max_count  # kind: TERM_*
        self.key = key  # equal keys: equal terminals, in any structure
        self.states = states  # what masks of its DFA states may share (DfaTerminal.states)
        # TERM_CHARS: per state, counted flags, count_lengths and DFA_FULL_STOP flags
        self.lengths = lengths
        self.special = special  # SpecialToken: (token, required); no text byte enters it


class _Compiler:
    def __init__(self, share: bool = True) -> None:
        self.share = share  # copy the rules of shared machines (see `share_rules`)
        self.terminals: list[_Terminal] = []
        self.terminal_ids: dict[Hashable, int] = {}
        self.terminal_of: dict[int, tuple[Terminal, int]] = {}  # id(machine) -> (it, number)
        self.rules: list[_Rule] = []
        self.rule_ids: dict[int, int] = {}
        self.sizes: dict[int, int] = {}
        self.guarded: dict[int, bool] = {}
        self.keep: list[StateMachine] = []  # keeps ids in the dicts above valid
        self.guards: list[Guard | None] = [None]  # guard 0: none
        self.guard_ids: dict[Guard, int] = {}
        # rules copied from a shared fragment: id -> (the fragment, its first rule's id, its
        # terminals' and guards' numbers here)
        self.copied: dict[int, tuple[_Fragment, int, list[int], list[int]]] = {}
        # rules whose machine is still to be inlined: built one after the other, not one
        # inside the other, so a long chain of Forwards does not nest Python calls
        self.pending: list[tuple[StateMachine, _Rule]] = []

    # -- step 1: rules and terminals ----------------------------------------------------------
    def rule_for(self, machine: StateMachine) -> int:
        """The id of the rule for `machine`; its body is built by `build_rules`."""
        label = _label(machine)
        machine = _resolve(machine)
        rid = self.rule_ids.get(id(machine))
        if rid is None and self.share and id(machine) in _SHARED:
            rid = self.rule_ids[id(machine)] = self.copy_fragment(_fragment(machine))
        if rid is None:
            rid = self.rule_ids[id(machine)] = len(self.rules)
            self.keep.append(machine)
            rule = _Rule(_short_name(machine), label)
            self.rules.append(rule)
            self.pending.append((machine, rule))
        return rid

    def copy_fragment(self, fragment: _Fragment) -> int:
        """The rules of a shared machine, compiled once, numbered into this structure's
        terminals, guards and rules; returns the id of the first (the machine's)."""
        tids = []
        for term in fragment.terminals:
            tid = self.terminal_ids.get(term.key)
            if tid is None:
                tid = self.terminal_ids[term.key] = len(self.terminals)
                self.terminals.append(term)
            tids.append(tid)
        gids = [0] + [self.guard_id(g) for g in fragment.guards[1:]]
        base = len(self.rules)
        for old in fragment.rules:
            rule = _Rule(old.name)
            rule.base, rule.paths, rule.edge_paths = old.base, old.paths, old.edge_paths
            rule.terms = [[(tids[t], n, gids[g]) for t, n, g in row] for row in old.terms]
            rule.calls = [[(base + r, n) for r, n in row] for row in old.calls]
            rule.eps = [[] for _ in old.terms]
            rule.ends, rule.start, rule.end, rule.done = set(old.ends), old.start, -1, True
            self.copied[len(self.rules)] = (fragment, base, tids, gids)
            self.rules.append(rule)
        return base

    def build_rules(self) -> None:
        while self.pending:
            machine, rule = self.pending.pop()
            self.inline(machine, rule, rule.start, rule.end, top=True, path=rule.base)

    def inline(self, m: StateMachine, rule: _Rule, a: int, b: int, top: bool = False,
               depth: int = 0, path: tuple[str, ...] = ()) -> None:
        if depth > MAX_DEPTH:
            _check_depth(depth, rule, m)
        if isinstance(m, Terminal):  # the most common case first
            self.add_terminal(m, rule, a, b, 0, path)
        elif isinstance(m, Forward) or (isinstance(m, Scope) and not top):
            rule.calls[a].append((self.rule_for(m), b))
        elif isinstance(m, Scope):
            self.inline(m.inner, rule, a, b, top=True, depth=depth + 1, path=path)
        elif isinstance(m, Guarded):
            self.add_terminal(m.terminal, rule, a, b, self.guard_id(m.guard), path)
        elif (not top and self.size(m, rule, depth) > INLINE_LIMIT
              and not self.reads_register(m, rule, depth)):
            rule.calls[a].append((self.rule_for(m), b))
        else:
            limits.check_budget()
            if not m.state_graph and not m.end_states:
                raise GrammarError(f"{m!r} has no states")
            if m.label and not top:
                path = path + (m.label,)
            node: dict[Hashable, int] = {}
            # a start state no edge enters is node a itself, and an end state no edge leaves
            # is node b: fewer nodes and epsilon edges for every later pass
            start, ends, graph = m.start_state, m.end_states, m.state_graph
            if start not in ends and not _entered(graph, start):
                node[start] = a
            for state in ends:
                if state != start and not graph.get(state):
                    node[state] = b
            for state in (start, *ends, *graph):
                if state not in node:
                    node[state] = rule.new_node(path)
            if node[start] != a:
                rule.eps[a].append(node[start])
            for state in ends:
                if node[state] != b:
                    rule.eps[node[state]].append(b)
            for state, edges in graph.items():
                if len(edges) > MERGE_TERMINALS:
                    edges = _merged_terminals(edges, graph, start, ends)
                for sub, target in edges:
                    if target not in node:
                        node[target] = rule.new_node(path)
                    self.inline(sub, rule, node[state], node[target], depth=depth + 1,
                                path=path)

    def reads_register(self, m: StateMachine, rule: _Rule, depth: int) -> bool:
        """Whether `m` holds guards of the enclosing rule's register (outside nested rules):
        such a machine stays inlined, since a call would give it a register of its own."""
        _check_depth(depth, rule, m)
        key = id(m)
        if key not in self.guarded:
            self.guarded[key] = False  # while in progress (a cycle goes through a Forward)
            self.keep.append(m)
            self.guarded[key] = isinstance(m, Guarded) or (
                not isinstance(m, (Forward, Terminal, Scope))
                and any(self.reads_register(sub, rule, depth + 1)
                        for edges in m.state_graph.values()
                        for sub, _ in edges))
        return self.guarded[key]

    def size(self, m: StateMachine, rule: _Rule, depth: int) -> int:
        """Nodes `m` adds when inlined; a machine that contains itself counts as huge."""
        _check_depth(depth, rule, m)
        key = id(m)
        if key in self.sizes:
            return self.sizes[key]
        if isinstance(m, (Forward, Terminal, Scope)):
            return 1
        self.sizes[key] = INLINE_LIMIT + 1  # while in progress: recursion makes it a rule
        self.keep.append(m)
        total = len(m.state_graph) + 1
        for edges in m.state_graph.values():
            for sub, _ in edges:
                total += self.size(sub, rule, depth + 1)
                if total > INLINE_LIMIT:
                    break
        self.sizes[key] = total
        return total

    def guard_id(self, guard: Guard) -> int:
        gid = self.guard_ids.get(guard)
        if gid is None:
            gid = self.guard_ids[guard] = len(self.guards)
            self.guards.append(guard)
        return gid

    def add_terminal(self, m: Terminal, rule: _Rule, a: int, b: int, guard: int = 0,
                     path: tuple[str, ...] = ()) -> None:
        lo, hi = m.min_count, m.max_count
        if lo == 0:
            rule.eps[a].append(b)
            if hi == 0:
                return
        # (a machine met again, as a schema's shared key phrases are, skips its key's making
        # and hashing; the machine is kept, so its id stays its own)
        known = self.terminal_of.get(id(m))
        tid = known[1] if known is not None and known[0] is m else self.terminal_id(m, lo, hi)
        if tid < 0:
            return  # nothing (more) to match: no edge
        rule.terms[a].append((tid, b, guard))
        if path != rule.paths[b]:
            rule.edge_paths.setdefault((tid, b), path)

    def terminal_id(self, m: Terminal, lo: int, hi: int | None) -> int:
        """The number of terminal `m`'s automaton in the structure (equal keys share one),
        -1 where it matches only the empty text."""
        if m.repeats_unit:
            kind, low, high = TERM_UNITS, max(lo, 1), hi
        elif getattr(m, "counts_steps", False):
            kind, low, high = TERM_CHARS, m.min_steps, m.max_steps
        else:
            kind, low, high = TERM_PLAIN, max(lo, 1), hi
        key = (m.terminal_key(), kind, low, UNBOUNDED if high is None else high)
        tid = self.terminal_ids.get(key)
        if tid is None:
            found = _terminal_dfa(m, key, kind, lo)
            if found is None:
                tid = -1
            else:
                dfa, lengths = found
                tid = self.terminal_ids[key] = len(self.terminals)
                # metadata of the automaton's states, renumbered as _terminal_dfa rewrote it
                states = None if kind else getattr(m, "states", None)
                if states is not None and m.unit_dfa().accept[0]:
                    states = states.without_empty(m.unit_dfa().n_states)
                self.terminals.append(_Terminal(dfa, kind, key[2], key[3], key, states,
                                                lengths, getattr(m, "special_token", None)))
        self.terminal_of[id(m)] = (m, tid)
        return tid

    # -- step 2: epsilon elimination and trimming ---------------------------------------------
    def trim(self, root: int) -> list[int]:
        """Drop rules that match nothing; reduce the others (`reduce_rule`: no epsilon edges,
        no calls of those rules, no node that cannot reach its rule's end, bisimilar nodes
        merged).

        Returns the rules still reachable from the root, root first.
        """
        # a rule is looked at again only when a rule it calls turns out productive
        callers: dict[int, set[int]] = {}
        for rid, rule in enumerate(self.rules):
            for row in rule.calls:
                for r, _ in row:
                    callers.setdefault(r, set()).add(rid)
        productive: set[int] = set()
        todo = list(range(len(self.rules)))  # (the last first: callees come after callers)
        while todo:
            rid = todo.pop()
            if rid not in productive and _reaches_end(self.rules[rid], productive, self.guards):
                productive.add(rid)
                todo.extend(callers.get(rid, ()))
        if root not in productive:
            names = _unending_labels(self.rules, root, productive)
            raise MatchesNothing("the structure matches nothing" + (
                f": no text ends {', '.join(names)}" if names else ""), tuple(names))
        is_productive = bytes(rid in productive for rid in range(len(self.rules)))
        order = [root]
        seen = {root}
        k = 0
        while k < len(order):
            limits.check_budget()
            rule = self.rules[order[k]]
            if rule.done:
                rule.calls = [[(r, t) for r, t in row if r in productive] for row in rule.calls]
            else:
                numbering: list[int] = []
                try:
                    rule.terms, rule.calls, rule.ends = reduce_rule(
                        rule.eps, rule.terms, rule.calls, rule.start, rule.ends,
                        is_productive, MERGE_LIMIT, MAX_ENTRIES, numbering)
                except OverflowError as e:  # (the edge bound: see reduce_rule)
                    raise GrammarError(f"{rule.name}: {e} (MAX_ENTRIES: optional parts in "
                                       "a row multiply them)") from None
                rule.eps = [[] for _ in rule.terms]
                rule.paths, rule.edge_paths = _renumbered(rule, numbering)
                rule.start, rule.done = 0, True
            for row in rule.calls:
                for r, _ in row:
                    if r not in seen:
                        seen.add(r)
                        order.append(r)
            k += 1
        return order

    # -- step 3: closures and tables ----------------------------------------------------------
    def tables(self, root: int) -> dict:
        order = self.trim(root)
        base: dict[int, int] = {}
        n_nodes = 0
        for rid in order:
            base[rid] = n_nodes
            n_nodes += len(self.rules[rid].eps)

        nullable = _nullable_rules(self.rules, order)
        entries = _Entries(self.rules, base, nullable)
        node_entry_off = [0]
        node_end = []
        node_collapse, node_tail, node_runs = [], [], []
        node_guarded = []
        entry_term, entry_target, entry_push_off, pushes, entry_guard = [], [], [0], [], []
        for rid in order:
            rule = self.rules[rid]
            limits.check_budget()
            if len(entry_term) > MAX_ENTRIES:
                raise GrammarError(f"the structure needs more than {MAX_ENTRIES} parser entries "
                                   f"(MAX_ENTRIES; calls that can match empty multiply them), "
                                   f"at {rule.name}")
            copied = self.copied.get(rid)
            if copied is not None:  # its nodes' rows made once, with the fragment's numbers
                fragment, first, tids, gids = copied
                rows, ends, collapse, tail, runs = fragment.node_rows[rid - first]
                for row in rows:
                    guarded = False
                    for tid, k, n, push, guard in row:
                        entry_term.append(tids[tid])
                        entry_target.append(base[first + k] + n)
                        pushes.extend([base[first + pk] + pn for pk, pn in push])
                        entry_push_off.append(len(pushes))
                        entry_guard.append(gids[guard])
                        guarded |= guard != 0
                    node_entry_off.append(len(entry_term))
                    node_guarded.append(guarded)
                node_end.extend(ends)
                node_collapse.extend(collapse)
                node_tail.extend(tail)
                node_runs.extend(runs)
                continue
            for s in range(len(rule.eps)):
                guarded = False
                reach = _nullable_reach(rule, s, nullable)
                for tid, target, push, guard in entries.at(rid, s, reach):
                    entry_term.append(tid)
                    entry_target.append(target)
                    pushes.extend(push)
                    entry_push_off.append(len(pushes))
                    entry_guard.append(guard)
                    guarded |= guard != 0
                node_entry_off.append(len(entry_term))
                node_guarded.append(guarded)
                node_end.append(bool(rule.ends & reach))
            collapse = _collapsing_returns(rid, rule, node_end[base[rid]:])
            node_collapse.extend(collapse)
            node_tail.extend(_tail_returns(rid, rule, node_end[base[rid]:],
                                           node_entry_off[base[rid]:]))
            node_runs.extend(_run_returns(rid, rule, collapse))

        tables = self.dfa_tables()
        tables.update(
            node_entry_off=node_entry_off, node_end=node_end, node_collapse=node_collapse,
            node_tail=node_tail, node_runs=node_runs,
            entry_term=entry_term, entry_target=entry_target, entry_push_off=entry_push_off,
            pushes=pushes, root_node=base[root] + self.rules[root].start,
            entry_guard=entry_guard, node_guarded=node_guarded, **self.guard_tables(),
            node_labels=[p for rid in order for p in self.rules[rid].paths],
            edge_labels={(t, base[rid] + b): p for rid in order
                         for (t, b), p in self.rules[rid].edge_paths.items()},
        )
        return tables

    def guard_tables(self) -> dict:
        columns: dict[str, list[int]] = {name: [] for name in (
            "guard_forbid", "guard_need", "guard_set", "guard_min", "guard_inc", "guard_max",
            "guard_reserve", "guard_cap", "guard_item")}
        offsets, clause_if, clause_then = [0], [], []
        for g in self.guards:
            g = g or Guard()
            for name, value in (("guard_forbid", g.forbid), ("guard_need", g.need),
                                ("guard_set", g.set), ("guard_min", g.min_props),
                                ("guard_inc", g.inc),
                                ("guard_max", UNBOUNDED if g.max_props is None else g.max_props),
                                ("guard_reserve", g.reserve),
                                ("guard_cap", g.cap), ("guard_item", g.item)):
                columns[name].append(value)
            for a, b in g.clauses:
                clause_if.append(a)
                clause_then.append(b)
            offsets.append(len(clause_if))
        return dict(columns, guard_clause_off=offsets, clause_if=clause_if,
                    clause_then=clause_then)

    def dfa_tables(self) -> dict:
        dfas = [term.dfa for term in self.terminals]
        # per state, for TERM_CHARS terminals only (the core reads no other state's)
        n = sum(d.n_states for d in dfas) if any(t.lengths for t in self.terminals) else 0
        # (most structures have none: empty lists, not three arrays made through numpy's
        # Python API)
        boundary, lens, tail = (np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.uint64),
                                np.zeros(n, dtype=np.uint8)) if n else ([], [], [])
        at = 0
        for term in self.terminals if n else ():
            if term.lengths is not None:
                k = term.dfa.n_states
                counted, lens[at:at + k], tail[at:at + k], full_stops = term.lengths
                boundary[at:at + k] = np.asarray(counted, dtype=np.uint8) | full_stops
            at += term.dfa.n_states
        packed = pack_dfas([d.trans for d in dfas], [d.accept for d in dfas],
                           [d.cuts() for d in dfas])
        special = {tid: t.special for tid, t in enumerate(self.terminals)
                   if t.special is not None}
        for tid in special:  # a special token is no text: no byte starts it
            packed["term_first"][8 * tid:8 * tid + 8] = 0
        return dict(
            packed,
            term_special=[t.special is not None for t in self.terminals],
            special_tokens=special,
            dfa_boundary=boundary, dfa_lens=lens, dfa_lens_tail=tail,
            dfa_values=self.values_table(),
            term_counted=[t.kind for t in self.terminals],
            term_min=[t.min for t in self.terminals], term_max=[t.max for t in self.terminals],
            terminal_keys=[t.key for t in self.terminals],
            terminal_states=[t.states for t in self.terminals],
        )


    def values_table(self) -> np.ndarray | list:
        """With unique arrays (or kept keys), per DFA state of a terminal of whole JSON strings, how many
        strings it can still complete to (json_spelling.string_values); -1 elsewhere. Empty
        without unique arrays (the core reads none)."""
        if not any(g is not None and g.item for g in self.guards):  # (as the core's has_unique)
            return []
        parts = []
        for term in self.terminals:
            values = None
            if term.kind == TERM_PLAIN:
                values = _VALUES_CACHE.get(term.key, _NOT_CACHED)
                if values is _NOT_CACHED:
                    values = string_values(term.dfa)
                    _VALUES_CACHE.put(term.key, values)
            parts.append(np.full(term.dfa.n_states, -1, dtype=np.int64) if values is None
                         else np.asarray(values, dtype=np.int64))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class _Entries:
    """The entries of nodes: (terminal, target node, frames to push, guard), through calls of
    rules that can match empty. (A class, not closures that call each other: those would make
    a reference cycle holding the whole compiler until the garbage collector ran.)"""

    def __init__(self, rules: list[_Rule], base: dict[int, int], nullable: set[int]) -> None:
        self.rules, self.base, self.nullable = rules, base, nullable
        self.first_of_rule: dict[int, list[tuple[int, int, tuple[int, ...], int]]] = {}
        self.in_progress: set[int] = set()

    def at(self, rid: int, s: int, reach: set[int] | None = None
           ) -> list[tuple[int, int, tuple[int, ...], int]]:
        """The entries of node s of rule `rid` (`reach`: its `_nullable_reach`, if known)."""
        rule = self.rules[rid]
        base = self.base[rid]
        if reach is None:
            reach = _nullable_reach(rule, s, self.nullable)
        out = []
        for k in sorted(reach):
            for tid, target, guard in rule.terms[k]:
                out.append((tid, base + target, (), guard))
            for callee, ret in rule.calls[k]:
                for tid, target, pushes, guard in self.first(callee):
                    out.append((tid, target, (base + ret,) + pushes, guard))
        # (a node's own edges and calls are sets: only more nodes can repeat an entry)
        return out if len(reach) == 1 else list(dict.fromkeys(out))

    def first(self, rid: int) -> list[tuple[int, int, tuple[int, ...], int]]:
        """The entries at the start of rule `rid`."""
        if rid not in self.first_of_rule:
            rule = self.rules[rid]
            name = rule.base[0] if rule.base else rule.name  # (a grammar rule's, a $ref's name)
            if rid in self.in_progress:
                raise GrammarError(f"left recursion through {name}: a rule can reach itself "
                                   "without consuming input")
            if len(self.in_progress) >= MAX_LEFT_CALLS:
                raise GrammarError(f"{name}: its first terminal is reached through more than "
                                   f"{MAX_LEFT_CALLS} nested rules (MAX_LEFT_CALLS)")
            self.in_progress.add(rid)
            self.first_of_rule[rid] = self.at(rid, rule.start)
            self.in_progress.discard(rid)
        return self.first_of_rule[rid]


def _renumbered(rule: _Rule, numbering: list[int]
                ) -> tuple[list[tuple[str, ...]], dict[tuple[int, int], tuple[str, ...]]]:
    """The rule's labels over its reduced nodes (`numbering`: old node -> new or -1); a new
    node takes those of its first old node."""
    paths: list[tuple[str, ...] | None] = [None] * len(rule.terms)
    for old, new in enumerate(numbering):
        if new >= 0 and paths[new] is None:
            paths[new] = rule.paths[old]
    edges = {(t, numbering[b]): p for (t, b), p in rule.edge_paths.items() if numbering[b] >= 0}
    return paths, edges  # type: ignore[return-value]  (every new node has an old one)


def _label(machine: StateMachine) -> str:
    """The label of a rule called as `machine`: the name a user gave the Forward (grammar
    rules, `$ref`s), else the label of the machine it stands for (`StateMachine.label`)."""
    seen = set()
    while isinstance(machine, Forward) and id(machine) not in seen:
        if machine.name != "Forward":
            return machine.name
        seen.add(id(machine))
        machine = machine.target
    return "" if isinstance(machine, Forward) or machine is None else machine.label


def _resolve(machine: StateMachine) -> StateMachine:
    seen = set()
    while isinstance(machine, Forward):
        if machine.target is None:
            raise GrammarError(f"{machine.name} was never set (call .set(machine) first)")
        if id(machine) in seen:
            raise GrammarError(f"{machine.name} refers only to itself")
        seen.add(id(machine))
        machine = machine.target
    return machine


# The DFAs of terminals seen lately, by key: structures built from the same pieces (every
# schema's strings, numbers and punctuation) determinize them once.
_DFA_CACHE = BoundedCache(4096)
# Their string counts (see values_table), by the same keys.
_VALUES_CACHE = BoundedCache(4096)
_NOT_CACHED = object()


def _terminal_dfa(m: Terminal, key: Hashable, kind: int, lo: int
                  ) -> tuple[automaton.DFA, tuple | None] | None:
    """The DFA the core runs for terminal `m` and, for TERM_CHARS, its states' counted flags,
    lengths (see CountedTerminal) and full-stop flags; None: it matches only the empty
    string."""
    found = _DFA_CACHE.get(key, _NOT_CACHED)
    if found is not _NOT_CACHED:
        return found
    dfa = m.unit_dfa()
    lengths = None
    if kind == TERM_CHARS:
        lengths = (m.counted, m.length_bits, m.length_tail)
    if dfa.accept[0]:
        if kind == TERM_UNITS:
            raise GrammarError(f"{m!r}: a repeated unit must not match the empty string")
        if lo != 0 and kind == TERM_PLAIN:
            raise GrammarError(f"{m!r} matches the empty string: its min_count must be 0")
        dfa = _without_empty(dfa)  # the empty match is the epsilon edge the caller adds
        if lengths is not None:  # the new start: the old one, not accepting; the old at the end
            boundary, bits, tail = lengths
            lengths = (boundary + boundary[:1], (bits[0] & ~1,) + bits[1:] + bits[:1],
                       tail + tail[:1])
    if not dfa.trans[0]:
        found = None
    else:
        if kind == TERM_UNITS:
            if not dfa.is_prefix_free():
                raise GrammarError(f"{m!r}: a repeated unit must be prefix-free")
            dfa = _without_reentry(dfa)
        if lengths is not None:
            lengths += (_full_stops(dfa, lengths),)
        found = (dfa, lengths)
    _DFA_CACHE.put(key, found)
    return found


def _full_stops(dfa: automaton.DFA, lengths: tuple) -> np.ndarray:
    """DFA_FULL_STOP per state of a TERM_CHARS terminal where no byte can follow once the
    count is at its maximum: every edge enters a counted state or one that needs another
    counted step to accept (between two characters, say; inside a counted repeat's word, a
    byte may follow)."""
    counted, bits, _ = lengths
    zero_more = [bool(b & 1) for b in bits]  # accepting with no counted step more
    return np.array([DFA_FULL_STOP * all(counted[t] or not zero_more[t] for _, _, t in row)
                     for row in dfa.trans], dtype=np.uint8)


# Machines built once and used by many structures (JSON Schema's "any value"): their rules are
# compiled once (`_fragment`) and copied into each structure that calls them.
_SHARED: dict[int, StateMachine] = {}
_FRAGMENTS: dict[int, _Fragment] = {}
_SHARED_LOCK = threading.Lock()


def share_rules(machine: StateMachine) -> StateMachine:
    """Mark `machine` (which must never change again, and should live as long as the process)
    as shared: the rules compiled for it are kept and copied into every structure using it.
    Returns the machine."""
    with _SHARED_LOCK:
        _SHARED[id(_resolve(machine))] = _resolve(machine)
    return machine


class _Fragment:
    """The rules of one machine and of those it calls, compiled and trimmed, the machine's
    first; with the terminals and guards they number, and per rule what `tables` writes for
    its nodes, in the fragment's numbers (`node_rows`): a structure that copies the rules
    maps those instead of finding every node's entries again."""

    def __init__(self, rules: list[_Rule], terminals: list[_Terminal], guards: list) -> None:
        self.rules, self.terminals, self.guards = rules, terminals, guards
        self.node_rows = _node_rows(rules)


def _node_rows(rules: list[_Rule]
               ) -> list[tuple[list, list[bool], list[bool], list[bool], list[bool]]]:
    """Per rule of a fragment (rules that call only each other): per node its entries as
    (terminal, target rule, target node, frames to push as (rule, node), guard), then per
    node whether the rule may end there, its collapsing returns, its tail returns and its
    run returns (as `_Compiler.tables` finds them)."""
    base, where = [], []
    for k, rule in enumerate(rules):
        base.append(len(where))
        where.extend((k, s) for s in range(len(rule.terms)))
    nullable = _nullable_rules(rules, range(len(rules)))
    entries = _Entries(rules, dict(enumerate(base)), nullable)
    out = []
    for k, rule in enumerate(rules):
        rows, ends, entry_off = [], [], [0]
        for s in range(len(rule.terms)):
            reach = _nullable_reach(rule, s, nullable)
            rows.append([(tid, *where[target], tuple(where[p] for p in push), guard)
                         for tid, target, push, guard in entries.at(k, s, reach)])
            ends.append(bool(rule.ends & reach))
            entry_off.append(entry_off[-1] + len(rows[-1]))
        collapse = _collapsing_returns(k, rule, ends)
        out.append((rows, ends, collapse, _tail_returns(k, rule, ends, entry_off),
                    _run_returns(k, rule, collapse)))
    return out


def _fragment(machine: StateMachine) -> _Fragment:
    with _SHARED_LOCK:
        fragment = _FRAGMENTS.get(id(machine))
    if fragment is None:
        compiler = _Compiler(share=False)
        root = compiler.rule_for(machine)
        compiler.build_rules()
        order = compiler.trim(root)
        new_id = {rid: k for k, rid in enumerate(order)}
        rules = [compiler.rules[rid] for rid in order]
        for rule in rules:
            rule.calls = [[(new_id[r], n) for r, n in row] for row in rule.calls]
        fragment = _Fragment(rules, compiler.terminals, compiler.guards)
        with _SHARED_LOCK:
            fragment = _FRAGMENTS.setdefault(id(machine), fragment)
    return fragment


def _without_reentry(dfa: automaton.DFA) -> automaton.DFA:
    """An equivalent DFA whose start state has no incoming edge, so that being at the start
    of a counted terminal unambiguously means 'between two units'."""
    if not any(t == 0 for row in dfa.trans for _, _, t in row):
        return dfa
    return automaton.DFA(start_moved(dfa.trans), dfa.accept + (dfa.accept[0],),
                         cuts=dfa.cuts())


def _without_empty(dfa: automaton.DFA) -> automaton.DFA:
    """The same language minus the empty string: the start (state 0) does not accept, and
    the old start moves to the end (number n_states, see `_core.automata.start_moved`); only
    the rows with an edge into the start change (key and string automata run to hundreds of
    states), so the byte classes' cuts stay."""
    return automaton.DFA(start_moved(dfa.trans), (False,) + dfa.accept[1:] + dfa.accept[:1],
                         cuts=dfa.cuts())


def _entered(graph: dict, state: Hashable) -> bool:
    """Whether an edge of a machine's state graph enters `state`."""
    for edges in graph.values():
        for _, target in edges:
            if target == state:
                return True
    return False


def _unending_labels(rules: list[_Rule], root: int, productive: set[int], most: int = 3
                     ) -> list[str]:
    """The labels (a grammar's rule names, `$ref`s) of the first few rules that nothing ends
    among those the root calls, through such rules, the root first: where the structure goes
    on without end."""
    out: list[str] = []
    order, seen = [root], {root}
    for rid in order:
        label = rules[rid].base[0] if rules[rid].base else ""
        if label and label not in out:
            out.append(label)
            if len(out) == most:
                break
        for row in rules[rid].calls:
            for r, _ in row:
                if r not in seen and r not in productive:
                    seen.add(r)
                    order.append(r)
    return out


def _reaches_end(rule: _Rule, productive: set[int], guards: list[Guard | None]) -> bool:
    """Whether the rule's start reaches one of its ends, calling only productive rules, on a
    path whose guards can hold (`_register_bounds`)."""
    seen = {rule.start}
    todo = [rule.start]
    while todo:
        s = todo.pop()
        if s in rule.ends:
            return _register_bounds(rule, productive, guards)
        nxt = [e[1] for e in rule.terms[s]] + [t for r, t in rule.calls[s] if r in productive]
        for t in nxt + rule.eps[s]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return False


def _register_bounds(rule: _Rule, productive: set[int], guards: list[Guard | None]) -> bool:
    """Whether an end stays reachable when the guards' needs are checked: per node, the key
    bits and property count that some path may have set there (the union of the bits, the
    most properties: more never fails a need or a minimum), grown to a fixpoint. Guards'
    other checks are taken to hold, so this errs only towards reachable: what it refuses
    no path reaches (an object whose minProperties only properties that match nothing can
    meet: `{"additionalProperties": {"$ref": "#"}, "minProperties": 1}`)."""
    used = [guards[g] for row in rule.terms for _, _, g in row if g]
    if not any(g.need or g.min_props for g in used):
        return True
    top = max(g.min_props for g in used)  # (counts past it all pass alike)
    bits: dict[int, int] = {rule.start: 0}
    props: dict[int, int] = {rule.start: 0}
    grown: dict[int, int] = {}  # times a node's count grew: a loop's count goes to `top`
    todo = [rule.start]
    while todo:
        s = todo.pop()
        if s in rule.ends:
            return True
        moves = [(t, 0, 0) for t in rule.eps[s]]
        moves += [(t, 0, 0) for r, t in rule.calls[s] if r in productive]
        for _, t, g in rule.terms[s]:
            guard = guards[g]
            if guard is None:
                moves.append((t, 0, 0))
            elif bits[s] & guard.need == guard.need and props[s] >= guard.min_props:
                moves.append((t, guard.set, guard.inc))
        for t, add, inc in moves:
            b, n = bits[s] | add, min(props[s] + inc, top)
            if t not in bits or b | bits[t] != bits[t] or n > props[t]:
                if t in props and n > props[t]:
                    grown[t] = grown.get(t, 0) + 1
                    n = top if grown[t] > 4 else n  # (more than it may reach: still sound)
                bits[t], props[t] = b | bits.get(t, 0), max(n, props.get(t, 0))
                todo.append(t)
    return False


def _collapsing_returns(rid: int, rule: _Rule, ends: list[bool]) -> list[bool]:
    """Per node of rule `rid`, whether a frame returning to it, pushed onto one returning to
    it, may be left out: the only node reachable from it where the rule may end is itself,
    and the rule has no guards (its register never changes). What may follow the node is
    then a closure L, L·L = L: two such frames in a row accept what one does, whichever call
    pushes the second, and an ambiguous grammar's stacks stop growing with the text. Only
    returns of the rule calling itself are looked at (`s: s s | "a"` runs as `a (s)*`, each
    call returning to the loop): only there can two such frames meet."""
    out = [False] * len(rule.terms)
    returns = {ret for row in rule.calls for callee, ret in row if callee == rid}
    if not returns or any(g for row in rule.terms for _, _, g in row):
        return out
    for r in returns:
        if not ends[r]:
            continue
        seen, todo = {r}, [r]
        while todo:
            k = todo.pop()
            for x in [t for _, t, _ in rule.terms[k]] + [ret for _, ret in rule.calls[k]]:
                if x not in seen:
                    seen.add(x)
                    todo.append(x)
        out[r] = not any(ends[x] for x in seen if x != r)
    return out


def _tail_returns(rid: int, rule: _Rule, ends: list[bool], entry_off: list[int]
                  ) -> list[bool]:
    """Per node of rule `rid`, whether a call returning to it may push no frame: the rule can
    only end there (no entry leaves it), so a return would only pop again, and every call
    returning there is of the rule itself. Right recursion (`s: "a" s | "a"`) then keeps no
    stack, and ambiguous right recursion (`s: "a" s | "a" s s | "a"`) keeps a stack per count
    of calls still to come, not per order of them (exponentially many), which the core holds
    as one run of the pending call's frame (structure.pyx, push_frame). Only the rule's own
    calls: a frame names its rule in explanations, where a rule repeated in a row is named
    once. (The core still pushes a frame whose register holds a unique array's item.)"""
    others = {ret for row in rule.calls for callee, ret in row if callee != rid}
    out = [False] * len(rule.terms)
    for row in rule.calls:
        for callee, ret in row:
            if (callee == rid and ret not in others and ends[ret]
                    and entry_off[ret] == entry_off[ret + 1]):
                out[ret] = True
    return out


def _run_returns(rid: int, rule: _Rule, collapse: list[bool]) -> list[bool]:
    """Per node of rule `rid`, whether a call returning to it is of the rule itself (and the
    node does not collapse such frames: see _collapsing_returns): there a frame may be pushed
    on one just like it, which the core makes a run of that frame (structure.pyx,
    push_frame), so that stacks differing only in how many such calls are pending are one
    state (`s: "a" s | "a" s s | "a"`, `s: "a" s "b" | "a"`). Elsewhere the core does not look
    for one (a read of the frame below at every push)."""
    out = [False] * len(rule.terms)
    for row in rule.calls:
        for callee, ret in row:
            if callee == rid and not collapse[ret]:
                out[ret] = True
    return out


def _nullable_rules(rules: list[_Rule], ids: Sequence[int]) -> set[int]:
    """The rules among `ids` that can match the empty string."""
    nullable: set[int] = set()
    changed = True
    while changed:
        changed = False
        for rid in ids:
            rule = rules[rid]
            if rid not in nullable and rule.ends & _nullable_reach(rule, rule.start, nullable):
                nullable.add(rid)
                changed = True
    return nullable


def _nullable_reach(rule: _Rule, s: int, nullable: set[int]) -> set[int]:
    """Nodes reachable from s through calls of rules that can match the empty string."""
    seen = {s}
    if not nullable:
        return seen
    todo = [s]
    while todo:
        k = todo.pop()
        for r, t in rule.calls[k]:
            if r in nullable and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def compile_machine(machine: StateMachine) -> CompiledStructure:
    """Compile `machine` into a CompiledStructure.

    With the compile cache on (`pse.set_cache_dir`) and a machine that has a `cache_key()`,
    the tables come from the cache when an entry is there, and go into it when compiled.

    Raises:
        GrammarError: an unset Forward, left recursion, a structure that matches nothing, or
            one past a limit (MAX_NODES, MAX_DEPTH, MAX_LEFT_CALLS, MAX_ENTRIES, the automaton
            limits, pse.limits.COMPILE_SECONDS).
    """
    if not isinstance(machine, StateMachine):
        raise TypeError(f"expected a StateMachine, got {type(machine).__name__}")
    found = compile_cache.lookup(machine)  # (None at once when the cache is off)
    if found is not None:
        return found[0]
    with limits.compile_budget(_short_name(machine)):
        # the compiler's and the tables' objects are let go before the budget ends: the
        # collection that its end sets off then scans only what the structure keeps
        tables, n_rules = _tables(machine)
        structure = CompiledStructure(machine.value_parser(), tables, n_rules)
        compile_cache.store(machine, tables, n_rules)
        del tables
    return structure


def _tables(machine: StateMachine) -> tuple[dict, int]:
    """The tables of `machine`'s compiled structure, and its number of rules."""
    compiler = _Compiler()
    root = compiler.rule_for(machine)
    compiler.build_rules()
    return compiler.tables(root), len(compiler.rules)


use_compiler(compile_machine)


# Plain terminals from one state to one target past this many become one terminal, the union
# of their automata: each would otherwise be a live parser state of its own wherever their
# texts share a prefix (an AnyOf of a thousand words passed max_live_states at its first
# byte). Few, they stay apart: most structures' tables do not change.
MERGE_TERMINALS = 32
_UNIONS = BoundedCache(256)
_LAST = object()  # (the place of the end states that no edge leaves)


def _merged_terminals(edges: list, graph: dict, start: Hashable, ends: Any) -> list:
    """`edges` with each group of more than MERGE_TERMINALS plain terminals (one match of a
    DFA: no guard, label, count, special token or key states) into one target as one
    terminal (end states other than the start that no edge leaves are one target:
    `inline_machine` makes them one node), or as few as the automaton limits allow
    (`_unions_of`)."""
    ends = set(ends)  # (a machine of n alternatives has n end states: a list is quadratic)

    def place(target: Hashable) -> Hashable:
        return _LAST if target != start and target in ends and not graph.get(target) \
            else target

    groups: dict[Hashable, list[Terminal]] = {}
    first: dict[Hashable, Hashable] = {}  # a group's place -> the first target named
    for sub, target in edges:
        if (isinstance(sub, Terminal) and not sub.repeats_unit and not sub.label
                and sub.min_count == 1 and sub.max_count == 1
                and not getattr(sub, "counts_steps", False)
                and getattr(sub, "special_token", None) is None
                and getattr(sub, "states", None) is None):
            groups.setdefault(place(target), []).append(sub)
            first.setdefault(place(target), target)
    merged: dict[Hashable, list[Terminal]] = {}
    for at, subs in groups.items():
        if len(subs) > MERGE_TERMINALS:
            merged[at] = _unions_of(subs)
    if not merged:
        return edges
    taken = {id(sub) for at in merged for sub in groups[at]}
    return [(union, first[at]) for at, unions in merged.items() for union in unions] + [
        (sub, target) for sub, target in edges
        if not (id(sub) in taken and place(target) in merged)]


def _unions_of(subs: list[Terminal]) -> list[Terminal]:
    """Terminals matching what `subs` match, as few as the automaton limits allow: one, their
    union; past the limits, the terminals in the order of their keys (words sharing a prefix
    together) in runs whose automata hold at most MAX_DFA_STATES states in all, each run one
    terminal (halved again where its union is still past the limits; a single terminal stays
    as it is). A word list past the limits in one automaton was left as separate terminals,
    a live state each: 2,000 words were "too ambiguous" at their first byte."""
    union = _union(subs)
    if union is not None:
        return [union]
    ordered = sorted(subs, key=lambda sub: repr(sub.terminal_key()))
    runs: list[list[Terminal]] = [[]]
    size = 0
    for sub in ordered:
        n = sub.unit_dfa().n_states
        if runs[-1] and size + n > automaton.MAX_DFA_STATES:
            runs.append([])
            size = 0
        runs[-1].append(sub)
        size += n
    return [union for run in runs for union in _halved_unions(run)]


def _halved_unions(run: list[Terminal]) -> list[Terminal]:
    union = _union(run) if len(run) > 1 else run[0]
    if union is not None:
        return [union]
    return _halved_unions(run[:len(run) // 2]) + _halved_unions(run[len(run) // 2:])


def _union(subs: list[Terminal]) -> Terminal | None:
    """One terminal matching what `subs` match (kept in `_UNIONS`), or None past the
    automaton limits."""
    key = ("union", tuple(sub.terminal_key() for sub in subs))
    union = _UNIONS.get(key)
    if union is None:
        try:
            dfa = automaton.minimize(automaton.union([sub.unit_dfa() for sub in subs]))
        except GrammarError:  # (past MAX_DFA_STATES)
            return None
        union = DfaTerminal(dfa, f"any of {len(subs)} terminals", key=key)
        _UNIONS.put(key, union)
    return union


def _check_depth(depth: int, rule: _Rule, m: StateMachine) -> None:
    if depth > MAX_DEPTH:
        raise GrammarError(f"machines nest more than {MAX_DEPTH} deep (MAX_DEPTH) in "
                           f"{rule.name}, at {_short_name(m)}: put a Forward between levels")


def _short_name(m: StateMachine) -> str:
    """A name for messages that does not spell out (recursively) what `m` contains."""
    if isinstance(m, (Terminal, Forward)):
        return repr(m)[:60]
    return f"{type(m).__name__}(...)"
