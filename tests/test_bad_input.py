"""Bad input to the front ends, the engine and the vocabulary readers: each a typed error
with a clear message (PSEError's subclasses, or TypeError / ValueError for wrong arguments),
never an error of Python's or lark's own, a hang, or an allocation of its size."""

from __future__ import annotations

import itertools
import json
import random
import re

import numpy as np
import pytest

import pse
import pse.gbnf
from pse import GrammarError, SchemaError, VocabularyError


@pytest.mark.parametrize("make", [
    lambda: pse.Regex("a{99999999999999999999}"),
    lambda: pse.JsonSchema({"type": "string", "pattern": "^a{1,99999999999999999999}$"}),
    lambda: pse.Grammar.from_gbnf('root ::= "a"{99999999999999999999}'),
    lambda: pse.Grammar.from_gbnf('root ::= "a"{1000000}'),
    lambda: pse.Grammar.from_lark('start: "x" ~ 1000000'),
    lambda: pse.Grammar.from_lark('start: "x" ~ 2..1000000'),
], ids=["regex", "pattern", "gbnf-huge", "gbnf-million", "lark-million", "lark-range"])
def test_huge_repeat_counts_are_refused_at_once(make):
    """Counts past what compiles (Python's re limit, or MAX_NODES: every repeat is a parser
    node or an automaton state) are refused as they are read, not after minutes."""
    with pytest.raises(GrammarError, match="repetition number is too large|MAX_NODES"):
        make().compile()


@pytest.mark.parametrize("make", [
    lambda: pse.Regex("(" * 500 + "a" + ")" * 500),
    lambda: pse.Grammar.from_gbnf("root ::= " + "(" * 400 + '"a"' + ")" * 400),
    lambda: pse.Grammar.from_lark("start: " + "(" * 300 + '"a"' + ")" * 300),
    lambda: pse.JsonSchema("[" * 1000 + "]" * 1000),
], ids=["regex", "gbnf", "lark", "schema-text"])
def test_deep_nesting_is_a_typed_error(make):
    with pytest.raises(GrammarError, match="too deeply"):
        make().compile()


