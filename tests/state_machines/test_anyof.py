import pytest

from helpers import check_boundaries, run_tokens
from pse import AnyOf, Character, GrammarError, Phrase


def test_alternatives():
    m = AnyOf(Phrase("cat"), Phrase("car"), Phrase("dog"))
    for text in ["cat", "car", "dog"]:
        assert m.matches(text)
    for text in ["ca", "cow", "cats", ""]:
        assert not m.matches(text)
    check_boundaries(m, "car")


def test_or_operator():
    m = Phrase("a") | Phrase("b") | "c"
    assert isinstance(m, AnyOf)
    assert all(m.matches(x) for x in "abc")


def test_parallel_exploration_of_prefix_sharing_alternatives():
    m = AnyOf(Phrase("ab"), Phrase("abc"))
    assert m.matches("ab") and m.matches("abc")
    live = run_tokens(m, ["ab"])
    assert any(s.has_reached_accept_state() for s in live)
    assert any(s.can_accept_more_input() for s in live)


def test_identical_alternatives_are_merged():
    m = AnyOf(Character("a"), Character("a"), Character("a"))
    assert len(run_tokens(m, ["aaaa"])) == 1


def test_empty_anyof_is_an_error():
    with pytest.raises(GrammarError, match="machines is empty"):
        AnyOf()
