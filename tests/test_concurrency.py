"""One compiled structure shared by engines in several threads: every mask equals the one a
single thread computes on its own, with the caches (slice entries, the mask memo, the frame
arena) built and evicted concurrently."""

from __future__ import annotations

import json
import random
import sys
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import pse
from conftest import SHARED, shared_vocab
from pse import JsonSchema, StructuringEngine, Vocabulary, fill_next_token_bitmask_par
from pse._core import slices as core_slices

N_THREADS = 3


def synthetic_vocab() -> Vocabulary:
    """Every byte, plus pieces of maskbench instances: a few thousand tokens, built in
    milliseconds (the AddressSanitizer run, which leaves the real tokenizers out, uses it)."""
    pieces = set()
    for _, texts in maskbench_cases(40, seed=5):
        for text in texts:
            data = text.encode()
            for n in (2, 3, 5, 8):
                pieces.update(data[i:i + n] for i in range(0, len(data) - n + 1, n))
    tokens = [bytes([b]) for b in range(256)] + sorted(pieces)[:6000] + [b"<eos>"]
    return Vocabulary.from_tokens(tokens, eos_token_ids=[len(tokens) - 1],
                                  special_token_ids=[len(tokens) - 1])


@pytest.fixture(scope="module", params=["llama3", "synthetic"])
def vocab(request):
    return shared_vocab("llama3") if request.param == "llama3" else synthetic_vocab()