@pytest.mark.parametrize("make", [
    lambda n: pse.Grammar.from_gbnf("root ::= " + "(" * n + '"a"' + ")" * n),
    lambda n: pse.Grammar.from_gbnf('root ::= "a"' + "?" * n),
    lambda n: pse.Grammar.from_gbnf(
        "root ::= " + "(" * (n // 2) + '"a"' + ")?" * (n // 2) + "?" * (n % 2)),
    lambda n: pse.Grammar.from_lark("start: " + "(" * n + '"a"' + ")" * n),
    lambda n: pse.Grammar.from_lark("start: " + "[" * n + '"a"' + "]" * n),
    lambda n: pse.Grammar.from_lark("start: A\nA: " + "(" * n + '"a"' + ")" * n),
    lambda n: pse.Grammar.from_lark("start: " + "t{" * n + '"a"' + "}" * n + "\nt{x}: x\n"),
    lambda n: pse.Grammar.from_lark(
        "start: T1\n" + "".join(f"T{i}: T{i + 1}\n" for i in range(1, n)) + f'T{n}: "a"\n'),
], ids=["gbnf-groups", "gbnf-repeats", "gbnf-repeated-groups", "lark-groups", "lark-optional", "lark-terminal",
        "lark-template-arguments", "lark-terminal-chain"])
def test_grammars_nest_at_most_max_group_depth(make):
    """The grammar readers recurse per level, compiled by Cython, where Python's recursion
    limit does not stop them: MAX_GROUP_DEPTH levels compile, one more is a typed error, and
    so are 20,000 (nested groups crashed the process; a chain of terminals took minutes)."""
    make(pse.limits.MAX_GROUP_DEPTH).compile()
    for n in (pse.limits.MAX_GROUP_DEPTH + 1, 20_000):
        with pytest.raises(GrammarError, match="too deeply"):
            make(n).compile()


def test_gbnf_repetitions_of_closed_groups_are_levels_too():
    """Repetitions after each closing parenthesis nest around what the groups hold: 200
    groups with 1, 2, ... 200 repetitions after their ends are 20,300 levels (their count
    missed them, and turning it into Lark text crashed the process)."""
    text = "root ::= " + "(" * 200 + '"a"' + "".join(")" + "?" * j for j in range(1, 201))
    for read in (pse.gbnf.to_lark, pse.gbnf.to_bnf, lambda t: pse.Grammar.from_gbnf(t).text):
        with pytest.raises(GrammarError, match="too deeply"):
            read(text)


@pytest.mark.parametrize("make, unit", [
    (lambda n: pse.Grammar.from_gbnf('root ::= ("a" | "bb")' + "{2}" * n), "(?:a|bb)"),
    (lambda n: pse.Grammar.from_lark("start: " + "(" * n + "x" + ") ~ 2" * n
                                     + '\nx: "a" | "bb"\n'), "(?:a|bb)"),
    (lambda n: pse.Grammar.from_lark("start: " + "(" * n + '"a" "bb"' + ") ~ 2" * n), "abb"),
], ids=["gbnf", "lark-rule", "lark-sequence"])
def test_nested_counts_compile_in_linear_time(make, unit):
    """n nested counts of 2: spelled out in copies, what they repeat doubled n times (40 took
    longer than the compile budget); past MAX_SPELLED_OUT symbols a count repeats a rule. Six
    levels match what `re` matches; forty compile."""
    oracle = re.compile("(?:" * 6 + unit + "){2}" * 6)
    grammar = make(6)
    rng = random.Random(6)
    for copies in (63, 64, 65, 64, 64, 128):
        text = "".join(rng.choice(["a", "bb"]) if unit != "abb" else "abb"
                       for _ in range(copies))
        assert grammar.matches(text) == bool(oracle.fullmatch(text)), text
    make(40).compile()


def test_nested_counts_past_the_automaton_limit_are_refused_before_they_are_built():
    """GBNF reads a regular run as one terminal where its automaton fits: `("a"){2}` nested
    40 deep was tried so at each level past a{2^16}, and each built MAX_NFA_STATES states
    before it failed (80 levels read in 20 s). A level's count is now kept at run time up
    to the most the core counts (machines.MAX_STEPS, past a{2^30}); the levels past it are
    refused before they are built (regex.fewest_nfa_states) and repeat a rule (a count past
    MAX_STEPS in the core's tables was an OverflowError); the language is "b" and
    a^(2^40)."""
    grammar = pse.Grammar.from_gbnf('root ::= "b" | ' + "(" * 40 + '"a"' + "){2}" * 40)
    assert grammar.matches("b")
    for n in (0, 1, 2, 3, 64, 2 ** 16, 2 ** 16 + 1):
        assert not grammar.matches("a" * n), n


def test_a_rule_of_many_alternatives_compiles():
    """100,000 alternatives: the compiler looked each one's end up in a list of the machine's
    end states (quadratic: 93 s, past the compile budget)."""
    grammar = pse.Grammar.from_gbnf("root ::= " + " | ".join(f'"w{i}"' for i in range(100_000)))
    for text in ("w0", "w99999", "w100000", "w", "w0w1"):
        assert grammar.matches(text) == bool(re.fullmatch(r"w(?:0|[1-9]\d{0,4})", text)), text


def test_lark_terminals_made_of_terminals_are_put_in_place_once():
    """`T{i}: T{i+1} T{i+1}`: lark's own resolution goes over the shared trees again and again
    (20 deep took 48 s); pse's puts each terminal in place once, and refuses at once a terminal
    larger than MAX_TERMINAL_PARTS spelled out."""
    def doubling(n):
        return pse.Grammar.from_lark("start: T0\n" + "".join(
            f"T{i}: T{i + 1} T{i + 1}\n" for i in range(n)) + f'T{n}: "x" | "yz"\n')
    grammar = doubling(4)
    for text in ("x" * 16, "x" * 15, "x" * 17, "yz" * 16, "yz" + "x" * 15, "y" + "x" * 15):
        assert grammar.matches(text) == bool(re.fullmatch("(?:x|yz){16}", text)), text
    with pytest.raises(GrammarError, match="MAX_TERMINAL_PARTS"):
        doubling(30)


def test_errors_of_pses_lark_reader_name_the_grammar_as_larks_do(tmp_path):
    """The errors of pse's own reading (its limits, rules it refuses) start with the grammar's
    file, or "grammar", as lark's errors wrapped by the reader do."""
    doubling = "start: T0\n" + "".join(f"T{i}: T{i + 1} T{i + 1}\n" for i in range(30)) \
        + 'T30: "x"\n'
    for text, error in [(doubling, "MAX_TERMINAL_PARTS"),
                        ("%import common.NUMBER -> x\nstart: x",
                         "rule start: uses the undefined rule 'x'"),
                        ('start: "a" y\n%declare y', "rule y is declared with %declare"),
                        ("start: (a) ~ 3..2\na: \"a\"", "rule start: bad range 3..2"),
                        ("start: (", "lark cannot read the grammar")]:  # (lark's own)
        for source in (None, str(tmp_path / "g.lark")):
            where = source or "grammar"
            with pytest.raises(GrammarError) as raised:
                pse.Grammar(text, source_path=source).compile()
            assert str(raised.value).startswith(f"{where}: "), str(raised.value)
            assert error in str(raised.value)


def test_a_syntax_error_lark_fails_to_word_is_a_grammar_error(tmp_path):
    """lark 1.3's reader raises TypeError while it words some syntax errors (its
    `match_examples` formats a parser state with %d): pse words them itself, in the grammar
    and in an imported one."""
    text = "%ignore[|/+/*%declare"
    with pytest.raises(GrammarError, match=r"^grammar: lark cannot read the grammar: "
                       r"Unexpected token .* at line 1 column \d+"):
        pse.Grammar.from_lark(text)
    (tmp_path / "broken.lark").write_text(text)
    with pytest.raises(GrammarError, match=r"Unexpected token .* in .*broken\.lark"):
        pse.Grammar("start: A\n%import broken.A\n", import_paths=[tmp_path]).compile()


def test_imported_terminals_count_in_the_bounds(tmp_path):
    """Terminals put in place in an imported grammar count with their depth and spelled-out
    size where they are used: counted as one level and a few parts, terminals doubling over
    an import ran for minutes, and chains split over imports went past MAX_GROUP_DEPTH."""
    (tmp_path / "doubling.lark").write_text("".join(
        f"D{i}: D{i + 1} D{i + 1}\n" for i in range(12)) + 'D12: "x" | "yz"\n')
    over = "start: T0\n" + "".join(f"T{i}: T{i + 1} T{i + 1}\n" for i in range(8)) \
        + "T8: D0\n%import doubling.D0\n"
    with pytest.raises(GrammarError, match="MAX_TERMINAL_PARTS"):
        pse.Grammar(over, import_paths=[tmp_path]).compile()
    half = pse.limits.MAX_GROUP_DEPTH // 2 + 1
    (tmp_path / "chain0.lark").write_text(
        "".join(f'T{i}: T{i + 1} "a"\n' for i in range(half)) + f'T{half}: "z"\n')
    (tmp_path / "chain1.lark").write_text(
        "".join(f'T{i}: T{i + 1} "a"\n' for i in range(half)) + f"T{half}: BASE\n"
        "%import chain0.T0 -> BASE\n")
    with pytest.raises(GrammarError, match="too deeply"):
        pse.Grammar("start: T0\n%import chain1.T0\n", import_paths=[tmp_path]).compile()
    grammar = pse.Grammar("start: T0\n%import chain0.T0\n", import_paths=[tmp_path])
    assert grammar.matches("z" + "a" * half) and not grammar.matches("z" + "a" * (half - 1))


def test_an_imported_file_not_utf8_is_a_grammar_error(tmp_path):
    (tmp_path / "latin.lark").write_bytes(b'X: "\xff"\n')
    with pytest.raises(GrammarError, match="not UTF-8"):
        pse.Grammar("start: X\n%import latin.X\n", import_paths=[tmp_path]).compile()


@pytest.mark.parametrize("text, message", [
    ('start: A\nA: "x" D\n%declare D\n', "D, which is %declare'd"),
    ("start: T0\n" + "".join(f'T{i}: T{(i + 1) % 300} "x"\n' for i in range(300)),
     "Recursion in terminal 'T0'"),
    ('start: A\nA: B "x"\nB: A\n', "Recursion in terminal 'A'"),
    ('start: A\nA: "x" b\nb: "y"\n', "Rules aren't allowed inside terminals"),
], ids=["declared", "cycle-300", "cycle-2", "rule"])
def test_bad_lark_terminals_are_grammar_errors(text, message):
    """A terminal made of a `%declare`d one leaked lark's AssertionError; a cycle longer
    than MAX_GROUP_DEPTH was reported as nesting too deeply."""
    with pytest.raises(GrammarError, match=re.escape(message)):
        pse.Grammar.from_lark(text).compile()


def _nested(depth: int, wrap, leaf):
    for _ in range(depth):
        leaf = wrap(leaf)
    return leaf


@pytest.mark.parametrize("make", [
    lambda n: _nested(n, lambda s: {"allOf": [s]}, {"type": "string"}),
    lambda n: _nested(n, lambda s: {"anyOf": [s, {"type": "null"}]}, {"type": "string"}),
    lambda n: {"enum": [_nested(n, lambda v: [v], 1)]},
    lambda n: {"const": _nested(n, lambda v: {"a": v}, 1)},
    lambda n: {"$ref": "#/$defs/x", "$defs": {"x": _nested(n, lambda s: {"allOf": [s]}, True)}},
], ids=["allOf", "anyOf", "enum", "const", "$defs"])
def test_deep_schema_document_is_a_typed_error(make):
    """A schema given as a dict can nest deeper than any JSON text Python reads; the
    compiler's passes recurse in C, so 50,000 nested allOf crashed the process (the stack
    overflowed) before MAX_DOCUMENT_DEPTH refused it."""
    with pytest.raises(SchemaError, match="MAX_DOCUMENT_DEPTH"):
        pse.JsonSchema(make(50_000))
    pse.JsonSchema(make(5))  # (shallow: compiles)


def test_deep_or_cyclic_retrieved_document_is_a_typed_error():
    deep = _nested(50_000, lambda s: {"allOf": [s]}, {"type": "string"})
    with pytest.raises(SchemaError, match=r"\$ref: https://example.com/deep.*MAX_DOCUMENT_DEPTH"):
        pse.JsonSchema({"$ref": "https://example.com/deep"}, retrieve=lambda uri: deep).compile()
    cyclic: dict = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}  # (no JSON text reads into this)
    with pytest.raises(SchemaError, match="MAX_DOCUMENT_DEPTH"):
        pse.JsonSchema(cyclic)


@pytest.mark.parametrize("tree_visits", [None, 1])
def test_document_sharing_containers_is_checked_by_its_longest_path(tree_visits, monkeypatch):
    """check_depth walks a document as a tree until that has cost _TREE_VISITS visits, then
    as a graph of shared containers: a document sharing its containers 2^60 ways is checked
    at once, and a path longer than MAX_DOCUMENT_DEPTH through containers also reached by
    short paths is still found (by either walk)."""
    from pse import schema_types

    if tree_visits is not None:
        monkeypatch.setattr(schema_types, "_TREE_VISITS", tree_visits)
    shared: dict = {"type": "string"}
    for _ in range(60):
        shared = {"allOf": [shared, shared]}
    schema_types.check_depth(shared, "#")  # (as a tree: 2^60 visits)
    chain = [{} for _ in range(schema_types.MAX_DOCUMENT_DEPTH + 10)]
    for outer, inner in zip(chain, chain[1:]):
        outer["next"] = inner
    with pytest.raises(SchemaError, match="MAX_DOCUMENT_DEPTH"):
        schema_types.check_depth({"each": chain}, "#")  # (each one also at depth 3)
    schema_types.check_depth({"each": chain[20:]}, "#")  # (the longest path: 992 deep)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_first_bad_keyword_in_document_order_is_named(order):
    """Of several wrongly typed keywords, the error names the first one in the document's
    order: a schema object's own keywords before the schemas inside it, those in the order
    of its keys."""
    parts = [("properties", {"a": {"type": "string"}, "b": {"minLength": -1}},
              "#/properties/b/minLength"),
             ("items", [{"type": "string"}, {"maxItems": "x"}], "#/items/1/maxItems"),
             ("not", {"allOf": [{"pattern": 5}]}, "#/not/allOf/0/pattern")]
    schema = {parts[i][0]: parts[i][1] for i in order}
    with pytest.raises(SchemaError, match="^" + re.escape(parts[order[0]][2] + ":")):
        pse.JsonSchema(schema)
    schema["required"] = 7  # (the root's own keyword, after the others)
    with pytest.raises(SchemaError, match="^#/required:"):
        pse.JsonSchema(schema)


def test_lark_range_of_strings_is_a_grammar_error():
    with pytest.raises(GrammarError, match="single characters"):
        pse.Grammar.from_lark('start: "ab".."z"')
    assert pse.Grammar.from_lark('start: "a".."c"').matches("b")


@pytest.mark.parametrize("schema, where", [
    ({"type": "number", "minimum": float("nan")}, "#/minimum"),
    ({"type": "integer", "minimum": float("nan")}, "#/minimum"),
    ('{"type": "number", "minimum": Infinity}', "#/minimum"),
    ({"type": "integer", "maximum": float("-inf")}, "#/maximum"),
    ({"type": "number", "multipleOf": float("inf")}, "#/multipleOf"),
    ({"type": "number", "exclusiveMaximum": float("nan")}, "#/exclusiveMaximum"),
    ({"maxLength": float("inf")}, "#/maxLength"),
    ({"type": "object", "properties": {1: {"type": "integer"}}}, "#/properties"),
    ({"type": "object", "dependentRequired": {1: ["a"]}}, "#/dependentRequired"),
    ({"type": "object", "dependencies": {1: ["a"]}}, "#/dependencies"),
    ({"$defs": {2: {}}, "type": "null"}, "#/\\$defs"),
    ({"enum": [{1: 2}]}, "#/enum"),
    ({"enum": ["a", float("inf")]}, "#/enum"),
    ({"const": float("nan")}, "#/const"),
    ({"const": {"a": [1, {"b": {2}}]}}, "#/const"),
])
def test_non_json_keyword_values_are_schema_errors(schema, where):
    """NaN and the infinities (Python's json reads them) and keys that are not strings are
    not JSON: the keyword's pointer is named."""
    with pytest.raises(SchemaError, match=f"^{where}: "):
        pse.JsonSchema(schema)


@pytest.mark.parametrize("schema", [
    {"const": "a\ud800"},
    {"enum": ["ok", "\udfff"]},
    {"type": "object", "properties": {"\ud800": {}}, "required": ["\ud800"]},
    {"type": "object", "properties": {"a\udc00": {"type": "integer"}}},
])
def test_a_lone_surrogate_in_a_value_or_name_is_a_schema_error(schema):
    # (json.loads reads "\ud800" into one; no UTF-8 text holds it: a typed error, not
    # the encoder's UnicodeEncodeError)
    with pytest.raises(SchemaError, match="lone surrogate"):
        pse.JsonSchema(schema).compile()


def test_json_literals_still_compile():
    schema = {"enum": [1, "x", None, True, 2.5, [1, {"a": []}], {"b": {"c": [None]}}]}
    for value in schema["enum"]:
        assert pse.JsonSchema(schema).matches(json.dumps(value, separators=(",", ":")))
    assert pse.JsonSchema({"const": {"a": [1, {"b": None}]}}).matches('{"a":[1,{"b":null}]}')


def test_values_too_deep_for_python_json_are_a_value_error():
    """A JSON value the engine accepted but Python's json module cannot read back (it
    recurses per level) is a ValueError saying so, not a RecursionError."""
    vocab = pse.Vocabulary.from_tokens(["[", "]", "<eos>"], eos_token_ids=[2],
                                       special_token_ids=[2])
    engine = pse.StructuringEngine(vocab)
    engine.configure(pse.Json())
    depth = 5000
    assert engine.consume_tokens([0] * depth + [1] * depth) == 2 * depth
    with pytest.raises(ValueError, match="nests deeper than Python's json"):
        engine.structured_outputs()
    engine.rollback(2 * depth - 2)
    assert engine.consume_tokens([1, 1]) == 2
    assert engine.structured_outputs() == [("json", [[]])]


def test_consume_tokens_checks_every_id_first():
    vocab = pse.Vocabulary.from_tokens(["a", "b"])
    engine = pse.StructuringEngine(vocab)
    engine.configure(pse.Regex("ab"))
    for bad in ([0, 99], [0, -1], [0, 1.0], [0, True]):
        with pytest.raises(ValueError):
            engine.consume_tokens(bad)
        assert list(engine.allowed_token_ids()) == [0]  # nothing was committed
    assert engine.consume_tokens([0, 1, 1]) == 2


def test_fill_par_refuses_what_is_not_an_engine():
    with pytest.raises(TypeError, match="NoneType"):
        pse.fill_next_token_bitmask_par([None], np.zeros((1, 1), np.int32))


_BYTE_LEVEL = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
               "decoder": {"type": "ByteLevel"}, "pre_tokenizer": {"type": "ByteLevel"}}


