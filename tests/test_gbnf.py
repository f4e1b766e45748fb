"""Grammar.from_gbnf (pse.gbnf): GBNF read into BNF rules, and into Lark text. Three oracles: hand-labelled texts
per grammar (what GBNF means), a regular expression written by hand for the grammars without
recursion (random texts, hypothesis), and lark's Earley parser on the Lark text (valid samples
and their mutations); masks equal brute force over the Llama 3 vocabulary; errors name the
line and column."""

from __future__ import annotations

import json
import random
import re

import lark
import pytest
from hypothesis import given, settings, strategies as st

from conftest import shared_vocab
from pse import Grammar, GrammarError, StructuringEngine
from pse.gbnf import to_lark
from test_engine import check_along
from test_grammar import lark_accepts, mutations

# Written for these tests in the style of llama.cpp's grammars/ folder.
JSON = r'''
# JSON, as RFC 8259 has it
root   ::= ws value ws
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::=
  "{" ws (
    string ws ":" ws value
    ("," ws string ws ":" ws value)*
  )? ws "}"
array  ::= "[" ws (value ("," ws value)*)? ws "]"
string ::= "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
  )* "\""
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= [ \t\n\r]{0,20}
'''

ARITHMETIC = r'''
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t]*
'''

LIST = r'''
root ::= item+
# one line per item, anything but a line break after the dash
item ::= "- " [^\r\n]+ "\n"
'''

CHESS = r'''
root ::= (
    "1. " move " " move "\n"
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move    ::= (pawn | nonpawn | castle) [+#]?
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle  ::= "O-O" "-O"?
'''

UNICODE = r'''
root ::= kana{1,3} (" " | "\u3000") word "\U0001F389"?
kana ::= [ぁ-ゟ]
word ::= [\x41-\x5A\u00e9]+
'''

ESCAPES = r'''
root ::= "\"q\"" "\\" [\]\[^-] "\t" "\x2F" [\x00-\x08] . [^a-c\n]
'''

COUNTS = r'''
root ::= "a"{3} "b"{2,} "c"{1,2} "d"{,2} ("e" "f"){0} "g"?
'''

LABELLED = {  # grammar: (valid texts, invalid texts)
    "json": (JSON, ['{"a": [1, -2.5e-3, true, false, null], "b": {"c": "d\\u00e9\\n"}}',
                    " 0 ", '""', "[]", '[{"x": {}}, [[]], "é🎉"]', "-0.0E+12",
                    '"\\/\\b\\f\\r\\t\\"\\\\"'],
             ["{", "[1,]", "01", "1.", ".5", "+1", "'a'", '{"a" 1}', '"\\x"', '"a\nb"',
              "nul", "[1 2]", '{"a":1,}', "", "12345678901234567"]),
    "arithmetic": (ARITHMETIC, ["a+1= 2\n", "x = y\n(a*b)/c=(d)\n", "( 1 )=2\n"],
                   ["a+1=2", "a+=2\n", "A=1\n", "1 = \n", "=1\n", ""]),
    "list": (LIST, ["- milk\n", "- eggs\n- a b c!\n"], ["- \n", "-milk\n", "- a", "", "- a\rb\n"]),
    "chess": (CHESS, ["1. e4 e5\n2. Nf3 Nc6\n", "1. e4 e5\n2. exd5 O-O-O+\n10. a8=Q# Kxe2\n"],
              ["1. e4 e5\n", "1. e9 e5\n2. e4 e5\n", "1. e4 e5\n0. e4 e5\n"]),
    "unicode": (UNICODE, ["ぁ ABC", "ぁゟあ\u3000Éé🎉".replace("É", "A"), "ゟ Zé"],
                ["ぁ", "ぁぁぁぁ A", "ァ A", "ぁ abc", "ぁ A🎉🎉"]),
    "escapes": (ESCAPES, ['"q"\\]\t/\x00zd', '"q"\\^\t/\x08\nZ', '"q"\\-\t/\x05.é'],
                ['"q"\\a\t/\x00zd', '"q"\\]\t/\x09zd', '"q"\\]\t/\x00zb', '"q"\\]\t/\x00z\n']),
    "counts": (COUNTS, ["aaabbc", "aaabbbbbccddg", "aaabbcd"],
               ["aabbc", "aaabc", "aaabbccc", "aaabbcddd", "aaabbcef", "aaabbcgg"]),
}

