"""How fast steppers consume a JSON text with `Json()`.

A deterministic ~1 MB compact JSON document is split into tokens of 1 to 8 bytes at random
boundaries and fed to the steppers, token after token:
  - `consume_tokens`: the C loop (one call for the whole stream, states merged per byte);
  - `Stepper.consume`: the Python API, one call and one StepperDelta per token.

Run: python bench/json_steppers.py [--size-mb 1.0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import pse
from pse._core.stepper import consume_tokens


def make_document(size: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "naïve", "東京", "emoji 🎉", 'quote "q"', "tab\t"]

    def value(depth: int):
        r = rng.random()
        if depth > 4 or r < 0.35:
            kind = rng.randrange(5)
            if kind == 0:
                return rng.randint(-10**6, 10**6)
            if kind == 1:
                return round(rng.uniform(-1e4, 1e4), rng.randrange(1, 6))
            if kind == 2:
                return " ".join(rng.choices(words, k=rng.randrange(1, 6)))
            return [True, False, None][rng.randrange(3)]
        if r < 0.7:
            return {f"key_{rng.randrange(50)}_{i}": value(depth + 1) for i in range(rng.randrange(1, 6))}
        return [value(depth + 1) for _ in range(rng.randrange(1, 6))]

    items = []
    total = 2
    while total < size:
        text = json.dumps(value(0), separators=(",", ":"), ensure_ascii=False)
        items.append(text)
        total += len(text.encode()) + 1
    return ("[" + ",".join(items) + "]").encode()


def split_tokens(data: bytes, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, 8)
        out.append(data[i:i + n])
        i += n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    doc = make_document(int(args.size_mb * 1_000_000))
    tokens = split_tokens(doc)
    machine = pse.Json()
    machine.compile()
    mb = len(doc) / 1e6
    print(f"document: {len(doc):,} bytes, {len(tokens):,} tokens of 1-8 bytes")

    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        live = consume_tokens(machine.get_steppers(), tokens)
        best = min(best, time.perf_counter() - t0)
        assert live and live[0].has_reached_accept_state(), "the document was not accepted"
    print(f"consume_tokens (C loop):   {mb / best:8.1f} MB/s  {best / len(tokens) * 1e9:6.0f} ns/token")

    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        stepper = machine.get_steppers()[0]
        for tok in tokens:
            stepper = stepper.consume(tok)[0].stepper
        best = min(best, time.perf_counter() - t0)
        assert stepper.has_reached_accept_state()
    print(f"Stepper.consume (Python):  {mb / best:8.1f} MB/s  {best / len(tokens) * 1e9:6.0f} ns/token")


if __name__ == "__main__":
    main()