@pytest.mark.parametrize("change, says", [
    ({"added_tokens": [{"content": "<x>", "special": True}]}, "an added token"),
    ({"added_tokens": [{"id": -5, "content": "<x>", "special": True}]}, "an added token"),
    ({"added_tokens": [{"id": "x", "content": "<x>"}]}, "an added token"),
    ({"added_tokens": [{"id": 3, "content": 7}]}, "an added token"),
    ({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}}, "piece 'a'"),
    ({"model": {"type": "BPE", "vocab": {"a": 0.5}, "merges": []}}, "piece 'a'"),
    ({"model": {"type": "BPE", "vocab": {"a": 0, "b": 3_000_000_000}, "merges": []}},
     "MAX_TOKEN_ID"),
    ({"model": {"type": "Unigram", "vocab": [["a", 0.0], 5]}}, "Unigram"),
])
def test_malformed_tokenizer_json_is_a_vocabulary_error(tmp_path, change, says):
    """Ids that are not ints from 0 to MAX_TOKEN_ID are refused (a huge one would be a slot
    per id up to it)."""
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({**_BYTE_LEVEL, **change}))
    with pytest.raises(VocabularyError, match=re.escape(says)):
        pse.Vocabulary.from_file(path)
    path.write_text(json.dumps(_BYTE_LEVEL))
    assert pse.Vocabulary.from_file(path).size == 2


