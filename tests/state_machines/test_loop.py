import pytest

from helpers import check_boundaries, run_tokens
from pse import Character, GrammarError, Loop, Optional, Phrase, Whitespace


@pytest.mark.parametrize("n", range(6))
def test_counts(n):
    m = Loop(Phrase("ab"), min_count=2, max_count=4)
    assert m.matches("ab" * n) == (2 <= n <= 4)


def test_unbounded():
    m = Loop(Phrase("x"))
    assert m.matches("") and m.matches("x" * 100)


def test_separator():
    m = Loop(Character("0123456789"), 1, None, separator=Phrase(","))
    assert m.matches("1,22,333")
    assert not m.matches("1,,2") and not m.matches(",1") and not m.matches("1,")
    check_boundaries(m, "1,22,333")


def test_separator_with_bounds():
    m = Loop(Phrase("a"), 2, 3, separator=Phrase("-"))
    assert [m.matches(t) for t in ["a", "a-a", "a-a-a", "a-a-a-a"]] == [False, True, True, False]


def test_zero_max():
    assert Loop(Phrase("a"), 0, 0).matches("")
    assert not Loop(Phrase("a"), 0, 0).matches("a")


def test_empty_matching_body_neither_hangs_nor_multiplies():
    cases = [(Loop(Optional(Phrase("x"))), "x"), (Loop(Whitespace()), " "),
             (Loop(Loop(Phrase("x"))), "x"), (Loop(Optional(Whitespace(1, 3))), " "),
             (Loop(Optional(Character("ab")), 2), "a")]
    for m, token in cases:
        assert m.matches("")
        assert len(run_tokens(m, [token] * 50)) == 1, m


def test_live_states_stay_bounded_under_ambiguity():
    m = Loop(Optional(Whitespace()), 2, 5)
    sizes = [len(run_tokens(m, [" "] * n)) for n in (10, 30, 60, 90)]
    assert sizes[-1] <= sizes[1]
    assert m.matches(" " * 100) and not m.matches(" " * 101)


def test_large_bounded_loop():
    m = Loop(Phrase("ab"), 0, 1000)
    assert m.matches("ab" * 1000)
    assert not m.matches("ab" * 1001)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(min_count=-1), "min_count"),
    (dict(max_count=-1), "max_count"),
    (dict(min_count=3, max_count=1), "min_count"),
])
def test_bad_arguments(kwargs, needle):
    with pytest.raises(GrammarError, match=needle):
        Loop(Phrase("a"), **kwargs)


def test_too_many_nodes_is_a_clear_error():
    with pytest.raises(GrammarError, match="MAX_NODES"):
        Loop(Phrase("ab"), 0, 200_000).compile()


def test_loop_of_a_run_of_nothing_matches_only_empty():
    # found by hypothesis: the single-run shortcut took max_length=0 for an unbounded run
    machine = Optional(Loop(Character("a", min_length=0, max_length=0)))
    assert machine.matches("") and not machine.matches("a")
