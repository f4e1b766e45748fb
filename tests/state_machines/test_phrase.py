import pytest

from helpers import accepts_tokens, check_boundaries, run_tokens
from pse import GrammarError, Phrase


def test_accepts_exact_text():
    assert Phrase("hello").matches("hello")


@pytest.mark.parametrize("text", ["", "hell", "helloo", "Hello", "xhello", " hello"])
def test_rejects_other_text(text):
    assert not Phrase("hello").matches(text)


def test_partial_prefixes():
    p = Phrase("hello")
    for i in range(6):
        assert p.matches("hello"[:i], partial=True)
    assert not p.matches("hex", partial=True)


def test_token_boundaries_everywhere():
    check_boundaries(Phrase("héllo wörld ✓"), "héllo wörld ✓")
    check_boundaries(Phrase("héllo wörld ✓"), "héllo wörld ✗")


def test_repeated_letters():
    assert Phrase("hello").matches("hello")
    assert Phrase("aaaa").matches("aaaa")
    assert not Phrase("aaaa").matches("aaa")


def test_unicode_bytes_split_inside_a_character():
    p = Phrase("é")
    assert accepts_tokens(p, [b"\xc3", b"\xa9"])
    assert not accepts_tokens(p, [b"\xc3", b"\xa8"])


def test_bytes_phrase():
    assert Phrase(b"\x00\xff").matches(b"\x00\xff")


def test_empty_phrase_matches_only_empty():
    p = Phrase("")
    assert p.matches("")
    assert not p.matches("a")


def test_overshooting_token_leaves_remaining_input():
    deltas = Phrase("example").get_steppers()[0].consume("example ")
    assert len(deltas) == 1
    assert deltas[0].token == b"example"
    assert deltas[0].stepper.remaining_input == b" "
    assert deltas[0].stepper.has_reached_accept_state()
    assert not deltas[0].was_healed


def test_rejected_token_changes_nothing():
    s = Phrase("abc").get_steppers()[0]
    key = s.state_key()
    assert s.consume("x") == []
    assert s.consume(" abc") == []
    assert s.state_key() == key and s.consumed == b""


def test_stepper_state_queries():
    s = run_tokens(Phrase("ab"), ["a"])[0]
    assert not s.has_reached_accept_state()
    assert s.can_accept_more_input()
    assert s.next_bytes() == b"b"
    done = s.consume("b")[0].stepper
    assert done.has_reached_accept_state()
    assert not done.can_accept_more_input()
    assert done.get_current_value() == "ab"


def test_bad_argument():
    with pytest.raises(GrammarError, match="Phrase text"):
        Phrase(3)


def test_consume_wrong_type():
    with pytest.raises(TypeError):
        Phrase("a").get_steppers()[0].consume(3)
