"""Schema compile times of pse and another engine under the conditions a compile can meet.

bench/compile_times.py compiles in one busy process; bench/maskbench.py's `--compile-only`
gives each engine a process of its own that sleeps on a pipe between schemas. The two disagree
on pse / llguidance at the median; this shows where the difference comes from. On the same
seeded maskbench schemas, each schema's first compile in its process, every regime in fresh
processes:

- warm: one compile after the other.
- collect: a full garbage collection before each compile (not timed).
- idle: a collection, then `--idle-ms` of sleep before each compile (the process waits, as a
  server between requests does).
- alternate: each engine in a process of its own, sent the schemas over a pipe in turn (pse,
  then the other engine, for each schema), a collection after each compile: maskbench's
  isolated run without its replay.

Prints, per regime, each engine's compile p50 and p90 over the schemas both compile, and
pse / other at each.

Run: python bench/compile_regimes.py [--limit 600] [--seed 0] [--compare llguidance]
     [--idle-ms 3]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
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
REGIMES = ("warm", "collect", "idle", "alternate")


def _engine(name: str):
    warnings.simplefilter("ignore")  # (schemas' annotations and approximations)
    return make_engine(name, pse.Vocabulary.from_file(TOKENIZER), TOKENIZER, 512)


def _timed_compile(engine, schema) -> float | None:
    """Seconds for one compile, None where the engine refuses the schema."""
    started = time.perf_counter()
    try:
        engine.compile("schema", schema)
    except Exception:  # (each engine's own compile errors)
        return None
    return time.perf_counter() - started


def _in_one_process(name: str, schemas: list, regime: str, idle: float) -> list[float | None]:
    """In a fresh process: engine `name` compiles each schema in turn under `regime`."""
    engine = _engine(name)
    gc.collect()
    times = []
    for schema in schemas:
        if regime != "warm":
            gc.collect()
        if regime == "idle":
            time.sleep(idle)
        times.append(_timed_compile(engine, schema))
    return times


def _worker(conn, name: str) -> None:
    """A process of its own for engine `name`: a schema in, its compile time out."""
    engine = _engine(name)
    gc.collect()
    conn.send("ready")
    while (schema := conn.recv()) is not None:
        conn.send(_timed_compile(engine, schema))
        gc.collect()  # (the compiled structure let go, as maskbench's worker does)


def _alternating(names: list[str], schemas: list) -> dict[str, list[float | None]]:
    context = multiprocessing.get_context("spawn")
    pipes, procs = {}, []
    for name in names:
        ours, theirs = context.Pipe()
        proc = context.Process(target=_worker, args=(theirs, name), daemon=True)
        proc.start()
        ours.recv()
        pipes[name] = ours
        procs.append(proc)
    times: dict[str, list[float | None]] = {name: [] for name in names}
    for schema in schemas:
        for name in names:
            pipes[name].send(schema)
            times[name].append(pipes[name].recv())
    for name in names:
        pipes[name].send(None)
    for proc in procs:
        proc.join()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=600, help="maskbench files (seeded sample)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", choices=["llguidance", "xgrammar"], default="llguidance")
    ap.add_argument("--idle-ms", type=float, default=3.0,
                    help="sleep before each compile in the idle regime")
    args = ap.parse_args()
    if args.idle_ms < 0:
        ap.error("--idle-ms must be >= 0")
    if not TOKENIZER.is_file():
        sys.exit(f"{TOKENIZER} is missing: set PSE_SHARED to the shared folder")
    if importlib.util.find_spec(args.compare) is None:
        sys.exit(f"--compare {args.compare}: not installed (pip install \".[bench]\")")
    schemas = [data["schema"] for _, data in maskbench_files(args.limit, args.seed)]
    names = ["pse", args.compare]
    context = multiprocessing.get_context("spawn")
    print(f"{len(schemas)} maskbench schemas (seed {args.seed}), Llama 3 vocabulary; compile "
          f"ms over the schemas both engines compile")
    print(f"| regime | pse p50 / p90 | {args.compare} p50 / p90 | pse / {args.compare}: p50, "
          f"p90 |\n|---|---|---|---|")
    for regime in REGIMES:
        if regime == "alternate":
            times = _alternating(names, schemas)
        else:
            times = {}
            for name in names:
                with context.Pool(1) as pool:
                    times[name] = pool.apply(_in_one_process, (name, schemas, regime,
                                                               args.idle_ms / 1e3))
        both = [k for k in range(len(schemas)) if all(times[n][k] is not None for n in names)]
        ours, theirs = (np.array([times[n][k] for k in both]) * 1e3 for n in names)
        p = {q: (np.percentile(ours, q), np.percentile(theirs, q)) for q in (50, 90)}
        print(f"| {regime} | {p[50][0]:.2f} / {p[90][0]:.2f} | {p[50][1]:.2f} / {p[90][1]:.2f} "
              f"| {p[50][0] / p[50][1]:.2f}x, {p[90][0] / p[90][1]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
