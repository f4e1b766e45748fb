"""A fuzz of the grammar engine against the Earley oracle, past the 40 seeds the test suite runs
(tests/test_grammar_random.py): random ambiguous grammars of one to three rules over a, b and
c, a text of each grammar's language, and every mask along it compared with the oracle's.
Even seeds walk every mask; odd ones plan each exit as jobs under a bound of 16 or 64 live
states. It found `three rules` (seed 5093), whose masks took up to 89 s.

A seed is wrong where a mask differs from the oracle's (the script exits 1), slow past
`--timeout` seconds (SIGALRM: Unix), refused where pse raises GrammarError ("too ambiguous
here", past a bound). Run from the repository's root, with pse built:

    python tests/grammar_fuzz.py --seeds 1000 1200 [--timeout 30]
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pse.errors import GrammarError  # noqa: E402
from test_grammar_interleaved import check_planned_along  # noqa: E402
from test_grammar_random import check_walked_along, random_grammar, random_text  # noqa: E402


class Slow(Exception):
    """A seed ran past the timeout."""


def on_alarm(signum, frame):
    raise Slow()


def run_seed(seed: int, timeout: int) -> str:
    """'ok', 'wrong: ...', 'slow' or 'refused: ...' for one seed."""
    rng = random.Random(seed)
    rules = random_grammar(rng)
    text = random_text(rules, rng)
    signal.alarm(timeout)
    try:
        if seed % 2:
            check_planned_along(rules, text, 3, rng.choice([16, 64]))
        else:
            check_walked_along(rules, text)
        return "ok"
    except Slow:
        return "slow"
    except GrammarError as e:
        return f"refused: {e}"
    except AssertionError as e:
        return f"wrong: {rules} {text!r}: {str(e)[:300]}"
    finally:
        signal.alarm(0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs=2, type=int, metavar=("FIRST", "END"), required=True,
                    help="the seeds FIRST..END-1")
    ap.add_argument("--timeout", type=int, default=30, help="seconds per seed (default 30)")
    args = ap.parse_args()
    first, end = args.seeds
    if end <= first or args.timeout < 1:
        ap.error("needs FIRST < END and a timeout of at least 1 s")
    signal.signal(signal.SIGALRM, on_alarm)
    counts = {"ok": 0, "wrong": 0, "slow": 0, "refused": 0}
    start = time.perf_counter()
    for seed in range(first, end):
        verdict = run_seed(seed, args.timeout)
        kind = verdict.split(":")[0]
        counts[kind] += 1
        if kind != "ok":
            print(f"seed {seed}: {verdict}", flush=True)
        done = seed - first + 1
        if done % 25 == 0:
            print(f"{done}/{end - first} seeds, {time.perf_counter() - start:.0f} s", flush=True)
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + f" (seeds {first}-{end - 1})")
    sys.exit(1 if counts["wrong"] else 0)


if __name__ == "__main__":
    main()
