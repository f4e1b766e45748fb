"""pse._core.rules.reduce_rule against a plain Python oracle and against the language of the
rule: random rule graphs (edges labelled by terminal and guard, calls labelled by rule,
epsilon edges), some of whose callees match nothing."""

import random

import pytest

from helpers import reachable
from pse._core.rules import reduce_rule

MERGE_LIMIT = 5_000
MAX_EDGES = 2_000_000


def random_rule(rng: random.Random, n: int):
    """A rule of n nodes, each a copy of one of fewer base nodes (copies of a node have the
    same labels into copies of the same targets: twins, as inlining makes them), with some
    edges changed at random (twins no more) and some dead ends."""
    m = rng.randint(1, max(1, n // 2))
    base = [[(rng.choice(("t", "c")), rng.randrange(2), rng.randrange(m))
             for _ in range(rng.choice((0, 1, 1, 2)))] for _ in range(m)]
    copy_of = [k % m for k in range(n)]
    rng.shuffle(copy_of)
    copies = [[s for s in range(n) if copy_of[s] == k] or [0] for k in range(m)]
    terms = [[] for _ in range(n)]
    calls = [[] for _ in range(n)]
    for s in range(n):
        for kind, label, target in base[copy_of[s]]:
            t = rng.choice(copies[target])
            if rng.random() < 0.1:  # noise
                kind, label, t = rng.choice(("t", "c")), rng.randrange(3), rng.randrange(n)
            if kind == "t":
                terms[s].append((label, t, rng.choice((0, 0, 0, 5)) if rng.random() < 0.2 else 0))
            else:
                calls[s].append((label, t))
    eps = [[rng.randrange(n) for _ in range(rng.choice((0, 0, 0, 1, 2)))] for _ in range(n)]
    ends = {s for s in range(n) if copy_of[s] == 0 or rng.random() < 0.05}
    productive = bytes(rng.random() < 0.8 for _ in range(3))
    return eps, terms, calls, ends, rng.randrange(n), productive


def edges(terms, calls, s):
    """Node s's edges as (label, target); a label is ("t", terminal, guard) or ("c", rule)."""
    return ([(("t", tid, g), t) for tid, t, g in terms[s]]
            + [(("c", r), t) for r, t in calls[s]])


def without_epsilons(eps, terms, calls, ends, productive):
    """Each node takes the edges (but calls of unproductive rules) and the end flags of the
    nodes its epsilon edges reach."""
    n = len(terms)
    closure = [reachable(eps, [s]) for s in range(n)]
    new_terms = [[e for k in closure[s] for e in terms[k]] for s in range(n)]
    new_calls = [[(r, t) for k in closure[s] for r, t in calls[k] if productive[r]]
                 for s in range(n)]
    return new_terms, new_calls, {s for s in range(n) if closure[s] & ends}


def oracle(eps, terms, calls, ends, start, productive):
    """Epsilons gone, then the live nodes (start first, then in order), then the coarsest
    bisimulation by refining {ends, others} until no class splits; one node per class,
    numbered as reduce_rule does."""
    terms, calls, ends = without_epsilons(eps, terms, calls, ends, productive)
    n = len(terms)
    succ = [[t for _, t in edges(terms, calls, s)] for s in range(n)]
    pred = [[] for _ in range(n)]
    for s in range(n):
        for t in succ[s]:
            pred[t].append(s)
    live = reachable(succ, [start]) & reachable(pred, ends)
    if start not in live:
        return None
    order = [start] + sorted(live - {start})
    new = {s: k for k, s in enumerate(order)}
    out_edges = [[(lab, new[t]) for lab, t in edges(terms, calls, s) if t in new] for s in order]
    is_end = [s in ends for s in order]
    cls = list(is_end)
    while True:
        sigs = {}
        nxt = [sigs.setdefault((cls[s], frozenset((lab, cls[t]) for lab, t in out_edges[s])),
                               len(sigs)) for s in range(len(order))]
        if len(sigs) == len(set(cls)):
            break
        cls = nxt
    number, rep = {}, []
    for s in range(len(order)):
        if cls[s] not in number:
            number[cls[s]] = len(rep)
            rep.append(s)
    out_terms = [sorted({(lab[1], number[cls[t]], lab[2]) for lab, t in out_edges[s]
                         if lab[0] == "t"}) for s in rep]
    out_calls = [sorted({(lab[1], number[cls[t]]) for lab, t in out_edges[s] if lab[0] == "c"})
                 for s in rep]
    return out_terms, out_calls, {number[cls[s]] for s in range(len(order)) if is_end[s]}


def words(eps, terms, calls, ends, start, productive, length):
    """Every label sequence of at most `length` labels that leads from start to an end
    (calling only productive rules)."""
    terms, calls, ends = without_epsilons(eps, terms, calls, ends, productive)
    found, layer = set(), {((), start)}
    for _ in range(length + 1):
        found |= {w for w, s in layer if s in ends}
        layer = {(w + (lab,), t) for w, s in layer for lab, t in edges(terms, calls, s)}
    return found


def no_eps(n):
    return [[] for _ in range(n)]


@pytest.mark.parametrize("seed", range(300))
def test_reduce_rule_matches_the_oracle_and_keeps_the_language(seed):
    rng = random.Random(seed)
    eps, terms, calls, ends, start, productive = random_rule(rng, rng.randint(1, 14))
    expected = oracle(eps, terms, calls, ends, start, productive)
    if expected is None:
        with pytest.raises(ValueError):
            reduce_rule(eps, terms, calls, start, ends, productive, MERGE_LIMIT, MAX_EDGES)
        return
    got = reduce_rule(eps, terms, calls, start, ends, productive, MERGE_LIMIT, MAX_EDGES)
    assert got == expected
    new_terms, new_calls, new_ends = got
    n = len(new_terms)
    assert (words(no_eps(n), new_terms, new_calls, new_ends, 0, productive, 6)
            == words(eps, terms, calls, ends, start, productive, 6))
    # minimal: reducing the result again changes nothing
    assert reduce_rule(no_eps(n), new_terms, new_calls, 0, new_ends, productive,
                       MERGE_LIMIT, MAX_EDGES) == got


def chains_of_twins(rng: random.Random, length: int):
    """Copies of one chain of `length` nodes with few labels (so telling its nodes apart
    takes a round per node), each copy a little changed at random, their last nodes ends."""
    labels = [rng.randrange(2) for _ in range(length)]
    n, terms, ends = 1, [[]], set()
    for _ in range(rng.randint(2, 4)):
        first = n
        terms += [[] for _ in range(length)]
        n += length
        terms[0].append((labels[0], first, 0))
        for k in range(length - 1):
            label = labels[k + 1] if rng.random() < 0.97 else 2
            terms[first + k].append((label, first + k + 1, 0))
            if rng.random() < 0.05:  # a jump back: a cycle
                terms[first + k].append((label, first + rng.randrange(k + 1), 0))
        ends.add(first + length - 1)
    return no_eps(n), terms, no_eps(n), ends, 0, b""


@pytest.mark.parametrize("seed", range(60))
def test_reduce_rule_matches_the_oracle_on_long_refinements(seed):
    rng = random.Random(seed)
    if seed % 2:
        eps, terms, calls, ends, start, productive = random_rule(rng, rng.randint(20, 120))
    else:
        eps, terms, calls, ends, start, productive = chains_of_twins(rng, rng.randint(5, 60))
    expected = oracle(eps, terms, calls, ends, start, productive)
    if expected is None:
        return
    got = reduce_rule(eps, terms, calls, start, ends, productive, MERGE_LIMIT, MAX_EDGES)
    assert got == expected


def test_reduce_rule_past_the_merge_limit_only_drops_dead_nodes():
    # 0 -a-> 1 -b-> 3(end), 0 -a-> 2 -b-> 3: nodes 1 and 2 are twins; 4 is dead
    terms = [[(0, 1, 0), (0, 2, 0)], [(1, 3, 0)], [(1, 3, 0)], [], [(0, 3, 0)]]
    calls, eps, yes = no_eps(5), no_eps(5), b"\1"
    assert reduce_rule(eps, terms, calls, 0, {3}, yes, 5_000, MAX_EDGES) == (
        [[(0, 1, 0)], [(1, 2, 0)], []], [[], [], []], {2})
    assert reduce_rule(eps, terms, calls, 0, {3}, yes, 2, MAX_EDGES) == (
        [[(0, 1, 0), (0, 2, 0)], [(1, 3, 0)], [(1, 3, 0)], []], [[], [], [], []], {3})


def test_reduce_rule_refuses_what_it_cannot_number():
    with pytest.raises(ValueError, match="out of range"):
        reduce_rule([[]], [[(1 << 40, 0, 0)]], [[]], 0, {0}, b"\1", MERGE_LIMIT, MAX_EDGES)
    with pytest.raises(ValueError):
        reduce_rule([[]], [[]], [[]], 3, {0}, b"\1", MERGE_LIMIT, MAX_EDGES)
    with pytest.raises(ValueError):  # an edge to a node that is not there
        reduce_rule([[]], [[(0, 7, 0)]], [[]], 0, {0}, b"\1", MERGE_LIMIT, MAX_EDGES)
    with pytest.raises(ValueError):
        reduce_rule([[5]], [[]], [[]], 0, {0}, b"\1", MERGE_LIMIT, MAX_EDGES)


def twin_chains(length: int):
    """start -a-> ... -a-> end along two chains of `length` nodes: each node has a twin."""
    n = 2 * length + 2
    terms = [[] for _ in range(n)]
    for chain in range(2):
        nodes = [0] + [2 + chain * length + k for k in range(length)] + [1]
        for a, b in zip(nodes, nodes[1:]):
            terms[a].append((0, b, 0))
    return no_eps(n), terms, no_eps(n), 0, {1}, b"", n


def test_reduce_rule_merges_twin_chains():
    eps, terms, calls, start, ends, productive, n = twin_chains(100)
    new_terms, _, new_ends = reduce_rule(eps, terms, calls, start, ends, productive,
                                         MERGE_LIMIT, MAX_EDGES)
    assert len(new_terms) == 102 and new_ends == {1}  # (numbered by first old node)


def test_reduce_rule_merges_long_twin_chains():
    # a round of the merge per node of a chain, and a round looks at the nodes next to the
    # ones it split off: 4,000 rounds of a few nodes each
    eps, terms, calls, start, ends, productive, n = twin_chains(4_000)
    new_terms, _, new_ends = reduce_rule(eps, terms, calls, start, ends, productive,
                                         100_000, MAX_EDGES)
    assert len(new_terms) == 4_002 and new_ends == {1}


def test_reduce_rule_gives_up_merging_where_it_would_take_too_long():
    # twin chains and a node with an edge into every chain node: each of the 6,000 rounds
    # signs that node's 12,000 edges, past the merge's budget; the rule stays as it is
    eps, terms, calls, start, ends, productive, n = twin_chains(6_000)
    hub = n
    terms = terms + [[(2, t, 0) for t in range(2, n)]]
    terms[start].append((1, hub, 0))
    eps, calls = no_eps(n + 1), no_eps(n + 1)
    new_terms, _, new_ends = reduce_rule(eps, terms, calls, start, ends, productive,
                                         100_000, MAX_EDGES)
    assert len(new_terms) == n + 1 and len(new_ends) == 1  # live and correct, not merged
    assert sorted(len(row) for row in new_terms) == [0] + [1] * (n - 2) + [3, n - 2]
    # ... and with a smaller chain, the same shape merges
    eps, terms, calls, start, ends, productive, n = twin_chains(1_000)
    terms = terms + [[(2, t, 0) for t in range(2, n)]]
    terms[start].append((1, n, 0))
    new_terms, _, _ = reduce_rule(no_eps(n + 1), terms, no_eps(n + 1), start, ends, productive,
                                  100_000, MAX_EDGES)
    assert len(new_terms) == 1_003


def test_reduce_rule_refuses_too_many_edges_once_epsilons_are_gone():
    # a chain of n optional parts: node k takes the edges of every node after it
    n = 300
    terms = [[(0, k + 1, 0)] for k in range(n)] + [[]]
    eps = [[k + 1] for k in range(n)] + [[]]
    reduce_rule(eps, terms, no_eps(n + 1), 0, {n}, b"", MERGE_LIMIT, n * n)
    with pytest.raises(OverflowError, match="more than 1000 edges"):
        reduce_rule(eps, terms, no_eps(n + 1), 0, {n}, b"", MERGE_LIMIT, 1000)
    # the same edge brought by two nodes an epsilon reaches counts once
    eps, terms = [[1, 2], [], [], []], [[], [(0, 3, 0)], [(0, 3, 0)], []]
    assert reduce_rule(eps, terms, no_eps(4), 0, {3}, b"", MERGE_LIMIT, 1) == (
        [[(0, 1, 0)], []], [[], []], {1})
