"""JSON Schema allOf, anyOf, oneOf, if/then/else and dependencies: unions, merges and exclusive
branches.
"""

from __future__ import annotations

import itertools
from typing import Any

from pse.errors import SchemaError
from pse.machines import AnyOf, StateMachine
from pse.json_schema.common import (_ALL_TYPES, _distinct, _escape, _json_key, _listed,
                                    _types, _validating)
from pse.json_schema.merge import _all_of, _merge

# Keywords beside a union that neither validate nor resolve references.
_INERT = frozenset(("$defs", "definitions", "$comment", "title", "description", "default",
                    "examples", "example", "deprecated", "readOnly", "writeOnly", "$schema"))


def _reads_evaluation(node: Any) -> bool:
    return isinstance(node, dict) and any(
        node.get(k, True) is not True and node.get(k) != {}
        for k in ("unevaluatedProperties", "unevaluatedItems"))


def _without_dangling(schema: dict) -> dict:
    """`schema` without `then`/`else` when it has no `if` (they do nothing alone, and merged
    beside another schema's `if` they would wrongly join it)."""
    if "if" in schema or not ("then" in schema or "else" in schema):
        return schema
    return {k: v for k, v in schema.items() if k not in ("then", "else")}


def _closed_keys(schema: Any) -> frozenset | None:
    """The only property names an object matching `schema` can have (None: any)."""
    if not isinstance(schema, dict) or schema.get("additionalProperties", True) not in (
            False, {"not": {}}) or schema.get("patternProperties"):
        return None
    props = schema.get("properties") or {}
    return frozenset(props) if isinstance(props, dict) else None


def _listed_dependencies(dependent: dict, resolve) -> tuple[str, dict[str, list]] | None:
    """Dependent schemas (two at least) that each only list the values one property may
    take (strings, booleans, null), the same property and not one of the keys: (its name,
    each key's values); None otherwise."""
    name, values = None, {}
    for key, sub in dependent.items():
        sub = _validating(resolve(sub))
        props = sub.get("properties") if isinstance(sub, dict) else None
        if not isinstance(props, dict) or set(sub) != {"properties"} or len(props) != 1:
            return None
        (prop, schema), = props.items()
        listed = _listed(resolve(schema))
        if listed is None or name not in (None, prop) or not all(
                isinstance(v, (str, bool)) or v is None for v in listed):
            return None  # (numbers: the values no key lists have no schema: see `negate`)
        name, values[key] = prop, listed
    if name is None or name in dependent or len(values) < 2:
        return None
    return name, values


# Keywords that only objects are held to.
_OBJECT_KEYWORDS = frozenset([
    "properties", "patternProperties", "additionalProperties", "required", "minProperties",
    "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies",
    "unevaluatedProperties"])


def _literals_together(branches: list) -> list[tuple[int, Any]]:
    """A union's branches with their indices, those that only list values (enum, const) as
    one list at the first one's index: one machine where there were as many as branches.
    (oneOf's branches are made disjoint first: see exclusive.)"""
    listed = {i: values for i, b in enumerate(branches) if (values := _listed(b))}
    if len(listed) < 2:
        return list(enumerate(branches))
    first = min(listed)
    values = _distinct([v for i in listed for v in listed[i]])
    return [(i, {"enum": values} if i == first else b) for i, b in enumerate(branches)
            if i == first or i not in listed]


def _kinds(schema: Any) -> frozenset:
    """The JSON types a schema may match: those of its listed values and of its type both
    (after a split by type, the listed values of other types no longer count)."""
    if not isinstance(schema, dict):
        return _ALL_TYPES if schema is True else frozenset()
    kinds = _types(schema)
    if "type" in schema and ("enum" in schema or "const" in schema):
        kinds &= _types({"type": schema["type"]})
    return kinds


def _only_objects(schema: Any) -> Any:
    """`schema` where the value is an object too."""
    if not isinstance(schema, dict):
        return schema
    if "object" not in _kinds(schema):
        return False
    return {**schema, "type": "object"}


