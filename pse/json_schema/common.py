"""What the keyword families share: the keywords of each draft, limits, and helpers on schemas,
values and automata.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from pse import automaton
from pse.errors import SchemaError

_HEX = [(ord("0"), ord("9")), (ord("a"), ord("f")), (ord("A"), ord("F"))]
# Keywords that only annotate; they never change what is valid.
_ANNOTATIONS = {"title", "description", "default", "examples", "$comment", "$schema", "$id",
                "id", "readOnly", "writeOnly", "deprecated", "$anchor", "$dynamicAnchor",
                "$recursiveAnchor", "$defs", "definitions", "contentMediaType",
                "contentEncoding", "$vocabulary", "discriminator", "xml", "externalDocs",
                "example"}

# Strings whose length is bounded and constrained by a pattern too are intersected with an
# unrolled length automaton; above this bound their characters are counted at run time (key
# names: refused).
MAX_UNROLLED_LENGTH = 64
# The largest count the core keeps (its counters are 32-bit; -1 means unbounded).
MAX_COUNT = 2**31 - 2


def _unrolled_length(lo: int, hi: int | None) -> bool:
    """Whether string length bounds beside a pattern are unrolled into its automaton (else
    the characters are counted at run time: CharCountedTerminal)."""
    return (hi is None and lo <= MAX_UNROLLED_LENGTH) or (hi is not None
                                                         and hi <= MAX_UNROLLED_LENGTH)

# Subschemas nested (through properties, items, applicators, references being expanded) deeper
# than this are refused with the pointer, well before Python's recursion limit.
MAX_SCHEMA_DEPTH = 100


def _of_types(values: list, types: Any) -> list:
    """The values whose JSON type is one of `types` (a name or a list; 1.0 is an integer)."""
    types = [types] if isinstance(types, str) else list(types)
    return [v for v in values if _json_type(v) in types
            or (_json_type(v) == "integer" and "number" in types)
            or (_json_type(v) == "number" and "integer" in types and float(v).is_integer())]


def _dumps(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


def _distinct(values: list) -> list:
    """Values without JSON-equal repeats (1 and 1.0 are one value)."""
    seen: dict = {}
    for v in values:
        seen.setdefault(_json_key(v), v)
    return list(seen.values())


def _json_key(v: Any) -> Any:
    """A hashable key; JSON-equal values (1 and 1.0, objects in any order) share it."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return (type(v).__name__, v)
    if isinstance(v, (int, float)):
        return ("number", Decimal(str(v)).normalize() if math.isfinite(v) else str(v))
    if isinstance(v, list):
        return ("array", tuple(_json_key(x) for x in v))
    if isinstance(v, dict):
        return ("object", frozenset((k, _json_key(x)) for k, x in v.items()))
    return ("other", repr(v))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _every_state_loops(dfa: automaton.DFA) -> bool:
    """Whether every state of `dfa` (trimmed) can reach a cycle: peeling the reversed graph
    lists exactly the states that cannot (none may be)."""
    pred: list[list[int]] = [[] for _ in dfa.trans]
    for s, row in enumerate(dfa.trans):
        for t in {t for _, _, t in row}:
            pred[t].append(s)
    return not automaton.peel_order(pred)


def _nonempty(dfa: automaton.DFA) -> bool:
    return dfa.accept[0] or bool(dfa.trans[0])


def _count(node: dict, key: str, pointer: str, default: int | None = None) -> int | None:
    """A non-negative integer keyword (2.0 counts as 2). An upper bound beyond MAX_COUNT is
    MAX_COUNT (refusing only instances of over two billion characters, items or
    properties); a lower bound beyond it is refused."""
    value = node.get(key, default)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError(f"{pointer}/{key}: must be an integer >= 0, got {value!r}")
    if value > MAX_COUNT:
        if key.startswith("max"):
            return MAX_COUNT
        raise SchemaError(f"{pointer}/{key}: {value} is beyond the largest count kept "
                          f"({MAX_COUNT}, MAX_COUNT)")
    return value


def _content(name: str) -> bytes:
    """A key's string content as compact JSON spells it."""
    return json.dumps(name, ensure_ascii=False)[1:-1].encode()


def _escape(name: str) -> str:
    return str(name).replace("~", "~0").replace("/", "~1")


def _exclusion(sub: Any) -> tuple[list, list[str]] | None:
    """What `"not": sub` leaves out when it is literal values (enum, const), strings a
    pattern finds a match in, or any of those (anyOf): (values, patterns); None when it is
    something else."""
    if not isinstance(sub, dict):
        return None
    sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
    if set(sub) == {"enum"} and isinstance(sub["enum"], list):
        return sub["enum"], []
    if set(sub) == {"const"}:
        return [sub["const"]], []
    if set(sub) == {"type", "pattern"} and sub["type"] == "string" \
            and isinstance(sub["pattern"], str):
        return [], [sub["pattern"]]
    if set(sub) == {"anyOf"} and isinstance(sub["anyOf"], list) and sub["anyOf"]:
        parts = [_exclusion(x) for x in sub["anyOf"]]
        if any(p is None for p in parts):
            return None
        return [v for p in parts for v in p[0]], [x for p in parts for x in p[1]]
    return None

_ALL_TYPES = frozenset(["object", "array", "string", "number", "boolean", "null"])


def _types(branch: dict) -> frozenset[str]:
    """The JSON types a branch may match ("integer" counted as "number")."""
    if "const" in branch or "enum" in branch:
        values = [branch["const"]] if "const" in branch else list(branch.get("enum") or [])
        return frozenset("number" if _json_type(v) == "integer" else _json_type(v)
                         for v in values)
    t = branch.get("type")
    if t is None:
        return _ALL_TYPES
    names = [t] if isinstance(t, str) else list(t)
    return frozenset("number" if x == "integer" else x for x in names)


def _values(branch: dict) -> set | None:
    """The values a branch lists (by `_json_key`: 1 and 1.0 are one); None: not a list."""
    if "const" in branch:
        return {_json_key(branch["const"])}
    if "enum" in branch and isinstance(branch["enum"], list):
        return {_json_key(v) for v in branch["enum"]}
    return None


def _pair_disjoint(a: Any, b: Any) -> bool:
    """A proof that no value matches both branches (False: maybe one does)."""
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    if not _types(a) & _types(b):
        return True
    va, vb = _values(a), _values(b)
    if va is not None and vb is not None and not va & vb:
        return True
    if _types(a) <= {"object"} or _types(b) <= {"object"}:
        pa, pb = a.get("properties") or {}, b.get("properties") or {}
        ra, rb = set(a.get("required") or []), set(b.get("required") or [])
        # a property one requires, with values that cannot agree (a discriminator): the
        # other's schema for it fails wherever the one holds
        for name in ra | rb:
            if name in pa and name in pb and _pair_disjoint(pa[name], pb[name]):
                return True
        # one requires a property the other forbids
        for x, y, rx in ((a, b, ra), (b, a, rb)):
            py = y.get("properties") or {}
            if y.get("additionalProperties") is False and not y.get("patternProperties"):
                if any(name not in py for name in rx):
                    return True
            if any(py.get(name) is False for name in rx):
                return True
    return False
