"""StructuringEngine: masks equal brute force over the vocabulary; the API and bad input."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import shared_vocab
from pse import (AnyOf, Chain, Character, Forward, Grammar, Json, JsonSchema, Loop, Optional,
                 Phrase, StructuringEngine, Vocabulary, Whitespace, fill_next_token_bitmask_par)
from pse._core.mask import _walk_subtrees_taken
from pse._core.slices import _subtrees_taken
from pse._core.stepper import consume_tokens
from test_properties import ALPHABET, json_values, trees


def brute_force(engine: StructuringEngine) -> set[int]:
    """Token t is allowed iff a copy of the live steppers consumes all of t's bytes; EOS iff
    the structure accepts. Independent of the trie walk: it runs the consume path."""
    vocab = engine.vocab
    steppers = engine.matcher.steppers()
    allowed = set()
    for i in range(vocab.size):
        if not vocab.has_token(i) or i in vocab.special_token_ids:
            continue
        if consume_tokens(steppers, [vocab.token_bytes(i)]):
            allowed.add(i)
    if engine.is_accepting():
        allowed |= set(vocab.eos_token_ids)
    return allowed


def mask_ids(engine: StructuringEngine) -> set[int]:
    return set(engine.allowed_token_ids().tolist())


def check_along(engine: StructuringEngine, token_ids: list[int], every: int = 1) -> None:
    """At each step of `token_ids` the mask equals brute force, and is never empty."""
    for k, tid in enumerate(token_ids + [None]):
        if k % every == 0 or tid is None:
            got = mask_ids(engine)
            assert got == brute_force(engine), k
            assert got, "an empty mask while the structure is incomplete"
        if tid is not None:
            assert tid in got or k % every, (k, tid)
            assert engine.consume_token(tid)


# --- a small vocabulary ----------------------------------------------------------------------

def small_vocab() -> Vocabulary:
    letters = sorted(set(ALPHABET.encode()))
    tokens = [bytes([b]) for b in letters] + ["é".encode()[:1], "é".encode()[1:]]
    tokens += ["ab", "ba", "a-", "-b", "aé", "éa", "é-", "aaa", "bb", "-", "--a", "ab-é", "b" * 5]
    tokens = list(dict.fromkeys(tokens))
    return Vocabulary.from_tokens(tokens + ["<eos>"], eos_token_ids=[len(tokens)],
                                  special_token_ids=[len(tokens)])


SMALL = small_vocab()


def greedy_ids(vocab: Vocabulary, data: bytes) -> list[int]:
    return vocab.encode(data)


def check_random_structure(tree, data) -> None:
    """A random structure on the small vocabulary, along a text its regex draws."""
    machine, regex = tree
    text = data.draw(st.from_regex(re.compile(regex), fullmatch=True).filter(
        lambda t: set(t) <= set(ALPHABET)))
    engine = StructuringEngine(SMALL)
    engine.configure(machine)
    check_along(engine, greedy_ids(SMALL, text.encode()))
    assert engine.is_accepting()


@given(trees, st.data())
def test_random_structures_small_vocab(tree, data):
    check_random_structure(tree, data)


def test_json_small_vocab():
    tokens = list('{}[],:"ab015-.e\\u') + ['{"', '":', '",', "ab", '"}', "1.", "e-", "\\u"]
    vocab = Vocabulary.from_tokens(tokens + ["<eos>"], eos_token_ids=[len(tokens)],
                                   special_token_ids=[len(tokens)])
    engine = StructuringEngine(vocab)
    engine.configure(Json())
    for text in ['{"a":[1,-1.5e-1,"b\\u00ab"]}', '[{"ab":{}},"",[]]', '0']:
        engine.reset()
        check_along(engine, vocab.encode(text))
        assert engine.is_accepting()


# --- the Llama 3 vocabulary ------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama():
    return shared_vocab("llama3")


def test_json_masks_equal_brute_force_llama3(llama):
    engine = StructuringEngine(llama)
    engine.configure(Json())
    text = json.dumps({"name": "Zoë \"q\" \\ é🎉", "n": [1, -2.5e-3, 0], "ok": True,
                       "x": None, "nested": {"k": [{"a": "b"}]}, "u": "\u00e9\n"},
                      separators=(",", ":"), ensure_ascii=False)
    check_along(engine, llama.encode(text), every=3)
    assert engine.is_accepting()


@settings(max_examples=6)
@given(json_values)
def test_random_json_values_llama3(llama, value):
    engine = StructuringEngine(llama)
    engine.configure(Json(whitespace=1))
    text = json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    check_along(engine, llama.encode(text), every=4)


@settings(max_examples=8)
@given(trees, st.data())
def test_random_structures_llama3(llama, tree, data):
    machine, regex = tree
    text = data.draw(st.from_regex(re.compile(regex), fullmatch=True).filter(
        lambda t: set(t) <= set(ALPHABET)))
    engine = StructuringEngine(llama)
    engine.configure(machine)
    check_along(engine, llama.encode(text), every=2)


def test_recursive_structure_llama3(llama):
    expr = Forward()
    atom = Character("0123456789", max_length=3) | Chain(Phrase("("), expr, Phrase(")"))
    expr.set(Loop(atom, 1, None, separator=Whitespace(0, 1) + AnyOf(Phrase("+"), Phrase("*"))
                  + Whitespace(0, 1)))
    engine = StructuringEngine(llama)
    engine.configure(expr)
    check_along(engine, llama.encode("(1+(22 * 3))*((4))+567"), every=2)
    assert engine.is_accepting()


def test_frames_and_items_seen_across_chunks():
    """Stack frames and the items a unique array has seen live in chunks that double in size
    (4,096 frames, then 8,192, ...; 1,024 items, then 2,048, ...). A parse that fills the
    first two chunks of each and goes into the third reads them back (a stack unwinding, an
    item repeating one from any chunk) and answers as the direct checks do."""
    nest = Forward()
    nest.set(Optional(Chain(Phrase("("), nest, Phrase(")"))))
    depth = 4096 + 8192 + 100
    assert nest.matches("(" * depth + ")" * depth)
    assert nest.compile().n_frames > 4096 + 8192
    assert not nest.matches("(" * depth + ")" * (depth - 1))
    assert not nest.matches("(" * depth + ")" * (depth + 1))

    unique = JsonSchema({"type": "array", "uniqueItems": True, "items": {"type": "number"}})
    items = list(range(1024 + 2048 + 100))
    assert unique.matches(json.dumps(items, separators=(",", ":")))
    for repeated in (0, 1500, len(items) - 1):  # seen in the first, second and third chunk
        text = json.dumps(items + [repeated], separators=(",", ":"))
        assert not unique.matches(text), repeated
    assert unique.matches(json.dumps(items + [len(items)], separators=(",", ":")))


def test_frames_are_interned_while_the_hash_grows():
    """The arena interns frames (equal frames, one id) through a hash that doubles as frames
    come, its ids moved to the larger one a few per new frame (no step pays for all). Two
    engines read one text of nested calls (4,000 frames: the hash grows from 1,024 slots to
    8,192), the second 150 bytes behind, so that it looks up frames made before a growth
    while they may still be in the smaller hash: it makes none (the frames are distinct, and
    as many as one engine alone makes over a structure of its own)."""
    def nested_calls():
        outer, inner = Forward(), Forward()
        outer.set(Optional(Chain(Phrase("("), inner, Phrase(")"))))
        inner.set(Optional(Chain(Phrase("["), outer, Phrase("]"))))
        return outer

    vocab = Vocabulary.from_tokens(["(", "["])
    text = [0, 1] * 2100
    alone = nested_calls()
    engine = StructuringEngine(vocab)
    engine.configure(alone)
    for token in text:
        assert engine.consume_token(token)
    shared = nested_calls()
    lead, behind = StructuringEngine(vocab), StructuringEngine(vocab)
    lead.configure(shared)
    behind.configure(shared)
    for i in range(len(text) + 150):
        if i < len(text):
            assert lead.consume_token(text[i])
        if i >= 150:
            assert behind.consume_token(text[i - 150])
    frames = shared.compile().arena_frames()
    assert alone.compile().n_frames >= 4000
    assert len(frames) == len(set(frames)) == alone.compile().n_frames


def test_counted_run_near_its_bounds(llama):
    engine = StructuringEngine(llama)
    engine.configure(Chain(Character("ab", min_length=3, max_length=7), Phrase(";")))
    check_along(engine, llama.encode("abbab;"))
    engine.reset()
    assert engine.consume_token(llama.lookup(b"ab"))
    assert mask_ids(engine) == brute_force(engine)


@pytest.mark.parametrize("schema, text", [
    ({"type": "string", "minLength": 4, "maxLength": 10}, "é\\n🎉ab\\\"cd"),  # 10 chars
    ({"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
     ["ab", "é🎉", ""]),
    ({"type": "object", "properties": {"k": {"type": "string", "minLength": 2}}},
     {"k": "xyz", "other": "a"}),
])
def test_counted_strings_near_their_bounds(llama, schema, text):
    """Strings whose length bounds make every count a mask of its own (counted from one walk
    of the vocabulary per terminal state): brute force at every step, and after every
    single-byte and single-character token the structure could take next."""
    engine = StructuringEngine(llama)
    engine.configure(schema)
    check_along(engine, llama.encode(json.dumps(text, separators=(",", ":"),
                                                ensure_ascii=False)))
    assert engine.is_accepting()
    engine.reset()
    engine.consume_tokens(llama.encode('"' if isinstance(text, str) else
                                       '["' if isinstance(text, list) else '{"k":"'))
    for piece in ["a", "é", "\\t", "b", "c", "d", "e", "f", "g", "h"]:
        tid = llama.lookup(piece.encode())
        if not engine.consume_token(tid):
            break
        assert mask_ids(engine) == brute_force(engine), piece


@pytest.mark.parametrize("order", ["schema", "any"])
def test_other_keys_beside_listed_names_mask_exactly(llama, order):
    """The masks of the "other keys" automaton's states on the names' spelling trie are
    derived from a plain key state's (less the places where a name would end): brute force
    at every step while listed names, their prefixes and extensions, escapes and other keys
    are written."""
    schema = {"type": "object", "properties": {
        "name": {"type": "integer"}, "nab": {"type": "integer"}, "i/d": {"type": "integer"},
        "q\"x": {"type": "integer"}}}
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema(schema, property_order=order))
    for value in ({"name": 1, "nab": 2, "i/d": 3, 'q"x': 4, "namex": 5, "na": 6, "": 7,
                   "i\\/d": 8, "n\u00e9": 9},
                  {"nab": 1, "name": 2, "q": 3, "q\"": 4, "i/": 5, "na\"me": 6}):
        if order == "schema":
            value = dict(sorted(value.items(), key=lambda kv: (
                list(schema["properties"]).index(kv[0]) if kv[0] in schema["properties"]
                else len(schema["properties"]))))
        engine.reset()
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        check_along(engine, llama.encode(text))
        assert engine.is_accepting()

def test_bounded_other_keys_beside_listed_names_mask_exactly(llama):
    """Where the key language is bounded (propertyNames maxLength 2), a listed name can be a
    place the other keys' automaton cannot go on from, though its plain twin can end there:
    such states are walked, not derived (a token ending at the name was allowed and
    refused). Brute force after a key prefix, and a name's prefix, at every step."""
    schema = {"properties": {"ab": {}}, "propertyNames": {"maxLength": 2}}
    engine = StructuringEngine(llama)
    engine.configure(JsonSchema(schema))
    for text in ('{"x":0,"a', '{"x":0,"ac":1,"b":2}'):
        engine.reset()
        check_along(engine, llama.encode(text))
    assert engine.is_accepting()
    engine.reset()
    engine.consume_tokens(llama.encode('{"x":0,"a'))
    assert not engine.consume_token(llama.lookup(b"b"))  # "ab" is listed: not after "x"



