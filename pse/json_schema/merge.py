"""allOf merged into one schema where its branches allow (their keywords combined, conflicts
found), and anyOf spread over types: the schema-to-schema rewrites the logic family uses.
"""

from __future__ import annotations

import operator
import re
from typing import Any, Callable

from pse.errors import GrammarError, SchemaError
from pse.json_spelling import json_char_class
from pse.regex import compile_regex, search_for_all
from pse.json_schema.common import (_ANNOTATIONS, _VALIDATION, _json_key,
                                    _listed, _same)

# A contains and the counts that go with it.
_CONTAINS = ("contains", "minContains", "maxContains")

# A keyword of pse's own, never read from a user's schema (see `in_dialect`): a list of
# {"names": a schema for key names, "value": a schema, "else": the values "value" rejects},
# each asking for some property whose name "names" allows and whose value "value" does. It
# is how `opposite` says what no JSON Schema keyword says: "some key not listed is present".
SOME_PROPERTY = "pse:someProperty"


def _search(pattern: str, text: str, pointer: str) -> bool:
    try:
        return re.search(pattern, text, re.ASCII) is not None
    except re.error as e:
        raise SchemaError(f"{pointer}/patternProperties: {pattern!r} is malformed: {e}") from None


def _numeric_bounds(node: dict) -> dict:
    """`node` with draft 4's boolean exclusiveMinimum/exclusiveMaximum read into draft 6's
    numbers (which `_bounds` reads in every draft), so that each bound means the same alone
    as beside the others."""
    flags = [k for k in ("exclusiveMinimum", "exclusiveMaximum") if isinstance(node.get(k), bool)]
    if not flags:
        return node
    out = dict(node)
    for flag in flags:
        bound = "minimum" if flag == "exclusiveMinimum" else "maximum"
        if out.pop(flag) and bound in out:
            out[flag] = out.pop(bound)
    return out


_OBJECT_SHAPE = ("properties", "patternProperties", "additionalProperties")
_ARRAY_SHAPE = ("prefixItems", "items", "additionalItems")


def _merge(a: dict, b: dict, conflict, same: Callable[[Any, Any], bool] | None = None) -> dict:
    """The schema both `a` and `b` describe (allOf of two). Keywords that read their siblings
    (additionalProperties, items after prefixItems) are merged by what they mean; a union
    both have (the same object, or what `same` says is the same) is kept once."""
    same = same or operator.is_
    a, b = _numeric_bounds(_union_as_enum(a)), _numeric_bounds(_union_as_enum(b))
    shapes = {}
    for keys, merge in ((_OBJECT_SHAPE, _merge_object_shape), (_ARRAY_SHAPE, _merge_array_shape)):
        if any(k in a for k in keys) and any(k in b for k in keys):
            shapes.update(merge(a, b, conflict))
            a = {k: v for k, v in a.items() if k not in keys}
            b = {k: v for k, v in b.items() if k not in keys}
    # (minContains and maxContains without contains do nothing: not to count another's)
    a, b = ({k: v for k, v in x.items() if k in ("contains", "if") or k not in _CONTAINS}
            if "contains" not in x else x for x in (a, b))
    out = dict(a)
    out.update(shapes)
    for parts in (("if", "then", "else"), _CONTAINS):
        if parts[0] in a and parts[0] in b and not all(_same(a.get(k), b.get(k))
                                                       for k in parts):
            # two conditions, two contains: both hold, kept side by side like unions (see
            # compile_new, and array for contains)
            out["allOf"] = [*out.get("allOf", ()), {k: b[k] for k in parts if k in b}]
            b = {k: v for k, v in b.items() if k not in parts}
    for k, v in b.items():
        if k not in out:
            out[k] = v
        elif k == "required":
            out[k] = list(dict.fromkeys(list(out[k]) + list(v)))
        elif k in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"):
            out[k] = max(out[k], v)
        elif k in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"):
            out[k] = min(out[k], v)
        elif k == "type":
            ta = {out[k]} if isinstance(out[k], str) else set(out[k])
            tb = {v} if isinstance(v, str) else set(v)
            if "number" in ta and "integer" in tb:
                ta.add("integer")
            if "number" in tb and "integer" in ta:
                tb.add("integer")
            out[k] = sorted(ta & tb)
        elif k in ("anyOf", "oneOf", "allOf"):  # both hold: kept side by side
            if not same(out[k], v) and not any(k in x and same(x[k], v)
                                               for x in out.get("allOf", ())):
                out["allOf"] = list(out.get("allOf", [])) + [{k: v}]
        elif k == SOME_PROPERTY:  # each holds
            out[k] = [*out[k], *v]
        elif k in _ANNOTATIONS or _same(out[k], v) or k not in _VALIDATION:
            continue
        elif k == "enum" and isinstance(out[k], list) and isinstance(v, list):
            both = {_json_key(x) for x in v}
            out[k] = [x for x in out[k] if _json_key(x) in both]
            if not out[k]:  # no value is listed by both: nothing is valid
                out["type"] = []
                out[k] = [None]
        elif k == "const":  # two values (1 and 1.0 are one): nothing is valid
            if _json_key(out[k]) != _json_key(v):
                out["type"] = []
        elif k == "propertyNames":  # each name matches both
            out[k] = _all_of([out[k], v])
        elif k == "pattern" and isinstance(out[k], str) and isinstance(v, str) and (
                both := _both_patterns(out[k], v)) is not None:
            out[k] = both
        elif k == "not":  # neither a nor b: not (a or b)
            out[k] = {"anyOf": [*_alternatives(out[k]), *_alternatives(v)]}
        else:
            conflict(k)
    return out


