"""What the keyword families share: the keywords of each draft, limits, and helpers on schemas,
values and automata.
"""

from __future__ import annotations

import functools
import json
import math
from json.encoder import encode_basestring
from decimal import Decimal
from typing import Any, Callable

from pse import automaton
from pse.errors import GrammarError, SchemaError
from pse.json_spelling import json_char_class
from pse.regex import compile_regex

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

# Keywords that change what is valid (a conflict between allOf branches on any other key is
# no conflict at all).
_VALIDATION = {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
               "exclusiveMinimum", "maxLength", "minLength", "pattern", "items", "prefixItems",
               "additionalItems", "maxItems", "minItems", "uniqueItems", "contains",
               "maxContains", "minContains", "maxProperties", "minProperties", "required",
               "properties", "patternProperties", "additionalProperties", "dependencies",
               "dependentRequired", "dependentSchemas", "propertyNames", "if", "then", "else",
               "not", "format", "unevaluatedItems", "unevaluatedProperties", "$ref"}

# Keywords that apply subschemas to the instance itself.
_APPLICATORS = frozenset(["allOf", "anyOf", "oneOf", "not", "$dynamicRef", "$recursiveRef"])

# Every keyword pse reads: a key of a schema object that is none constrains nothing (pse's
# own, "pse:...", are no misspellings either: see _misspelled).
_KEYWORDS = frozenset(_ANNOTATIONS | _VALIDATION | _APPLICATORS | {"contentSchema"})
_CONSTRAINING = sorted(_VALIDATION | _APPLICATORS | {"contentSchema"})
_DOLLAR_KEYWORDS = sorted(k for k in _KEYWORDS if k.startswith("$"))
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")


@functools.lru_cache(maxsize=1024)
def _misspelled(key: Any) -> str | None:
    """For a key of a schema object that is no keyword, what it most likely meant, where
    that is a keyword that constrains: the keyword in other letter case or with punctuation
    after it (`anyof`, `type:`), one edit from a keyword of six letters or more (`minLenght`,
    `requried`), or OpenAPI's `nullable`. Such a key is ignored, as every unknown key is, so a
    warning says so. A key starting with `$` is one in other letter case or one edit from a
    reference keyword alone (`$Ref`, `$reff`, `$rel`: one of maskbench's schemas has `"items":
    {"$rel": ...}`, which allows any items). None for other keys: an extension (`x-order`,
    `$default`, `$$ref`), a key put out of use (`_format`, `//pattern`, as maskbench's schemas
    do), a short or distant one (`form`, `note`), a misspelled annotation (which changes
    nothing)."""
    if not isinstance(key, str) or key in _KEYWORDS:
        return None
    bare = key.rstrip(":\"' ").lower()
    if key[:1] == "$":  # (near another `$` keyword too, `$def`: no guess)
        if key[:2] == "$$":  # (extensions: swagger-client marks resolved refs `$$ref`)
            return None
        near = [k for k in _DOLLAR_KEYWORDS if k.lower() == bare or _one_edit(k, key)]
        if len(near) == 1 and near[0] in _REFERENCES:
            return f"did you mean {near[0]!r}?"
        return None
    if not key[:1].isalpha():
        return None
    if key == "nullable":
        return "OpenAPI's: add \"null\" to 'type' to allow null"
    for keyword in _CONSTRAINING:
        if keyword.lstrip("$").lower() == bare or (
                len(keyword) >= 6 and _one_edit(keyword, key)):
            return f"did you mean {keyword!r}?"
    return None


