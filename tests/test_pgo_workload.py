"""The training run of the profile-guided build (setup.py runs tools/pgo_workload.py on an
instrumented build, and builds without a profile, only warning, if it fails): it must run
with what a build has and compile every structure it writes, or installs would quietly lose
the profile."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pse

WORKLOAD = Path(__file__).resolve().parent.parent / "tools" / "pgo_workload.py"


def test_the_workload_compiles_every_structure_it_writes():
    package_root = str(Path(pse.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": package_root}
    done = subprocess.run([sys.executable, str(WORKLOAD)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    counts = re.fullmatch(r"pgo workload: (\d+) schemas \((\d+) refused\)\n", done.stdout)
    assert counts, done.stdout
    assert int(counts[1]) >= 400 and int(counts[2]) == 0, done.stdout
