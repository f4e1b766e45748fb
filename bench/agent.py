"""Tool calls in Hermes format on Qwen3's vocabulary: pse beside XGrammar and llguidance.

For each tool set of bench/agent_tools.py (64 sets of 1 to 8 tools) each engine compiles
"free text, then any number of calls `<tool_call>\\n{"name": ..., "arguments": ...}\\n
</tool_call>` of these tools" and replays the same token streams (the assistant outputs of
agent_tools as Qwen3's chat template writes them, tokenized by Qwen3's tokenizer with the
`tokenizers` library, then <|im_end|>), in one process:

- pse: `pse.ToolCalls(tools, format="hermes", tool_choice="auto", parallel_tool_calls=True)`
  (its default whitespace, "flexible": up to 20 blanks between the tokens of a call's JSON);
- XGrammar: a structural tag, `triggered_tags` with the trigger "<tool_call>" and one tag per
  tool, begin `<tool_call>\\n{"name": "<name>", "arguments": `, the tool's parameters as
  `json_schema` content, end `}\\n</tool_call>` (`GrammarCompiler.compile_structural_tag`).
  Its JSON content takes any whitespace (0.2.8 has no any_whitespace switch there: its
  `max_whitespace_cnt`, unset, is unbounded);
- llguidance: the same tags as a Lark grammar (what `llguidance.StructTag.to_grammar` writes:
  lazy text up to the trigger, then `%json` of the parameters, whose whitespace is flexible by
  default), with `<tool_call>` and `</tool_call>` written as tokens: llguidance takes Qwen3's
  added tokens for special ones, so the text "<tool_call>" in a grammar does not match them.

The three languages differ a little (XGrammar and llguidance allow text between and after
calls, and fix the whitespace of the envelope around the arguments), not on these streams:
every engine should take every token. The script checks it: the token's bit in the mask, then
the commit; a stream an engine does not take in full is printed with the token and why (not in
the mask, or in the mask and then refused by the commit: an engine at odds with itself).

Per token: the time to fill the mask and commit the token (`time.perf_counter_ns`). Compile:
from the tool list to an engine ready for its first mask (pse: building ToolCalls and
configuring an engine; XGrammar: compiling the structural tag; llguidance: making the grammar
and its matcher), the median of `--repeat` runs, and the first of them alone (pse keeps the
automata of terminals and literals across compiles, as always: later runs of a set find its
tools' automata there; XGrammar's cache of whole grammars is off). No warm-up. The engines
take turns set by set (their order rotating), so that a slow spell of the machine falls on all
of them. Ratios are
against pse (else the first engine) over the streams every engine took in full and the sets
every engine compiled.

Run: python bench/agent.py [--engines pse,xgrammar,llguidance] [--limit N] [--repeat 3]
                           [--threads 1] [--out FILE.json]
(--engines defaults to those installed; pse needs `pse.ToolCalls`.)
"""

from __future__ import annotations

import argparse
import importlib.util
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
EOS, EOS_ID = "<|im_end|>", 151645

# What a step of a stream did.
TAKEN, NOT_IN_MASK, COMMIT_REFUSED = 0, 1, 2
REASONS = {NOT_IN_MASK: "not in the mask",
           COMMIT_REFUSED: "in the mask, then refused by the commit"}


def has_bit(mask, token: int) -> bool:
    return bool((int(mask[0, token >> 5]) >> (token & 31)) & 1)


def tags(tools: list[dict]) -> list[tuple[str, dict]]:
    """(begin, parameters) per tool: the tag XGrammar and llguidance are given."""
    return [('<tool_call>\n{"name": ' + json.dumps(t["function"]["name"]) + ', "arguments": ',
             t["function"]["parameters"]) for t in tools]


# --- engines: compile a tool set; step = mask + commit of one token -------------------------

class Pse(PseEngine):
    language = ('pse.ToolCalls(tools, format="hermes", tool_choice="auto", '
                'parallel_tool_calls=True), whitespace "flexible" (up to 20 blanks)')

    def __init__(self, vocab: pse.Vocabulary, threads: int) -> None:
        super().__init__(vocab, mask_memo=512)  # the engine's default memo

    def compile(self, tools: list[dict]):
        engine = pse.StructuringEngine(self.vocab, mask_memo=self.mask_memo)
        engine.configure(pse.ToolCalls(tools, format="hermes", tool_choice="auto",
                                       parallel_tool_calls=True))
        return engine

    def step(self, m, token: int) -> int:
        m.fill_next_token_bitmask(self.mask, 0)
        if not has_bit(self.mask, token):
            return NOT_IN_MASK
        return TAKEN if m.consume_token(token) else COMMIT_REFUSED


