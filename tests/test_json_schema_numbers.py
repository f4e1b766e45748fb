"""JSON Schema numbers: integer and number ranges, multipleOf, decimals."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st

from pse import JsonSchema, SchemaError, products
from pse.json_schema import integer_pattern, integer_range_dfa, number_range_dfa
from pse.regex import compile_regex


def test_integers_written_with_a_zero_fraction():
    m = JsonSchema({"type": "integer", "minimum": 1})
    assert m.matches("1.0") and m.matches("12.000") and not m.matches("1.5")
    assert not m.matches("0.0") and not m.matches("1.")
    draft4 = JsonSchema({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"})
    assert draft4.matches("1") and not draft4.matches("1.0")  # draft 4: 1.0 is a number


@pytest.mark.parametrize("lo, hi", [(None, None), (0, None), (None, 0), (-17, 42), (5, 5),
                                    (-1000, -3), (99, 1001), (None, -10), (7, None)])
@pytest.mark.parametrize("build", ["pattern", "digits"])
def test_integer_ranges(lo, hi, build):
    dfa = (compile_regex(integer_pattern(lo, hi)) if build == "pattern"
           else integer_range_dfa(lo, hi))
    for n in list(range(-1200, 1200)) + [10**12, -10**12]:
        inside = (lo is None or n >= lo) and (hi is None or n <= hi)
        assert dfa.matches(str(n).encode()) == inside, n
    assert not dfa.matches(b"01") and not dfa.matches(b"-")
    assert not dfa.matches(b"-00") and not dfa.matches(b"")
    assert dfa.matches(b"-0") == ((lo is None or lo <= 0) and (hi is None or hi >= 0))


def _empty(dfa) -> bool:
    return not any(dfa.accept)


integer_bounds = st.one_of(st.none(), st.integers(-10**7, 10**7),
                           st.integers(0, 7).map(lambda k: 10**k),
                           st.integers(0, 7).map(lambda k: -10**k),
                           st.integers(-10**20, 10**20))


@given(integer_bounds, integer_bounds, st.lists(st.integers(-10**21, 10**21), max_size=20))
def test_integer_range_dfa_is_the_minimal_automaton_of_the_pattern(lo, hi, samples):
    """Built digit by digit, the automaton of integer_pattern's language (the pattern read by
    the regex compiler is the independent construction), as small, and right on samples."""
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    direct, read = integer_range_dfa(lo, hi), compile_regex(integer_pattern(lo, hi))
    assert _empty(products.difference(direct, read)) and _empty(products.difference(read, direct))
    assert direct.n_states == read.n_states
    for n in [*samples, *(x + d for x in (lo, hi) if x is not None for d in (-1, 0, 1))]:
        inside = (lo is None or n >= lo) and (hi is None or n <= hi)
        assert direct.matches(str(n).encode()) == inside, n


def test_integers_of_a_schema_with_and_without_a_zero_fraction():
    m = JsonSchema({"type": "integer", "minimum": -3, "maximum": 120})
    assert m.matches("-3") and m.matches("120.00") and m.matches("-0.0")
    assert not m.matches("121") and not m.matches("-4.0") and not m.matches("7.")
    draft4 = JsonSchema({"$schema": "http://json-schema.org/draft-04/schema#",
                         "type": "integer", "minimum": -3, "maximum": 120})
    assert draft4.matches("120") and not draft4.matches("120.0")


decimals = st.decimals(min_value=-500, max_value=500, allow_nan=False, places=3)


bounds = st.one_of(st.none(), st.tuples(decimals, st.booleans()))


number_texts = st.one_of(
    st.decimals(min_value=-600, max_value=600, allow_nan=False, places=4).map(
        lambda d: format(d, "f")),
    st.integers(-600, 600).map(str),
)


@given(bounds, bounds, st.lists(number_texts, min_size=1, max_size=30))
def test_number_ranges_against_decimal(lo, hi, texts):
    dfa = number_range_dfa(lo, hi)
    for text in texts:
        if text.startswith("-0") and len(text) > 2 and text[2] != ".":
            continue
        v = Decimal(text)
        inside = (lo is None or (v > lo[0] if lo[1] else v >= lo[0])) and \
            (hi is None or (v < hi[0] if hi[1] else v <= hi[0]))
        assert dfa.matches(text.encode()) == inside, (lo, hi, text)


large = st.integers(-10**320, 10**320).map(lambda n: Decimal(n).scaleb(-2))


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.none(), st.tuples(large, st.booleans())),
       st.one_of(st.none(), st.tuples(large, st.booleans())),
       st.lists(st.tuples(large, st.sampled_from(["0", "0.01", "-0.01", "1", "-1", "0.001"])),
                min_size=1, max_size=20))
def test_large_number_ranges_against_decimal(lo, hi, near):
    """Bounds of up to 320 digits (a bound of 1e308, a double's range, passed the automaton
    limits when the integer parts were a regex): numbers at, just past and far from them."""
    dfa = number_range_dfa(lo, hi)
    for v in [d + Decimal(delta) for d, delta in near] + [b[0] for b in (lo, hi) if b]:
        text = format(v, "f")
        inside = (lo is None or (v > lo[0] if lo[1] else v >= lo[0])) and \
            (hi is None or (v < hi[0] if hi[1] else v <= hi[0]))
        assert dfa.matches(text.encode()) == inside, (lo, hi, text)


def test_a_double_range_in_a_schema():
    m = JsonSchema({"type": "number", "minimum": -1.7976931348623157e308,
                    "maximum": 1.7976931348623157e308})
    assert m.matches("1" + "0" * 308) and m.matches("-17976931348623157" + "0" * 292 + ".0")
    assert not m.matches("2" + "0" * 308) and not m.matches("-17976931348623157" + "0" * 292 + ".5")


def test_number_bounds_in_a_schema():
    m = JsonSchema({"type": "number", "minimum": 0, "exclusiveMaximum": 1.5})
    for text, ok in [("0", True), ("-0", True), ("1.49", True), ("1.5", False), ("-0.01", False),
                     ("1", True), ("0.0", True)]:
        assert m.matches(text) == ok, text
    with pytest.raises(SchemaError):
        JsonSchema({"type": "number", "minimum": 2, "maximum": 1})


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["1", "3", "7", "0.5", "0.01", "1.5", "0.3", "12.25", "100"]),
       st.integers(-10**6, 10**6), st.integers(0, 5), st.integers(0, 3), st.booleans())
def test_multiple_of_against_decimal(m, n, shift, zeros, snap):
    from pse.json_schema import multiple_of_dfa

    x = Decimal(n).scaleb(-shift)
    if snap:
        x = (x // Decimal(m)) * Decimal(m)
    text = format(x, "f")
    if zeros:
        text += ("" if "." in text else ".") + "0" * zeros
    expected = Decimal(text) % Decimal(m) == 0
    assert multiple_of_dfa(Decimal(m)).matches(text.encode()) == expected


def test_multiple_of_in_a_schema():
    machine = JsonSchema({"type": "integer", "multipleOf": 3, "minimum": 0, "maximum": 20})
    assert [n for n in range(-5, 30) if machine.matches(str(n))] == list(range(0, 21, 3))
    machine = JsonSchema({"type": "number", "multipleOf": 0.25, "maximum": 1})
    assert [machine.matches(t) for t in ["0.75", "1.25", "0.3", "-7.75", "1.0"]] == \
        [True, False, False, True, True]