# regexes written by hand for the grammars without recursion
REGEXES = {
    "list": r"(- [^\r\n]+\n)+",
    "chess": None,  # too long to write by hand usefully; lark checks it
    "unicode": r"[ぁ-ゟ]{1,3}[ \u3000][A-Zé]+🎉?",
    "escapes": r'"q"\\[\]\[\-^]\t/[\x00-\x08][\s\S][^a-c\n]',
    "counts": r"aaab{2,}c{1,2}d{0,2}g?",
}


@pytest.mark.parametrize("name", sorted(LABELLED))
def test_labelled_texts(name):
    text, valid, invalid = LABELLED[name]
    grammar = Grammar.from_gbnf(text)
    for sample in valid:
        assert grammar.matches(sample), sample
    for sample in invalid:
        assert not grammar.matches(sample), sample


@pytest.mark.parametrize("name", sorted(LABELLED))
def test_agrees_with_lark_on_the_lark_text(name):
    text, valid, invalid = LABELLED[name]
    grammar, lark_text = Grammar.from_gbnf(text), to_lark(text)
    parser = lark.Lark(lark_text.text, parser="earley", lexer="dynamic_complete",
                       start=lark_text.start, ambiguity="forest")
    rng = random.Random(name)
    alphabet = "".join(sorted(set("".join(valid + invalid))))
    texts = valid + invalid + [m for v in valid for m in mutations(v, alphabet, rng, 15)]
    for sample in texts:
        assert grammar.matches(sample) == lark_accepts(parser, sample), sample


@pytest.mark.parametrize("name", sorted(n for n, r in REGEXES.items() if r))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_agrees_with_a_regex_written_by_hand(name, data):
    text, valid, invalid = LABELLED[name]
    alphabet = sorted(set("".join(valid + invalid)))
    grammar = _grammar(name)
    sample = data.draw(st.one_of(
        st.text(alphabet=alphabet, max_size=14),
        st.sampled_from(valid).flatmap(lambda v: st.builds(
            lambda i, c: v[:i] + c + v[i:], st.integers(0, len(v)), st.sampled_from(alphabet)))))
    assert grammar.matches(sample) == bool(re.fullmatch(REGEXES[name], sample)), sample


_GRAMMARS: dict[str, Grammar] = {}


def _grammar(name: str) -> Grammar:
    if name not in _GRAMMARS:
        _GRAMMARS[name] = Grammar.from_gbnf(LABELLED[name][0])
    return _GRAMMARS[name]


def test_json_grammar_agrees_with_json_loads():
    grammar = _grammar("json")
    rng = random.Random(7)
    values = [{"a": [1, 2.5, None]}, [True, "x\u00e9\n"], "é🎉", -12, {"k": {"": []}}]
    for value in values:
        for indent in (None, 2):
            text = json.dumps(value, indent=indent, ensure_ascii=rng.random() < 0.5)
            assert grammar.matches(text), text
            for bad in mutations(text, '{}[]",:01 e-', rng, 10):
                try:
                    json.loads(bad)
                    ok = bad.strip() == bad.strip(" \t\n\r") and "  " * 11 not in bad
                except ValueError:
                    ok = False
                if ok:
                    continue  # json.loads takes more whitespace or digits than the grammar
                assert not grammar.matches(bad), bad