class XGrammar(XGrammarEngine):
    language = ("compile_structural_tag: triggered_tags, trigger <tool_call>, a tag per tool "
                "with json_schema content (any whitespace inside: max_whitespace_cnt unset)")

    def __init__(self, vocab: pse.Vocabulary, threads: int) -> None:
        super().__init__(vocab)  # one thread, cache off
        if threads != 1:
            import torch

            torch.set_num_threads(threads)
            # the compiler does not give its TokenizerInfo back; a grammar it compiled does
            info = self.compiler.compile_grammar('root ::= "a"').tokenizer_info
            self.compiler = self.xgr.GrammarCompiler(info, max_threads=threads,
                                                     cache_enabled=False)

    def compile(self, tools: list[dict]):
        tag = {"type": "structural_tag", "format": {
            "type": "triggered_tags", "triggers": ["<tool_call>"],
            "tags": [{"type": "tag", "begin": begin,
                      "content": {"type": "json_schema", "json_schema": params},
                      "end": "}\n</tool_call>"} for begin, params in tags(tools)]}}
        return self.compiler.compile_structural_tag(tag)

    def step(self, m, token: int) -> int:
        m.fill_next_token_bitmask(self.mask, 0)
        if not has_bit(self.mask, token):
            return NOT_IN_MASK
        return TAKEN if m.accept_token(token) else COMMIT_REFUSED


class LLGuidance(LLGuidanceEngine):
    language = ("LLMatcher on a Lark grammar: lazy TEXT, then per tool <tool_call> (a token) "
                "'\\n{\"name\": ..., \"arguments\": ' %json{parameters} '}\\n' </tool_call> "
                "(%json's default whitespace: flexible)")

    def __init__(self, vocab: pse.Vocabulary, threads: int) -> None:
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

    def step(self, m, token: int) -> int:
        self.fill(m, self.mask, 0)
        if not has_bit(self.mask, token):
            return NOT_IN_MASK
        return TAKEN if m.consume_token(token) else COMMIT_REFUSED


ENGINES = {"pse": Pse, "xgrammar": XGrammar, "llguidance": LLGuidance}


def installed() -> list[str]:
    """The engines this environment can run (pse only once it has ToolCalls)."""
    found = {"pse": hasattr(pse, "ToolCalls"),
             "xgrammar": all(importlib.util.find_spec(m) for m in ("xgrammar", "torch")),
             "llguidance": all(importlib.util.find_spec(m)
                               for m in ("llguidance", "transformers"))}
    return [name for name in ENGINES if found[name]]


# --- token streams -----------------------------------------------------------------------------

