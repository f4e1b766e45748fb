"""Coverage-guided fuzzing of pse's entry points with atheris (`pip install atheris`).

    python fuzz/fuzz_pse.py schema fuzz/corpus/schema -max_total_time=300
    python fuzz/fuzz_pse.py regex  fuzz/corpus/regex  -max_total_time=300
    python fuzz/fuzz_pse.py tokens fuzz/corpus/schema -max_total_time=300

Targets:
  schema  the input is a JSON Schema text: compile it, then drive an engine over a small
          vocabulary with token ids taken from the input's tail.
  regex   the input is a regex: compile it, compare with `re.fullmatch` on a few strings.
  tokens  the input's bytes become a vocabulary and a token stream for Json().

Only documented exceptions may escape (pse.PSEError; TypeError/ValueError for API misuse);
anything else, a crash of the Cython core or a hang (-timeout=) is a finding. Any crashing
input found goes into tests/test_fuzz_regressions.py. Extra arguments are libFuzzer's.
"""

from __future__ import annotations

import json
import re
import sys
import warnings

import atheris

with atheris.instrument_imports(include=["pse"]):
    import pse

SMALL_VOCAB = pse.Vocabulary.from_tokens(
    ['{"', '"}', '"', ":", ",", "{", "}", "[", "]", "a", "b", "ab", "0", "1", "-", ".", "e",
     "true", "false", "null", "\\", "é", "\xc3", '":"', '","', "<eos>"],
    eos_token_ids=[25], special_token_ids=[25])


def drive(engine: pse.StructuringEngine, ids: bytes) -> None:
    """Masks, consumes and rollbacks; a token is taken exactly when the mask allows it."""
    for b in ids:
        if b == 255:
            try:
                engine.rollback(1)
            except ValueError:
                pass
            continue
        tid = b % engine.vocab.size
        mask = engine.compute_mask()
        allowed = bool((int(mask[tid >> 5]) >> (tid & 31)) & 1)
        if engine.consume_token(tid) != allowed:
            raise AssertionError(f"token {tid}: mask says {allowed}, consume disagrees")


def target_schema(data: bytes) -> None:
    text, _, ids = data.partition(b"\x00")
    try:
        schema = json.loads(text)
    except (ValueError, RecursionError):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            structure = pse.JsonSchema(schema)
            engine = pse.StructuringEngine(SMALL_VOCAB, mask_memo=2)
            engine.configure(structure)
        except pse.PSEError:
            return
    drive(engine, ids[:64])


def target_regex(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    pattern = fdp.ConsumeUnicodeNoSurrogates(40)
    try:
        r = pse.Regex(pattern)
    except pse.GrammarError:
        return
    expected = re.compile(pattern)
    for _ in range(4):
        probe = fdp.ConsumeUnicodeNoSurrogates(8)
        if r.matches(probe) != bool(expected.fullmatch(probe)):
            raise AssertionError(f"regex {pattern!r} on {probe!r}: pse and re disagree")


def target_tokens(data: bytes) -> None:
    cut = len(data) // 2
    tokens = [t for t in data[:cut].split(b"\xff") if t][:64] or [b"{"]
    vocab = pse.Vocabulary.from_tokens(tokens)
    engine = pse.StructuringEngine(vocab, mask_memo=2)
    engine.configure(pse.Json())
    drive(engine, data[cut:][:64])


TARGETS = {"schema": target_schema, "regex": target_regex, "tokens": target_tokens}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(TARGETS)}}} [corpus] [libFuzzer flags]")
    target = TARGETS[sys.argv.pop(1)]
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
