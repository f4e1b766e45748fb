"""Resident memory over many configure / generate / drop cycles: the cycles of
tests/test_memory.py, run longer, printing RSS every 1,000 cycles.

Run: python bench/memory_cycles.py [--cycles 40000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_memory import Cycles, rss_mb, small_vocab  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=40_000)
    args = ap.parse_args()
    cycles = Cycles(small_vocab())
    t0 = time.perf_counter()
    lo = hi = None
    for k in range(0, args.cycles, 1000):
        cycles.run(k, k + 1000)
        rss = rss_mb()
        if k >= 1000:
            lo = rss if lo is None else min(lo, rss)
            hi = rss if hi is None else max(hi, rss)
        print(f"{k + 1000:6} cycles  {rss:7.2f} MB  {time.perf_counter() - t0:6.1f} s", flush=True)
    if lo is not None:
        print(f"after the first 1,000 cycles: {lo:.2f} to {hi:.2f} MB")


if __name__ == "__main__":
    main()
