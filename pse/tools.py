"""`ToolCalls`: free text, then zero, one or several tool calls in a model family's format.

Each call is a JSON object `{"name": <a tool's name>, "arguments": <that tool's arguments>}`
(Llama 3: "parameters"), compiled as one JSON Schema: a union of one object per tool, told
apart by the name's constant, so the name decides which arguments' schema applies and the
arguments follow it with everything the JSON Schema compiler does. The formats put the calls
between delimiters:

- "hermes" (Qwen2.5, Qwen3, Hermes): `<tool_call>\\n{...}\\n</tool_call>`, calls one per line;
- "llama3" (Llama 3.1 / 3.2 JSON calls): `{"name": ..., "parameters": ...}`, several joined
  by ";", optionally after the special token `<|python_tag|>`;
- "mistral": the special token `[TOOL_CALLS]`, then a JSON array of calls;
- a custom pair `{"begin": ..., "end": ...}` (or a (begin, end) tuple), like hermes.

With tool_choice "auto", free text may come before the first call, as the chat templates
allow. It ends where a call's opening first occurs (its begin delimiter; Llama 3's `{`;
Mistral's special token): a text that has opened a call and then breaks it is refused, not
taken as more free text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import urldefrag

from pse import limits
from pse.errors import GrammarError, MatchesNothing, SchemaError
from pse.json_schema import JsonSchema
from pse.json_schema.refs import _draft
from pse.json_value import whitespace_bound
from pse.machines import (
    AnyOf, Chain, DfaTerminal, Forward, Loop, Optional, Phrase, SpecialToken, StateMachine,
    Whitespace, special_text,
)
from pse.text import Freeform, TextUntil, TextWithout, _delimiter, text_before
from pse.tool_schema import normalize_tools

TOOL_CHOICES = ("auto", "required", "none")
# Blanks allowed between two calls (the chat templates write one newline).
MAX_BLANKS_BETWEEN_CALLS = 20


@dataclass(frozen=True)
class ToolFormat:
    """Where a model family puts its tool calls.

    Attributes:
        name: the format's name.
        arguments_key: the key of a call's arguments ("arguments" or "parameters").
        begin: the text before each call; its first non-blank part is the opening that
            commits to a call (empty: the call's own `{`).
        end: the text after each call.
        separator: between two calls, after `end` (blanks may surround it).
        special: a special token before the calls (Mistral's `[TOOL_CALLS]`).
        special_required: whether the calls need it (else it may come or not).
        array: the calls are one JSON array (Mistral).
    """

    name: str
    arguments_key: str = "arguments"
    begin: str = ""
    end: str = ""
    separator: str = ""
    special: str | None = None
    special_required: bool = True
    array: bool = False


FORMATS = {
    "hermes": ToolFormat("hermes", begin="<tool_call>\n", end="\n</tool_call>"),
    "llama3": ToolFormat("llama3", arguments_key="parameters", separator=";",
                         special="<|python_tag|>", special_required=False),
    "mistral": ToolFormat("mistral", special="[TOOL_CALLS]", array=True),
}


def tool_format(format: str | dict | tuple | ToolFormat) -> ToolFormat:
    """The ToolFormat a `format` argument names.

    Raises:
        GrammarError: an unknown name, or a malformed custom pair.
    """
    if isinstance(format, ToolFormat):
        return format
    if isinstance(format, str):
        if format not in FORMATS:
            raise GrammarError(f"unknown tool call format {format!r}: use one of "
                               f"{', '.join(sorted(FORMATS))}, or a custom "
                               "{'begin': ..., 'end': ...} pair")
        return FORMATS[format]
    if isinstance(format, tuple) and len(format) == 2:
        format = {"begin": format[0], "end": format[1]}
    if isinstance(format, dict):
        unknown = set(format) - {"begin", "end", "arguments_key"}
        if unknown or "begin" not in format or "end" not in format:
            raise GrammarError(f"a custom tool call format is {{'begin': str, 'end': str}} "
                               f"(and optionally 'arguments_key'), got {format!r}")
        begin = _delimiter(format["begin"], "format begin").decode("utf-8")
        if not begin.strip():
            raise GrammarError(f"format begin must hold more than blanks, got {begin!r}")
        end = format["end"]
        if not isinstance(end, str):
            raise GrammarError(f"format end must be a str, got {type(end).__name__}")
        key = format.get("arguments_key", "arguments")
        if key not in ("arguments", "parameters"):
            raise GrammarError(f"arguments_key must be 'arguments' or 'parameters', got {key!r}")
        return ToolFormat("custom", arguments_key=key, begin=begin, end=end)
    raise GrammarError(f"format must be a format's name, a {{'begin', 'end'}} dict or a "
                       f"(begin, end) tuple, got {type(format).__name__}")


class ToolCalls(StateMachine):
    """Free text, then zero, one or several tool calls, in a model family's format.

    Args:
        tools: OpenAI-style tool definitions (`{"type": "function", "function": {"name",
            "description", "parameters"}}`), pydantic model classes, or Python functions
            (their signature, type hints and docstring give the schema: `pse.tool_schema`).
        format: "hermes", "llama3", "mistral", or a custom `{"begin": ..., "end": ...}`.
        tool_choice: "auto" (text, then calls or none), "required" (calls, at least one,
            and no text: OpenAI's meaning), "none" (text without a call), or `{"type":
            "function", "function": {"name": ...}}` (calls of that tool only, as "required").
        parallel_tool_calls: False allows at most one call.
        whitespace: between the tokens of a call's JSON: "flexible" (any JSON whitespace,
            at most 20 blanks in a row: what the chat templates write, `{"name": "f",
            "arguments": {"a": 1}}`, and more), "compact" (none), or the most blanks.

    Raises:
        SchemaError: a malformed tool, two tools with one name, or a tool whose parameters
            do not compile or allow no value (the message names the tool and the schema
            path).
        GrammarError: an unknown format or tool_choice.
        TypeError: `tools` is not a list of tools.
    """

    def __init__(self, tools: Iterable[Any], format: str | dict | tuple = "hermes",
                 tool_choice: str | dict = "auto", parallel_tool_calls: bool = True,
                 whitespace: int | str = "flexible") -> None:
        self.format = tool_format(format)
        self.tools = normalize_tools(tools)
        self.whitespace = whitespace_bound(whitespace)
        if not isinstance(parallel_tool_calls, bool):
            raise GrammarError(f"parallel_tool_calls must be a bool, got {parallel_tool_calls!r}")
        self.parallel_tool_calls = parallel_tool_calls
        self.tool_choice, names = _tool_choice(tool_choice, self.tools)
        self.names = names
        called = [t for t in self.tools if t["function"]["name"] in names]
        # one compile budget for the schema and the tables: one garbage collection after both
        with limits.compile_budget("ToolCalls"):
            self.call = None if self.tool_choice == "none" else _call_schema(
                called, self.format.arguments_key, self.whitespace)
            super().__init__({0: [(self._body(), "$")]}, start_state=0, end_states=("$",))
            try:
                self.compile()
            except MatchesNothing:  # (no call ends: say which tool's schema allows nothing)
                if self.call is not None:
                    for tool in called:
                        _raise_for_tool(tool, self.whitespace)
                raise
        if self.call is not None:
            self._check_callable(called)

    def _check_callable(self, tools: list[dict]) -> None:
        """Raise for a tool no call of which can be begun: its arguments allow no value, so
        the call schema's union dropped it (an unsatisfiable anyOf branch is no branch)."""
        fmt = self.format
        before = special_text(fmt.special) + "[" if fmt.array else fmt.begin
        for tool in tools:
            name = tool["function"]["name"]
            opening = f'{{"name":{json.dumps(name, ensure_ascii=False)},"{fmt.arguments_key}":'
            if not self.matches(before + opening, partial=True):
                _raise_for_tool(tool, self.whitespace)
                raise SchemaError(f"tool {name!r}: no value of its parameters is valid")

    def _body(self) -> StateMachine:
        fmt = self.format
        if fmt.array:
            return self._array_body()
        trigger = fmt.begin.rstrip(" \t\n\r") if fmt.begin else "{"
        no_call = TextWithout(trigger)  # "auto" without a call, and "none"
        if self.call is None:
            return no_call
        # a rule of its own: compiled once, though the first call and the next ones use it
        call = Forward(self.call, name="tool call")
        end = [Phrase(fmt.end)] if fmt.end else []
        special = ([Optional(SpecialToken(fmt.special, required=fmt.special_required))]
                   if fmt.special is not None else [])
        if self.tool_choice == "auto":
            # free text up to the first opening, which commits to a call
            if fmt.begin:
                opened = [TextUntil(trigger), *special, Phrase(fmt.begin[len(trigger):])]
            else:  # the opening is the call's own "{": the free text stops before it
                opened = [DfaTerminal(text_before(b"{"), "text before a call",
                                      key=("text_before", b"{")), *special]
        else:  # "required" or one tool: the calls alone, as OpenAI's tool_choice means
            opened = [*special, *([Phrase(fmt.begin)] if fmt.begin else [])]
        first = Chain(*opened, call, *end)
        calls = first
        if self.parallel_tool_calls:
            gap: list[StateMachine] = [Whitespace(0, MAX_BLANKS_BETWEEN_CALLS)]
            if fmt.separator:
                gap += [Phrase(fmt.separator), Whitespace(0, MAX_BLANKS_BETWEEN_CALLS)]
            again = Chain(*gap, *([Phrase(fmt.begin)] if fmt.begin else []), call, *end)
            calls = Chain(first, Loop(again))
        return AnyOf(no_call, calls) if self.tool_choice == "auto" else calls

    def _array_body(self) -> StateMachine:
        """Mistral: free text, the special token, then the calls as one JSON array."""
        fmt = self.format
        if self.call is None:
            return Freeform()
        call = Forward(self.call, name="tool call")
        ws = [Whitespace(0, self.whitespace)] if self.whitespace else []
        items: StateMachine = call
        if self.parallel_tool_calls:
            items = Loop(call, min_count=1, separator=Chain(*ws, Phrase(","), *ws))
        calls = Chain(SpecialToken(fmt.special), Phrase("["), *ws, items, *ws, Phrase("]"))
        if self.tool_choice == "auto":
            return Chain(Freeform(), Optional(calls))
        return calls

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        """One (tool name, arguments dict) per call completed in `text`, where special tokens
        are marked as `StructuringEngine.structured_outputs` marks them (`special_text`)."""
        return [(name, args) for name, args in _parse_calls(self, text)]

    def __repr__(self) -> str:
        return (f"ToolCalls({len(self.tools)} tools, format={self.format.name!r}, "
                f"tool_choice={self.tool_choice!r})")


def _tool_choice(choice: Any, tools: list[dict]) -> tuple[str, set[str]]:
    names = {t["function"]["name"] for t in tools}
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise GrammarError(f"unknown tool_choice {choice!r}: use 'auto', 'required', "
                               "'none' or {'type': 'function', 'function': {'name': ...}}")
        return choice, names
    if (isinstance(choice, dict) and choice.get("type") == "function"
            and isinstance(choice.get("function"), dict)
            and isinstance(choice["function"].get("name"), str)):
        name = choice["function"]["name"]
        if name not in names:
            raise GrammarError(f"tool_choice names the tool {name!r}, which is not among the "
                               f"tools ({', '.join(sorted(names))})")
        return "required", {name}
    raise GrammarError(f"unknown tool_choice {choice!r}: use 'auto', 'required', 'none' or "
                       "{'type': 'function', 'function': {'name': ...}}")


def _call_schema(tools: list[dict], arguments_key: str, whitespace: int) -> JsonSchema:
    """One JSON Schema for a call of any of `tools`: a union of one object per tool, read by
    the draft the tools' parameters name (`$schema`; none is 2020-12), one for all."""
    named = {str(p.get("$schema", "none, 2020-12")): (_draft(p), p.get("$schema"))
             for p in _parameters(tools) if isinstance(p, dict) and p not in _ANY_DRAFT}
    if len({draft for draft, _ in named.values()}) > 1:
        raise SchemaError(f"the tools' parameters are of different drafts ($schema: "
                          f"{'; '.join(sorted(named))}): a call is read by one")
    draft, dialect = next(iter(named.values()), (2020, None))
    id_key = "id" if draft == 4 else "$id"  # (draft 4 names a resource with "id")
    owners: dict[str, str] = {}
    branches = []
    for k, (tool, parameters) in enumerate(zip(tools, _parameters(tools))):
        name = tool["function"]["name"]
        if isinstance(parameters, dict):
            parameters = _own_resource(parameters, k, draft, id_key)
            # (a resource named twice: each one's references would find the other's
            # definitions)
            resource = urldefrag(parameters[id_key])[0]
            if resource in owners:
                raise SchemaError(f"tools {owners[resource]!r} and {name!r}: their parameters "
                                  f"are one resource, {id_key} {resource!r}")
            owners[resource] = name
        branches.append({
            "type": "object",
            # (draft 4 has no const)
            "properties": {"name": {"enum": [name]} if draft == 4 else {"const": name},
                           arguments_key: parameters},
            "required": ["name", arguments_key],
            "additionalProperties": False,
        })
    schema = branches[0] if len(branches) == 1 else {"anyOf": branches}
    if draft != 2020:
        schema = {"$schema": dialect, **schema}
    try:
        return JsonSchema(schema, whitespace=whitespace, name="tool_call")
    except SchemaError as e:
        for tool in tools:  # say which tool's schema failed, with the path inside its parameters
            _raise_for_tool(tool, whitespace)
        # (each tool's parameters compile alone)
        raise type(e)(f"the tools' calls do not compile together: {e}") from None


def _own_resource(parameters: dict, k: int, draft: int, id_key: str) -> dict:
    """A tool's parameters as a schema resource of their own, so that "#", "#/$defs/..." and
    relative ids inside them are theirs: an id of ours where they name none (a base with a
    path, under which relative ids of two tools differ), kept where they name one."""
    base = f"https://pse.invalid/tools/{k}/"
    if draft <= 7 and "$ref" in parameters:
        # (drafts 4-7 ignore a $ref's siblings, $id too: the $ref goes under an allOf, beside
        # the definitions it may point into)
        parameters = {**{key: parameters[key] for key in ("definitions", "$defs")
                         if key in parameters},
                      "allOf": [{"$ref": parameters["$ref"]}]}
    ident = parameters.get(id_key)
    if not isinstance(ident, str):
        return {**parameters, id_key: base}
    if ident.startswith("#"):  # (drafts 6-7: an anchor, not a resource)
        return {**parameters, id_key: base + ident}
    return parameters


# Parameters that mean one thing in every draft (normalize_tools gives the first to a tool
# without parameters).
_ANY_DRAFT = ({"type": "object", "properties": {}}, {"type": "object"}, {})


def _parameters(tools: list[dict]) -> list[Any]:
    return [t["function"]["parameters"] for t in tools]  # (normalize_tools sets them)


def _raise_for_tool(tool: dict, whitespace: int) -> None:
    """Raise the SchemaError of the tool's parameters compiled alone, naming the tool."""
    function = tool["function"]
    try:
        JsonSchema(function["parameters"], whitespace=whitespace).compile()
    except SchemaError as e:
        # (the same class: a MultipliedOut stays one, for a caller that retries)
        raise type(e)(f"tool {function['name']!r}: its parameters do not compile: "
                      f"{e}") from None


def _parse_calls(machine: ToolCalls, text: str) -> list[tuple[str, dict]]:
    """The calls completed in `text`, in order (up to where the text stops being calls: a
    text the machine does not match gives the calls before that, not an error)."""
    fmt = machine.format
    decoder = json.JSONDecoder()
    key = fmt.arguments_key
    calls: list[tuple[str, dict]] = []

    def call_at(pos: int) -> tuple[tuple[str, dict], int] | None:
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return None
        if not (isinstance(value, dict) and isinstance(value.get("name"), str)
                and value["name"] in machine.names and key in value):
            return None
        return (value["name"], value[key]), pos

    # special tokens are marked in the text (special_text), as the engine writes it
    special = special_text(fmt.special) if fmt.special else None
    if fmt.array:
        at = text.find(special) if special else -1
        if at < 0:
            return []
        pos = _skip(text, at + len(special), " \t\n\r")
        if not text.startswith("[", pos):
            return []
        pos += 1
        while True:
            pos = _skip(text, pos, " \t\n\r,")
            found = call_at(pos)
            if found is None:
                return calls
            call, pos = found
            calls.append(call)
    trigger = fmt.begin.rstrip(" \t\n\r") if fmt.begin else "{"
    pos = text.find(trigger)
    if pos < 0 or not text.startswith(fmt.begin, pos):
        return []
    pos += len(fmt.begin)
    while True:
        if special and text.startswith(special, pos):
            pos += len(special)
        found = call_at(pos)
        if found is None:
            return calls
        call, pos = found
        calls.append(call)
        if not text.startswith(fmt.end, pos):
            return calls
        pos += len(fmt.end)
        pos = _skip(text, pos, " \t\n\r")
        if fmt.separator and text.startswith(fmt.separator, pos):
            pos = _skip(text, pos + len(fmt.separator), " \t\n\r")
        if fmt.begin:
            if not text.startswith(fmt.begin, pos):
                return calls
            pos += len(fmt.begin)


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos
