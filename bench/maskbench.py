"""Replay maskbench instances token by token; time masks; compare engines in the same process.

Each instance of ../shared/data/maskbench is serialized as compact JSON and tokenized with the
Llama 3 tokenizer. For every token an engine computes the mask and consumes the token (the two
timed together, as maskbench counts it); an instance is accepted when every token was allowed
and the structure accepts at the end.

  --grammar schema   (default) each file's schema, compiled by each engine with its default
                     options and compact separators; valid and invalid instances. A schema
                     passes when it compiles, every valid instance is accepted and every
                     invalid one rejected.
  --grammar json     every valid instance against "any JSON value" (pse: Json(); llguidance:
                     the schema {}; XGrammar: its built-in JSON grammar).
  --compare llguidance,xgrammar   run those engines (the `bench` extra) on the same token
                     streams; ratios are against pse.
  --check-masks      compare pse's full mask with llguidance's at every step and classify
                     the tokens where they differ.

Run: python bench/maskbench.py --grammar json --compare llguidance,xgrammar [--limit 500]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np

import pse

SHARED = Path(os.environ.get("PSE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


# --- engines -----------------------------------------------------------------------------------

class PseEngine:
    name = "pse"

    def __init__(self, vocab: pse.Vocabulary, mask_memo: int) -> None:
        self.vocab = vocab
        self.mask_memo = mask_memo
        self.mask = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)

    def compile(self, grammar: str, schema):
        structure = pse.Json() if grammar == "json" else pse.JsonSchema(schema)
        engine = pse.StructuringEngine(self.vocab, mask_memo=self.mask_memo)
        engine.configure(structure)
        return engine

    def start(self, compiled):
        compiled.reset()
        return compiled

    def step(self, m, token: int) -> bool:
        m.fill_next_token_bitmask(self.mask, 0)
        if not (self.mask[0, token >> 5] >> (token & 31)) & 1:
            return False
        return m.consume_token(token)

    def accepts(self, m) -> bool:
        m.fill_next_token_bitmask(self.mask, 0)
        eos = self.vocab.eos_token_ids[0]
        return bool((self.mask[0, eos >> 5] >> (eos & 31)) & 1)

    def full_mask(self, m) -> np.ndarray:
        return m.compute_mask()


# llguidance by default refuses \u escapes of printable characters, which RFC 8259 allows.
LLG_JSON_SPEC = {"json_allow_general_unicode_escapes": True}


class LLGuidanceEngine:
    name = "llguidance"

    def __init__(self, vocab: pse.Vocabulary, tokenizer_path: Path) -> None:
        import llguidance
        import llguidance.hf
        import transformers

        hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path))
        self.llg = llguidance
        self.tok = llguidance.hf.from_tokenizer(hf, n_vocab=vocab.size,
                                                eos_token=vocab.eos_token_ids[0])
        self.vocab = vocab
        self.mask = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
        from llguidance.numpy import fill_next_token_bitmask

        self.fill = fill_next_token_bitmask

    def compile(self, grammar: str, schema):
        target = {} if grammar == "json" else schema
        g = self.llg.LLMatcher.grammar_from_json_schema(
            target, defaults={"whitespace_flexible": False, **LLG_JSON_SPEC})
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def start(self, compiled):
        compiled.reset()
        return compiled

    def step(self, m, token: int) -> bool:
        self.fill(m, self.mask, 0)
        if not (self.mask[0, token >> 5] >> (token & 31)) & 1:
            return False
        return m.consume_token(token)

    def accepts(self, m) -> bool:
        return m.is_accepting()

    def full_mask(self, m) -> np.ndarray:
        self.fill(m, self.mask, 0)
        return self.mask[0].copy()


class XGrammarEngine:
    name = "xgrammar"

    def __init__(self, vocab: pse.Vocabulary) -> None:
        import torch
        import xgrammar as xgr

        torch.set_num_threads(1)
        encoded = [b"" if not vocab.has_token(i) or i in vocab.special_token_ids
                   else vocab.token_bytes(i) for i in range(vocab.size)]
        info = xgr.TokenizerInfo(encoded, xgr.VocabType.RAW, vocab_size=vocab.size,
                                 stop_token_ids=list(vocab.eos_token_ids))
        self.xgr = xgr
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.mask = xgr.allocate_token_bitmask(1, vocab.size)

    def compile(self, grammar: str, schema):
        if grammar == "json":
            # XGrammar 0.2's schema {} puts ", " between object members whatever the
            # separators, and a hand-written compact grammar runs far slower than its own:
            # its built-in JSON grammar (whitespace allowed, a superset) it is
            return self.compiler.compile_builtin_json_grammar()
        return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False,
                                                 separators=(",", ":"), strict_mode=False)

    def start(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def step(self, m, token: int) -> bool:
        m.fill_next_token_bitmask(self.mask, 0)
        if not (int(self.mask[0, token >> 5]) >> (token & 31)) & 1:
            return False
        return m.accept_token(token)

    def accepts(self, m) -> bool:
        return m.is_completed()


# --- the run ---------------------------------------------------------------------------------

def load_instances(limit: int | None, seed: int):
    folder = SHARED / "data" / "maskbench"
    if not folder.is_dir():
        sys.exit(f"{folder} not found: set PSE_SHARED to the shared data folder")
    files = sorted(folder.glob("*.json"))
    if limit is not None and limit < len(files):
        files = sorted(random.Random(seed).sample(files, limit))
    for path in files:
        data = json.loads(path.read_text())
        yield path.name, data


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grammar", choices=["schema", "json"], default="schema")
    ap.add_argument("--compare", default="", help="comma-separated: llguidance,xgrammar")
    ap.add_argument("--limit", type=int, default=None, help="number of maskbench files (random)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--check-masks", action="store_true")
    ap.add_argument("--mask-memo", type=int, default=512,
                    help="pse's memo of recent masks (0: every mask is computed by the walk)")
    args = ap.parse_args()

    tok_path = SHARED / "tokenizers" / args.tokenizer / "tokenizer.json"
    vocab = pse.Vocabulary.from_file(tok_path)
    engines: list = [PseEngine(vocab, args.mask_memo)]
    for name in filter(None, args.compare.split(",")):
        if name == "llguidance":
            engines.append(LLGuidanceEngine(vocab, tok_path))
        elif name == "xgrammar":
            engines.append(XGrammarEngine(vocab))
        else:
            sys.exit(f"unknown engine {name!r}")
    checker = None
    if args.check_masks:
        checker = next((e for e in engines if e.name == "llguidance"), None) or \
            LLGuidanceEngine(vocab, tok_path)

    stats = {e.name: {"times": [], "compile": [], "valid_rejected": 0, "invalid_accepted": 0,
                      "instances": 0, "errors": {}, "passing": 0, "schemas": 0}
             for e in engines}
    diffs: dict[str, int] = {}
    diff_examples: list = []
    compiled: dict = {}
    t_start = time.time()
    files = list(load_instances(args.limit, args.seed))
    n_instances = 0
    for k, (name, data) in enumerate(files):
        tests = [t for t in data.get("tests", []) if t.get("valid") or args.grammar != "json"]
        if not tests:
            continue
        live = []
        for e in engines:
            st = stats[e.name]
            key = (e.name, "json") if args.grammar == "json" else (e.name, name)
            st["schemas"] += 1  # files with tests (in json mode, against one grammar)
            if key not in compiled:
                t0 = time.perf_counter()
                try:
                    compiled[key] = e.compile(args.grammar, data.get("schema"))
                except Exception as exc:  # each engine's own compile errors, counted by cause
                    cause = _cause(exc)
                    st["errors"][cause] = st["errors"].get(cause, 0) + 1
                    compiled[key] = None
                st["compile"].append(time.perf_counter() - t0)
            if compiled[key] is not None:
                live.append((e, compiled[key], [True]))
        for test in tests:
            text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
            tokens = vocab.encode(text)
            n_instances += 1
            check_m = None
            if checker is not None and args.grammar == "json":
                check_m = checker.start(compiled[(checker.name, "json")])
            for e, c, file_ok in live:
                st = stats[e.name]
                st["instances"] += 1
                m = e.start(c)
                ok = True
                times = st["times"]
                for i, tok in enumerate(tokens):
                    if check_m is not None and e.name == "pse":
                        ours = e.full_mask(m)
                        theirs = checker.full_mask(check_m)
                        if not np.array_equal(ours, theirs):
                            _record_diff(vocab, text, tokens[:i], ours, theirs, diffs,
                                         diff_examples)
                        checker.step(check_m, tok)
                    t0 = time.perf_counter()
                    allowed = e.step(m, tok)
                    times.append(time.perf_counter() - t0)
                    if not allowed:
                        ok = False
                        break
                accepted = ok and e.accepts(m)
                if test["valid"] and not accepted:
                    st["valid_rejected"] += 1
                    file_ok[0] = False
                if not test["valid"] and accepted:
                    st["invalid_accepted"] += 1
                    file_ok[0] = False
        for e, c, file_ok in live:
            stats[e.name]["passing"] += file_ok[0]
        if args.grammar != "json":  # each schema is used once: let its engines go
            for e in engines:
                compiled.pop((e.name, name), None)
        if k % 50 == 0 or k == len(files) - 1:
            print(f"\r{k + 1}/{len(files)} files, {n_instances} instances, "
                  f"{time.time() - t_start:.0f}s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    report(args, engines, stats, n_instances, len(files))
    if checker is not None:
        print(f"\nmask cross-check against llguidance: {sum(diffs.values())} differing tokens")
        for kind, n in sorted(diffs.items(), key=lambda kv: -kv[1]):
            print(f"  {kind}: {n}")
        for ex in diff_examples[:10]:
            print("  e.g.", ex)


def _cause(exc: BaseException) -> str:
    """A short cause for a compile error: pse names the keyword ("#/ptr: keyword: ...")."""
    text = str(exc).split("\n")[0]
    if isinstance(exc, pse.PSEError):
        parts = text.split(": ")
        if len(parts) >= 3:
            return f"{type(exc).__name__}: {parts[1]}: {parts[2][:50]}"
    return f"{type(exc).__name__}: {text[:70]}"


def _record_diff(vocab, text, prefix, ours, theirs, diffs, examples):
    x = np.bitwise_xor(ours.view(np.uint32), theirs.view(np.uint32))
    bits = np.flatnonzero(np.unpackbits(x.view(np.uint8), bitorder="little"))
    for tid in bits:
        mine = bool((ours.view(np.uint32)[tid >> 5] >> (tid & 31)) & 1)
        kind = "pse allows, llguidance refuses" if mine else "llguidance allows, pse refuses"
        kind += _diff_reason(vocab, prefix, int(tid))
        diffs[kind] = diffs.get(kind, 0) + 1
        if kind.endswith(": other") and len(examples) < 20:
            examples.append((kind, vocab.decode_bytes(prefix)[-30:], int(tid),
                             vocab.token_bytes(int(tid)) if vocab.has_token(int(tid)) else None))


def _diff_reason(vocab, prefix: list[int], tid: int) -> str:
    """Known differences of grammar, by what the token makes of the text's tail."""
    if not vocab.has_token(tid):
        return ": an id with no token"
    data = vocab.decode_bytes(prefix[-3:]) + vocab.token_bytes(tid)
    if b"\\/" in data:
        return ": the \\/ escape (RFC 8259 allows it; llguidance does not)"
    if b"\x7f" in data:
        return ": DEL (U+007F) in a string (RFC 8259 allows it; llguidance does not)"
    if re.search(rb"\\u[dD][89a-fA-F]", data):
        return ": a \\u escape of a surrogate (RFC 8259 allows it; llguidance does not)"
    return ": other"


