"""Pictures of machines (pse.drawing, StateMachine.to_dot, `pse draw`): the DOT text read back
by pydot's parser, against the machines' own state graphs."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import given, settings

import pse.drawing
from pse import AnyOf, Chain, Forward, Grammar, JsonSchema, Loop, Phrase
from pse.cli import main
from test_properties import trees

pydot = pytest.importorskip("pydot")
# (pydot's parser uses pyparsing's old names)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pydot")


def parse(dot_text: str):
    graphs = pydot.graph_from_dot_data(dot_text)
    assert graphs is not None and len(graphs) == 1, "pydot reads one graph"
    return graphs[0]


def unquote(text: str) -> str:
    """A DOT string's text (the escapes `to_dot` writes)."""
    assert text[0] == text[-1] == '"'
    out, i = [], 1
    while i < len(text) - 1:
        if text[i] == "\\":
            out.append({"n": "\n"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def machines_of(machine) -> list:
    """The machines with states reachable from `machine`, breadth first, Forwards followed:
    what a picture draws, in order."""
    def resolved(m):
        while isinstance(m, Forward) and m.target is not None:
            m = m.target
        return m

    order, seen = [], set()
    queue = [resolved(machine)]
    while queue:
        m = queue.pop(0)
        if id(m) in seen:
            continue
        seen.add(id(m))
        order.append(m)
        for edges in m.state_graph.values():
            for sub, _ in edges:
                sub = resolved(sub)
                if sub.state_graph and id(sub) not in seen:
                    queue.append(sub)
    return order


def check_picture(machine, max_machines: int = 50) -> None:
    """The clusters are the machines reachable (up to max_machines), each with its states,
    end states and edges."""
    graph = parse(machine.to_dot(max_machines))
    clusters = graph.get_subgraphs()
    if not machines_of(machine)[0].state_graph:  # a terminal alone: one edge
        assert len(clusters) == 1 and len(graph.get_edges()) == 2
        assert {unquote(n.get("label")) for n in clusters[0].get_nodes()
                if n.get("shape") != "point"} == {"0", "1"}
        return
    machines = machines_of(machine)[:max_machines]
    assert len(clusters) == len(machines)
    n_edges = 0
    for cluster, m in zip(clusters, machines):
        states = {unquote(n.get("label")) for n in cluster.get_nodes()
                  if n.get("shape") != "point"}
        want = {str(s) for s in m.state_graph} | {str(s) for s in m.end_states} \
            | {str(t) for edges in m.state_graph.values() for _, t in edges} | {str(m.start_state)}
        assert states == want
        ends = {unquote(n.get("label")) for n in cluster.get_nodes()
                if n.get("shape") == "doublecircle"}
        assert ends == {str(s) for s in m.end_states}
        n_edges += 1 + sum(map(len, m.state_graph.values()))  # (the start arrow)
    assert len(graph.get_edges()) == n_edges


@settings(max_examples=60)
@given(trees)
def test_random_structures(tree):
    machine, _ = tree
    check_picture(machine)
    check_picture(machine, max_machines=1)


def test_recursion_labels_and_limits():
    expr = Forward(name="expr")
    expr.set(AnyOf(Phrase("x"), Chain(Phrase('("\\\n'), expr, Phrase(")"))))
    machine = Loop(expr, 1)
    check_picture(machine)
    check_picture(expr)  # a Forward drawn as the machine it names
    assert parse(expr.to_dot()).get_subgraphs()[0].get("label") == '"AnyOf 0"'
    labels = [unquote(e.get("label")) for e in parse(machine.to_dot()).get_edges()
              if e.get("label")]
    assert "Phrase('(\"\\\\\\n')" in labels  # quotes, a backslash and a newline read back
    assert labels.count("expr: AnyOf 1") == 3  # a Forward stands for its machine, drawn once
    small = [unquote(e.get("label")) for e in parse(machine.to_dot(1)).get_edges()
             if e.get("label")]
    assert small == ["expr: AnyOf 1 (not drawn)"] * 2
    assert "(not set)" in Chain(Phrase("a"), Forward(name="later")).to_dot()
    alone = parse(Phrase("a" * 100).to_dot())  # a terminal alone: one edge, its text cut
    assert alone.get_subgraphs()[0].get("label") == '"Phrase 0"'
    assert [unquote(e.get("label")) for e in alone.get_edges() if e.get("label")] == \
        ["Phrase('" + "a" * 37 + "..."]  # (48 characters)
    with pytest.raises(ValueError, match="max_machines"):
        machine.to_dot(0)


def test_schema_and_grammar_pictures():
    check_picture(JsonSchema({"type": "object", "properties": {
        "a": {"type": "string", "pattern": '^a"\\\\b$'}, "b": {"enum": [1, "x", None]}}}))
    check_picture(Grammar('start: expr\nexpr: expr "+" NUMBER | NUMBER\n%import common.NUMBER\n'))
    check_picture(Grammar.from_gbnf('root ::= item+\nitem ::= "- " [a-z]+ "\\n"'), 3)


def test_svg_needs_graphviz(monkeypatch, tmp_path, capsys):
    machine = Chain(Phrase("a"), Phrase("b"))
    if shutil.which("dot"):
        assert machine._repr_svg_().lstrip().startswith(("<?xml", "<svg"))
    monkeypatch.setattr(pse.drawing.shutil, "which", lambda name: None)
    assert machine._repr_svg_() is None  # the notebook shows the repr instead
    with pytest.raises(pse.drawing.GraphvizNotFound, match="apt install graphviz"):
        pse.drawing.render(machine.to_dot())
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "array", "items": {"type": "integer"}}')
    assert main(["draw", str(schema), "-o", str(tmp_path / "m.svg")]) == 2
    assert "Graphviz's `dot` program is not installed" in capsys.readouterr().err
    assert main(["draw", str(schema), "-o", str(tmp_path / "m.dot")]) == 0
    assert (tmp_path / "m.dot").read_text() == JsonSchema(
        {"type": "array", "items": {"type": "integer"}}).to_dot()
    assert main(["draw", str(schema), "-o", str(tmp_path / "m")]) == 2
    assert "name the format by the suffix" in capsys.readouterr().err
    grammar = tmp_path / "g.gbnf"
    grammar.write_text('root ::= "a" | "b"')
    assert main(["draw", str(grammar), "-o", str(tmp_path / "g.dot")]) == 0
    parse((tmp_path / "g.dot").read_text())
