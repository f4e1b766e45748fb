from helpers import check_boundaries
from pse import Chain, Optional, Phrase


def test_optional():
    m = Chain(Phrase("a"), Optional(Phrase("b")), Phrase("c"))
    assert m.matches("ac") and m.matches("abc")
    assert not m.matches("abbc")
    check_boundaries(m, "abc")


def test_optional_alone_matches_empty():
    assert Optional(Phrase("x")).matches("")
    assert Optional(Phrase("x")).matches("x")


def test_optional_of_optional():
    m = Optional(Optional(Phrase("x")))
    assert m.matches("") and m.matches("x") and not m.matches("xx")
