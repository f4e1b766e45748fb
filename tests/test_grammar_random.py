"""Random ambiguous grammars of one to three rules over a, b and c, whose rules call each other
every way at once: every mask along a text of the language is the Earley oracle's of
tests/test_grammar_interleaved.py (itself checked against lark). Such grammars merge stacks
of thousands of members; a pop reaching them pops the members that return alike as one."""

from __future__ import annotations

import itertools
import random

import pytest

from pse import Grammar, StructuringEngine, limits
from pse._core.mask import _narrow_walked
from pse._core.structure import _grouped_returns, _wide_merges
from test_grammar import vocab_with_eos
from test_grammar_interleaved import (Earley, assert_mask_is_the_oracles, assert_masks_along,
                                      check_planned_along, lark_source)

# (and tokens with a byte no terminal takes: the walk skips them at that byte, unstepped)
TOKENS = ["".join(p) for k in range(1, 4) for p in itertools.product("abc", repeat=k)] + [
    "ad", "abx", "ca-", "b c", "xa", "ccd"]

# A grammar of three rules found by this fuzz: each byte of its text made tens of thousands of
# states that merged back into a few, and a mask walk over these 39 tokens made more than
# 2^23 frames ("too ambiguous") at the 19th letter, seconds a mask before it
THREE_RULES = {"s": [["t", "c"], ["a", "b", "b", "c"], ["t", "s"], ["c", "a", "c"],
                     ["s", "b", "s"], ["c"]],
               "t": [["s"], ["b", "u", "t"], ["c"], ["u"], ["a"]],
               "u": [["s"], ["s", "a"], ["a", "s", "b"], ["t", "u"], ["b", "b"], ["b"]]}
THREE_RULES_TEXT = "aabcbabacbaaccaaaacccaaaaaacaaaaaacaaaaaaaaaaaacaaaaaa"


def random_grammar(rng: random.Random) -> dict:
    """One to three rules, each of two to five alternatives of one to four symbols (a rule or a
    letter), and one of a single letter (so that every rule ends)."""
    names = ["s", "t", "u"][:rng.randint(1, 3)]
    return {name: [[rng.choice(names + ["a", "b", "c"]) for _ in range(rng.randint(1, 4))]
                   for _ in range(rng.randint(2, 5))] + [[rng.choice("abc")]]
            for name in names}


def random_text(rules: dict, rng: random.Random) -> str:
    """20 to 80 letters, each one the oracle allows after those before (fewer where none)."""
    oracle = Earley(rules)
    chart = oracle.begin()
    text = ""
    for _ in range(rng.randint(20, 80)):
        allowed = [ch for ch in "abc" if oracle.prefix(oracle.extend(chart, ch))]
        if not allowed:
            break
        text += rng.choice(allowed)
        chart = oracle.extend(chart, text[-1])
    return text


def check_walked_along(rules: dict, text: str) -> None:
    """Every mask along `text` (and after it) is the oracle's, each walked over the trie."""
    oracle = Earley(rules)
    vocab, eos = vocab_with_eos(TOKENS)
    engine = StructuringEngine(vocab)
    engine.configure(Grammar.from_lark(lark_source(rules)))
    chart = assert_masks_along(engine, oracle, text, TOKENS, eos)
    assert_mask_is_the_oracles(engine, oracle, chart, TOKENS, eos, len(text))


def test_three_rules_calling_each_other_every_way():
    check_walked_along(THREE_RULES, THREE_RULES_TEXT)


@pytest.mark.parametrize("planned", [False, True])
def test_wide_sets_past_their_bound_equal_the_oracle(planned):
    """A set merged once it is made (a step's, a mask's roots, an exit byte's states) is
    wide: it may hold 16 times max_live_states while it is made, and merges past that before
    it goes on. Under a bound of 64, these sets pass 1,024 states: every mask along the text
    is still the oracle's, walked or planned."""
    before = _wide_merges()
    if planned:
        check_planned_along(THREE_RULES, THREE_RULES_TEXT, 3, 64)
    else:
        old = limits.max_live_states()
        limits.set_max_live_states(64)
        try:
            check_walked_along(THREE_RULES, THREE_RULES_TEXT)
        finally:
            limits.set_max_live_states(old)
    assert _wide_merges() > before  # (the sets did pass it)


