"""Products of automata: intersections and differences, each computed once per operands'
content (a JSON Schema whose unions multiply out intersects the same automata many times)."""

from __future__ import annotations

from pse import limits
from pse.automaton import DFA, paired_ranges, trim
from pse.bounded_cache import BoundedCache
from pse.errors import GrammarError

# A product of two automata with more states than this is refused (compile time and memory).
MAX_PRODUCT_STATES = 20_000


def _product(a: DFA, b: DFA, accept, keep_dead_b: bool) -> DFA:
    """BFS over pairs of states; b's missing edges lead to -1 (a dead b) when keep_dead_b.

    Raises:
        GrammarError: more than MAX_PRODUCT_STATES states.
    """
    index = {(0, 0): 0}
    pairs = [(0, 0)]
    trans: list[list[tuple[int, int, int]]] = []
    accepts: list[bool] = []
    i = 0
    while i < len(pairs):
        limits.check_budget()
        s1, s2 = pairs[i]
        i += 1
        accepts.append(accept(a.accept[s1], s2 >= 0 and b.accept[s2]))
        row: list[tuple[int, int, int]] = []
        for lo, hi, t1, t2 in paired_ranges(a.trans[s1], b.trans[s2] if s2 >= 0 else []):
            if t2 < 0 and not keep_dead_b:
                continue
            j = index.get((t1, t2))
            if j is None:
                j = index[(t1, t2)] = len(pairs)
                pairs.append((t1, t2))
                if len(pairs) > MAX_PRODUCT_STATES:
                    raise GrammarError(f"combining two automata needs more than "
                                       f"{MAX_PRODUCT_STATES} states (MAX_PRODUCT_STATES)")
            if row and row[-1][2] == j and row[-1][1] == lo - 1:
                row[-1] = (row[-1][0], hi, j)
            else:
                row.append((lo, hi, j))
        trans.append(row)
    return trim(DFA(trans, accepts))  # minimizing costs more than the extra states


def intersect(a: DFA, b: DFA) -> DFA:
    """A DFA for the texts both `a` and `b` match."""
    return _cached_product(a, b, False)


def difference(a: DFA, b: DFA) -> DFA:
    """A DFA for the texts `a` matches and `b` does not."""
    return _cached_product(a, b, True)


# Products by their operands' content (and kind): a JSON Schema whose unions multiply out
# (`oneOf` branches each carrying the others' opposites) intersects the same key automata in
# every copy of an object; one of the maskbench schemas made 43,835 products, 749 of them
# distinct. Each is computed once and shared, so the copies hold one automaton, not many.
_PRODUCTS = BoundedCache(1024)


def _cached_product(a: DFA, b: DFA, is_difference: bool) -> DFA:
    key = (is_difference, a.key(), b.key())
    found = _PRODUCTS.get(key)
    if found is None:
        if is_difference:
            found = _product(a, b, lambda x, y: x and not y, keep_dead_b=True)
        else:
            found = _product(a, b, lambda x, y: x and y, keep_dead_b=False)
        _PRODUCTS.put(key, found)
    return found
