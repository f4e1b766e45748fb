"""The shape of a JSON Schema's keywords, checked before compiling: a keyword whose value has the
wrong JSON type (`"properties": true`, `"required": "a"`, `"minLength": null`) raises
`SchemaError` naming its pointer, instead of failing somewhere inside the compiler.

Only keywords pse reads are checked; unknown keywords are annotations. The types are those
of the JSON Schema specification (drafts 4 to 2020-12, where drafts differ both are allowed).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from pse.errors import SchemaError

SUBSCHEMA = "a schema (an object or a boolean)"

# Objects and arrays nested in a schema document (a dict given, or one `retrieve` returned)
# deeper than this are refused: the compiler's passes over a document recurse in C (Cython),
# where Python's recursion limit does not stop them before the thread's stack runs out (an
# allOf nested 50,000 deep crashed the process). A JSON text nests at most about as deep
# before Python's json module refuses it.
MAX_DOCUMENT_DEPTH = 1000


def _is_schema(v: Any) -> bool:
    return isinstance(v, (dict, bool))


def _is_number(v: Any) -> bool:
    """A JSON number: not a boolean, nor NaN or an infinity (Python's json reads those)."""
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and math.isfinite(v))


def _is_json(v: Any) -> bool:
    """A JSON value: null, booleans, strings, finite numbers, arrays and objects with string
    keys of them (walked without recursion: values nest as deep as a document can)."""
    todo = [v]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            if not all(isinstance(k, str) for k in x):
                return False
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
        elif not (x is None or isinstance(x, (str, bool)) or _is_number(x)):
            return False
    return True


def _is_count(v: Any) -> bool:
    return _is_number(v) and v >= 0 and float(v).is_integer()


# (loops, not all() over a generator: these run on every schema object compiled, and a
# generator is an object made and freed per call)
def _is_str_list(v: Any) -> bool:
    if not isinstance(v, list):
        return False
    for x in v:
        if not isinstance(x, str):
            return False
    return True


def _is_schema_map(v: Any) -> bool:
    if not isinstance(v, dict):
        return False
    for k, x in v.items():
        if not isinstance(k, str) or not isinstance(x, (dict, bool)):
            return False
    return True


def _is_schema_list(v: Any) -> bool:
    if not isinstance(v, list):
        return False
    for x in v:
        if not isinstance(x, (dict, bool)):
            return False
    return True


def _is_nonempty_schema_list(v: Any) -> bool:
    return _is_schema_list(v) and len(v) > 0


# keyword -> (check, what it must be)
_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "type": (lambda v: isinstance(v, str) or _is_str_list(v),
             "a type name or a list of type names"),
    "properties": (_is_schema_map, "an object of schemas"),
    "patternProperties": (_is_schema_map, "an object of schemas"),
    "$defs": (_is_schema_map, "an object of schemas"),
    "definitions": (_is_schema_map, "an object of schemas"),
    "dependentSchemas": (_is_schema_map, "an object of schemas"),
    "dependentRequired": (lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and _is_str_list(x) for k, x in v.items()),
        "an object of string arrays"),
    "dependencies": (lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and (_is_schema(x) or _is_str_list(x)) for k, x in v.items()),
        "an object of schemas or string arrays"),
    "required": (_is_str_list, "an array of strings"),
    "items": (lambda v: _is_schema(v) or _is_schema_list(v), "a schema or an array of schemas"),
    "prefixItems": (_is_schema_list, "an array of schemas"),
    "allOf": (_is_nonempty_schema_list, "a non-empty array of schemas"),
    "anyOf": (_is_nonempty_schema_list, "a non-empty array of schemas"),
    "oneOf": (_is_nonempty_schema_list, "a non-empty array of schemas"),
    "enum": (lambda v: isinstance(v, list) and _is_json(v), "an array of JSON values"),
    "const": (_is_json, "a JSON value (string keys, finite numbers)"),
    "minimum": (_is_number, "a (finite) number"),
    "maximum": (_is_number, "a (finite) number"),
    "multipleOf": (lambda v: _is_number(v) and v > 0, "a (finite) number above 0"),
    "exclusiveMinimum": (lambda v: _is_number(v) or isinstance(v, bool),
                         "a (finite) number (a boolean in draft 4)"),
    "exclusiveMaximum": (lambda v: _is_number(v) or isinstance(v, bool),
                         "a (finite) number (a boolean in draft 4)"),
    "pattern": (lambda v: isinstance(v, str), "a string"),
    "format": (lambda v: isinstance(v, str), "a string"),
    "$ref": (lambda v: isinstance(v, str), "a string"),
    "$id": (lambda v: isinstance(v, str), "a string"),
    "$anchor": (lambda v: isinstance(v, str), "a string"),
    "$schema": (lambda v: isinstance(v, str), "a string"),
    "uniqueItems": (lambda v: isinstance(v, bool), "a boolean"),
}
for _name in ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
              "maxProperties", "minContains", "maxContains"):
    _RULES[_name] = (_is_count, "a non-negative integer")
for _name in ("additionalProperties", "additionalItems", "not", "if", "then", "else",
              "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems"):
    _RULES[_name] = (_is_schema, SUBSCHEMA)


