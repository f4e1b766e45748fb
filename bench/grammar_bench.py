"""Context-free grammars: pse beside llguidance and XGrammar, in one process on the same token
streams (Llama 3 tokenizer), with lark as the judge of every text.

Grammars:
- the bundled Lark grammars `arithmetic` and `sql` (pse.grammars), on seeded random texts
  (expressions; SELECT statements with joins, WHERE, GROUP BY, ORDER BY, LIMIT);
- `ambiguous`: `expr: expr "+" expr | expr "*" expr | "(" expr ")" | NUMBER`, left-recursive
  and ambiguous (n operators, a Catalan number of parses), on seeded sums and products of 2
  to 40 operands;
- with `--gbnf DIR`, the GBNF grammars of llama.cpp's `grammars/` folder found there, on the
  texts of bench/gbnf_texts.py (the folder is not in this repository: fetch llama.cpp).
To each valid text the bench adds `--mutations` texts one edit away (seeded), valid or not.

Every text is labelled by lark's Earley parser: for a Lark grammar on its own text; for a GBNF
grammar on the Lark text `pse.gbnf` reads it into. An engine's verdict on a text: every token
allowed by its mask and taken, and at the end the mask allows EOS. "agree" counts the texts
where the verdict is lark's.

Engines: pse (`pse.grammars.load` / `pse.Grammar.from_gbnf`), llguidance
(`LLMatcher.grammar_from_lark` on the Lark file, or on `llguidance.gbnf_to_lark` of the GBNF
text), XGrammar (`compile_grammar` on the GBNF text, `compile_lark` on a Lark file; its cache
off). Per token: the time to fill the mask and consume the token (`time.perf_counter_ns`),
over every stream up to the token an engine refuses. Compile: from the grammar's text to a
matcher ready for its first mask, the median of `--repeat` runs and the first alone. The
engines take turns grammar by grammar.

With `--long N`, one text of N operands of `ambiguous`, one of N a's of `right ambiguous` (`s:
"a" s | "a" s s | "a"`: a live state per a read) and one of N a's then N b's and c's of
`stacked` (`s: "a" s "b" | "a" t | ""`, `t: s "c"`: 2^n stacks after n a's) and one of N a's
then N - 1 "ab" of `interleaved` (`s: "a" s s "b" | "a"`: Fibonacci-many stacks after n a's) and
N a's of `pop through` (`s: "a" s "b" | "a" s s | "a"`) and of `nested ends` (`s: "a" s s "b" |
"a" s "c" | "a" s | "a"`), where each a pops through stacks of every depth, and N / 10 a's of
`calling each other` (three rules that call each other: a's parse in ways that grow
exponentially, and Earley's items quadratically), and a few letters then N / 40 blocks of
six a's and a c of `three rules` (a random grammar whose three rules call each other every
way at once), and 2N random words in quotes of `long count` (one terminal, `/[a-z ]{1,100000}/`: a count too long to unroll), are timed by
quarters as well (whether an engine's time per token grows with the text), with the mean and
the p99 over the whole text and the grammar's compile (the median of `--repeat`: a process's
first compile also imports what reads the grammar, lark for pse); `--only-long` times these alone, in
a process that has run nothing else, `--long-texts` some of them.

Run: python bench/grammar_bench.py [--gbnf DIR] [--texts 100] [--mutations 3] [--repeat 11]
                                   [--mask-memo 512] [--engines pse,llguidance,xgrammar]
                                   [--long 400] [--only-long] [--long-texts NAMES]
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import random
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import pse
import pse.grammars
from pse.gbnf import to_lark

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gbnf_texts import TEXTS  # noqa: E402
from maskbench import LLGuidanceEngine, PseEngine, XGrammarEngine  # noqa: E402
from maskbench_files import SHARED  # noqa: E402

TOKENIZER = SHARED / "tokenizers" / "llama3" / "tokenizer.json"


# --- texts ---------------------------------------------------------------------------------

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


AMBIGUOUS = ('start: expr\nexpr: expr "+" expr | expr "*" expr | "(" expr ")" | NUMBER\n'
             'NUMBER: /[0-9]+/\n')
RIGHT_AMBIGUOUS = 'start: s\ns: "a" s | "a" s s | "a"\n'
# 2^n stacks after n a's (one per order of the b's and c's to come) in a stack parser
STACKED = 'start: s\ns: "a" s "b" | "a" t | \nt: s "c"\n'
# Fibonacci-many stacks after n a's (sequences of the two returns of s still to come)
INTERLEAVED = 'start: s\ns: "a" s s "b" | "a"\n'
# every a pops through stacks of every depth (a union of unions per a): the second s of `s
# s` may end the rule, or a return only ends it
POP_THROUGH = 'start: s\ns: "a" s "b" | "a" s s | "a"\n'
NESTED_ENDS = 'start: s\ns: "a" s s "b" | "a" s "c" | "a" s | "a"\n'
CALLING_EACH_OTHER = ('start: s\n'
                      's: u t s "b" | "a" t "c" | t s | u u s s | "a"\n'
                      't: s t t s | s "c" "a" u | t u s | s u u | "a"\n'
                      'u: "b" "b" "a" | u | "c" "b" "a" s | "a"\n')
# three rules that call each other every way at once (a random grammar, found by a fuzz
# against an Earley oracle: each byte completed tens of thousands of stacks)
THREE_RULES = ('start: s\n'
               's: t "c" | "a" "b" "b" "c" | t s | "c" "a" "c" | s "b" s | "c"\n'
               't: s | "b" u t | "c" | u | "a"\n'
               'u: s | s "a" | "a" s "b" | t u | "b" "b" | "b"\n')
LONG_TEXTS = ("ambiguous", "right ambiguous", "stacked", "interleaved", "pop through",
              "nested ends", "calling each other", "three rules", "long count")
# a terminal whose bounded repeat is too long to unroll (pse counts it at run time)
LONG_COUNT = 'start: "\\"" TEXT "\\""\nTEXT: /[a-z ]{1,100000}/\n'


def ambiguous_text(rng: random.Random) -> str:
    text = str(rng.randrange(100))
    for _ in range(rng.randrange(1, 40)):
        operand = str(rng.randrange(100))
        if rng.random() < 0.1:
            operand = f"({operand}+{rng.randrange(100)})"
        text += rng.choice("+*") + operand
    return text


def mutations(text: str, alphabet: str, rng: random.Random, n: int) -> list[str]:
    """`n` texts one edit away from `text` (a character inserted, deleted or replaced)."""
    out = []
    for _ in range(n):
        i = rng.randrange(len(text))
        ch = rng.choice(alphabet)
        op = rng.randrange(3)
        out.append(text[:i] + ch + text[i:] if op == 0 else text[:i] + text[i + 1:]
                   if op == 1 else text[:i] + ch + text[i + 1:])
    return out


class Case:
    """One grammar: its text in the form each engine reads, lark's parser, and the texts."""

    def __init__(self, name: str, kind: str, source: str, valid: list[str],
                 n_mutations: int, rng: random.Random) -> None:
        import lark

        self.name, self.kind, self.source = name, kind, source
        if kind == "gbnf":
            lark_text = to_lark(source)
            self.lark_text, start = lark_text.text, lark_text.start
        else:
            self.lark_text, start = source, "start"
        self.parser = lark.Lark(self.lark_text, parser="earley", lexer="dynamic_complete",
                                start=start)
        alphabet = "".join(sorted(set("".join(valid))))
        self.texts = valid + [m for v in valid for m in mutations(v, alphabet, rng, n_mutations)]
        self.labels = [self.accepts(t) for t in self.texts]

    def accepts(self, text: str) -> bool:
        import lark

        try:
            self.parser.parse(text)
            return True
        except lark.exceptions.LarkError:
            return False


