"""Every limit raises a typed error naming the limit (and where it was hit), never a hang, a
RecursionError or a slow mask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pse
from pse import (AnyOf, Chain, Forward, Grammar, GrammarError, JsonSchema, Optional, Phrase,
                 SchemaError, StructuringEngine, Vocabulary, compiler, json_schema, limits)
from pse._core.stepper import consume_tokens


def nested(depth: int, wrap) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = wrap(schema)
    return schema


# --- nesting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("wrap", [
    lambda s: {"type": "array", "items": s},
    lambda s: {"type": "object", "properties": {"a": s}},
    lambda s: {"anyOf": [{"type": "null"}, s]},
    lambda s: {"allOf": [{"minItems": 1}, {"type": "array", "items": s}]},
])
def test_schema_nesting_names_the_pointer(wrap):
    deep = nested(json_schema.common.MAX_SCHEMA_DEPTH + 5, wrap)
    with pytest.raises(SchemaError, match="MAX_SCHEMA_DEPTH") as info:
        JsonSchema(deep)
    pointer = str(info.value).split(":")[0]
    assert pointer.startswith("#/") and pointer.count("/") >= json_schema.common.MAX_SCHEMA_DEPTH // 2


@pytest.mark.parametrize("wrap", [
    lambda s: {"type": "array", "items": s},
    lambda s: {"type": "object", "properties": {"a": s, "b": {"type": "string"}},
               "required": ["a"]},
])
def test_schema_nesting_below_the_limit_compiles(wrap):
    """A schema nested just below the limit compiles (into machines nested below MAX_DEPTH)
    with Python's default recursion limit, and works."""
    assert sys.getrecursionlimit() <= 1000
    schema = nested(json_schema.common.MAX_SCHEMA_DEPTH - 2, wrap)
    engine = StructuringEngine(Vocabulary.from_tokens(["[", "]", "1", '{"a":', "}", ","]))
    engine.configure(schema)
    assert engine.compute_mask().any()


def test_contains_beside_a_large_item_count():
    schema = {"type": "array", "contains": {"const": 1}, "minContains": 100, "maxItems": 100}
    with pytest.raises(SchemaError, match="MAX_CONTAINS_STATES") as info:
        JsonSchema(schema)
    assert str(info.value).startswith("#/contains")


def test_machine_nesting():
    m = Phrase("a")
    for _ in range(compiler.MAX_DEPTH + 10):
        m = Chain(Phrase("("), m | Phrase("b"), Phrase(")"))
    with pytest.raises(GrammarError, match="MAX_DEPTH"):
        m.compile()


def test_long_forward_chains_compile():
    """Rules are built one after the other: a chain of Forwards far longer than the recursion
    limit compiles."""
    m = Phrase("a")
    for _ in range(3000):
        f = Forward()
        f.set(Chain(Phrase("("), m | Phrase("b"), Phrase(")")))
        m = f
    assert m.matches("(" * 3000 + "b" + ")" * 3000)


def test_left_call_chains():
    m = Phrase("a")
    for _ in range(compiler.MAX_LEFT_CALLS + 10):
        f = Forward()
        f.set(Chain(m, Phrase(")")))
        m = f
    with pytest.raises(GrammarError, match="MAX_LEFT_CALLS"):
        m.compile()


def test_entries(monkeypatch):
    monkeypatch.setattr(compiler, "MAX_ENTRIES", 10)
    inner = Forward()
    inner.set(AnyOf(*[Phrase(c) for c in "abcdefghijkl"]))
    with pytest.raises(GrammarError, match="MAX_ENTRIES"):
        Chain(Optional(inner), inner, Phrase("x")).compile()


# --- the compile-time budget -----------------------------------------------------------------

def test_budget_stops_a_long_determinization(monkeypatch):
    monkeypatch.setattr(limits, "COMPILE_SECONDS", 0.002)
    # about 8,000 DFA states: some 15 ms to build, the NFA before them a tenth of a ms
    with pytest.raises(GrammarError, match="COMPILE_SECONDS") as info:
        pse.Regex(r"[ab]*a[ab]{12}")
    # (the regex compiler is the outermost compile here: its budget names the regex)
    assert "compiling the regex '[ab]*a[ab]{12}' took more than" in str(info.value)


def test_budget_in_a_schema_names_the_pointer(monkeypatch):
    monkeypatch.setattr(limits, "COMPILE_SECONDS", 0.0)
    with pytest.raises(SchemaError, match="COMPILE_SECONDS") as info:
        JsonSchema({"type": "object", "properties": {"a": {"pattern": "x[ab]*a[ab]{9}"}}})
    assert str(info.value).startswith("#")


