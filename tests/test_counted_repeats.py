"""A pattern's long bounded repeat counted at run time (regex.compile_counted_regex,
automaton.count_marks, CountedTerminal) rather than unrolled: the language checked against
`re`, the masks against brute force over the vocabulary."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from pse import GrammarError, JsonSchema, StructuringEngine, Vocabulary
from pse.json_spelling import json_char_class
from pse.machines import MAX_STEPS, Chain, CountedTerminal, Loop, Optional
from pse.regex import compile_counted_regex
from conftest import shared_vocab
from test_engine import brute_force, check_along, mask_ids


def _run(found, data: bytes) -> bool:
    """The counted automaton as the core runs it: a step counts where it enters a counted
    state; the text matches where it ends accepting with a count within the bounds."""
    dfa, counted, lo, hi = found
    s = count = 0
    for b in data:
        s = dfa.next(s, b)
        if s < 0:
            return False
        count += counted[s]
    return dfa.accept[s] and lo <= count and (hi is None or count <= hi)


COUNTED = [
    r"(?:\S+\s+){0,20}\S+",       # a word count: where a word starts shows a byte later
    r"(?:[ab]+ +){2,18}[ab]+",
    r"(ab){0,30}",
    r"(?:a|ab){17,40}",           # alternatives within an iteration
    r"x(?:a|b|c){3,25}y",
    r"(?:a+b){0,20}a*",
    r"(?:\w+[,;] ?){1,20}",
    r"é(?:[aé]{1,2} ){0,17}",     # two-byte characters
    r"(?:ab|ba){0,20}(?:aa)?",
    r"(\d{2}-){1,17}",
    r"$|(?:b+ ){0,30}a",          # beside an empty branch, from zero
    r"(?:[ab]+ +){3,}[ab]+",      # with no most
    r"x(?:a|b|c){5,}y",
    r"(?:a|ab){4,}b?",
]
PIECES = ["a", "b", " ", "ab", "ba", "aa", "é", "12-", "x", "y", ",", "\t", "b "]


@pytest.mark.parametrize("pattern", COUNTED)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=50), st.integers(0, 45))
def test_counted_repeats_agree_with_re(pattern, pieces, words):
    found = compile_counted_regex(pattern, min_states=0)  # (however small)
    assert found is not None, pattern
    # a text of pieces, and one of `words` repetitions near the bounds
    for text in ("".join(pieces), "ab " * words + "ab", "x" + "a" * words + "y",
                 "12-" * words, "é" + "a " * words, "b " * words + "a"):
        assert _run(found, text.encode()) == (re.fullmatch(pattern, text) is not None), text


# counted repeats whose texts run into each other's: where one may end and the next begin at
# many places, the next is a live state per place, and those past their least count are one
# (the smallest count reads all the others read: stateset_add_in). (units, least, most)
RUNNING_ON = [(("a", "b"), 2, 9), (("a", "ab"), 1, 7), (("a",), 3, 12), (("b", "ba"), 0, 6),
              (("aa", "b"), 4, None)]


def _running_on_pattern(units: tuple[str, ...], lo: int, hi: int | None) -> str:
    return "(?:%s){%d,%s}" % ("|".join(units), lo, "" if hi is None else hi)


def _counted_terminal(pattern: str, cache: dict = {}) -> CountedTerminal:
    if pattern not in cache:
        dfa, counted, lo, hi = compile_counted_regex(pattern, min_states=0)
        cache[pattern] = CountedTerminal(dfa, counted, lo, hi, pattern)
    return cache[pattern]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(RUNNING_ON), min_size=1, max_size=3), st.booleans(),
       st.text("ab", max_size=40), st.randoms(use_true_random=False))
def test_counted_terminals_running_on_agree_with_re(parts, looped, text, rng):
    """Counted terminals in a row (the last one repeated, or optional) against `re`, on a
    random text and on texts of each repeat's least, most or some count between, give or
    take a character."""
    patterns = [_running_on_pattern(*part) for part in parts]
    terminals = [_counted_terminal(p) for p in patterns]
    last = Loop(terminals[-1], 1) if looped else Optional(terminals[-1])
    machine = Chain(*terminals[:-1], last) if len(terminals) > 1 else last
    regex = re.compile("".join(f"(?:{p})" for p in patterns[:-1])
                       + f"(?:{patterns[-1]})" + ("+" if looped else "?"))
    samples = [text]
    for _ in range(4):
        sample = ""
        for units, lo, hi in parts:
            most = lo + 9 if hi is None else hi
            count = rng.choice([lo, most, rng.randint(lo, most)])
            sample += "".join(rng.choice(units) for _ in range(count))
        samples += [sample, sample + rng.choice("ab"), sample[:-1]]
    for sample in samples:
        assert machine.matches(sample) == (regex.fullmatch(sample) is not None), sample


@pytest.mark.parametrize("pattern", [
    r"(a|aa){0,30}",      # "aa": one iteration or two
    r"(x{0,20}y)*",       # inside another repeat: its count would add up over theirs
    r"a|(b){20,30}",      # needs iterations, on one branch only
    r"(?=a)(ab){0,30}",   # a lookaround
    r"(ab)*", r"(ab){1,}",  # a star, a plus: nothing to count
    # anchors inside: a mark would be a byte before the text's start to them
    r"(?:(?:^|,)[a-z]+){1,50}", r"(?:^a|b){0,30}", r"(?: b)?(?:^a(?:b)+?){0,25}",
    r"(?:[^a]*){1,20}^", r"(?:^){1,40}",
])
def test_repeats_not_counted(pattern):
    assert compile_counted_regex(pattern, min_states=0) is None


@pytest.mark.parametrize("pattern, text", [
    ("^(?:(?:^|,)[a-z]+){1,500}$", "a,b,c"), ("^(?:(?:^|\\s+)\\S+){1,60}$", "hello world")])
def test_anchors_inside_a_long_repeat(pattern, text):
    m = JsonSchema({"type": "string", "pattern": pattern})
    for s in (text, "a", ",a", "a b" * 100):
        expected = re.search(pattern.replace("$", "\\Z"), s) is not None
        assert m.matches(json.dumps(s)) == expected, s


def test_small_repeats_are_unrolled():
    assert compile_counted_regex("(ab){0,30}") is None  # 60 NFA states or so
    assert compile_counted_regex("(ab){0,30}", min_states=0) is not None
    assert compile_counted_regex("(?:[a-z]+ +){0,300}[a-z]+") is not None


WORDS = "^(?:\\S+\\s+){0,19}\\S+$"  # as JSON Schema patterns count words
MANY_WORDS = "^(?:\\S+\\s+){19,}\\S+$"  # twenty words or more: no most


def _words(n: int, spaces: str = " ") -> str:
    return spaces.join(("w%dé" % i) if i % 3 else ('a"\\b' if i % 2 else "x") for i in range(n))


@pytest.mark.parametrize("pattern", [WORDS, MANY_WORDS])
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", '"', "\\", " ", "\t", "\n", "\u00a0", "\u3000", "b"]),
                max_size=60), st.integers(0, 24))
def test_word_counts_agree_with_re(pattern, chars, n):
    assert _counted_in_json(pattern)
    m = _schema_machine(pattern, 1)
    # (no character \s means differently to ECMA-262 and to Python here; ECMA's $ is the
    # end of the text: Python's \Z)
    for text in ("".join(chars), _words(n), _words(n, " \t\u00a0"), _words(n) + " "):
        expected = re.search(pattern.replace("$", "\\Z"), text) is not None
        assert m.matches(json.dumps(text, ensure_ascii=False)) == expected, text


def _schema_machine(pattern: str, min_length: int = 0, cache: dict = {}) -> JsonSchema:
    key = (pattern, min_length)
    if key not in cache:
        cache[key] = JsonSchema({"type": "string", "pattern": pattern, "minLength": min_length})
    return cache[key]


def test_word_counts_are_counted_not_unrolled():
    def compiled(n: int, **bounds):
        schema = {"type": "string", "pattern": "^(?:\\S+\\s+){0,%d}\\S+$" % n, **bounds}
        return JsonSchema(schema).compile()

    # minLength 1 every match meets: counted, the automaton the same for any bound
    assert compiled(199, minLength=1).n_dfa_states == compiled(20).n_dfa_states
    # a maxLength that not every match meets would be a second count: unrolled
    assert compiled(20, maxLength=300).n_dfa_states > 10 * compiled(20).n_dfa_states
    m = JsonSchema({"type": "string", "pattern": "^(?:\\S+\\s+){0,199}\\S+$"})
    spelled = lambda n, spaces=" ": json.dumps(_words(n, spaces), ensure_ascii=False)
    assert m.matches(spelled(200)) and not m.matches(spelled(201))
    assert m.matches(spelled(200, "\n\t")) and not m.matches(spelled(0))


def _counted_in_json(pattern: str):
    return compile_counted_regex(pattern, 0, search=True, char_class=json_char_class, ecma=True)


def test_a_counted_repeat_is_a_counted_terminal():
    dfa, counted, lo, hi = _counted_in_json(WORDS)
    assert (lo, hi) == (0, 19) and any(counted) and not counted[0]
    t = CountedTerminal(dfa, counted, lo, hi, "words")
    assert t.matches_some_length() and t.terminal_key()[0] == "counted"
    # the core counts in 32-bit ints: past MAX_STEPS a count is refused here, not by the
    # tables (an OverflowError from the compile)
    assert CountedTerminal(dfa, counted, 0, MAX_STEPS, "words").max_steps == MAX_STEPS
    for low, high in ((0, MAX_STEPS + 1), (MAX_STEPS + 1, None)):
        with pytest.raises(GrammarError, match="MAX_STEPS"):
            CountedTerminal(dfa, counted, low, high, "words")


# --- masks -----------------------------------------------------------------------------------

def _vocab() -> Vocabulary:
    tokens = ['"', "a", "b", " ", "a ", " a", "ab", "\\", "\\n", "\\t", "\\u", "00", "a0", "e9",
              "\\u00a0", "\\u00e9", "é", "a\"", 'a"', 'b"', "  ", "a b", " \\n", "\\\"", "20"]
    # every printable ASCII character alone too: whatever the automaton allows can be spelled
    tokens = list(dict.fromkeys(tokens + [chr(c) for c in range(0x20, 0x7F)]))
    return Vocabulary.from_tokens(tokens + ["<eos>"], eos_token_ids=[len(tokens)],
                                  special_token_ids=[len(tokens)])


VOCAB = _vocab()


@pytest.mark.parametrize("pattern", [WORDS, "^$|(^(?:\\S+\\s+){0,17}\\S+$)",
                                     "^(?:a\\s){3,60}b$", MANY_WORDS])
@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False))
def test_masks_equal_brute_force_and_never_dead_end(pattern, rng):
    assert _counted_in_json(pattern)
    engine = StructuringEngine(VOCAB)
    engine.configure(_schema_machine(pattern))
    for _ in range(90):
        got = mask_ids(engine)
        assert got == brute_force(engine)
        assert got, "an empty mask before the end"
        # a space or a short token most of the time, so that the count reaches its bound
        spaces = [t for t in got if VOCAB.token_bytes(t) in (b" ", b"a ", b"a b", b" a")]
        choice = rng.choice(spaces) if spaces and rng.random() < 0.7 else rng.choice(sorted(got))
        if choice in VOCAB.eos_token_ids:
            break
        assert engine.consume_token(choice) is not None


def test_masks_at_the_bound_llama3():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema({"type": "object", "properties": {"summary": {
        "type": "string", "pattern": "^(?:\\S+\\s+){0,19}\\S+$", "minLength": 1}}}))
    text = json.dumps(_words(20, " \n"), ensure_ascii=False)
    check_along(engine, llama.encode('{"summary":' + text + "}"), every=3)
    engine.reset()
    for tid in llama.encode('{"summary":"' + _words(20)):
        assert engine.consume_token(tid) is not None
    allowed = mask_ids(engine)
    assert allowed == brute_force(engine)
    # twenty words: the last may go on, no space may follow it
    assert llama.encode("x")[0] in allowed and llama.encode('"')[0] in allowed
    assert not any(llama.token_bytes(t)[:1].isspace() for t in allowed)
