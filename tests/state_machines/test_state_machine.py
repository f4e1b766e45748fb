"""The StateMachine base class with a user-written state graph."""

import pytest

from helpers import check_boundaries
from pse import Character, GrammarError, Phrase, StateMachine


def key_value():
    return StateMachine(
        {
            "key": [(Character("abcdefghijklmnopqrstuvwxyz"), "colon")],
            "colon": [(Phrase("="), "value")],
            "value": [(Character("0123456789"), "$"), (Phrase("none"), "$")],
        },
        start_state="key",
        end_states=["$"],
    )


def test_user_graph():
    m = key_value()
    for text, ok in [("a=1", True), ("abc=none", True), ("=1", False), ("a=", False)]:
        assert m.matches(text) == ok
    check_boundaries(m, "abc=123")


def test_machine_containing_itself_without_forward():
    m = StateMachine({0: [(Phrase("x"), "$")]}, end_states=["$"])
    m.state_graph[0].append((Phrase("("), 1))
    m.state_graph[1] = [(m, 2)]
    m.state_graph[2] = [(Phrase(")"), "$")]
    assert m.matches("((x))") and not m.matches("((x)")


def test_bad_edge():
    with pytest.raises(GrammarError, match="edges must be"):
        StateMachine({0: [("a", 1)]})


def test_machine_with_no_path_to_an_end():
    m = StateMachine({0: [(Phrase("a"), 1)]}, end_states=[5])
    with pytest.raises(GrammarError, match="matches nothing"):
        m.compile()


def test_steppers_are_immutable_values():
    m = key_value()
    s0 = m.get_steppers()[0]
    d1 = s0.consume("ab")
    d2 = s0.consume("zz=")
    assert s0.consumed == b"" and s0.state_key() == m.get_steppers()[0].state_key()
    assert d1[0].stepper.consumed == b"ab" and d2[0].stepper.consumed == b"zz="
    import copy
    assert copy.copy(s0) is s0


def test_advance_all():
    m = key_value()
    deltas = StateMachine.advance_all(m.get_steppers(), "ab=")
    assert len(deltas) == 1 and deltas[0].token == b"ab=" and deltas[0].text == "ab="
    assert StateMachine.advance_all(m.get_steppers(), "=") == []
