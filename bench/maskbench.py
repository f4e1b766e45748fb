"""Replay maskbench instances token by token; time masks; compare engines on the same streams.

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
                     the tokens where they differ (runs the engines in this process).
  --timeout S        each engine runs in a process of its own, fed one file at a time: a
                     process that dies counts as a crash of that engine on that file, one
                     that takes over S seconds on a file (compile + instances) as a hang; it
                     is restarted and the run goes on. Peak RSS is reported per engine.
                     --no-isolate runs everything in this process instead.
  --compile-only     compile each schema with each engine and replay nothing: compile times
                     over every file in minutes (the replay with XGrammar takes hours): each
                     engine's percentiles over its own compiles (failed ones included), the
                     ratios over the schemas every engine compiles, and pse's 20 slowest
                     compiles beside the other engines' times on those files; its --out
                     files combine into the same.
  --first-mask       with --compile-only: each compile timed with its engine's first mask
                     (what a server pays before the first token: llguidance builds its lexer
                     as masks need it).
  --keyword K        only the schemas that use JSON Schema keyword K (e.g. uniqueItems)
  --shard K/N        only the files K, K+N, K+2N, ... (sorted by name, after --limit); with
                     --out the figures go to a JSON file, and --combine puts such files
                     together into one table (a full run in shards, e.g. over sessions).

Run: python bench/maskbench.py --grammar json --compare llguidance,xgrammar [--limit 500]
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np

import pse
from maskbench_files import SHARED, maskbench_files, shard_arg



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

def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def make_engine(name: str, vocab: pse.Vocabulary, tok_path: Path, mask_memo: int):
    if name == "pse":
        return PseEngine(vocab, mask_memo)
    if name == "llguidance":
        return LLGuidanceEngine(vocab, tok_path)
    if name == "xgrammar":
        return XGrammarEngine(vocab)
    sys.exit(f"unknown engine {name!r}")


def new_stats() -> dict:
    # "steps": per file replayed, (its name, the tokens timed per instance), in the order of
    # "times": what same_streams lines up between engines; "compile_files": the file of each
    # "compile" figure (failed compiles included); "failed_files": those whose compile failed
    return {"times": [], "steps": [], "compile": [], "compile_files": [], "failed_files": [],
            "valid_rejected": 0,
            "invalid_accepted": 0, "instances": 0, "errors": {}, "passing": 0, "schemas": 0,
            "crashes": [], "hangs": [], "peak_rss_mb": 0.0, "base_rss_mb": 0.0,
            "runtime_errors": {}}


def run_file(e, compiled: dict, grammar: str, name: str, schema, tests: list, checker=None,
             diffs=None, diff_examples=None, first_mask: bool = False) -> dict:
    """One file's schema on one engine: compile (once per key; with `first_mask`, the
    first mask timed with it), then replay each instance token by token. Returns that
    file's numbers (see `merge`)."""
    out = {"times": [], "steps": [], "compile": None, "error": None, "instances": 0,
           "valid_rejected": 0, "invalid_accepted": 0, "passing": False, "runtime_errors": {}}
    key = "json" if grammar == "json" else name
    if key not in compiled:
        t0 = time.perf_counter()
        try:
            c = e.compile(grammar, schema)
            if first_mask:
                e.accepts(e.start(c))  # (a mask, and whether it holds EOS)
            compiled[key] = (c, None)
        except Exception as exc:  # each engine's own compile errors, counted by cause
            compiled[key] = (None, _cause(exc))
        out["compile"] = time.perf_counter() - t0
    c, out["error"] = compiled[key]
    if c is None:
        return out
    file_ok = True
    times = out["times"]
    gc.disable()  # no collection inside the timed loop; one after each file (see worker)
    try:
        for valid, text, tokens in tests:
            out["instances"] += 1
            before = len(times)
            check_m = checker.start(compiled[("checker", "json")]) if checker else None
            m = e.start(c)
            ok = True
            try:
                for i, tok in enumerate(tokens):
                    if check_m is not None:
                        ours, theirs = e.full_mask(m), checker.full_mask(check_m)
                        if not np.array_equal(ours, theirs):
                            _record_diff(e.vocab, text, tokens[:i], ours, theirs, diffs,
                                         diff_examples)
                        checker.step(check_m, tok)
                    t0 = time.perf_counter()
                    allowed = e.step(m, tok)
                    times.append(time.perf_counter() - t0)
                    if not allowed:
                        ok = False
                        break
                accepted = ok and e.accepts(m)
            except Exception as exc:  # e.g. a limit hit while masking: the instance is lost
                cause = _cause(exc)
                out["runtime_errors"][cause] = out["runtime_errors"].get(cause, 0) + 1
                accepted = False
            out["steps"].append(len(times) - before)
            if valid and not accepted:
                out["valid_rejected"] += 1
                file_ok = False
            if not valid and accepted:
                out["invalid_accepted"] += 1
                file_ok = False
    finally:
        gc.enable()
    out["passing"] = file_ok
    return out


