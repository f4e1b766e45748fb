import pytest

from helpers import check_boundaries
from pse import Chain, GrammarError, Phrase, Whitespace


def test_defaults_zero_to_twenty():
    w = Whitespace()
    assert w.matches("")
    assert w.matches(" \t\n\r")
    assert w.matches(" " * 20)
    assert not w.matches(" " * 21)
    assert not w.matches("x")


def test_bounds():
    w = Whitespace(min_length=1, max_length=2)
    assert not w.matches("")
    assert w.matches(" \n")
    assert not w.matches("   ")


def test_between_phrases():
    m = Chain(Phrase("a"), Whitespace(), Phrase("b"))
    for text, ok in [("ab", True), ("a b", True), ("a \n\t b", True), ("a x b", False)]:
        assert m.matches(text) == ok
        check_boundaries(m, text)


def test_bad_arguments():
    with pytest.raises(GrammarError):
        Whitespace(min_length=5, max_length=1)