def token_streams(sets: list[list[dict]], vocab: pse.Vocabulary) -> list[list[list[int]]]:
    """Per set, its outputs as Qwen3's tokenizer encodes them, then EOS. pse's own encoder
    should split them alike: a difference is printed (the `tokenizers` ids are used)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("tokenizers is not installed: pse's Vocabulary.encode tokenizes", file=sys.stderr)
        encode = vocab.encode
    else:
        tokenizer = Tokenizer.from_file(str(TOKENIZER))

        def encode(text: str) -> list[int]:
            return tokenizer.encode(text, add_special_tokens=False).ids

    streams = []
    for k, tools in enumerate(sets):
        streams.append([])
        for s, text in enumerate(outputs(tools, k)):
            ids = encode(text)
            if ids != vocab.encode(text):
                print(f"set {k} stream {s}: pse's Vocabulary.encode splits {text[:60]!r}... "
                      "unlike the tokenizers library", file=sys.stderr)
            streams[-1].append(ids + [EOS_ID])
    return streams


# --- the run -----------------------------------------------------------------------------------

def compile_set(engine, tools: list[dict], repeat: int) -> tuple[object, list[float]]:
    """The set compiled `repeat` times: the last compiled structure and each time (ms)."""
    runs = []
    for _ in range(repeat):
        # (no gc.collect() first: it would leave the caches cold, and a server pays its
        # garbage collections where they fall)
        started = time.perf_counter_ns()
        compiled = engine.compile(tools)
        runs.append((time.perf_counter_ns() - started) / 1e6)
    return compiled, runs


def replay(engine, compiled, ids: list[int]) -> tuple[list[float], tuple[int, int] | None]:
    """Per-token times (µs, mask + commit) up to the first token not taken, and that token's
    (index, status), or None when the engine took every token."""
    m = engine.start(compiled)  # untimed: a fresh matcher, or the engine reset
    times = []
    for i, token in enumerate(ids):
        started = time.perf_counter_ns()
        status = engine.step(m, token)
        times.append((time.perf_counter_ns() - started) / 1e3)
        if status != TAKEN:
            return times, (i, status)
    return times, None


def run(engines: dict, sets: list[list[dict]], streams: list[list[list[int]]],
        repeat: int) -> dict:
    """Per engine: per set, compile times (ms; None where it failed); per stream: [set,
    stream, times µs]; refusals: [set, stream, token index, status]. The engines take turns
    set by set, in an order that rotates (a machine's slow spell falls on all of them)."""
    results = {name: {"compile_ms": [], "first_ms": [], "compile_errors": [], "times": [],
                      "refused": []} for name in engines}
    names = list(engines)
    for k, tools in enumerate(sets):
        for name in names[k % len(names):] + names[:k % len(names)]:
            run_set(engines[name], results[name], k, tools, streams[k], repeat)
    return results


def run_set(engine, r: dict, k: int, tools: list[dict], streams: list[list[int]],
            repeat: int) -> None:
    """One engine on set `k`: its compiles, then the set's streams, into `r`."""
    try:
        compiled, runs = compile_set(engine, tools, repeat)
    except Exception as e:  # the engine cannot compile this set: its streams are skipped
        r["compile_ms"].append(None)
        r["first_ms"].append(None)
        r["compile_errors"].append([k, f"{type(e).__name__}: {e}"[:300]])
        return
    r["compile_ms"].append(float(np.median(runs)))
    r["first_ms"].append(runs[0])
    for s, ids in enumerate(streams):
        times, refusal = replay(engine, compiled, ids)
        r["times"].append([k, s, times])
        if refusal is not None:
            r["refused"].append([k, s, *refusal])


# --- the report --------------------------------------------------------------------------------

def disagreements(results: dict, streams: list[list[list[int]]],
                  vocab: pse.Vocabulary) -> list[str]:
    """A line per stream some engine did not take in full (every stream is valid: any
    refusal is an engine's quirk or bug), saying what each engine did; and compile errors."""
    lines = [f"{name} could not compile set {k}: {error}"
             for name, r in results.items() for k, error in r["compile_errors"]]
    refused = {name: {(k, s): (i, status) for k, s, i, status in r["refused"]}
               for name, r in results.items()}
    for k, per_set in enumerate(streams):
        for s, ids in enumerate(per_set):
            if not any((k, s) in refused[name] for name in results):
                continue
            what = []
            for name, r in results.items():
                if r["compile_ms"][k] is None:
                    what.append(f"{name} did not compile the set")
                elif (k, s) not in refused[name]:
                    what.append(f"{name} took all {len(ids)} tokens")
                else:
                    i, status = refused[name][(k, s)]
                    what.append(f"{name} refused token {i}, {vocab.decode([ids[i]])!r} "
                                f"({REASONS[status]}), after ...{vocab.decode(ids[:i])[-50:]!r}")
            lines.append(f"set {k} stream {s}: " + "; ".join(what))
    return lines


def flat_times(r: dict, keep=None) -> np.ndarray:
    """Every per-token time of an engine's streams (those in `keep` if given)."""
    parts = [np.asarray(t) for k, s, t in r["times"] if keep is None or (k, s) in keep]
    return np.concatenate(parts) if parts else np.zeros(0)


def compiled_ms(r: dict, key: str, sets=None) -> np.ndarray:
    """An engine's compile times (ms) of the sets it compiled (among `sets` if given)."""
    return np.asarray([ms for k, ms in enumerate(r[key])
                       if ms is not None and (sets is None or k in sets)])


def pct(values: np.ndarray, q: float) -> float:
    """A percentile, nan when an engine has no figure (it compiled no set)."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


def table(results: dict) -> list[str]:
    rows = ["| engine | tool sets | streams | tokens | mean µs | p50 µs | p99 µs | "
            "compile p50 ms | compile p99 ms | first compile p50 ms | refused tokens | "
            "compile errors |",
            "| --- " * 12 + "|"]
    for name, r in results.items():
        t, c = flat_times(r), compiled_ms(r, "compile_ms")
        mean = float(t.mean()) if len(t) else float("nan")
        rows.append(
            f"| {name} | {len(c)} | {len(r['times'])} | {len(t):,} | {mean:.1f} | "
            f"{pct(t, 50):.1f} | {pct(t, 99):.1f} | {pct(c, 50):.2f} | {pct(c, 99):.2f} | "
            f"{pct(compiled_ms(r, 'first_ms'), 50):.2f} | {len(r['refused'])} | "
            f"{len(r['compile_errors'])} |")
    return rows


def ratios(results: dict, streams: list[list[list[int]]]) -> list[str]:
    """Other engine / base (pse, else the first engine) over the streams every engine took
    in full and the sets every engine compiled."""
    base = "pse" if "pse" in results else next(iter(results))
    sets = {k for k in range(len(streams))
            if all(r["compile_ms"][k] is not None for r in results.values())}
    refused = {(k, s) for r in results.values() for k, s, *_ in r["refused"]}
    common = {(k, s) for k in sets for s in range(len(streams[k]))} - refused
    b = flat_times(results[base], common)
    lines = [f"Ratios other / {base} over the {len(common)} streams ({len(b):,} tokens) every "
             f"engine took in full and the {len(sets)} sets every engine compiled:", "",
             "| engine | per token mean | p50 | p99 | compile p50 | first compile p50 |",
             "| --- " * 6 + "|"]
    if not common:
        return lines[:1] + ["(none: no ratio)"]
    bc = compiled_ms(results[base], "compile_ms", sets)
    bf = compiled_ms(results[base], "first_ms", sets)
    for name, r in results.items():
        if name == base:
            continue
        t = flat_times(r, common)
        c, f = compiled_ms(r, "compile_ms", sets), compiled_ms(r, "first_ms", sets)
        lines.append(
            f"| {name} / {base} | {t.mean() / b.mean():.2f}x | "
            f"{pct(t, 50) / pct(b, 50):.2f}x | {pct(t, 99) / pct(b, 99):.2f}x | "
            f"{pct(c, 50) / pct(bc, 50):.2f}x | {pct(f, 50) / pct(bf, 50):.2f}x |")
    return lines


def versions(names: list[str]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "?"
    return ", ".join(f"{name} {of(name)}" for name in names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default=",".join(installed()),
                    help="comma-separated, of pse, xgrammar, llguidance (default: installed)")
    ap.add_argument("--limit", type=int, default=None, help="the first N tool sets")
    ap.add_argument("--repeat", type=int, default=3, help="compiles per set (the median)")
    ap.add_argument("--threads", type=int, default=1,
                    help="XGrammar's compiler threads (pse and llguidance compile and fill "
                         "masks on the calling thread)")
    ap.add_argument("--out", type=Path, help="write the raw figures as JSON")
    args = ap.parse_args()
    names = [n for n in args.engines.split(",") if n]
    unknown = [n for n in names if n not in ENGINES]
    if unknown or not names:
        sys.exit(f"unknown engines {unknown}: choose among {', '.join(ENGINES)}")
    if "pse" in names and not hasattr(pse, "ToolCalls"):
        sys.exit("this pse has no ToolCalls yet: run --engines llguidance,xgrammar")
    if not TOKENIZER.is_file():
        print(f"skipped: {TOKENIZER} not found (PSE_SHARED names the shared data folder)")
        return

    vocab = pse.Vocabulary.from_file(TOKENIZER, eos_token_ids=[EOS_ID])
    assert vocab.special_token_id(EOS) == EOS_ID, "not Qwen3's vocabulary"
    sets = tool_sets()[:args.limit]
    streams = token_streams(sets, vocab)
    print(f"{len(sets)} tool sets, {sum(map(len, streams))} streams, "
          f"{sum(len(ids) for per_set in streams for ids in per_set):,} tokens (Qwen3); "
          f"{versions(['pse', 'xgrammar', 'llguidance'])}; compile median of "
          f"{args.repeat}; {args.threads} thread(s)")
    engines = {}
    for name in names:
        engines[name] = ENGINES[name](vocab, args.threads)
        print(f"- {name}: {engines[name].language}")
    results = run(engines, sets, streams, args.repeat)
    print()
    lines = disagreements(results, streams, vocab)
    print("\n".join(lines) if lines else "Every engine took every token of every stream.")
    print()
    print("\n".join(table(results)))
    if len(results) > 1:
        print()
        print("\n".join(ratios(results, streams)))
    if args.out:
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                        "results": results}))


if __name__ == "__main__":
    main()