def cases(args, rng: random.Random) -> list[Case]:
    out = []
    for name, make in (("arithmetic", arithmetic_text), ("sql", sql_text)):
        texts = [make(rng) for _ in range(args.texts)]
        out.append(Case(name, "lark", pse.grammars.path(name).read_text(), texts,
                        args.mutations, rng))
    texts = [ambiguous_text(rng) for _ in range(args.texts)]
    out.append(Case("ambiguous", "lark", AMBIGUOUS, texts, args.mutations, rng))
    if args.gbnf:
        folder = Path(args.gbnf)
        if not folder.is_dir():
            sys.exit(f"--gbnf {folder}: no such folder")
        for name, texts in TEXTS.items():
            path = folder / name
            if not path.is_file():
                print(f"{path} is missing: skipped", file=sys.stderr)
                continue
            out.append(Case(name, "gbnf", path.read_text(encoding="utf-8"), texts,
                            args.mutations, rng))
    return out


# --- engines: compile a grammar; step = mask + consume of one token ------------------------
# (maskbench's engines, compiling grammars; the verdict at the end: EOS in the mask)

def has_bit(mask, token: int) -> bool:
    return bool((int(mask[0, token >> 5]) >> (token & 31)) & 1)


class Pse(PseEngine):
    def compile(self, case: Case):
        grammar = (pse.Grammar.from_gbnf(case.source) if case.kind == "gbnf"
                   else pse.Grammar(case.source))
        engine = pse.StructuringEngine(self.vocab, mask_memo=self.mask_memo)
        engine.configure(grammar)
        return engine


