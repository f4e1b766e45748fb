"""JSON Schema compile times of one build, per schema, for comparing two builds.

Compiles each of a seeded sample of maskbench schemas (`JsonSchema(schema)` and
`StructuringEngine(vocab).configure(...)`, as a server does for a new schema) once per round,
in turn, `--repeat` rounds each in a fresh process, and keeps each schema's fastest time: the
run-to-run noise of one compile (a busy machine, the garbage collector) is larger than most
changes to the compiler. Prints
p50 / p90 / p99 / mean over the schemas; `--out F` writes the per-schema times, and
`--against F` (a file written by another build, say a `git worktree` of the commit before)
prints each schema's time here over its time there: median, p10 and p90. `--compare
llguidance` (or xgrammar) compiles the same schemas with that engine in the same processes,
after pse's, and prints the ratios over the schemas both compile. After pse's compiles in the
last round it also prints how many more objects the process's garbage collector then tracks
than before them (what pse's caches of automata leave for every full collection to scan) and
how long a full collection takes (the schemas' data included).

These are compiles in a warm process (one after the other, nothing in between).
bench/maskbench.py's `--compile-only` collects garbage after every file, which leaves the
CPU's caches cold for the next compile: the median compile of either engine takes about twice
as long there.

`--collect` runs a full collection before each compile (not timed), as maskbench does.
Without it, the process's automatic full collections land inside some compiles, at the same
places in every round (the fastest of the rounds keeps them), and where they land moves with
what a build allocates: the p99 of two builds can differ by that alone, so compare the
per-schema ratios (`--against`) or use `--collect`.

Run: python bench/compile_times.py [--limit 600] [--repeat 3] [--out F] [--against F]
     [--compare llguidance] [--collect] [--name SUBSTRING]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import multiprocessing
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import pse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maskbench import make_engine  # noqa: E402
from maskbench_files import SHARED, maskbench_files  # noqa: E402

TOKENIZER = SHARED / "tokenizers" / "llama3" / "tokenizer.json"


def one_round(limit: int, seed: int, other: str | None, collect: bool = False,
              matching: str | None = None
              ) -> tuple[int, dict[str, float], dict[str, float], tuple[int, float]]:
    """In a fresh process: each schema compiled once, in turn (seconds per schema that
    compiles), then the same with engine `other` (if any), how many files there were, and
    after pse's compiles the objects the garbage collector tracks beyond those it tracked
    before them (the schemas' data included) and a full collection's seconds. `collect`: a
    full collection before each compile (not timed), as bench/maskbench.py runs one.
    `matching`: only the files whose name holds it."""
    warnings.simplefilter("ignore")  # (schemas' annotations and approximations)
    vocab = pse.Vocabulary.from_file(TOKENIZER)
    files = list(maskbench_files(limit, seed, name=matching))
    gc.collect()
    tracked_before = len(gc.get_objects())
    times: dict[str, float] = {}
    for name, data in files:
        engine = None
        if collect:
            gc.collect()
        started = time.perf_counter()
        try:
            engine = pse.StructuringEngine(vocab)
            engine.configure(pse.JsonSchema(data["schema"]))
        except pse.PSEError:
            continue
        times[name] = time.perf_counter() - started
    engine = None
    gc.collect()  # (the compiles' garbage gone: what the process keeps)
    started = time.perf_counter()
    gc.collect()
    heap = (len(gc.get_objects()) - tracked_before, time.perf_counter() - started)
    other_times: dict[str, float] = {}
    if other:
        engine = make_engine(other, vocab, TOKENIZER, 0)
        for name, data in files:
            if collect:
                gc.collect()
            started = time.perf_counter()
            try:
                engine.compile("schema", data["schema"])
            except Exception:  # (that engine's own compile errors)
                continue
            other_times[name] = time.perf_counter() - started
    return len(files), times, other_times, heap


def fastest_compiles(limit: int, seed: int, repeat: int, other: str | None = None,
                     collect: bool = False, matching: str | None = None
                     ) -> tuple[int, dict[str, float], dict[str, float], tuple[int, float]]:
    """Per schema that compiles, its fastest time over `repeat` rounds, each round in a
    process of its own (a schema's first compile in a process, after the schemas before it:
    what a server pays for a new schema; the caches of later compiles of the same schema in
    one process would hide changes to the work done once per automaton); the same for
    engine `other`; the last round's garbage collector figures (see one_round)."""
    best: dict[str, float] = {}
    other_best: dict[str, float] = {}
    n_files = 0
    context = multiprocessing.get_context("spawn")
    for k in range(repeat):
        with context.Pool(1) as pool:
            n_files, times, other_times, heap = pool.apply(
                one_round, (limit, seed, other, collect, matching))
        for found, into in ((times, best), (other_times, other_best)):
            for name, t in found.items():
                into[name] = min(into.get(name, t), t)
        print(f"\rround {k + 1}/{repeat}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return n_files, best, other_best, heap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=600, help="maskbench files (seeded sample)")
    ap.add_argument("--name", help="only the files whose name holds this (from all of them; "
                                   "--limit then samples those)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="compiles per schema (fastest kept)")
    ap.add_argument("--out", help="write the per-schema times (JSON) here")
    ap.add_argument("--against", help="a file --out wrote for another build: compare")
    ap.add_argument("--compare", choices=["llguidance", "xgrammar"],
                    help="also compile the schemas with this engine, in the same processes")
    ap.add_argument("--collect", action="store_true",
                    help="a full garbage collection before each compile (not timed), as "
                         "bench/maskbench.py runs one before each file")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if not TOKENIZER.is_file():
        sys.exit(f"{TOKENIZER} is missing: set PSE_SHARED to the shared folder")
    if args.compare and importlib.util.find_spec(args.compare) is None:
        sys.exit(f"--compare {args.compare}: not installed (pip install \".[bench]\")")
    n_files, best, other, heap = fastest_compiles(args.limit, args.seed, args.repeat,
                                                  args.compare, args.collect, args.name)
    ms = np.array(list(best.values())) * 1e3
    print(f"pse {pse.__version__} ({Path(pse.__file__).parent}): {len(best)} of {n_files} "
          f"schemas compile; fastest of {args.repeat}, ms: p50 {np.percentile(ms, 50):.2f}, "
          f"p90 {np.percentile(ms, 90):.2f}, p99 {np.percentile(ms, 99):.1f}, "
          f"mean {ms.mean():.2f}")
    print(f"after pse's compiles: {heap[0]:,} more objects tracked by the garbage collector "
          f"than before them, a full collection {heap[1] * 1e3:.1f} ms")
    if args.compare:
        both = sorted(set(best) & set(other))
        ours = np.array([best[n] for n in both]) * 1e3
        theirs = np.array([other[n] for n in both]) * 1e3
        print(f"{args.compare}: {len(other)} of {n_files} schemas compile; on the {len(both)} "
              f"both compile, ms, pse / {args.compare}: "
              + ", ".join(f"{q} {np.percentile(ours, p):.2f} / {np.percentile(theirs, p):.2f} "
                          f"({np.percentile(ours, p) / np.percentile(theirs, p):.3g}x)"
                          for q, p in (("p50", 50), ("p90", 90), ("p99", 99)))
              + f", mean {ours.mean():.2f} / {theirs.mean():.2f} "
                f"({ours.mean() / theirs.mean():.3g}x)")
    if args.out:
        Path(args.out).write_text(json.dumps(best))
    if args.against:
        other = json.loads(Path(args.against).read_text())
        both = sorted(set(best) & set(other))
        ratio = np.array([best[n] / other[n] for n in both])
        print(f"per schema, this build / {args.against} ({len(both)} schemas): median "
              f"{np.median(ratio):.3f}, p10 {np.percentile(ratio, 10):.3f}, "
              f"p90 {np.percentile(ratio, 90):.3f}")


if __name__ == "__main__":
    main()
