"""SpecialToken: one vocabulary token that is no text, in combinators and Lark grammars.

The oracle: the same structure with the special token replaced by a phrase of a character no
other token holds, on a vocabulary where that character is the token's text, allows exactly
the same ids at every step."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from conftest import shared_vocab
from pse import (AnyOf, Chain, Encapsulated, Forward, Freeform, Grammar, GrammarError,
                 JsonSchema, Loop, Optional, Phrase, SpecialToken, StructuringEngine, Vocabulary,
                 VocabularyError, WaitFor)
from pse._core.stepper import consume_special
from pse.machines import SPECIAL_MARK, special_text
from test_engine import small_vocab
from test_properties import ALPHABET, trees

MARK = "§"


def vocab_pair() -> tuple[Vocabulary, Vocabulary, int]:
    """The small test vocabulary with one more token: special "<|s|>" in the first,
    the text MARK in the second, at the same id."""
    base = small_vocab()
    tokens = [base.token_bytes(i) for i in range(base.size)]
    sid = len(tokens)
    eos = list(base.eos_token_ids)
    special = sorted(base.special_token_ids)
    with_special = Vocabulary.from_tokens(tokens + [b"<|s|>"], eos_token_ids=eos,
                                          special_token_ids=special + [sid])
    with_text = Vocabulary.from_tokens(tokens + [MARK.encode()], eos_token_ids=eos,
                                       special_token_ids=special)
    return with_special, with_text, sid


def masks_agree_along(a: StructuringEngine, b: StructuringEngine, rng: random.Random,
                      steps: int = 12) -> None:
    for _ in range(steps):
        got, expected = a.allowed_token_ids().tolist(), b.allowed_token_ids().tolist()
        assert got == expected
        if not got:
            return
        token = rng.choice(got)
        assert a.consume_token(token) and b.consume_token(token)
        if a.is_finished:
            return


@settings(max_examples=60)
@given(trees, trees, st.integers(0, 2**32))
def test_special_token_equals_a_unique_phrase(left, right, seed):
    with_special, with_text, sid = vocab_pair()
    for shape in (lambda s: Chain(left[0], s, right[0]),
                  lambda s: AnyOf(Chain(left[0], s), right[0]),
                  lambda s: Loop(Chain(left[0], Optional(s)), 1, 3)):
        a, b = StructuringEngine(with_special), StructuringEngine(with_text)
        a.configure(shape(SpecialToken("<|s|>")))
        b.configure(shape(Phrase(MARK)))
        masks_agree_along(a, b, random.Random(seed))


@settings(max_examples=60)
@given(trees, trees, st.data())
def test_matches_reads_a_marked_special_token_as_the_phrase(left, right, data):
    # matches() takes a special token where special_text marks it: as the structure with a
    # phrase no other part holds in its place takes that phrase
    pattern = f"(?:{left[1]}){re.escape(MARK)}(?:{right[1]})"
    near = st.text(ALPHABET + MARK, max_size=8)
    texts = [data.draw(st.from_regex(pattern, fullmatch=True)), data.draw(near),
             data.draw(near)]
    for shape in (lambda s: Chain(left[0], s, right[0]),
                  lambda s: AnyOf(Chain(left[0], s), right[0])):
        special, phrase = shape(SpecialToken("<|s|>")), shape(Phrase(MARK))
        for text in texts:
            marked = text.replace(MARK, special_text("<|s|>"))
            for partial in (False, True):
                assert special.matches(marked, partial) == phrase.matches(text, partial), \
                    (text, partial)
    assert Chain(left[0], SpecialToken("<|s|>")).matches(special_text("<|s|>"), True) \
        == Chain(left[0], Phrase(MARK)).matches(MARK, True)
    with pytest.raises(ValueError, match="not closed"):
        Chain(left[0], SpecialToken("<|s|>")).matches(SPECIAL_MARK + "<|s|>")


def test_matches_a_special_token_after_unique_items():
    # the text before a special token is what a later uniqueItems array compares with
    machine = Chain(JsonSchema({"type": "array", "uniqueItems": True}), SpecialToken("<|s|>"),
                    JsonSchema({"type": "array", "uniqueItems": True}))
    s = special_text("<|s|>")
    assert machine.matches(f"[1,2]{s}[1,2]")
    assert not machine.matches(f"[1,2]{s}[1,1]")
    assert not machine.matches("[1,2]<|s|>[1,2]")  # (spelled out, it is no special token)
    assert machine.matches(f"[1]{s}", partial=True)


def test_consuming_special_tokens_merges_identical_states():
    # two ways to take each token: without merging, the steppers doubled at every token
    machine = Loop(AnyOf(SpecialToken("<|s|>"),
                         Chain(SpecialToken("<|s|>"), Optional(Phrase("a")))), 0, None)
    live = machine.get_steppers()
    for _ in range(24):
        live = consume_special(live, "<|s|>")
        assert 0 < len(live) <= 3
    assert machine.matches(special_text("<|s|>") * 40 + "a")
    assert not machine.matches(special_text("<|s|>") + "aa")
    # a token given by id has no text to mark
    assert not Chain(SpecialToken(7)).matches(special_text("7"))


def test_structured_outputs_of_free_text_around_special_tokens():
    # the structure's start and its close are found outside a special token's marks
    tokens = [bytes([b]) for b in range(32, 127)] + [b"<|s|>", b"<eos>"]
    sid = len(tokens) - 2
    with_special = Vocabulary.from_tokens(tokens, eos_token_ids=[sid + 1],
                                          special_token_ids=[sid, sid + 1])

    def ids(text: str) -> list[int]:
        return [ord(ch) - 32 for ch in text]

    for machine, tokens in (
            (WaitFor(Chain(SpecialToken("<|s|>"), JsonSchema({"type": "object"}))),
             ids("a ") + [sid] + ids("{}")),
            (Encapsulated(Chain(JsonSchema({"type": "object"}), SpecialToken("<|s|>")), "<",
                          "|>"), ids("<{}") + [sid])):
        engine = StructuringEngine(with_special)
        engine.configure(machine)
        assert all(engine.consume_token(t) for t in tokens)
        # (a Chain has none of its own; the close's text inside the special token's is none)
        assert engine.structured_outputs() == []
    engine = StructuringEngine(with_special)
    engine.configure(WaitFor(JsonSchema({"type": "object"}, name="obj")))
    assert all(engine.consume_token(t) for t in ids("a {}"))
    assert engine.structured_outputs() == [("obj", {})]


def test_special_token_by_id_and_text():
    with_special, _, sid = vocab_pair()
    for token in (sid, "<|s|>"):
        engine = StructuringEngine(with_special)
        engine.configure(Chain(Phrase("a"), SpecialToken(token)))
        assert engine.consume_token(with_special.lookup("a"))
        assert engine.allowed_token_ids().tolist() == [sid]
        assert engine.compute_ff_bytes() == b""      # no text is forced before it
        assert engine.consume_token(sid) and engine.is_accepting()
        engine.rollback(1)
        assert not engine.is_accepting() and engine.consume_token(sid)


def test_special_token_after_merged_stacks():
    """S -> 'a' S <|s|>? | 'a' S '-' | '': the frames each branch pushes merge into one
    state whose stack is a union (see tests/test_grammar.py); whether the special token may
    come next is asked through each member."""
    def shape(end, first):
        s = Forward()
        branches = [Chain(Phrase("a"), s, Optional(end)), Chain(Phrase("a"), s, Phrase("-"))]
        s.set(Optional(AnyOf(*(branches if first else branches[::-1]))))
        return s
    with_special, with_text, sid = vocab_pair()
    for seed in range(16):
        a, b = StructuringEngine(with_special), StructuringEngine(with_text)
        a.configure(shape(SpecialToken("<|s|>"), seed % 2))
        b.configure(shape(Phrase(MARK), seed % 2))
        masks_agree_along(a, b, random.Random(seed), steps=30)


def test_special_tokens_stop_forced_bytes():
    with_special, _, sid = vocab_pair()
    engine = StructuringEngine(with_special)
    engine.configure(AnyOf(Phrase("ab"), Chain(SpecialToken(sid), Phrase("b"))))
    assert engine.compute_ff_bytes() == b""          # "a" is not forced: <|s|> may come
    assert engine.consume_token(sid)
    assert engine.compute_ff_bytes() == b"b"


def test_fast_forward_emits_a_forced_special_token():
    with_special, _, sid = vocab_pair()
    engine = StructuringEngine(with_special)
    engine.configure(Chain(Phrase("a"), SpecialToken(sid), Phrase("b")))
    forced = engine.compute_ff_tokens()  # the text, the special token, the text after it
    at = forced.index(sid)
    assert with_special.decode(forced[:at]) == "a" and with_special.decode(forced[at + 1:]) == "b"
    assert engine.consume_tokens(forced) == len(forced) and engine.is_accepting()
    engine.reset()
    assert engine.consume_token(forced[0]) and engine.compute_ff_tokens() == forced[1:]
    # not forced where something else may come: text, or the end
    for other in (AnyOf(Phrase("ab"), Chain(SpecialToken(sid), Phrase("b"))),
                  Optional(SpecialToken(sid))):
        engine.configure(other)
        assert engine.compute_ff_tokens() == []


def test_fast_forward_bounds_the_special_tokens_of_one_call():
    with_special, _, sid = vocab_pair()
    engine = StructuringEngine(with_special)
    engine.configure(Chain(*[SpecialToken(sid) for _ in range(40)]))
    forced = engine.compute_ff_tokens()
    assert forced == [sid] * 16  # MAX_FF_SPECIAL_TOKENS; the rest in the next calls
    assert engine.consume_tokens(forced) == 16
    assert engine.compute_ff_tokens() == [sid] * 16


def test_llama3_fast_forward_through_special_tokens():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(Grammar('start: <|start_header_id|> "assistant" <|end_header_id|> "\\n\\n"'
                             ' /[a-z]+/\n'))
    forced = engine.compute_ff_tokens()
    # what the tokenizer writes for the header, special tokens parsed (Llama 3 splits
    # "\n\n" from the letters after it, so it is forced too)
    assert forced == llama.encode("<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert forced == llama.encode("<|start_header_id|>assistant<|end_header_id|>\n\nabc")[:-1]


def test_free_text_never_holds_a_special_token():
    with_special, _, sid = vocab_pair()
    engine = StructuringEngine(with_special)
    engine.configure(Freeform())
    assert sid not in engine.allowed_token_ids()
    assert not engine.consume_token(sid)


def test_missing_special_token():
    with_special, _, _ = vocab_pair()
    engine = StructuringEngine(with_special)
    with pytest.raises(VocabularyError, match="<|nope|>"):
        engine.configure(Chain(Phrase("a"), SpecialToken("<|nope|>")))
    with pytest.raises(VocabularyError, match="no token has id"):
        engine.configure(SpecialToken(10**6))
    # not required: the vocabulary may lack it, and it is never allowed
    engine.configure(Chain(Optional(SpecialToken("<|nope|>", required=False)), Phrase("a")))
    assert engine.allowed_token_ids().tolist() == [with_special.lookup("a")]
    for bad in (-1, "", 1.5, True):
        with pytest.raises(GrammarError):
            SpecialToken(bad)


def test_lark_special_tokens():
    with_special, _, sid = vocab_pair()
    engine = StructuringEngine(with_special)
    engine.configure(Grammar('start: "a" <|s|> b\nb: <[%d]> "b"\n' % sid))
    for token in ("a", sid, sid, "b"):
        tid = token if isinstance(token, int) else with_special.lookup(token)
        assert tid in engine.allowed_token_ids()
        assert engine.consume_token(tid)
    assert engine.is_accepting()
    # inside strings, regexes and comments, <...> is text
    grammar = Grammar('start: "<a>" /<b>/ // <c>\n')
    assert grammar.matches("<a><b>")
    with pytest.raises(GrammarError, match="line 2"):
        Grammar('start: a\na: "x" < b >\n')


def test_llama3_special_tokens():
    """Llama 3's special tokens (this tokenizer is 3.0's: 128010, Llama 3.1's <|python_tag|>,
    is <|reserved_special_token_5|> here) are allowed where named, by text or by id, and
    never as text."""
    llama = shared_vocab("llama3")
    header = llama.special_token_id("<|start_header_id|>")
    assert {header, 128010} <= llama.special_token_ids
    engine = StructuringEngine(llama)
    engine.configure(Grammar('start: <|start_header_id|> "x" <[128010]>\n'))
    assert engine.allowed_token_ids().tolist() == [header]
    assert engine.consume_token(header) and engine.consume_token(llama.lookup("x"))
    assert engine.allowed_token_ids().tolist() == [128010]
    assert engine.consume_token(128010) and engine.is_accepting()


def test_a_text_token_named_special():
    """A text token named by SpecialToken is allowed as that token, and as its text where
    the text fits; beside uniqueItems arrays (which read the text) it is refused."""
    with_special, _, sid = vocab_pair()
    a = with_special.lookup("a")
    engine = StructuringEngine(with_special)
    engine.configure(Chain(SpecialToken("a"), Phrase("b")))
    assert engine.allowed_token_ids().tolist() == [a]
    assert engine.consume_token(a) and engine.consume_token(with_special.lookup("b"))
    unique = JsonSchema({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    with pytest.raises(GrammarError, match="uniqueItems"):
        engine.configure(Chain(SpecialToken("a"), unique))


def test_special_tokens_qwen3_brute_force():
    """Qwen3: a special token closes free text and a thought; masks along the stream equal
    brute force (text tokens through the consume path, named special tokens committed on a
    copy), and no other special token is ever allowed."""
    from pse import Reasoning
    from test_engine import brute_force

    qwen = shared_vocab("qwen3")
    end = qwen.special_token_id("<|im_end|>")
    start = qwen.special_token_id("<|im_start|>")
    machine = Reasoning(Chain(Freeform(max_length=40), SpecialToken("<|im_end|>")))
    engine = StructuringEngine(qwen)
    engine.configure(machine)
    ids = qwen.encode("<think>\nshort</think>\n\nThe answer is 4.") + [end]
    for token in ids:
        mask = set(engine.allowed_token_ids().tolist())
        expected = brute_force(engine)
        for named in (end, start):
            if engine.copy().consume_token(named):
                expected.add(named)
        assert mask == expected
        assert start not in mask
        assert engine.consume_token(token)
    assert engine.is_accepting()


def test_lark_special_token_inside_a_terminal_is_refused():
    with pytest.raises(GrammarError, match="TAG.*holds a special token"):
        Grammar('start: TAG\nTAG: "a" <|s|>\n')
