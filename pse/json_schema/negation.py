"""JSON Schema not: the opposite of a schema, built from its keywords (types, bounds, formats,
shapes, references and branches).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pse import limits
from pse.errors import GrammarError, SchemaError
from pse.json_schema import common
from pse.json_schema.common import (_ALL_TYPES, _ANNOTATIONS, _APPLICATORS, _VALIDATION, _content,
                                    _exclusion, _forbids, _same, _types, _values)
from pse.json_schema.formats import _format_opposite
from pse.json_schema.merge import SOME_PROPERTY, _OBJECT_SHAPE, _all_of, _any_of, _numeric_bounds

# The most pairs of overlapping branches the opposite of a oneOf lists (each "these two
# both hold" is a branch of its own).
MAX_ONE_OF_PAIRS = 32


# Keywords whose meaning does not depend on their siblings: a schema of only these (and the
# object shape, taken as one) is the conjunction of each alone (its opposite: one of them
# fails). (Draft 4's boolean exclusiveMinimum/Maximum are read into draft 6's numbers first:
# see `_numeric_bounds`.)
_SELF_CONTAINED = frozenset([
    "type", "enum", "const", "pattern", "required", "minLength", "maxLength",
    "minItems", "maxItems", "minProperties", "maxProperties", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "not", "anyOf", "allOf", "oneOf", "items",
    "format", "$ref", "dependentRequired", "dependencies", "uniqueItems", "propertyNames"])
# Keywords that apply subschemas without validating anything themselves.


def _holds_within(key: str, value: Any, within: dict) -> bool:
    """Whether the keyword `key: value` (one that holds alone: see _SELF_CONTAINED) holds
    for every instance of `within`: `within` has the same, or a stricter type or
    required list."""
    if key not in within:
        return False
    if key == "required" and isinstance(value, list) and isinstance(within[key], list):
        return set(value) <= set(within[key])
    if key == "type":
        allowed = {value} if isinstance(value, str) else set(value)
        if "number" in allowed:
            allowed.add("integer")
        held = within[key]
        return ({held} if isinstance(held, str) else set(held)) <= allowed
    return _same(within[key], value)


def _discriminator(branches: list) -> tuple[str, dict[int, list]]:
    """A property that tells object branches apart: its name, and for each branch (two at
    least) that requires it with literal values no other such branch has, those values;
    ("", {}) when there is none."""
    best: tuple[str, dict[int, list]] = ("", {})
    names = dict.fromkeys(n for b in branches if isinstance(b, dict) and _types(b) <= {"object"}
                          and isinstance(b.get("required"), list) for n in b["required"])
    for name in names:
        seen: set = set()
        cases: dict[int, list] = {}
        for i, b in enumerate(branches):
            if not isinstance(b, dict) or not _types(b) <= {"object"} \
                    or name not in (b.get("required") or ()):
                continue
            sub = (b.get("properties") or {}).get(name)
            keys = _values(sub) if isinstance(sub, dict) else None
            if keys is None or keys & seen:
                continue  # (one of the others, then)
            seen |= keys
            cases[i] = [sub["const"]] if "const" in sub else list(sub["enum"])
        if len(cases) > len(best[1]):
            best = (name, cases)
    return best if len(best[1]) >= 2 else ("", {})


def _required_and_listed(sub: dict) -> frozenset:
    """The names `sub` requires and lists in properties (see opposite_shape)."""
    required, props = sub.get("required"), sub.get("properties")
    if not isinstance(required, list) or not isinstance(props, dict):
        return frozenset()
    return frozenset(n for n in required if isinstance(n, str) and n in props)


def _key_discriminator(branches: list) -> dict[int, str]:
    """Object branches told apart by a property: for each (two at least), the name of a
    property it requires and every other one of them forbids; {} when there are not two."""
    keyed = {i: list(b["required"]) for i, b in enumerate(branches)
             if isinstance(b, dict) and _types(b) <= {"object"}
             and isinstance(b.get("required"), list)}
    while True:  # (a branch left out may have been the one forbidding another's name)
        chosen = {}
        for i, names in keyed.items():
            name = next((n for n in names if isinstance(n, str) and all(
                _forbids(branches[j], n) for j in keyed if j != i)), None)
            if name is not None:
                chosen[i] = name
        if len(chosen) == len(keyed) or len(chosen) < 2:
            return chosen if len(chosen) >= 2 else {}
        keyed = {i: keyed[i] for i in chosen}


class _Negation:
    """The _Compiler methods for not (a mixin of compile._Compiler)."""

    def opposite(self, sub: Any, pointer: str, depth: int = 0,
                 keys: frozenset | None = None, within: dict | None = None) -> Any:
        """A schema exactly the instances `sub` rejects, where a simple rewrite gives one:
        a bound flipped, required names absent, De Morgan over anyOf/allOf/oneOf, a reference
        to the opposite of its target; None otherwise (`negate` handles the type forms).
        `keys`: the only property names the instances in question can have (None: any),
        which lets a closed object shape be negated. `within`: a schema those instances
        match; what it already asks of them (see `_holds_within`) cannot fail and is left
        out, which keeps the unions the opposite makes small."""
        if sub is True or sub == {}:
            return False
        if sub is False:
            return True
        # (opposites of nested conditions double per level: an if/then chain 26 deep ran for
        # minutes past the compile budget, which nothing here looked at)
        try:
            limits.check_budget()
        except GrammarError as e:
            raise SchemaError(f"{pointer}: {e}") from None
        if not isinstance(sub, dict) or depth >= common.MAX_SCHEMA_DEPTH or SOME_PROPERTY in sub:
            return None
        node = sub
        # unknown keywords are annotations
        sub = _numeric_bounds({k: v for k, v in sub.items() if k not in _ANNOTATIONS
                               and (k in _VALIDATION or k in _APPLICATORS)})
        if "$ref" in sub:
            ref = self.absolute(node, sub["$ref"])
            if self.ref_alone:  # drafts 4-7: the siblings of $ref are ignored
                return self.opposite_ref(ref, pointer, depth, keys)
            sub["$ref"] = ref  # (an absolute URI needs no base when regrouped below)
        if "items" in sub and not isinstance(sub["items"], list):
            sub.pop("additionalItems", None)  # ignored beside a single items schema
        if within is not None:
            within = _numeric_bounds(within)
            sub = {k: v for k, v in sub.items()
                   if k in _OBJECT_SHAPE or not _holds_within(k, v, within)}
        if not sub:
            return False
        if set(sub) == {"$ref"}:
            return self.opposite_ref(sub["$ref"], pointer, depth, keys)
        if "if" not in sub:  # then and else alone do nothing
            sub = {k: v for k, v in sub.items() if k not in ("then", "else")}
            if not sub:
                return False
        shape = {k: v for k, v in sub.items() if k in _OBJECT_SHAPE}
        if shape and len(shape) == len(sub):
            return self.opposite_shape(shape, pointer, depth, keys, within)
        condition = {k: v for k, v in sub.items() if k in ("if", "then", "else")}
        if condition and len(condition) == len(sub):
            return self.opposite_condition(condition, pointer, depth, keys)
        if len(sub) > 1:
            # a conjunction of keywords that each hold on their own (the object shape and
            # the condition each as one): one of them fails
            singles = [k for k in sub if k not in shape and k not in condition]
            if not set(singles) <= _SELF_CONTAINED:
                return None
            fused = _required_and_listed(sub) if shape else frozenset()
            if fused:  # (see opposite_shape's `absent_too`)
                left = [n for n in sub["required"] if n not in fused]
                sub = {**sub, "required": left} if left else {
                    k: v for k, v in sub.items() if k != "required"}
                singles = [k for k in singles if k in sub]
            parts = [self.opposite_shape(shape, pointer, depth, keys, within, fused)] \
                if shape else []
            parts += [self.opposite(g, pointer, depth + 1, keys, within)
                      for g in [condition] * bool(condition) + [{k: sub[k]} for k in singles]]
            if any(p is None for p in parts):
                return None
            return _any_of(parts)
        (key, value), = sub.items()
        if key in ("enum", "const"):
            return {"not": {key: value}}  # compiled as the values left out (`_exclusion`)
        if key == "pattern" and isinstance(value, str):
            return {"type": "string", "not": {"type": "string", "pattern": value}}
        if key == "format" and isinstance(value, str):
            return _format_opposite(value)
        if key == "items" and isinstance(value, (dict, bool)):
            fails = self.opposite(value, pointer, depth + 1)
            if fails is None:
                return None
            return {"type": "array", "contains": fails} if fails is not False else False
        if key == "anyOf" and isinstance(value, list) and value:
            resolved = [self.resolve_shallow(b, pointer) for b in value]
            return self.opposite_union(value, resolved, pointer, depth, keys)
        if key == "allOf" and isinstance(value, list) and value:
            parts = [self.opposite(v, pointer, depth + 1, keys) for v in value]
            return None if any(p is None for p in parts) else _any_of(parts)
        if key == "oneOf" and isinstance(value, list) and value:
            return self.opposite_one_of(value, pointer, depth, keys)
        if key == "not":
            return value
        if key == "type":
            banned = {value} if isinstance(value, str) else set(value)
            if "integer" in banned and "number" not in banned:
                # the other types, and numbers with a fraction (see `number`)
                others = sorted(_ALL_TYPES - banned - {"number"})
                fractions = {"type": "number", "not": {"type": "integer"}}
                return {"anyOf": [{"type": others}, fractions]} if others else fractions
            return {"type": sorted(_ALL_TYPES - banned)}
        # the keywords below hold for every value of the other types, so their opposite is
        # a value of their own type that breaks them
        if key == "required" and isinstance(value, list):
            if not value:
                return False
            return {"type": "object", "anyOf": [{"properties": {n: False}} for n in value]}
        if key == "propertyNames":
            names = self.resolve_shallow(value, pointer)
            names = {k: v for k, v in names.items() if k not in _ANNOTATIONS} \
                if isinstance(names, dict) else names
            if names is True or names == {}:
                return False  # no name fails
            if names is False or names == {"not": {}}:
                return {"type": "object", "minProperties": 1}  # any name fails
            left_out = _exclusion(names["not"]) if isinstance(names, dict) \
                and set(names) == {"not"} else None
            if left_out is not None and not left_out[1]:
                # the names it lists fail: one of them present (where there are more, the
                # names failing are no list, and "some key is one of them" has no schema)
                listed = [n for n in left_out[0] if isinstance(n, str)]
                return {"type": "object", "anyOf": [{"required": [n]} for n in
                                                    dict.fromkeys(listed)]} if listed else False
            return {"type": "object",
                    SOME_PROPERTY: [{"names": {"not": names}, "value": True, "else": False}]}
        if key in ("dependentRequired", "dependencies") and isinstance(value, dict) \
                and all(isinstance(v, list) for v in value.values()):
            # a name present, and one it needs absent
            broken = [{"required": [name], "anyOf": [{"properties": {n: False}} for n in needs]}
                      for name, needs in value.items() if needs]
            return {"type": "object", "anyOf": broken} if broken else False
        flips = {"minItems": ("array", "maxItems", -1), "maxItems": ("array", "minItems", 1),
                 "minLength": ("string", "maxLength", -1), "maxLength": ("string", "minLength", 1),
                 "minProperties": ("object", "maxProperties", -1),
                 "maxProperties": ("object", "minProperties", 1)}
        if key in flips and isinstance(value, int) and not isinstance(value, bool):
            kind, other, step = flips[key]
            if value + step < 0:
                return False  # a minimum of 0: every value passes
            return {"type": kind, other: value + step}
        bounds = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
                  "exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}
        if key in bounds and isinstance(value, (int, float)) and not isinstance(value, bool):
            return {"type": "number", bounds[key]: value}
        if key == "uniqueItems" and value is False:
            return False
        return None

    def opposite_condition(self, condition: dict, pointer: str, depth: int,
                           keys: frozenset | None) -> Any:
        """The opposite of if/then/else: the condition holds and `then` fails, or it fails
        and `else` does."""
        cond = condition["if"]
        parts = [self.opposite(condition.get(k, True), pointer, depth + 1, keys)
                 for k in ("if", "then", "else")]
        if any(p is None for p in parts):
            return None
        not_if, not_then, not_else = parts
        return _any_of([_all_of([cond, not_then]), _all_of([not_if, not_else])])

    def opposite_ref(self, ref: str, pointer: str, depth: int,
                     keys: frozenset | None) -> Any:
        """The opposite of `{"$ref": ref}`: a reference to a schema resource made once for
        it, so that the opposite of a recursive schema recurses too (False or True when it
        is that simple)."""
        if keys is not None:  # (particular to the caller: not kept)
            return self.opposite(self.resolve(ref, pointer), pointer, depth + 1, keys)
        if ref in self.opposites:
            made = self.opposites[ref]
            if made is None:
                return None
            found = self.resources.get(made)  # absent while it is being made: a cycle
            return found if isinstance(found, bool) else {"$ref": made}
        made = "pse:opposite/" + quote(ref, safe="")  # (no "#": a resource of its own)
        self.opposites[ref] = made
        before = set(self.opposites)
        fails = self.opposite(self.resolve(ref, pointer), pointer, depth + 1)
        if fails is None:
            # the opposites made meanwhile may refer to this one: made again if needed
            for other in set(self.opposites) - before:
                del self.opposites[other]
            self.opposites[ref] = None
            return None
        self.resources[made] = fails
        return fails if isinstance(fails, bool) else {"$ref": made}

    def opposite_one_of(self, branches: list, pointer: str, depth: int,
                        keys: frozenset | None) -> Any:
        """The opposite of oneOf: no branch holds, or two do (of those that may overlap:
        see `_pair_disjoint`). None beyond MAX_ONE_OF_PAIRS such pairs."""
        resolved = [self.resolve_shallow(b, pointer) for b in branches]
        none = self.opposite_union(branches, resolved, pointer, depth, keys)
        if none is None:
            return None
        pairs = [_all_of([branches[i], branches[j]]) for i in range(len(branches))
                 for j in range(i + 1, len(branches))
                 if not self.disjoint(resolved[i], resolved[j], pointer)]
        if len(pairs) > MAX_ONE_OF_PAIRS:
            return None
        return _any_of([none, *pairs])

    def opposite_union(self, branches: list, resolved: list, pointer: str, depth: int,
                       keys: frozenset | None) -> Any:
        """The values no branch holds for: every branch's opposite. Object branches told
        apart by the value of one property they require (a discriminator) are taken case by
        case instead: that property outside every branch's values, or inside one branch's
        and that branch failing. Unlike the conjunction of opposites, each an anyOf, whose
        union is their product, this grows with the branches. (`resolved`: the branches
        resolved shallowly, see `resolve_shallow`.)"""
        name, cases = _discriminator(resolved)
        keyed = _key_discriminator(resolved)
        if len(keyed) > len(cases):
            return self.opposite_keyed(branches, keyed, pointer, depth, keys)
        parts = [self.opposite(b, pointer, depth + 1, keys)
                 for i, b in enumerate(branches) if i not in cases]
        if cases:
            every = [v for values in cases.values() for v in values]
            outside = self.opposite({"type": "object", "required": [name],
                                     "properties": {name: {"enum": every}}}, pointer, depth + 1,
                                    keys)
            inside = [self.opposite(branches[i], pointer, depth + 1, keys) for i in cases]
            if outside is None or any(p is None for p in inside):
                return None
            parts.append(_any_of([outside, *(
                _all_of([{"type": "object", "required": [name],
                          "properties": {name: {"enum": values}}}, fails])
                for values, fails in zip(cases.values(), inside))]))
        return None if any(p is None for p in parts) else _all_of(parts)

    def opposite_keyed(self, branches: list, keyed: dict[int, str], pointer: str, depth: int,
                       keys: frozenset | None) -> Any:
        """The values no branch holds for, where some object branches are told apart by a
        property each requires and the others forbid (see `_key_discriminator`): none of
        those properties present, or one present and its branch failing (the others fail
        wherever it is present). The other branches fail as well."""
        parts = [self.opposite(b, pointer, depth + 1, keys)
                 for i, b in enumerate(branches) if i not in keyed]
        cases = [{"properties": {name: False for name in keyed.values()}}]
        for i, name in keyed.items():
            fails = self.opposite(branches[i], pointer, depth + 1, keys)
            if fails is None:
                return None
            cases.append(_all_of([{"type": "object", "required": [name]}, fails]))
        return None if any(p is None for p in parts) else _all_of([*parts, _any_of(cases)])

    def opposite_shape(self, shape: dict, pointer: str, depth: int,
                       keys: frozenset | None, within: dict | None = None,
                       absent_too: frozenset = frozenset()) -> Any:
        """The opposite of properties, patternProperties and additionalProperties (any of
        them): an object with a listed property present and failing its schema, a key a
        pattern finds failing the pattern's schema, or another key failing
        additionalProperties. Where the names the object can have are known (`keys`), these
        are required names; else the keys not listed are a SOME_PROPERTY requirement.
        `absent_too`: listed names that were also required, whose absence fails too: "absent
        or failing its schema" is one object shape where "absent" and "present and failing"
        would be two branches (a union less to multiply out wherever the opposite meets
        others)."""
        props = shape.get("properties") or {}
        patterns = shape.get("patternProperties") or {}
        if not isinstance(props, dict) or not isinstance(patterns, dict):
            return None
        branches = []
        held = (within or {}).get("properties") or {}
        for name, schema in props.items():
            if name in absent_too:
                fails = self.opposite(schema, pointer, depth + 1)
                if fails is None:
                    return None
                branches.append({"properties": {name: fails}})
                continue
            if keys is not None and name not in keys:
                continue  # never present
            if isinstance(held, dict) and name in held and _same(held[name], schema):
                continue  # `within` asks the same of it
            fails = self.opposite(schema, pointer, depth + 1)
            if fails is None:
                return None
            if fails is not False:
                branches.append({"required": [name], "properties": {name: fails}})
        additional = shape.get("additionalProperties", True)
        taken = _any_of(([{"enum": list(props)}] if props else [])
                        + [{"pattern": p} for p in patterns])  # (False: no name)
        for names, schema in [*(({"pattern": p}, s) for p, s in patterns.items()),
                              ({"not": taken} if taken is not False else True, additional)]:
            fails = self.opposite(schema, pointer, depth + 1)
            if fails is None:
                return None
            if fails is False:
                continue
            if keys is None:
                branches.append({SOME_PROPERTY: [{"names": names, "value": fails,
                                                  "else": schema}]})
                continue
            allowed = self.property_names_dfa({"propertyNames": names}, pointer)
            for name in sorted(keys):
                if allowed is None or allowed.matches(_content(name)):
                    branches.append({"required": [name], "properties": {name: fails}})
        if not branches:
            return False
        return {"type": "object", **branches[0]} if len(branches) == 1 \
            else {"type": "object", "anyOf": branches}

    def negate(self, node: dict, pointer: str) -> dict | None:
        """`node` with its `not` folded in where that is exact: `not {}` (nothing is valid),
        `not false` (no constraint), `not {"type": ...}` (those types left out). None when
        nothing is valid; `not` stays in the node otherwise (and is refused)."""
        sub = node["not"]
        rest = {k: v for k, v in node.items() if k != "not"}
        if sub is True or sub == {}:
            return None
        if sub is False:
            return rest
        if isinstance(sub, dict) and set(sub) - _ANNOTATIONS == {"type"}:
            banned = {sub["type"]} if isinstance(sub["type"], str) else set(sub["type"])
            if "number" in banned:
                banned.add("integer")
            current = rest.get("type", sorted(_ALL_TYPES | {"integer"}))
            current = [current] if isinstance(current, str) else list(current)
            if "integer" in banned and "number" in current:
                return node  # numbers that are not integers: not expressible here
            kept = [t for t in current if t not in banned]
            if not kept:
                return None
            return {**rest, "type": kept}
        return node
