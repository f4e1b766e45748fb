import pytest

from helpers import check_boundaries
from pse import Chain, Character, GrammarError, Optional, Phrase


def test_sequence():
    m = Chain(Phrase("a"), Character("0123456789"), Phrase("z"))
    assert m.matches("a123z")
    assert not m.matches("az")
    assert not m.matches("a1")
    assert m.matches("a1", partial=True)
    check_boundaries(m, "a123z")


def test_plus_operator_and_strings():
    m = Phrase("x") + "y" + Phrase("z")
    assert isinstance(m, Chain)
    assert m.matches("xyz")
    assert ("w" + Phrase("x")).matches("wx")


def test_empty_chain_matches_empty():
    assert Chain().matches("")
    assert not Chain().matches("a")


def test_ambiguous_boundary_between_runs():
    # where the a-run ends is ambiguous; both readings stay live
    m = Chain(Character("a"), Character("ab"))
    assert m.matches("aaab") and m.matches("aa")
    assert not m.matches("a")
    check_boundaries(m, "aaabab")


def test_nested_optional_parts():
    m = Chain(Optional(Phrase("-")), Character("0123456789"))
    assert m.matches("-5") and m.matches("5") and not m.matches("-")


def test_bad_argument():
    with pytest.raises(GrammarError, match="Chain argument 1"):
        Chain(Phrase("a"), 3)