def merge(st: dict, res: dict, name: str) -> None:
    st["schemas"] += 1
    st["times"].extend(res["times"])
    if res["steps"]:
        st["steps"].append((name, res["steps"]))
    if res["compile"] is not None:
        st["compile"].append(res["compile"])
        st["compile_files"].append(name)
    if res["error"] is not None:
        st["failed_files"].append(name)
        st["errors"][res["error"]] = st["errors"].get(res["error"], 0) + 1
    for k in ("instances", "valid_rejected", "invalid_accepted"):
        st[k] += res[k]
    for cause, count in res["runtime_errors"].items():
        st["runtime_errors"][cause] = st["runtime_errors"].get(cause, 0) + count
    st["passing"] += res["passing"] and res["error"] is None


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker(conn, name: str, tok_path: str, mask_memo: int) -> None:
    """A process running one engine: files in, results out, so that a crash or a hang of one
    engine on one schema is seen (and counted) instead of ending the run."""
    vocab = pse.Vocabulary.from_file(tok_path)
    e = make_engine(name, vocab, Path(tok_path), mask_memo)
    compiled: dict = {}
    gc.collect()
    conn.send(_rss_mb())
    while True:
        msg = conn.recv()
        if msg is None:
            return
        grammar, fname, schema, tests, first_mask = msg
        res = run_file(e, compiled, grammar, fname, schema, tests, first_mask=first_mask)
        if grammar != "json":  # each schema is used once: let its engines go
            compiled.clear()
        gc.collect()
        res["rss"] = _rss_mb()
        conn.send(res)


