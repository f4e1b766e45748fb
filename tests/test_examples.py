"""Every script in examples/ runs to completion."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pse

from conftest import REPO_ROOT

EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.py"))
# examples that need a serving engine, which the default install has not (.ci/vllm runs it)
NEEDS = {"vllm_serving.py": "vllm"}


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    needed = NEEDS.get(script.name)
    if needed and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{script.name} needs {needed}, which is not installed (.ci/{needed} runs it)")
    # run from an empty directory, with the pse these tests import (the installed one, or the
    # source tree when the tests run from it), not whatever else is on the machine
    env = dict(os.environ, PYTHONPATH=str(Path(pse.__file__).parent.parent))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
