"""Engines, steppers and compiled structures free their memory: 10,000 configure / generate /
drop cycles leave resident memory flat (a bound on growth, not a timing)."""

from __future__ import annotations

import ctypes
import gc
import os
import weakref

import numpy as np
import pytest

import pse
from conftest import shared_vocab
from pse import compiler, json_spelling, regex
from pse._core import slices as core_slices
from pse.bounded_cache import BoundedCache

PAGE = os.sysconf("SC_PAGE_SIZE")
try:
    _LIBC = ctypes.CDLL("libc.so.6")
    _LIBC.malloc_trim  # glibc only
except (OSError, AttributeError):
    _LIBC = None

# Resident growth allowed between the end of the warm-up and the end of the run. Leaking
# one compiled structure per cycle (its tables, frame arena and slice cache: tens of KB) or
# one engine (its walk buffers: a few KB) over the 8,000 measured cycles would be tens of MB.
GROWTH_LIMIT_MB = 4.0


def rss_mb() -> float:
    """Resident memory after a collection, with the C heap's free pages given back (so that
    only memory still in use counts, not how fragmented the heap happens to be)."""
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def small_vocab() -> pse.Vocabulary:
    tokens = ['{"', '"}', '"', ":", ",", "{", "}", "[", "]", "a", "b", "ab", "x", "y", "0",
              "1", "12", "-", ".", "e", " ", "true", "null", "\\", "é", "\xe9a", '":"', "<eos>"]
    return pse.Vocabulary.from_tokens(tokens, eos_token_ids=[len(tokens) - 1],
                                      special_token_ids=[len(tokens) - 1])


def combinator(j: int) -> pse.StateMachine:
    # j varies the terminals, so compile-time caches see new keys until they are full
    word = pse.Character("ab", min_length=1, max_length=j % 7 + 1)
    number = pse.Regex(f"-?[01]{{1,{j % 5 + 1}}}(\\.[01]+)?")
    inner = pse.Forward()
    inner.set(pse.Phrase("[") + pse.Loop(number | word | inner, separator=pse.Phrase(","))
              + pse.Phrase("]"))
    return pse.AnyOf(inner, pse.Phrase("x" * (j % 3 + 1)) + pse.Optional(pse.Phrase("y")))


def schema(j: int) -> dict:
    return {"type": "object",
            "properties": {"a": {"type": "string", "maxLength": j % 9 + 1},
                           "b": {"type": "integer", "minimum": -(j % 4), "maximum": 12},
                           "x": {"enum": ["ab", "b", j % 11]},
                           "y": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}},
            "required": ["a"]}


def generate(engine: pse.StructuringEngine, steps: int, rng: np.random.Generator) -> None:
    """Sample from the mask, copy, roll back: the paths a generation loop takes."""
    for _ in range(steps):
        ids = engine.allowed_token_ids()
        ids = ids[~np.isin(ids, engine.vocab.eos_token_ids)]
        if len(ids) == 0:
            break
        assert engine.consume_token(int(rng.choice(ids)))
    other = engine.copy()
    other.compute_mask()
    if steps:
        engine.rollback(1)
    engine.compute_mask()


class Cycles:
    """Configure / generate / drop cycles. Every cycle configures a new engine; every 8th
    compiles a new structure (a combinator tree or a schema) that replaces the oldest of the 4
    kept, so structures, their slice caches and mask memos are dropped all along too."""

    def __init__(self, vocab: pse.Vocabulary) -> None:
        self.vocab = vocab
        self.rng = np.random.default_rng(0)
        self.structures: list[pse.StateMachine] = []

    def run(self, lo: int, hi: int) -> None:
        for i in range(lo, hi):
            if i % 8 == 0:
                j = i // 8 % 100
                self.structures.append(pse.JsonSchema(schema(j)) if j % 3 == 2
                                       else combinator(j))
                self.structures = self.structures[-4:]
            engine = pse.StructuringEngine(self.vocab, mask_memo=[0, 4, 512][i % 3])
            structure = self.structures[i % len(self.structures)]
            engine.configure(structure)
            generate(engine, 3, self.rng)
            if i % 8 == 1:
                for s in structure.get_steppers():
                    s.consume("[a")


