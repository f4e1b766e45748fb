"""The compiler of a JSON Schema document into machines: `_Compiler` (the keyword families' mixins
together) and its dispatch from a schema node to the family that compiles it.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from pse import automaton, limits, products, schema_types
from pse.errors import GrammarError, MultipliedOut, SchemaError
from pse.machines import AnyOf, Chain, DfaTerminal, Forward, Phrase, StateMachine, Whitespace
from pse.regex import compile_regex
from pse.json_schema import common
from pse.json_schema.common import (_ANNOTATIONS, _distinct, _exclusion, _json_key,
                                    _json_type, _values)
from pse.json_schema.merge import SOME_PROPERTY, _all_of, _alternatives, _any_of
from pse.json_schema.arrays import WHOLE_STRINGS, _Arrays
from pse.json_schema.enums import _Enums, _any_value, _is_type
from pse.json_schema.logic import _Logic
from pse.json_schema.names import _Names
from pse.json_schema.negation import _Negation
from pse.json_schema.numbers import _Numbers
from pse.json_schema.objects import _Objects
from pse.json_schema.refs import (_Refs, _SCHEMA_MAPS, _SUBSCHEMAS, _draft, _schema_objects,
                                  _subschemas, leads_only_to)
from pse.json_schema.string_sets import _StringSets, only_strings
from pse.json_schema.strings import _Strings

# Keywords a draft does not have (later ones), by draft: unknown keywords there.
_UNTIL_2019 = {"dependentRequired", "dependentSchemas", "unevaluatedItems",
               "unevaluatedProperties", "prefixItems", "minContains", "maxContains",
               "$recursiveRef", "$dynamicRef"}
_LATER_KEYWORDS = {4: {"const", "contains", "propertyNames", "if", "then", "else",
                       *_UNTIL_2019},
                   6: {"if", "then", "else", *_UNTIL_2019},
                   7: _UNTIL_2019,
                   2019: {"prefixItems", "$dynamicRef"},
                   # (2020-12 keeps "dependencies", as the official suite's optional
                   # compatibility tests ask)
                   2020: {"$recursiveRef"}}
_CLOSED = ("closed",)  # the state after an object's or array's close (see bracketed)


@functools.lru_cache(maxsize=64)
def _blanks(ws: int) -> Whitespace:
    """At most `ws` blanks (a terminal is never changed: one per bound serves every schema)."""
    return Whitespace(0, ws)


@functools.lru_cache(maxsize=64)
def _colon(ws: int) -> DfaTerminal:
    """`_Compiler.colon` (a terminal is never changed: one per bound serves every schema)."""
    blank = f"[ \\t\\n\\r]{{0,{ws}}}"
    pattern = f"{blank}:{blank}"
    return DfaTerminal(compile_regex(pattern), "colon", key=("regex", pattern))
# Subschemas one schema may compile to. Unions inside allOf (and the opposites that keep
# oneOf's branches apart) are multiplied out, one subschema per combination (one made alike
# to one compiled before counts one: it is not compiled again); past this the schema is
# refused with a clear error instead of minutes and gigabytes (the maskbench schemas under
# it need at most 6,300: JsonSchemaStore---cityjson.min.schema.json 6,242; above it,
# Github_medium---o9802 needs 104,000 and 12 s).
MAX_SCHEMA_NODES = 20_000


def _depth_limited(compile_node: Callable) -> Callable:
    """Bound the nesting of `_Compiler.compile` (MAX_SCHEMA_DEPTH), check the compile
    budget at each subschema, and the JSON types of keywords (the whole document at the root;
    a node compiled that is not in it: made by the compiler, or in a remote document)."""

    def compile(self: Any, node: Any, pointer: str) -> Any:
        depth = getattr(self, "depth", 0)
        if depth == 0:
            self.checked = schema_types.check_document(node)
        if id(node) not in self.checked:  # (made here, or in a remote document)
            schema_types.check_node(node, pointer)
        if depth >= common.MAX_SCHEMA_DEPTH:
            raise SchemaError(f"{pointer}: the schema nests more than {common.MAX_SCHEMA_DEPTH} "
                              f"subschemas deep (MAX_SCHEMA_DEPTH)")
        try:
            limits.check_budget()
        except GrammarError as e:
            raise SchemaError(f"{pointer}: {e}") from None
        self.depth = depth + 1
        try:
            return compile_node(self, node, pointer)
        finally:
            self.depth = depth

    compile.__doc__ = compile_node.__doc__
    return compile


def _unlike(value: list | dict) -> list:
    """Schemas of which an array or object unlike `value` (not JSON-equal to it) matches
    one at least: a different length or item; a key missing, a different value or more keys."""
    if isinstance(value, list):
        n = len(value)
        return [*([{"maxItems": n - 1}] if n else []), {"minItems": n + 1},
                *({"prefixItems": [True] * i + [{"not": {"const": x}}], "minItems": i + 1}
                  for i, x in enumerate(value))]
    return [*({"properties": {k: False}} for k in value),
            *({"required": [k], "properties": {k: {"not": {"const": x}}}}
              for k, x in value.items()),
            {"minProperties": len(value) + 1}]


def _dependent_schemas(node: dict) -> dict[str, Any]:
    """`dependentSchemas`, and draft 4-7 `dependencies` whose values are schemas."""
    out = dict(node.get("dependentSchemas") or {})
    for name, sub in (node.get("dependencies") or {}).items():
        if not isinstance(sub, list):
            out[name] = sub if name not in out else {"allOf": [out[name], sub]}
    return {k: v for k, v in out.items() if v is not True and v != {}}


def _left_out_where_typed(sub: Any) -> bool:
    """Whether what `"not": sub` leaves out is literal values, strings a pattern finds a
    match in and integers (any of those): left out where each type is compiled."""
    parts = [p for p in _alternatives(sub) if not _is_type(p, "integer")]
    return not parts or _exclusion(_any_of(parts)) is not None


def _case_test(cond: Any) -> tuple[str, list, bool, bool] | None:
    """An `if` that tests one property against listed values: (its name, the values,
    whether the property must be present, whether the value must be an object); None:
    another kind of condition."""
    if not isinstance(cond, dict):
        return None
    cond = {k: v for k, v in cond.items() if k not in _ANNOTATIONS}
    props = cond.pop("properties", None)
    required = cond.pop("required", [])
    kind = cond.pop("type", None)
    if kind not in (None, "object", ["object"]):
        return None
    is_object = kind is not None
    if cond or not isinstance(props, dict) or len(props) != 1 or not isinstance(required, list):
        return None
    (name, sub), = props.items()
    if not isinstance(sub, dict) or set(required) - {name}:
        return None
    sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
    types = sub.pop("type", None)
    if set(sub) == {"const"}:
        values = [sub["const"]]
    elif set(sub) == {"enum"} and isinstance(sub["enum"], list):
        values = list(sub["enum"])
    else:
        return None
    if types is not None:  # a type beside the values: those of the type (numbers: only
        # under "number", where no spelling of a value may fail "integer")
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list):
            return None
        kinds = {"number" if _json_type(v) == "integer" else _json_type(v) for v in values}
        values = [v for v in values if ("number" if _json_type(v) == "integer"
                                        else _json_type(v)) in types]
        if "number" in kinds and "number" not in types and "integer" in types:
            return None
    return name, values, bool(required), is_object


def _switch(node: dict) -> dict | None:
    """Two or more `if`s side by side (`node`'s own, and those merged beside it into allOf)
    that each test the same property against listed values, as one union with a case per
    value: which conditions hold is known in each case, so it applies their `then` or
    `else` (N cases where expanding each `if` in turn makes 2^N). None: no such `if`s."""
    parts = ("if", "then", "else")
    conditions = [{k: node[k] for k in parts if k in node}]
    conditions += [x for x in node.get("allOf", ()) if isinstance(x, dict) and "if" in x
                   and set(x) <= set(parts)]
    tests = [_case_test(c["if"]) for c in conditions]
    if tests[0] is None:
        return None
    name = tests[0][0]
    chosen = [i for i, t in enumerate(tests) if t is not None and t[0] == name]
    if len(chosen) < 2:
        return None
    values = _distinct([v for i in chosen for v in tests[i][1]])
    rest = {k: v for k, v in node.items() if k not in parts}
    # the cases the rest of the node rules out are left out (their conditions' unions
    # would be multiplied out before the contradiction shows)
    types = rest.get("type")
    types = {types} if isinstance(types, str) else set(types) if isinstance(types, list) \
        else {"object", "other"}
    own = (rest.get("properties") or {}).get(name)
    listed = _values(own) if isinstance(own, dict) else None
    other = {"not": {"enum": values}}  # the property's values no condition lists
    if listed is not None:
        tested = {_json_key(v) for v in values}
        values = [v for v in values if _json_key(v) in listed]
        left = [v for v in ([own["const"]] if "const" in own else own["enum"])
                if _json_key(v) not in tested]
        other = {"enum": left} if left else None
    present = name in (rest.get("required") or ())

    def case(shape: dict, holds) -> Any:  # the case, with what each condition says there
        return _all_of([shape, *(conditions[i].get("then" if holds(tests[i]) else "else", True)
                                 for i in chosen)])

    cases = []
    if types - {"object"}:
        cases.append(case({"type": ["array", "boolean", "null", "number", "string"]},
                          lambda t: not t[3]))
    if "object" in types:
        if not present:
            cases.append(case({"type": "object", "properties": {name: False}},
                              lambda t: not t[2]))
        if other is not None:
            cases.append(case({"type": "object", "required": [name],
                               "properties": {name: other}}, lambda t: False))
        cases += [case({"type": "object", "required": [name],
                        "properties": {name: {"const": v}}},
                       lambda t, v=v: _json_key(v) in {_json_key(x) for x in t[1]})
                  for v in values]
    left = [x for x in node.get("allOf", ()) if not any(x is conditions[i] for i in chosen)]
    rest.pop("allOf", None)
    if left:
        rest["allOf"] = left
    cases = [c for c in cases if c is not False]
    union = {"anyOf": cases} if cases else False
    return _all_of([rest, union]) if rest else union


class _Compiler(_Refs, _Logic, _Negation, _Enums, _Strings, _StringSets, _Numbers, _Objects,
                _Arrays, _Names):
    """One JSON Schema document compiled into machines: the dispatch from a schema node
    to its keyword families (the mixins), and what they share."""

    def __init__(self, root: Any, ws: int, retrieve, strict: bool, property_order: str
                 ) -> None:
        self.property_order = property_order
        self.ws = ws
        self.retrieve = retrieve
        self.strict = strict
        self.warnings: list[str] = []
        # the texts of the warnings to give (JsonSchema gives them once the compile is done;
        # the compile cache gives them again on a hit)
        self.shown: list[str] = []
        # machines by (schema object or reference, dynamic anchors bound where it is compiled)
        self.refs: dict[tuple[str, tuple], Forward | None] = {}
        self.recursive: set[tuple[str, tuple]] = set()  # references met while they compile
        self.compiled: dict[tuple[int, tuple], tuple[Any, StateMachine | None]] = {}
        # made schema objects (merges, opposites) by content (see `content_key`): a union
        # multiplied out makes the same subschema many times
        self.by_content: dict[tuple[int, tuple], StateMachine | None] = {}
        self.content_keys: dict[int, tuple[Any, Any]] = {}  # id -> (the object, kept alive; key)
        self.interned: dict[tuple, int] = {}  # a made object's content -> its number
        # schema objects compiling now; a Forward once one is met inside itself
        self.compiling: dict[tuple[int, tuple], Forward | None] = {}
        self.nodes = 0  # subschemas compiled (MAX_SCHEMA_NODES)
        # ids of the schema objects of the document compiled, whose keywords' types were
        # checked (it lives while it compiles: no other object takes one of its ids)
        self.checked: set[int] = set()
        self.one_of_apart = True  # False: oneOf taken as anyOf (see JsonSchema._build) ...
        self.kept_apart = False  # ... True once a oneOf's branches carry others' opposites
        self.phrases: dict[str, Phrase] = {}  # (see `phrase`)
        self.any_order: _Compiler | None = None  # for literals: see `checker`
        # $dynamicAnchor names (and RECURSIVE for $recursiveAnchor) by the resource defining
        # them; the bindings of the dynamic scope, innermost last: ((name, resource), ...)
        self.dynamic_names: dict[str, list[str]] = {}
        self.bound: list[tuple] = [()]
        # schema resources by base URI, anchors by (base URI, name), and the base URI each
        # schema object is read against
        self.resources: dict[str, Any] = {}
        self.anchors: dict[tuple[str, str], Any] = {}
        self.bases: dict[int, tuple[Any, str]] = {}  # id -> (the object, kept alive; base)
        # the opposite of each reference (see `opposite_ref`): the URI of a resource made for
        # it, or None where it has none
        self.opposites: dict[str, str | None] = {}
        # the key names of each SOME_PROPERTY requirement (a requirement is one object, met in
        # every schema its opposite is merged into): id -> (the requirement, names DFA)
        self.some_names: dict[int, tuple[dict, automaton.DFA | None]] = {}
        # string schemas taken as sets (see `set_contents`): id -> (the object, its result)
        self.string_sets: dict[int, tuple[dict, Any]] = {}
        self.any_value = _any_value(ws)
        self.draft = _draft(root)
        self.drafts: dict[str, int] = {}  # of remote documents, by base URI
        # the schema objects `in_dialect` went through, and those it did not (reached by a
        # $ref into some other JSON) with their version in the schema's draft
        self.in_dialect_ids: set[int] = set()
        self.outside: dict[int, tuple[Any, Any]] = {}
        self.draft4 = self.draft == 4
        # drafts 4 to 7: "$ref" replaces its siblings instead of joining them
        self.ref_alone = self.draft <= 7
        # one walk indexes the document and finds it in its draft (as most are); else it is
        # read without the other drafts' keywords and indexed again
        self.root = root
        if self.index(root, "", self.later_keywords(self.draft)):
            self.resources, self.anchors, self.bases, self.dynamic_names = {}, {}, {}, {}
            self.root = root = self.in_dialect(root, "#", self.draft)
            self.index(root, "")
        else:
            self.in_dialect_ids.update(self.bases)

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def later_keywords(draft: int) -> frozenset:
        """The keywords `in_dialect` leaves out of a document of `draft`."""
        return _LATER_KEYWORDS.get(draft, frozenset()) | {SOME_PROPERTY}

    def in_dialect(self, doc: Any, pointer: str, draft: int) -> Any:
        """`doc` without the keywords `draft` does not have (unknown keywords there, which
        constrain nothing: `const` in draft 4, `if` in draft 6, `prefixItems` in 2019-09),
        with a warning naming each; `doc` itself when it has none."""
        ignored = self.later_keywords(draft)
        if not isinstance(doc, dict):
            return doc
        seen: set[int] = set()
        nodes: list = [doc]
        while nodes:  # a first pass, without copies or pointers (most documents have none)
            node = nodes.pop()
            if isinstance(node, list):
                nodes.extend(node)
            elif isinstance(node, dict) and id(node) not in seen:
                seen.add(id(node))
                if not ignored.isdisjoint(node):
                    break
                nodes.extend([v for _, _, v in _subschemas(node)])
        else:
            self.in_dialect_ids |= seen
            return doc
        found: dict[str, str] = {}
        for node, where in _schema_objects(doc, pointer, ignored):  # for the warnings
            for key in ignored & node.keys():
                found.setdefault(key, f"{where}/{key}")
        for key, where in found.items():
            msg = (f"{where}: {key!r} is not a keyword of draft {draft} (the schema's "
                   "$schema): ignored")
            self.warn(msg, f"pse: {msg}")
        copies: dict[int, dict] = {}
        pending: list = []

        def copied(node: Any) -> Any:
            if isinstance(node, list):
                return [copied(x) for x in node]
            if not isinstance(node, dict):
                return node
            if id(node) not in copies:  # (a shared subschema stays shared)
                copies[id(node)] = {}
                pending.append((node, copies[id(node)]))
            return copies[id(node)]

        out = copied(doc)
        while pending:
            node, new = pending.pop()
            for key, value in node.items():
                if key in ignored:
                    continue
                if key in _SCHEMA_MAPS and isinstance(value, dict):
                    new[key] = {n: copied(v) for n, v in value.items()}
                elif key in _SUBSCHEMAS:
                    new[key] = copied(value)
                else:
                    new[key] = value
        self.in_dialect_ids.update(id(x) for x in copies.values())
        return out

    def fail(self, pointer: str, keyword: str, message: str) -> None:
        text = f"{pointer}: {keyword}: {message}"
        if self.strict:
            raise SchemaError(text)
        self.warn(text, f"pse: {text} (approximated, strict=False)")

    def warn(self, message: str, shown: str) -> None:
        """Record `message` in the schema's warnings, and `shown` as the warning to give."""
        self.warnings.append(message)
        self.shown.append(shown)

    def wsp(self) -> list[StateMachine]:
        return [_blanks(self.ws)] if self.ws else []

    def sep(self, text: str) -> StateMachine:
        return Chain(*self.wsp(), self.phrase(text), *self.wsp())

    def phrase(self, text: str) -> Phrase:
        """`Phrase(text)`, one machine per text in a schema (its objects repeat key names,
        brackets and commas: fewer objects to make and for the collector to scan)."""
        found = self.phrases.get(text)
        if found is None:
            found = self.phrases[text] = Phrase(text)
        return found

    def colon(self) -> StateMachine:
        """A key's colon with the blanks allowed around it, as one terminal (every member
        has one: fewer parser nodes than blanks, colon, blanks)."""
        return _colon(self.ws)

    def bracketed(self, opening: StateMachine, body: StateMachine, close: StateMachine,
                  empty: Any = None) -> StateMachine:
        """`opening`, `body`, `close`, with the blanks allowed after the opening and before
        the close; where the body ends empty (in its end state `empty`), the blanks come
        once, so that "[ ]" has no more of them than any two tokens."""
        if not self.ws:
            return Chain(opening, body, close)
        after = Chain(*self.wsp(), close)
        graph = {state: list(edges) for state, edges in body.state_graph.items()}
        for end in body.end_states:
            graph.setdefault(end, []).append((close if end == empty else after, _CLOSED))
        return Chain(opening, *self.wsp(),
                     StateMachine(graph, start_state=body.start_state, end_states=[_CLOSED]))

    # -- dispatch --------------------------------------------------------------------------
    @_depth_limited
    def compile(self, node: Any, pointer: str) -> StateMachine | None:
        """The machine for `node`, or None when nothing is valid (a false schema). A schema
        object used in several places compiles once (schemas are DAGs, often)."""
        entered = self.enter(node)
        key = (id(node), self.bound[-1])
        try:
            if key in self.compiled:
                return self.compiled[key][1]
            if key in self.compiling:  # met inside itself (an allOf of a $ref, say)
                forward = self.compiling[key]
                if forward is None:
                    forward = self.compiling[key] = Forward(name=f"schema at {pointer}")
                return forward
            made = None if id(node) in self.in_dialect_ids else (
                self.content_key(node), key[1])
            self.nodes += 1
            if self.nodes > MAX_SCHEMA_NODES:
                raise MultipliedOut(f"{pointer}: the schema multiplies out into more than "
                                    f"{MAX_SCHEMA_NODES} subschemas (MAX_SCHEMA_NODES): "
                                    "unions inside allOf, or oneOf branches kept apart, "
                                    "combine")
            if made is not None and made in self.by_content:
                machine = self.by_content[made]
                self.compiled[key] = (node, machine)
                return machine
            warned = len(self.warnings)
            self.compiling[key] = None
            try:
                machine = self.compile_new(node, pointer)
            finally:
                forward = self.compiling.pop(key)
            if forward is not None:
                if machine is None:
                    raise SchemaError(f"{pointer}: the schema refers to itself and allows "
                                      "nothing")
                if leads_only_to(machine, forward):  # ({"$ref": "#"})
                    raise SchemaError(f"{pointer}: the schema refers only to itself")
                machine = forward.set(machine)
            self.compiled[key] = (node, machine)  # the node is kept so its id stays its own
            if made is not None and len(self.warnings) == warned:  # (each place warns)
                self.by_content.setdefault(made, machine)
            return machine
        finally:
            if entered:
                self.bound.pop()

    def content_key(self, value: Any) -> Any:
        """What compiling `value` depends on, as a hashable: the same for two objects that
        merges made alike. A document's own schema objects are told apart by identity (as
        `compiled` tells them), made ones by their base URI and content, in their keys'
        order (the order of properties counts); a number for each distinct made content."""
        if isinstance(value, str):
            return value
        if not isinstance(value, (dict, list)):
            # (an object of no JSON type lives as long as the made object holding it)
            return (value.__class__, value) if value is None or isinstance(
                value, (bool, int, float)) else ("object", id(value))
        found = self.content_keys.get(id(value))
        if found is not None:
            return found[1]
        if isinstance(value, list):
            content = ("list", *[self.content_key(v) for v in value])
        elif id(value) in self.in_dialect_ids:
            content = ("document", id(value))
        else:
            content = (self.bases.get(id(value), (None, None))[1],
                       *[(k, self.content_key(v)) for k, v in value.items()])
        number = self.interned.setdefault(content, len(self.interned))
        self.content_keys[id(value)] = (value, number)
        return number

    def enter(self, node: Any) -> bool:
        """Track the dynamic scope: when `node` starts a schema resource with dynamic anchors
        not bound yet, bind them to it (the outermost resource wins) and say so."""
        names = self.dynamic_names.get(self.bases.get(id(node), (None, None))[1])
        if not names:
            return False
        outer = dict(self.bound[-1])
        base = self.bases[id(node)][1]
        fresh = {name: base for name in names if name not in outer}
        if not fresh:
            return False
        self.bound.append(tuple(sorted({**outer, **fresh}.items())))
        return True

    def compile_new(self, node: Any, pointer: str) -> StateMachine | None:
        if node is True or node == {}:
            return self.any_value
        if node is False:
            return None
        if not isinstance(node, dict):
            raise SchemaError(f"{pointer}: a schema is an object or a boolean, got {node!r}")
        if "$ref" in node:
            uri = self.absolute(node, node["$ref"])
            target = self.ref(uri, pointer)
            rest = {} if self.ref_alone else {k: v for k, v in node.items()
                                              if k != "$ref" and k not in _ANNOTATIONS}
            if rest:
                return self.compile(self.derived(node, {
                    **rest, "allOf": [*rest.get("allOf", ()), {"$ref": uri}]}), pointer)
            return target
        for key in ("$dynamicRef", "$recursiveRef"):
            if key in node:
                rest = {k: v for k, v in node.items() if k != key and k not in _ANNOTATIONS}
                ref = {"$ref": self.dynamic_target(node, pointer)}
                if rest:
                    ref = self.derived(node, {**rest, "allOf": [*rest.get("allOf", ()), ref]})
                return self.compile(ref, pointer)
        if only_strings(node):  # (before allOf merges: its unions would multiply out)
            machine = self.string_set(node, pointer)
            if machine is not False:
                return machine
        if "allOf" in node:
            merged = self.merge_all(node, pointer)
            if "allOf" not in merged:
                return self.compile(merged, pointer)
            if not any(k in merged for k in ("anyOf", "oneOf", "if", "contains")):
                raise SchemaError(f"{pointer}/allOf: these schemas could not be merged")
            node = merged  # unions and conditions that did not merge are left: taken one
            # at a time below, the others merged into each case
        if node.get("type") == []:
            return None  # types that exclude each other: the unions need not be expanded
        for key in ("anyOf", "oneOf"):
            if key in node:
                return self.union(node, key, pointer)
        if "not" in node:
            # (literal values, patterns and integers are left out where the type is compiled)
            opposite = None if _left_out_where_typed(node["not"]) \
                else self.opposite(node["not"], f"{pointer}/not")
            if opposite is not None:
                rest = {k: v for k, v in node.items() if k != "not"}
                return self.compile(_all_of([rest, opposite]) if rest else opposite, pointer)
            node = self.negate(node, pointer)
            if node is None:
                return None
        dependent = _dependent_schemas(node)
        if dependent:
            return self.dependent(node, dependent, pointer)
        if "if" in node:
            switched = _switch(node)
            return self.compile(switched if switched is not None
                                else self.conditional(node, pointer), pointer)
        if "const" in node or "enum" in node:
            return self.enum(node, pointer)  # (which applies the rest, `not` too)
        excluded = None
        parts = _alternatives(node.get("not"))
        fractional = any(_is_type(p, "integer") for p in parts)  # numbers, not integers
        if fractional:
            node = {k: v for k, v in node.items() if k != "not"}
            kept = [p for p in parts if not _is_type(p, "integer")]
            if kept:
                node["not"] = _any_of(kept)
        if "not" in node and node["not"] is not True and node["not"] != {}:
            excluded = _exclusion(node["not"])
            if excluded is None:
                self.fail(f"{pointer}/not", "not", "not of this schema is not supported yet "
                          "(only of types, literal values, string patterns and what "
                          "opposite() rewrites)")
        types = node.get("type")
        if types is None:
            types = ["object", "array", "string", "number", "boolean", "null"]
        elif isinstance(types, str):
            types = [types]
        if "number" in types and "integer" in types:
            types = [t for t in types if t != "integer"]
        machines = []
        for t in types:
            m = self.typed(t, node, pointer, excluded, fractional)
            if m is not None:
                machines.append(m)
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def typed(self, t: str, node: dict, pointer: str,
              excluded: tuple[list, list[str]] | None = None,
              fractional: bool = False) -> StateMachine | None:
        """The values of JSON type `t` that `node` allows, less the `excluded` ones (literal
        values, and strings that patterns find a match in: see `_exclusion`), and less the
        integers when `fractional`."""
        values, patterns = excluded or ([], [])
        banned = [v for v in values if _json_type(v) == t
                  or (_json_type(v) == "integer" and t == "number")
                  or (_json_type(v) == "number" and t == "integer" and float(v).is_integer())]
        if t == "string":
            return self.string(node, pointer, banned, patterns)
        if t in ("boolean", "null"):
            words = ["true", "false"] if t == "boolean" else ["null"]
            left = [w for w in words if json.loads(w) not in banned]
            return AnyOf(*map(Phrase, left)) if len(left) > 1 else \
                Phrase(left[0]) if left else None
        if banned and t in ("array", "object"):  # as "differs from each" (see _unlike)
            rest = {**{k: v for k, v in node.items() if k != "not"}, "type": t}
            return self.compile(_all_of([rest, *({"anyOf": _unlike(v)} for v in banned)]),
                                pointer)
        if banned:
            self.fail(f"{pointer}/not", "not", f"leaving out a value of type {t} (an "
                      "exact automaton would need every spelling of it) is not supported")
        if t in ("number", "integer"):
            if fractional:
                return None if t == "integer" else self.fraction(node, pointer)
            return self.number(node, pointer, integer=(t == "integer"))
        if t == "object":
            return self.object(node, pointer)
        if t == "array":
            return self.array(node, pointer)
        raise SchemaError(f"{pointer}/type: unknown type {t!r}")

    def intersect(self, a: automaton.DFA, b: automaton.DFA, where: str) -> automaton.DFA:
        try:
            return products.intersect(a, b)
        except GrammarError as e:
            raise SchemaError(f"{where}: {e}") from None

    # -- strings inside unique arrays (arrays.py) -------------------------------------------
    def whole_strings(self) -> bool:
        """Whether strings compile to one terminal from quote to quote (inside a unique
        array's items: see counted_strings), not quotes around a terminal of contents (which
        the strings of all schemas share, and so their masks)."""
        return any(name == WHOLE_STRINGS for name, _ in self.bound[-1])
