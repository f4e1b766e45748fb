"""ToolCalls: free text and tool calls in the model families' formats.

Masks equal brute force over Qwen3's vocabulary near every delimiter; every call a random
walk through the masks completes validates against its tool's schema (jsonschema); calls to
unknown tools, with missing or wrong-typed arguments, are refused; bad input is named."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

import pse.json_schema.compile
from conftest import shared_vocab
from pse import (GrammarError, SchemaError, StructuringEngine, ToolCalls, Vocabulary,
                 VocabularyError)
from pse.machines import special_text
from test_engine import check_along

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 12},
        "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"], "additionalProperties": False}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the shop.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "maxLength": 8},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        "in_stock": {"type": "boolean"}},
        "required": ["query", "limit"]}}}
TOOLS = [WEATHER, SEARCH]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def hermes(*calls: tuple[str, dict], text: str = "") -> str:
    """What Qwen's chat template writes for these calls."""
    return text + "\n".join(
        "<tool_call>\n" + json.dumps({"name": n, "arguments": a}, ensure_ascii=False)
        + "\n</tool_call>" for n, a in calls)


@pytest.fixture(scope="module")
def qwen():
    return shared_vocab("qwen3")


def test_hermes_masks_equal_brute_force_qwen3(qwen):
    """Around every delimiter: the "}}\\n" token that ends a call's JSON and begins its
    closing delimiter, delimiters inside argument strings, the calls one after the other."""
    text = hermes(("get_weather", {"city": "</tool_call>", "unit": "celsius"}),
                  ("search", {"query": "<tool_c", "limit": 3}),
                  text="Let me look.\n")
    ids = qwen.encode(text)
    assert qwen.lookup('"}}\n') in ids
    engine = StructuringEngine(qwen)
    engine.configure(ToolCalls(TOOLS))
    check_along(engine, ids, every=2)
    assert engine.is_accepting()
    assert engine.consume_token(qwen.eos_token_ids[0])
    assert engine.structured_outputs() == [
        ("get_weather", {"city": "</tool_call>", "unit": "celsius"}),
        ("search", {"query": "<tool_c", "limit": 3})]


def test_hermes_delimiters_spelled_out_qwen3(qwen):
    """<tool_call> is one token of Qwen3; written with smaller tokens it works the same."""
    call = json.dumps({"name": "search", "arguments": {"query": "x", "limit": 2}})
    pieces = ["Hi <", "tool", "_call", ">\n", call, "\n</", "tool_call", ">"]
    ids = [i for piece in pieces for i in qwen.encode(piece)]
    assert qwen.lookup("<tool_call>") not in ids
    engine = StructuringEngine(qwen)
    engine.configure(ToolCalls(TOOLS))
    check_along(engine, ids, every=1)
    assert engine.is_accepting()
    assert engine.structured_outputs() == [("search", {"query": "x", "limit": 2})]


def test_free_text_alone_and_partial_delimiters_qwen3(qwen):
    engine = StructuringEngine(qwen)
    engine.configure(ToolCalls(TOOLS))
    check_along(engine, qwen.encode("No call: <tool or </tool_call> or <tool_c"), every=3)
    assert engine.is_accepting() and engine.structured_outputs() == []


# --- what is accepted: validation against the tools' schemas ----------------------------------

def char_vocab() -> Vocabulary:
    """Characters, the delimiters as whole tokens, and EOS."""
    chars = [chr(c) for c in range(32, 127)] + ["\n"]
    extra = ["<tool_call>", "</tool_call>", '"}}\n', "get_weather", "search", "celsius"]
    tokens = chars + extra + ["<eos>"]
    return Vocabulary.from_tokens(tokens, eos_token_ids=[len(tokens) - 1],
                                  special_token_ids=[len(tokens) - 1])


def random_walk(engine: StructuringEngine, rng: random.Random, steps: int = 400) -> bool:
    """Sample allowed tokens (delimiters and EOS favoured) until EOS; True when finished."""
    vocab = engine.vocab
    eos = vocab.eos_token_ids[0]
    for _ in range(steps):
        allowed = engine.allowed_token_ids().tolist()
        assert allowed, "a dead end"
        if eos in allowed and rng.random() < 0.5:
            return engine.consume_token(eos)
        long = [t for t in allowed if t != eos and len(vocab.token_bytes(t)) > 1]
        pool = long if long and rng.random() < 0.5 else allowed
        assert engine.consume_token(rng.choice(pool))
        if engine.is_finished:
            return True
    return False


@pytest.mark.parametrize("choice", ["auto", "required",
                                    {"type": "function", "function": {"name": "search"}}])
