"""Tools as OpenAI-style definitions: from dicts, pydantic models or Python functions.

`tool_schema(func)` makes the definition of a function from its signature, type hints and
docstring; `normalize_tools(tools)` checks a list of tools and returns their definitions,
`{"type": "function", "function": {"name", "description", "parameters"}}`.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import inspect
import math
import re
import sys
import types
import typing
import warnings
from typing import Any, Callable, Iterable

from pse.errors import SchemaError

__all__ = ["normalize_tools", "tool_schema"]

_PLAIN = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def tool_schema(func: Callable[..., Any]) -> dict:
    """The OpenAI tool definition of a Python function.

    Each parameter is a property of `parameters`, with the JSON Schema of its type hint and
    the description the docstring gives it (Google "Args:", reST ":param x:" or NumPy
    "Parameters" sections); parameters without a default are required, and a default that
    JSON can hold is recorded. The description is the docstring's text before its sections.

    Hints: str, int, float, bool, None, Any, list / Sequence / set / tuple, dict[str, T],
    Optional / Union / `X | Y`, Literal, Enum, Annotated (a str is a description; other
    metadata, as pydantic's `Field(ge=1)`, are constraints, read by pydantic), dataclasses,
    TypedDicts and pydantic models (their definitions under `$defs`).

    A `functools.partial` is the tool of its function less the arguments it binds (a
    database handle bound for the tool is no argument the model gives); an object with
    `__call__` is read from that method, named after its class.

    Args:
        func: the function.

    Returns:
        `{"type": "function", "function": {"name", "description", "parameters"}}`.

    Raises:
        SchemaError: a parameter without a type hint, `*args` / `**kwargs`, a positional-only
            parameter, or a hint with no JSON Schema (the message names the parameter).
        TypeError: `func` is not callable.
    """
    if not callable(func):
        raise TypeError(f"tool_schema takes a function, not {type(func).__name__}")
    target, name, bound = _annotated(func)
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as e:  # a hint that names something undefined
        raise SchemaError(f"tool {name!r}: cannot read its type hints: {e}") from None
    summary, described = _docstring(inspect.getdoc(target) or "")
    defs = _Defs()
    properties: dict[str, Any] = {}
    required = []
    for param in inspect.signature(func).parameters.values():
        if param.name in bound:
            continue
        where = f"tool {name!r}, parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise SchemaError(f"{where}: *args and **kwargs cannot be tool arguments")
        if param.kind is param.POSITIONAL_ONLY:
            raise SchemaError(f"{where}: a positional-only parameter cannot be a tool argument "
                              "(tools are called with keyword arguments)")
        if param.name not in hints:
            raise SchemaError(f"{where} has no type hint: its schema is unknown")
        schema = _schema(hints[param.name], defs, where)
        if param.name in described:
            schema = {**schema, "description": described[param.name]}
        if param.default is param.empty:
            required.append(param.name)
        elif _json_value(param.default):
            schema = {**schema, "default": param.default}
        properties[param.name] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties,
                                  "required": required, "additionalProperties": False}
    if defs.schemas:
        parameters["$defs"] = defs.schemas
    function: dict[str, Any] = {"name": name}
    if summary:
        function["description"] = summary
    function["parameters"] = parameters
    return {"type": "function", "function": function}


def _annotated(func: Callable[..., Any]) -> tuple[Callable[..., Any], str, set[str]]:
    """What holds `func`'s type hints and docstring (a partial's function, a callable
    object's `__call__`), the tool's name, and the keyword arguments a partial binds."""
    bound: set[str] = set()
    while isinstance(func, functools.partial):  # (partials of partials, where not flattened)
        bound |= set(func.keywords)
        func = func.func
    if inspect.isroutine(func) or isinstance(func, type):
        return func, getattr(func, "__name__", None) or type(func).__name__, bound
    return func.__call__, type(func).__name__, bound


def normalize_tools(tools: Iterable[Any]) -> list[dict]:
    """Check `tools` and return their OpenAI definitions.

    Args:
        tools: a list of OpenAI tool definitions (`{"type": "function", "function": {...}}`,
            or the flat `{"name", "description", "parameters"}`; Anthropic's `input_schema`
            is taken for `parameters`; a key of neither is warned of and ignored), pydantic
            model classes (the class name, its docstring and its JSON Schema), or Python
            functions (`tool_schema`).

    Returns:
        One `{"type": "function", "function": {"name", "description"?, "parameters"}}` per
        tool, in order (parameters default to an object with no properties).

    Raises:
        TypeError: `tools` is not a list (one tool alone, say), or an item is none of those.
        SchemaError: a malformed definition, or two tools with one name (named).
    """
    if isinstance(tools, (str, bytes, dict)) or callable(tools) or not isinstance(tools,
                                                                                  Iterable):
        raise TypeError(f"tools must be a list of tools, got {type(tools).__name__} (put a "
                        "single tool in a list)")
    out = [_definition(tool, k) for k, tool in enumerate(tools)]
    if not out:
        raise SchemaError("tools is empty: give at least one tool (or use tool_choice='none')")
    seen: set[str] = set()
    for tool in out:
        name = tool["function"]["name"]
        if name in seen:
            raise SchemaError(f"two tools are named {name!r}: a call names its tool, so names "
                              "must differ")
        seen.add(name)
    return out


def _definition(tool: Any, k: int) -> dict:
    if isinstance(tool, dict):
        if "function" in tool or ("type" in tool and not (
                tool["type"] == "custom" and "input_schema" in tool)):  # (Anthropic's)
            if tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
                raise SchemaError(f"tools[{k}]: a tool definition is {{'type': 'function', "
                                  f"'function': {{...}}}}, got type {tool.get('type')!r}")
            function = tool["function"]
        else:
            function = tool
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"tools[{k}]: a tool needs a name (a non-empty str), got {name!r}")
        _warn_unknown_keys(tool, function, k)
        if "input_schema" in function:  # (Anthropic's)
            if "parameters" in function:
                warnings.warn(f"tools[{k}]: both 'parameters' and 'input_schema': "
                              "'input_schema' ignored", stacklevel=_caller_level())
            else:
                function = {**function, "parameters": function["input_schema"]}
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, (dict, bool)):
            raise SchemaError(f"tool {name!r}: parameters must be a JSON Schema (an object), "
                              f"got {type(parameters).__name__}")
        description = function.get("description")
        out: dict[str, Any] = {"name": name}
        if description is not None:
            out["description"] = description
        out["parameters"] = parameters
        return {"type": "function", "function": out}
    if isinstance(tool, type) and hasattr(tool, "model_json_schema"):
        schema = dict(tool.model_json_schema())
        schema.pop("title", None)
        description = schema.pop("description", None) or inspect.getdoc(tool)
        out = {"name": tool.__name__}
        if description:
            out["description"] = " ".join(description.split())
        out["parameters"] = schema
        return {"type": "function", "function": out}
    if callable(tool) and not isinstance(tool, type):
        return tool_schema(tool)
    raise TypeError(f"tools[{k}]: a tool is an OpenAI definition (dict), a pydantic model "
                    f"class or a function, not {type(tool).__name__}")


_TOOL_KEYS = ("type", "function")
_FUNCTION_KEYS = ("name", "description", "parameters", "input_schema", "strict")


def _warn_unknown_keys(tool: dict, function: dict, k: int) -> None:
    """Warn of each key of a tool definition that none of its formats has: ignored."""
    keys = [key for key in function if key not in _FUNCTION_KEYS
            and not (function is tool and key == "type")]  # (Anthropic's "custom")
    if function is not tool:
        keys += [key for key in tool if key not in _TOOL_KEYS]
    for key in keys:
        near = difflib.get_close_matches(str(key), _FUNCTION_KEYS + _TOOL_KEYS, n=1)
        warnings.warn(f"tools[{k}]: {key!r} is not a key of a tool definition: ignored"
                      + (f" (did you mean {near[0]!r}?)" if near else ""),
                      stacklevel=_caller_level())


def _caller_level() -> int:
    """warnings.warn's stacklevel of the first caller outside pse (where the tools are
    given), from a function of pse that calls warn."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("pse."):
        frame, level = frame.f_back, level + 1
    return level


