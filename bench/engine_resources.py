"""Batch masks from a thread pool, and the engine's memory, with the Llama 3 vocabulary.

- `pse.fill_next_token_bitmask_par(engines, bitmask)` against filling the rows one after the
  other, for a batch of engines at different points of different JSON documents. The memo of
  masks is off (mask_memo=0), so every row is a real walk of the trie.
- Resident memory: the process before and after building the vocabulary, loading the
  `tokenizers` tokenizer behind `vocab.encode`, and configuring an engine with Json() and
  computing masks along a document.

Run: python bench/engine_resources.py [--batch 32] [--repeat 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("PSE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()

    import pse

    after_import = rss_mb()
    vocab = pse.Vocabulary.from_file(SHARED / "tokenizers" / "llama3" / "tokenizer.json")
    after_vocab = rss_mb()
    doc = json.dumps({"name": "Zoë", "items": [1, 2.5, {"k": "v" * 40}], "ok": True,
                      "text": "a longer string value with words and 東京 and \\u00e9"},
                     separators=(",", ":"), ensure_ascii=False)
    ids = vocab.encode(doc)
    after_tokenizer = rss_mb()
    engine = pse.StructuringEngine(vocab)
    engine.configure(pse.Json())
    for tid in ids:
        engine.compute_mask()
        engine.consume_token(tid)
    after_engine = rss_mb()
    print(f"resident memory: python + pse imported {after_import:.0f} MB; + Llama 3 "
          f"vocabulary {after_vocab - after_import:.0f} MB; + the tokenizers tokenizer behind "
          f"encode {after_tokenizer - after_vocab:.0f} MB; + engine with Json() after "
          f"{len(ids)} masks ({len(engine.matcher.cache)} slice entries) "
          f"{after_engine - after_tokenizer:.1f} MB")

    rng = random.Random(0)
    engines = []
    for i in range(args.batch):
        e = pse.StructuringEngine(vocab, mask_memo=0)
        e.configure(pse.Json())
        e.consume_tokens(ids[: rng.randrange(len(ids))])
        engines.append(e)
    bitmask = np.zeros((args.batch, engines[0].n_words), dtype=np.int32)
    serial = parallel = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(args.repeat // 5):
            for i, e in enumerate(engines):
                e.fill_next_token_bitmask(bitmask, i)
        serial = min(serial, time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(args.repeat // 5):
            pse.fill_next_token_bitmask_par(engines, bitmask)
        parallel = min(parallel, time.perf_counter() - t0)
    per = args.repeat // 5 * args.batch
    print(f"batch of {args.batch} rows on {os.cpu_count()} cores: serial "
          f"{serial / per * 1e6:.1f} us/row, fill_next_token_bitmask_par "
          f"{parallel / per * 1e6:.1f} us/row, speed-up {serial / parallel:.2f}x")


if __name__ == "__main__":
    main()