def _both_patterns(a: str, b: str) -> str | None:
    """One pattern found in a text where `a` and `b` both are (lookaheads: see
    `search_for_all`); None where that pattern does not compile (a lookahead or global flag
    that would no longer be at its start)."""
    both = search_for_all([a, b])
    if both is None:
        return None
    try:  # (cached: compiled once more where the string is)
        compile_regex(both, 0, search=True, char_class=json_char_class, ecma=True)
    except GrammarError:
        return None
    return both


def _alternatives(schema: Any) -> list:
    """The branches of a schema that is only an anyOf; else the schema alone."""
    if isinstance(schema, dict) and set(schema) == {"anyOf"} and isinstance(schema["anyOf"], list):
        return schema["anyOf"]
    return [schema]


def _union_as_enum(schema: dict) -> dict:
    """`schema` with an anyOf of literal values (enum, const) as one enum, which merges
    with what is beside it (a pattern, another list) where the union would be multiplied
    out."""
    values = _listed({"anyOf": schema["anyOf"]}) if "anyOf" in schema else None
    if not values:
        return schema
    out = {k: v for k, v in schema.items() if k != "anyOf"}
    if isinstance(out.get("enum"), list):  # both hold
        listed = {_json_key(v) for v in out["enum"]}
        values = [v for v in values if _json_key(v) in listed]
        if not values:
            return schema
    out["enum"] = values
    return out


def _any_of(schemas: list) -> Any:
    """anyOf of `schemas`, with False ones dropped and bare anyOfs among them flattened (each
    level would compile to a union of its own)."""
    flat = []
    for x in schemas:
        if x is True or x == {}:
            return True
        if x is not False:
            flat.extend(_alternatives(x))
    return False if not flat else flat[0] if len(flat) == 1 else {"anyOf": flat}


def _all_of(schemas: list) -> Any:
    """allOf of `schemas`, as flat as it goes: no true schemas, no nested allOf alone, no
    schema object twice (a recursive schema merged with itself stays the same size)."""
    schemas = [x for x in schemas if x is not True and x != {}]
    if len(schemas) > 1:  # (one schema is kept as it is: the same object compiles once)
        flat: list = []
        for x in schemas:
            parts = x["allOf"] if isinstance(x, dict) and len(x) == 1 and "allOf" in x \
                and isinstance(x["allOf"], list) else [x]
            flat += [y for y in parts if not any(y is z for z in flat)]
        schemas = [x for x in flat if x is not True and x != {}]
    if any(x is False for x in schemas):
        return False
    return True if not schemas else schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _merge_object_shape(a: dict, b: dict, conflict) -> dict:
    """properties / patternProperties / additionalProperties of allOf(a, b)."""
    def trivial(x: dict) -> bool:
        return x.get("additionalProperties", True) in (True, {})

    pa, pb = a.get("patternProperties", {}), b.get("patternProperties", {})
    patterns = dict(pa)
    for pat, sub in pb.items():
        patterns[pat] = _all_of([patterns[pat], sub]) if pat in patterns else sub
    if trivial(a) and trivial(b):
        props = dict(a.get("properties", {}))
        for name, sub in b.get("properties", {}).items():
            props[name] = _all_of([props[name], sub]) if name in props else sub
        out: dict = {"properties": props}
        if patterns:
            out["patternProperties"] = patterns
        return out
    if (not trivial(a) and set(pb) - set(pa)) or (not trivial(b) and set(pa) - set(pb)):
        conflict("additionalProperties")  # a name a pattern of one side takes, the other's
        # additionalProperties would take as well: not expressible as one object schema

    def side(x: dict, name: str) -> Any:
        if name in x.get("properties", {}):
            return x["properties"][name]
        if any(_search(p, name, "#") for p in x.get("patternProperties", {})):
            return True  # the merged patternProperties carry it
        return x.get("additionalProperties", True)

    names = list(dict.fromkeys([*a.get("properties", {}), *b.get("properties", {})]))
    out = {"properties": {n: _all_of([side(a, n), side(b, n)]) for n in names},
           "additionalProperties": _all_of([a.get("additionalProperties", True),
                                            b.get("additionalProperties", True)])}
    if patterns:
        out["patternProperties"] = patterns
    return out


def _merge_array_shape(a: dict, b: dict, conflict) -> dict:
    """prefixItems / items (draft 4-7: an items list and additionalItems) of allOf(a, b)."""
    def split(x: dict) -> tuple[list, Any]:
        if isinstance(x.get("items"), list):
            return list(x["items"]), x.get("additionalItems", True)
        return list(x.get("prefixItems", [])), x.get("items", True)

    (fa, ra), (fb, rb) = split(a), split(b)
    n = max(len(fa), len(fb))
    prefix = [_all_of([fa[i] if i < len(fa) else ra, fb[i] if i < len(fb) else rb])
              for i in range(n)]
    out: dict = {"prefixItems": prefix} if prefix else {}
    if any(k in x for x in (a, b) for k in ("items", "additionalItems")) \
            and not (isinstance(a.get("items"), list) and "additionalItems" not in a
                     and isinstance(b.get("items"), list) and "additionalItems" not in b):
        out["items"] = _all_of([ra, rb])  # else items past the prefix stay unevaluated
    return out