def test_masks_equal_brute_force_llama3():
    llama = shared_vocab("llama3")
    engine = StructuringEngine(llama)
    engine.configure(_grammar("json"))
    check_along(engine, llama.encode('{"name": "Ada", "tags": ["x", 1.5e3], "ok": true}'),
                every=4)
    assert engine.is_accepting()


def test_rule_names_with_dashes_and_capitals():
    grammar = Grammar.from_gbnf('root ::= item-name Item\nitem-name ::= "a"\nItem ::= "b"\n'
                                "item_name ::= \"c\"")
    assert grammar.matches("ab") and not grammar.matches("cb")


def test_newlines_continue_after_a_bar_and_inside_parentheses():
    grammar = Grammar.from_gbnf('root ::= "a" |\n  "b"\n  # a comment\nx ::= ("c"\n "d")')
    assert grammar.matches("a") and grammar.matches("b") and not grammar.matches("ab")


def test_tokens_by_id_and_by_text():
    llama = shared_vocab("llama3")
    eot = llama.encode("<|eot_id|>")
    grammar = Grammar.from_gbnf('root ::= "x" <[128009]> "y" <|eot_id|>')
    engine = StructuringEngine(llama)
    engine.configure(grammar)
    for token in llama.encode("x") + [128009] + llama.encode("y") + eot:
        assert engine.consume_token(token), token
    assert engine.is_accepting()


@pytest.mark.parametrize("text, where, message", [
    ('root ::= "a"\nroot ::= "b"', "line 2, column 1", "defined twice (first at line 1)"),
    ('root ::= "a" other', "line 1, column 14", "undefined rule 'other'"),
    ('item ::= "a"', None, "no `root` rule"),
    ('root ::= "a\n', "line 1, column 10", "unterminated literal"),
    ('root ::= "a" |\n  "b', "line 2, column 3", "unterminated literal"),
    ('root ::= [a-', "line 1, column 10", "unterminated character class"),
    ('root ::= "\\q"', "line 1, column 11", "unknown escape \\q"),
    ('root ::= "\\x4"', "line 1, column 11", "\\x needs 2 hex digits"),
    ('root ::= "\\uD800"', "line 1, column 11", "not a Unicode scalar value"),
    ('root ::= [z-a]', "line 1, column 10", "runs backwards"),
    ('root ::= []', "line 1, column 10", "matches nothing"),
    ('root ::= "a"{3,1}', "line 1, column 13", "the most is below the least"),
    ('root ::= "a"{x}', "line 1, column 13", "expected {m}"),
    ('root ::= * "a"', "line 1, column 10", "with nothing before it"),
    ('root ::= ("a"', "line 1, column 14", "expected ')'"),
    ('root := "a"', "line 1, column 6", "expected '::='"),
    ('root ::= "a" ) "b"', "line 1, column 14", "unexpected ')'"),
    ('root ::= !<x>', "line 1, column 10", "negated tokens"),
    ('\n\n  root ::= "a" @', "line 3, column 16", "unexpected '@'"),
    ('root ::= "a" <a b>', "line 1, column 14", "a special token is written <|name|> or <[id]>"),
])
def test_errors_name_the_line_and_column(text, where, message):
    with pytest.raises(GrammarError) as info:
        Grammar.from_gbnf(text)
    assert message in str(info.value)
    if where:
        assert f"GBNF {where}:" in str(info.value)


def test_a_line_break_inside_a_literal_or_a_class_is_one_of_its_characters():
    """llama.cpp reads a literal up to its closing quote and a class up to its `]`, line
    breaks included (a grammar pasted with one in a literal was refused as unterminated)."""
    text = 'root ::= "a\nb" [\n\t]+ "c"'
    grammar, lark_text = Grammar.from_gbnf(text), to_lark(text)
    parser = lark.Lark(lark_text.text, parser="earley", lexer="dynamic_complete",
                       start=lark_text.start)
    for sample, expected in [("a\nb\nc", True), ("a\nb\t\n\tc", True), ("ab\nc", False),
                             ("a\nbc", False), ("a\r\nb\nc", False)]:
        assert grammar.matches(sample) is expected, sample
        assert lark_accepts(parser, sample) is expected, sample