def test_n_vocab_past_the_largest_id_is_refused():
    with pytest.raises(VocabularyError, match="MAX_TOKEN_ID"):
        pse.Vocabulary.from_tokens(["a", "b"], n_vocab=10**12)


def test_forced_bytes_do_not_allocate_max_bytes():
    """compute_ff_bytes's buffer grows with the forced bytes (max_bytes=10**12 raised
    MemoryError); what it returns is the same at any size that holds them."""
    vocab = pse.Vocabulary.from_tokens([chr(c) for c in range(97, 123)])
    engine = pse.StructuringEngine(vocab)
    text = "abcdefghij" * 1000  # 10,000 forced bytes: past the first buffer
    engine.configure(pse.Chain(pse.Phrase(text), pse.Regex("[a-z]")))
    assert engine.compute_ff_bytes(max_bytes=10**12) == text.encode()
    assert engine.compute_ff_bytes(max_bytes=5000) == text.encode()[:5000]
    assert engine.compute_ff_bytes(max_bytes=4096) == text.encode()[:4096]
    assert engine.compute_ff_bytes(max_bytes=0) == b""


def test_terminals_imported_under_rule_names_are_refused():
    """lark's reader takes `%import common.NUMBER -> x` as a terminal named in lower case,
    which lark refuses only when it builds its parser; the alternative using it was dropped."""
    for text in ("%import common.NUMBER -> x\nstart: x",
                 '%import common.NUMBER -> x\nstart: x | "a"',
                 '%import common.NUMBER -> x\nstart: ("a" x)* "b"'):  # (x inside a part)
        with pytest.raises(GrammarError, match="rule start: uses the undefined rule 'x' .a "
                           "terminal has that name.* -> X"):
            pse.Grammar.from_lark(text).compile()
    assert pse.Grammar.from_lark("%import common.NUMBER -> X\nstart: X").matches("12")


