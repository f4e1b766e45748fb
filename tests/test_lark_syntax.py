"""pse.lark_syntax reads a Lark grammar's statements into exactly the tree lark's own reader
makes (its LALR parser over its meta-grammar, then PrepareGrammar): on the bundled grammars,
the grammars of the grammar tests, random ones, and forms chosen for their syntax. Text lark
refuses, this reader leaves to lark (Unread), so errors stay lark's."""

from __future__ import annotations

import re

import lark
import pse.grammars
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.load_grammar import PrepareGrammar, _get_parser
from test_gbnf import LABELLED as GBNF_GRAMMARS
from test_grammar import HAND_WRITTEN, random_grammars

from pse import lark_syntax
from pse.gbnf import to_lark


def lark_tree(text: str):
    """lark's own reading of the grammar text (lark.load_grammar._parse_grammar)."""
    return PrepareGrammar().transform(_get_parser().parse(text + "\n", "start"))


SYNTAX = {
    "comments and continued lines": """
// a comment
start: a   // after a rule
     | b   # another kind
a: "x" \\
   "y"
b: /z+/i -> zed

""",
    "modifiers, priorities, aliases": """
?start: item+
!item.2: "a" -> first | "b" item? -> second
_inner: "c"
X.3: "q" | "r"
_Y: X
""",
    "operators and ranges": """
start: ("a" | "b")~3 "c"~1..4 ["d"] e* f+ g?
e: "0".."9"
f: "e"i
g: /[a-f]{2}/s
""",
    "templates": """
start: sep{item, ","} wrap{"(", item}
sep{x, s}: x (s x)*
wrap{open, x}: open x ")"
item: "i"
""",
    "directives": """
start: A B
A: "a"
B: "b"
%ignore " "
%ignore /\\t+/
%declare C d
%override A: "aa"
%extend B: "bb"
""",
    "empty alternatives and nesting": """
start: | a
a: (("x" | ) "y" | ("z"))
""",
    "strings with escapes": r"""
start: "\"" "\\" "a\nb" /\// /[\]]/ "'"
""",
}

CORPUS = (
    [(f"bundled {name}", pse.grammars.path(name).read_text())
     for name in pse.grammars.names()]
    + [(f"grammar test {name}", text) for name, (text, *_) in HAND_WRITTEN.items()]
    + [(f"syntax: {name}", text) for name, text in SYNTAX.items()]
    + [(f"gbnf {name}", to_lark(text).text) for name, (text, *_) in GBNF_GRAMMARS.items()]
)


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_trees_equal_lark(name, text):
    assert lark_syntax.parse(text) == lark_tree(text)


@settings(max_examples=200)
@given(random_grammars())
def test_random_grammars_equal_lark(text):
    assert lark_syntax.parse(text) == lark_tree(text)


@pytest.mark.parametrize("text", [
    "start: (\n",                # an unclosed group
    "start: \"a\"\n  b: c\n",     # lark: a rule indented into the one before
    "start ::= \"a\"\n",          # GBNF, not Lark
    "start: a ~ \n",              # a repeat without a count
    "%import common.WS\n",
    "%import .x (a, B)\n",
    "%import\n",
    "%import common.\n",
    "%import common (WS\n",
    "%import common.WS -> \n",
    "START: \"a\" -> x\n",        # (lark reads it; its builder refuses an aliased terminal)
])
def test_what_it_does_not_read_is_lark_s(text):
    read_as_lark_reads_it_or_not_at_all(text)


def read_as_lark_reads_it_or_not_at_all(text: str) -> None:
    try:
        expected = lark_tree(text)
    except lark.exceptions.LarkError:
        expected = None
    try:
        got = lark_syntax.parse(text)
    except lark_syntax.Unread:
        return  # lark's to read (and to refuse)
    assert got == expected


@settings(max_examples=300)
@given(st.text(alphabet='ab:|()[]?*+~.0123 "/\n\\_%-ABi>{},#', max_size=40))
def test_random_text_reads_as_lark_reads_it_or_not_at_all(text):
    read_as_lark_reads_it_or_not_at_all(text)


