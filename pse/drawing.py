"""Pictures of structures: a StateMachine as a Graphviz graph (`to_dot`), drawn by Graphviz's
`dot` program where it is installed (`render`; `StateMachine._repr_svg_` in notebooks, `pse
draw` on the command line).

A machine is a cluster of its states (the start marked by an arrow, end states by a double
circle); an edge is a sub-machine: a terminal by its text, a machine of states by its name, a
cluster of its own (each drawn once, however often it is used: a recursive transition
network). A Forward stands for the machine it names.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import deque
from typing import Any

from pse.errors import PSEError

LABEL_LENGTH = 48  # longer terminal texts are cut (with "...")
DOT_SECONDS = 60  # the most `render` waits for Graphviz


class GraphvizNotFound(PSEError):
    """Graphviz's `dot` program is not installed (on PATH)."""


def to_dot(machine: Any, max_machines: int = 50) -> str:
    """The machine as Graphviz DOT text.

    Args:
        machine: a StateMachine.
        max_machines: the most machines drawn as clusters (the first ones met, breadth
            first); an edge into one not drawn is labelled with its name and "(not drawn)".

    Raises:
        ValueError: max_machines is below 1.
    """
    if max_machines < 1:
        raise ValueError(f"max_machines must be >= 1, got {max_machines}")
    picture = _Picture(max_machines)
    machine = _resolved(machine)
    if not machine.state_graph:  # a terminal (or a Forward not set) alone: one edge
        machine = _Alone(machine)
    picture.name(machine)
    lines = ["digraph structure {", "  rankdir=LR;",
             "  node [shape=circle, fontsize=10, width=0.3];", "  edge [fontsize=10];"]
    k = 0
    while picture.queue:
        m = picture.queue.popleft()
        states = _states(m)
        ids = {state: f"s{k}_{i}" for i, state in enumerate(states)}
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f"    label={_quote(picture.names[id(m)])};")
        lines.append(f'    start{k} [shape=point, label=""];')
        for state in states:
            shape = "doublecircle" if state in m.end_states else "circle"
            lines.append(f"    {ids[state]} [shape={shape}, label={_quote(str(state))}];")
        lines.append("  }")
        lines.append(f"  start{k} -> {ids[m.start_state]};")
        for state, edges in m.state_graph.items():
            for sub, target in edges:
                label = _quote(picture.edge_label(sub))
                lines.append(f"  {ids[state]} -> {ids[target]} [label={label}];")
        k += 1
    lines.append("}")
    return "\n".join(lines) + "\n"


class _Alone:
    """A machine of one edge, the terminal drawn alone."""

    def __init__(self, terminal: Any) -> None:
        self.state_graph = {0: [(terminal, 1)]}
        self.start_state, self.end_states = 0, (1,)
        self.picture_name = type(terminal).__name__


class _Picture:
    """The machines of a picture: their names, and those drawn as clusters (in order)."""

    def __init__(self, max_machines: int) -> None:
        self.max_machines = max_machines
        self.names: dict[int, str] = {}
        self.drawn: set[int] = set()  # ids of the machines drawn, queued first
        self.queue: deque[Any] = deque()

    def name(self, m: Any) -> str:
        """A machine's name in the picture (its kind and a number); the first max_machines
        named are drawn."""
        if id(m) not in self.names:
            kind = m.picture_name if isinstance(m, _Alone) else type(m).__name__
            self.names[id(m)] = f"{kind} {len(self.names)}"
            if len(self.drawn) < self.max_machines:
                self.drawn.add(id(m))
                self.queue.append(m)
        return self.names[id(m)]

    def edge_label(self, sub: Any) -> str:
        """A terminal's text (cut past LABEL_LENGTH), a machine's name, a Forward's name and
        the machine it stands for."""
        if _is_forward(sub):
            target = _resolved(sub)
            if _is_forward(target):
                return f"{sub.name} (not set)"
            return f"{sub.name}: {self.edge_label(target)}"
        if not sub.state_graph:
            text = repr(sub)
            return text if len(text) <= LABEL_LENGTH else text[:LABEL_LENGTH - 3] + "..."
        name = self.name(sub)
        return name if id(sub) in self.drawn else f"{name} (not drawn)"


def render(dot_text: str, fmt: str = "svg") -> bytes:
    """DOT text drawn by Graphviz's `dot` in format `fmt` (svg, png, pdf, ...).

    Raises:
        GraphvizNotFound: `dot` is not on PATH.
        PSEError: `dot` failed (its message) or took more than DOT_SECONDS.
    """
    program = shutil.which("dot")
    if program is None:
        raise GraphvizNotFound("Graphviz's `dot` program is not installed (apt install "
                               "graphviz, brew install graphviz, or graphviz.org); without "
                               "it, StateMachine.to_dot() or `pse draw -o FILE.dot` gives the "
                               "DOT text")
    try:
        done = subprocess.run([program, f"-T{fmt}"], input=dot_text.encode(),
                              capture_output=True, check=False, timeout=DOT_SECONDS)
    except subprocess.TimeoutExpired:
        raise PSEError(f"dot -T{fmt} took more than {DOT_SECONDS} s") from None
    if done.returncode != 0:
        raise PSEError(f"dot -T{fmt} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _resolved(m: Any) -> Any:
    """A Forward's machine (through chains of Forwards); other machines as they are."""
    seen = set()
    while _is_forward(m) and m.target is not None and id(m) not in seen:
        seen.add(id(m))
        m = m.target
    return m


def _is_forward(m: Any) -> bool:
    return not m.state_graph and hasattr(m, "target")


def _states(m: Any) -> list:
    """A machine's states in the order they first appear (start, edges, end states)."""
    states = dict.fromkeys([m.start_state])
    for state, edges in m.state_graph.items():
        states[state] = None
        for _, target in edges:
            states[target] = None
    states.update(dict.fromkeys(m.end_states))
    return list(states)


def _quote(text: str) -> str:
    """A DOT string: quotes and backslashes escaped, newlines as \\n."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