@pytest.mark.parametrize("parallel", [True, False])
def test_every_accepted_call_validates(choice, parallel):
    vocab = char_vocab()
    engine = StructuringEngine(vocab)
    engine.configure(ToolCalls(TOOLS, tool_choice=choice, parallel_tool_calls=parallel))
    rng = random.Random(7)
    finished = 0
    for _ in range(25):
        engine.reset()
        if not random_walk(engine, rng):
            continue
        finished += 1
        calls = engine.structured_outputs()
        if choice != "auto":
            assert calls
        if not parallel:
            assert len(calls) <= 1
        for name, arguments in calls:
            if isinstance(choice, dict):
                assert name == "search"
            jsonschema.validate(arguments, SCHEMAS[name])
    assert finished >= 10


@pytest.mark.parametrize("text", [
    hermes(("get_time", {"city": "Rome"})),                      # unknown tool
    hermes(("search", {"query": "x"})),                          # missing required argument
    hermes(("search", {"query": "x", "limit": "3"})),            # wrong type
    hermes(("search", {"query": "x", "limit": 30})),             # out of range
    hermes(("get_weather", {"city": "Rome", "country": "IT"})),  # no such argument
    hermes(("get_weather", {"city": "Rome"})) + " trailing text",
    "<tool_call>\nnot json\n</tool_call>",                       # opened, then broken
])
def test_bad_calls_are_refused(text):
    machine = ToolCalls(TOOLS)
    assert not machine.matches(text)


def test_tool_choice_and_parallel_calls():
    one = hermes(("get_weather", {"city": "Rome"}))
    two = hermes(("get_weather", {"city": "Rome"}), ("search", {"query": "x", "limit": 1}))
    text = "Just text."
    expect = {  # text alone, one call, two calls, text then a call
        "auto": (True, True, True, True),
        "required": (False, True, True, False),
        "none": (True, False, False, False),
    }
    for choice, expected in expect.items():
        machine = ToolCalls(TOOLS, tool_choice=choice)
        got = tuple(machine.matches(t) for t in (text, one, two, text + one))
        assert got == expected, choice
    single = ToolCalls(TOOLS, parallel_tool_calls=False)
    assert single.matches(one) and not single.matches(two)
    named = ToolCalls(TOOLS, tool_choice={"type": "function", "function": {"name": "search"}})
    assert not named.matches(one) and named.matches(hermes(("search", {"query": "q", "limit": 2})))
    assert ToolCalls(TOOLS, tool_choice="none").matches("a <tool_call")


def test_whitespace_options():
    flexible = ToolCalls(TOOLS)
    compact = ToolCalls(TOOLS, whitespace="compact")
    tojson = hermes(("search", {"query": "x", "limit": 1}))       # ", " and ": "
    dense = tojson.replace('", "', '","').replace('": ', '":').replace(', "', ',"')
    spread = tojson.replace("{", "{\n  ").replace("}", "\n}")
    assert flexible.matches(tojson) and flexible.matches(dense) and flexible.matches(spread)
    assert compact.matches(dense) and not compact.matches(tojson)
    assert not flexible.matches(tojson.replace('": ', '":' + " " * 21))   # bounded blanks


# --- the other formats ----------------------------------------------------------------------

def test_llama3_format():
    machine = ToolCalls(TOOLS, format="llama3")
    call = json.dumps({"name": "search", "parameters": {"query": "x", "limit": 1}})
    assert machine.matches(call) and machine.matches("Sure. " + call)
    assert machine.matches(call + "; " + call)
    assert not machine.matches(call.replace("parameters", "arguments"))
    assert not machine.matches("x {broken")            # the first "{" opens a call
    assert machine.structured_outputs("Sure. " + call + ";" + call, True) == [
        ("search", {"query": "x", "limit": 1})] * 2
    # Llama 3.1's <|python_tag|> may come before the calls where the vocabulary has it
    tokens = ["S", "ure", ". ", call, "<|python_tag|>", "<eos>"]
    vocab = Vocabulary.from_tokens(tokens, eos_token_ids=[5], special_token_ids=[4, 5])
    engine = StructuringEngine(vocab)
    engine.configure(machine)
    assert engine.consume_tokens([0, 1, 2]) == 3
    assert 4 in engine.allowed_token_ids()
    assert engine.consume_tokens([4, 3, 5]) == 3
    assert engine.structured_outputs() == [("search", {"query": "x", "limit": 1})]


