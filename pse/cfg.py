"""Context-free grammars in BNF, rewritten so that no rule can reach itself without consuming
input (the compiler's parser states cannot represent left recursion).

Input: `{nonterminal: [alternative, ...]}`, an alternative a tuple of symbols `("t", name)`
(a terminal) or `("n", name)` (a nonterminal). Output (`Rewritten`): the same language, where
every rule matches only non-empty texts and every alternative starts with a terminal or a
nonterminal that cannot lead back to its rule. Symbols of the output:

    ("t", T)  the terminal T          ("n", A)  A's non-empty texts
    ("o", A)  A's non-empty texts, or nothing (A matched the empty text)
    ("l", A)  A's tail loop: any number of A's tails, one after the other

Steps: (1) drop what derives nothing; (2) make every rule non-empty: an alternative whose
leading symbols can be empty becomes one alternative per symbol that can start it (linear, not
exponential, in the number of such symbols); later nullable symbols become ("o", A);
(3) within each cycle of the left-corner graph, Paull's substitution then the direct rewrite
`A -> A a | b` into `A -> b (a)*`: the alternatives `b` and the loop of tails `a`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pse.errors import GrammarError, MatchesNothing

Symbol = tuple[str, str]
Alternative = tuple[Symbol, ...]

# More alternatives than this after the rewrite means an exponential blow-up: refused.
MAX_ALTERNATIVES = 50_000


@dataclass
class Rewritten:
    """A grammar without left recursion (see the module doc).

    Attributes:
        alternatives: per nonterminal, its non-empty alternatives.
        tails: per nonterminal, the tails repeated after one of its alternatives (empty when
            it was not left-recursive).
        start_nullable: the start symbol also matches the empty text.
    """

    alternatives: dict[str, list[Alternative]] = field(default_factory=dict)
    tails: dict[str, list[Alternative]] = field(default_factory=dict)
    start_nullable: bool = False


def _productive(rules: dict[str, list[Alternative]]) -> set[str]:
    """The rules that derive some text."""
    return _least_fixpoint(rules, lambda alt: {s for k, s in alt if k != "t"})


def _nullable(rules: dict[str, list[Alternative]]) -> set[str]:
    """The rules that derive the empty text."""
    return _least_fixpoint(rules, lambda alt: None if any(k != "n" for k, _ in alt)
                           else {s for _, s in alt})


def _least_fixpoint(rules: dict[str, list[Alternative]], needs) -> set[str]:
    """The rules with an alternative whose `needs(alt)` (a set of rules; None: never) are
    all in the result, found in time linear in the grammar: each alternative counts the
    rules it still waits for."""
    done: set[str] = set()
    todo: list[str] = []
    waiting: dict[str, list[list]] = {}  # rule -> the [count, owner] of alternatives needing it
    for name, alts in rules.items():
        for alt in alts:
            need = needs(alt)
            if need is None:
                continue
            if not need:
                if name not in done:
                    done.add(name)
                    todo.append(name)
                continue
            counter = [len(need), name]
            for s in need:
                waiting.setdefault(s, []).append(counter)
    while todo:
        for counter in waiting.pop(todo.pop(), ()):
            counter[0] -= 1
            if counter[0] == 0 and counter[1] not in done:
                done.add(counter[1])
                todo.append(counter[1])
    return done


def _reachable(rules: dict[str, list[Alternative]], start: str) -> list[str]:
    order, seen = [start], {start}
    k = 0
    while k < len(order):
        for alt in rules[order[k]]:
            for kind, s in alt:
                if kind != "t" and s not in seen:
                    seen.add(s)
                    order.append(s)
        k += 1
    return order


def rewrite(rules: dict[str, list[Alternative]], start: str) -> Rewritten:
    """Rewrite `rules` so that nothing is left-recursive (see the module doc).

    Args:
        rules: the BNF; every nonterminal used must have an entry.
        start: the start nonterminal.

    Returns:
        The rewritten grammar; only nonterminals reachable from `start` are kept.

    Raises:
        MatchesNothing: the start symbol derives no text at all.
        GrammarError: the rewrite would need more than MAX_ALTERNATIVES alternatives.
    """
    productive = _productive(rules)
    if start not in productive:
        raise MatchesNothing(f"the grammar matches nothing: rule {start!r} derives no text")
    if len(productive) < len(rules):  # (else every alternative derives some text)
        rules = {name: [alt for alt in alts if all(k == "t" or s in productive for k, s in alt)]
                 for name, alts in rules.items() if name in productive}
    nullable = _nullable(rules)
    if nullable:
        cleaned = _non_empty(rules, nullable)
    else:  # (most grammars: every rule is non-empty as it is)
        cleaned = {name: list(dict.fromkeys(alts)) for name, alts in rules.items()}
    result = Rewritten(start_nullable=start in nullable)
    if start not in cleaned:  # the start matches only the empty text
        return result
    alts = {name: cleaned[name] for name in _reachable(cleaned, start)}
    tails: dict[str, list[Alternative]] = {name: [] for name in alts}

    # (3) left recursion, one cycle of the left-corner graph at a time
    corners = {name: sorted({alt[0][1] for alt in a if alt[0][0] == "n"})
               for name, a in alts.items()}
    total = sum(len(a) for a in alts.values())
    for scc in cycles(corners):
        for i, name in enumerate(scc):
            new: list[Alternative] = []
            for alt in alts[name]:
                new.extend(_substitute(alt, scc[:i], alts, tails))
            new = list(dict.fromkeys(new))
            recursive = [alt[1:] for alt in new if alt[0] == ("n", name)]
            alts[name] = [alt for alt in new if alt[0] != ("n", name)]
            # a tail that is empty is a unit cycle (A -> A): it adds no text
            tails[name] = list(dict.fromkeys(t for t in recursive if t))
            total += len(alts[name]) + len(tails[name])
            if total > MAX_ALTERNATIVES:
                raise GrammarError(
                    f"removing the left recursion through rule {name!r} needs more than "
                    f"{MAX_ALTERNATIVES} alternatives (MAX_ALTERNATIVES)")
    result.alternatives, result.tails = alts, tails
    return result


def _non_empty(rules: dict[str, list[Alternative]], nullable: set[str]
               ) -> dict[str, list[Alternative]]:
    """Step (2) of `rewrite`: each rule's non-empty texts (("n", A) stands for A minus the
    empty text), those of rules whose only text is the empty one left out."""
    plus: dict[str, list[Alternative]] = {}
    for name, alts in rules.items():
        out: dict[Alternative, None] = {}
        for alt in alts:
            for k, (kind, sym) in enumerate(alt):
                rest = tuple(("o", s) if kind2 == "n" and s in nullable else (kind2, s)
                             for kind2, s in alt[k + 1:])
                out[((kind, sym),) + rest] = None
                if not (kind == "n" and sym in nullable):
                    break
        plus[name] = list(out)
    # rules whose only text is the empty one: ("n", A) is impossible, ("o", A) is nothing
    nonempty = _productive(
        {name: [tuple(s for s in alt if s[0] != "o") for alt in alts]
         for name, alts in plus.items()})
    cleaned: dict[str, list[Alternative]] = {}
    for name in nonempty:
        cleaned[name] = []
        for alt in plus[name]:
            if all(kind != "n" or s in nonempty for kind, s in alt):
                kept = tuple((kind, s) for kind, s in alt if kind != "o" or s in nonempty)
                cleaned[name].append(kept)
    return cleaned


def _substitute(alt: Alternative, earlier: list[str], alts: dict[str, list[Alternative]],
                tails: dict[str, list[Alternative]]) -> list[Alternative]:
    """Expand a leading nonterminal processed earlier in the cycle, until none leads."""
    out, todo = [], [alt]
    while todo:
        cur = todo.pop()
        head = cur[0]
        if head[0] == "n" and head[1] in earlier:
            loop: Alternative = (("l", head[1]),) if tails[head[1]] else ()
            todo.extend(b + loop + cur[1:] for b in alts[head[1]])
            if len(todo) + len(out) > MAX_ALTERNATIVES:
                raise GrammarError(
                    f"removing the left recursion through rule {head[1]!r} needs more than "
                    f"{MAX_ALTERNATIVES} alternatives (MAX_ALTERNATIVES)")
        else:
            out.append(cur)
    return out


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of `graph` that contain a cycle (Tarjan, iterative).

    Args:
        graph: every node with its successors; every successor is a key too.

    Returns:
        The components, each sorted.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = graph[node]
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1 or node in graph[node]:
                    out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def post_order(graph: dict[str, list[str]], start: str) -> list[str]:
    """The nodes reachable from `start` in `graph` (each node's successors), each after its
    successors but for cycles (an iterative depth-first search)."""
    order: list[str] = []
    seen = {start}
    work = [(start, iter(graph.get(start, ())))]
    while work:
        name, todo = work[-1]
        for nxt in todo:
            if nxt not in seen and nxt in graph:
                seen.add(nxt)
                work.append((nxt, iter(graph[nxt])))
                break
        else:
            work.pop()
            order.append(name)
    return order if start in graph else []
