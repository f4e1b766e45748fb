"""Compiling off the calling thread: StructuringEngine.configure_async, pse.compile and
pse.compile_async give the engines a synchronous configure gives."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pse
from pse import JsonSchema, SchemaError, StructuringEngine, Vocabulary

TOKENS = ['{"', "a", '":', "1", "2", "3", ",", "}", '"', "b", "x", "<eos>"]
VOCAB = Vocabulary.from_tokens(TOKENS, eos_token_ids=[11], special_token_ids=[11])
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer", "maximum": 20}},
          "required": ["a"], "additionalProperties": False}
TEXT = '{"a":12}'


def masks_along(engine: StructuringEngine, text: str) -> list[np.ndarray]:
    """The mask before each token of `text`, then after the last."""
    masks = []
    for token in VOCAB.encode(text):
        masks.append(engine.compute_mask().copy())
        assert engine.consume_token(token)
    masks.append(engine.compute_mask().copy())
    return masks


def reference_masks() -> list[np.ndarray]:
    engine = StructuringEngine(VOCAB)
    engine.configure(SCHEMA)
    return masks_along(engine, TEXT)


def gated_executor() -> tuple[ThreadPoolExecutor, threading.Event]:
    """A one-thread executor kept busy until the event is set: what is submitted waits."""
    pool = ThreadPoolExecutor(max_workers=1)
    gate = threading.Event()
    pool.submit(gate.wait)
    return pool, gate


def test_configure_async_gives_the_engine_configure_gives():
    engine = StructuringEngine(VOCAB)
    future = engine.configure_async(SCHEMA)
    assert future.result(timeout=60) is engine
    for got, want in zip(masks_along(engine, TEXT), reference_masks(), strict=True):
        assert np.array_equal(got, want)


def test_using_the_engine_before_the_compile_is_done_waits_for_it():
    pool, gate = gated_executor()
    engine = StructuringEngine(VOCAB)
    future = engine.configure_async(SCHEMA, executor=pool)
    assert not future.done()
    threading.Timer(0.05, gate.set).start()
    masks = masks_along(engine, TEXT)  # waits for the compile, then goes on
    assert future.done()
    for got, want in zip(masks, reference_masks(), strict=True):
        assert np.array_equal(got, want)
    pool.shutdown()


def test_a_failed_compile_raises_once_and_keeps_the_previous_structure():
    engine = StructuringEngine(VOCAB)
    engine.configure(SCHEMA)
    assert engine.consume_tokens(VOCAB.encode('{"a":')) == 3
    before = engine.compute_mask().copy()
    future = engine.configure_async({"type": "object", "required": 5})
    assert isinstance(future.exception(timeout=60), SchemaError)
    with pytest.raises(SchemaError):
        engine.compute_mask()
    assert np.array_equal(engine.compute_mask(), before)   # the error was raised once
    assert engine.consume_tokens(VOCAB.encode("12}")) == 3 and engine.is_accepting()


def test_one_configure_async_at_a_time_and_configure_comes_after():
    pool, gate = gated_executor()
    engine = StructuringEngine(VOCAB)
    first = engine.configure_async({"type": "integer"}, executor=pool)
    with pytest.raises(RuntimeError, match="under way"):
        engine.configure_async(SCHEMA, executor=pool)
    threading.Timer(0.05, gate.set).start()
    engine.configure(SCHEMA)  # waits for the first, then replaces it
    assert first.done()
    for got, want in zip(masks_along(engine, TEXT), reference_masks(), strict=True):
        assert np.array_equal(got, want)
    pool.shutdown()


def test_copy_waits_for_the_compile():
    pool, gate = gated_executor()
    engine = StructuringEngine(VOCAB)
    engine.configure_async(SCHEMA, executor=pool)
    threading.Timer(0.05, gate.set).start()
    other = engine.copy()
    assert other.structure is not None
    assert np.array_equal(other.compute_mask(), reference_masks()[0])
    pool.shutdown()


def test_compile_and_compile_async():
    machine = pse.compile(SCHEMA)
    assert isinstance(machine, JsonSchema) and machine._compiled is not None
    assert pse.compile(machine) is machine
    compiled = pse.compile_async(SCHEMA).result(timeout=60)
    assert compiled._compiled is not None and compiled.matches(TEXT)
    engine = StructuringEngine(VOCAB)
    engine.configure(compiled)
    for got, want in zip(masks_along(engine, TEXT), reference_masks(), strict=True):
        assert np.array_equal(got, want)
    with pytest.raises(TypeError):
        pse.compile(42)
    assert isinstance(pse.compile_async({"type": "object", "required": 5}).exception(60),
                      SchemaError)


def test_compiles_in_the_background_while_masks_are_computed():
    """A server's pattern: the next structures compile while this one's masks are made."""
    schemas = [{"type": "object", "properties": {f"k{i}": {"type": "integer", "maximum": i}},
                "required": [f"k{i}"]} for i in range(20)]
    futures = [pse.compile_async(s) for s in schemas]
    engine = StructuringEngine(VOCAB)
    engine.configure(SCHEMA)
    want = reference_masks()
    for _ in range(20):
        engine.reset()
        for got, expected in zip(masks_along(engine, TEXT), want, strict=True):
            assert np.array_equal(got, expected)
    for schema, future in zip(schemas, futures):
        machine = future.result(timeout=60)
        key = next(iter(schema["properties"]))
        assert machine.matches(f'{{"{key}":0}}')
        assert not machine.matches(f'{{"{key}":{schema["properties"][key]["maximum"] + 1}}}')


def test_a_cancelled_configure_async_leaves_the_engine_as_it_was():
    pool, gate = gated_executor()
    engine = StructuringEngine(VOCAB)
    engine.configure(SCHEMA)
    future = engine.configure_async({"type": "integer"}, executor=pool)
    assert future.cancel()
    assert np.array_equal(engine.compute_mask(), reference_masks()[0])
    engine.configure_async({"type": "integer"}, executor=pool).cancel()
    engine.configure(SCHEMA)  # (waits for nothing: the one under way was cancelled)
    assert engine.structure is not None and engine.consume_tokens(VOCAB.encode(TEXT)) == 6
    gate.set()
    pool.shutdown()


def test_structure_waits_for_the_compile():
    pool, gate = gated_executor()
    engine = StructuringEngine(VOCAB)
    engine.configure_async(SCHEMA, executor=pool)
    threading.Timer(0.05, gate.set).start()
    assert isinstance(engine.structure, JsonSchema)
    pool.shutdown()


def test_used_on_the_compile_thread_it_compiles_there_instead_of_waiting_for_itself():
    """A callback on pse's compile thread that uses an engine whose configure_async is queued
    behind it: the compile runs in the callback (waiting would wait forever)."""
    engine = StructuringEngine(VOCAB)
    done = threading.Event()
    seen = []

    def use_engine(_future):
        seen.append(engine.compute_mask().copy())
        done.set()

    gate = threading.Event()
    blocker = pse.compile_async(SCHEMA)
    blocker.result(timeout=60)
    first = pse.engine._COMPILE_POOL.get().submit(gate.wait)  # keeps the compile thread busy
    later = pse.engine._COMPILE_POOL.get().submit(lambda: None)
    later.add_done_callback(use_engine)  # runs on the compile thread, after `later`
    engine.configure_async(SCHEMA)       # queued behind `later`
    gate.set()
    assert done.wait(60) and first.done()
    assert np.array_equal(seen[0], reference_masks()[0])
