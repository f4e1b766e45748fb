import pytest

from helpers import check_boundaries
from pse import AnyOf, Chain, Forward, GrammarError, Loop, Optional, Phrase


def nested_brackets():
    expr = Forward()
    expr.set(AnyOf(Phrase("x"), Chain(Phrase("["), Loop(expr, 0, None, separator=Phrase(",")),
                                      Phrase("]"))))
    return expr


def test_recursion():
    m = nested_brackets()
    for text in ["x", "[]", "[x]", "[x,[x,[]],x]", "[[[[[[[[[[x]]]]]]]]]]"]:
        assert m.matches(text), text
    for text in ["", "[", "[x,]", "[[x]", "xx", "]"]:
        assert not m.matches(text), text
    check_boundaries(m, "[x,[x,[]],x]")


def test_deep_nesting():
    m = nested_brackets()
    assert m.matches("[" * 500 + "x" + "]" * 500)
    assert m.matches("[" * 500, partial=True)
    assert not m.matches("[" * 500 + "x" + "]" * 499)


def test_unset_forward():
    with pytest.raises(GrammarError, match="never set"):
        Chain(Phrase("a"), Forward()).compile()


def test_set_twice():
    f = Forward().set(Phrase("a"))
    with pytest.raises(GrammarError, match="already set"):
        f.set(Phrase("b"))


def test_no_base_case_matches_nothing():
    f = Forward()
    f.set(Chain(Phrase("a"), f))
    with pytest.raises(GrammarError, match="matches nothing"):
        f.compile()


def test_unproductive_branch_is_trimmed():
    f = Forward()
    f.set(Chain(Phrase("a"), f))
    m = AnyOf(Phrase("b"), f)
    assert m.matches("b")
    assert not m.matches("a", partial=True)  # no dead end: "a" can never complete


def test_left_recursion_is_reported():
    f = Forward()
    f.set(AnyOf(Chain(f, Phrase("+")), Phrase("x")))
    with pytest.raises(GrammarError, match="left recursion"):
        f.compile()


def test_nullable_recursion():
    f = Forward()
    f.set(Optional(Chain(Phrase("("), f, Phrase(")"), f)))
    for text, ok in [("", True), ("()", True), ("(())()", True), ("(()", False)]:
        assert f.matches(text) == ok