def test_mistral_format():
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Rome"}})
    tokens = ["Ok", "[", "]", ", ", call, "[TOOL_CALLS]", "<eos>"]
    vocab = Vocabulary.from_tokens(tokens, eos_token_ids=[6], special_token_ids=[5, 6])
    engine = StructuringEngine(vocab)
    engine.configure(ToolCalls(TOOLS, format="mistral"))
    assert engine.consume_tokens([0, 5, 1, 4, 3, 4, 2, 6]) == 8
    assert engine.structured_outputs() == [("get_weather", {"city": "Rome"})] * 2
    # before the special token, "[" is free text
    engine.reset()
    assert engine.consume_token(1) and 5 in engine.allowed_token_ids()
    required = StructuringEngine(vocab)
    required.configure(ToolCalls(TOOLS, format="mistral", tool_choice="required"))
    assert required.allowed_token_ids().tolist() == [5]
    # the special token's text spelled out in free text is text, not the calls' start
    oslo = call.replace("Rome", "Oslo")
    spelled = Vocabulary.from_tokens(tokens + ["TOOL_CALLS", oslo], eos_token_ids=[6],
                                     special_token_ids=[5, 6])
    engine = StructuringEngine(spelled)
    engine.configure(ToolCalls(TOOLS, format="mistral"))
    assert engine.consume_tokens([1, 7, 2, 1, 8, 2, 5, 1, 4, 2, 6]) == 11
    assert engine.structured_outputs() == [("get_weather", {"city": "Rome"})]
    engine.reset()
    assert engine.consume_tokens([1, 7, 2, 1, 8, 2, 6]) == 7  # free text only
    assert engine.structured_outputs() == []
    # a caller's own text marks the special token as the engine does
    marked = f"Ok[TOOL_CALLS]{special_text('[TOOL_CALLS]')}[{call}]"
    assert ToolCalls(TOOLS, format="mistral").structured_outputs(marked, True) == [
        ("get_weather", {"city": "Rome"})]
    with pytest.raises(VocabularyError, match="TOOL_CALLS"):
        StructuringEngine(char_vocab()).configure(ToolCalls(TOOLS, format="mistral"))


def test_custom_format():
    machine = ToolCalls(TOOLS, format={"begin": "<call>", "end": "</call>"})
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Rome"}})
    assert machine.matches(f"hm <call>{call}</call>")
    assert machine.structured_outputs(f"<tool_call>{call}</tool_call>", True) == []  # text
    required = ToolCalls(TOOLS, format=("<call>", "</call>"), tool_choice="required")
    assert not required.matches(f"<tool_call>{call}</tool_call>")
    assert required.matches(f"<call>{call}</call>")
    assert machine.structured_outputs(f"<call>{call}</call>\n<call>{call}</call>", True) == [
        ("get_weather", {"city": "Rome"})] * 2


def test_functions_and_models_as_tools():
    pydantic = pytest.importorskip("pydantic")

    def get_weather(city: str, days: int = 1) -> str:
        """The weather in a city.

        Args:
            city: where.
            days: how many days ahead.
        """
        return "sunny"

    class Order(pydantic.BaseModel):
        """Place an order."""
        item: str
        quantity: int

    machine = ToolCalls([get_weather, Order])
    assert machine.matches(hermes(("get_weather", {"city": "Oslo", "days": 2})))
    assert machine.matches(hermes(("Order", {"item": "tea", "quantity": 1})))
    assert not machine.matches(hermes(("Order", {"item": "tea"})))