class LLGuidance(LLGuidanceEngine):
    def compile(self, case: Case):
        from llguidance.gbnf_to_lark import gbnf_to_lark

        text = gbnf_to_lark(case.source) if case.kind == "gbnf" else case.source
        m = self.llg.LLMatcher(self.tok, self.llg.LLMatcher.grammar_from_lark(text),
                               log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def accepts(self, m) -> bool:
        self.fill(m, self.mask, 0)
        return has_bit(self.mask, self.vocab.eos_token_ids[0])


class XGrammar(XGrammarEngine):
    def __init__(self, vocab: pse.Vocabulary) -> None:
        super().__init__(vocab)
        self.eos = vocab.eos_token_ids[0]

    def compile(self, case: Case):
        if case.kind == "gbnf":
            return self.compiler.compile_grammar(case.source)
        return self.compiler.compile_lark(case.source)

    def accepts(self, m) -> bool:
        m.fill_next_token_bitmask(self.mask, 0)
        return has_bit(self.mask, self.eos)


def installed() -> list[str]:
    return ["pse"] + [n for n in ("llguidance", "xgrammar") if importlib.util.find_spec(n)]


def make(name: str, vocab: pse.Vocabulary, mask_memo: int):
    if name == "pse":
        return Pse(vocab, mask_memo)
    if name == "llguidance":
        return LLGuidance(vocab, TOKENIZER)
    if name == "xgrammar":
        return XGrammar(vocab)
    raise SystemExit(f"unknown engine {name!r}: use pse, llguidance, xgrammar")


# --- the run ---------------------------------------------------------------------------------

def run_case(engine, case: Case, streams: list[list[int]], repeat: int) -> dict:
    """One engine on one grammar: compile times (ms), per-token times (µs), verdicts."""
    gc.collect()  # (lark's judging of the texts leaves cycles whose full collection, 50 ms,
    runs = []     # fell in whichever compile or step came next: chess.gbnf's first compile)
    try:
        for _ in range(repeat):
            started = time.perf_counter_ns()
            compiled = engine.compile(case)
            runs.append((time.perf_counter_ns() - started) / 1e6)
    except Exception as e:  # the engine cannot read this grammar
        return {"error": " ".join(f"{type(e).__name__}: {e}".split())[:200]}
    times, verdicts, raised = [], [], []
    for ids in streams:
        m = engine.start(compiled)
        ok = True
        try:
            for token in ids:
                started = time.perf_counter_ns()
                ok = engine.step(m, token)
                times.append((time.perf_counter_ns() - started) / 1e3)
                if not ok:
                    break
            verdicts.append(ok and engine.accepts(m))
        except Exception as e:  # (pse's "too ambiguous": the text counts as refused)
            raised.append(" ".join(f"{type(e).__name__}: {e}".split())[:120])
            verdicts.append(False)
    return {"compile_ms": float(np.median(runs)), "first_ms": runs[0], "times": times,
            "verdicts": verdicts, "raised": raised}


def report(results: dict, all_cases: list[Case]) -> None:
    print("| grammar | engine | texts (valid) | agree with lark | tokens | mean µs | p50 µs | "
          "p99 µs | compile p50 ms | first compile ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for case in all_cases:
        n_valid = sum(case.labels)
        for name, per_case in results.items():
            r = per_case[case.name]
            if "error" in r:
                print(f"| {case.name} | {name} | {len(case.texts)} ({n_valid}) | cannot read "
                      f"the grammar: {r['error']} | | | | | | |")
                continue
            agree = sum(v == label for v, label in zip(r["verdicts"], case.labels))
            us = np.asarray(r["times"])
            print(f"| {case.name} | {name} | {len(case.texts)} ({n_valid}) | {agree} | "
                  f"{len(us):,} | {us.mean():.1f} | {np.percentile(us, 50):.1f} | "
                  f"{np.percentile(us, 99):.1f} | {r['compile_ms']:.2f} | {r['first_ms']:.2f} |")
    for case in all_cases:
        for name, per_case in results.items():
            raised = per_case[case.name].get("raised")
            if raised:
                print(f"\n{name} raised on {len(raised)} {case.name} texts (counted as refused): "
                      f"{raised[0]}")
    names = list(results)
    if len(names) < 2:
        return
    base = names[0]
    print(f"\nRatios other / {base} (per token over each engine's own streams; compile p50):\n")
    print("| grammar | engine | mean | p99 | compile p50 |")
    print("| --- | --- | --- | --- | --- |")
    for case in all_cases:
        a = results[base][case.name]
        for name in names[1:]:
            b = results[name][case.name]
            if "error" in a or "error" in b:
                continue
            ta, tb = np.asarray(a["times"]), np.asarray(b["times"])
            print(f"| {case.name} | {name} / {base} | {tb.mean() / ta.mean():.2f}x | "
                  f"{np.percentile(tb, 99) / np.percentile(ta, 99):.2f}x | "
                  f"{b['compile_ms'] / a['compile_ms']:.2f}x |")


def growth(engines: dict, vocab: pse.Vocabulary, operands: int,
           only: set[str] | None = None, repeat: int = 11) -> None:
    """Per token time over each quarter of one long text of AMBIGUOUS (a sum and product of
    `operands` numbers, seeded), of RIGHT_AMBIGUOUS (`operands` a's), of STACKED
    (`operands` a's, then as many b's and c's, seeded), of INTERLEAVED (`operands` a's,
    then "ab" one time fewer), of POP_THROUGH and NESTED_ENDS (`operands` a's) and of
    CALLING_EACH_OTHER (`operands` // 10 a's) and of THREE_RULES (a few letters, then
    `operands` // 40 blocks of six a's and a c) and of LONG_COUNT (`operands` * 2 random
    words): whether an engine's cost grows with the text. `only`: the names of the texts to
    time (None: all); `repeat`: compiles per text, of which the median is reported."""
    rng = random.Random(1)
    sums = str(rng.randrange(100)) + "".join(rng.choice("+*") + str(rng.randrange(100))
                                             for _ in range(operands - 1))
    closes = "".join(rng.choice("bc") for _ in range(operands))
    words = " ".join("".join(rng.choice("etaoinshrdlu") for _ in range(rng.randint(1, 9)))
                     for _ in range(operands * 2))
    for name, source, text in [("ambiguous", AMBIGUOUS, sums),
                               ("right ambiguous", RIGHT_AMBIGUOUS, "a" * operands),
                               ("stacked", STACKED, "a" * operands + closes),
                               ("interleaved", INTERLEAVED,
                                "a" * operands + "ab" * (operands - 1)),
                               ("pop through", POP_THROUGH, "a" * operands),
                               ("nested ends", NESTED_ENDS, "a" * operands),
                               ("calling each other", CALLING_EACH_OTHER,
                                "a" * max(1, operands // 10)),
                               ("three rules", THREE_RULES,
                                "aabcbabacbaacc" + "aaaaaac" * max(1, operands // 40)),
                               ("long count", LONG_COUNT, f'"{words}"')]:
        if only is not None and name not in only:
            continue
        ids = vocab.encode(text)
        case = SimpleNamespace(kind="lark", source=source, name=f"{name}, one long text")
        print(f"\nOne text of {operands} operands ({len(ids)} tokens) of `{name}`: mean µs "
              "per token over each quarter, and over the text\n")
        print("| engine | 1st quarter | 2nd | 3rd | 4th | mean | p99 | accepted | compile ms |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for engine_name, engine in engines.items():
            r = run_case(engine, case, [ids], repeat)  # (compile: the median, as above)
            if "error" in r:
                print(f"| {engine_name} | cannot read the grammar: {r['error']} | | | | | | | |")
                continue
            times = np.asarray(r["times"])
            print(f"| {engine_name} | "
                  + " | ".join(f"{q.mean():.1f}" for q in np.array_split(times, 4))
                  + f" | {times.mean():.1f} | {np.percentile(times, 99):.1f} | "
                  f"{r['verdicts'][0]} | {r['compile_ms']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gbnf", help="a folder holding llama.cpp's GBNF grammars")
    ap.add_argument("--texts", type=int, default=100, help="random texts per bundled grammar")
    ap.add_argument("--mutations", type=int, default=3, help="edited texts per valid text")
    ap.add_argument("--repeat", type=int, default=11,
                    help="compiles per grammar and engine (their median is reported)")
    ap.add_argument("--mask-memo", type=int, default=512, help="pse's mask memo (0: off)")
    ap.add_argument("--engines", default=",".join(installed()))
    ap.add_argument("--long", type=int, default=0, metavar="N",
                    help="also time one long text of each of `ambiguous`, `right ambiguous`, "
                         "`stacked`, `interleaved`, `pop through`, `nested ends` (N operands) "
                         "and `calling each other` (N / 10), N / 40 blocks of `three rules`, "
                         "and 2N words of `long count`, "
                         "by quarters")
    ap.add_argument("--only-long", action="store_true",
                    help="time the long texts only (needs --long), not the grammars' texts")
    ap.add_argument("--long-texts", metavar="NAMES",
                    help="with --long, time only these long texts (names as above, "
                         "comma-separated)")
    args = ap.parse_args()
    if args.only_long and not args.long:
        ap.error("--only-long needs --long N")
    only = None
    if args.long_texts is not None:
        only = set(args.long_texts.split(","))
        unknown = only - set(LONG_TEXTS)
        if unknown or not args.long:
            ap.error(f"--long-texts needs --long N and names among {', '.join(LONG_TEXTS)}"
                     + (f" (not {', '.join(sorted(unknown))})" if unknown else ""))
    if not TOKENIZER.is_file():
        sys.exit(f"{TOKENIZER} is missing: set PSE_SHARED to the shared folder")
    vocab = pse.Vocabulary.from_file(TOKENIZER)
    engines = {name: make(name, vocab, args.mask_memo) for name in args.engines.split(",")}
    if args.only_long:
        growth(engines, vocab, args.long, only, args.repeat)
        return
    rng = random.Random(0)
    all_cases = cases(args, rng)
    streams = {case.name: [vocab.encode(t) for t in case.texts] for case in all_cases}
    print(f"{len(all_cases)} grammars, Llama 3 tokenizer, pse {pse.__version__}, "
          + ", ".join(f"{n} {importlib.metadata.version(n)}" for n in engines if n != "pse")
          + f"; pse mask memo {args.mask_memo}; compile median of {args.repeat}\n")
    results: dict = {name: {} for name in engines}
    names = list(engines)
    for k, case in enumerate(all_cases):
        for name in names[k % len(names):] + names[:k % len(names)]:
            results[name][case.name] = run_case(engines[name], case, streams[case.name],
                                                args.repeat)
    report(results, all_cases)
    if args.long:
        growth(engines, vocab, args.long, only, args.repeat)


if __name__ == "__main__":
    main()
