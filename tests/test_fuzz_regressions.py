"""Inputs the fuzzers (tests/test_fuzz.py, fuzz/fuzz_pse.py) found, kept as regression tests."""

from __future__ import annotations

import numpy as np
import pytest

import pse
from pse import JsonSchema, SchemaError, StructuringEngine, Vocabulary


@pytest.mark.parametrize("schema", [
    {"type": None, "anyOf": "0"}, {"type": None, "const": None}, {"format": []},
    {"pattern": []}, {"$ref": []}, {"dependentRequired": True}, {"patternProperties": True},
    {"prefixItems": True}, {"required": True}, {"properties": "0"}, {"properties": True},
    {"type": False}, {"minProperties": None}, {"$ref": None},
    {"items": [{"$ref": 3}]}, {"properties": {"a": {"minLength": -1}}},
    {"anyOf": []}, {"allOf": [{"not": 1}]},
])
def test_malformed_keywords_are_schema_errors(schema):
    """Hypothesis found these raising TypeError/AttributeError inside the compiler."""
    with pytest.raises(SchemaError, match=r"^#"):
        JsonSchema(schema)


def test_long_bounded_repetition_compiles_within_the_budget():
    """atheris: a maskbench pattern mutated to `[A-Fa-f\\d]{9924}` spent minutes in DFA
    minimization (Moore's refinement is quadratic on a chain); Hopcroft's is not."""
    schema = {"type": "string", "pattern": "^[A-Fa-f\\d]{3000}$"}
    structure = JsonSchema(schema)
    assert structure.matches('"' + "aB3" * 1000 + '"')
    assert not structure.matches('"' + "aB3" * 999 + 'aB"')


def test_eos_after_eos_agrees_with_the_mask():
    """hypothesis: a finished sequence's mask allows EOS (for padding in a batch), but
    consuming that EOS was refused."""
    vocab = Vocabulary.from_tokens([b"\x00", b"0"], eos_token_ids=[0], special_token_ids=[0])
    engine = StructuringEngine(vocab)
    engine.configure(pse.Json())
    assert engine.consume_token(1) and engine.consume_token(0) and engine.is_finished
    assert engine.allowed_token_ids().tolist() == [0]
    assert engine.consume_token(0) and engine.is_finished
    engine.rollback(1)  # the second EOS: still finished
    assert engine.is_finished and engine.allowed_token_ids().tolist() == [0]
    engine.rollback(1)  # the first: open again
    assert not engine.is_finished and not engine.consume_token(1)  # "00" is not JSON
    assert engine.copy().consume_token(0)


@pytest.mark.parametrize("call, arg, error", [
    ("rollback", 2147483648.0, TypeError),
    ("rollback", 2**70, ValueError),
    ("consume_token", 2**70, ValueError),
    ("consume", 2**70, ValueError),
])
def test_huge_arguments_are_value_or_type_errors(call, arg, error):
    """hypothesis: ints beyond C ranges raised OverflowError."""
    engine = StructuringEngine(Vocabulary.from_tokens(["a", "b"]))
    engine.configure(pse.Phrase("ab"))
    with pytest.raises(error):
        getattr(engine, call)(arg)
    assert np.array_equal(engine.allowed_token_ids(), [0])
