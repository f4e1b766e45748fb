"""Batch masks from a thread pool, and the engine's memory, with the Llama 3 vocabulary.

- `pse.fill_next_token_bitmask_par(engines, bitmask)` against filling the rows one after the
  other, for a batch of engines at different points of different JSON documents. The memo of
  masks is off (mask_memo=0), so every row is a real walk of the trie.
- Resident memory: the process before and after building the vocabulary, loading the
  `tokenizers` tokenizer behind `vocab.encode`, and configuring an engine with Json() and
  computing masks along a document.

- `--schemas`: the peak resident memory of each maskbench schema, each in a fresh process
  (the Llama 3 vocabulary loaded from a file `Vocabulary.save` wrote; the schema compiled,
  then its tests' instances, compact, replayed token by token with a mask before each
  token): the process's peak (VmHWM) and what the schema added to it.

Run: python bench/engine_resources.py [--batch 32] [--repeat 200]
     python bench/engine_resources.py --schemas [--limit N] [--seed S] [--workers 2]
                                      [--out FILE]
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


def status_mb(field: str = "VmRSS") -> float:
    """A memory figure of this process from /proc/self/status, in MB (VmRSS: resident now;
    VmHWM: its peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one_schema(vocab_file: str, schema_file: str) -> None:
    """In a fresh process: the peak memory of one maskbench file's schema (printed as JSON)."""
    import warnings

    import pse

    warnings.simplefilter("ignore")
    vocab = pse.Vocabulary.load(vocab_file)
    vocab.encode("{}")  # (the tokenizer behind encode, loaded before the base is taken)
    base = status_mb()
    data = json.loads(Path(schema_file).read_text())
    out = {"base": base, "error": None, "tokens": 0}
    try:
        engine = pse.StructuringEngine(vocab)
        engine.configure(data["schema"])
        for test in data.get("tests", []):
            text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
            engine.reset()
            for tid in vocab.encode(text):
                engine.compute_mask()
                out["tokens"] += 1
                if not engine.consume_token(tid):
                    break
    except Exception as e:  # (a schema pse refuses: its peak still counts)
        out["error"] = f"{type(e).__name__}: {str(e)[:100]}"
    out["peak"] = status_mb("VmHWM")
    print(json.dumps(out))


def schemas(args: argparse.Namespace) -> None:
    """The peak memory of each maskbench schema, each in a process of its own."""
    import subprocess
    import sys
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    import pse
    from maskbench_files import maskbench_files

    folder = Path(tempfile.mkdtemp())
    tokenizer = SHARED / "tokenizers" / "llama3" / "tokenizer.json"
    pse.Vocabulary.from_file(tokenizer).save(folder / "llama3.vocab")
    files = []
    for name, data in maskbench_files(args.limit, args.seed):
        if data.get("schema") is not None:
            path = folder / name
            path.write_text(json.dumps(data))
            files.append((name, path))

    def run(item):
        name, path = item
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", str(folder / "llama3.vocab"),
                                   str(path)], capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return name, {"crash": f"over {args.timeout:.0f} s", "stderr": ""}
        lines = proc.stdout.strip().splitlines()
        if proc.returncode or not lines:
            return name, {"crash": proc.returncode, "stderr": proc.stderr[-200:]}
        return name, json.loads(lines[-1])

    done = {}
    if args.out and Path(args.out).exists():  # (a run resumed: its files are not run again)
        for line in Path(args.out).read_text().splitlines():
            if line.strip():
                name, res = json.loads(line)
                done[name] = res
    todo = [item for item in files if item[0] not in done]
    results = [(name, done[name]) for name, _ in files if name in done]
    out = open(args.out, "a") if args.out else None
    with ThreadPoolExecutor(args.workers) as pool:
        for k, (name, res) in enumerate(pool.map(run, todo)):
            results.append((name, res))
            if out:
                out.write(json.dumps([name, res]) + "\n")
                out.flush()
            print(f"\r{len(results)}/{len(files)}", end="", flush=True)
    print()
    if out:
        out.close()
    summarize(results)


def summarize(results: list[tuple[str, dict]]) -> None:
    """The table of peaks over (file name, result) pairs, and the ten largest."""
    ok = [(n, r) for n, r in results if "peak" in r]
    added = sorted(r["peak"] - r["base"] for _, r in ok)
    peaks = sorted(r["peak"] for _, r in ok)
    pick = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    print(f"{len(results)} schemas ({len(results) - len(ok)} crashed), Llama 3 vocabulary "
          f"loaded from a saved file, with the tokenizer behind encode "
          f"({ok[0][1]['base']:.0f} MB resident after them)" if ok else "")
    print("| | p50 | p90 | p99 | max |\n|---|---|---|---|---|")
    for label, xs in (("peak RSS of the process, MB", peaks), ("added by the schema, MB", added)):
        print(f"| {label} | {pick(xs, .5):.0f} | {pick(xs, .9):.0f} | {pick(xs, .99):.0f} | "
              f"{xs[-1]:.0f} |")
    print(f"schemas whose process peaked at 1 GB or more: "
          f"{sum(p >= 1024 for p in peaks)}")
    for name, r in sorted(ok, key=lambda x: -x[1]["peak"])[:10]:
        print(f"  {r['peak']:7.0f} MB  {name}  {r['error'] or ''}")
    for name, r in results:
        if "peak" not in r:
            print(f"  crashed ({r['crash']}): {name}  {r['stderr'][-120:]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--schemas", action="store_true",
                    help="the peak memory of each maskbench schema, in fresh processes")
    ap.add_argument("--limit", type=int, default=None, help="--schemas: files drawn at random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="--schemas: processes at once")
    ap.add_argument("--timeout", type=float, default=300, help="--schemas: seconds per file")
    ap.add_argument("--out", help="--schemas: a file that gets one JSON line per schema as it "
                    "ends; run again with it to go on where the run stopped")
    ap.add_argument("--one", nargs=2, metavar=("VOCAB", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one_schema(*args.one)
        return
    if args.schemas:
        schemas(args)
        return

    import pse

    after_import = status_mb()
    vocab = pse.Vocabulary.from_file(SHARED / "tokenizers" / "llama3" / "tokenizer.json")
    after_vocab = status_mb()
    doc = json.dumps({"name": "Zoë", "items": [1, 2.5, {"k": "v" * 40}], "ok": True,
                      "text": "a longer string value with words and 東京 and \\u00e9"},
                     separators=(",", ":"), ensure_ascii=False)
    ids = vocab.encode(doc)
    after_tokenizer = status_mb()
    engine = pse.StructuringEngine(vocab)
    engine.configure(pse.Json())
    for tid in ids:
        engine.compute_mask()
        engine.consume_token(tid)
    after_engine = status_mb()
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
