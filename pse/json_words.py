"""JSON places and schemas in words, for explanations of refused tokens (pse.explain).

`json_place` reads a JSON text that may stop anywhere and says where its end is: the path of
the value being written (`$.days`, `$.items[2]`), or of the object whose key is being
written. `schema_at` follows a path through a schema; `schema_words` says what a schema allows
(`an integer at most 14`); `value_words` says why a value written so far does not fit it
(`"30" exceeds it`). Words only: the engine, not these, decides what is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

MAX_LISTED = 6        # enum values and property names listed before "..."
MAX_BRANCHES = 8      # schemas a path may lead to (through anyOf, oneOf)
MAX_REF_HOPS = 32     # $refs followed in a row (a reference leading to itself ends)
MAX_WORDS_DEPTH = 2   # levels of anyOf/oneOf/allOf/not put in words

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class JsonPlace:
    """Where a JSON text that stops anywhere stops.

    Attributes:
        path: keys and indices from the top value to the value being written (or, in a key,
            to its object).
        in_key: the text stops where an object's key is (being) written.
        start: the offset where the value (or key) being written began, or None where none
            has begun (before a value, after a complete one).
    """

    path: tuple[str | int, ...]
    in_key: bool
    start: int | None


def path_text(path: tuple[str | int, ...]) -> str:
    """`$`, `$.days`, `$.items[2]`, `$["a key"]`."""
    out = "$"
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        elif _IDENTIFIER.match(step):
            out += "." + step
        else:
            out += "[" + json.dumps(step, ensure_ascii=False) + "]"
    return out


def json_place(text: bytes) -> JsonPlace:
    """Where `text`, the start of a JSON value (blanks allowed), stops."""
    # each open container: [is_object, key or index, expecting] where expecting is "key",
    # "colon", "value" or "comma"
    stack: list[list[Any]] = []
    start: int | None = None     # of the string or scalar being read
    in_string = escaped = False
    key_start: int | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == 0x5C:
                escaped = True
            elif ch == 0x22:
                in_string = False
                if key_start is not None:
                    stack[-1][1] = _decoded(text[key_start:i + 1])
                    stack[-1][2] = "colon"
                    key_start = None
                else:
                    _value_done(stack)
                start = None
            i += 1
            continue
        if ch in b" \t\n\r,:}]" and start is not None:  # a scalar ends
            start = None
            _value_done(stack)
        if ch in b" \t\n\r":
            pass
        elif ch == 0x7B or ch == 0x5B:  # { [
            stack.append([ch == 0x7B, None if ch == 0x7B else 0, "key" if ch == 0x7B else "value"])
        elif ch == 0x7D or ch == 0x5D:  # } ]
            if stack:
                stack.pop()
            _value_done(stack)
        elif ch == 0x3A:  # :
            if stack:
                stack[-1][2] = "value"
        elif ch == 0x2C:  # ,
            if stack:
                top = stack[-1]
                if top[0]:
                    top[1], top[2] = None, "key"
                else:
                    top[1], top[2] = top[1] + 1, "value"
        elif ch == 0x22:
            in_string, start = True, i
            if stack and stack[-1][0] and stack[-1][2] == "key":
                key_start = i
        elif start is None:
            start = i
        i += 1
    in_key = bool(stack) and stack[-1][0] and stack[-1][2] in ("key", "colon")
    if in_key:
        path = tuple(s[1] for s in stack[:-1])
        return JsonPlace(path, True, key_start)
    path = tuple(s[1] for s in stack)
    if stack and stack[-1][2] == "comma":  # between values: the container's place
        return JsonPlace(path[:-1], False, None)
    return JsonPlace(path, False, start)


def _value_done(stack: list[list[Any]]) -> None:
    if stack:
        stack[-1][2] = "comma"


def _decoded(quoted: bytes) -> str:
    try:
        return json.loads(quoted)
    except ValueError:
        return quoted[1:-1].decode("utf-8", errors="replace")


# --- schemas --------------------------------------------------------------------------------

def schema_at(root: Any, path: tuple[str | int, ...]) -> list[Any]:
    """The schemas the value at `path` must fit (several through anyOf/oneOf branches);
    empty where the path leads through what cannot be followed (a remote `$ref`)."""
    current = [_resolved(root, root)]
    for step in path:
        following = []
        for schema in _branches(root, current):
            following += _child(root, schema, step)
        current = [s for s in following if s is not None][:MAX_BRANCHES]
        if not current:
            return []
    return current


def _branches(root: Any, schemas: list[Any]) -> list[Any]:
    """Schemas with their allOf/anyOf/oneOf parts spread out (each part a schema of its own
    for the step after)."""
    out = []
    todo = list(schemas)
    while todo and len(out) < 4 * MAX_BRANCHES:
        schema = _resolved(root, todo.pop(0))
        out.append(schema)
        if isinstance(schema, dict):
            for keyword in ("allOf", "anyOf", "oneOf"):
                parts = schema.get(keyword)
                if isinstance(parts, list):
                    todo += parts
    return out


def _child(root: Any, schema: Any, step: str | int) -> list[Any]:
    if schema is True or schema is False:
        return [schema]
    if not isinstance(schema, dict):
        return []
    if isinstance(step, int):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft 4 to 2019-09: a list of item schemas
            prefix, items = items, schema.get("additionalItems", True)
        if isinstance(prefix, list) and step < len(prefix):
            return [_resolved(root, prefix[step])]
        if "items" in schema or "additionalItems" in schema:
            return [_resolved(root, items if items is not None else True)]
        return []
    found = []
    properties = schema.get("properties")
    if isinstance(properties, dict) and step in properties:
        found.append(properties[step])
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, sub in patterns.items():
            try:
                if re.search(pattern, step):
                    found.append(sub)
            except re.error:
                pass
    if not found and "additionalProperties" in schema:
        found.append(schema["additionalProperties"])
    return [_resolved(root, s) for s in found]


def _resolved(root: Any, schema: Any) -> Any:
    """`schema` with its local `$ref`s followed (a remote one: left as it is)."""
    for _ in range(MAX_REF_HOPS):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return schema
        target = _pointer(root, schema["$ref"])
        if target is None:
            return schema
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        if not rest:
            schema = target
        else:  # 2019-09 on: $ref beside other keywords, both apply
            return {"allOf": [target, rest]}
    return schema


def _pointer(root: Any, ref: str) -> Any:
    if ref != "#" and not ref.startswith("#/"):  # (an anchor, another document: not followed)
        return None
    node = root
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "boolean": "true or false", "null": "null", "object": "an object",
               "array": "an array"}


def schema_words(root: Any, schema: Any, depth: int = 0) -> str:
    """What `schema` allows, in a few words: `an integer at most 14`; the schemas inside
    anyOf, oneOf, allOf and not only to MAX_WORDS_DEPTH levels (a schema may refer to
    itself)."""
    if depth > MAX_WORDS_DEPTH:
        return "..."
    schema = _resolved(root, schema)
    if schema is True or schema == {}:
        return "any JSON value"
    if schema is False:
        return "nothing"
    if not isinstance(schema, dict):
        return "a value"
    if isinstance(schema.get("$ref"), str):  # (one _resolved could not follow)
        return f"the schema {schema['$ref']}"
    if "const" in schema:
        return "the value " + _dumps(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + _listed([_dumps(v) for v in schema["enum"]])
    parts = [_typed_words(schema, t) for t in _types(schema)]
    words = " or ".join(p for p in parts if p)
    for keyword, joiner in (("anyOf", " or "), ("oneOf", " or ")):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            inner = joiner.join(schema_words(root, b, depth + 1) for b in branches[:MAX_LISTED])
            more = ", ..." if len(branches) > MAX_LISTED else ""
            words = (words + ", " if words else "") + f"one of: {inner}{more}"
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        inner = " and ".join(w for w in (schema_words(root, b, depth + 1) for b in all_of)
                             if w != "any JSON value")
        if inner:
            words = f"{words} and {inner}" if words else inner
    if "not" in schema:
        words = (words + ", " if words else "") + "not " + schema_words(root, schema["not"],
                                                                          depth + 1)
    return words or "any JSON value"


def _types(schema: dict) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    implied = []  # no "type": what the keywords of one type imply, to name the bounds
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                 "multipleOf")):
        implied.append("number")
    if any(k in schema for k in ("minLength", "maxLength", "pattern", "format")):
        implied.append("string")
    if any(k in schema for k in ("properties", "required", "additionalProperties",
                                 "minProperties", "maxProperties")):
        implied.append("object")
    if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
        implied.append("array")
    return implied


def _typed_words(schema: dict, kind: str) -> str:
    words = _TYPE_WORDS.get(kind, kind)
    if kind in ("integer", "number"):
        return words + _bounds(schema)
    if kind == "string":
        words += _range(schema.get("minLength"), schema.get("maxLength"), "character")
        if isinstance(schema.get("pattern"), str):
            words += f" matching /{schema['pattern']}/"
        if isinstance(schema.get("format"), str):
            words += f" in format {schema['format']}"
        return words
    if kind == "array":
        return words + _range(schema.get("minItems"), schema.get("maxItems"), "item")
    if kind == "object":
        properties = schema.get("properties")
        if isinstance(properties, dict) and properties:
            words += " with properties " + _listed(list(properties))
        required = schema.get("required")
        if isinstance(required, list) and required:
            words += " (required: " + _listed([str(r) for r in required]) + ")"
        if schema.get("additionalProperties") is False:
            words += ", no others"
        return words
    return words


def _bounds(schema: dict) -> str:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    lo_open = hi_open = False
    if schema.get("exclusiveMinimum") is True:  # draft 4: a flag on minimum
        lo_open = True
    elif _is_number(schema.get("exclusiveMinimum")):
        lo, lo_open = schema["exclusiveMinimum"], True
    if schema.get("exclusiveMaximum") is True:
        hi_open = True
    elif _is_number(schema.get("exclusiveMaximum")):
        hi, hi_open = schema["exclusiveMaximum"], True
    lo = lo if _is_number(lo) else None
    hi = hi if _is_number(hi) else None
    if lo is not None and hi is not None and not lo_open and not hi_open:
        words = f" from {_dumps(lo)} to {_dumps(hi)}"
    else:
        words = ""
        if lo is not None:
            words += f" {'above' if lo_open else 'at least'} {_dumps(lo)}"
        if hi is not None:
            words += (" and" if words else "") + f" {'below' if hi_open else 'at most'} {_dumps(hi)}"
    if _is_number(schema.get("multipleOf")):
        words += ("," if words else "") + f" a multiple of {_dumps(schema['multipleOf'])}"
    return words


def _range(lo: Any, hi: Any, unit: str) -> str:
    lo = lo if isinstance(lo, int) and not isinstance(lo, bool) and lo > 0 else None
    hi = hi if isinstance(hi, int) and not isinstance(hi, bool) else None
    if lo is not None and hi is not None:
        count = f"{lo}" if lo == hi else f"{lo} to {hi}"
        return f" of {count} {unit}{'' if count == '1' else 's'}"
    if hi is not None:
        return f" of at most {hi} {unit}{'' if hi == 1 else 's'}"
    if lo is not None:
        return f" of at least {lo} {unit}{'' if lo == 1 else 's'}"
    return ""


def value_words(root: Any, schemas: list[Any], got: str) -> str | None:
    """Why `got`, a value written so far (complete or not), cannot be the value of any of
    `schemas`, where one plain reason fits them all (`"30" exceeds it`); else None."""
    reasons = set()
    for schema in schemas:
        reasons.add(_reason(_resolved(root, schema), got))
    if len(reasons) == 1:
        return reasons.pop()
    return None


def _reason(schema: Any, got: str) -> str | None:
    if not isinstance(schema, dict):
        return None
    shown = quoted(got)
    if "const" in schema or isinstance(schema.get("enum"), list):
        return f"{shown} is not " + ("it" if "const" in schema else "one of them")
    value = _number(got)
    kinds = _types(schema)
    if value is not None and set(kinds) & {"integer", "number"}:
        lo, hi = schema.get("minimum"), schema.get("maximum")
        lo_open = schema.get("exclusiveMinimum") is True
        hi_open = schema.get("exclusiveMaximum") is True
        if _is_number(schema.get("exclusiveMaximum")):
            hi, hi_open = schema["exclusiveMaximum"], True
        if _is_number(schema.get("exclusiveMinimum")):
            lo, lo_open = schema["exclusiveMinimum"], True
        hi = Decimal(str(hi)) if _is_number(hi) else None
        lo = Decimal(str(lo)) if _is_number(lo) else None
        if hi is not None and (value >= hi if hi_open else value > hi):
            return f"{shown} exceeds it"
        if lo is not None and (value <= lo if lo_open else value < lo):
            return f"{shown} is below it"
        if "integer" in kinds and "number" not in kinds and any(c in got for c in ".eE"):
            return f"{shown} is not an integer"
    kind = _kind_of(got)
    if kind != "value" and kinds and kind not in kinds and not (
            kind == "integer" and "number" in kinds):
        return f"{shown} is {_TYPE_WORDS[kind]}"
    if got.startswith('"') and "string" in kinds and isinstance(schema.get("maxLength"), int):
        if len(got[1:].rstrip('"')) > schema["maxLength"]:
            return f"{shown} is longer"
    return None


def quoted(text: str) -> str:
    """`text` in double quotes, or in single quotes where it holds a double quote."""
    if '"' in text and "'" not in text:
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)


def _kind_of(got: str) -> str:
    first = got[:1]
    if first == '"':
        return "string"
    if first == "{":
        return "object"
    if first == "[":
        return "array"
    if first in ("t", "f"):
        return "boolean"
    if first == "n":
        return "null"
    if first == "-" or first.isdigit():
        return "integer" if not any(c in got for c in ".eE") else "number"
    return "value"


def _number(got: str) -> Decimal | None:
    """The number `got` spells (exactly: a long integer is no float), or None."""
    try:
        value = json.loads(got, parse_float=Decimal, parse_int=Decimal)
    except (ValueError, ArithmeticError):
        return None
    return value if isinstance(value, Decimal) and value.is_finite() else None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _dumps(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f", ... ({len(names)} in all)" if len(names) > MAX_LISTED else "")