def test_a_grammar_that_matches_nothing_is_an_error():
    with pytest.raises(GrammarError, match="GBNF: the grammar matches nothing"):
        Grammar.from_gbnf('root ::= x-y\nx-y ::= "a" x-y')
    with pytest.raises(GrammarError, match="GBNF: the grammar matches nothing"):
        Grammar.from_gbnf("root ::= a-b\na-b ::= a-b")  # epsilon recursion, not a hang


def test_lark_names_map_back_to_the_gbnf_names():
    grammar = to_lark('root ::= item-list\nitem-list ::= "a"\nItem ::= "b"')
    assert grammar.names == {"item_list": "item-list", "item": "Item"}
    assert grammar.start == "root"


def test_the_lark_text_is_made_on_first_use():
    text = 'root ::= "a" [b-d]+ ("x" | "y"){2,3} <[128009]>?'
    grammar = Grammar.from_gbnf(text)
    assert grammar.gbnf == text and grammar.start == "root"
    assert grammar.text == to_lark(text).text
    assert Grammar.from_lark("start: \"a\"").gbnf is None


def test_runs_of_characters_become_one_terminal():
    # a string spelled character by character: one terminal, not a parser step per character
    grammar = Grammar.from_gbnf(r'root ::= "\"" ( [^"\\] | "\\" ["\\nt] )* "\"" ws' + "\n"
                                r'ws ::= [ ]*')
    assert grammar.compile().n_terminals == 1  # (ws is regular: its text joins the run)
    assert grammar.matches('"a\\"b"  ') and not grammar.matches('"a\\"')
    # rules that refer to regular rules are regular, recursive ones are not
    grammar = Grammar.from_gbnf('root ::= word+ (" " word+)* list\nword ::= letter | [0-9]\n'
                                'letter ::= [a-z]\nlist ::= "(" (word | list)* ")"')
    assert grammar.compile().n_terminals == 5  # the words; "(", ")", [a-z], [0-9] in a list
    assert grammar.matches("ab 1c(a(1)())") and not grammar.matches("ab (") \
        and not grammar.matches("a b")
    # a longer regular rule joins a run where it is used once; used in two places it stays
    # one terminal of its own (its cached mask parts shared by both)
    once = Grammar.from_gbnf('root ::= key ":" num\nkey ::= "\\"" [a-z]* "\\""\n'
                             'num ::= [0-9]+')
    assert once.compile().n_terminals == 1 and once.matches('"ab":12')
    twice = Grammar.from_gbnf('root ::= key ":" key\nkey ::= "\\"" [a-z]* "\\""')
    assert twice.compile().n_terminals == 2 and twice.matches('"ab":""')
    # rules that double at every level, and a chain of 200: bounded (MAX_RULE_REGEX,
    # MAX_RULE_NESTING), not a regex of 2**20 copies or a parser's RecursionError
    doubling = Grammar.from_gbnf("root ::= a19\na0 ::= [a-z]\n" + "".join(
        f"a{i} ::= a{i - 1} | a{i - 1}\n" for i in range(1, 20)))
    assert doubling.matches("q") and not doubling.matches("qq")
    chain = Grammar.from_gbnf("root ::= r0\n" + "".join(
        f'r{i} ::= "a" r{i + 1}\n' for i in range(200)) + 'r200 ::= "b"\n')
    assert chain.matches("a" * 200 + "b") and not chain.matches("a" * 199 + "b")
    # where one automaton for the run would be too large, its items stay terminals of
    # their own (`[ab]{16}` after `[ab]* "a"` needs 2**17 states)
    grammar = Grammar.from_gbnf('root ::= [ab]* "a" [ab]{16} "c"')
    assert grammar.compile().n_terminals == 4
    assert grammar.matches("ba" + "b" * 16 + "c") and not grammar.matches("b" * 18 + "c")