def one_scanner_tokens(text: str) -> tuple | None:
    """The tokens of `text` by one regex of all lark's terminals, tried in its lexer's order
    (None: a character no token starts at)."""
    from lark.lexer import PatternRE
    from lark.load_grammar import TERMINALS

    order = sorted(TERMINALS.items(), key=lambda item: (
        -PatternRE(item[1]).max_width, -len(item[1]), item[0]))
    scanner = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in order))
    text += "\n"
    kinds, texts, pos = [], [], 0
    while pos < len(text):
        m = scanner.match(text, pos)
        if m is None or m.end() == pos:
            return None
        if m.lastgroup not in lark_syntax.SKIPPED:
            kinds.append(m.lastgroup)
            texts.append(m.group())
        pos = m.end()
    return kinds + ["$END"], texts + [""]


@settings(max_examples=500)
@given(st.text(alphabet='a_Z:|?!*+.-1 "/#%\\\n\r\t\x0b\u3000\u0663', max_size=12))
def test_tokens_are_those_of_one_scanner_of_lark_s_terminals(text):
    """Each scanner tries the tokens that can start with its character: modifiers and
    operators, blanks of every kind before comments and newlines. Only a digit beyond 0-9
    is left unread (lark reads it)."""
    expected = one_scanner_tokens(text)
    try:
        assert lark_syntax.tokens(text) == expected
    except lark_syntax.Unread:
        assert expected is None or "\u0663" in text


PIECES = ["start", "a", "_b", "B", "_C", ":", '"x"', '"y"i', "/z/", "/w+/s", "|", "\n", "\n  |",
          "(", ")", "[", "]", "?", "*", "+", "~", "2", "..", "->", ".", "%ignore", "%declare",
          "%override", "%extend", "%import", "{", "}", ",", "!", "?a", "// c", "#c", "\\\n", " "]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(PIECES), max_size=30), st.sampled_from(["", " "]))
def test_random_pieces_read_as_lark_reads_them_or_not_at_all(pieces, sep):
    """Texts made of the syntax's pieces: many of them grammars lark reads."""
    read_as_lark_reads_it_or_not_at_all(sep.join(pieces))


def assert_builds_as_lark(text: str, source: str = "<string>") -> None:
    """What lark's builder makes of the statements read here (and of the grammars they
    `%import`) is what it makes of its own reading: every rule and terminal definition, the
    ignored names and the files read."""
    from lark.load_grammar import load_grammar

    from pse import lark_builder

    def rules(grammar):  # (lark's RuleOptions compare by identity)
        return [(name, params, tree, options and vars(options))
                for name, params, tree, options in grammar.rule_defs]

    ours, ours_files = lark_builder.load(text, source, [])
    theirs, their_files = load_grammar(text, source, [], False)
    assert rules(ours) == rules(theirs)
    assert ours.term_defs == theirs.term_defs
    assert ours.ignore == theirs.ignore
    assert ours_files == their_files


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_grammars_equal_lark_s(name, text):
    bundled = name.removeprefix("bundled ")
    assert_builds_as_lark(text, str(pse.grammars.path(bundled)) if bundled != name else "<string>")


IMPORTS = {
    "one name": "start: WS? NUMBER\n%import common.WS\n%import common.NUMBER\n",
    "aliases": "start: ws NUMBER\n%import common.WS_INLINE -> ws\n"
               "%import common.SIGNED_NUMBER -> NUMBER\n",
    "a list, used twice": 'start: CNAME "=" ESCAPED_STRING\n'
                          "%import common (CNAME, ESCAPED_STRING)\n"
                          "%import common (WS, CNAME)\n%ignore WS\n",
    "overridden": '%import common.WS\n%override WS: " "\nstart: "a" WS "b"\n',
    "declared beside": "%import common.NUMBER\n%declare X\nstart: NUMBER | X\n",
    "a rule of lark's grammars": "%import lark.expansions\nstart: expansions\n",
}


@pytest.mark.parametrize("name", IMPORTS)
def test_imports_build_as_lark(name):
    """`%import`: read by pse's reader, the imported grammars too; lark's builder makes the
    same definitions of them as of lark's own reading."""
    lark_syntax.parse(IMPORTS[name])  # (read here: no Unread)
    assert_builds_as_lark(IMPORTS[name])