def test_parameters_with_definitions_beside_other_tools():
    # each tool's parameters are a resource of their own: "#/$defs/..." and "#" inside them
    # are theirs (pydantic writes nested models so)
    tree = {"type": "function", "function": {"name": "plant", "parameters": {
        "$defs": {"size": {"enum": ["s", "m"]}}, "type": "object",
        "properties": {"size": {"$ref": "#/$defs/size"},
                       "child": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["size", "child"]}}}
    for tools in ([tree], [WEATHER, tree]):
        machine = ToolCalls(tools)
        schema = tree["function"]["parameters"]
        for args in ({"size": "s", "child": None}, {"size": "m", "child": {"size": "s",
                                                                         "child": None}},
                     {"size": "x", "child": None}, {"size": "s", "child": {"size": "s"}},
                     {"size": "s", "child": {"name": "plant", "arguments": {}}}):
            assert machine.matches(hermes(("plant", args))) == \
                jsonschema.Draft202012Validator(schema).is_valid(args), (tools, args)


def test_pydantic_models_with_nested_models_as_tools():
    pydantic = pytest.importorskip("pydantic")

    class Address(pydantic.BaseModel):
        city: str

    class Ship(pydantic.BaseModel):
        """Ship an order."""
        item: str
        to: Address

    machine = ToolCalls([WEATHER, Ship])
    assert machine.matches(hermes(("Ship", {"item": "tea", "to": {"city": "Oslo"}})))
    assert not machine.matches(hermes(("Ship", {"item": "tea", "to": {"town": "Oslo"}})))


def test_names_beyond_ascii():
    # a name is matched as written (JSON escapes of it are other spellings: a const's)
    machine = ToolCalls([{"name": "météo", "parameters": {"type": "object"}}, {"name": "名前"}])
    for name in ("météo", "名前"):
        call = json.dumps({"name": name, "arguments": {}}, ensure_ascii=False)
        assert machine.matches(f"<tool_call>\n{call}\n</tool_call>")


@pytest.mark.parametrize("draft", ["http://json-schema.org/draft-07/schema#",
                                   "http://json-schema.org/draft-04/schema#"])
def test_parameters_are_read_by_the_draft_they_name(draft):
    # draft 7 and 4 ignore a $ref's siblings; draft 4's exclusiveMaximum is a bool
    parameters = {"$schema": draft, "type": "object", "definitions": {"x": {"type": "integer"}},
                  "properties": {"a": {"$ref": "#/definitions/x", "type": "string"},
                                 "b": {"type": "number", "maximum": 3, "exclusiveMaximum": True}
                                 if "04" in draft else {"type": "number", "exclusiveMaximum": 3}}}
    validator = (jsonschema.Draft7Validator if "07" in draft else
                 jsonschema.Draft4Validator)(parameters)
    machine = ToolCalls([{"name": "t", "parameters": parameters}, {"name": "u"}])
    for args in ({"a": 1}, {"a": "s"}, {"a": 1, "b": 3}, {"a": 1, "b": 2}):
        assert machine.matches(hermes(("t", args))) == validator.is_valid(args), args
    assert machine.matches(hermes(("u", {})))


def test_structured_outputs_of_text_that_is_no_call():
    machine = ToolCalls(TOOLS)
    call = hermes(("search", {"query": "x", "limit": 2}))
    assert machine.structured_outputs(call + "\n" + call, True) == \
        [("search", {"query": "x", "limit": 2})] * 2
    for text in ('<tool_call>{"name": "search", "arguments": {}}</tool_call>',
                 '<tool_call>\n["x"]\n</tool_call>', '<tool_call>\n{"arguments": {}}\n</tool_call>',
                 '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>',
                 '<tool_call>\n{"name": ["search"], "arguments": {}}\n</tool_call>'):
        assert machine.structured_outputs(text, True) == [], text
    assert machine.structured_outputs(call + " and more", True) == \
        [("search", {"query": "x", "limit": 2})]


# --- bad input --------------------------------------------------------------------------------

def test_bad_input_is_named():
    with pytest.raises(SchemaError, match="get_weather"):
        ToolCalls([WEATHER, WEATHER])
    broken = {"type": "function", "function": {"name": "broken", "parameters": {
        "type": "object", "properties": {"when": {"type": "string", "pattern": "(?<=a)b"}}}}}
    with pytest.raises(SchemaError, match=r"broken.*properties/when"):
        ToolCalls([WEATHER, broken])
    with pytest.raises(GrammarError, match="unknown tool call format 'xml'"):
        ToolCalls(TOOLS, format="xml")
    with pytest.raises(GrammarError, match="unknown tool_choice 'sometimes'"):
        ToolCalls(TOOLS, tool_choice="sometimes")
    with pytest.raises(GrammarError, match="'nope'"):
        ToolCalls(TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}})
    with pytest.raises(GrammarError, match="custom tool call format"):
        ToolCalls(TOOLS, format={"begin": "<c>"})
    with pytest.raises(TypeError):
        ToolCalls(WEATHER)


@pytest.mark.parametrize("parameters", [
    False,
    {"type": "object", "properties": {"a": False}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 3}},
     "required": ["a"]},
    {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
])
@pytest.mark.parametrize("format", ["hermes", "llama3", "mistral", ("<c>", "</c>")])
@pytest.mark.parametrize("choice", ["auto", "required"])
def test_a_tool_that_no_call_can_satisfy_is_named(parameters, format, choice):
    # a union's branch that allows nothing drops out of it: the tool would be left out
    # without a word, beside the others
    never = {"type": "function", "function": {"name": "never", "parameters": parameters}}
    for tools in ([never], [WEATHER, never], [never, SEARCH]):
        with pytest.raises(SchemaError, match="tool 'never'"):
            ToolCalls(tools, format=format, tool_choice=choice)
    with pytest.raises(SchemaError, match="tool 'never'"):
        ToolCalls([WEATHER, never], format=format,
                  tool_choice={"type": "function", "function": {"name": "never"}})


