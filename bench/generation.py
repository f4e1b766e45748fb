"""Tokens per second of constrained against unconstrained generation, same model, on CPU.

The model is a random-weights Qwen2-architecture model (pse.offline.random_model) with Qwen's
vocabulary (151,936 logits), run with a KV cache on `--threads` CPU threads. Rows:

- unconstrained: the same KV-cached loop and sampler, no mask, `--free-tokens` per sample;
- pse.generate with fast-forward off, then on (examples/character.schema.json);
- llguidance (the `bench` extra, and ../shared/tokenizers/qwen3 for its tokenizer) in the same
  loop: its LLMatcher mask, its torch apply_token_bitmask_inplace, its fast-forward tokens.

Every sample is drawn with multinomial sampling at temperature 1 from a seeded generator; the
rows take turns, one sample each, so that a shared machine's load falls on all of them alike.
Speed is tokens per second of the process's CPU time (steadier than wall time on a shared
machine; with one thread they agree on an idle one), wall time shown too. "Mask" is the wall
time spent computing and applying masks, per generated token; forced tokens are appended
without a forward pass of their own.

Run: python bench/generation.py [--samples 20] [--hidden 64 --layers 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

import pse
from pse.offline import qwen_vocabulary, random_model
from pse.torch import multinomial

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PSE_SHARED", ROOT.parent / "shared"))
PROMPT = "A character for the game, as JSON: "


class Row:
    """One way of generating, sampled `--samples` times, round-robin with the other rows so
    that the machine's load falls on every row alike."""

    def __init__(self, name: str, one_sample) -> None:
        self.name = name
        self.one_sample = one_sample  # generator -> (tokens, forced, passes, mask s, complete)
        self.samples = self.tokens = self.forced = self.passes = self.complete = 0
        self.cpu = self.wall = self.mask = 0.0

    def run(self, generator: torch.Generator) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        tokens, forced, passes, mask, complete = self.one_sample(generator)
        self.cpu += time.process_time() - cpu
        self.wall += time.perf_counter() - wall
        self.samples += 1
        self.tokens += tokens
        self.forced += forced
        self.passes += passes
        self.mask += mask
        self.complete += complete


def loop(model, prompt_ids: list[int], max_tokens: int, sampler, step_mask=None,
         ff=None, consume=None, done=None) -> tuple[int, int, int, float, bool]:
    """A KV-cached loop like pse.generate's, for the rows that are not pse: (tokens, forced,
    forward passes, mask seconds, complete)."""
    tokens = forced = passes = 0
    mask = 0.0
    pending = list(prompt_ids)
    past = None
    with torch.inference_mode():
        while tokens < max_tokens:
            out = model(input_ids=torch.tensor([pending]), past_key_values=past, use_cache=True,
                        logits_to_keep=1)
            passes += 1
            past = out.past_key_values
            logits = out.logits[0, -1, :].float()
            if step_mask is not None:
                started = time.perf_counter()
                step_mask(logits)
                mask += time.perf_counter() - started
            token = sampler(logits)
            new = [token]
            if consume is not None:
                consume(token)
                if done():
                    return tokens + 1, forced, passes, mask, True
                if ff is not None:
                    extra = ff()
                    forced += len(extra)
                    new += extra
            tokens += len(new)
            pending = new
    return tokens, forced, passes, mask, False


def unconstrained(model, vocab, args) -> Row:
    prompt = vocab.encode(PROMPT)

    def one_sample(generator):
        return loop(model, prompt, args.free_tokens, multinomial(1.0, generator))[:4] + (True,)

    return Row("unconstrained", one_sample)


def with_pse(model, vocab, schema, args, fast_forward: bool) -> Row:
    engine = pse.StructuringEngine(vocab)
    engine.configure(schema)
    pse.generate(model, vocab, PROMPT, engine, max_new_tokens=args.max_new_tokens)  # warm-up

    def one_sample(generator):
        s = pse.generate(model, vocab, PROMPT, engine, max_new_tokens=args.max_new_tokens,
                         sampler=multinomial(1.0, generator), fast_forward=fast_forward).stats
        return s.tokens, s.forced_tokens, s.forward_passes, s.mask_seconds, s.finished

    return Row(f"pse, fast-forward {'on' if fast_forward else 'off'}", one_sample)