@pytest.mark.parametrize("imported, text", [
    ('x: "a"\ny: "b"\ny: "c"\n', "start: x\n%import lib.x\n"),
    ('x: "a"\n%override nothere: "q"\n', "start: x\n%import lib.x\n"),
    ('x: "a"\nUNUSED: MISSING\n', "start: x\n%import lib.x\n"),
    ('x: "a"\n', "start: x\n%import lib.x\n%import lib.x -> start\n"),
], ids=["defined twice", "override of nothing", "undefined terminal", "clash"])
def test_errors_in_imported_grammars_are_lark_s(tmp_path, imported, text):
    """An imported grammar is read whole, as lark reads it: its errors are lark's, used or
    not by the import."""
    from lark.load_grammar import load_grammar

    from pse import lark_builder

    (tmp_path / "lib.lark").write_text(imported)
    with pytest.raises(lark.exceptions.GrammarError) as theirs:
        load_grammar(text, "<string>", [str(tmp_path)], False)
    with pytest.raises(lark.exceptions.GrammarError) as ours:
        lark_builder.load(text, "<string>", [str(tmp_path)])
    assert str(ours.value) == str(theirs.value)


def test_relative_imports_build_as_lark(tmp_path):
    """`%import .x`: beside the grammar's file; an imported grammar imports in turn."""
    (tmp_path / "words.lark").write_text(
        'word: LETTER+ | "<" other ">"\nother: NUMBER\n%import common.LETTER\n'
        "%import common.NUMBER\n_HIDDEN: \"h\"\n")
    text = "start: word (\",\" word)*\n%import .words.word\n"
    source = tmp_path / "main.lark"
    source.write_text(text)
    assert_builds_as_lark(text, str(source))
    grammar = pse.Grammar.from_file(source)
    assert grammar.matches("ab,<12>,c") and not grammar.matches("ab,<x>")


@settings(max_examples=100)
@given(random_grammars())
def test_random_grammars_build_as_lark_s(text):
    assert_builds_as_lark(text)


USES = ["a", "b", "u", "A", "B", "U", '"x"', "t{a}", "t{a, b}", "v{A}", "(a | B)", "[u]"]
DEFINITIONS = ["a: {}", "b: {} | {}", "A: \"a\"", "B: \"b\" | \"c\"", "t{p}: p {}",
               "t{a}: a", "t{p, p}: p", "t{t}: t", "%ignore B", "%ignore U", "%declare D",
               "start: {}", "start: {} {}"]


@st.composite
def grammars_to_validate(draw) -> str:
    """Definitions that use rules, terminals and templates defined or not, with parameters
    that clash or not, and `%ignore`s of terminals defined or not: the checks of lark's
    builder before it builds (its `validate`)."""
    lines = []
    for line in draw(st.lists(st.sampled_from(DEFINITIONS), min_size=1, max_size=6)):
        while "{}" in line:
            line = line.replace("{}", draw(st.sampled_from(USES)), 1)
        lines.append(line)
    return "\n".join(lines) + "\n"


@settings(max_examples=400)
@given(grammars_to_validate())
def test_builder_checks_refuse_as_lark_s(text):
    """pse's builder checks each definition in one walk and leaves lark's checks to word the
    errors: it builds what lark builds and refuses what lark refuses, with lark's message."""
    from lark.load_grammar import load_grammar

    from pse import lark_builder

    try:
        load_grammar(text, "<string>", [], False)
    except lark.exceptions.LarkError as e:
        with pytest.raises(lark.exceptions.LarkError) as ours:
            lark_builder.load(text, "<string>", [])
        assert (type(ours.value), str(ours.value)) == (type(e), str(e))
    else:
        assert_builds_as_lark(text)


def test_builder_checks_name_what_is_not_defined():
    from pse import lark_builder

    for text, words in [('start: a "x"\n', "Rule 'a' used but not defined (in rule start)"),
                        ("start: t{A}\nA: \"a\"\n", "Template 't' used but not defined"),
                        ('start: "x"\n%ignore W\n', "were marked to ignore but were not")]:
        with pytest.raises(lark.exceptions.GrammarError, match=re.escape(words)):
            lark_builder.load(text, "<string>", [])


