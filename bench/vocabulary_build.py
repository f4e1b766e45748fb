"""Time to build a Vocabulary (token bytes, datrie, flat trie) from the shared tokenizers.

Run: python bench/vocabulary_build.py [--repeat 3]   (PSE_SHARED locates ../shared)
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from pse import Vocabulary

SHARED = Path(os.environ.get("PSE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'tokenizer':10} {'ids':>8} {'build (best)':>13} {'trie nodes':>11} {'trie MB':>8}")
    for name in ("llama3", "qwen3", "gpt4o"):
        path = SHARED / "tokenizers" / name / "tokenizer.json"
        if not path.is_file():
            print(f"{name:10} skipped: {path} not found")
            continue
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            vocab = Vocabulary.from_file(path)
            best = min(best, time.perf_counter() - t0)
        print(f"{name:10} {vocab.size:>8,} {best:>12.2f}s {vocab.trie.n_nodes:>11,} "
              f"{vocab.trie.nbytes / 1e6:>8.1f}")


if __name__ == "__main__":
    main()