def _one_edit(a: str, b: str) -> bool:
    """`b` is `a` with one letter changed, added, dropped, or two neighbours swapped."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):  # (one changed, else two swapped: a[i + 1] is there, as a != b)
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i] == b[i + 1]
                                           and a[i + 1] == b[i])
    return a[i + 1:] == b[i:] if len(a) > len(b) else a[i:] == b[i + 1:]


# Subschemas nested (through properties, items, applicators, references being expanded) deeper
# than this are refused with the pointer, well before Python's recursion limit.
MAX_SCHEMA_DEPTH = 100


def _of_types(values: list, types: Any) -> list:
    """The values whose JSON type is one of `types` (a name or a list; 1.0 is an integer)."""
    types = [types] if isinstance(types, str) else list(types)
    return [v for v in values if _json_type(v) in types
            or (_json_type(v) == "integer" and "number" in types)
            or (_json_type(v) == "number" and "integer" in types and float(v).is_integer())]


def _listed(schema: Any) -> list | None:
    """The values of a schema that only lists them (enum or const, beside annotations and
    unknown keywords: no type, which would filter them by draft), or of an anyOf of such
    schemas; None otherwise."""
    schema = _validating(schema)
    if not isinstance(schema, dict):
        return None
    if set(schema) == {"const"}:
        return [schema["const"]]
    if set(schema) == {"enum"} and isinstance(schema["enum"], list):
        return _distinct(schema["enum"])
    if set(schema) == {"anyOf"} and isinstance(schema["anyOf"], list) and schema["anyOf"]:
        parts = [_listed(b) for b in schema["anyOf"]]
        return None if any(p is None for p in parts) else _distinct(
            [v for p in parts for v in p])
    return None


def _validating(schema: Any) -> Any:
    """`schema`'s keywords that change what is valid (annotations and unknown keywords are
    left out; pse's own are kept); a boolean schema as it is."""
    if not isinstance(schema, dict):
        return schema
    return {k: v for k, v in schema.items() if k not in _ANNOTATIONS and (
        k in _VALIDATION or k in _APPLICATORS or k.startswith("pse:"))}


# (json.dumps given options makes an encoder at each call: these are made once)
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_SORTED = json.JSONEncoder(sort_keys=True)


def _dumps(v: Any) -> bytes:
    return _COMPACT.encode(v).encode()


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
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return ("number", int(v))  # (exact: Decimal's context rounds past 28 digits)
    if isinstance(v, float):
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
    return encode_basestring(name)[1:-1].encode()


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


def _conjuncts(schema: dict) -> list:
    """`schema` as the schemas that all hold where it does: its own keywords and the members
    of its allOf (nested ones too)."""
    parts = [{k: v for k, v in schema.items() if k != "allOf"}]
    for sub in schema["allOf"] if isinstance(schema.get("allOf"), list) else ():
        parts += _conjuncts(sub) if isinstance(sub, dict) else [sub]
    return parts


def _same(a: Any, b: Any) -> bool:
    """Whether two schemas are the same JSON (true and 1 told apart: `==` alone would not,
    so it only rules out, cheaply, what differs)."""
    return a is b or (a == b and _SORTED.encode(a) == _SORTED.encode(b))


def _pair_disjoint(a: Any, b: Any, resolve: Callable[[Any], Any] | None = None,
                   same: Callable[[Any, Any], bool] | None = None, depth: int = 0) -> bool:
    """A proof that no value matches both branches (False: maybe one does). `resolve`: a
    schema with its top-level $ref and allOf merged in (see `resolve_shallow`), for the
    subschemas met inside (None: taken as they are); `same`: whether two schemas mean the
    same, their references read from their own bases (see `same_meaning`; None: only one
    object is the same as itself)."""
    if resolve is not None:
        a, b = resolve(a), resolve(b)
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict) or depth > _DISJOINT_DEPTH:
        return False
    if "allOf" in a or "allOf" in b:  # (merged branches: a property's schemas side by side)
        ca, cb = _conjuncts(a), _conjuncts(b)
        return any(_pair_disjoint(x, y, resolve, same, depth + 1) for x in ca for y in cb) \
            or _possible_values(ca + cb) == set()
    if not _types(a) & _types(b):
        return True
    if _possible_values([a, b]) == set():  # (values one lists, the other's type or pattern)
        return True
    if _refuses(a, b, resolve, same) or _refuses(b, a, resolve, same) or _lengths_apart(a, b):
        return True
    if _types(a) <= {"object"} or _types(b) <= {"object"}:
        pa, pb = a.get("properties") or {}, b.get("properties") or {}
        ra, rb = set(a.get("required") or []), set(b.get("required") or [])
        # a property one requires, with values that cannot agree (a discriminator): the
        # other's schema for it fails wherever the one holds
        for name in ra | rb:
            if name in pa and name in pb and _pair_disjoint(pa[name], pb[name], resolve, same,
                                                             depth + 1):
                return True
        # one requires a property the other forbids
        if any(_forbids(b, name) for name in ra) or any(_forbids(a, name) for name in rb):
            return True
    return False


