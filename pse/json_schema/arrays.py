"""JSON Schema arrays: items, prefixItems, additionalItems, minItems/maxItems, contains with its
counts, and uniqueItems.
"""

from __future__ import annotations

import collections
import itertools
import math
from typing import Any

from pse import automaton
from pse.errors import SchemaError
from pse.json_spelling import MANY_VALUES, quoted, string_values
from pse.machines import AnyOf, Chain, DfaTerminal, Phrase, StateMachine, Terminal
from pse.registers import ITEM_CLOSE, ITEM_OPEN, KEY_BITS, Guard, Guarded, Scope
from pse.json_schema import common
from pse.json_schema.common import (_ANNOTATIONS, _count, _distinct, _dumps, _every_state_loops,
                                    _json_key, _json_type,
                                    _of_types, _unrolled_length, _validating)
from pse.json_schema.enums import _nested_whole_number, _spellings
from pse.json_schema.formats import FORMATS, UNSUPPORTED_FORMATS, _format_length, _format_patterns
from pse.json_schema.merge import _CONTAINS, _all_of
from pse.json_schema.numbers import integer_bounds

# A binding of the dynamic scope no anchor has: inside a unique array (see whole_strings).
WHOLE_STRINGS = "pse:whole strings"
# minItems/maxItems past this, for items of one kind, are counted in the register
# (counted_items); up to it they are unrolled, one parser state per item, which masks need not
# check against a count (but a maxItems of 100 unrolled was 100 copies of the array's states
# for the compiler to build and reduce: a third of some schemas' compile).
COUNTED_ITEMS = 16
# Beside prefixItems bounds are unrolled up to this, and refused past it.
MAX_UNROLLED_ITEMS = 256
# States of an array with `contains`: (matches needed + 1) x (items counted + 1).
MAX_CONTAINS_STATES = 4096
# An integer schema with only these besides its type has as many values as its range holds.
_INTEGER_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
# The most integers of a range with other keywords that listed_count checks one by one.
MAX_LISTED_INTEGERS = 256


def _with_siblings(siblings: dict, branch: Any) -> Any:
    """A union's branch with the keywords beside the union, which apply too, for
    open_ended and value_count; None where a keyword is in both with different values (the
    two are not merged here), but for an object's properties and required names, which
    those do not read."""
    if not isinstance(branch, dict) or not siblings:
        return branch  # (the branch itself: see _branches_as_written)
    if any(k in siblings and siblings[k] != v and k not in ("properties", "required")
           for k, v in branch.items()):
        return None
    return {**siblings, **branch}


def _literal_values(schema: Any) -> list | None:
    """The values a schema allows when they are a few literals (None: not that kind)."""
    if not isinstance(schema, dict):
        return None
    schema = _validating(schema)  # (unknown keywords are annotations too)
    keys = set(schema) - {"type"}
    if "type" in schema and not (isinstance(schema["type"], str) or (
            isinstance(schema["type"], list) and all(isinstance(t, str) for t in schema["type"]))):
        return None  # malformed: the general path says so
    if keys == {"const"} or (keys == {"enum"} and isinstance(schema["enum"], list)):
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if "type" in schema:
            values = _of_types(values, schema["type"])
        return _distinct(values)
    if set(schema) == {"type"} and schema["type"] in ("boolean", "null"):
        return [True, False] if schema["type"] == "boolean" else [None]
    for union in ("anyOf", "oneOf"):
        if keys == {union} and isinstance(schema[union], list) and schema[union]:
            parts = [_literal_values(b) for b in schema[union]]
            if any(p is None for p in parts):
                return None
            # anyOf: the values of any branch; oneOf: those of exactly one
            times = collections.Counter(_json_key(v) for p in parts for v in _distinct(p))
            values = _distinct([v for p in parts for v in p
                                if union == "anyOf" or times[_json_key(v)] == 1])
            return _of_types(values, schema["type"]) if "type" in schema else values
    return None


