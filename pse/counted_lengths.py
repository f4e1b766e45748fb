"""Counted lengths of an automaton's matches: how many counted steps (characters completed,
say) lie between each state and acceptance, and the fewest and most on a whole match. For
string lengths counted at run time (`CharCountedTerminal`, minLength / maxLength past what is
unrolled into the automaton)."""

from __future__ import annotations

from collections import deque
from typing import Sequence

import numpy as np

from pse.automaton import DFA, peel_order
from pse.bounded_cache import BoundedCache
from pse.errors import GrammarError

# The distances count_lengths tabulates exactly; beyond it they must have settled.
LENGTH_BITS = 64
# count_lengths' tables by (automaton, counted flags): a pattern and a maxLength met in many
# properties, or in many schemas, are tabulated once
_LENGTHS = BoundedCache(256)


def count_lengths(dfa: DFA, counts: Sequence[bool]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """For each state, the numbers L of counted steps (edges into a state of `counts`, say
    characters completed) on the paths from it to an accepting state: bit L of the first
    tuple for L < LENGTH_BITS, and whether every larger L is one, in the second. The sets
    A_L of states L counted steps from acceptance follow one another by a fixed rule, so
    once A_64 equals A_65 they stay so.

    Raises:
        GrammarError: the sets have not settled by then (lengths with a period, as of (aa)*,
            or a bounded part past LENGTH_BITS, as of a{1,100}).
    """
    key = (dfa.key(), tuple(bool(c) for c in counts))
    found = _LENGTHS.get(key)
    if found is None:
        found = _count_lengths(dfa, counts)
        _LENGTHS.put(key, found)
    return found


def _count_lengths(dfa: DFA, counts: Sequence[bool]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    # the edges as (state, target) pairs, each pair once (as one number each: sorting rows
    # of two is several times slower): a step is a gather over them (an automaton of
    # thousands of states, as a long pattern's, has a few edges per state)
    n = dfa.n_states
    flat = np.fromiter((s * n + t for s, row in enumerate(dfa.trans) for _, _, t in row),
                       dtype=np.int64)
    flat.sort()  # (np.unique would do; its first call imports numpy.ma, 10 ms)
    pairs = flat[np.concatenate(([True], flat[1:] != flat[:-1]))] if len(flat) else flat
    src, dst = pairs // n, pairs % n
    counted = np.asarray(counts, dtype=bool)[dst]
    src1, dst1 = src[counted], dst[counted]    # edges that count
    src0, dst0 = src[~counted], dst[~counted]  # edges inside a character

    def before(reach: np.ndarray, at: np.ndarray, to: np.ndarray) -> np.ndarray:
        out = np.zeros(n, dtype=bool)
        out[at[reach[to]]] = True
        return out

    def through_uncounted(reach: np.ndarray) -> np.ndarray:
        while True:
            more = reach | before(reach, src0, dst0)
            if (more == reach).all():
                return reach
            reach = more

    bits = np.zeros(n, dtype=np.uint64)
    reach = through_uncounted(np.asarray(dfa.accept, dtype=bool))
    for length in range(LENGTH_BITS):
        after = through_uncounted(before(reach, src1, dst1))
        if (after == reach).all():  # settled early: every longer length is as this one
            rest = np.uint64(((1 << LENGTH_BITS) - 1) ^ ((1 << length) - 1))
            bits |= reach.astype(np.uint64) * rest
            break
        bits |= reach.astype(np.uint64) << np.uint64(length)
        reach = after
    else:
        after = through_uncounted(before(reach, src1, dst1))
    if not (after == reach).all():
        raise GrammarError(f"the lengths of its matches do not settle within {LENGTH_BITS} "
                           "characters (they go by steps of several characters, or a part "
                           f"of the pattern bounded past {LENGTH_BITS} characters sets them)")
    return tuple(int(b) for b in bits), tuple(bool(r) for r in reach)


def count_range(dfa: DFA, counts: Sequence[bool]) -> tuple[int, int | None]:
    """The fewest and the most counted steps (see count_lengths) on a path from the start to
    an accepting state; the most is None when a cycle makes matches unbounded."""
    weight = [int(bool(c)) for c in counts]
    succ = [sorted({t for _, _, t in row}) for row in dfa.trans]
    # fewest: a breadth-first search where uncounted edges cost nothing
    best = [-1] * len(succ)
    best[0] = 0
    todo = deque([0])
    while todo:
        s = todo.popleft()
        for t in succ[s]:
            d = best[s] + weight[t]
            if best[t] < 0 or d < best[t]:
                best[t] = d
                if weight[t]:
                    todo.append(t)
                else:
                    todo.appendleft(t)
    fewest = min(best[s] for s in range(len(succ)) if dfa.accept[s] and best[s] >= 0)
    # most: the longest path, in an order where every edge goes forward (none: a cycle)
    order = peel_order(succ)
    if len(order) < len(succ):
        return fewest, None
    most = [-1] * len(succ)
    most[0] = 0
    for s in order:
        if most[s] >= 0:
            for t in succ[s]:
                most[t] = max(most[t], most[s] + weight[t])
    return fewest, max(most[s] for s in range(len(succ)) if dfa.accept[s] and most[s] >= 0)