def test_declared_rules_are_refused():
    """`%declare` names terminals a parser is given from outside; a rule declared so has no
    definition (it crashed the reader with an AttributeError)."""
    with pytest.raises(GrammarError, match="rule y is declared with %declare but has no "
                       "definition"):
        pse.Grammar.from_lark('start: "a" y\n%declare y').compile()
    with pytest.raises(GrammarError, match="terminal Y .* has no pattern"):
        pse.Grammar.from_lark('start: "a" Y\n%declare Y').compile()


def test_schemas_referring_only_to_themselves_name_the_place():
    with pytest.raises(SchemaError, match="#: the schema refers only to itself"):
        pse.JsonSchema({"$ref": "#"}).compile()
    with pytest.raises(SchemaError, match="#/\\$ref: #/\\$defs/a refers only to itself"):
        pse.JsonSchema({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}).compile()
    with pytest.raises(GrammarError, match="left recursion through schema at #:"):
        pse.JsonSchema({"anyOf": [{"$ref": "#"}, {"type": "integer"}]}).compile()


def test_regex_flags_are_checked():
    with pytest.raises(TypeError, match="flags"):
        pse.Regex("a", "i")
    for flags in (-1, re.DEBUG, 1 << 12):
        with pytest.raises(GrammarError, match="only re.IGNORECASE"):
            pse.Regex("a", flags)
    assert pse.Regex("a # the letter", re.IGNORECASE | re.VERBOSE).matches("A")


def test_errors_quote_long_patterns_in_part():
    """A generated pattern of thousands of characters (a number bound's) is quoted up to 200
    of them, with its length."""
    with pytest.raises(GrammarError) as info:
        pse.Regex("(?:" + "|".join(f"a{i}b" for i in range(3000)) + ")(?<=x)")
    assert len(str(info.value)) < 600 and "characters)" in str(info.value)