# How deep `_pair_disjoint` follows properties (recursive schemas would go on forever).
_DISJOINT_DEPTH = 8


def _lengths_apart(a: dict, b: dict) -> bool:
    """Whether both branches hold only for strings (or only arrays, or only objects) whose
    length bounds leave no length to both."""
    for kind, low, high in (("string", "minLength", "maxLength"), ("array", "minItems", "maxItems"),
                            ("object", "minProperties", "maxProperties")):
        if _types(a) <= {kind} and _types(b) <= {kind}:
            bounds = [(x.get(low, 0), x.get(high, math.inf)) for x in (a, b)]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for pair in bounds for v in pair):
                (lo_a, hi_a), (lo_b, hi_b) = bounds
                return hi_a < lo_b or hi_b < lo_a
    return False


def _refuses(a: dict, b: dict, resolve: Callable[[Any], Any] | None,
             same: Callable[[Any, Any], bool] | None) -> bool:
    """Whether `a`'s `not` is `b`, or what `b` asks (and more): no value matches both."""
    if "not" not in a:
        return False
    refused = resolve(a["not"]) if resolve is not None else a["not"]
    if refused is b or same is None:
        return refused is b
    return same(refused, b) or ("not" not in b and same(refused, {
        k: v for k, v in b.items() if k not in _ANNOTATIONS}))


def _possible_values(parts: list) -> set | None:
    """The values (by `_json_key`) that all of `parts` may hold for, where some of them list
    values: the lists intersected, less the values a part's type or pattern rules out; None
    when no part lists values."""
    listed: dict | None = None
    for part in parts:
        if not isinstance(part, dict):
            continue
        values = [part["const"]] if "const" in part else part.get("enum")
        if isinstance(values, list):
            keyed = {_json_key(v): v for v in values}
            listed = keyed if listed is None else {k: v for k, v in listed.items() if k in keyed}
    if listed is None:
        return None
    refused = [_refused_keys(part) for part in parts]
    return {k for k, v in listed.items()
            if not any(k in keys for keys in refused)
            and all(_may_hold(part, v) for part in parts)}


def _refused_keys(part: Any) -> set:
    """The values (by `_json_key`) that `part`'s `not` of listed values rules out (a
    discriminator: "anything but these" beside constants); empty when it has no such `not`."""
    refused = part.get("not") if isinstance(part, dict) else None
    if not isinstance(refused, dict) or not ("const" in refused or "enum" in refused) \
            or not isinstance(refused.get("enum", []), list) \
            or not set(refused) - {"const", "enum"} <= _ANNOTATIONS:
        return set()
    keys = {_json_key(v) for v in refused["enum"]} if "enum" in refused else None
    if "const" in refused:
        const = _json_key(refused["const"])
        return {const} if keys is None or const in keys else set()
    return keys


def _may_hold(part: Any, value: Any) -> bool:
    """False where `part`'s type or pattern rules `value` out (True: it may hold)."""
    if not isinstance(part, dict):
        return part is not False
    kinds = part.get("type")
    kinds = {kinds} if isinstance(kinds, str) else set(kinds) if isinstance(kinds, list) else None
    if kinds is not None:
        kind = _json_type(value)
        whole = kind == "number" and math.isfinite(value) and float(value).is_integer()
        if kind not in kinds and not (kind == "integer" and "number" in kinds) \
                and not (whole and "integer" in kinds):
            return False
    if isinstance(value, str) and isinstance(part.get("pattern"), str):
        finder = _pattern_finder(part["pattern"])
        if finder is not None and not finder.matches(_content(value)):
            return False
    return True


@functools.lru_cache(maxsize=256)
def _pattern_finder(pattern: str) -> automaton.DFA | None:
    """String contents (as JSON spells them) `pattern` finds a match in; None when it does
    not compile here (the schema's own compile says why)."""
    try:
        return compile_regex(pattern, 0, search=True, char_class=json_char_class, ecma=True)
    except GrammarError:
        return None


def _forbids(schema: dict, name: str) -> bool:
    """Whether an object `schema` holds for can never have the property `name` (False:
    maybe it can)."""
    props = schema.get("properties") or {}
    if not isinstance(props, dict):
        return False
    if props.get(name) is False:
        return True
    return name not in props and schema.get("additionalProperties") is False \
        and not schema.get("patternProperties")
