"""Tool calls in Hermes format on Qwen3's vocabulary: pse beside XGrammar and llguidance.

For each tool set of bench/agent_tools.py (64 sets of 1 to 8 tools) each engine compiles
"free text, then any number of calls `<tool_call>\\n{"name": ..., "arguments": ...}\\n
</tool_call>` of these tools" and replays the same token streams (the assistant outputs of
agent_tools, tokenized by Qwen3's tokenizer, then <|im_end|>), in one process:

- pse: `pse.ToolCalls(tools)` (format "hermes", tool_choice "auto", flexible whitespace);
- XGrammar: a structural tag, `triggered_tags` with the trigger "<tool_call>" and one tag per
  tool, begin `<tool_call>\\n{"name": "<name>", "arguments": `, the tool's parameters as
  `json_schema` content, end `}\\n</tool_call>` (`GrammarCompiler.compile_structural_tag`);
- llguidance: the same tags as a Lark grammar (`llguidance.StructTag.to_grammar`: lazy text up
  to the trigger, then `%json` of the parameters).

The three languages differ a little (XGrammar and llguidance allow text between and after
calls, and fix the whitespace around the name), not on these streams: every engine must
accept every token, which the script checks (the token's bit in the mask, then the commit).

Per token: the time to fill the mask and commit the token. Compile: from the tool list to an
engine ready for its first mask (pse: building ToolCalls and configuring an engine; XGrammar:
compiling the structural tag; llguidance: making the grammar and its matcher), the median of
`--repeat` runs, and the first of them alone (pse keeps the automata of terminals and
literals across compiles, as always: later runs of a set find its tools' automata there;
XGrammar's cache of whole grammars is off). One thread per engine.

Run: python bench/agent.py [--engines pse,xgrammar,llguidance] [--limit N] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import pse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_tools import outputs, tool_sets  # noqa: E402
from maskbench_files import SHARED  # noqa: E402
from maskbench import LLGuidanceEngine, PseEngine, XGrammarEngine  # noqa: E402

TOKENIZER = SHARED / "tokenizers" / "qwen3" / "tokenizer.json"
EOS = "<|im_end|>"


def tags(tools: list[dict]) -> list[tuple[str, dict]]:
    """(begin, parameters) per tool: the tag XGrammar and llguidance are given."""
    return [('<tool_call>\n{"name": ' + json.dumps(t["function"]["name"]) + ', "arguments": ',
             t["function"]["parameters"]) for t in tools]


class Pse(PseEngine):
    def __init__(self, vocab: pse.Vocabulary) -> None:
        super().__init__(vocab, mask_memo=512)

    def compile(self, tools: list[dict]):
        engine = pse.StructuringEngine(self.vocab, mask_memo=self.mask_memo)
        engine.configure(pse.ToolCalls(tools))
        return engine


class XGrammar(XGrammarEngine):
    def compile(self, tools: list[dict]):
        tag = {"type": "structural_tag", "format": {
            "type": "triggered_tags", "triggers": ["<tool_call>"],
            "tags": [{"type": "tag", "begin": begin,
                      "content": {"type": "json_schema", "json_schema": params},
                      "end": "}\n</tool_call>"} for begin, params in tags(tools)]}}
        return self.compiler.compile_structural_tag(tag)


class LLGuidance(LLGuidanceEngine):
    def __init__(self, vocab: pse.Vocabulary) -> None:
        super().__init__(vocab, TOKENIZER)

    def compile(self, tools: list[dict]):
        m = self.llg.LLMatcher(self.tok, self.grammar(tools), log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    @staticmethod
    def grammar(tools: list[dict]) -> str:
        """What `llguidance.StructTag.to_grammar` writes, with the closing delimiter a token
        too: llguidance takes Qwen3's added tokens <tool_call> and </tool_call> for special
        ones (its lexer does not see them as their text)."""
        rules = [f"tag_{k}: TAG_TEXT <tool_call> {json.dumps(begin[len('<tool_call>'):])} "
                 f"%json {json.dumps(params)} \"}}\\n\" </tool_call>"
                 for k, (begin, params) in enumerate(tags(tools))]
        options = " | ".join(f"tag_{k}" for k in range(len(rules)))
        return "\n".join(["%llguidance {}", f"start: ({options})* tag_end", "tag_end: TAG_TEXT",
                          "TAG_TEXT: /(.|\\n)*/", *rules])


ENGINES = {"pse": Pse, "xgrammar": XGrammar, "llguidance": LLGuidance}


def run(engine, sets: list[list[dict]], streams: list[list[list[int]]], repeat: int) -> dict:
    """Compile times (ms, median of `repeat` per set) and per-token times (µs), by stream."""
    compile_ms, first_ms, times, refused = [], [], [], []
    for k, tools in enumerate(sets):
        runs = []
        for _ in range(repeat):
            # (no gc.collect() first: it would leave the caches cold, and a server pays its
            # garbage collections where they fall)
            started = time.perf_counter_ns()
            compiled = engine.compile(tools)
            runs.append((time.perf_counter_ns() - started) / 1e6)
        compile_ms.append(float(np.median(runs)))
        first_ms.append(runs[0])
        for s, ids in enumerate(streams[k]):
            m = engine.start(compiled)
            per_token = []
            for i, token in enumerate(ids):
                started = time.perf_counter_ns()
                ok = engine.step(m, token)
                per_token.append((time.perf_counter_ns() - started) / 1e3)
                if not ok:
                    refused.append((k, s, i))
                    break
            times.append(per_token)
    return {"compile_ms": compile_ms, "first_ms": first_ms, "times": times, "refused": refused}


def summary(name: str, r: dict) -> str:
    flat = np.concatenate([np.asarray(t) for t in r["times"]])
    c = np.asarray(r["compile_ms"])
    return (f"| {name} | {len(c)} | {len(r['times'])} | {len(flat):,} | {flat.mean():.1f} | "
            f"{np.percentile(flat, 50):.1f} | {np.percentile(flat, 99):.1f} | "
            f"{np.percentile(c, 50):.2f} | {np.percentile(c, 99):.2f} | "
            f"{np.percentile(r['first_ms'], 50):.2f} | {len(r['refused'])} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="pse,xgrammar,llguidance")
    ap.add_argument("--limit", type=int, default=None, help="the first N tool sets")
    ap.add_argument("--repeat", type=int, default=3, help="compiles per set (the median)")
    ap.add_argument("--out", type=Path, help="write the raw figures as JSON")
    args = ap.parse_args()
    if not TOKENIZER.is_file():
        sys.exit(f"{TOKENIZER} not found: set PSE_SHARED to the shared data folder")
    vocab = pse.Vocabulary.from_file(TOKENIZER, eos_token_ids=[])
    eos = vocab.special_token_id(EOS)
    vocab = pse.Vocabulary.from_file(TOKENIZER, eos_token_ids=[eos])
    sets = tool_sets()[:args.limit]
    streams = [[vocab.encode(text) + [eos] for text in outputs(tools, k)]
               for k, tools in enumerate(sets)]
    results = {}
    for name in args.engines.split(","):
        engine = ENGINES[name](vocab)
        results[name] = run(engine, sets, streams, args.repeat)
        for k, s, i in results[name]["refused"][:5]:
            print(f"{name} refused token {i} of stream {s} of set {k}: "
                  f"{vocab.decode(streams[k][s][:i + 1])[-60:]!r}", file=sys.stderr)
    print("| engine | tool sets | streams | tokens | mean µs | p50 µs | p99 µs | compile p50 ms "
          "| compile p99 ms | first compile p50 ms | refused |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in results.items():
        print(summary(name, r))
    if "pse" in results:
        base = np.concatenate([np.asarray(t) for t in results["pse"]["times"]])
        base_c = np.percentile(results["pse"]["compile_ms"], 50)
        base_first = results["pse"]["first_ms"]
        for name, r in results.items():
            if name == "pse":
                continue
            flat = np.concatenate([np.asarray(t) for t in r["times"]])
            print(f"{name} / pse: per token mean {flat.mean() / base.mean():.2f}x, "
                  f"p50 {np.percentile(flat, 50) / np.percentile(base, 50):.2f}x, "
                  f"p99 {np.percentile(flat, 99) / np.percentile(base, 99):.2f}x; compile p50 "
                  f"{np.percentile(r['compile_ms'], 50) / base_c:.2f}x (first compiles "
                  f"{np.percentile(r['first_ms'], 50) / np.percentile(base_first, 50):.2f}x)")
    if args.out:
        args.out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
