"""Fast-forward tokens on maskbench: are forced tokens canonical, and how many tokens are forced?

Each valid instance of ../shared/data/maskbench is serialized as compact JSON, tokenized with the
tokenizer (its own encoding is the reference), and replayed against its schema (pse.JsonSchema;
schemas that do not compile are skipped). At every step the engine's forced tokens are taken
whenever there are some, otherwise the next reference token. Counted:

  (a) non-canonical: forced tokens that differ from the reference token at their position (or
      run past its end), in the instances replayed to the end. Such a step is not taken; the
      replay goes on with the reference token. (An instance the engine rejects later is
      outside its structure: what it forced there is not a tokenization matter.)
  (b) the share of the reference tokens that were forced, over the instances replayed to
      the end (and, with --compare, over the instances every engine replayed to the end).

  --compare llguidance   the same replay with llguidance's `compute_ff_tokens` (compact
                         separators), in the same process on the same token streams.

  --shard K/N            only the files K, K+N, K+2N, ... (sorted by name); with --out the
                         figures go to a JSON file, and --combine sums such files into one
                         table (a full run in shards).

Run: python bench/fast_forward.py [--tokenizer llama3|qwen3|gpt4o] [--limit 500]
     [--compare llguidance]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pse
from maskbench_files import SHARED, maskbench_files, shard_arg



class PseSide:
    name = "pse"

    def __init__(self, vocab: pse.Vocabulary, tokenizer_path: Path) -> None:
        self.vocab = vocab

    def compile(self, schema):
        engine = pse.StructuringEngine(self.vocab)
        engine.configure(pse.JsonSchema(schema))
        return engine

    def start(self, engine):
        engine.reset()
        return engine

    def ff(self, engine) -> list[int]:
        return engine.compute_ff_tokens()

    def consume(self, engine, tokens: list[int]) -> bool:
        return engine.consume_tokens(tokens) == len(tokens)

    def accepts(self, engine) -> bool:
        return engine.is_accepting()


class LLGuidanceSide:
    name = "llguidance"

    def __init__(self, vocab: pse.Vocabulary, tokenizer_path: Path) -> None:
        import llguidance
        import llguidance.hf
        import transformers

        hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path))
        self.llg = llguidance
        self.tok = llguidance.hf.from_tokenizer(hf, n_vocab=vocab.size,
                                                eos_token=vocab.eos_token_ids[0])

    def compile(self, schema):
        g = self.llg.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": False,
                              "json_allow_general_unicode_escapes": True})
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def start(self, m):
        m.reset()
        return m

    def ff(self, m) -> list[int]:
        return m.compute_ff_tokens()

    def consume(self, m, tokens: list[int]) -> bool:
        return m.consume_tokens(tokens) and not m.is_error()

    def accepts(self, m) -> bool:
        return m.is_accepting()


def replay(side, m, tokens: list[int], st: dict, vocab: pse.Vocabulary, where: str
           ) -> int | None:
    """Replay one instance, taking forced tokens whenever there are some; how many tokens
    were forced (None: the instance was not replayed to the end)."""
    m = side.start(m)
    k = forced = non_canonical = 0
    examples = []
    text = vocab.decode_bytes(tokens)
    offsets = [0]
    for t in tokens:
        offsets.append(offsets[-1] + len(vocab.token_bytes(t)))
    while k < len(tokens):
        t0 = time.perf_counter()
        ff = side.ff(m)
        st["ff_time"] += time.perf_counter() - t0
        st["ff_calls"] += 1
        if ff:
            if not text.startswith(vocab.decode_bytes(ff), offsets[k]):
                # the structure forces other text: the instance is outside it (for pse, an
                # instance whose properties are not in schema order), not a tokenization matter
                st["rejected"] += 1
                return None
            expected = tokens[k:k + len(ff)]
            bad = sum(a != b for a, b in zip(ff, expected)) + len(ff) - len(expected)
            if bad:
                non_canonical += bad
                examples.append((where, vocab.decode_bytes(tokens[:k])[-30:],
                                 [vocab.token_bytes(i) for i in ff],
                                 [vocab.token_bytes(i) for i in expected]))
            elif side.consume(m, ff):
                st["ff_steps"] += 1
                forced += len(ff)
                k += len(ff)
                continue
            else:
                st["ff_refused"] += 1
                return None
        if not side.consume(m, [tokens[k]]):
            st["rejected"] += 1
            return None
        k += 1
    if not side.accepts(m):
        st["rejected"] += 1
        return None
    st["instances"] += 1
    st["tokens"] += len(tokens)
    st["forced"] += forced
    st["non_canonical"] += non_canonical
    st["examples"] += examples[:10 - len(st["examples"])]
    return forced


def report(title: str, stats: dict) -> None:
    print(f"\n{title}")
    cols = ["engine", "instances", "tokens", "forced", "share forced", "share (common)",
            "non-canonical", "ff steps", "schemas skipped", "instances rejected", "ff µs/call"]
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    for name, st in stats.items():
        share = st["forced"] / st["tokens"] if st["tokens"] else float("nan")
        common = st["common_forced"] / st["common_tokens"] if st["common_tokens"] else float("nan")
        print(f"| {name} | {st['instances']:,} | {st['tokens']:,} | {st['forced']:,} | "
              f"{100 * share:.2f}% | {100 * common:.2f}% | {st['non_canonical']} | "
              f"{st['ff_steps']:,} | "
              f"{st['compile_errors']} | {st['rejected'] + st['ff_refused']} | "
              f"{1e6 * st['ff_time'] / max(st['ff_calls'], 1):.1f} |")
    for name, st in stats.items():
        for ex in st["examples"]:
            print(f"{name} non-canonical at {ex[0]}: after {ex[1]!r} forced {ex[2]} "
                  f"expected {ex[3]}")


def combine(paths: list[str]) -> None:
    """Sum the figures of shard runs (--out files) into one table."""
    total: dict = {}
    files = 0
    for path in paths:
        part = json.loads(Path(path).read_text())
        files += part["files"]
        for name, st in part["stats"].items():
            acc = total.setdefault(name, {k: ([] if k == "examples" else 0) for k in st})
            for k, v in st.items():
                acc[k] += v
    report(f"fast-forward on maskbench ({part['tokenizer']}): {files} files with valid "
           f"instances, {len(paths)} shards", total)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", default="llama3", help="llama3, qwen3 or gpt4o")
    ap.add_argument("--limit", type=int, default=None, help="number of maskbench files (random)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", default="", help="llguidance")
    ap.add_argument("--shard", type=shard_arg, default="0/1", help="K/N: every N-th file from the K-th")
    ap.add_argument("--out", help="write the figures to this JSON file")
    ap.add_argument("--combine", nargs="+", metavar="OUT", help="sum --out files and report")
    args = ap.parse_args()
    if args.combine:
        combine(args.combine)
        return
    shard = args.shard
    args.shard = "%d/%d" % shard  # as written, for titles and --out

    tok_path = SHARED / "tokenizers" / args.tokenizer / "tokenizer.json"
    vocab = pse.Vocabulary.from_file(tok_path)
    sides: list = [PseSide(vocab, tok_path)]
    for name in filter(None, args.compare.split(",")):
        if name != "llguidance":
            sys.exit(f"unknown engine {name!r}")
        sides.append(LLGuidanceSide(vocab, tok_path))
    stats = {s.name: {"instances": 0, "tokens": 0, "forced": 0, "non_canonical": 0,
                      "ff_steps": 0, "ff_refused": 0, "rejected": 0, "compile_errors": 0,
                      "ff_time": 0.0, "ff_calls": 0, "common_tokens": 0, "common_forced": 0,
                      "examples": []} for s in sides}
    t_start = time.time()
    n_files = 0
    for name, data in maskbench_files(args.limit, args.seed, shard):
        tests = [t for t in data.get("tests", []) if t.get("valid")]
        if not tests:
            continue
        n_files += 1
        compiled = {}
        for side in sides:
            try:
                compiled[side.name] = side.compile(data["schema"])
            except Exception:  # each engine's own compile errors: the schema is skipped
                stats[side.name]["compile_errors"] += 1
        for i, test in enumerate(tests):
            text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
            tokens = vocab.encode(text)
            forced = {side.name: replay(side, compiled[side.name], tokens, stats[side.name],
                                        vocab, f"{name}#{i}")
                      for side in sides if side.name in compiled}
            if len(forced) == len(sides) and None not in forced.values():
                for side_name, n in forced.items():
                    stats[side_name]["common_tokens"] += len(tokens)
                    stats[side_name]["common_forced"] += n
    report(f"fast-forward on maskbench ({args.tokenizer}): {n_files} files with valid "
           f"instances, shard {args.shard}, {time.time() - t_start:.0f} s", stats)
    if args.out:
        for st in stats.values():
            st["examples"] = [[str(x) for x in ex] for ex in st["examples"]]
        Path(args.out).write_text(json.dumps({"tokenizer": args.tokenizer, "files": n_files,
                                              "stats": stats}))


if __name__ == "__main__":
    main()