class _Logic:
    """The _Compiler methods for allOf, anyOf, oneOf, if/then/else and dependencies (a mixin of
    compile._Compiler)."""

    def dependent(self, node: dict, dependent: dict, pointer: str) -> StateMachine | None:
        """`dependentSchemas` (draft 4-7 `dependencies` with schema values): for the first
        such key, the union of "present, and the object also matches its schema" and
        "absent"; the rest is handled in each branch."""
        listed = None if _reads_evaluation(node) else _listed_dependencies(
            dependent, self.shallow(pointer))  # (each case lists the property: evaluated)
        if listed is not None:
            return self.dependent_cases(node, *listed, pointer)
        name, sub = next(iter(dependent.items()))
        rest = {k: v for k, v in node.items() if k not in ("dependentSchemas", "dependencies")}
        for key in ("dependentSchemas", "dependencies"):
            left = {k: v for k, v in (node.get(key) or {}).items() if k != name}
            if left:
                rest[key] = left
        where = f"{pointer}/dependentSchemas/{_escape(name)}"
        absent = _merge(rest, {"properties": {name: False}}, lambda k: None)
        branches = [self.compile(absent, pointer)]
        if sub is not False:
            present = {**rest, "allOf": [*rest.get("allOf", ()),
                                         {"type": "object", "required": [name]}, sub]}
            branches.append(self.compile(present, where))
        machines = [m for m in branches if m is not None]
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def dependent_cases(self, node: dict, name: str, values: dict[str, list],
                        pointer: str) -> StateMachine | None:
        """Dependent schemas that each list the values of one property `name` (see
        `_listed_dependencies`), case by case on its value: absent (every dependency holds),
        one of the values listed (the keys whose lists lack it absent), or another (every
        key absent). Taken one key at a time, present or absent, they multiply out instead."""
        rest = {k: v for k, v in node.items() if k != "dependentSchemas"}
        if "dependencies" in node:  # (the names a key requires stay)
            rest["dependencies"] = {k: v for k, v in node["dependencies"].items()
                                    if isinstance(v, list)}
        keyed = {key: {_json_key(v) for v in listed} for key, listed in values.items()}
        every = {_json_key(v): v for listed in values.values() for v in listed}
        groups: dict[frozenset, list] = {}  # the keys a value leaves out -> those values
        for k, v in every.items():
            groups.setdefault(frozenset(key for key in keyed if k not in keyed[key]),
                              []).append(v)
        cases = [{"properties": {name: False}}]
        other = {"not": {"enum": list(every.values())}}  # values no key lists
        for left_out, value in [*((k, {"enum": v}) for k, v in groups.items()),
                                (frozenset(keyed), other)]:
            cases.append({"type": "object", "required": [name], "properties": {
                name: value, **{key: False for key in sorted(left_out)}}})
        machines = [self.compile({**rest, "allOf": [*rest.get("allOf", ()), case]},
                                 f"{pointer}/dependentSchemas")
                    for case in cases]
        machines = [m for m in machines if m is not None]
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def conditional(self, node: dict, pointer: str) -> Any:
        """`if`/`then`/`else` where it folds away: a boolean `if`, or `then` and `else` that
        constrain nothing."""
        cond = node["if"]
        rest = {k: v for k, v in node.items() if k not in ("if", "then", "else")}
        then, other = node.get("then", True), node.get("else", True)
        if cond is True or cond == {}:
            branch = then
        elif cond is False:
            branch = other
        elif then in (True, {}) and other in (True, {}) and not _reads_evaluation(rest):
            return rest
        else:
            # (if and then) or (not if and else), where `not if` has a schema
            fails = self.opposite(cond, f"{pointer}/if")
            if fails is None:
                self.fail(f"{pointer}/if", "if", "if/then/else with a condition whose "
                          "opposite has no schema (see opposite) is not supported yet")
                return rest
            if fails is False:  # the condition holds for every value (annotations only)
                branch = then
            elif fails is True:
                branch = other
            else:
                either = [b for b in (_all_of([cond, then]), _all_of([fails, other]))
                          if b is not False]
                if not either:
                    return False
                branch = either[0] if len(either) == 1 else {"anyOf": either}
                return _all_of([rest, branch]) if rest else branch
        if branch is False:
            return False
        return {**rest, "allOf": [*rest.get("allOf", ()), branch]} if branch not in (True, {}) \
            else rest

    def merge_all(self, node: dict, pointer: str, merging: frozenset = frozenset()) -> dict:
        merged = _without_dangling(
            self.rebased({k: v for k, v in node.items() if k != "allOf"}, node))
        scope = None  # a resource with dynamic anchors merged in (see `enter`)
        for i, sub in enumerate(node["allOf"]):
            where = f"{pointer}/allOf/{i}"
            if sub is True:
                continue
            if sub is False:
                return {"not": {}, "type": []}
            scope = self.dynamic_scope(sub, scope)  # its own resource, before its $ref's
            if "$ref" not in sub and ("$dynamicRef" in sub or "$recursiveRef" in sub):
                # resolved here, in this dynamic scope and against the sub's own base URI
                sub = {**{k: v for k, v in sub.items()
                          if k not in ("$dynamicRef", "$recursiveRef")},
                       "$ref": self.dynamic_target(sub, where)}
            inner = merging  # the references this sub's own allOf sits inside
            entered = None  # the outermost resource of the chain with dynamic anchors
            while "$ref" in sub:  # (a target may have a $ref of its own)
                ref = self.absolute(sub, sub["$ref"])
                if ref in inner:
                    raise SchemaError(f"{where}/$ref: {ref} refers back to itself inside "
                                      "allOf; such a schema cannot be merged")
                target = self.resolve(ref, where)
                if target is False:
                    return {"not": {}, "type": []}
                own = self.rebased(target, target) if isinstance(target, dict) else {}
                siblings = {} if self.ref_alone else self.rebased(  # (drafts 4-7: ignored)
                    {k: v for k, v in sub.items() if k != "$ref"}, sub)
                sub = _merge(own, siblings, lambda k: self.fail(
                    where, k, "conflicting values")) if siblings else own
                inner = inner | {ref}
                if entered is None:
                    entered = self.dynamic_scope(target, None)
                    scope = entered or scope
            if "allOf" in sub:
                sub = self.merge_all(sub, where, inner)
            scope = self.dynamic_scope(sub, scope)
            if _reads_evaluation(sub):
                self.fail(where, "unevaluatedProperties", "unevaluatedProperties/Items inside "
                          "allOf or a $ref with siblings is not supported yet")
            merged = _merge(merged, _without_dangling(sub), lambda k: self.fail(
                f"{pointer}/allOf/{i}", k, "conflicting values"), self.same_meaning)
        if scope is not None:
            self.bases[id(merged)] = (merged, scope)
        return merged

    def union(self, node: dict, key: str, pointer: str) -> StateMachine | None:
        # (keywords that neither validate nor resolve are not merged into each branch: a
        # branch that is a lone $ref then compiles as a reference)
        rest = {k: v for k, v in node.items() if k != key and k not in _INERT}
        branches = node[key]
        self.check_evaluation(rest, branches, key, pointer)
        if key == "oneOf" and len(branches) > 1 and self.one_of_apart:
            split = self.objects_apart(node, branches, rest, pointer)
            if split is not None:
                return split
            branches = self.exclusive(branches, rest, pointer)
        machines = []
        for i, sub in _literals_together(branches):
            if rest and sub is not False:
                if isinstance(sub, dict):
                    self.check_not_circular(sub, f"{pointer}/{key}/{i}")
                sub = {**rest, "allOf": [*rest.get("allOf", ()), sub]} if sub is not True \
                    else rest
            m = self.compile(sub, f"{pointer}/{key}/{i}")
            if m is not None:
                machines.append(m)
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def check_not_circular(self, branch: dict, pointer: str) -> None:
        """A union's branch beside other keywords is merged with them, its references
        inlined: refused (SchemaError) when a reference it reaches leads back to itself
        through anyOf, oneOf, allOf and $ref alone (no value read between), where inlining
        has no end (and a validator recurses without end too)."""
        done: set[str] = set()
        for start in self.applied_refs(branch):
            path, iters = [start], [iter(self.applied_refs(self.resolve(start, pointer)))]
            while iters:
                ref = next(iters[-1], None)
                if ref is None:
                    done.add(path.pop())
                    iters.pop()
                elif ref in path:
                    raise SchemaError(f"{pointer}: $ref {ref} leads back to itself through "
                                      "anyOf, oneOf, allOf or $ref alone, with no value read "
                                      "between: it cannot be expanded")
                elif ref not in done:
                    path.append(ref)
                    iters.append(iter(self.applied_refs(self.resolve(ref, pointer))))

    def applied_refs(self, node: Any) -> list[str]:
        """The references `node` applies to its own value: its $ref and those of its anyOf,
        oneOf and allOf branches, theirs, and so on (not those of its values' parts)."""
        out, seen, todo = [], set(), [node]
        while todo:
            node = todo.pop()
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node.get("$ref"), str):
                out.append(self.absolute(node, node["$ref"]))
            for key in ("anyOf", "oneOf", "allOf"):
                if isinstance(node.get(key), list):
                    todo.extend(node[key])
        return out

    def check_evaluation(self, rest: dict, branches: list, key: str, pointer: str) -> None:
        """Each branch is compiled with the keywords beside the union, unevaluated ones too:
        exact where one branch at most matches (the keys or items it evaluates are those
        the union does), and for unevaluatedItems beside anyOf (its branches evaluate
        leading items: the one evaluating most decides). Where branches may overlap,
        unevaluatedProperties beside anyOf would need the keys of every branch that
        matches, and oneOf's branches get opposites (see exclusive) whose keys and items
        would count as evaluated though they are not: refused."""
        if not _reads_evaluation(rest) or len(branches) < 2:
            return
        word = "unevaluatedProperties" if rest.get("unevaluatedProperties", True) not in (
            True, {}) else "unevaluatedItems"
        if key == "anyOf" and word == "unevaluatedItems":
            return
        resolved = self.resolved_branches(branches, rest, pointer)
        if all(self.disjoint(a, b, pointer) for a, b in itertools.combinations(resolved, 2)):
            return
        self.fail(f"{pointer}/{word}", word, f"beside {key} whose branches may overlap is "
                  "not supported: what a branch evaluates counts only where it matches")

    def resolved_branches(self, branches: list, rest: dict, pointer: str) -> list:
        """A union's branches with the keywords beside it, resolved (see resolve_shallow)."""
        return [self.resolve_shallow(
            {**rest, "allOf": [*rest.get("allOf", ()), b]} if rest and isinstance(b, dict)
            else rest if rest and b is True else b, pointer) for b in branches]

    def objects_apart(self, node: dict, branches: list, rest: dict,
                      pointer: str) -> StateMachine | None:
        """oneOf whose branches share no object, though they share other values (object
        branches told apart by a property, written without `"type": "object"`: each holds
        for every string), with objects and the other values compiled apart: the objects
        need no opposites (each branch less the others). None where that does not hold."""
        if "allOf" in node:  # (what did not merge: each part would be split again)
            return None
        resolved = self.resolved_branches(branches, rest, pointer)
        kinds = [_kinds(r) for r in resolved]
        if not any("object" in k for k in kinds) or not any(k - {"object"} for k in kinds):
            return None
        pairs = list(itertools.combinations(range(len(resolved)), 2))
        objects = [_only_objects(r) for r in resolved]
        if all(self.disjoint(resolved[i], resolved[j], pointer) for i, j in pairs) \
                or not all(self.disjoint(objects[i], objects[j], pointer) for i, j in pairs):
            return None
        others = sorted(_ALL_TYPES - {"object"})
        if all(isinstance(r, bool) or (isinstance(r, dict) and "allOf" not in r
                                       and not any(k.startswith("$") for k in r))
               for r in resolved):  # (no reference, no resource of its own)
            # the other values: each branch without what only objects are asked
            apart = {"type": others, "oneOf": [
                {k: v for k, v in r.items() if k not in _OBJECT_KEYWORDS}
                if isinstance(r, dict) else r for r in resolved]}
        else:
            apart = {**node, "allOf": [*node.get("allOf", ()), {"type": others}]}
        machines = [self.compile({**node, "allOf": [*node.get("allOf", ()), {"type": "object"}]},
                                 pointer), self.compile(apart, pointer)]
        machines = [m for m in machines if m is not None]
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def exclusive(self, branches: list, rest: dict, pointer: str) -> list:
        """oneOf's branches as anyOf branches: each one also fails the branches it may
        overlap with (their opposites, see `opposite`); branches that provably share no value
        are left as they are."""
        resolved = self.resolved_branches(branches, rest, pointer)
        alone = [self.resolve_shallow(b, pointer) for b in branches]  # (`rest` holds anyway)
        out = []
        for i, branch in enumerate(branches):
            others = [j for j in range(len(branches))
                      if j != i and not self.disjoint(resolved[i], resolved[j], pointer)]
            keys = _closed_keys(resolved[i])
            within = resolved[i] if isinstance(resolved[i], dict) else None
            fails = []
            for j in others:
                fails.append(self.opposite(alone[j], f"{pointer}/oneOf/{j}", keys=keys,
                                           within=within))
                if fails[-1] is None:
                    self.fail(f"{pointer}/oneOf/{j}", "oneOf", "branches may overlap, and "
                              "this one has no opposite schema (see opposite) to keep the "
                              "others from matching it too")
                    return branches  # not strict: anyOf
            out.append(_all_of([branch, *fails]))
            self.kept_apart = self.kept_apart or bool(fails)
        return out