@settings(max_examples=400)
@given(st.sampled_from(["STRING", "REGEXP"]),
       st.lists(st.sampled_from(list('ab/"\\\'\n\r\t\x00 x.é\ud800')), max_size=6).map("".join),
       st.text(alphabet="imsluxq", max_size=2))
def test_plain_literals_read_as_lark_reads_them(kind, body, flags):
    """lark_patterns reads a literal without escapes or quotes itself: to the pattern lark's
    `_literal_to_pattern` makes of it, and leaves lark every literal lark refuses."""
    from lark.lexer import Token
    from lark.load_grammar import _literal_to_pattern

    from pse.lark_patterns import plain_pattern

    delimiter = '"' if kind == "STRING" else "/"
    token = Token(kind, delimiter + body + delimiter + flags)
    ours = plain_pattern(token)
    if ours is None:
        return
    theirs = _literal_to_pattern(token)
    assert (type(ours), ours.value, ours.flags, ours.raw) == \
        (type(theirs), theirs.value, theirs.flags, theirs.raw)


def test_plain_literals_are_read_by_pse():
    from lark.lexer import Token

    from pse.lark_patterns import plain_pattern

    assert plain_pattern(Token("STRING", '"select"i')).value == "select"
    assert plain_pattern(Token("REGEXP", "/[a-z]+/")).value == "[a-z]+"
    for text in ('"it\'s"', '"a\\nb"', '""', '"a"q', '"a\rb"', '"a\x00"', '"\ud800"'):
        assert plain_pattern(Token("STRING", text)) is None


def lark_terminals(text: str, source: str) -> list:
    """The terminals lark's `Grammar.compile` makes of the grammar's definitions (its first
    steps: the terminals the rules' strings make are left out)."""
    from lark.exceptions import GrammarError
    from lark.lexer import TerminalDef
    from lark.load_grammar import (
        PrepareLiterals,
        TerminalTreeToPattern,
        load_grammar,
        nr_deepcopy_tree,
    )

    grammar, _ = load_grammar(text, source, [], False)
    defined = [(name, tree, priority) for name, (tree, priority) in grammar.term_defs
               if tree is not None]
    for name, tree, _ in defined:
        expansions = list(tree.find_data("expansion"))
        if len(expansions) == 1 and not expansions[0].children:
            raise GrammarError(f"Terminals cannot be empty ({name})")
    transformer = PrepareLiterals() * TerminalTreeToPattern()
    return [TerminalDef(name, transformer.transform(nr_deepcopy_tree(tree)), priority)
            for name, tree, priority in defined]


def assert_terminals_read_as_lark(text: str, source: str = "<string>") -> None:
    """lark_patterns reads each terminal definition to the pattern lark makes of it (with its
    name and priority), or refuses the grammar with lark's error."""
    from pse import lark_builder
    from pse.lark_patterns import terminal_definitions

    try:
        theirs = lark_terminals(text, source)
    except lark.exceptions.LarkError as e:
        with pytest.raises(type(e)) as refused:
            terminal_definitions(lark_builder.load(text, source, [])[0])
        assert str(refused.value) == str(e)
        return
    ours = terminal_definitions(lark_builder.load(text, source, [])[0])

    def spelled(terminals):
        return [(t.name, type(t.pattern), t.pattern.value, t.pattern.flags, t.pattern.raw,
                 t.priority) for t in terminals]

    assert spelled(ours) == spelled(theirs)


TERMINALS = {
    "joined, alternatives, repeats": 'start: A B C D\nA: "a" /b+/i ("c" | "dd" | /e?/)\n'
                                     'B.2: ("x"i "y")~2 "z"~1..3 ["w"]\nC: "0".."9"+\n'
                                     'D: A | B | "q"\n',
    "one terminal in another, twice": 'start: P\nP: Q Q\nQ: R "," R\nR: /[a-z]/ | "_"\n',
    "flags mixed": 'start: F\nF: "ab"i /c/s "d"\n',
    "an empty terminal": 'start: E\nE: ""\n',
    "an empty expansion": 'start: E\nE: \n',
    "a bad count": 'start: E\nE: "a"~3..1\n',
    "a bad range": 'start: E\nE: "ab".."z"\n',
    "a bad regex": 'start: E\nE: /a(/ | "b"\n',
    "a count past any width": 'start: E\nE: "a"~4294967296 | "b"\n',
    "an unknown flag": 'start: E\nE: /(?z)a/ | "b"\n',
}


