"""Instructions that pse's JSON Schema compiles run, for comparing two builds exactly.

Wall time cannot resolve a change of a few percent in a median compile (bench/compile_times.py
explains why); the instructions a band of schemas runs can, since callgrind counts them the
same way every run. Two steps:

1. `python bench/compile_instructions.py --select 40:60 --out band.json` compiles the first
   `--limit` seeded maskbench schemas once each (a full collection before each) and writes the
   names of those whose compile time ranks in that percentile band.
2. Under callgrind, with a fixed hash seed so that both runs take the same paths:

       PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
           "$(python -c 'import sys; print(sys.executable)')" \\
           bench/compile_instructions.py --files band.json [--skip]

   compiles each schema of the band once (`StructuringEngine(vocab).configure(JsonSchema(s))`)
   after loading the vocabulary and one warm-up compile; `--skip` does everything but those
   compiles. The difference of the two totals ("I refs") is the band's compiles; run both
   builds' with the same band file. (valgrind is given the interpreter itself: a `python`
   that is a launcher script, as pyenv's, would be what it counts.)

   The totals also count what runs outside the compiles (loading the vocabulary, reading
   the files), which moved by up to 25 million instructions between identical runs. For
   exact figures, count only inside the compiles instead (no `--skip` run needed):

       --toggle-collect=__pyx_pw_3pse_8compiler_33compile_machine \\
       --toggle-collect=__pyx_pw_3pse_11json_schema_6schema_10JsonSchema_1__init__

   (the front end and the back end; `nm` on the two modules' .so files gives the symbols'
   current names, whose numbers change when functions are added). A toggle inverts: a
   compile nested in the front end (an enum's check of its values against the other
   keywords) is left out, the same in both builds. Run both builds from directories of the
   same path length: paths are strings the compiles hash and copy.

What a compile costs in a cold process is also the lines of code and data it fetches from
memory. `--cold` runs a full collection and sweeps 8 MB of data before each compile (neither
counted: both are outside the toggles), so callgrind's cache simulation starts each compile
from caches holding none of it; add `--cache-sim=yes --I1=65536,8,64 --D1=49152,12,64
--LL=1048576,16,64` (this machine's L1 and one core's L2) and read the "I1 misses" (code
lines fetched from L2), "LLi misses" (code from beyond L2) and "LLd misses" (data). `--engine
llguidance` compiles the band with llguidance (the `bench` extra; its grammar and matcher, as
bench/maskbench.py makes them) instead: count it by the difference of a run and a `--skip`
run, the toggles being pse's functions.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import pse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maskbench_files import SHARED, maskbench_files  # noqa: E402

TOKENIZER = SHARED / "tokenizers" / "llama3" / "tokenizer.json"


def compile_schema(vocab: pse.Vocabulary, schema) -> bool:
    """Whether `schema` compiles (pse's own errors are a failed compile)."""
    try:
        pse.StructuringEngine(vocab).configure(pse.JsonSchema(schema))
        return True
    except pse.PSEError:
        return False


def select(limit: int, seed: int, band: tuple[float, float]) -> list[str]:
    """The names of the schemas whose compile time ranks in the percentile `band`."""
    vocab = pse.Vocabulary.from_file(TOKENIZER)
    times = {}
    for name, data in maskbench_files(limit, seed):
        gc.collect()
        started = time.perf_counter()
        if compile_schema(vocab, data["schema"]):
            times[name] = time.perf_counter() - started
    ranked = sorted(times, key=times.get)
    lo, hi = (round(len(ranked) * p / 100) for p in band)
    print(f"{len(ranked)} schemas compile; band {band[0]:g}-{band[1]:g}%: {hi - lo} schemas, "
          f"{1000 * np.mean([times[n] for n in ranked[lo:hi]]):.2f} ms mean")
    return ranked[lo:hi]


def run(limit: int, seed: int, names: list[str], skip: bool, cold: bool, engine: str) -> None:
    wanted = set(names)
    files = [(name, data) for name, data in maskbench_files(limit, seed) if name in wanted]
    missing = wanted - {name for name, _ in files}
    if missing:
        sys.exit(f"{len(missing)} schemas of the band are not among the first {limit} "
                 f"(seed {seed}): select with the same --limit and --seed")
    vocab = pse.Vocabulary.from_file(TOKENIZER)
    if engine == "pse":
        def compile_one(schema) -> None:
            compile_schema(vocab, schema)
    else:
        from maskbench import LLGuidanceEngine

        llguidance = LLGuidanceEngine(vocab, TOKENIZER)

        def compile_one(schema) -> None:
            try:
                llguidance.compile("schema", schema)
            except Exception:  # (its own errors: a failed compile, as in maskbench)
                pass
    compile_one({"type": "object", "properties": {"a": {"type": "string"}}})
    gc.collect()
    if not cold:
        gc.freeze()  # (the collections a compile sets off scan only what it made)
    sweep = np.zeros(8 << 20, dtype=np.uint8) if cold else None
    for _, data in files:
        if sweep is not None:
            gc.collect()
            sweep += 1
        if not skip:
            compile_one(data["schema"])


def percentiles(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO:HI percentiles, got {text!r}") from None
    if not 0 <= lo < hi <= 100:
        raise argparse.ArgumentTypeError(f"expected 0 <= LO < HI <= 100, got {text!r}")
    return lo, hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=600, help="maskbench files read")
    ap.add_argument("--seed", type=int, default=0, help="seed of the files' order")
    ap.add_argument("--select", type=percentiles, metavar="LO:HI",
                    help="write the names of the schemas in this compile-time band to --out")
    ap.add_argument("--out", type=Path, help="where --select writes the band")
    ap.add_argument("--files", type=Path, help="compile the schemas of this band file")
    ap.add_argument("--skip", action="store_true",
                    help="with --files: everything but the compiles (the baseline)")
    ap.add_argument("--cold", action="store_true",
                    help="with --files: a full collection and an 8 MB sweep before each compile")
    ap.add_argument("--engine", choices=["pse", "llguidance"], default="pse",
                    help="with --files: the engine that compiles")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # (schemas' annotations and approximations)
    if (args.select is None) == (args.files is None):
        ap.error("give either --select (with --out) or --files")
    if args.select is not None:
        if args.out is None:
            ap.error("--select needs --out")
        args.out.write_text(json.dumps(select(args.limit, args.seed, args.select)))
    else:
        run(args.limit, args.seed, json.loads(args.files.read_text()), args.skip, args.cold,
            args.engine)


if __name__ == "__main__":
    main()