def test_budget_stops_opposites_of_nested_conditions(monkeypatch):
    """The opposite of an if/then whose `if` and `then` are one schema, nested: twice the
    work per level (26 levels ran for minutes past the budget, which negation never read)."""
    monkeypatch.setattr(limits, "COMPILE_SECONDS", 0.5)
    schema: object = {"type": "string"}
    for _ in range(40):
        schema = {"if": schema, "then": schema}
    with pytest.raises(SchemaError, match="COMPILE_SECONDS"):
        JsonSchema(schema)


def test_budget_covers_reading_a_grammar(monkeypatch):
    """Reading Lark's rules into BNF (a count of 5,000 is 5,000 rules) counts in the
    compile's time: a reader that never looked at the clock ran a quadratic repeat for
    minutes past COMPILE_SECONDS."""
    from pse import lark_reader

    monkeypatch.setattr(limits, "COMPILE_SECONDS", 0.0)
    with limits.compile_budget("a grammar"):
        with pytest.raises(GrammarError, match="COMPILE_SECONDS"):
            lark_reader.read_lark('start: ["a"] ~ 5000', "start", [], None)


def test_budget_pauses_collection_until_the_outermost_compile_ends():
    """Garbage collection is off inside a compile and back on after it, error or not; a
    compile inside another shares its budget (the inner end changes nothing)."""
    import gc

    assert gc.isenabled()
    with limits.compile_budget("outer"):
        assert not gc.isenabled()
        with limits.compile_budget(lambda: pytest.fail("an inner compile is not named")):
            assert not gc.isenabled()
        assert not gc.isenabled()
        assert limits._local.budget.what == "outer"
    assert gc.isenabled() and limits._local.budget is None
    with pytest.raises(ValueError):
        with limits.compile_budget(lambda: "named late"):
            assert limits._local.budget.what == "named late"
            raise ValueError
    assert gc.isenabled() and limits._local.budget is None
    gc.disable()  # (a process that keeps collection off: the compile leaves it off)
    try:
        with limits.compile_budget("x"):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_budget_covers_the_machine_compiler(monkeypatch):
    structure = Chain(Phrase("a"), AnyOf(Phrase("b"), Phrase("c")))
    monkeypatch.setattr(limits, "COMPILE_SECONDS", 0.0)
    with pytest.raises(GrammarError, match="COMPILE_SECONDS"):
        structure.compile()
    monkeypatch.setattr(limits, "COMPILE_SECONDS", None)
    assert structure.matches("ab")


# A schema crafted to explode: ten anyOfs of four objects of six properties, all holding at
# once, multiply out into 4**10 merged objects. It is refused, naming the limit it reached, and
# the memory the compile took stays within COMPILE_MEMORY (lowered here so that the test
# reaches it soon; in a fresh process, so that the peak is this compile's).
EXPLODING = {"allOf": [{"anyOf": [{"type": "object", "required": [f"q{j}_{i}_0"],
                                   "properties": {f"q{j}_{i}_{x}": {"type": "integer"}
                                                  for x in range(6)}}
                                  for i in range(4)]} for j in range(10)]}