# keyword -> how its value holds schemas (once `_RULES` passed it): a map of them, a list of
# them or one, or one
_MAP, _LIST, _ONE = 1, 2, 3
_HOLDS = {**dict.fromkeys(("properties", "patternProperties", "$defs", "definitions",
                           "dependentSchemas", "dependencies"), _MAP),
          **dict.fromkeys(("items", "prefixItems", "allOf", "anyOf", "oneOf"), _LIST),
          **dict.fromkeys(("additionalProperties", "additionalItems", "not", "if", "then",
                           "else", "contains", "propertyNames", "unevaluatedProperties",
                           "unevaluatedItems"), _ONE)}


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _places(node: dict) -> list[tuple[Any, str, str | int | None]]:
    """The schemas directly inside `node` (after the check, so every value is of the right
    shape) in the order of its keys, each with its keyword and its name or index there (None:
    the keyword's value)."""
    out: list[tuple[Any, str, str | int | None]] = []
    for key, value in node.items():
        holds = _HOLDS.get(key)
        if holds == _MAP:  # ("dependencies" maps names to schemas or to lists of names)
            out.extend([(sub, key, name) for name, sub in value.items() if _is_schema(sub)])
        elif holds == _LIST and isinstance(value, list):
            out.extend([(sub, key, i) for i, sub in enumerate(value)])
        elif holds is not None:
            out.append((value, key, None))
    return out


def _subschemas(node: dict, pointer: str) -> list[tuple[Any, str]]:
    """`_places` with the pointer of each."""
    return [(sub, f"{pointer}/{key}" if name is None else
             f"{pointer}/{key}/{_escape(name) if isinstance(name, str) else name}")
            for sub, key, name in _places(node)]


def _checked_subschemas(node: Any) -> list | None:
    """The schemas directly inside `node` (in no set order) where `check_node` would pass it;
    else None. (One loop over its keys: most schema objects have a few of the keywords
    `_places` looks for.)"""
    if isinstance(node, bool):
        return []
    if not isinstance(node, dict):
        return None
    out: list = []
    for key, value in node.items():
        rule = _RULES.get(key)
        if rule is None:
            continue
        if not rule[0](value):
            return None
        holds = _HOLDS.get(key)
        if holds == _MAP:
            out.extend([sub for sub in value.values() if isinstance(sub, (dict, bool))])
        elif holds == _LIST:
            if isinstance(value, list):
                out.extend(value)
            else:
                out.append(value)
        elif holds == _ONE:
            out.append(value)
    return out


def check_node(node: Any, pointer: str) -> None:
    """Check the keywords of one schema object (not the schemas inside it).

    Raises:
        SchemaError: a keyword's value has the wrong type, or `node` is not a schema.
    """
    if not _is_schema(node):
        raise SchemaError(f"{pointer}: a schema is an object or a boolean, got {node!r:.60}")
    if isinstance(node, bool):
        return
    for key, value in node.items():
        rule = _RULES.get(key)
        if rule is not None and not rule[0](value):
            raise SchemaError(f"{pointer}/{_escape(key)}: {key}: must be {rule[1]}, "
                              f"got {value!r:.60}")


def check_depth(document: Any, where: str) -> None:
    """Refuse a document whose objects and arrays nest deeper than MAX_DOCUMENT_DEPTH (walked
    without recursion).

    Raises:
        SchemaError: it nests deeper (a container that holds itself does).
    """
    # a tree (as a parsed JSON text is) is walked once, each container met once; a document
    # that shares containers is walked again where a container is met from a greater depth
    # (walking it as a tree could take exponential time)
    todo = [(document, 1)]
    visits = 0
    while todo:
        node, depth = todo.pop()
        if depth > MAX_DOCUMENT_DEPTH:
            _too_deep(where)
        visits += 1
        if visits > _TREE_VISITS:
            _check_shared_depth(document, where)
            return
        children = node.values() if isinstance(node, dict) else node
        todo.extend([(x, depth + 1) for x in children if isinstance(x, (dict, list))])


# Containers `check_depth` walks as a tree before it walks them as a graph of shared ones.
_TREE_VISITS = 100_000


def _check_shared_depth(document: Any, where: str) -> None:
    """`check_depth` for a document that may share containers: one met again is walked again
    only from a greater depth."""
    deepest: dict[int, int] = {}
    todo = [(document, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_DOCUMENT_DEPTH:
            _too_deep(where)
        if deepest.get(id(node), 0) >= depth:
            continue
        deepest[id(node)] = depth
        children = node.values() if isinstance(node, dict) else node
        todo.extend([(x, depth + 1) for x in children if isinstance(x, (dict, list))])


def _too_deep(where: str) -> None:
    raise SchemaError(f"{where}: the schema nests more than {MAX_DOCUMENT_DEPTH} "
                      "objects and arrays deep (MAX_DOCUMENT_DEPTH)")


def check_document(root: Any) -> set[int]:
    """Check every schema of a document reachable through the keywords above.

    Returns:
        the ids of the schema objects checked (`check_node` need not look at them again
        while the document lives).

    Raises:
        SchemaError: a keyword's value has the wrong type (the first one found).
    """
    nodes = [root]
    seen: set[int] = set()
    while nodes:  # without pointers first: most documents are right
        node = nodes.pop()
        if isinstance(node, dict):
            if id(node) in seen:
                continue
            seen.add(id(node))
        subschemas = _checked_subschemas(node)
        if subschemas is None:
            break
        nodes.extend(subschemas)
    else:
        return seen
    # the same walk again, to the first error in the document's order and its pointer
    todo = [(root, "#")]
    seen = set()
    while todo:
        node, pointer = todo.pop()
        check_node(node, pointer)
        if isinstance(node, dict) and id(node) not in seen:
            seen.add(id(node))
            todo.extend(reversed(_subschemas(node, pointer)))
    return seen