class _Arrays:
    """The _Compiler methods for arrays (a mixin of compile._Compiler)."""

    def array(self, node: dict, pointer: str) -> StateMachine | None:
        unevaluated = node.get("unevaluatedItems", True)
        items = node.get("items", unevaluated)
        prefix = node.get("prefixItems")
        rest: Any = items
        if isinstance(items, list):  # drafts 4-7: a list of items, then additionalItems
            prefix, rest = items, node.get("additionalItems", unevaluated)
        prefix = prefix or []
        if unevaluated not in (True, {}) and "contains" in node:
            self.fail(f"{pointer}/unevaluatedItems", "unevaluatedItems", "together with "
                      "contains (which evaluates the items it matches) is not supported yet")
        lo = _count(node, "minItems", pointer, 0)
        hi = _count(node, "maxItems", pointer)
        unique = node.get("uniqueItems") is True
        if unique and not self.whole_strings():
            # the items' strings compile whole (see `string`): a binding of the dynamic scope,
            # so that the machines compiled for other places are kept apart from these
            self.bound.append(tuple(sorted({**dict(self.bound[-1]), WHOLE_STRINGS: ""}.items())))
            try:
                return self.array(node, pointer)
            finally:
                self.bound.pop()
        if unique:
            values = None if prefix else _literal_values(self.resolve_shallow(rest, pointer))
            if values is not None and len(values) <= KEY_BITS and "contains" not in node:
                return self.unique_literals(values, lo, hi, pointer)
            contains = any(isinstance(part, dict) and "contains" in part
                           for part in [node, *node.get("allOf", ())])
            # (items that contains matches compile merged with it: not as the check sees them)
            self.check_unique(prefix, rest, pointer, sets=not contains)
            if not self.unique_room(prefix, rest, lo, contains, pointer):
                return None
        counted = []  # (contains, minContains, maxContains): this node's, and those merged
        # beside it (see _merge)
        for part in [node, *node.get("allOf", ())]:
            if part is not node and not (isinstance(part, dict) and set(part) <= set(_CONTAINS)):
                raise SchemaError(f"{pointer}/allOf: these schemas could not be merged")
            if "contains" not in part:
                continue
            n_min = _count(part, "minContains", pointer, 1)
            n_max = _count(part, "maxContains", pointer)
            sub = part["contains"]
            if n_max is not None and n_min > n_max:
                return None
            if sub is False:
                if n_min > 0:
                    return None
            elif sub is True or sub == {}:  # every item counts
                lo = max(lo, n_min)
                hi = n_max if hi is None else hi if n_max is None else min(hi, n_max)
            elif n_min > 0 or n_max is not None:
                counted.append((sub, n_min, n_max))
        if counted:
            return self.containing(node, counted, lo, hi, unique, pointer)
        opening, comma, closing, wrap = self.array_parts(unique)
        machines = []
        for i, sub in enumerate(prefix):
            m = self.compile(sub, f"{pointer}/prefixItems/{i}")
            if m is None:
                hi = i if hi is None else min(hi, i)
                break
            machines.append(wrap(m))
        rest_m = self.compile(rest, f"{pointer}/items")
        rest_m = None if rest_m is None else wrap(rest_m)
        if rest_m is None:
            hi = len(machines) if hi is None else min(hi, len(machines))
        if hi is not None and lo > hi:
            return None
        if max(lo, hi or 0) > COUNTED_ITEMS and not machines and rest_m is not None:
            return self.counted_items(rest_m, lo, hi, unique)
        if max(lo, hi or 0) > MAX_UNROLLED_ITEMS:
            if lo > MAX_UNROLLED_ITEMS:
                self.fail(f"{pointer}/minItems", "minItems",
                          f"more than {MAX_UNROLLED_ITEMS} (MAX_UNROLLED_ITEMS) is not supported")
                lo = MAX_UNROLLED_ITEMS
            if hi is not None and hi > MAX_UNROLLED_ITEMS:
                self.fail(f"{pointer}/maxItems", "maxItems",
                          f"more than {MAX_UNROLLED_ITEMS} (MAX_UNROLLED_ITEMS) is not supported")
                hi = None
        top = max(lo, len(machines)) if hi is None else hi
        graph: dict = {}
        last = 0
        for j in range(top):
            item = machines[j] if j < len(machines) else rest_m
            if item is None:
                break
            graph.setdefault(j, []).append((item if j == 0 else Chain(comma, item), j + 1))
            last = j + 1
        if hi is None and rest_m is not None and last == top:
            if last == 0:
                graph.setdefault(0, []).append((rest_m, 1))
                last = 1
            graph.setdefault(last, []).append((Chain(comma, rest_m), last))
        if lo > last:
            return None
        body = StateMachine(graph, start_state=0, end_states=range(lo, last + 1))
        array = self.bracketed(opening, body, closing, empty=0)
        return Scope(array) if unique else array

    def array_parts(self, unique: bool) -> tuple:
        """The "[", comma and "]" of an array, and what wraps each item. With uniqueItems the
        brackets and the comma open and close items in the array's register, and each item
        is a rule of its own, so that its end is seen (see pse.registers)."""
        if not unique:
            return Phrase("["), self.sep(","), Phrase("]"), lambda m: m
        return (Guarded(Phrase("["), Guard(item=ITEM_OPEN)),
                Chain(*self.wsp(), Guarded(Phrase(","), Guard(item=ITEM_CLOSE | ITEM_OPEN)),
                      *self.wsp()),
                Guarded(Phrase("]"), Guard(item=ITEM_CLOSE)), Scope)

    def counted_items(self, item: StateMachine, lo: int, hi: int | None,
                      unique: bool) -> StateMachine:
        """An array of `lo` to `hi` items of one kind whose bounds are too large to unroll:
        the commas are counted in the register (n items have n - 1), each one guarded by the
        maximum, the closing bracket by the minimum. `item` is wrapped already (array_parts)."""
        cap = hi - 1 if hi is not None else lo - 1
        flags = (ITEM_CLOSE | ITEM_OPEN) if unique else 0
        comma = Guarded(Phrase(","), Guard(inc=1, max_props=None if hi is None else hi - 1,
                                           cap=cap, item=flags))
        items = StateMachine({0: [(item, 1)],
                              1: [(Chain(*self.wsp(), comma, *self.wsp(), item), 1)]},
                             start_state=0, end_states=[0, 1] if lo == 0 else [1])
        close = Guarded(Phrase("]"), Guard(min_props=max(lo - 1, 0), cap=cap,
                                           item=flags & ITEM_CLOSE))
        if lo <= 1 and not unique:
            close = Phrase("]")
        opening = Guarded(Phrase("["), Guard(item=ITEM_OPEN)) if unique else Phrase("[")
        return Scope(self.bracketed(opening, items, close, empty=0))

    def containing(self, node: dict, counted: list[tuple[Any, int, int | None]], lo: int,
                   hi: int | None, unique: bool, pointer: str) -> StateMachine | None:
        """An array with, for each (contains, minContains, maxContains) of `counted`, at
        least minContains items matching that contains (items otherwise as `items` says),
        and lo..hi items in all: counters of matches and of items in the states, an item
        matching some of the contains schemas counting for each. maxContains and
        prefixItems alongside would need the complement of a contains schema."""
        where = f"{pointer}/contains"
        rest = node.get("items", True)
        if any(n_max is not None for _, _, n_max in counted) or "prefixItems" in node \
                or isinstance(rest, list):
            self.fail(where, "contains", "contains with maxContains or prefixItems is not "
                      "supported yet")
        needs = [n_min for _, n_min, _ in counted]
        if hi is not None and (max(needs) > hi or lo > hi):
            return None
        if unique:  # the items a contains counts are all different: so many must exist
            for sub, n_min, _ in counted:
                both = _all_of([rest, sub])
                n, exact = (0, True) if both is False else self.value_count(both, where,
                                                                            sets=False)
                if n is not None and n < n_min and (exact or n > 0):  # (0: not counted)
                    if exact:
                        return None
                    self.fail(f"{pointer}/minContains", "minContains", f"{n_min} different "
                              "items (uniqueItems) matching contains, of items that can run "
                              "out of new values, is not supported: generation could reach a "
                              "dead end")
        cap = hi if hi is not None else lo  # items counted up to here (past lo: enough)
        if math.prod(n + 1 for n in needs) * (cap + 1) > MAX_CONTAINS_STATES \
                or len(counted) > 4:
            self.fail(where, "contains", f"minContains and an item count beside it need more "
                      f"than {MAX_CONTAINS_STATES} states (MAX_CONTAINS_STATES), or more "
                      "than 4 contains schemas are merged")
            counted, needs, cap, lo, hi = counted[:1], [1], 0, 0, None  # (not strict)
        opening, comma, closing, wrap = self.array_parts(unique)
        item = self.compile(rest, f"{pointer}/items")
        item = None if item is None else wrap(item)
        matches = []  # (which contains schemas, the machine of an item matching them all)
        for k in range(1, len(counted) + 1):
            for which in itertools.combinations(range(len(counted)), k):
                subs = [counted[i][0] for i in which]
                m = self.compile(_all_of([rest, *subs]), where)
                if m is not None:
                    matches.append((which, wrap(m)))
        graph: dict = {}
        for js in itertools.product(*(range(n + 1) for n in needs)):  # matches so far
            for c in range(cap + 1):  # items so far
                if hi is not None and c == hi:
                    graph.setdefault((js, c, c == 0), [])
                    continue
                for first in [True, False][c > 0:]:
                    sep = [] if first else [comma]
                    edges = graph.setdefault((js, c, first), [])
                    nc = min(c + 1, cap)
                    if item is not None:
                        edges.append((Chain(*sep, item), (js, nc, False)))
                    for which, m in matches:
                        more = tuple(min(j + 1, needs[i]) if i in which else j
                                     for i, j in enumerate(js))
                        edges.append((Chain(*sep, m), (more, nc, False)))
        full = tuple(needs)
        ends = [s for s in graph if s[0] == full and s[1] >= lo]
        if not ends or not matches:
            return None
        start = ((0,) * len(needs), 0, True)
        array = self.bracketed(opening, StateMachine(graph, start_state=start, end_states=ends),
                               closing, empty=start)
        return Scope(array) if unique else array

    def check_unique(self, prefix: list, rest: Any, pointer: str, sets: bool = True) -> None:
        """uniqueItems over items of any kind is exact (a repeat is refused at its last
        byte) where no item prefix can run out of new values, or where the strings that can
        are terminals whose states count their completions (counted_strings: the core
        refuses a prefix whose strings were all seen); elsewhere a prefix whose every
        completion is an item already seen would be a dead end: refused in strict mode.
        `sets`: the items compile as they are written (see open_ended)."""
        for i, sub in enumerate(prefix):
            if not self.open_ended(sub, f"{pointer}/prefixItems/{i}", sets=sets):
                break
        else:
            if rest is False or self.open_ended(rest, f"{pointer}/items", sets=sets):
                return
        self.fail(f"{pointer}/uniqueItems", "uniqueItems", "over items that can run out of "
                  "new values after a prefix (bounded numbers, integers (1. can only go on "
                  "as 1.0), enums of other values than strings, closed objects, a maxLength "
                  "without a pattern or past 64, and with whitespace objects and arrays) "
                  "is not supported: generation could reach a dead end "
                  "there; supported: any value, strings (with a pattern, format or enum too: "
                  "their prefixes whose strings were all seen are refused), numbers without "
                  "bounds, booleans, null, open objects and arrays")

    def open_ended(self, sub: Any, pointer: str, depth: int = 0,
                   counted: bool = True, sets: bool = True) -> bool:
        """Whether every incomplete prefix of an instance of `sub` has completions of
        infinitely many values (so a finite set of items seen never exhausts them). Literals
        count: true, false and null are told at their first byte (a forced rest), a number
        with zero digits and an exponent at the exponent, and strings the core counts
        (counted_strings) as their prefixes run out, unless not `counted` (they still have
        only so many values). Objects and arrays do not when whitespace is allowed: "{" and
        some blanks may be left only "}". `sets`: `sub` is a schema compiled as it is
        written, so a string schema taken as a set (`as_set`) is one counted automaton
        (`_branches_as_written`: not every union's branches are)."""
        found = self.as_set(sub, pointer) if sets else False  # (before allOf merges)
        if found is not False:
            return counted and _set_count(found) is not None
        written = sub
        sub = resolved = self.resolve_shallow(sub, pointer)
        if sub is True:
            return not self.ws
        if not isinstance(sub, dict) or depth > 8:
            return False
        sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
        if not sub:
            return not self.ws
        for union in ("anyOf", "oneOf"):
            if union in sub:
                rest = {k: v for k, v in sub.items() if k != union}
                branches = [_with_siblings(rest, b) for b in sub[union]] \
                    if isinstance(sub[union], list) else []
                alone = sets and _branches_as_written(written, resolved, union)
                return (bool(branches) and None not in branches
                        and all(self.open_ended(b, pointer, depth + 1, counted, alone)
                                for b in branches))
        types = sub.get("type")
        if types is None and set(sub) <= {"enum", "const"}:
            return counted and self.counted_strings(sub, pointer)
        if types is None and set(sub) <= {"minLength", "maxLength", "pattern", "format"}:
            # a value of any type: the keywords bind strings only
            return not self.ws and self.open_ended({**sub, "type": "string"}, pointer,
                                                   depth + 1, counted, False)
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list) or not types:
            return False
        keys = set(sub) - {"type"}
        for t in types:
            if t == "string":
                ok = keys <= {"minLength"} or (keys <= {"minLength", "format"} and sub.get(
                    "format") in ("uri", "uri-reference", "iri", "iri-reference")) or (
                    keys <= {"minLength", "pattern", "format"} and self.endless_strings(
                        sub, pointer)) or (counted and self.counted_strings(sub, pointer))
            elif t in ("number", "boolean", "null"):
                ok = not keys
            elif t == "object":
                extra = sub.get("additionalProperties", True)
                ok = not self.ws and keys <= {"properties", "required", "minProperties",
                                              "additionalProperties"} and extra in (True, {})
            elif t == "array":
                # items all different: only so many when the items have only so many values
                items = sub.get("items", True)
                ok = (not self.ws and keys <= {"items", "minItems", "uniqueItems"}
                      and (items is True or items == {}
                           or self.open_ended(items, pointer, depth + 1,
                                              counted and sub.get("uniqueItems") is not True,
                                              sets))
                      and (sub.get("uniqueItems") is not True
                           or self.unbounded_values(items, pointer, depth + 1)))
            else:
                ok = False
            if not ok:
                return False
        return True

    def endless_strings(self, sub: dict, pointer: str) -> bool:
        """Whether every state of the string contents `sub`'s pattern and format allow can
        reach a loop: then every prefix goes on to infinitely many strings (no final state,
        where the contents would end with nothing left to choose)."""
        sub = _format_length(sub)
        fmt = sub.get("format")
        if fmt in UNSUPPORTED_FORMATS or not isinstance(sub.get("minLength", 0), int) \
                or sub.get("minLength", 0) > common.MAX_UNROLLED_LENGTH:
            return False
        patterns = [(sub["pattern"], True, f"{pointer}/pattern")] if "pattern" in sub else []
        if fmt in FORMATS:  # an unknown format is an annotation (see string)
            patterns += _format_patterns(fmt, f"{pointer}/format")
        try:
            dfa = self.content_dfa(sub, patterns, pointer)
        except SchemaError:
            return False  # the string itself reports it, where it is compiled
        return _every_state_loops(dfa)

    def counted_strings(self, sub: dict, pointer: str) -> bool:
        """Whether the strings `sub` allows compile to one terminal of whole strings whose
        states count the strings they complete to (json_spelling.string_values): then the
        core refuses a prefix that only items seen before complete. Patterns and formats
        with lengths short enough to unroll, and enums of strings."""
        return self.string_count(sub, pointer) is not None

    def string_count(self, sub: dict, pointer: str) -> int | None:
        """How many strings `sub` allows (MANY_VALUES: infinitely many), where they are
        counted_strings; else None."""
        keys = set(sub) - {"type"}
        if keys and keys <= {"enum", "const"}:
            values = [sub["const"]] if "const" in sub else sub["enum"]
            if isinstance(values, list) and sub.get("type") == "string":
                values = [v for v in values if isinstance(v, str)]  # (as `literals` keeps)
            if not isinstance(values, list) or not values or not all(
                    isinstance(v, str) for v in values):
                return None
            texts = sorted({_dumps(v) for v in values})
            counts = string_values(automaton.trie(texts, [], []))
            return None if counts is None else counts[0]
        if not keys <= {"minLength", "maxLength", "pattern", "format"}:
            return None
        sub = _format_length(sub)
        fmt = sub.get("format")
        lo, hi = sub.get("minLength", 0), sub.get("maxLength")
        if fmt in UNSUPPORTED_FORMATS or not (isinstance(lo, int) and (
                hi is None or isinstance(hi, int))) or not _unrolled_length(lo, hi):
            return None
        patterns = [(sub["pattern"], True, f"{pointer}/pattern")] if "pattern" in sub else []
        if fmt in FORMATS:
            patterns += _format_patterns(fmt, f"{pointer}/format")
        if not patterns:
            return None  # (plain strings with a maxLength are counted, not unrolled)
        try:
            dfa = self.content_dfa(sub, patterns, pointer, count_length=True)
        except SchemaError:
            return None  # the string itself reports it, where it is compiled
        if not dfa.accept[0] and not dfa.trans[0]:
            return 0
        counts = string_values(quoted(dfa))
        return None if counts is None else counts[0]

    def value_count(self, sub: Any, pointer: str, depth: int = 0,
                    sets: bool = True) -> tuple[int | None, bool]:
        """At least how many values the items `sub` (which passed check_unique) have, None
        for infinitely many, and whether exactly that many: a unique array's minItems needs
        room (the core sees to it that a new item remains, not that enough do). `sets`: as
        for open_ended."""
        found = self.as_set(sub, pointer) if sets else False
        if found is not False:
            n = _set_count(found)
            return (0, False) if n is None else ((None if n >= MANY_VALUES else n), True)
        written = sub
        sub = resolved = self.resolve_shallow(sub, pointer)
        if not isinstance(sub, dict) or depth > 8:
            return None, False  # (true: any value; false has no items, counted elsewhere)
        sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
        for union in ("anyOf", "oneOf"):
            if isinstance(sub.get(union), list) and sub[union]:
                rest = {k: v for k, v in sub.items() if k != union}
                branches = [_with_siblings(rest, b) for b in sub[union]]
                alone = sets and _branches_as_written(written, resolved, union)
                counts = [(0, False) if b is None else self.value_count(b, pointer, depth + 1,
                                                                        alone)
                          for b in branches]
                if any(n is None for n, _ in counts):
                    return None, False
                kinds = [b.get("type") if isinstance(b, dict) else None for b in branches]
                if all(isinstance(k, str) for k in kinds) and len(set(kinds)) == len(kinds):
                    return sum(n for n, _ in counts), all(e for _, e in counts)  # apart
                if len(counts) == 1:
                    return counts[0]
                # anyOf: overlapping branches share values, so the largest is a bound from
                # below; oneOf: the values two branches share are left out, so none is
                return (max(n for n, _ in counts) if union == "anyOf" else 0), False
        types = sub.get("type")
        keys = set(sub) - {"type"}
        if (types is None and keys and keys <= {"enum", "const"}) or types == "string":
            n = self.string_count(sub, pointer)
            if n is not None:
                return (None if n >= MANY_VALUES else n), True
        types = [types] if isinstance(types, str) else types
        if isinstance(types, list) and types and set(types) <= {"boolean", "null"} and not keys:
            return sum(2 if t == "boolean" else 1 for t in set(types)), True
        n = self.listed_count(sub, pointer)
        if n is not None:
            return (None if n >= MANY_VALUES else n), True
        if self.open_ended(sub, pointer, counted=False, sets=False) \
                and self.unbounded_values(sub, pointer):
            return None, False
        return 0, False

    def listed_count(self, sub: dict, pointer: str) -> int | None:
        """How many values `sub` allows (1 and 1.0 are one) where it lists them (enum,
        const) or they are the integers of a range, bounds on both sides: with other
        keywords beside, each listed value, or each integer of a range of at most
        MAX_LISTED_INTEGERS, is checked against the whole schema. None where not so."""
        keys = set(sub) - {"type"}
        types = sub.get("type")
        if keys & {"enum", "const"}:
            values = [sub["const"]] if "const" in sub else sub["enum"]
            if not isinstance(values, list):
                return None
            values = _distinct(values)
            if types is None and len(keys) == 1:
                return len(values)
        elif types in ("integer", ["integer"]):
            lo, hi = integer_bounds(sub, pointer)
            if lo is None or hi is None:
                return None
            if keys <= _INTEGER_BOUNDS or hi < lo:
                return max(0, hi - lo + 1)
            if hi - lo >= MAX_LISTED_INTEGERS:
                return None
            values = list(range(lo, hi + 1))
        else:
            return None
        if self.draft4 and any(_nested_whole_number(v) for v in values):
            return None  # (1 and 1.0 inside may differ there: see enum)
        try:
            whole = self.checker(sub, pointer)
        except SchemaError:
            return None
        return 0 if whole is None else sum(
            any(whole.matches(text) for text in _spellings(v)) for v in values)

    def unique_room(self, prefix: list, rest: Any, lo: int, contains: bool,
                    pointer: str) -> bool:
        """Whether a unique array's first `lo` items always find new values, so that no
        prefix is a dead end for its minItems; False when they never can (nothing is
        valid). Beside prefixItems or `contains`, with items that can run out, refused in
        strict mode."""
        if contains and any(self.value_count(sub, pointer)[0] is not None
                            for sub in [*prefix, rest]):
            self.fail(f"{pointer}/contains", "contains", "beside uniqueItems over items that "
                      "can run out of new values is not supported: the items it counts "
                      "could run out first, a dead end")
        if lo <= 0:
            return True
        if prefix:
            ahead = prefix[:lo] + ([rest] if lo > len(prefix) else [])
            if any(self.value_count(sub, pointer)[0] is not None for sub in ahead):
                self.fail(f"{pointer}/minItems", "minItems", "beside prefixItems, with items "
                          "that can run out of new values (uniqueItems), is not supported: "
                          "generation could reach a dead end")
            return True
        n, exact = self.value_count(rest, pointer)
        if n is None or lo <= n:
            return True
        if exact:
            return False
        self.fail(f"{pointer}/minItems", "minItems", f"{lo} items all different, of items "
                  "that can run out of new values (uniqueItems) and whose number of values "
                  "is not known, is not supported: generation could reach a dead end")
        return True

    def unbounded_values(self, sub: Any, pointer: str, depth: int = 0) -> bool:
        """Whether `sub` (open-ended) has infinitely many values: not only booleans and null."""
        sub = self.resolve_shallow(sub, pointer)
        if not isinstance(sub, dict) or depth > 8:
            return sub is True
        for union in ("anyOf", "oneOf"):
            if isinstance(sub.get(union), list):
                return any(self.unbounded_values(b, pointer, depth + 1) for b in sub[union])
        types = sub.get("type")
        types = [types] if isinstance(types, str) else types
        return types is None or bool(set(types) & {"string", "number", "object", "array"})

    def literal_terminal(self, v: Any, pointer: str) -> Terminal:
        """One terminal for the literal value `v` (compact), its numbers in every decimal
        spelling of their values (1, 1.0, 1.00; no exponents, as `literals`), in draft 4 as
        written."""
        if self.draft4 or not _holds_number(v):
            return Phrase(_dumps(v).decode())
        if not isinstance(v, (dict, list)):
            return self.literals([v], pointer)  # (a number: one terminal)
        nfa = automaton.NFA()

        def parts(x: Any) -> list:
            if isinstance(x, (dict, list)):
                items = list(x.items()) if isinstance(x, dict) else [(None, y) for y in x]
                out = [automaton.literal(nfa, b"{" if isinstance(x, dict) else b"[")]
                for i, (key, y) in enumerate(items):
                    head = (b"," if i else b"") + (b"" if key is None else _dumps(key) + b":")
                    out += ([automaton.literal(nfa, head)] if head else []) + parts(y)
                return out + [automaton.literal(nfa, b"}" if isinstance(x, dict) else b"]")]
            if _json_type(x) in ("integer", "number"):
                return [automaton.embed(nfa, self.literals([x], pointer).unit_dfa())]
            return [automaton.literal(nfa, _dumps(x))]

        dfa = automaton.minimize(automaton.determinize(nfa, automaton.concat(nfa, parts(v))))
        return DfaTerminal(dfa, f"literal at {pointer}")

    def unique_literals(self, values: list, lo: int, hi: int | None,
                        pointer: str) -> StateMachine | None:
        """uniqueItems over items drawn from a few literal values (enum, const, boolean,
        null): one key bit per value, guarded like object keys."""
        values = sorted(_distinct(values), key=_dumps)
        if not values:
            return None if lo > 0 else Chain(Phrase("["), *self.wsp(), Phrase("]"))
        hi = len(values) if hi is None else min(hi, len(values))
        if lo > hi:
            return None
        # a number in every spelling of its value (1, 1.0: one item), alone or inside an array
        # or object, as `literals` spells it (draft 4 aside, where 1.0 may not be an integer:
        # there as written)
        item = AnyOf(*[Guarded(self.literal_terminal(v, pointer), Guard(forbid=1 << i, set=1 << i))
                       for i, v in enumerate(values)])
        graph = {j: [(item if j == 0 else Chain(self.sep(","), item), j + 1)] for j in range(hi)}
        body = StateMachine(graph, start_state=0, end_states=range(lo, hi + 1))
        return Scope(self.bracketed(Phrase("["), body, Phrase("]"), empty=0))


def _holds_number(v: Any) -> bool:
    """Whether `v` is a number or an array or object holding one, at any depth."""
    if isinstance(v, dict):
        return any(_holds_number(x) for x in v.values())
    if isinstance(v, list):
        return any(_holds_number(x) for x in v)
    return _json_type(v) in ("integer", "number")


def _set_count(found: tuple | None) -> int | None:
    """`string_count` of a string schema taken as a set (`as_set` found it; None: it allows
    no string): its strings are one automaton, counted where its length bounds are in it
    (not counted at run time)."""
    if found is None:
        return 0
    dfa, lo, hi = found
    if not _unrolled_length(lo, hi):
        return None
    counts = string_values(quoted(dfa))
    return None if counts is None else counts[0]


def _branches_as_written(written: Any, resolved: Any, union: str) -> bool:
    """Whether `compile` takes each branch of the union `written` holds as it is: nothing
    beside the union (not even an annotation: `union` compiles a branch with the keywords
    beside it), nothing merged into it (`resolved` is `written`), and no oneOf branches
    given their opposites."""
    return (resolved is written and isinstance(written, dict) and set(written) == {union}
            and (union == "anyOf" or len(written[union]) == 1))