CRAFTED = f"""
import json
import pse
from pse import limits
limits.COMPILE_MEMORY = 128 << 20
before = limits.resident_bytes()
try:
    pse.JsonSchema({json.dumps(EXPLODING)}, property_order="any")
    error = None
except pse.SchemaError as e:
    error = str(e)
# (VmHWM, not ru_maxrss: that one keeps the peak of the process this one was forked from)
status = open("/proc/self/status").read()
peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
print(json.dumps({{"error": error, "grown": peak - before}}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_a_schema_crafted_to_explode_stays_inside_the_memory_limit(tmp_path):
    # (this test's pse: the one imported here, built in place or installed)
    env = dict(os.environ, PYTHONPATH=str(Path(pse.__file__).parent.parent))
    out = subprocess.run([sys.executable, "-c", CRAFTED], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["error"] is not None and "COMPILE_MEMORY" in result["error"]
    assert result["error"].startswith("#/anyOf/0/anyOf/")  # the pointer being compiled
    # the limit, and what the compile takes between two looks at memory
    assert result["grown"] < (128 + 16) << 20


def test_memory_others_take_during_a_compile_is_not_the_compiles(monkeypatch):
    """A buffer (model weights, a tensor) allocated while a schema compiles is resident
    memory of the process, not of the compile: the limit is not reached by it."""
    monkeypatch.setattr(limits, "COMPILE_MEMORY", 128 << 20)
    monkeypatch.setattr(limits, "MEMORY_CHECK_EVERY", 16)
    held, calls, grown, check = [], [0], [0], limits.check_budget

    def check_and_allocate() -> None:
        calls[0] += 1
        if calls[0] == 100:
            before = limits.resident_bytes()
            buffer = bytearray(300 << 20)
            buffer[::4096] = b"x" * len(buffer[::4096])  # (resident: every page touched)
            held.append(buffer)
            grown[0] = limits.resident_bytes() - before
        check()

    monkeypatch.setattr(limits, "check_budget", check_and_allocate)
    schema = {"type": "object", "properties": {
        f"p{i}": {"type": "string", "pattern": "^[a-z]{2,5}[0-9]+$"} for i in range(300)}}
    assert JsonSchema(schema).matches('{"p0":"ab1"}')
    assert held and calls[0] > 200  # (memory looked at many times after the buffer)
    # the buffer made the process's resident memory grow past the limit (measured around the
    # allocation: over the whole compile, memory others free, such as ASan's quarantine, can
    # hide it)
    assert grown[0] > 2 * limits.COMPILE_MEMORY


def test_resident_bytes():
    assert 0 < limits.resident_bytes() < 1 << 40


# --- live parser states ----------------------------------------------------------------------

def mixed_pending_calls() -> Forward:
    """S -> 'a' S 'b' | 'a' S S | 'a': the calls still to come, a b's or another S's,
    interleave, and each a pops every stack below the top: the states a step makes before
    they merge grow with the a's read (past max_live_states, the step merges what it has)."""
    s = Forward()
    s.set(AnyOf(Chain(Phrase("a"), s, Phrase("b")), Chain(Phrase("a"), s, s), Phrase("a")))
    return s


@pytest.fixture
def live_bound():
    old = limits.max_live_states()
    limits.set_max_live_states(64)
    yield 64
    limits.set_max_live_states(old)


def test_live_states_bounded(live_bound):
    """Live states that differ in more than their stacks (here where a run of a's may end:
    one state per a read) do not merge: past the bound, a GrammarError."""
    engine = StructuringEngine(Vocabulary.from_tokens(["a", "b", "c"]))
    engine.configure(Grammar.from_lark("start: X+\nX: /a{1,200}/\n"))
    n = 0
    with pytest.raises(GrammarError, match="max_live_states"):
        while n < 10 * live_bound:  # (a structure that stopped growing fails, not hangs)
            engine.compute_mask()
            assert engine.consume_token(0)
            n += 1
    assert 3 * n >= live_bound // 2  # (grown to the bound, not stopped at the first a's)
    # the engine is unchanged by the refused step and can go back
    engine.rollback(n)
    assert engine.consume_token(0) and engine.compute_mask().any()


def test_a_step_past_the_bound_merges_what_it_has(live_bound):
    """A step that pops a union of stacks of every depth makes a state per member before
    they merge: it merges them once made, or past 16 times the bound what it has made so far,
    and goes on (it was "too ambiguous" at the 24th a under a bound of 64, and masks from the
    258th), as do the roots a mask starts from (test_grammar_random passes 16 times the
    bound)."""
    engine = StructuringEngine(Vocabulary.from_tokens(["a", "b", "c"]))
    engine.configure(mixed_pending_calls())
    for n in range(10 * live_bound):
        assert set(engine.allowed_token_ids().tolist()) == ({0, 1} if n > 1 else {0}), n
        assert engine.consume_token(0)
    assert engine.consume_token(1)  # (a b closes the last call)


@pytest.mark.parametrize("bound", [2, 3, 64])
def test_a_step_left_past_the_bound_is_an_error(bound):
    """A step merges the states it makes once it has made them (16 times the bound may be
    made on the way): where more than the bound is left, a GrammarError, also under a bound
    below the 4 states from which a set merges. Here a run of a's may end after any a, one
    state per a read, and steppers (not copied into an engine's checked live set) see it."""
    old = limits.max_live_states()
    limits.set_max_live_states(bound)
    try:
        live = Grammar.from_lark("start: X+\nX: /a{1,200}/\n").get_steppers()
        with pytest.raises(GrammarError, match="max_live_states"):
            for _ in range(10 * bound):
                live = consume_tokens(live, [b"a"])
                assert len(live) <= bound
    finally:
        limits.set_max_live_states(old)


def test_live_state_bound_argument():
    for bad in (0, -1, 1.5, True, "10", 2**31, 10**12):  # (the core's bound is a C int)
        with pytest.raises(ValueError):
            limits.set_max_live_states(bad)
