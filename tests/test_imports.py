"""The modules of pse import one another one way: no cycle, counting the imports inside
functions (a lazy import is still a dependency) and leaving out those only for type checkers."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pse
from pse.cfg import cycles as cfg_cycles

PACKAGE = Path(pse.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(path: Path, modules: set[str]) -> set[str]:
    """The modules of pse that a module imports (from pse import x: pse.x where it is one)."""
    found: set[str] = set()
    if path.suffix != ".py":  # Cython: its import and cimport lines
        for match in re.finditer(r"^\s*(?:from|cimport|import)\s+(pse[\w.]*)", path.read_text(),
                                 re.M):
            found.add(match.group(1))
        return found & modules
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (an invalid escape in a string: fix the source)
        stack = [ast.parse(path.read_text(), str(path))]
    while stack:
        node = stack.pop()
        if type_checking_only(node):
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        stack.extend(ast.iter_child_nodes(node))
    return found & modules


def graph() -> dict[str, set[str]]:
    paths = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd")]
    modules = {module_name(p) for p in paths}
    out: dict[str, set[str]] = {m: set() for m in modules}
    for path in paths:
        name = module_name(path)
        # a module's packages are imported before it runs: importing them is no dependency
        # (`from pse import x`, `from pse.json_schema import common` import pse.x and common)
        parts = name.split(".")
        packages = {".".join(parts[:k]) for k in range(1, len(parts))}
        out[name] |= imported(path, modules) - {name} - packages
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another (pse.cfg's Tarjan: the next test checks
    that it finds them)."""
    return cfg_cycles({m: sorted(deps) for m, deps in g.items()})


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_the_check_finds_cycles():
    g = graph()
    assert "pse.machines" in g["pse.compiler"] and "pse._core.structure" in g["pse.compiler"]
    assert "pse.drawing" in g["pse.machines"]  # (imported inside a function)
    assert "pse._core.stepper" not in g["pse.vocabulary"]
    assert "pse.json_schema.common" in g["pse.json_schema.arrays"]
    assert "pse.json_schema" not in g["pse.json_schema.arrays"]  # (its own package)
    assert "pse.json_schema" in g["pse.engine"]
    g["pse.machines"].add("pse.compiler")  # the lazy import StateMachine.compile once had
    assert cycles(g) == [["pse.cache_entry", "pse.compile_cache", "pse.compiler",
                          "pse.json_spelling", "pse.json_value", "pse.machines",
                          "pse.registers"]]
    assert cycles({"a": {"a"}}) == [["a"]]


def test_import_pse_leaves_the_optional_readers_unimported():
    """`import pse` does not import lark (about 55 ms): only reading a Lark grammar does."""
    import subprocess
    import sys

    code = ("import sys, pse; print(sorted(m for m in ('lark', 'pse.lark_syntax', "
            "'pse.lark_builder') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parent).stdout
    assert out.strip() == "[]"