def test_configure_generate_drop_is_flat():
    vocab = small_vocab()
    cycles = Cycles(vocab)
    cycles.run(0, 2_000)  # warm-up: every bounded cache reaches its steady state
    before = rss_mb()
    cycles.run(2_000, 10_000)
    growth = rss_mb() - before
    assert growth < GROWTH_LIMIT_MB, f"resident memory grew by {growth:.1f} MB"
    # the caches that outlive structures are bounded (BoundedCache: tested below)
    for cache in (compiler._DFA_CACHE, compiler._VALUES_CACHE, json_spelling._WITHOUT_NAMES,
                  json_spelling._KEY_TABLES):
        assert isinstance(cache, BoundedCache) and len(cache) <= cache.size
    assert regex.compile_regex.cache_info().currsize <= 1024
    assert len(vocab.trie.shared_slices) <= core_slices.MAX_SHARED_SLICES


def test_llama3_engines_are_freed():
    """Engines and structures with a real vocabulary (a 16 KB mask memo entry per mask, slice
    entries of 128K tokens): configured and dropped over and over, memory stays flat."""
    vocab = shared_vocab("llama3")
    rng = np.random.default_rng(1)

    def one(i: int) -> None:
        engine = pse.StructuringEngine(vocab)
        engine.configure(pse.Json() if i % 2 else schema(i % 4))
        generate(engine, 6, rng)

    for i in range(8):
        one(i)
    before = rss_mb()
    for i in range(8, 40):
        one(i)
    growth = rss_mb() - before
    assert growth < GROWTH_LIMIT_MB, f"resident memory grew by {growth:.1f} MB"


def test_a_structure_goes_with_its_last_engine_without_a_collection():
    """A compiled structure holds its slice caches, and a slice cache the structure's tables,
    not the structure: dropping the structure and its last engine frees both at once (the
    cycle they made left them, and the tables, to the next collection of their generation)."""
    vocab = small_vocab()
    gc.collect()
    gc.disable()
    try:
        for make in (lambda: pse.Chain(pse.Phrase("a"), pse.Regex("[01]+(ab)?")),
                     lambda: pse.JsonSchema({"type": "object",
                                             "properties": {"a": {"type": "string"}}})):
            machine = make()
            engine = pse.StructuringEngine(vocab, mask_memo=4)
            engine.configure(machine)
            generate(engine, 3, np.random.default_rng(2))
            copy = engine.copy()
            structure = weakref.ref(engine._matcher.cache.structure)
            assert structure() is machine.compile()
            del engine, machine
            copy.compute_mask()  # (the copy keeps the structure)
            assert structure() is not None
            del copy
            assert structure() is None
    finally:
        gc.enable()


def test_bounded_cache_keeps_the_most_recently_used():
    """The caches that outlive structures: past `size` entries, the least recently used one
    goes (a read counts as a use), so a long-running process holds at most `size`."""
    cache = BoundedCache(3)
    for k in "abc":
        cache.put(k, k.upper())
    assert cache.get("a") == "A"  # now the most recent: "b" is the oldest
    cache.put("d", "D")
    assert [cache.get(k, "-") for k in "abcd"] == ["A", "-", "C", "D"]
    cache.put("c", None)  # a stored None is found: only a missing key gives the default
    assert cache.get("c", "-") is None and len(cache) == 3
    for i in range(100):
        cache.put(i, i)
    assert len(cache) == 3 and [cache.get(i) for i in (97, 98, 99)] == [97, 98, 99]
    with pytest.raises(ValueError, match="at least 1"):
        BoundedCache(0)
