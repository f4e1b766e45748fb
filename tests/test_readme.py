"""The README's Python examples run as they are, and say what they give.

Every ```python block of README.md runs in a fresh namespace, statement by statement. Where a
statement is an expression whose line ends with a comment that starts with a Python literal
(`# True`, `# ['36']`, `# b'{"name":"': forced ...`), the expression's value must equal that
literal. A block whose first line is `# needs: tokenizer` is skipped, saying so (none should
need one: the examples use `pse.Vocabulary.from_tokens`). The README's relative links must
name files of the repository.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

import pytest

from conftest import REPO_ROOT

README = REPO_ROOT / "README.md"


def python_blocks() -> list[tuple[int, str]]:
    """(first line number, source) of each ```python block of the README."""
    blocks, current, start = [], None, 0
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        if current is None:
            if line.strip() == "```python":
                current, start = [], number + 1
        elif line.strip() == "```":
            blocks.append((start, "\n".join(current) + "\n"))
            current = None
        else:
            current.append(line)
    assert current is None, "a ```python block of README.md is not closed"
    return blocks


BLOCKS = python_blocks()


def claimed_value(comment: str):
    """The literal a comment starts with (its longest prefix that is one), or None."""
    text = comment.lstrip("#").strip()
    for end in range(len(text), 0, -1):
        try:
            return True, ast.literal_eval(text[:end])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return False, None


def line_comments(source: str) -> dict[int, str]:
    """The comment at the end of each line (by line number within the block)."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string
    return found


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("start,source", BLOCKS, ids=[f"line{start}" for start, _ in BLOCKS])
def test_readme_example(start, source):
    if source.lstrip().startswith("# needs: tokenizer"):
        pytest.skip(f"the block at README.md line {start} needs a real tokenizer")
    tree = ast.parse(source, f"README.md:{start}")
    comments = line_comments(source)
    namespace: dict = {"__name__": "readme_example"}
    checked = 0
    for statement in tree.body:
        where = f"README.md line {start + statement.lineno - 1}"
        comment = comments.get(statement.end_lineno)
        has_claim, claim = claimed_value(comment) if comment else (False, None)
        if isinstance(statement, ast.Expr) and has_claim:
            code = compile(ast.Expression(statement.value), where, "eval", dont_inherit=True)
            value = eval(code, namespace)  # noqa: S307 (the README's own example)
            assert value == claim, f"{where}: {ast.unparse(statement.value)} is {value!r}, " \
                                   f"the README says {claim!r}"
            checked += 1
        else:
            exec(compile(ast.Module([statement], []), where, "exec", dont_inherit=True),
                 namespace)  # noqa: S102
    assert checked, f"the block at README.md line {start} states no value to check"


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for link in links:
        if re.match(r"[a-z]+:", link) or link.startswith("#"):
            continue
        path = link.split("#")[0]
        assert (REPO_ROOT / path).exists(), f"README.md links to {link}, which does not exist"