def test_a_literal_may_hold_any_text():
    # (Lark text marks the special tokens it holds with a text of its own; GBNF needs none)
    assert Grammar.from_gbnf('root ::= "PSESPECIALTOKEN_0"').matches("PSESPECIALTOKEN_0")


def test_rule_names_from_gbnf_do_not_clash_with_the_rules_made_for_parts():
    # (the BNF writer names a part of rule r "__r_<kind>_<number of rules so far>": these
    # two would be the names of the parts of root, were the GBNF names not taken first)
    text = 'root ::= ("a" | "b" | "c")+ __root_loop_1\n__root_loop_1 ::= "z"\n' \
           '__root_group_0 ::= "q"'
    grammar = Grammar.from_gbnf(text)
    assert grammar.matches("abcz") and not grammar.matches("abc") and not grammar.matches("q")


# --- random grammars without recursion, against a regular expression made from the same tree ---
ALPHABET = "ab-]^\\\"\n é"


@st.composite
def _pieces(draw, rules: int, depth: int = 0):
    """A random GBNF expression over ALPHABET with its regex: (gbnf text, regex)."""
    kind = draw(st.sampled_from(["lit", "cls", "any", "ref", "seq", "alt", "rep"]
                                if depth < 3 else ["lit", "cls", "ref"]))
    if kind == "ref" and not rules:
        kind = "lit"
    if kind == "lit":
        chars = draw(st.text(alphabet=ALPHABET, min_size=1, max_size=3))
        spelled = "".join(_gbnf_char(c, draw(st.booleans())) for c in chars)
        return f'"{spelled}"', re.escape(chars)
    if kind == "cls":
        chars = sorted(set(draw(st.text(alphabet=ALPHABET, min_size=1, max_size=3))))
        negated = draw(st.booleans())
        body = "".join(_gbnf_char(c, draw(st.booleans()), in_class=True) for c in chars)
        regex = "[" + ("^" if negated else "") + "".join(re.escape(c) for c in chars) + "]"
        return "[" + ("^" if negated else "") + body + "]", regex
    if kind == "any":
        return ".", r"[\s\S]"
    if kind == "ref":
        index = draw(st.integers(1, rules))
        return f"Rule-{index}", f"(?:{{rule{index}}})"
    if kind in ("seq", "alt"):
        parts = draw(st.lists(_pieces(rules, depth + 1), min_size=2, max_size=3))
        joiner = " " if kind == "seq" else " | "
        return "(" + joiner.join(g for g, _ in parts) + ")", \
            "(?:" + ("" if kind == "seq" else "|").join(r for _, r in parts) + ")"
    gbnf, regex = draw(_pieces(rules, depth + 1))
    op = draw(st.sampled_from(["*", "+", "?", "{m}", "{m,}", "{m,n}", "{,n}"]))
    m, n = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    n = max(m, n)
    written = op.replace("m", str(m)).replace("n", str(n))
    counted = {"*": "*", "+": "+", "?": "?", "{m}": f"{{{m}}}", "{m,}": f"{{{m},}}",
               "{m,n}": f"{{{m},{n}}}", "{,n}": f"{{0,{n}}}"}[op]
    return f"({gbnf}){written}", f"(?:{regex}){counted}"


def _gbnf_char(c: str, escaped: bool, in_class: bool = False) -> str:
    if c in '"\\' or (in_class and c in "]^-"):
        if c in "^-":  # no escape for these in GBNF: written as \x escapes
            return f"\\x{ord(c):02x}"
        return "\\" + c
    if c == "\n":
        return "\\n"
    return f"\\u{ord(c):04x}" if escaped else c