@pytest.mark.parametrize("planned", [False, True])
def test_pops_returning_alike_expanded_as_one_equal_the_oracle(planned):
    """A mask walk that merges expands the pops of a step (of a mask's roots, of a group's
    exit byte) that return to one node with one register once, over the union of the stacks
    they leave: every mask along the text is still the oracle's, walked or planned, and such
    groups were expanded."""
    before = _grouped_returns()
    if planned:
        check_planned_along(THREE_RULES, THREE_RULES_TEXT, 3, 1024)
    else:
        check_walked_along(THREE_RULES, THREE_RULES_TEXT)
    assert _grouped_returns() > before


def test_subtrees_of_bytes_no_terminal_takes_are_walked():
    """Below each word of one or two of a, b and c, 88 tokens of a byte no terminal takes:
    subtrees of 92 nodes below a word of two letters and 365 below one of one, planned as jobs
    by their size, where the walk steps into 4 and 13. From the many states of these rules'
    masks they are walked instead (large_subtree), and every mask along the text is still
    the oracle's."""
    others = [chr(code) for code in range(0x21, 0x7F) if chr(code) not in "abcstu"]  # (s, t, u:
    # the oracle's rules)
    words = [w for w in TOKENS if len(w) < 3 and set(w) <= set("abc")]
    tokens = TOKENS + [word + other for word in words for other in others]
    oracle = Earley(THREE_RULES)
    vocab, eos = vocab_with_eos(tokens)
    engine = StructuringEngine(vocab)
    engine.configure(Grammar.from_lark(lark_source(THREE_RULES)))
    before = _narrow_walked()
    assert_masks_along(engine, oracle, THREE_RULES_TEXT[:20], tokens, eos)
    assert _narrow_walked() > before  # (they were found small)


@pytest.mark.parametrize("seed", range(40))
def test_random_grammars_masks_equal_the_oracle(seed):
    """Even seeds: every mask walked; odd ones: every exit planned as jobs, under a bound of
    64 live states (the masks of a walk cut into jobs)."""
    rng = random.Random(seed)
    rules = random_grammar(rng)
    text = random_text(rules, rng)
    if seed % 2:
        check_planned_along(rules, text, 3, 64)
    else:
        check_walked_along(rules, text)


def oracle_forced(oracle: Earley, chart: list, limit: int = 64) -> bytes:
    """The bytes forced after `chart`: while the text is not complete and exactly one letter
    extends it."""
    out = ""
    while len(out) < limit and not oracle.complete(chart):
        allowed = [ch for ch in "abc" if oracle.prefix(oracle.extend(chart, ch))]
        if len(allowed) != 1:
            break
        out += allowed[0]
        chart = oracle.extend(chart, allowed[0])
    return out.encode()


@pytest.mark.parametrize("seed", ["three rules", *range(0, 40, 4)])
def test_random_grammars_forced_bytes_equal_the_oracle(seed):
    """The forced bytes after every prefix of a text are the oracle's: the live states share
    their stacks' unions, each member's next bytes are read once for all of them."""
    if seed == "three rules":
        rules, text = THREE_RULES, THREE_RULES_TEXT
    else:
        rng = random.Random(seed)
        rules = random_grammar(rng)
        text = random_text(rules, rng)
    oracle = Earley(rules)
    vocab, _ = vocab_with_eos(TOKENS)
    engine = StructuringEngine(vocab)
    engine.configure(Grammar.from_lark(lark_source(rules)))
    chart = oracle.begin()
    for k in range(len(text) + 1):
        if k:
            assert engine.matcher.advance(text[k - 1].encode())
            chart = oracle.extend(chart, text[k - 1])
        assert engine.compute_ff_bytes(64) == oracle_forced(oracle, chart, 64), (rules,
                                                                                 text[:k])
