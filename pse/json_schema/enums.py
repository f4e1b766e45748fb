"""JSON Schema enum and const: the literal values a schema allows, spelled as JSON."""

from __future__ import annotations

import copy
import functools
import math
from decimal import Decimal
from typing import Any

from pse import automaton
from pse.compiler import share_rules
from pse.errors import GrammarError, SchemaError
from pse.json_value import Json
from pse.machines import AnyOf, DfaTerminal, StateMachine
from pse.json_schema.common import (_ANNOTATIONS, _count, _distinct, _dumps, _exclusion,
                                    _json_key, _json_type, _of_types, _validating)
from pse.json_schema.merge import _all_of
from pse.regex import compile_regex

# the keywords beside listed strings that _strings_allowed checks itself
_STRING_KEYWORDS = frozenset(("type", "pattern", "minLength", "maxLength"))


@functools.lru_cache(maxsize=1024)
def _literal_trie(texts: tuple, integers: tuple, decimals: tuple) -> automaton.DFA:
    """`automaton.trie`, once per list of literals (schemas repeat their enums: one automaton,
    whose content key is then hashed once)."""
    return automaton.trie(texts, integers, decimals)


@functools.lru_cache(maxsize=16)
def _any_value(ws: int) -> StateMachine:
    """Any JSON value, built once per whitespace setting: machines are immutable once built,
    and this one (recursive, so a reference cycle) would otherwise be garbage the collector
    has to find after every schema that does not use it. Its rules are compiled once too."""
    return share_rules(Json(whitespace=ws).value)


def _nested_whole_number(v: Any) -> bool:
    """Whether the array or object `v` holds a whole number, at any depth."""
    if isinstance(v, dict):
        v = list(v.values())
    if not isinstance(v, list):
        return False
    return any(_nested_whole_number(x) or (_json_type(x) in ("integer", "number")
                                           and math.isfinite(x) and float(x).is_integer())
               for x in v)


def _whole(machine: StateMachine | None) -> StateMachine | None:
    """`machine` matching a whole text (a value checked on its own), or None."""
    return None if machine is None else StateMachine({0: [(machine, "$")]}, 0, ["$"])


def _spellings(v: Any) -> list[bytes]:
    """`v` as compact JSON, and a whole number also with a fraction part (1 and 1.0), the
    spellings a draft 4 schema may tell apart."""
    dumped = _dumps(v)
    if _json_type(v) in ("integer", "number") and math.isfinite(v) and float(v).is_integer():
        whole = str(int(v)).encode()
        return [whole, whole + b".0"]
    return [dumped]


def _strings_allowed(values: list, rest: dict, pointer: str) -> list | None:
    """The strings `values` that the string keywords `rest` allow, told here: a length in
    code points, a pattern by its automaton over the text (as `pattern` means it: found
    anywhere, ECMA-262 classes). A machine compiled for `rest` and run on each value took
    1.2 ms an enum in JsonSchemaStore's service-schema.json (238 task names beside each
    name's pattern, 238 times). None where `rest` or the values are not such (then a
    machine checks them)."""
    if not _STRING_KEYWORDS.issuperset(rest) or rest.get("type", "string") != "string" \
            or not isinstance(rest.get("pattern", ""), str) \
            or not all(isinstance(v, str) for v in values):
        return None
    lo = _count(rest, "minLength", pointer, 0)
    hi = _count(rest, "maxLength", pointer)
    found = None
    if "pattern" in rest:
        try:
            found = compile_regex(rest["pattern"], 0, search=True, ecma=True)
        except GrammarError:
            return None  # (the machine's compile says what is wrong with it)
    kept = []
    for v in values:
        if not lo <= len(v) <= (len(v) if hi is None else hi):
            continue
        if found is not None:
            try:
                text = v.encode()
            except UnicodeEncodeError:  # (a lone surrogate: the machine reads its escape)
                return None
            if not found.matches(text):
                continue
        kept.append(v)
    return kept


def _is_type(schema: Any, name: str) -> bool:
    """Whether `schema` is {"type": name} (annotations aside)."""
    return isinstance(schema, dict) and {k: v for k, v in schema.items()
                                         if k not in _ANNOTATIONS} == {"type": name}


