"""Mask time per token for the bundled SQL and arithmetic grammars, pse next to llguidance's
Lark support (`llguidance.LLMatcher.grammar_from_lark`), in the same process on the same
token streams (Llama 3 tokenizer).

Texts: seeded random arithmetic expressions and SQL SELECT statements, tokenized by Llama 3.
Per token each engine fills the mask and consumes the token (timed together); a text counts
as accepted when every token was allowed and the engine accepts at the end.

Run: python bench/grammar_bench.py [--texts 200] [--mask-memo 512]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

import numpy as np

import pse
import pse.grammars

SHARED = Path(os.environ.get("PSE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def arithmetic_text(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([str(rng.randrange(1000)), f"{rng.randrange(100)}.{rng.randrange(99)}",
                           rng.choice(["x", "y", "rate", "total_1"])])
    if r < 0.45:
        return f"({arithmetic_text(rng, depth + 1)})"
    if r < 0.55:
        args = ", ".join(arithmetic_text(rng, depth + 1) for _ in range(rng.randrange(1, 3)))
        return f"{rng.choice(['f', 'max', 'sqrt'])}({args})"
    op = rng.choice(["+", "-", "*", "/", "%", "^"])
    return f"{arithmetic_text(rng, depth + 1)} {op} {arithmetic_text(rng, depth + 1)}"


def sql_text(rng: random.Random) -> str:
    cols = rng.sample(["id", "name", "price", "t.qty", "count(*)", "sum(price) AS total",
                       "upper(name)", "price * qty AS value"], rng.randrange(1, 4))
    q = f"SELECT {'DISTINCT ' if rng.random() < 0.2 else ''}{', '.join(cols)} FROM orders t"
    if rng.random() < 0.4:
        q += " LEFT JOIN customers c ON t.customer_id = c.id"
    if rng.random() < 0.7:
        conds = rng.sample(["t.price > 10", "name LIKE 'A%'", "qty BETWEEN 1 AND 5",
                            "c.country IN ('FR', 'DE')", "t.note IS NOT NULL",
                            "NOT (price < 2 OR qty = 0)"], rng.randrange(1, 3))
        q += " WHERE " + " AND ".join(conds)
    if rng.random() < 0.4:
        q += " GROUP BY name HAVING count(*) >= 2"
    if rng.random() < 0.5:
        q += " ORDER BY price DESC, id"
    if rng.random() < 0.5:
        q += f" LIMIT {rng.randrange(1, 100)}"
    return q + ";"


class Pse:
    name = "pse"

    def __init__(self, vocab, grammar, mask_memo: int) -> None:
        self.engine = pse.StructuringEngine(vocab, mask_memo=mask_memo)
        self.engine.configure(grammar)
        self.mask = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)

    def reset(self) -> None:
        self.engine.reset()

    def step(self, token: int) -> bool:
        self.engine.fill_next_token_bitmask(self.mask, 0)
        if not (self.mask[0, token >> 5] >> (token & 31)) & 1:
            return False
        return self.engine.consume_token(token)

    def accepting(self) -> bool:
        return self.engine.is_accepting()


class LLGuidance:
    name = "llguidance"

    def __init__(self, tok, lark_text: str) -> None:
        import llguidance
        from llguidance.numpy import fill_next_token_bitmask

        self.grammar = llguidance.LLMatcher.grammar_from_lark(lark_text)
        self.matcher = llguidance.LLMatcher(tok, self.grammar, log_level=0)
        if self.matcher.is_error():
            raise RuntimeError(self.matcher.get_error())
        self.fill = fill_next_token_bitmask
        self.mask = np.zeros((1, (tok.vocab_size + 31) // 32), dtype=np.int32)

    def reset(self) -> None:
        self.matcher.reset()

    def step(self, token: int) -> bool:
        self.fill(self.matcher, self.mask, 0)
        if not (self.mask[0, token >> 5] >> (token & 31)) & 1:
            return False
        return self.matcher.consume_token(token)

    def accepting(self) -> bool:
        return self.matcher.is_accepting()


def run(engine, streams: list[list[int]]) -> tuple[list[float], int]:
    times, rejected = [], 0
    for ids in streams:
        engine.reset()
        ok = True
        for tid in ids:
            t0 = time.perf_counter()
            ok = engine.step(tid)
            times.append(time.perf_counter() - t0)
            if not ok:
                break
        if not (ok and engine.accepting()):
            rejected += 1
    return times, rejected


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=200, help="texts per grammar")
    ap.add_argument("--mask-memo", type=int, default=512, help="pse's mask memo (0: off)")
    args = ap.parse_args()
    import llguidance.hf
    import transformers

    tok_path = SHARED / "tokenizers" / "llama3" / "tokenizer.json"
    vocab = pse.Vocabulary.from_file(tok_path)
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tok_path))
    tok = llguidance.hf.from_tokenizer(hf, n_vocab=vocab.size, eos_token=vocab.eos_token_ids[0])
    rng = random.Random(0)
    print("| grammar | engine | tokens | mean µs | p50 µs | p99 µs | texts rejected |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, make in (("arithmetic", arithmetic_text), ("sql", sql_text)):
        texts = [make(rng) for _ in range(args.texts)]
        streams = [vocab.encode(t) for t in texts]
        lark_text = pse.grammars.path(name).read_text()
        t0 = time.perf_counter()
        engines = [Pse(vocab, pse.grammars.load(name), args.mask_memo)]
        compile_pse = time.perf_counter() - t0
        t0 = time.perf_counter()
        engines.append(LLGuidance(tok, lark_text))
        compile_llg = time.perf_counter() - t0
        means = {}
        for engine in engines:
            run(engine, streams[:5])  # warm up
            times, rejected = run(engine, streams)
            us = np.array(times) * 1e6
            means[engine.name] = (us.mean(), np.percentile(us, 50), np.percentile(us, 99))
            print(f"| {name} | {engine.name} | {len(us):,} | {us.mean():.1f} | "
                  f"{np.percentile(us, 50):.1f} | {np.percentile(us, 99):.1f} | {rejected} |")
        ratio = [b / a for a, b in zip(means["pse"], means["llguidance"])]
        print(f"|   ratios llguidance / pse: mean {ratio[0]:.2f}x, p50 {ratio[1]:.2f}x, "
              f"p99 {ratio[2]:.2f}x; compile pse {compile_pse * 1e3:.0f} ms, llguidance "
              f"{compile_llg * 1e3:.0f} ms | | | | | |")


if __name__ == "__main__":
    main()