def _json_value(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)  # (JSON has no NaN nor infinity)
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_value(v) for k, v in value.items())
    return False


class _Defs:
    """The named definitions a function's hints need, and the Python type behind each."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}
        self.owners: dict[str, Any] = {}

    def add(self, name: str, schema: Any, owner: Any, where: str) -> None:
        # (one model met directly and inside another: pydantic writes it the same, and its
        # owner there is its title)
        if name in self.schemas and self.schemas[name] != schema:
            raise SchemaError(f"{where}: two different definitions are named {name!r}")
        self.schemas[name] = schema
        self.owners[name] = owner


def _schema(hint: Any, defs: _Defs, where: str) -> dict:
    """The JSON Schema of a type hint; named definitions go into `defs`."""
    if hint is Any:
        return {}
    if hint in _PLAIN:
        return {"type": _PLAIN[hint]}
    if hint is None:
        return {"type": "null"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        notes = [a for a in args[1:] if isinstance(a, str)]
        if len(notes) < len(args) - 1:  # constraints (pydantic's Field, annotated_types)
            schema = _adapted(hint, defs, where)
        else:
            schema = _schema(args[0], defs, where)
        return {**schema, "description": " ".join(notes)} if notes else schema
    if origin is typing.Literal:
        values = list(args)
        if not all(_json_value(v) for v in values):
            raise SchemaError(f"{where}: Literal values must be JSON values, got {hint!r}")
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin in (typing.Union, types.UnionType):
        branches = [_schema(a, defs, where) for a in args]
        plain = [b.get("type") for b in branches if set(b) == {"type"}]
        if len(plain) == len(branches):
            return {"type": plain}
        return {"anyOf": branches}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], defs, where)}
        if args == ((),):
            args = ()
        return {"type": "array", "prefixItems": [_schema(a, defs, where) for a in args],
                "items": False, "minItems": len(args), "maxItems": len(args)}
    if origin in (list, set, frozenset) or (origin is not None and _is_sequence(origin)):
        item = _schema(args[0], defs, where) if args else {}
        schema: dict[str, Any] = {"type": "array", "items": item}
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is dict:
        if args and args[0] is not str:
            raise SchemaError(f"{where}: JSON object keys are strings, got {hint!r}")
        return {"type": "object",
                "additionalProperties": _schema(args[1], defs, where) if args else {}}
    if hint in (list, set, tuple, dict):
        return {"type": "object"} if hint is dict else {"type": "array"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [m.value for m in hint]
        if not all(_json_value(v) for v in values):
            raise SchemaError(f"{where}: the values of {hint.__name__} are not JSON values")
        return {"enum": values}
    if isinstance(hint, type) and hasattr(hint, "model_json_schema"):
        return _pydantic(hint, defs, where)
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or _is_typed_dict(hint)):
        return _record(hint, defs, where)
    raise SchemaError(f"{where}: the type hint {hint!r} has no JSON Schema")


def _is_sequence(origin: Any) -> bool:
    import collections.abc as abc

    return isinstance(origin, type) and issubclass(origin, (abc.Sequence, abc.Set)) \
        and not issubclass(origin, (str, bytes))


def _is_typed_dict(hint: type) -> bool:
    return issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _record(hint: type, defs: _Defs, where: str) -> dict:
    """A dataclass or TypedDict: an object under `$defs` (a recursive one refers to itself)."""
    name = hint.__name__
    ref = {"$ref": f"#/$defs/{name}"}
    if name in defs.schemas:
        if defs.owners[name] is not hint:
            raise SchemaError(f"{where}: two different definitions are named {name!r}")
        return ref
    defs.add(name, {}, hint, where)  # (while in progress: a recursive field refers to it)
    hints = typing.get_type_hints(hint, include_extras=True)
    properties = {field: _schema(h, defs, f"{where}, field {field!r}")
                  for field, h in hints.items()}
    if dataclasses.is_dataclass(hint):
        required = [f.name for f in dataclasses.fields(hint)
                    if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]  # type: ignore[misc]
    else:
        required = sorted(hint.__required_keys__)  # type: ignore[attr-defined]
    defs.schemas[name] = {"type": "object", "properties": properties, "required": required,
                          "additionalProperties": False}
    return ref


def _adapted(hint: Any, defs: _Defs, where: str) -> dict:
    """An Annotated hint with constraints: its schema as pydantic makes it (the constraints are
    pydantic's: `Field(ge=1)`, `annotated_types.Le(9)`)."""
    try:
        import pydantic
    except ImportError:
        raise SchemaError(f"{where}: the constraints of {hint!r} need pydantic to read "
                          "them") from None
    try:
        schema = dict(pydantic.TypeAdapter(hint).json_schema(ref_template="#/$defs/{model}"))
    except Exception as e:
        raise SchemaError(f"{where}: pydantic cannot make a schema of {hint!r}: {e}") from None
    for name, definition in schema.pop("$defs", {}).items():
        defs.add(name, definition, definition.get("title", name), where)
    return schema


def _pydantic(model: type, defs: _Defs, where: str) -> dict:
    """A pydantic model: its schema under `$defs`, with its own definitions beside it."""
    schema = dict(model.model_json_schema(ref_template="#/$defs/{model}"))
    nested = schema.pop("$defs", {})
    # a model that refers to itself is among its own definitions, and its schema a $ref there
    itself = schema["$ref"] if list(schema) == ["$ref"] else None
    for name, definition in nested.items():
        owner = model if itself == f"#/$defs/{name}" else definition.get("title", name)
        defs.add(name, definition, owner, where)
    if itself is not None:
        return {"$ref": itself}
    defs.add(model.__name__, schema, model, where)
    return {"$ref": f"#/$defs/{model.__name__}"}


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns?|Raises|Yields|Examples?|Notes?|"
                      r"Attributes|See Also)\s*:?\s*$")


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(the text before the first section, {parameter: description}) of a docstring in
    Google ("Args:" then `name (type): text`), reST (`:param name: text`) or NumPy
    ("Parameters", a dashed line, then `name : type` and indented text) style."""
    lines = doc.splitlines()
    summary: list[str] = []
    described: dict[str, str] = {}
    section, current, numpy_style, base = None, None, False, 0
    k = 0
    while k < len(lines):
        line = lines[k]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        rest = re.match(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$", stripped)
        if rest:  # reST
            section, current = "rest", rest.group(1)
            described[current] = rest.group(2)
        elif _SECTION.match(stripped):
            section, current, base = stripped.rstrip(":").strip(), None, None
            numpy_style = k + 1 < len(lines) and set(lines[k + 1].strip()) == {"-"}
            k += numpy_style  # (skip the underline)
        elif stripped.startswith(":"):
            section, current = "rest-other", None
        elif section is None:
            summary.append(stripped)
        elif section in ("Args", "Arguments", "Parameters") and stripped:
            if base is None:
                base = indent
            if indent <= base:  # a parameter's first line
                pattern = (r"^(\w+)\s*(?::.*)?$" if numpy_style
                           else r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
                found = re.match(pattern, stripped)
                current = found.group(1) if found else None
                if current is not None:
                    described[current] = "" if numpy_style else found.group(2)
            elif current is not None:
                described[current] = (described[current] + " " + stripped).strip()
        elif section == "rest" and stripped and current is not None:
            described[current] = (described[current] + " " + stripped).strip()
        k += 1
    return " ".join(" ".join(summary).split()), {name: " ".join(text.split())
                                                 for name, text in described.items()}
