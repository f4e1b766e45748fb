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


@pytest.mark.parametrize("make", [
    lambda words: AnyOf(*[Phrase(w) for w in words]),
    lambda words: __import__("pse").Grammar.from_lark(
        "start: " + " | ".join(f'"{w}"' for w in words)),
    lambda words: __import__("pse").Grammar.from_gbnf(
        "root ::= " + " | ".join(f'"{w}"' for w in words)),
], ids=["anyof", "lark", "gbnf"])
def test_many_words_are_one_terminal(make):
    """A thousand words from one place (past MERGE_TERMINALS) run as one terminal, the union
    of theirs: as many live states as words sharing a prefix passed max_live_states at the
    first byte. The language and the masks (brute force over a vocabulary) are the same."""
    from pse import StructuringEngine, Vocabulary
    from test_engine import brute_force, mask_ids

    words = [f"w{i}" for i in range(1100)]
    m = make(words)
    for text in ["w0", "w1", "w77", "w1099"]:
        assert m.matches(text)
    for text in ["w", "w1100", "w01", "x1", "w1 "]:
        assert not m.matches(text)
    vocab = Vocabulary.from_tokens(["w", "w1", "0", "1", "9", "10", "99", "w10", "x", "<eos>"],
                                   eos_token_ids=[9], special_token_ids=[9])
    engine = StructuringEngine(vocab)
    engine.configure(m)
    for token in [1, 5, 2]:  # w1 10 0: "w1100" is not a word; the masks say so on the way
        assert mask_ids(engine) == brute_force(engine)
        if token not in mask_ids(engine):
            break
        assert engine.consume_token(token)
    assert mask_ids(engine) == brute_force(engine)
