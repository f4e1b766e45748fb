"""Token healing (../shared/seeds/token_healing.md) and choose_best_path."""

from __future__ import annotations

from conftest import shared_vocab
from pse import (AnyOf, Chain, Character, Optional, Phrase, StateMachine, StepperDelta,
                 Vocabulary)

INTEGER = Chain(Optional(Phrase("-")), Character("0123456789"))


def test_overshooting_token_heals_to_the_canonical_token():
    vocab = Vocabulary.from_tokens(["example", "example ", "exam", "ple", " example"])
    deltas = StateMachine.advance_all(Phrase("example").get_steppers(), "example ", vocab)
    assert len(deltas) == 1
    d = deltas[0]
    assert d.was_healed and d.token == b"example"
    assert d.stepper.consumed == b"example" and d.stepper.remaining_input == b""
    assert d.stepper.has_reached_accept_state()


def test_overshoot_with_the_real_llama3_vocabulary():
    vocab = shared_vocab("llama3")
    token = b"example "
    deltas = StateMachine.advance_all(Phrase("example").get_steppers(), token, vocab)
    assert [(d.token, d.was_healed) for d in deltas] == [(b"example", True)]
    assert vocab.lookup(b"example") is not None


def test_leading_space_consumes_nothing_and_does_not_heal():
    vocab = Vocabulary.from_tokens(["example", " example"])
    assert StateMachine.advance_all(Phrase("example").get_steppers(), " example", vocab) == []


def test_paren_dot_heals_to_paren():
    vocab = Vocabulary.from_tokens(["(", "(."])
    deltas = StateMachine.advance_all(Phrase("(").get_steppers(), "(.", vocab)
    assert [(d.token, d.was_healed) for d in deltas] == [(b"(", True)]


def test_number_heals_to_the_longest_vocabulary_prefix():
    vocab = Vocabulary.from_tokens(["-", "-1", "1"])
    deltas = StateMachine.advance_all(INTEGER.get_steppers(), "-1.2", vocab)
    assert [(d.token, d.was_healed) for d in deltas] == [(b"-1", True)]
    assert deltas[0].stepper.get_current_value() == "-1"


def test_heals_to_a_shorter_token_when_the_consumed_prefix_is_not_a_token():
    vocab = Vocabulary.from_tokens(["-", "1"])
    deltas = StateMachine.advance_all(INTEGER.get_steppers(), "-1.2", vocab)
    assert [(d.token, d.was_healed) for d in deltas] == [(b"-", True)]
    assert not deltas[0].stepper.has_reached_accept_state()


def test_no_vocabulary_token_fits_gives_no_delta():
    vocab = Vocabulary.from_tokens(["a", "b"])
    assert StateMachine.advance_all(Phrase("xy").get_steppers(), "xyz", vocab) == []


def test_without_a_vocabulary_nothing_is_healed():
    deltas = StateMachine.advance_all(Phrase("example").get_steppers(), "example ")
    assert [(d.token, d.was_healed, d.stepper.remaining_input) for d in deltas] == [
        (b"example", False, b" ")]


def test_unhealed_paths_are_kept_beside_healed_ones():
    m = AnyOf(Phrase("ab"), Phrase("abc"))
    vocab = Vocabulary.from_tokens(["ab", "abc", "abcd"])
    deltas = StateMachine.advance_all(m.get_steppers(), "abc", vocab)
    # "ab" heals; re-consumed, it has two parses (the end of "ab", inside "abc")
    assert sorted((d.token, d.was_healed) for d in deltas) == [
        (b"ab", True), (b"ab", True), (b"abc", False)]
    token, steppers = StepperDelta.choose_best_path(deltas)
    assert token == b"abc" and len(steppers) == 1


def test_choose_best_path_prefers_unhealed_then_accepting_then_longer():
    m = AnyOf(Phrase("ab"), Phrase("abcd"), Chain(Phrase("abc"), Phrase("x")))
    s = m.get_steppers()[0]
    healed = StepperDelta(s.consume("ab")[0].stepper, b"ab", True)
    # two full parses (inside "abcd", before "x"; neither accepts) besides "ab" + rest "c"
    mid = [d for d in s.consume("abc") if not d.stepper.remaining_input]
    assert len(mid) == 2
    done = s.consume("ab")[0]  # accepting
    # unhealed beats healed even when the healed one accepts
    assert StepperDelta.choose_best_path([healed, *mid])[0] == b"abc"
    # among unhealed: accepting beats longer
    assert StepperDelta.choose_best_path([*mid, done])[0] == b"ab"
    # among unhealed, neither accepting: the longer token
    shorter = s.consume("a")[0]
    token, steppers = StepperDelta.choose_best_path([shorter, *mid])
    assert token == b"abc" and len(steppers) == 2  # every parse of the chosen token is kept
    assert StepperDelta.choose_best_path([]) is None


def test_a_healed_token_keeps_every_parse_of_the_text_committed():
    """`engine.consume` of a text that is no token heals to the longest token that a path
    read before it died; another path read on past that token (here: the a's of the loop).
    The engine then holds every parse of the text committed, so what it allows next is what
    the structure allows after that text (it held the dying path alone: only 'b')."""
    from pse import Loop, StructuringEngine
    from test_engine import mask_ids

    m = AnyOf(Chain(Phrase("x"), Loop(Phrase("a"), 4, 10)), Phrase("xaaaaaaab"))
    tokens = ["x", "a", "b", "aa", "aaaaaaa", "<eos>"]
    vocab = Vocabulary.from_tokens(tokens, eos_token_ids=[5], special_token_ids=[5])
    engine = StructuringEngine(vocab)
    engine.configure(m)
    assert engine.consume("x") == 0
    # (nine a's are no token: the loop's path reads them all and gives no token to commit;
    # the phrase's dies after seven)
    assert engine.consume("a" * 9) == 4
    text = "xaaaaaaa"
    assert engine.is_accepting() == m.matches(text) is True
    allowed = {k for k, t in enumerate(tokens[:5]) if m.matches(text + t, partial=True)}
    assert mask_ids(engine) == allowed | {5}