@st.composite
def random_gbnf(draw):
    """(GBNF text, the regex of its root): rule i refers only to rules after it."""
    count = draw(st.integers(1, 3))
    bodies = [draw(_pieces(count - 1 - i)) for i in range(count)]
    lines, regexes = [], {}
    for i in reversed(range(count)):
        gbnf, regex = bodies[i]
        # rule i's references name rules i+1.., drawn as 1..(count-1-i)
        gbnf = re.sub(r"Rule-(\d+)", lambda m: f"Rule-{i + int(m.group(1))}", gbnf)
        regex = re.sub(r"\{rule(\d+)\}", lambda m: regexes[i + int(m.group(1))], regex)
        regexes[i] = regex
        lines.append(f"{'root' if i == 0 else f'Rule-{i}'} ::= {gbnf}")
    return "\n".join(reversed(lines)), regexes[0]


@settings(max_examples=80, deadline=None, derandomize=True)  # (as in test_grammar.py)
@given(random_gbnf(), st.data())
def test_random_grammars_agree_with_their_regex(grammar_and_regex, data):
    text, regex = grammar_and_regex
    grammar, compiled = Grammar.from_gbnf(text), re.compile(regex)
    valid = [data.draw(st.from_regex(compiled, fullmatch=True)) for _ in range(4)]
    rng = random.Random(text)
    others = data.draw(st.lists(st.text(alphabet=ALPHABET, max_size=8), min_size=8,
                                max_size=8))
    # Python's re backtracks exponentially on nested repetitions (`((a+)+)+` against a long
    # text that fails at its end): texts of 13 to 24 characters are judged by lark (whose
    # Earley parser is polynomial, but slow on long texts of very ambiguous grammars too)
    lark_text = to_lark(text)
    parser = lark.Lark(lark_text.text, parser="earley", lexer="dynamic_complete",
                       start=lark_text.start, ambiguity="forest")
    samples = valid + others + [m for v in valid for m in mutations(v, ALPHABET, rng, 4)]
    for sample in (s for s in samples if len(s) <= 24):
        expected = (bool(compiled.fullmatch(sample)) if len(sample) <= 12
                    else lark_accepts(parser, sample))
        assert grammar.matches(sample) == expected, (text, sample)


@pytest.mark.parametrize("gbnf, regex", [
    ('("a" | "b" "c"){300}', "(?:a|bc){300}"),
    ('"a"?{300}', "a{0,300}"),
    ('("a" | "b"?){2,300}', "[ab]{0,300}"),
    ('("a"*){400}', "a*"),
    ('("a" "b"?){250,}', "(?:ab?){250,}"),
])
def test_large_counts_of_groups_and_optional_items(gbnf, regex):
    """Counts in the hundreds of a group with several alternatives, or of an item that may be
    empty, read as their regex (the first was quadratic to read in the count, 12 s at
    12,000; an optional item counted 300 times nested 300 rules deep at its start, past
    MAX_LEFT_CALLS), also as Lark's `~`."""
    compiled = re.compile(regex)
    rng = random.Random(gbnf)
    texts = ["", "a" * 299, "a" * 300, "a" * 301, "bc" * 300, "bc" * 150 + "a" * 150,
             "ab" * 125, "ab" * 250 + "a", "ab" * 249]
    texts += ["".join(rng.choice(["a", "b", "bc", "ab"]) for _ in range(rng.randint(100, 320)))
              for _ in range(20)]
    for grammar in (Grammar.from_gbnf(f"root ::= {gbnf}"),
                    Grammar(f"start: {_lark_count(gbnf)}")):
        for text in texts:
            assert grammar.matches(text) == bool(compiled.fullmatch(text)), (gbnf, len(text))


def _lark_count(gbnf: str) -> str:
    """The GBNF repeats above in Lark's syntax (`x ~ m..n`; `x{m,}` as m copies then `x*`)."""
    body, low, high = re.fullmatch(r"(.*)\{(\d+)(,?)(\d*)\}", gbnf).group(1, 2, 4)
    if body.endswith("?"):  # (Lark's optional item, `[x]`: `x?` takes no count)
        body = f"[{body[:-1]}]"
    if gbnf.endswith(",}"):
        return f"{body} ~ {low} {body}*"
    return f"{body} ~ {low}..{high}" if high else f"{body} ~ {low}"


