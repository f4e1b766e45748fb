"""A Lark grammar's own rules read from its tokens straight into BNF (`pse.lark_reader`'s
`_LarkRules`) give exactly what reading them through lark's trees and builder gives: the same
rules in the same order, the same terminals (anonymous ones named alike), and where the
grammar is refused, the same error. The reading through trees is checked against lark's own
in tests/test_lark_syntax.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_grammar import random_grammars
from test_lark_syntax import CORPUS, grammars_to_validate

from pse import lark_builder, lark_patterns, lark_reader, lark_syntax
from pse.errors import GrammarError
from pse.limits import MAX_GROUP_DEPTH


def read(text: str, by_trees: bool, monkeypatch) -> tuple:
    """`read_lark`'s grammar (rules in order, terminals, ignored names, files) or its error;
    `by_trees`: every rule through lark's trees and builder."""
    with monkeypatch.context() as m:
        if by_trees:  # (every text holds $END: no rule is read from the tokens)
            m.setattr(lark_syntax, "REWRITING", frozenset(["$END"]))
        try:
            bnf = lark_reader.read_lark(text, "root" if text.startswith("root:") else "start",
                                        [], None)
        except GrammarError as e:
            return ("error", type(e), str(e))
    return (list(bnf.rules.items()),
            [(t.name, t.pattern, t.priority) for t in bnf.terminals],
            bnf.ignore_tokens, bnf.files)


def read_from_tokens(text: str) -> dict:
    """The rules as `_LarkRules` reads them from the tokens, with no going back to the trees
    (raises `_NotPlain` where it would go back)."""
    tree, heads, kinds, texts = lark_syntax.parse_apart(text)
    assert heads is not None
    grammar, _ = lark_builder.load(text, "<string>", [], tree)
    terminals = lark_patterns.terminal_definitions(grammar)
    return lark_reader._rules(grammar, terminals, (heads, kinds, texts))


def rewrites_rules(text: str) -> bool:
    return bool(lark_syntax.REWRITING.intersection(lark_syntax.tokens(text)[0]))


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_rules_from_tokens_are_those_from_trees(name, text, monkeypatch):
    assert read(text, False, monkeypatch) == read(text, True, monkeypatch)
    if not rewrites_rules(text) and "%import" not in text:
        # (read from the tokens, not gone back to the trees)
        assert list(read_from_tokens(text).items()) == read(text, False, monkeypatch)[0]


def test_the_corpus_is_mostly_read_from_tokens():
    """The test above compares the two readings on grammars each reads itself."""
    plain = [name for name, text in CORPUS if not rewrites_rules(text)]
    assert len(plain) > 0.8 * len(CORPUS)


@settings(max_examples=200, deadline=None)
@given(random_grammars())
def test_random_grammars_read_alike(text):
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert read(text, False, monkeypatch) == read(text, True, monkeypatch)


@settings(max_examples=400, deadline=None)
@given(grammars_to_validate())
def test_what_the_builder_checks_is_refused_alike(text):
    """Rules and terminals defined or not, templates, `%ignore`s and `%declare`s: the rules
    read from the tokens go back to lark's builder wherever it would refuse them, which
    words the error."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert read(text, False, monkeypatch) == read(text, True, monkeypatch)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab:|()[]?*+~.0123 "/\n\\_%-ABi>{},#!', max_size=40))
def test_random_text_is_read_alike(text):
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert read(text, False, monkeypatch) == read(text, True, monkeypatch)


REFUSED = {
    "a rule defined twice": 'start: "a"\nstart: "b"\n',
    "a rule named as an imported terminal": "start: number\nnumber: \"1\"\n"
                                            "%import common.NUMBER -> number\n",
    "a name lark's syntax refuses": 'start: __x\n__x: "a"\n',
    "an alias in a group naming no rule": 'start: ("a" -> x) "b"\n',
    "an alias in [...] naming no rule": 'start: ["a" -> x]\n',
    "?_rule": 'start: _x\n?_x: "a"\n',
    "an undefined rule": 'start: a "x"\n',
    "an undefined terminal": 'start: "x" X\n',
    "an imported terminal used as a rule": "start: number\n%import common.NUMBER -> number\n",
    "a %declare'd rule": "start: a\n%declare a\n",
    "an %ignore'd rule": 'start: a\na: "x"\n%ignore a\n',
    "a bad range": 'start: "a"~3..2\n',
    "a range of strings": 'start: "ab".."c"\n',
    "an alias without a name": 'start: "a" ->\n',
    "a count without a number": 'start: "a" ~ b\nb: "b"\n',
    "an unclosed group": 'start: ("a"\n',
    "a bracket closing a group": 'start: ("a"]\n',
    "a rule in a terminal": 'start: A\nA: a\na: "x"\n',
    "groups nested too deep": "start: " + "(" * (MAX_GROUP_DEPTH + 1) + '"a"'
                              + ")" * (MAX_GROUP_DEPTH + 1) + "\n",
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=list(REFUSED))
def test_refused_alike(text, monkeypatch):
    ours = read(text, False, monkeypatch)
    assert ours == read(text, True, monkeypatch)
    assert ours[0] == "error"


def test_aliases_in_groups_are_read_where_they_name_rules(monkeypatch):
    text = 'start: ("a" -> x) ["b" -> x] "c" -> y\nx: "x"\n'
    assert read(text, False, monkeypatch) == read(text, True, monkeypatch)
    assert read_from_tokens(text)["start"] == [(("t", "A"), ("t", "B"), ("t", "C")),
                                               (("t", "A"), ("t", "C"))]


def test_rules_after_an_imported_template_s_instances_are_read_alike(tmp_path, monkeypatch):
    """Lark's builder has an imported template's instances after the grammar's own rules:
    their order, and the names of the rules and terminals made for them, are the same."""
    (tmp_path / "lib.lark").write_text('sep{x}: x (/;/ x)*\nitems: sep{"i"}\n')
    text = "%import lib.items\nstart: items /r/\n"

    def read_in(by_trees: bool):
        with monkeypatch.context() as m:
            if by_trees:
                m.setattr(lark_syntax, "REWRITING", frozenset(["$END"]))
            bnf = lark_reader.read_lark(text, "start", [str(tmp_path)], None)
        return list(bnf.rules.items()), [(t.name, t.pattern) for t in bnf.terminals]

    assert read_in(False) == read_in(True)


def test_keeping_tokens_and_priorities_are_read():
    """`!rule`, `?rule` and a rule's priority are read from the tokens as lark reads them:
    into nothing the BNF holds (they shape lark's parse trees)."""
    text = '!start.2: a "x" -> named\n?a: "y" | b\nb.1: "z"?\n'
    rules = read_from_tokens(text)
    assert rules == {"start": [(("n", "a"), ("t", "X"))], "a": [(("t", "Y"),), (("n", "b"),)],
                     "b": [(("t", "Z"),), ()]}
