"""A regex's first compile in a process: pse's automaton beside Python's `re`.

Each pattern is compiled in processes of its own (`--repeat` of them, the median kept), after
`import pse.regex` and one warm-up pattern, so that what a process builds once for the first
pattern of a kind is counted: the cased characters under IGNORECASE, the code points of
Unicode \\d, \\s and \\w. pse: `pse.regex.compile_regex(pattern)`, the minimal byte automaton
the structures use; `re`: `re.compile(pattern)` after `re.purge()` in the same process (a
different product, a matcher of Python's own, but the same input: the ratio says how far a
pattern's automaton is from the cost of reading it).

Run: python bench/regex_compile.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

PATTERNS = [
    r"(?i)[\u0080-\U0010ffff]x",     # a wide case-insensitive class
    r"(?i)[a-z\u00e0-\u00ff]+@[a-z]+",
    r"(?i)\w+",                      # a Unicode category, case-insensitive
    r"\w+",
    r"\s*\d+",
    r"(?i)select",                   # a keyword, as Lark's "select"i
    r"[A-Za-z_][A-Za-z0-9_]*",
]

# one process: warm up, then time one pattern in both engines; prints JSON
PROBE = r"""
import json, re, sys, time
from pse.regex import compile_regex
compile_regex("a")
pattern = sys.argv[1]
t = time.perf_counter(); compile_regex(pattern); pse_s = time.perf_counter() - t
re.purge()
t = time.perf_counter(); re.compile(pattern); re_s = time.perf_counter() - t
print(json.dumps([pse_s, re_s]))
"""


def first_compile(pattern: str, repeat: int) -> tuple[float, float]:
    """Median seconds of the first compile of `pattern`, pse and re, over `repeat` processes."""
    root = Path(__file__).resolve().parent.parent
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", PROBE, pattern], capture_output=True,
                             text=True, check=True, cwd=root)
        runs.append(json.loads(out.stdout))
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="processes per pattern")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    print(f"First compile in a process, median of {args.repeat}\n")
    print("| pattern | pse ms | re ms | pse / re |")
    print("| --- | --- | --- | --- |")
    for pattern in PATTERNS:
        pse_s, re_s = first_compile(pattern, args.repeat)
        shown = pattern.replace("|", "\\|")
        print(f"| `{shown}` | {pse_s * 1e3:.2f} | {re_s * 1e3:.3f} | {pse_s / re_s:.0f}x |",
              flush=True)


if __name__ == "__main__":
    main()
