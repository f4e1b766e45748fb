"""pse.serving: the structures requests ask for by flat keys, the cache of compiled ones, and
a request's engine kept in step with its output (what the vLLM processor runs on)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import pse
from pse.serving import (ConstrainedRow, RequestError, ServedGrammar, StructureCache,
                         check_request, check_structure, requested_structure,
                         standard_structure)

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0,
                                                 "maximum": 9}},
          "required": ["n"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "pick", "parameters": SCHEMA}}]


def vocab() -> pse.Vocabulary:
    tokens = ['{"n":', "1", "2", "}", '{"', "n", '":', "a", "b", "<tool_call>", "\n", " ",
              "</tool_call>", '{"name": "pick", "arguments": ', "<eos>", '"']
    return pse.Vocabulary.from_tokens(tokens, eos_token_ids=[14], special_token_ids=[14])


def text_of(engine: pse.StructuringEngine, text: str) -> bool:
    """Whether the engine takes `text`, as the vocabulary encodes it."""
    ids = engine.vocab.encode(text)
    return engine.consume_tokens(ids) == len(ids)


@pytest.mark.parametrize("args", [None, {}, {"other": 1}, {"pse_json_schema": None}])
def test_requests_without_a_structure(args):
    assert requested_structure(args) is None
    assert StructureCache(vocab()).engine(args) is None
    check_request(args)


def test_each_key_builds_its_structure():
    cache = StructureCache(vocab())
    for args, good, bad in [
        ({"pse_json_schema": json.dumps(SCHEMA)}, '{"n":1}', '{"n":12}'),
        ({"pse_json_schema": SCHEMA}, '{"n":2}', '{"n":a'),
        ({"pse_regex": "a+b"}, "aab", "ba"),
        ({"pse_grammar": 'start: "a" "b"+'}, "abb", "aa"),
        ({"pse_gbnf": 'root ::= "a" [b]{1,2}'}, "abb", "abbb"),
        ({"pse_tools": json.dumps(TOOLS), "pse_tool_choice": "required",
          "pse_parallel_tool_calls": 0},
         '<tool_call>\n{"name": "pick", "arguments": {"n":1}}\n</tool_call>',
         '<tool_call>\n{"n":'),
    ]:
        engine = cache.engine(args)
        assert text_of(engine, good) and engine.is_accepting(), args
        assert not text_of(cache.engine(args), bad), args


def test_one_compile_per_content():
    cache = StructureCache(vocab(), size=2)
    as_text = requested_structure({"pse_json_schema": json.dumps(SCHEMA, indent=2)})[0]
    as_object = requested_structure({"pse_json_schema": SCHEMA})[0]
    assert as_text == as_object
    first = cache.engine({"pse_json_schema": SCHEMA})
    second = cache.engine({"pse_json_schema": json.dumps(SCHEMA)})
    assert first is not second and len(cache._engines) == 1
    assert text_of(first, '{"n":1') and second.consume_tokens([]) == 0  # separate states
    cache.engine({"pse_regex": "a"})
    cache.engine({"pse_regex": "b"})
    assert len(cache._engines) == 2  # bounded


@pytest.mark.parametrize("args, message", [
    ({"pse_json_schema": "{oops"}, "pse_json_schema is not JSON"),
    ({"pse_json_schema": SCHEMA, "pse_regex": "a"}, "one structure per request"),
    ({"pse_jsonschema": "{}"}, "unknown key 'pse_jsonschema'"),
    ({"pse_whitespace": "compact"}, "without a structure"),
    ({"pse_gbnf": 'root ::= "a" other'}, "undefined rule 'other'"),
    ({"pse_regex": 3}, "must be text"),
    ({"pse_regex": "a(?<=b)"}, "pse_regex"),
    ({"pse_json_schema": {"type": "array", "items": {"type": "integer"},
                          "uniqueItems": True}}, "uniqueItems"),
    ({"pse_tools": json.dumps(TOOLS), "pse_tool_format": "xml"}, "format"),
])
def test_bad_requests_are_refused_with_the_key(args, message):
    with pytest.raises(RequestError, match=re.escape(message)):
        check_request(args)
    with pytest.raises(RequestError, match=re.escape(message)):
        StructureCache(vocab()).engine(args)


def test_a_row_follows_its_live_output_list():
    engine = StructureCache(vocab()).engine({"pse_json_schema": SCHEMA})
    output: list[int] = []
    row = ConstrainedRow(engine, output)
    row.advance()
    assert row.consumed == 0 and row.failed is None
    output += [0, 1]  # '{"n":' '1'
    row.advance()
    assert row.consumed == 2 and row.failed is None and not engine.is_accepting()
    output += [3, 14]  # '}' EOS
    row.advance()
    assert engine.is_finished and row.failed is None
    refused = ConstrainedRow(StructureCache(vocab()).engine({"pse_regex": "a+"}), [7, 8])
    refused.advance()
    assert refused.failed == ("token 8 is not allowed by the structure: at character 2: 'b' is "
                              "refused (allowed: 'a', the end of the text)")
    assert ConstrainedRow(None, [], failed="did not compile").failed == "did not compile"


# -- serving engines' own structured outputs (pse.vllm_backend, pse.sglang) ---------------------
def standard(kind: str, spec: str, whitespace="flexible") -> pse.StructuringEngine:
    return StructureCache(vocab()).compiled(*standard_structure(kind, spec, whitespace))


@pytest.mark.parametrize("kind, spec, good, bad", [
    ("json", json.dumps(SCHEMA), '{"n": 1}', '{"n":12}'),
    ("json_object", "", '{"n":"ab"}', '"ab"'),
    ("regex", "a+b", "aab", "ba"),
    ("choice", '["ab", "ba", "ab"]', "ba", "aa"),
    ("grammar", 'start: "a" "b"+', "abb", "aa"),
    ("grammar", 'root ::= "a" b+\nb ::= "b"', "abb", "aa"),  # GBNF
    ("structural_tag", json.dumps({"triggers": ["<tool_call>"], "structures": [
        {"begin": "<tool_call>\n", "schema": SCHEMA, "end": "\n</tool_call>"}]}),
     'a <tool_call>\n{"n":1}\n</tool_call>b', "a <tool_call>\nb"),
])
def test_standard_structures(kind, spec, good, bad):
    engine = standard(kind, spec)
    assert text_of(engine, good) and engine.is_accepting()
    assert not (text_of(standard(kind, spec), bad) and engine.is_accepting())


def test_structural_tags_leave_free_text_around_each_call():
    spec = json.dumps({"triggers": ["<tool_call>"], "structures": [
        {"begin": "<tool_call>\n", "schema": SCHEMA, "end": "\n</tool_call>"}]})
    for text in ["", "ab", '<tool_call>\n{"n":1}\n</tool_call><tool_call>\n{"n":2}\n</tool_call>']:
        engine = standard("structural_tag", spec)
        assert text_of(engine, text) and engine.is_accepting(), text
    engine = standard("structural_tag", spec)
    assert text_of(engine, "a<tool_call>\n") and not engine.is_accepting()


@pytest.mark.parametrize("kind, spec, message", [
    ("yaml", "a: 1", "unknown kind"),
    ("json", "{oops", "not JSON"),
    ("choice", "[]", "non-empty list"),
    ("choice", '["a", 1]', "non-empty list"),
    ("grammar", 'root ::= "a" other', "GBNF line 1, column 14: undefined rule 'other'"),
    ("grammar", "start: undefined_rule", "undefined"),
    ("structural_tag", '{"structures": []}', "XGrammar's form"),
    ("structural_tag", '{"triggers": ["<a>", "<b>"], "structures": []}', "one trigger"),
    ("structural_tag", json.dumps({"triggers": ["<a>"], "structures": [
        {"begin": "<b>", "schema": {}, "end": ""}]}), "does not begin with the trigger"),
])
def test_malformed_standard_structures_are_request_errors(kind, spec, message):
    with pytest.raises(RequestError, match=message):
        check_structure(*standard_structure(kind, spec))


def test_a_served_grammar_stops_only_where_the_structure_is_complete():
    stop = 13  # "</tool_call>" stands for a request's own stop token
    served = ServedGrammar(standard("regex", "a+b"), stop_ids=[stop])
    row = np.empty(1, dtype=np.int32)

    def allowed() -> set[int]:
        served.engine.fill_next_token_bitmask(row.reshape(1, -1))
        served.fix_stops(row)
        return {t for t in range(16) if row[0] >> t & 1}

    assert allowed() == {7}  # "a"; neither the stop nor the vocabulary's EOS
    assert not served.accept(stop) and not served.accept(8)
    assert served.accept(7) and served.accept(8)
    assert allowed() == {stop}  # complete: the request's stop, not the vocabulary's <eos>
    assert served.accept(stop) and served.terminated and served.accept(7)  # past the end
    served.rollback(1)
    assert served.terminated
    served.rollback(1)
    assert not served.terminated and allowed() == {stop}
    assert served.accept_prefix([7, 8, stop]) == 0  # "ab" after "ab" is refused at once
    served.rollback(2)
    assert served.accept_prefix([7, 7, 8, stop, 7]) == 5 and allowed() == {7}
    copy = served.copy()
    assert copy.accept(7) and allowed() == {7}
    with pytest.raises(ValueError, match="cannot roll back 1"):
        served.rollback(1)


def test_served_grammar_jumps_forward_in_canonical_tokens():
    served = ServedGrammar(standard("json", json.dumps(SCHEMA), "compact"))
    assert served.jump_forward() == [0]  # '{"n":' is one token of the vocabulary
    assert served.accept(0) and served.accept(1) and served.accept(3) and served.accept(14)
    assert served.terminated and served.jump_forward() == []