def test_counts_of_counts_nested_deep():
    """`("a"){1,2}` nested d deep is a{1,2^d}: its regex reads as that one count (nested, each
    level's automaton took four times the one inside it: 14 levels stopped at the compile's
    30 s budget), one terminal whose count is kept at run time, not unrolled (unrolled, 13
    levels were 8,192 states; from 14 past MAX_DFA_STATES, the outer levels were rules, and
    a long text split among their copies in more ways than max_live_states allows). The
    counts at the edges, against the language's definition."""
    def nested(depth: int) -> Grammar:
        body = '"a"'
        for _ in range(depth):
            body = f"({body}){{1,2}}"
        return Grammar.from_gbnf(f"root ::= {body}")

    for depth in (13, 14, 20):
        grammar = nested(depth)
        n = 2 ** depth
        for k, expected in ((0, False), (1, True), (2, True), (n // 2 + 1, True), (n, True),
                            (n + 1, False)):
            assert grammar.matches("a" * k) == expected, (depth, k)
        assert not grammar.matches("a" * (n // 2) + "b")


@pytest.mark.parametrize("gbnf, regex", [
    ('[a-z]{1,20000}', "[a-z]{1,20000}"),
    ('"ab"{5000} "!"?', "(?:ab){5000}!?"),
    ('([a-z] [0-9]){1,12000} "!"', "(?:[a-z][0-9]){1,12000}!"),
    ('"ab"{3000,}', "(?:ab){3000,}"),
])
def test_long_counts_of_regular_items_are_one_counted_terminal(gbnf, regex):
    """A long count of a regular item is one terminal, its count kept at run time (they were
    rules, one copy per count: `[a-z]{1,20000}` took 0.9 s to read), against `re` at the
    bounds and past them."""
    grammar, compiled = Grammar.from_gbnf(f"root ::= {gbnf}"), re.compile(regex)
    texts = ["", "a", "ab" * 2999, "ab" * 3000, "ab" * 4999, "ab" * 5000, "ab" * 5000 + "!",
             "ab" * 5001, "a" * 20000,
             "a" * 20001, "a1" * 12000 + "!", "a1" * 12001 + "!", "a1" * 11999 + "a!"]
    for text in texts:
        assert grammar.matches(text) == bool(compiled.fullmatch(text)), (gbnf, len(text))


def test_long_word_lists_mask_as_the_words_allow():
    """A list of words whose one automaton would pass MAX_DFA_STATES runs as a few merged
    terminals, not a live state per word ("too ambiguous" at the first byte from about 2,000
    words): masks after the prefix equal the words' own prefixes (brute force over the
    vocabulary), in GBNF and in Lark."""
    vocab = shared_vocab("llama3")
    rng = random.Random(0)
    words = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                            for _ in range(rng.randint(5, 10))) for _ in range(3000)})
    alternatives = " | ".join(f'"{w}"' for w in words)
    prefixes = {w[:k] for w in words for k in range(1, len(w) + 1)}
    for grammar in (Grammar.from_gbnf(f'root ::= "city: " name\nname ::= {alternatives}'),
                    Grammar(f'start: "city: " name\nname: {alternatives}')):
        engine = StructuringEngine(vocab)
        engine.configure(grammar)
        assert engine.consume_tokens(vocab.encode("city: ")) == len(vocab.encode("city: "))
        allowed = set(engine.allowed_token_ids())
        expected = {t for t in range(vocab.size)
                    if vocab.decode([t]) in prefixes and t not in vocab.eos_token_ids}
        assert allowed == expected
        assert grammar.matches("city: " + words[-1]) and not grammar.matches("city: " + "q" * 5)