@pytest.fixture
def busy_switching():
    """Switch threads as often as the interpreter allows, so the threads interleave inside
    cache look-ups and builds, not only around them."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def maskbench_cases(n_files: int, seed: int) -> list[tuple[dict, list[str]]]:
    """(schema, valid instances as compact JSON) of maskbench files whose schema pse compiles."""
    folder = SHARED / "data" / "maskbench"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found: set PSE_SHARED to the shared data folder")
    files = sorted(folder.glob("*.json"))
    random.Random(seed).shuffle(files)
    cases = []
    for path in files:
        data = json.loads(Path(path).read_text())
        texts = [json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)
                 for t in data.get("tests", []) if t.get("valid")]
        if not texts:
            continue
        try:
            JsonSchema(data["schema"]).compile()
        except pse.PSEError:
            continue
        cases.append((data["schema"], texts[:3]))
        if len(cases) == n_files:
            break
    return cases


def reference_masks(structure, vocab, streams: list[list[int]]) -> list[list[np.ndarray]]:
    """Masks along each stream from one engine in this thread, with no memo."""
    engine = StructuringEngine(vocab, mask_memo=0)
    engine.configure(structure)
    out = []
    for tokens in streams:
        engine.reset()
        masks = []
        for tid in tokens:
            masks.append(engine.compute_mask().copy())
            assert engine.consume_token(tid)
        masks.append(engine.compute_mask().copy())
        out.append(masks)
    return out


def run_threads(target, n: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(i):
        try:
            target(i)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def cold_caches(monkeypatch, vocab, max_shared: int) -> None:
    """An empty slice store for the vocabulary, holding at most `max_shared` entries, so that
    entries are built and evicted while the threads run."""
    monkeypatch.setattr(vocab.trie, "shared_slices", OrderedDict())
    monkeypatch.setattr(core_slices, "MAX_SHARED_SLICES", max_shared)


def test_threads_share_one_structure(vocab, monkeypatch, busy_switching):
    cases = maskbench_cases(6, seed=1)
    structures = [pse.Json()] + [JsonSchema(schema) for schema, _ in cases]
    streams = [[vocab.encode(t) for t in texts] for _, texts in cases]
    streams = [[s for ss in streams for s in ss][:6]] + streams  # Json() replays them all
    refs = [reference_masks(st, vocab, ss) for st, ss in zip(structures, streams)]
    # the same structures again, compiled anew: fresh arenas, caches and memos, built by the
    # threads (small memo and slice store: constant eviction)
    cold_caches(monkeypatch, vocab, max_shared=24)
    fresh = [pse.Json()] + [JsonSchema(schema) for schema, _ in cases]
    for st in fresh:
        st.compile()

    def work(i: int) -> None:
        rng = random.Random(i)
        order = list(range(len(fresh)))
        rng.shuffle(order)
        for k in order:
            engine = StructuringEngine(vocab, mask_memo=[0, 3][i % 2])
            engine.configure(fresh[k])
            for s, tokens in enumerate(streams[k]):
                engine.reset()
                pos = 0
                while pos <= len(tokens):
                    got = engine.compute_mask()
                    assert np.array_equal(got, refs[k][s][pos]), (i, k, s, pos)
                    if pos == len(tokens):
                        break
                    assert engine.consume_token(tokens[pos])
                    pos += 1
                    if pos > 2 and rng.random() < 0.2:  # go back a little and redo
                        back = rng.randint(1, min(pos, 3))
                        engine.rollback(back)
                        pos -= back

    errors = run_threads(work, N_THREADS)
    assert not errors, errors[0]


def test_threads_share_a_structure_with_unique_arrays(vocab, busy_switching):
    """Unique arrays store the items seen in the structure (committed ones) and per engine
    (during a walk): engines in threads commit and walk at once."""
    schema = {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "any": {"type": "array", "uniqueItems": True}}}
    texts = ['{"tags":["a","b","ab","ba","a b"],"any":[1,true,null,[1],{"a":1},"1"]}',
             '{"tags":["x","y"],"any":[false,0.5,[],{}]}', '{"any":[[true],[false],2]}']
    streams = [vocab.encode(t) for t in texts]
    ref = reference_masks(JsonSchema(schema), vocab, streams)
    shared = JsonSchema(schema)

    def work(i: int) -> None:
        engine = StructuringEngine(vocab, mask_memo=[0, 3][i % 2])
        engine.configure(shared)
        for s, tokens in enumerate(streams):
            engine.reset()
            for pos, tid in enumerate(tokens + [None]):
                assert np.array_equal(engine.compute_mask(), ref[s][pos]), (i, s, pos)
                if tid is not None:
                    assert engine.consume_token(tid)

    errors = run_threads(work, N_THREADS)
    assert not errors, errors[0]


def test_parallel_batches_from_threads(vocab, monkeypatch, busy_switching):
    cases = maskbench_cases(3, seed=2)
    schema = cases[0][0]
    tokens = [vocab.encode(t) for t in cases[0][1]]
    ref = reference_masks(JsonSchema(schema), vocab, tokens)
    cold_caches(monkeypatch, vocab, max_shared=8)
    shared = JsonSchema(schema)
    n_words = (vocab.size + 31) // 32

    def work(i: int) -> None:
        engines = []
        for _ in tokens:
            e = StructuringEngine(vocab, mask_memo=[0, 2][i % 2])
            e.configure(shared)
            engines.append(e)
        batch = np.zeros((len(engines), n_words), dtype=np.int32)
        pos = 0
        while True:
            active = [(s, e) for s, e in enumerate(engines) if pos <= len(tokens[s])]
            if not active:
                break
            fill_next_token_bitmask_par([e for _, e in active], batch, n_threads=2)
            for row, (s, e) in enumerate(active):
                assert np.array_equal(batch[row], ref[s][pos]), (i, s, pos)
                if pos < len(tokens[s]):
                    assert e.consume_token(tokens[s][pos])
            pos += 1

    errors = run_threads(work, 2)
    assert not errors, errors[0]


def test_same_engine_twice_in_a_batch(vocab):
    """One engine in two rows of a batch would give its walk buffers to two threads at once:
    both rows get its mask."""
    schema, texts = maskbench_cases(1, seed=3)[0]
    tokens = vocab.encode(texts[0])
    a = StructuringEngine(vocab, mask_memo=0)
    a.configure(JsonSchema(schema))
    b = a.copy()
    b.consume_tokens(tokens[:3])
    ref_a, ref_b = a.compute_mask(), b.compute_mask()
    batch = np.zeros((5, (vocab.size + 31) // 32), dtype=np.int32)
    fill_next_token_bitmask_par([a, b, a, a, b], batch, n_threads=2)
    for row, ref in zip(batch, [ref_a, ref_b, ref_a, ref_a, ref_b]):
        assert np.array_equal(row, ref)


def test_fast_forward_during_a_mask_walk_is_refused(vocab):
    """The fast-forward's check that a token could run on past the forced bytes walks with
    the engine's walk buffers too: while a mask walk holds them (in another thread), it gets
    the clear error, not a share of them; after, the same forced tokens as before."""
    engine = StructuringEngine(vocab, mask_memo=0)
    engine.configure(pse.Regex("[ ][a-z]+[.]"))  # (" " is forced, and held back)
    forced = engine.compute_ff_tokens()
    engine.matcher._hold()
    try:
        with pytest.raises(RuntimeError, match="another thread"):
            engine.compute_ff_tokens()
    finally:
        engine.matcher._release()
    assert engine.compute_ff_tokens() == forced


def test_one_engine_in_two_threads_is_refused(vocab, busy_switching):
    """An engine is one sequence: a second thread asking it for a mask while a walk is under
    way gets a clear error, never a corrupted mask."""
    engine = StructuringEngine(vocab, mask_memo=0)
    engine.configure(pse.Json())
    ref = engine.compute_mask().copy()
    seen = []

    def work(i: int) -> None:
        for _ in range(300):
            try:
                got = engine.compute_mask()
            except RuntimeError as exc:
                assert "another thread" in str(exc)
                seen.append(True)
                continue
            assert np.array_equal(got, ref)

    errors = run_threads(work, 2)
    assert not errors, errors[0]