class Worker:
    """One engine in a child process, restarted after a crash or a hang."""

    def __init__(self, name: str, tok_path: Path, mask_memo: int, timeout: float) -> None:
        self.name, self.tok_path, self.mask_memo, self.timeout = name, tok_path, mask_memo, \
            timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.base_rss = 0.0
        self.start()

    def start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, daemon=True,
                                     args=(child, self.name, str(self.tok_path), self.mask_memo))
        self.proc.start()
        child.close()
        self.base_rss = self.conn.recv()

    def run(self, msg) -> tuple[str, dict | str]:
        """("ok", result) | ("crash", how) | ("hang", seconds)."""
        try:
            self.conn.send(msg)
            ready = self.conn.poll(self.timeout)
            if ready:
                return "ok", self.conn.recv()
        except (EOFError, OSError):  # the process died: a crash
            ready = True
        if not ready:
            self.proc.kill()
            self.proc.join()
            self.start()
            return "hang", f"over {self.timeout:g} s"
        self.proc.join(5)
        code = self.proc.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        self.start()
        return "crash", how

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grammar", choices=["schema", "json"], default="schema")
    ap.add_argument("--compare", default="", help="comma-separated: llguidance,xgrammar")
    ap.add_argument("--limit", type=int, default=None, help="number of maskbench files (random)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keyword", help="only the schemas using this JSON Schema keyword")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--check-masks", action="store_true")
    ap.add_argument("--mask-memo", type=int, default=512,
                    help="pse's memo of recent masks (0: every mask is computed by the walk)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds one engine may spend on one file (compile + instances) "
                         "before it counts as a hang")
    ap.add_argument("--no-isolate", action="store_true",
                    help="run the engines in this process (no crash or hang detection, "
                         "no per-engine memory; --check-masks implies it)")
    ap.add_argument("--compile-only", action="store_true", help="compile, replay nothing")
    ap.add_argument("--first-mask", action="store_true",
                    help="with --compile-only: time each compile with its first mask")
    ap.add_argument("--shard", type=shard_arg, default="0/1", help="K/N: every N-th file from the K-th")
    ap.add_argument("--out", help="write the figures (per-token times included) to this JSON file")
    ap.add_argument("--combine", nargs="+", metavar="OUT", help="put --out files together")
    args = ap.parse_args()
    if args.first_mask and not args.compile_only:
        ap.error("--first-mask needs --compile-only")
    if args.combine:
        combine(args.combine)
        return
    shard = args.shard
    args.shard = "%d/%d" % shard  # as written, for titles and --out
    isolate = not (args.no_isolate or args.check_masks)

    tok_path = SHARED / "tokenizers" / args.tokenizer / "tokenizer.json"
    vocab = pse.Vocabulary.from_file(tok_path)
    names = ["pse"] + [n for n in args.compare.split(",") if n]
    stats = {n: new_stats() for n in names}
    if isolate:
        workers = {n: Worker(n, tok_path, args.mask_memo, args.timeout) for n in names}
        for n in names:
            stats[n]["base_rss_mb"] = workers[n].base_rss
    else:
        engines = {n: make_engine(n, vocab, tok_path, args.mask_memo) for n in names}
        compiled: dict = {n: {} for n in names}
    checker = None
    diffs: dict[str, int] = {}
    diff_examples: list = []
    if args.check_masks:
        checker = engines.get("llguidance") or LLGuidanceEngine(vocab, tok_path)
        compiled["pse"][("checker", "json")] = checker.compile("json", None)
    t_start = time.time()
    files = list(maskbench_files(args.limit, args.seed, shard, args.keyword))
    n_instances = 0
    for k, (name, data) in enumerate(files):
        tests = [t for t in data.get("tests", []) if t.get("valid") or args.grammar != "json"]
        if not tests:
            continue
        streams = []
        for test in tests:
            text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
            streams.append((bool(test["valid"]), text, vocab.encode(text)))
        n_instances += len(streams)
        if args.compile_only:
            streams = []
        for n in names:
            st = stats[n]
            if isolate:
                status, res = workers[n].run((args.grammar, name, data.get("schema"), streams,
                                              args.first_mask))
                if status != "ok":
                    st["schemas"] += 1
                    st[status + "es" if status == "crash" else status + "s"].append((name, res))
                    continue
                st["peak_rss_mb"] = max(st["peak_rss_mb"], res.pop("rss"))
            else:
                use = checker if (n == "pse" and args.grammar == "json") else None
                res = run_file(engines[n], compiled[n], args.grammar, name, data.get("schema"),
                               streams, use, diffs, diff_examples, args.first_mask)
                if args.grammar != "json":
                    compiled[n].pop(name, None)
            merge(st, res, name)
        if k % 50 == 0 or k == len(files) - 1:
            print(f"\r{k + 1}/{len(files)} files, {n_instances} instances, "
                  f"{time.time() - t_start:.0f}s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if isolate:
        for w in workers.values():
            w.close()
    else:
        for n in names:  # one process: its peak is every engine's
            stats[n]["peak_rss_mb"] = _rss_mb()
    title = run_title(args, len(files), n_instances, isolate)
    if args.out:
        Path(args.out).write_text(json.dumps({
            "title": title, "shard": args.shard, "files": len(files), "instances": n_instances,
            "names": names, "stats": stats, "compile_only": args.compile_only,
            "first_mask": args.first_mask}))
    if args.compile_only:
        report_compile(title, names, stats)
        return
    report(title, names, stats)
    if checker is not None:
        print(f"\nmask cross-check against llguidance: {sum(diffs.values())} differing tokens")
        for kind, n in sorted(diffs.items(), key=lambda kv: -kv[1]):
            print(f"  {kind}: {n}")
        for ex in diff_examples[:10]:
            print("  e.g.", ex)


def _cause(exc: BaseException) -> str:
    """A short cause for a compile error: pse names the keyword ("#/ptr: keyword: ...")."""
    text = _untimed(str(exc).split("\n")[0])
    if isinstance(exc, pse.PSEError):
        parts = text.split(": ")
        if len(parts) >= 3:
            return f"{type(exc).__name__}: {parts[1]}: {parts[2][:50]}"
    return f"{type(exc).__name__}: {text[:70]}"


def _untimed(text: str) -> str:
    """A message without the clock time XGrammar starts its errors with ("[21:48:16] ...")."""
    return re.sub(r"^(\w+: )?\[\d\d:\d\d:\d\d\] ", lambda m: m.group(1) or "", text)


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


def run_title(args, n_files: int, n_instances: int, isolate: bool) -> str:
    where = ("each engine in its own process; peak RSS is that process's, vocabulary "
             "included (after loading: base)") if isolate else "all engines in this process"
    shard = f" (shard {args.shard})" if args.shard != "0/1" else ""
    first = "; each compile timed with its first mask" if args.first_mask else ""
    return (f"maskbench --grammar {args.grammar}: {n_files} files{shard}, {n_instances} "
            f"instances, tokenizer {args.tokenizer}, pse mask memo {args.mask_memo}, timeout "
            f"{args.timeout:g} s per file; {where}{first}")


def combine(paths: list[str]) -> None:
    """Put the figures of shard runs (--out files) together into one table."""
    parts = [json.loads(Path(p).read_text()) for p in paths]
    names = parts[0]["names"]
    if any(part["names"] != names for part in parts):
        sys.exit("the shard files compare different engines")
    compile_only = {bool(part.get("compile_only")) for part in parts}
    if len(compile_only) > 1:
        sys.exit("the shard files mix --compile-only runs with full ones")
    if len({bool(part.get("first_mask")) for part in parts}) > 1:
        sys.exit("the shard files mix --first-mask runs with others")
    stats = {n: new_stats() for n in names}
    for part in parts:
        for n in names:
            st, add = stats[n], part["stats"][n]
            for k in ("times", "steps", "compile", "compile_files", "failed_files", "crashes",
                      "hangs"):
                st[k].extend(add.get(k, []))
            for k in ("valid_rejected", "invalid_accepted", "instances", "passing", "schemas"):
                st[k] += add[k]
            for k in ("errors", "runtime_errors"):
                for cause, count in add[k].items():
                    cause = _untimed(cause)
                    st[k][cause] = st[k].get(cause, 0) + count
            st["peak_rss_mb"] = max(st["peak_rss_mb"], add["peak_rss_mb"])
            st["base_rss_mb"] = max(st["base_rss_mb"], add["base_rss_mb"])
    files = sum(p["files"] for p in parts)
    instances = sum(p["instances"] for p in parts)
    shards = ", ".join(sorted(p["shard"] for p in parts))
    title = parts[0]["title"].split(": ", 1)[1].split(", tokenizer", 1)[1]
    show = report_compile if compile_only.pop() else report
    show(f"maskbench: {files} files, {instances} instances in shards {shards}, "
         f"tokenizer{title}", names, stats)


def report_compile(title: str, names, stats) -> None:
    print(f"\n{title}; compile only")
    print("| engine | schemas | compile errors | compile p50 ms | p90 ms | p99 ms | mean ms |")
    print("|---|---|---|---|---|---|---|")
    for n in names:
        c = np.array(stats[n]["compile"]) * 1e3
        print(f"| {n} | {stats[n]['schemas']} | {sum(stats[n]['errors'].values())} | "
              f"{np.percentile(c, 50):.2f} | {np.percentile(c, 90):.2f} | "
              f"{np.percentile(c, 99):.1f} | {c.mean():.2f} |")
    by_file = {n: dict(zip(stats[n]["compile_files"], stats[n]["compile"])) for n in names}
    for n in names[1:]:
        base = np.percentile(stats["pse"]["compile"], 50)
        print(f"  compile p50, pse / {n}: {base / np.percentile(stats[n]['compile'], 50):.2f}x")
        report_same_compiles(n, stats, by_file)
    report_slowest(names, stats, by_file)


def report_same_compiles(n: str, stats, by_file) -> None:
    """pse's compile times over engine `n`'s on the schemas both compile (the tables count
    each engine's own compiles, failed ones too)."""
    failed = set(stats["pse"]["failed_files"]) | set(stats[n]["failed_files"])
    both = sorted((set(by_file["pse"]) & set(by_file[n])) - failed)
    if both:
        ours = np.array([by_file["pse"][f] for f in both])
        theirs = np.array([by_file[n][f] for f in both])
        print(f"  on the {len(both)} schemas both compile, pse / {n}: " + ", ".join(
            f"p{q} {np.percentile(ours, q) / np.percentile(theirs, q):.2f}x"
            for q in (50, 90, 99)) + f", mean {ours.mean() / theirs.mean():.2f}x")


def report_slowest(names, stats, by_file, count: int = 20) -> None:
    """pse's slowest compiles, each beside the other engines' time on the same file."""
    slowest = sorted(by_file["pse"].items(), key=lambda kv: -kv[1])[:count]
    if not slowest:
        return
    print(f"\npse's {len(slowest)} slowest compiles, ms:")
    print("| file | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for name, _ in slowest:
        cells = [f"{by_file[n][name] * 1e3:.1f}" if name in by_file[n] else "-" for n in names]
        print(f"| {name} | " + " | ".join(cells) + " |")


def report(title: str, names, stats) -> None:
    isolate = "own process" in title
    print(f"\n{title}")
    header = ("engine", "schemas passing", "compile errors", "runtime errors", "crashes",
              "hangs", "tokens",
              "mean us", "p50 us", "p99 us", "max us", "compile p50 ms", "compile p99 ms",
              "valid rejected", "invalid accepted", "peak RSS MB")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n in names:
        st = stats[n]
        t = np.array(st["times"] or [float("nan")]) * 1e6
        rss = f"{st['peak_rss_mb']:.0f}" + (f" (base {st['base_rss_mb']:.0f})" if isolate else "")
        row = [n, f"{st['passing']}/{st['schemas']}", str(sum(st["errors"].values())),
               str(sum(st["runtime_errors"].values())), str(len(st["crashes"])),
               str(len(st["hangs"])), f"{len(st['times']):,}",
               f"{np.mean(t):.1f}", f"{np.percentile(t, 50):.1f}", f"{np.percentile(t, 99):.1f}",
               f"{np.max(t):.0f}", f"{percentile(st['compile'], 50) * 1e3:.2f}",
               f"{percentile(st['compile'], 99) * 1e3:.1f}", str(st["valid_rejected"]),
               str(st["invalid_accepted"]), rss]
        print("| " + " | ".join(row) + " |")
    for n in names:
        st = stats[n]
        for kind in ("crashes", "hangs"):
            if st[kind]:
                print(f"\n{n} {kind} ({len(st[kind])}):")
                for fname, how in st[kind][:20]:
                    print(f"  {fname}: {how}")
        if st["runtime_errors"]:
            print(f"\n{n} errors while replaying instances, by cause:")
            for cause, count in sorted(st["runtime_errors"].items(), key=lambda kv: -kv[1]):
                print(f"  {count:5}  {cause}")
        errors = st["errors"]
        if errors:
            print(f"\n{n} compile errors by cause ({sum(errors.values())} schemas, "
                  f"{len(errors)} causes; top 25):")
            for cause, count in sorted(errors.items(), key=lambda kv: -kv[1])[:25]:
                print(f"  {count:5}  {cause}")
    if len(names) > 1 and stats["pse"]["times"]:
        tb = np.array(stats["pse"]["times"])
        print("\nratios (other engine / pse; above 1 means pse is faster), over each "
              "engine's own tokens:")
        for n in names[1:]:
            to = np.array(stats[n]["times"])
            if len(to):
                print(f"  {n}: {_ratios(to, tb)}")
        print("over the same token streams (the instances both engines replayed, each up to "
              "the token where either stopped):")
        for n in names[1:]:
            to, tb = same_streams(stats[n], stats["pse"])
            if len(to):
                print(f"  {n}: {len(to):,} tokens, pse mean {tb.mean() * 1e6:.1f} / p50 "
                      f"{np.percentile(tb, 50) * 1e6:.1f} / p99 {np.percentile(tb, 99) * 1e6:.1f}"
                      f" us, {n} {to.mean() * 1e6:.1f} / {np.percentile(to, 50) * 1e6:.1f} / "
                      f"{np.percentile(to, 99) * 1e6:.1f} us: {_ratios(to, tb)}")
    if len(names) > 1:
        print("compile times:")
        by_file = {n: dict(zip(stats[n]["compile_files"], stats[n]["compile"])) for n in names}
        for n in names[1:]:
            report_same_compiles(n, stats, by_file)


def _ratios(other: np.ndarray, ours: np.ndarray) -> str:
    return (f"mean {other.mean() / ours.mean():.2f}x, "
            f"p50 {np.percentile(other, 50) / np.percentile(ours, 50):.2f}x, "
            f"p99 {np.percentile(other, 99) / np.percentile(ours, 99):.2f}x")


def same_streams(a: dict, b: dict) -> tuple[np.ndarray, np.ndarray]:
    """The per-token times of engines `a` and `b` (their stats) over the same tokens: the
    instances of the files both compiled, each cut to the tokens both replayed (one engine
    may refuse a token the other takes)."""
    def spans(st: dict) -> dict:
        at, out = 0, {}
        for name, steps in st["steps"]:
            for i, n in enumerate(steps):
                out[(name, i)] = (at, n)
                at += n
        return out
    sa, sb = spans(a), spans(b)
    ta, tb = np.asarray(a["times"]), np.asarray(b["times"])
    pick_a, pick_b = [], []
    for key, (at_a, n_a) in sa.items():
        if key in sb:
            at_b, n_b = sb[key]
            n = min(n_a, n_b)
            pick_a.append(np.arange(at_a, at_a + n))
            pick_b.append(np.arange(at_b, at_b + n))
    if not pick_a:
        return np.zeros(0), np.zeros(0)
    return ta[np.concatenate(pick_a)], tb[np.concatenate(pick_b)]


if __name__ == "__main__":
    main()
