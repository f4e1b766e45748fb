"""Vocabulary load: pse beside llguidance and XGrammar, on the shared tokenizers, one process.

What is timed, per tokenizer, from its tokenizer.json to an object a matcher can mask with:

- pse build: `Vocabulary.from_file(path)`: read and parse the file, the bytes of every id, the
  EOS id from the tokenizer_config.json beside it, the flat trie, and what every mask needs
  from the vocabulary alone (the token table, the trie's byte kinds). Not included, because no
  mask needs it: the `tokenizers.Tokenizer` behind `Vocabulary.encode` (parsed on first use).
- pse load: `Vocabulary.load(saved)` of a file `Vocabulary.save` wrote (once, untimed): read
  and check it (its payload's SHA-256 and digest, the trie's bounds, the SHA-256 of the
  tokenizer.json it was built from, which is read) and make the tuple of token bytes.
- llguidance: `llguidance.LLTokenizer(path, n_vocab=..., eos_token=...)`: llguidance reads
  the file itself (with the Rust `tokenizers`) and builds its token trie; its cheapest path from
  the file.
- XGrammar: `transformers.PreTrainedTokenizerFast(tokenizer_file=path)`, then
  `xgrammar.TokenizerInfo.from_huggingface(...)` and `xgrammar.GrammarCompiler(info)`.
  XGrammar cannot read a tokenizer.json itself: the transformers load is part of its path and
  is counted; the column "of which transformers" gives that share, so XGrammar's own share can
  be read off too (a caller who loaded the tokenizer for the model anyway pays only that).

Each repeat times every engine in turn (the same noise for all); the table gives the best of
the repeats. Ratios are pse's time over the other engine's (below 1: pse is faster). The
engines other than pse are optional: missing ones are skipped, saying so.

Run: python bench/vocabulary_build.py [--repeat 5] [--engines pse,llguidance,xgrammar]
(PSE_SHARED locates ../shared)
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

from pse import Vocabulary

SHARED = Path(os.environ.get("PSE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
TOKENIZERS = ("llama3", "qwen3", "gpt4o")


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def llguidance_load(path: Path, vocab: Vocabulary) -> Callable[[], object]:
    import llguidance

    return lambda: llguidance.LLTokenizer(str(path), n_vocab=vocab.size,
                                          eos_token=list(vocab.eos_token_ids))


def xgrammar_load(path: Path, vocab: Vocabulary, parts: dict) -> Callable[[], object]:
    import transformers
    import xgrammar as xgr

    transformers.logging.set_verbosity_error()

    def load() -> object:
        t0 = time.perf_counter()
        hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
        parts["transformers"] = min(parts.get("transformers", 1e9), time.perf_counter() - t0)
        info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=vocab.size,
                                                  stop_token_ids=list(vocab.eos_token_ids))
        return xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)

    return load


def available(engines: list[str]) -> list[str]:
    needs = {"llguidance": ["llguidance"], "xgrammar": ["xgrammar", "transformers"]}
    out = []
    for engine in engines:
        missing = [m for m in needs.get(engine, []) if importlib.util.find_spec(m) is None]
        if missing:
            print(f"{engine}: skipped ({', '.join(missing)} not installed)")
        else:
            out.append(engine)
    return out


def version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--engines", default="pse,llguidance,xgrammar",
                    help="comma-separated, of pse, llguidance, xgrammar (pse always runs)")
    args = ap.parse_args()
    others = available([e for e in args.engines.split(",") if e and e != "pse"])
    print("versions: " + ", ".join(f"{n} {version(n)}" for n in ["pse", *others]
                                   + (["transformers"] if "xgrammar" in others else [])))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in TOKENIZERS:
            path = SHARED / "tokenizers" / name / "tokenizer.json"
            if not path.is_file():
                print(f"{name}: skipped ({path} not found; set PSE_SHARED)")
                continue
            vocab = Vocabulary.from_file(path)
            saved = Path(tmp) / f"{name}.vocab"
            vocab.save(saved)
            parts: dict = {}
            runs: dict[str, Callable[[], object]] = {
                "pse build": lambda: Vocabulary.from_file(path),
                "pse load": lambda: Vocabulary.load(saved)}
            if "llguidance" in others:
                runs["llguidance"] = llguidance_load(path, vocab)
            if "xgrammar" in others:
                runs["xgrammar"] = xgrammar_load(path, vocab, parts)
            best = {key: float("inf") for key in runs}
            for _ in range(args.repeat):
                for key, fn in runs.items():
                    best[key] = min(best[key], timed(fn))
            rows.append((name, vocab, saved.stat().st_size, best, parts.get("transformers")))

    def cell(seconds: float | None) -> str:
        return "-" if seconds is None or seconds == float("inf") else (
            f"{seconds * 1000:.0f} ms" if seconds < 0.1 else f"{seconds:.2f} s")

    def ratio(a: float, b: float | None) -> str:
        return "-" if b is None else f"{a / b:.2f}x"

    print(f"\nbest of {args.repeat}, one process\n")
    print("| tokenizer | ids | pse build | pse load | llguidance | XGrammar (of which "
          "transformers) | build / XGrammar | build / llguidance | load / XGrammar | "
          "saved file | trie nodes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, vocab, file_size, best, hf in rows:
        llg, xg = best.get("llguidance"), best.get("xgrammar")
        xg_cell = f"{cell(xg)} ({cell(hf)})" if xg is not None else "-"
        print(f"| {name} | {vocab.size:,} | {cell(best['pse build'])} | "
              f"{cell(best['pse load'])} | {cell(llg)} | {xg_cell} | "
              f"{ratio(best['pse build'], xg)} | {ratio(best['pse build'], llg)} | "
              f"{ratio(best['pse load'], xg)} | {file_size / 1e6:.1f} MB | "
              f"{vocab.trie.n_nodes:,} |")


if __name__ == "__main__":
    main()