def report(args, engines, stats, n_instances, n_files) -> None:
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nmaskbench --grammar {args.grammar}: {n_files} files, {n_instances} instances, "
          f"tokenizer {args.tokenizer}, pse mask memo {args.mask_memo}; "
          f"peak RSS {peak_mb:.0f} MB (all engines)")
    header = ("engine", "schemas passing", "compile errors", "tokens", "mean us", "p50 us",
              "p99 us", "max us", "compile p50 ms", "compile p99 ms", "valid rejected",
              "invalid accepted")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    base = stats["pse"]
    for e in engines:
        st = stats[e.name]
        t = np.array(st["times"]) * 1e6
        n_err = sum(st["errors"].values())
        row = [e.name, f"{st['passing']}/{st['schemas']}", str(n_err), f"{len(t):,}",
               f"{t.mean():.1f}", f"{np.percentile(t, 50):.1f}", f"{np.percentile(t, 99):.1f}",
               f"{t.max():.0f}", f"{percentile(st['compile'], 50) * 1e3:.2f}",
               f"{percentile(st['compile'], 99) * 1e3:.1f}", str(st["valid_rejected"]),
               str(st["invalid_accepted"])]
        print("| " + " | ".join(row) + " |")
    for e in engines:
        errors = stats[e.name]["errors"]
        if errors:
            print(f"\n{e.name} compile errors by cause (top 12 of {len(errors)}):")
            for cause, n in sorted(errors.items(), key=lambda kv: -kv[1])[:12]:
                print(f"  {n:5}  {cause}")
    if len(engines) > 1:
        tb = np.array(base["times"])
        print("\nratios (other engine / pse; above 1 means pse is faster):")
        for e in engines[1:]:
            to = np.array(stats[e.name]["times"])
            print(f"  {e.name}: mean {to.mean() / tb.mean():.2f}x, "
                  f"p50 {np.percentile(to, 50) / np.percentile(tb, 50):.2f}x, "
                  f"p99 {np.percentile(to, 99) / np.percentile(tb, 99):.2f}x")


if __name__ == "__main__":
    gc.disable()
    main()