def test_a_compile_past_its_budget_is_not_blamed_on_a_tool(monkeypatch):
    # the calls' tables running out of time are the whole structure's error, not the first
    # tool's that a compile of its own (in the budget already spent) would stop in
    from pse import StateMachine, limits

    spent = [0.0]
    clock = limits.time.monotonic
    monkeypatch.setattr(limits.time, "monotonic", lambda: clock() + spent[0])
    compile_tables = StateMachine.compile

    def late(self):
        if isinstance(self, ToolCalls):
            spent[0] = 1000.0
        return compile_tables(self)

    monkeypatch.setattr(ToolCalls, "compile", late)
    many = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(40)}}
    tools = [{"name": "innocent", "parameters": many}, {"name": "other", "parameters": {}}]
    with pytest.raises(GrammarError, match="COMPILE_SECONDS") as info:
        ToolCalls(tools)
    assert "innocent" not in str(info.value)


def test_each_tools_parameters_are_a_resource_of_their_own():
    # relative ids under two tools differ; a root $ref of draft 7 (whose siblings, $id too,
    # are ignored) still finds the definitions beside it; an id that is only a fragment is an
    # anchor of draft 7, not a resource
    def relative(name: str, kind: str) -> dict:
        return {"name": name, "parameters": {"type": "object", "properties": {
            "v": {"$id": "item.json", "type": kind}, "w": {"$ref": "item.json"}}}}
    machine = ToolCalls([relative("n1", "integer"), relative("n2", "string")])
    assert machine.matches(hermes(("n1", {"v": 1, "w": 2})))
    assert not machine.matches(hermes(("n1", {"v": 1, "w": "s"})))
    assert machine.matches(hermes(("n2", {"v": "a", "w": "s"})))
    draft7 = "http://json-schema.org/draft-07/schema#"
    rooted = {"name": "tree", "parameters": {
        "$schema": draft7, "$ref": "#/definitions/node", "definitions": {"node": {
            "type": "object", "properties": {"kids": {"type": "array", "items": {
                "$ref": "#/definitions/node"}}}, "required": ["kids"]}}}}
    anchored = {"name": "f", "parameters": {
        "$schema": draft7, "$id": "#params", "definitions": {"x": {"type": "integer"}},
        "type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}}}
    machine = ToolCalls([rooted, anchored])
    for name, args in (("tree", {"kids": [{"kids": []}]}), ("tree", {"kids": [{}]}),
                       ("f", {"a": 1}), ("f", {"a": "s"})):
        parameters = (rooted if name == "tree" else anchored)["parameters"]
        assert machine.matches(hermes((name, args))) == \
            jsonschema.Draft7Validator(parameters).is_valid(args), (name, args)


def test_tools_whose_parameters_clash_are_named():
    def tool(name: str, kind: str, schema: str = "") -> dict:
        return {"name": name, "parameters": {
            **({"$schema": schema} if schema else {}), "$id": "args.json", "type": "object",
            "$defs": {"x": {"type": kind}}, "properties": {"a": {"$ref": "#/$defs/x"}}}}
    with pytest.raises(SchemaError, match="tools 't1' and 't2'.*args.json"):
        ToolCalls([tool("t1", "integer"), tool("t2", "string")])
    one = {"name": "t3", "parameters": {"$id": "http://example.com/a", "type": "object"}}
    same = {"name": "t4", "parameters": {"$id": "http://example.com/a#", "type": "object"}}
    with pytest.raises(SchemaError, match="tools 't3' and 't4'"):
        ToolCalls([one, same])
    # a draft named beside one that is not (2020-12): a call is read by one
    for other in ({"$schema": "https://json-schema.org/draft/2020-12/schema"},
                  {"type": "object", "properties": {"a": {"const": 1}}}):
        with pytest.raises(SchemaError, match="different drafts"):
            ToolCalls([tool("t1", "integer", "http://json-schema.org/draft-07/schema#"),
                       {"name": "t2", "parameters": other}])


def test_parameters_that_multiply_out_keep_their_error_class(monkeypatch):
    # a caller that catches MultipliedOut (to retry without strict, say) still can
    monkeypatch.setattr(pse.json_schema.compile, "MAX_SCHEMA_NODES", 50)
    unions = [{"anyOf": [{"type": "object", "required": [f"{side}{k}"]} for k in range(8)]}
              for side in "ab"]
    wide = {"type": "function", "function": {"name": "wide", "parameters": {
        "type": "object", "allOf": unions}}}
    with pytest.raises(pse.MultipliedOut, match="tool 'wide'"):
        ToolCalls([WEATHER, wide])
