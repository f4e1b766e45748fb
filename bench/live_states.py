"""Live parser states: how many real schemas need, and what a step costs near the bound.

1. Replays the instances (valid and invalid) of maskbench schemas with the Llama 3 tokenizer
   under `pse.limits.set_max_live_states(--bound)` and lists the schemas that exceed it.
2. Times masks after n a's of S -> "a" S "b" | "a" S "c" | "" (combinators) and of the same
   language through two Lark rules (s: "a" s "b" | "a" t | ""; t: s "c"): 2^n stacks after n
   a's, which pse merges into two live states (their stacks agree below their tops).

Run: python bench/live_states.py [--files 341] [--bound 128]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import warnings
from pathlib import Path

import pse
import pse.limits

SHARED = Path(os.environ.get("PSE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def replay(vocab: pse.Vocabulary, n_files: int, bound: int) -> None:
    files = sorted((SHARED / "data" / "maskbench").glob("*.json"))
    random.Random(3).shuffle(files)
    default = pse.limits.max_live_states()
    pse.limits.set_max_live_states(bound)
    over: dict[str, int] = {}
    compiled = 0
    try:
        for path in files[:n_files]:
            data = json.loads(path.read_text())
            try:
                engine = pse.StructuringEngine(vocab)
                engine.configure(pse.JsonSchema(data["schema"]))
            except pse.PSEError:
                continue
            compiled += 1
            for test in data.get("tests", []):
                engine.reset()
                text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
                try:
                    for tok in vocab.encode(text):
                        engine.compute_mask()
                        if not engine.consume_token(tok):
                            break
                except pse.GrammarError:
                    over[path.name] = over.get(path.name, 0) + 1
    finally:
        pse.limits.set_max_live_states(default)
    print(f"{compiled} schemas compiled of {n_files} files; over {bound} live states: "
          f"{len(over)} schemas {over}")


def ambiguous(vocab: pse.Vocabulary) -> None:
    s = pse.Forward()
    s.set(pse.Optional(pse.AnyOf(pse.Chain(pse.Phrase("a"), s, pse.Phrase("b")),
                                 pse.Chain(pse.Phrase("a"), s, pse.Phrase("c")))))
    two_rules = pse.Grammar.from_lark('start: s\ns: "a" s "b" | "a" t | \nt: s "c"\n')
    a = vocab.lookup("a")
    for name, structure in [("S -> 'a' S 'b' | 'a' S 'c' | '' (combinators)", s),
                            ('s: "a" s "b" | "a" t | ""; t: s "c" (Lark)', two_rules)]:
        engine = pse.StructuringEngine(vocab, mask_memo=0)
        engine.configure(structure)
        print(f"{name}, bound {pse.limits.max_live_states()}:")
        for i in range(257):
            t0 = time.perf_counter()
            try:
                engine.compute_mask()
            except pse.GrammarError as exc:
                print(f"  after {i} a's: {exc}")
                break
            if i <= 10 or i in (16, 64, 256):
                print(f"  after {i} a's: {len(engine.matcher.steppers())} live states, mask "
                      f"{1e3 * (time.perf_counter() - t0):.2f} ms")
            engine.consume_token(a)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=341)
    ap.add_argument("--bound", type=int, default=128)
    ap.add_argument("--tokenizer", default="llama3")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    vocab = pse.Vocabulary.from_file(SHARED / "tokenizers" / args.tokenizer / "tokenizer.json")
    ambiguous(vocab)
    replay(vocab, args.files, args.bound)


if __name__ == "__main__":
    main()