def test_item_counts_in_the_register_mask_exactly(llama, monkeypatch):
    """Arrays whose item bounds are counted in the register (forced here with COUNTED_ITEMS
    at 0): masks equal brute force up to the maximum, where only "]" may follow."""
    import pse.json_schema.arrays as arrays

    monkeypatch.setattr(arrays, "COUNTED_ITEMS", 0)
    engine = StructuringEngine(llama)
    engine.configure({"type": "array", "items": {"type": "integer"}, "minItems": 2,
                      "maxItems": 3})
    check_along(engine, llama.encode("[1,22,3]"))
    assert engine.is_accepting()
    engine.reset()
    engine.consume_tokens(llama.encode("[7"))
    assert llama.lookup(b"]") not in mask_ids(engine)  # one item is too few
    assert mask_ids(engine) == brute_force(engine)


# --- API ------------------------------------------------------------------------------------

def engine_for(structure, vocab=SMALL) -> StructuringEngine:
    engine = StructuringEngine(vocab)
    engine.configure(structure)
    return engine


def test_mask_layout_and_fill():
    engine = engine_for(Phrase("ab"))
    bits = engine.compute_mask()
    assert bits.dtype == np.int32 and bits.shape == ((SMALL.size + 31) // 32,)
    a, ab = SMALL.lookup(b"a"), SMALL.lookup(b"ab")
    assert (bits[a // 32] >> (a % 32)) & 1 and (bits[ab // 32] >> (ab % 32)) & 1
    batch = np.zeros((3, engine.n_words), dtype=np.int32)
    engine.fill_next_token_bitmask(batch, 2)
    assert np.array_equal(batch[2], bits) and not batch[:2].any()


def test_eos_exactly_when_accepting():
    eos = SMALL.eos_token_ids[0]
    engine = engine_for(Loop(Phrase("a"), 1, 2))
    assert eos not in mask_ids(engine)
    assert not engine.consume_token(eos)
    assert engine.consume_token(SMALL.lookup(b"a"))
    assert eos in mask_ids(engine)
    assert engine.consume_token(eos) and engine.is_finished
    assert mask_ids(engine) == {eos}
    assert not engine.consume_token(SMALL.lookup(b"a"))


def test_consume_rollback_reset_copy():
    engine = engine_for(Phrase("aba"))
    a, b = SMALL.lookup(b"a"), SMALL.lookup(b"b")
    assert not engine.consume_token(b)  # refused: nothing changes
    assert engine.consume_tokens([a, b, b]) == 2
    other = engine.copy()
    assert engine.consume_token(a) and engine.is_accepting()
    assert not other.is_accepting() and other.consume_token(a)
    engine.rollback(2)
    assert mask_ids(engine) == {SMALL.lookup(b"b"), SMALL.lookup(b"ba")}
    with pytest.raises(ValueError, match="roll back 5"):
        engine.rollback(5)
    engine.reset()
    assert engine.consume_token(SMALL.lookup(b"ab"))


def test_consume_heals_tokens_from_outside_the_mask():
    vocab = Vocabulary.from_tokens(["example", "example ", " ", "x"])
    engine = engine_for(Chain(Phrase("example"), Phrase("x")), vocab)
    assert engine.consume("example ", heal=False) is None
    assert engine.consume("example ") == 0  # healed to "example"
    assert engine.consume(3) == 3 and engine.is_accepting()
    engine.reset()
    assert engine.consume(1) == 0  # the id of "example " heals the same way
    assert engine.consume("zzz") is None


def test_parallel_fill_equals_serial(llama):
    engines = []
    texts = ['{"a":', '[1,2', '{"key":"val', '"str']
    for text in texts:
        e = StructuringEngine(llama)
        e.configure(Json())
        assert e.consume_tokens(llama.encode(text)) == len(llama.encode(text))
        engines.append(e)
    batch = np.zeros((len(engines), engines[0].n_words), dtype=np.int32)
    fill_next_token_bitmask_par(engines, batch)
    for i, e in enumerate(engines):
        assert np.array_equal(batch[i], e.compute_mask())


def test_torch_bitmask():
    torch = pytest.importorskip("torch", reason="torch is in the test extra")
    engine = engine_for(Phrase("ab"))
    t = torch.zeros((2, engine.n_words), dtype=torch.int32)
    engine.fill_next_token_bitmask(t, 1)
    assert np.array_equal(t[1].numpy(), engine.compute_mask())
    with pytest.raises(ValueError, match="int32"):
        engine.fill_next_token_bitmask(torch.zeros((2, engine.n_words), dtype=torch.int64))


# --- bad input -------------------------------------------------------------------------------

def test_unconfigured_engine():
    engine = StructuringEngine(SMALL)
    with pytest.raises(RuntimeError, match="configure"):
        engine.compute_mask()
    with pytest.raises(TypeError):
        StructuringEngine("vocab")
    with pytest.raises(TypeError, match="StateMachine"):
        engine.configure(42)


def test_bad_ids_and_bitmasks():
    engine = engine_for(Phrase("ab"))
    for bad in (-1, SMALL.size, 10**9):
        with pytest.raises(ValueError, match="out of range"):
            engine.consume_token(bad)
    with pytest.raises(ValueError):
        engine.consume_token("a")
    with pytest.raises(ValueError, match="words"):
        engine.fill_next_token_bitmask(np.zeros((1, engine.n_words + 1), dtype=np.int32))
    with pytest.raises(ValueError, match="int32"):
        engine.fill_next_token_bitmask(np.zeros((1, engine.n_words), dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        engine.fill_next_token_bitmask(np.zeros((1, engine.n_words), dtype=np.int32), 1)
    with pytest.raises(ValueError):
        engine.fill_next_token_bitmask([[0] * engine.n_words])
    assert engine.consume_token(SMALL.lookup(b"a"))  # the state survived all of that


def words_over(units: list[str], most: int) -> list[bytes]:
    """Every string of 1 to `most` of `units`, encoded."""
    words, out = [""], []
    for _ in range(most):
        words = [w + c for w in words for c in units]
        out += [w.encode() for w in words]
    return out


def check_taken(vocab: Vocabulary, structure, texts: list[str], takes: bool | None) -> None:
    """Masks equal brute force along each text, which the structure accepts; some subtree
    was taken at once (SliceCache.walk_terminal) iff `takes` (None: either way)."""
    taken = _subtrees_taken()
    engine = StructuringEngine(vocab)
    engine.configure(structure)
    for text in texts:
        engine.reset()
        check_along(engine, vocab.encode(text))
        assert engine.is_accepting(), text
    if takes is not None:
        assert (_subtrees_taken() > taken) == takes, structure


def test_subtrees_taken_at_once_small_vocab():
    """Every string of up to three characters from a few sets (text and non-ASCII characters;
    slash, newline, "é"; quote, backslash, apostrophe), tokens that stop inside a character,
    stray continuation bytes. Below a node, a state that comes back to itself over every kind
    of byte there takes every token at once (SliceCache.walk_terminal): strings, comments;
    states that loop on some kinds only, refuse some characters, or count, walk.
    Masks equal brute force."""
    tokens = []
    for units in (["a", " ", "é", "€"], ["a", "/", "\n", "é"], ["a", '"', "\\", "'"]):
        tokens += words_over(units, 3)
    tokens += ["é".encode()[:1], "€".encode()[:2], ("a" + "€").encode()[:3], "é".encode()[1:],
               ("a" + "é").encode()[:1] + "é".encode()[1:], *(bytes([b]) for b in b"[]{}:,*")]
    tokens = list(dict.fromkeys(tokens))
    vocab = Vocabulary.from_tokens(tokens + [b"<eos>"], eos_token_ids=[len(tokens)],
                                   special_token_ids=[len(tokens)])
    # (structure, texts, whether the shortcut must be taken: strings and comments yes, a
    # counted string no, others either way)
    for structure, texts, takes in [
        (Grammar('start: STRING+\nSTRING: /"([^"\\\\]|\\\\.)*"/\n%ignore " "\n'),
         ['"a é\\"€" "*/"', '"éé  a" "" "\'\\\\"'], True),
        (Grammar("start: /'[^']*'/+"), ["'a\"é/*\n€''a'"], True),
        (Grammar.from_gbnf('root ::= "\\"" [^"\\\\\\x7F\\x00-\\x1F]* "\\""'),
         ['"a é*/€ a\'"', '""'], True),
        (Grammar.from_gbnf('root ::= "/*" ( [^*] | ("*" [^/]) )* "*/"'),
         ['/* a\n"é" ** €/ */', '/**/'], True),
        (Grammar.from_gbnf('root ::= ("//" [^\\n]* "\\n")+'), ['// a*/ "é"\n//€\n'], True),
        (Grammar.from_gbnf('root ::= "\\"" [^"é]* "\\""'), ['"a €\\*/"', '"€€"'], None),
        (Grammar.from_gbnf('root ::= "\\"" [ -~]* "\\""'), ['"a *\\/ a"'], None),
        # (a JSON string's content counts its characters: a counted terminal, walked)
        (Json(whitespace=2), ['"a é\\"€"', '["", "é a", " €"]', '{"a": "\\\\ */"}'], None),
        (JsonSchema({"type": "string", "maxLength": 3}), ['"é€a"', '"\\"a"'], False),
        (Chain(Loop(Character("a é*"), 1), Phrase('"')), ['a é*"', 'éa"'], None),
    ]:
        check_taken(vocab, structure, texts, takes)


def test_subtrees_taken_at_once_names_and_numbers():
    """A state inside a name or a number loops on letters, digits and underscores, and may
    end anywhere: a subtree below holding only those is taken at once, even where what
    follows the name may start with them. What follows a terminal is what follows its
    rule's calls where the rule may end there (a recursive rule). Every string of up to
    three characters over "a", "b", "1" and over "c", "d", of up to two over those and "_",
    " ", "=", "+", newline, "A", "(", ")". Masks equal brute force."""
    tokens = list(dict.fromkeys(
        words_over(["a", "b", "1"], 3) + words_over(["c", "d"], 3)
        + words_over(["a", "b", "c", "1", "_", " ", "=", "+", "\n", "A", "(", ")"], 2)))
    vocab = Vocabulary.from_tokens(tokens + [b"<eos>"], eos_token_ids=[len(tokens)],
                                   special_token_ids=[len(tokens)])
    for structure, texts, takes in [
        (Grammar.from_gbnf('root ::= (name ws "=" ws expr "\\n")+\n'
                           'expr ::= term (ws "+" ws term)*\nterm ::= name | num\n'
                           'name ::= [a-z] [a-z0-9_]*\nnum ::= [0-9]+\nws ::= " "*'),
         ["ab_1 = b + 11\n", "a=1+ba\nb = a_\n"], True),
        (Grammar("start: (NAME \"=\" INT \"\\n\")+\nNAME: /[a-zA-Z_][a-zA-Z0-9_]*/\n"
                 "INT: /[0-9]+/\n%ignore \" \""), ["Ab_ = 1\nb=11\n"], True),
        # a recursive rule: what follows a name is what follows the rule's calls
        (Grammar('start: expr "=" expr\nexpr: NAME | "(" expr ")" | "+" expr\n'
                 'NAME: /[a-z][a-z0-9_]*/'), ["(ab)=((+a_1))", "a=+b"], True),
        # a digit may follow the letters, a letter the digits
        (Grammar.from_gbnf('root ::= (letters digits)+\nletters ::= [a-z]+\n'
                           'digits ::= [0-9]+'), ["ab1ba11a1"], None),
        # letters, then digits after "=" only: "ab1" is not within
        (Grammar.from_gbnf('root ::= [a-z]+ "=" [0-9]+'), ["cd=11", "ab=1"], True),
        # the name may be followed by a letter
        (Grammar("start: NAME \"=\" NAME \"b\"\nNAME: /[a-z0-9_]+/"), ["ab=ab_1ab"], True),
    ]:
        check_taken(vocab, structure, texts, takes)


def test_walks_below_exits_take_subtrees_at_once():
    """Below an exit, where the live states are walked (no cached entry), a terminal started
    there that comes back to itself over every kind of byte below a node takes that subtree
    at once: a name right after a keyword (Lark's dynamic lexer: "nota" is "not" "a"). A
    name of at most three letters does not loop: "notaaaa" is refused. Masks equal brute
    force."""
    tokens = [b"n", b"no", b" ", b"a", b"aa", b"(", b")"] + [b"not" + b"a" * n for n in range(5)]
    vocab = Vocabulary.from_tokens(tokens + [b"<eos>"], eos_token_ids=[len(tokens)],
                                   special_token_ids=[len(tokens)])
    for source, texts, takes in [
        ('start: "not" NAME\nNAME: /[a-z]+/', ["notaaaa", "notaa"], True),
        ('start: expr\nexpr: "not" NAME | "(" expr ")"\nNAME: /[a-z]+/\n%ignore " "',
         ["(notaaaa)", "( nota )", "nota"], True),
        ('start: "not" NAME\nNAME: /[a-z]{1,3}/', ["nota", "notaaa"], False),
    ]:
        before = _walk_subtrees_taken()
        check_taken(vocab, Grammar(source), texts, None)
        assert (_walk_subtrees_taken() > before) == takes, source


def test_utf8_reader():
    """The UTF-8 reader of the taken-at-once check (pse/_core/byte_kinds.pyx) against Python's
    decoder: a byte string reads through iff it is well-formed UTF-8 cut anywhere; and its
    per-kind fold (reader_states_ok) against the reader state by state."""
    from pse._core.byte_kinds import _reader_states_ok, _utf8_next

    def reads(data: bytes) -> bool:
        u = 0
        for b in data:
            u = _utf8_next(u, b)
            if u < 0:
                return False
        return True

    def well_formed_prefix(data: bytes) -> bool:
        try:
            data.decode("utf-8")
            return True
        except UnicodeDecodeError as e:
            return e.end == len(data) and e.reason == "unexpected end of data"

    probes = sorted({0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                     0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5,
                     0xFF})
    for n in range(1, 5):
        for data in itertools.product(probes, repeat=n):
            assert reads(bytes(data)) == well_formed_prefix(bytes(data)), bytes(data)
    for b in range(256):
        for below in range(256):
            want = sum(1 << u for u in range(8)
                       if _utf8_next(u, b) >= 0 and (below >> _utf8_next(u, b)) & 1)
            assert _reader_states_ok(b, below) == want, (b, below)


@pytest.mark.parametrize("name, value", [("entry_term", 2 ** 31), ("node_end", 256),
                                         ("term_first", -1), ("guard_forbid", -1)])
def test_table_values_past_their_type_are_refused(name, value):
    """The compiler's tables go into typed memory: a value its type cannot hold is an error,
    not a number cut down to fit."""
    from pse._core.structure import CompiledStructure
    from pse.compiler import _tables
    tables, n_rules = _tables(Chain(Phrase("ab"), Phrase("cd")))
    tables[name] = [value] + list(tables[name])[1:]
    with pytest.raises(OverflowError):
        CompiledStructure(None, tables, n_rules)


_FORMS = {
    "list": lambda a: a.tolist(),
    "wider": lambda a: a.astype(np.int64) if a.dtype.itemsize < 8 else a.astype(np.uint64),
    "byte-swapped": lambda a: a.astype(a.dtype.newbyteorder(">")),  # (the same type number)
    "strided": lambda a: np.repeat(a, 2)[::2],
}


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_tables_in_any_form_compile_alike(monkeypatch, form):
    """CompiledStructure takes the compiler's arrays as they are where they have their table's
    type and layout; a list, or an array of another type, byte order or layout, is read by its
    values: each form of the same tables accepts the texts jsonschema accepts."""
    import jsonschema

    from pse import compiler

    real = compiler._tables
    calls = []

    def altered(machine):
        calls.append(machine)
        tables, n_rules = real(machine)
        changed = {name: _FORMS[form](value) for name, value in tables.items()
                   if isinstance(value, np.ndarray) and value.ndim == 1}
        assert changed  # (the compiler gives arrays: the test reads them in another form)
        return {**tables, **changed}, n_rules

    monkeypatch.setattr(compiler, "_tables", altered)
    schema = {"type": "object", "required": ["a"],
              "properties": {"a": {"type": "integer", "maximum": 300},
                             "b": {"enum": ["x", "yz"]}, "c": {"pattern": "^[ab]{2,3}$"}}}
    structure = JsonSchema(schema)
    texts = ['{"a":1}', '{"a":300,"b":"yz"}', '{"a":301}', '{"b":"x"}', '{"a":1.5}',
             '{"a":1,"b":"z"}', '{"a":-4,"c":"aba"}', '{"a":1,"c":"abab"}', '{"a":1,"c":"a"}']
    for text in texts:
        valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
        assert structure.matches(text) == valid, text
    assert calls  # (the structure was compiled from the altered tables)