class _Enums:
    """The _Compiler methods for enum and const (a mixin of compile._Compiler)."""

    def enum(self, node: dict, pointer: str) -> StateMachine | None:
        """The listed values that the schema's other keywords allow too."""
        if "const" in node:
            values, key = [node["const"]], "const"
        else:
            values, key = node["enum"], "enum"
            if not isinstance(values, list) or not values:
                raise SchemaError(f"{pointer}/enum: must be a non-empty array")
        # (unknown keywords are annotations: {"type": "string", "readonly": true} is a type)
        rest = {k: v for k, v in _validating(node).items() if k not in ("const", "enum")}
        if "const" in node and "enum" in node:
            rest["enum"] = node["enum"]
        excluded = _exclusion(rest.get("not"))
        if excluded is not None and not excluded[1]:  # other values: left out here
            out = {_json_key(v) for v in excluded[0]}
            values = [v for v in values if _json_key(v) not in out]
            del rest["not"]
        elif _is_type(rest.get("not"), "integer") and not self.draft4:  # numbers with a
            # fraction, other types (in draft 4, 1.0 too: left to the check below)
            values = [v for v in values if _json_type(v) != "integer"
                      and not (_json_type(v) == "number" and float(v).is_integer())]
            del rest["not"]
        elif rest.get("not") not in (None, True, {}) and not self.draft4:
            try:  # the values the negated schema does not match (1 and 1.0 alike: not 4)
                fails = self.checker(rest["not"], pointer)
            except SchemaError:
                fails = False  # (left to the rest below)
            if fails is not False:
                values = [v for v in values if fails is None or not fails.matches(_dumps(v))]
                del rest["not"]
        spelling = None  # draft 4: which spellings of a whole number the rest allows
        if set(rest) == {"type"}:
            types = rest["type"] if isinstance(rest["type"], list) else [rest["type"]]
            values = _of_types(values, types)
            if self.draft4 and "number" not in types:  # 1.0 is not an integer there
                spelling = lambda text: b"." not in text and b"e" not in text  # noqa: E731
        elif rest and (strings := _strings_allowed(values, rest, pointer)) is not None:
            values = strings
        elif rest:
            checked = rest
            kinds = {"number" if t == "integer" else t for t in map(_json_type, values)}
            if "type" not in rest and len(kinds) == 1:
                # values of one JSON type are checked against the rest within that type: a
                # smaller machine than one over every JSON value (half the compile and check
                # of {"maxLength": 2})
                checked = {**rest, "type": kinds.pop()}
            try:
                whole = self.checker(checked, pointer)
            except SchemaError:  # then in this compiler's order: a literal out of it is
                # left out (on the safe side)
                whole = _whole(self.compile(checked, pointer))
            if whole is None:
                return None
            # (draft 4: an array or object may hold 1 where 1.0 fails, or the other way
            # round; those are compiled beside the rest instead)
            values = [v for v in values if (self.draft4 and _nested_whole_number(v))
                      or any(whole.matches(t) for t in _spellings(v))]
            if self.draft4:
                spelling = whole.matches
        within = rest if self.draft4 and rest else None
        return self.literals(values, f"{pointer}/{key}", spelling, within) if values else None

    def checker(self, node: Any, pointer: str) -> StateMachine | None:
        """A machine that tells whether a literal value (compact JSON) matches `node`, with
        an object's keys in any order; None: nothing matches.

        Raises:
            SchemaError: `node` cannot be compiled so (more than KEY_BITS properties, say).
        """
        compiler = self
        if self.property_order != "any" or self.ws:
            if self.any_order is None:  # a compiler like this one, with caches of its own
                other = self.any_order = copy.copy(self)
                other.property_order, other.ws, other.any_value = "any", 0, _any_value(0)
                other.compiled, other.refs, other.compiling, other.by_content = {}, {}, {}, {}
                other.recursive = set()  # (its own checker is itself: any order, no blanks)
            compiler = self.any_order
            compiler.bound, compiler.depth = [self.bound[-1]], getattr(self, "depth", 0)
        return _whole(compiler.compile(node, pointer))

    def literals(self, values: list, pointer: str, spelling=None,
                 within: dict | None = None) -> StateMachine | None:
        """The values, compared as JSON compares them: a number in any spelling of its
        value (1, 1.0), an object's members in any order when property_order is "any".
        `spelling(text)`, where given, says which spellings of a whole number are kept (in
        draft 4, 1 is an integer and 1.0 is not); arrays and objects are compiled beside
        the schema `within`, where given, if they hold a whole number."""
        texts, integers, decimals, composite = set(), [], [], []
        for v in _distinct(values):
            if isinstance(v, (dict, list)):
                composite.append(v)
                continue
            dumped = _dumps(v)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v)):
                texts.add(dumped)
                continue
            # the decimal spellings of the same value: 1, 1.0, 1.00; 1.5, 1.50; 0, -0
            d = Decimal(str(v)) if isinstance(v, float) else Decimal(v)
            if d != d.to_integral_value():
                spelled = format(d.normalize(), "f").encode()
                texts.update((spelled, dumped))
                decimals.append(spelled)
                continue
            for sign in ((b"", b"-") if d == 0 else (b"",)):
                spelled = sign + str(int(d)).encode()
                if spelling is None or spelling(spelled):
                    texts.add(spelled)
                if spelling is None or spelling(spelled + b".0"):
                    integers.append(spelled)
                    if b"e" in dumped:  # 1e+20: as Python reads it, a float
                        texts.add(dumped)
        try:
            dfa = _literal_trie(tuple(sorted(texts)), tuple(integers), tuple(decimals)) \
                if texts or integers else None
        except GrammarError as e:
            raise SchemaError(f"{pointer}: {e}") from None
        machines = [] if dfa is None else [DfaTerminal(dfa, f"enum at {pointer}")]
        for v in composite:
            if isinstance(v, dict):
                shape = {"type": "object", "properties": {k: {"const": x} for k, x in v.items()},
                         "required": list(v), "additionalProperties": False}
            else:
                shape = {"type": "array", "prefixItems": [{"const": x} for x in v],
                         "minItems": len(v), "items": False}
            m = self.compile(_all_of([within, shape]) if within and _nested_whole_number(v)
                             else shape, pointer)
            if m is not None:
                machines.append(m)
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)
