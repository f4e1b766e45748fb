"""Products of automata: intersections and differences, each computed once per operands'
content (a JSON Schema whose unions multiply out intersects the same automata many times)."""

from __future__ import annotations

from pse import limits
from pse._core.automata import product
from pse.automaton import DFA
from pse.bounded_cache import BoundedCache
from pse.errors import GrammarError

# A product of two automata with more states than this is refused (compile time and memory).
MAX_PRODUCT_STATES = 20_000


def _product(a: DFA, b: DFA, difference: bool) -> DFA:
    """The product, trimmed (`_core.automata.product`): the intersection, or a less b.

    Raises:
        GrammarError: more than MAX_PRODUCT_STATES states.
    """
    made = product(a.trans, a.accept, b.trans, b.accept, difference, MAX_PRODUCT_STATES,
                   limits.check_budget)
    if made is None:
        raise GrammarError(f"combining two automata needs more than {MAX_PRODUCT_STATES} "
                           "states (MAX_PRODUCT_STATES)")
    return DFA(*made)  # (trimmed, not minimized: that would cost more than the extra states)


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
        found = _product(a, b, is_difference)
        _PRODUCTS.put(key, found)
    return found