@pytest.mark.parametrize("name,text", CORPUS + list(TERMINALS.items()),
                         ids=[name for name, _ in CORPUS] + list(TERMINALS))
def test_terminals_read_as_lark(name, text, monkeypatch):
    """pse reads each grammar's terminals as lark does, and where lark reads them, by its own
    walk (lark's passes are not asked)."""
    from pse import lark_patterns

    bundled = name.removeprefix("bundled ")
    source = str(pse.grammars.path(bundled)) if bundled != name else "<string>"
    try:
        lark_terminals(text, source)
    except lark.exceptions.LarkError:
        pass
    else:
        def refuse(grammar):
            raise AssertionError("lark's passes read the terminals")

        monkeypatch.setattr(lark_patterns, "_lark_terminal_definitions", refuse)
    assert_terminals_read_as_lark(text, source)


def test_terminals_nested_deep_are_read_without_recursion():
    """Terminals made of terminals, each nested in 80 groups: 6,400 levels, which a walk by
    recursion ended in a crash (the compiled module has no recursion check)."""
    from pse import lark_builder, lark_patterns

    lines = ["start: T79"] + [f'T{k}: {"(" * 80}T{k - 1} "b"{")" * 80}' for k in range(79, 0, -1)]
    grammar, _ = lark_builder.load("\n".join(lines) + '\nT0: "a"\n', "<string>", [])
    patterns = {t.name: t.pattern.to_regexp() for t in lark_patterns.terminal_definitions(grammar)}
    assert all(patterns[f"T{k}"].count("b") == k for k in range(80))
    for k in range(4):
        assert re.fullmatch(patterns[f"T{k}"], "a" + "b" * k)
        assert not re.fullmatch(patterns[f"T{k}"], "a" + "b" * (k + 1))


@settings(max_examples=200)
@given(random_grammars())
def test_random_terminals_read_as_lark(text):
    assert_terminals_read_as_lark(text)


PATTERNS = ['"select"', '"SELECT"', '"+"', '"("', '"_x"', '"x1"', '"1x"', '"a b"', '"é"',
            '"éa"', '"aé"', '"ab"i', "/a+/", "/a+/i", "/select/", '"a"']


@settings(max_examples=300)
@given(st.lists(st.sampled_from(PATTERNS), max_size=12),
       st.dictionaries(st.sampled_from(["SELECT", "PLUS", "LPAR", "A"]),
                       st.sampled_from(PATTERNS[:6] + ["/a+/"]), max_size=3),
       st.booleans())
def test_anonymous_terminals_are_named_as_lark_names_them(used, defined, keep_all):
    """The rules' strings and regexes get the terminals lark's PrepareAnonTerminals gives
    them, named alike, beside terminals the grammar defines (named as lark would name a
    string, or not)."""
    from lark.grammar import RuleOptions
    from lark.lexer import TerminalDef, Token
    from lark.load_grammar import PrepareAnonTerminals, _literal_to_pattern

    from pse.lark_patterns import anonymous_class

    def pattern(text):
        return _literal_to_pattern(Token("REGEXP" if text[0] == "/" else "STRING", text))

    def terminals():
        return [TerminalDef(name, pattern(text)) for name, text in defined.items()]

    theirs, ours = PrepareAnonTerminals(terminals()), anonymous_class()(terminals())
    for namer in (theirs, ours):
        namer.rule_options = RuleOptions(keep_all_tokens=True) if keep_all else None
    for text in used:
        assert ours.terminal_for(pattern(text)) == theirs.pattern(pattern(text))
    assert [(t.name, t.pattern) for t in ours.terminals] == \
        [(t.name, t.pattern) for t in theirs.terminals]
    assert (ours.term_set, ours.i) == (theirs.term_set, theirs.i)


@given(st.text(alphabet="aZ_09 -é\u0301\u00aa\u2160\u0660", max_size=4))
def test_names_of_strings_are_lark_s(text):
    from lark.utils import is_id_continue, is_id_start

    from pse.lark_patterns import is_name

    assert is_name(text) == bool(text and is_id_continue(text) and is_id_start(text[0]))
