"""String length bounds too large to unroll beside a pattern or format: the characters are
counted at run time (CharCountedTerminal). Checked against `re` and the decoded length, with
masks equal to brute force and never empty before the end (no dead ends)."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from pse import JsonSchema, StructuringEngine, Vocabulary
from pse.automaton import DFA
from pse.compiler import TERM_CHARS, _full_stops, _terminal_dfa
from pse.counted_lengths import LENGTH_BITS, count_lengths, count_range
from pse.errors import GrammarError, SchemaError
from pse.machines import CharCountedTerminal
from pse.json_spelling import char_boundaries, json_char_class
from pse.regex import compile_regex
from conftest import shared_vocab
from test_engine import brute_force, check_along, mask_ids

# (pattern, minLength, maxLength): the pattern must mean the same to `re` (no \d, no \w)
CASES = [
    ("^[a-c]+$", 0, 70),
    ("^[a-c]+$", 66, None),
    ("^[a-c]+$", 66, 68),
    ("^(ab|c)*$", 65, 70),       # lengths of every parity from a state inside "ab"
    ("a", 0, 65),                # a search: anything around one "a"
    ("^[aé\"]*b[ab]*$", 2, 66),  # two-byte characters and an escaped quote
    ("^a{3}[bc]*$", 0, 65),      # a prefix every match needs
    ("^[a-c]{5,96}$", 5, 96),    # bounds the pattern keeps anyway: nothing to count
    ("^[a-c]{5,60}$", 30, 200),  # ... one of them
]
ALPHABET = ["a", "b", "c", "é", '"', "ab"]


def _oracle(pattern: str, lo: int, hi: int | None, text: str) -> bool:
    return (re.search(pattern, text) is not None and len(text) >= lo
            and (hi is None or len(text) <= hi))


def _schema(pattern: str, lo: int, hi: int | None) -> dict:
    schema = {"type": "string", "pattern": pattern, "minLength": lo}
    if hi is not None:
        schema["maxLength"] = hi
    return schema


@pytest.mark.parametrize("pattern, lo, hi", CASES)
@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=40), st.integers(0, 75))
def test_counted_lengths_agree_with_re(pattern, lo, hi, parts, repeat):
    m = _machine(pattern, lo, hi)
    text = "".join(parts) + "c" * repeat
    for s in (text, text[:64], "a" * repeat + text):
        expected = _oracle(pattern, lo, hi, s)
        assert m.matches(json.dumps(s, ensure_ascii=False)) == expected, (pattern, len(s))


def _machine(pattern: str, lo: int, hi: int | None, cache: dict = {}) -> JsonSchema:
    key = (pattern, lo, hi)
    if key not in cache:
        cache[key] = JsonSchema(_schema(pattern, lo, hi))
    return cache[key]


def test_lengths_are_counted_not_unrolled():
    unrolled = JsonSchema({"type": "string", "pattern": "^[a-c]+$"}).compile().n_dfa_states
    counted = JsonSchema(_schema("^[a-c]+$", 0, 1_000_000)).compile().n_dfa_states
    assert counted == unrolled
    m = JsonSchema(_schema("^[a-c]+$", 0, 100_000))
    assert m.matches('"' + "ab" * 50_000 + '"') and not m.matches('"' + "ab" * 50_000 + 'c"')


def test_length_range():
    for pattern, expected in [("^(é|ab)c$", (2, 3)), ("^a{5,96}$", (5, 96)), ("^a+$", (1, None)),
                              ("^\\\\x{2}$", (3, 3)), ("^$", (0, 0))]:
        dfa = compile_regex(pattern, 0, search=True, char_class=json_char_class, ecma=True)
        assert count_range(dfa, char_boundaries(dfa)) == expected, pattern
    # bounds every match keeps are not counted: the automaton alone
    plain = JsonSchema({"type": "string", "pattern": "^[a-c]{5,96}$"}).compile()
    kept = JsonSchema(_schema("^[a-c]{5,96}$", 5, 96)).compile()
    assert kept.terminal_keys == plain.terminal_keys


def test_boundaries_and_lengths():
    dfa = compile_regex("^(é|ab)c$", 0, search=True, char_class=json_char_class, ecma=True)
    boundaries = char_boundaries(dfa)
    bits, tail = count_lengths(dfa, boundaries)
    assert bits[0] == 0b1100 and not tail[0]  # "éc" and "abc": 2 or 3 characters
    # lengths with a period past the table never settle
    with pytest.raises(Exception, match="settle"):
        JsonSchema(_schema("^(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)*$",
                           0, 100))


@pytest.mark.parametrize("pattern", ["^[a-c]*$", "^(ab|c)*$", "^a*b?$", "^[aé\"]*b?[ab]*$"])
def test_a_counted_terminal_without_its_empty_match_keeps_its_lengths(pattern):
    # the empty match is an epsilon edge of its own: the automaton the core runs has a start
    # that does not accept, and the lengths it carries per state must be those of that
    # automaton (counted again here, on it)
    dfa = compile_regex(pattern, 0, search=True, char_class=json_char_class, ecma=True)
    m = CharCountedTerminal(dfa, char_boundaries(dfa), 0, 200, "t")
    found = _terminal_dfa(m, m.terminal_key(), TERM_CHARS, m.min_count)
    assert found is not None and dfa.accept[0]
    run, (boundaries, bits, tail, full_stops) = found
    assert not run.accept[0] and run.n_states == dfa.n_states + 1
    assert (bits, tail) == count_lengths(run, boundaries)
    assert boundaries == char_boundaries(run)
    assert list(full_stops) == list(_full_stops(run, (boundaries, bits, tail)))
    for text in ["", "a", "ab", "c" * 5, "abc", "b", "é\\\"b"]:
        data = text.encode()
        assert run.matches(data) == (bool(data) and dfa.matches(data)), text


def test_a_pattern_with_no_match_of_a_length_in_bounds_matches_nothing():
    for pattern, lo, hi in [("^a{3}$", 65, None), ("^a{0,3}$", 70, 100), ("^(a|bé)$", 66, None)]:
        with pytest.raises(SchemaError, match="nothing is valid"):
            JsonSchema(_schema(pattern, lo, hi))
        # beside another branch the string is simply left out
        m = JsonSchema({"anyOf": [_schema(pattern, lo, hi), {"type": "number"}]})
        assert m.matches("1") and not m.matches('"aaa"') and not m.matches('"', partial=True)


def test_key_names_with_long_bounds_and_a_pattern_are_refused():
    with pytest.raises(SchemaError, match="key names"):
        JsonSchema({"type": "object", "propertyNames": {"pattern": "^a", "maxLength": 100}})


# --- masks -----------------------------------------------------------------------------------

def _vocab() -> Vocabulary:
    tokens = ['"', "a", "b", "c", "ab", "abc", "ca", "é", 'a"', 'b"', 'c"', "cc", "ccc",
              "cccc", "\\", '\\"', "\\u00e9", "aé", '"a', "bb"]
    return Vocabulary.from_tokens(tokens + ["<eos>"], eos_token_ids=[len(tokens)],
                                  special_token_ids=[len(tokens)])


VOCAB = _vocab()


@pytest.mark.parametrize("pattern, lo, hi", CASES)
@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False))
def test_masks_equal_brute_force_and_never_dead_end(pattern, lo, hi, rng):
    engine = StructuringEngine(VOCAB)
    engine.configure(_machine(pattern, lo, hi))
    for _ in range(60):
        got = mask_ids(engine)
        assert got == brute_force(engine)
        assert got, "an empty mask before the end"
        # the longest token half of the time, so that the bounds are reached
        longest = max(got, key=lambda t: -1 if t in VOCAB.eos_token_ids
                      else len(VOCAB.token_bytes(t)))
        choice = longest if rng.random() < 0.5 else rng.choice(sorted(got))
        if choice in VOCAB.eos_token_ids:
            break
        assert engine.consume_token(choice) is not None


def test_masks_equal_brute_force_llama3():
    llama = shared_vocab("llama3")
    schema = {"type": "object", "properties": {"email": {
        "type": "string", "format": "email", "maxLength": 70}}}
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema(schema))
    local = "a" * 60
    check_along(engine, llama.encode('{"email":"' + local + '@b.org"}'), every=4)
    engine.reset()
    for tid in llama.encode('{"email":"' + local + "@example."):
        assert engine.consume_token(tid) is not None
    allowed = mask_ids(engine)
    assert allowed == brute_force(engine)
    # 69 characters so far: one more letter, then the closing quote
    assert llama.encode("c")[0] in allowed and llama.encode("com")[0] not in allowed


def _lengths_by_search(dfa, counts, most: int) -> list[set[int]]:
    """Per state, the counted steps (up to `most`) of its paths to acceptance: a search of
    the (state, steps so far) pairs backwards from the accepting states."""
    pred = [[] for _ in range(dfa.n_states)]
    for s, row in enumerate(dfa.trans):
        for _, _, t in row:
            pred[t].append(s)
    found = {(s, 0) for s in range(dfa.n_states) if dfa.accept[s]}
    todo = list(found)
    while todo:
        t, steps = todo.pop()
        for s in pred[t]:
            pair = (s, steps + bool(counts[t]))
            if pair[1] <= most and pair not in found:
                found.add(pair)
                todo.append(pair)
    lengths = [set() for _ in range(dfa.n_states)]
    for s, steps in found:
        lengths[s].add(steps)
    return lengths


@pytest.mark.parametrize("seed", range(200))
def test_count_lengths_against_a_search(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 10)
    trans = [sorted({(b, b, rng.randrange(n)) for b in rng.sample(range(8), rng.randint(0, 3))})
             for _ in range(n)]
    accept = [rng.random() < 0.3 for _ in range(n)]
    counts = [rng.random() < 0.6 for _ in range(n)]
    dfa = DFA(trans, accept)
    lengths = _lengths_by_search(dfa, counts, 3 * LENGTH_BITS)
    settled = all((LENGTH_BITS in ls) == (LENGTH_BITS + 1 in ls) for ls in lengths)
    if not settled:
        with pytest.raises(GrammarError, match="settle"):
            count_lengths(dfa, counts)
        return
    bits, tail = count_lengths(dfa, counts)
    for s in range(n):
        assert bits[s] == sum(1 << k for k in lengths[s] if k < LENGTH_BITS)
        assert all((k in lengths[s]) == tail[s] for k in range(LENGTH_BITS, 3 * LENGTH_BITS))
