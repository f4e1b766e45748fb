"""Compile times with and without the compile cache, on maskbench schemas.

Each phase runs in a process of its own, over the same schemas in the same order, timing
`JsonSchema(schema).compile()` per schema (schemas pse refuses are left out of every phase):
  - off:  the cache off (what a compile costs without it);
  - fill: the cache on and empty (a miss: the compile, plus writing the entry);
  - hit:  the cache on and filled by `fill` (a new process: what a restarted server pays).

With --slices, a fourth process loads each schema from the cache and replays its first valid
instance twice with Llama 3 (mask memo off): the difference is what building the mask slices
of the vocabulary costs the first time (the cache does not keep them).

Run: python bench/compile_cache.py [--limit 200] [--seed 0] [--dir /tmp/pse-cache-bench]
[--slices] (PSE_SHARED names the folder of the maskbench data and tokenizers; the --dir
folder is emptied first).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maskbench_files import maskbench_files  # noqa: E402


def phase(kind: str, limit: int, seed: int, folder: str) -> dict:
    import pse
    from pse import compile_cache

    pse.set_cache_dir(None if kind == "off" else folder)
    warnings.simplefilter("ignore")
    times = {}
    for name, data in maskbench_files(limit, seed):
        t0 = time.perf_counter()
        try:
            pse.JsonSchema(data["schema"]).compile()
        except pse.PSEError:
            continue
        times[name] = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in Path(folder, "compiled").glob("*.psec")) \
        if kind != "off" else 0
    return {"times": times, "stats": compile_cache.cache_stats(), "bytes": size}


def slices(limit: int, seed: int, folder: str) -> dict:
    import pse
    from maskbench_files import SHARED

    pse.set_cache_dir(folder)
    warnings.simplefilter("ignore")
    vocab = pse.Vocabulary.from_file(SHARED / "tokenizers" / "llama3" / "tokenizer.json")
    out = {}
    for name, data in maskbench_files(limit, seed):
        tests = [t for t in data.get("tests", []) if t.get("valid")]
        if not tests:
            continue
        t0 = time.perf_counter()
        try:
            structure = pse.JsonSchema(data["schema"])
            structure.compile()
        except pse.PSEError:
            continue
        load = time.perf_counter() - t0
        ids = vocab.encode(json.dumps(tests[0]["data"], separators=(",", ":"),
                                      ensure_ascii=False))
        replays = []
        for _ in range(2):
            engine = pse.StructuringEngine(vocab, mask_memo=0)
            engine.configure(structure)
            t0 = time.perf_counter()
            for token in ids:
                engine.compute_mask()
                if not engine.consume_token(token):
                    break
            replays.append(time.perf_counter() - t0)
        out[name] = (load, *replays)
    return out


def summary(ms: np.ndarray) -> str:
    return (f"p50 {np.percentile(ms, 50):7.2f}  p90 {np.percentile(ms, 90):7.2f}  "
            f"p99 {np.percentile(ms, 99):7.2f}  max {ms.max():7.1f}  mean {ms.mean():6.2f}  "
            f"total {ms.sum() / 1000:6.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=200, help="maskbench files (random)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default="/tmp/pse-cache-bench")
    ap.add_argument("--slices", action="store_true",
                    help="also: the first masks of loaded structures (Llama 3)")
    ap.add_argument("--phase", choices=["off", "fill", "hit", "slices"],
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "slices":
        print(json.dumps(slices(args.limit, args.seed, args.dir)))
        return
    if args.phase:
        print(json.dumps(phase(args.phase, args.limit, args.seed, args.dir)))
        return
    shutil.rmtree(args.dir, ignore_errors=True)
    results = {}
    for kind in ("off", "fill", "hit"):
        out = subprocess.run([sys.executable, __file__, "--phase", kind, "--limit",
                              str(args.limit), "--seed", str(args.seed), "--dir", args.dir],
                             check=True, capture_output=True, text=True).stdout
        results[kind] = json.loads(out.splitlines()[-1])
    names = sorted(set.intersection(*(set(r["times"]) for r in results.values())))
    print(f"{len(names)} schemas that compile, of {args.limit} maskbench files (seed "
          f"{args.seed}); milliseconds per schema, JsonSchema(schema).compile():")
    for kind, what in (("off", "cache off"), ("fill", "miss+store"), ("hit", "cache hit")):
        ms = np.array([results[kind]["times"][n] for n in names]) * 1e3
        print(f"  {what:11s} {summary(ms)}")
    off = np.array([results["off"]["times"][n] for n in names])
    hit = np.array([results["hit"]["times"][n] for n in names])
    print(f"  speed-up per schema (off / hit): p50 {np.percentile(off / hit, 50):.1f}x, "
          f"total {off.sum() / hit.sum():.1f}x")
    print(f"  entries: {results['fill']['stats']['stores']}, "
          f"{results['fill']['bytes'] / 1e6:.1f} MB; hit phase: {results['hit']['stats']}")
    if args.slices:
        out = subprocess.run([sys.executable, __file__, "--phase", "slices", "--limit",
                              str(args.limit), "--seed", str(args.seed), "--dir", args.dir],
                             check=True, capture_output=True, text=True).stdout
        found = json.loads(out.splitlines()[-1])
        load, first, again = (np.array(x) * 1e3 for x in zip(*found.values()))
        print(f"{len(found)} schemas with a valid instance, loaded from the cache, the "
              "instance replayed twice (Llama 3, mask memo off); milliseconds:")
        print(f"  load           {summary(load)}")
        print(f"  first replay   {summary(first)}")
        print(f"  second replay  {summary(again)}")
        print(f"  the difference {summary(first - again)}")


if __name__ == "__main__":
    main()