def with_llguidance(model, vocab, schema, args, fast_forward: bool) -> Row | None:
    path = SHARED / "tokenizers" / "qwen3" / "tokenizer.json"
    try:
        import llguidance
        import llguidance.hf
        import llguidance.torch as llt
        import transformers
    except ImportError:
        print("(llguidance is not installed: pip install '.[bench]')")
        return None
    if not path.is_file():
        print(f"({path} not found: no llguidance row; set PSE_SHARED)")
        return None
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    eos = vocab.eos_token_ids[0]
    tok = llguidance.hf.from_tokenizer(hf, n_vocab=vocab.size, eos_token=eos)
    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        schema, defaults={"whitespace_flexible": False})
    bitmask = llt.allocate_token_bitmask(1, vocab.size)
    prompt = hf(PROMPT)["input_ids"]

    def one_sample(generator):
        matcher = llguidance.LLMatcher(tok, grammar, log_level=0)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())

        def step_mask(logits):
            llt.fill_next_token_bitmask(matcher, bitmask, 0)
            llt.apply_token_bitmask_inplace(logits, bitmask[0])

        def consume(token):
            if not matcher.consume_token(token):
                raise RuntimeError(f"llguidance refused token {token}")

        def ff():
            forced = matcher.compute_ff_tokens()
            if forced and not matcher.consume_tokens(forced):
                raise RuntimeError("llguidance refused its forced tokens")
            return forced

        def done():
            # like pse.generate: stop at EOS, or when nothing but EOS is possible
            if matcher.is_stopped():
                return True
            if not matcher.is_accepting():
                return False
            llt.fill_next_token_bitmask(matcher, bitmask, 0)
            allowed = (bitmask[0] != 0).nonzero().flatten().tolist()
            return allowed == [eos >> 5] and int(bitmask[0, eos >> 5]) == 1 << (eos & 31)

        head = ff() if fast_forward else []
        tokens, forced, passes, mask, complete = loop(
            model, prompt + head, args.max_new_tokens - len(head),
            multinomial(1.0, generator), step_mask, ff if fast_forward else None, consume, done)
        return tokens + len(head), forced + len(head), passes, mask, complete

    one_sample(torch.Generator().manual_seed(99))  # warm-up
    return Row(f"llguidance, fast-forward {'on' if fast_forward else 'off'}", one_sample)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--free-tokens", type=int, default=64,
                    help="tokens per unconstrained sample")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    vocab = qwen_vocabulary()
    model = random_model(vocab.size, seed=0, hidden_size=args.hidden, layers=args.layers)
    params = sum(p.numel() for p in model.parameters())
    schema = json.loads((ROOT / "examples" / "character.schema.json").read_text())
    print(f"model: random Qwen2 architecture, width {args.hidden}, {args.layers} layers, "
          f"{params / 1e6:.1f} M parameters, {vocab.size:,} logits; {args.threads} thread(s); "
          f"{args.samples} samples per row\n")
    rows = [unconstrained(model, vocab, args)]
    rows += [with_pse(model, vocab, schema, args, ff) for ff in (False, True)]
    rows += [r for ff in (False, True)
             if (r := with_llguidance(model, vocab, schema, args, ff)) is not None]
    generators = [torch.Generator().manual_seed(i) for i in range(len(rows))]
    for _ in range(args.samples):
        for row, generator in zip(rows, generators):
            row.run(generator)
    base = rows[0].tokens / rows[0].cpu
    print("| generation | complete | tokens | forced | forward passes | tokens per CPU s | vs "
          "unconstrained | tokens per wall s | mask per token (wall) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        rate = row.tokens / row.cpu
        print(f"| {row.name} | {row.complete}/{row.samples} | {row.tokens:,} | "
              f"{row.forced / row.tokens:.0%} | {row.passes:,} | {rate:,.0f} | "
              f"{rate / base:.2f}x | {row.tokens / row.wall:,.0f} | "
              f"{row.mask / row.tokens * 1e3:.3f} ms |")


if __name__ == "__main__":
    main()
