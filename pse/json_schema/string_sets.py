"""JSON Schema strings as sets: where a schema allows only strings, its allOf, anyOf, oneOf,
not and if/then/else are the intersections, unions and differences of the automata of the
string contents each part allows, computed as one automaton. A union inside allOf, or a not
of an allOf, then costs a product of automata instead of a branch per combination of the
unions' branches (9 x 9 x 9 of them in maskbench's Handwritten---allany16).
"""

from __future__ import annotations

import itertools
from typing import Any

from pse import automaton, products
from pse.errors import GrammarError, SchemaError
from pse.json_spelling import json_names_dfa
from pse.machines import StateMachine
from pse.json_schema.common import _ANNOTATIONS, _count, _listed, _unrolled_length
from pse.json_schema.formats import FORMATS, _format_length, _format_patterns

# The keywords that combine subschemas; a string schema with one of them is taken as a set.
_COMBINING = ("allOf", "anyOf", "oneOf", "not", "if")

# Keywords that say something of strings themselves (besides $ref and those that combine
# subschemas). Every other keyword left in a schema constrains only other types (or
# nothing), so holds for any string.
_OF_STRINGS = frozenset(["type", "enum", "const", "pattern", "minLength", "maxLength",
                         "format"])

# Keywords whose meaning here needs the compiler's dispatch (the dynamic scope).
_DYNAMIC = frozenset(["$dynamicRef", "$recursiveRef"])


class _NotASet(Exception):
    """A part the sets do not take (see `_Ways.takes`), a reference to itself, an automaton
    past the limits, or a length the set's automaton cannot count: the schema compiles as
    usual."""


def only_strings(node: dict) -> bool:
    """Whether `node` says its values are strings, and combines subschemas (`string_set`'s
    case)."""
    return node.get("type") in ("string", ["string"]) and any(k in node for k in _COMBINING)


# Taken as a set where compiling the subschemas one branch at a time would make more
# branches than this (see `_Ways`): below it, the branches cost less than the products.
MIN_SET_BRANCHES = 32


class _StringSets:
    """The _Compiler method for string schemas taken as sets (a mixin of compile._Compiler)."""

    def string_set(self, node: dict, pointer: str) -> StateMachine | None | bool:
        """The strings `node` allows as one machine (None: none), or False where it is
        better compiled one branch at a time (few branches), or some part cannot be taken
        as a set: the caller compiles `node` as usual."""
        found = self.set_contents(node, pointer)
        if found is None or found is False:
            return found
        dfa, lo, hi = found
        try:
            return self.string_of(dfa, lo, hi, pointer, approximate=False)
        except GrammarError:
            return False

    def as_set(self, sub: Any, pointer: str
               ) -> tuple[automaton.DFA, int, int | None] | None | bool:
        """`set_contents` of the schema `compile` takes `sub` to, through references alone
        (no siblings), as it follows them; False where that is not taken as one set."""
        for _ in range(16):  # (as resolve_shallow: a target may be a reference too)
            if not isinstance(sub, dict):
                return False
            if "$ref" not in sub:
                return self.set_contents(sub, pointer) if only_strings(sub) else False
            if not self.ref_alone and any(k != "$ref" and k not in _ANNOTATIONS for k in sub):
                return False  # (a schema of its own, derived: compiled one branch at a time)
            try:
                sub = self.resolve(self.absolute(sub, sub["$ref"]), pointer)
            except SchemaError:
                return False  # (the usual compile says what is wrong)
        return False

    def set_contents(self, node: dict, pointer: str
                     ) -> tuple[automaton.DFA, int, int | None] | None | bool:
        """`string_set`'s automaton of string contents, with the top node's length bounds
        (the automaton holds them where they are short enough to unroll; longer ones are
        counted at run time), None where no string fits, False where `node` is compiled
        one branch at a time. Made once per node (a unique array's checks ask too)."""
        made = self.string_sets.get(id(node))
        if made is not None and made[0] is node:
            return made[1]
        lo = _count(node, "minLength", pointer, 0)
        hi = _count(node, "maxLength", pointer)
        found: tuple | None | bool = None
        if hi is None or lo <= hi:
            whole = node
            if not _unrolled_length(lo, hi):  # (counted at run time, as `string` counts them)
                whole = {k: v for k, v in node.items() if k not in ("minLength", "maxLength")}
            ways = _Ways(self)
            found = False
            if ways.of(whole)[0] > MIN_SET_BRANCHES and ways.takes:
                try:
                    dfa = _Sets(self).of(whole, pointer)
                    found = (dfa, lo, hi) if dfa.accept[0] or dfa.trans[0] else None
                except (_NotASet, GrammarError):
                    pass
        self.string_sets[id(node)] = (node, found)  # (the node kept alive with its id)
        return found


class _Ways:
    """How many branches compiling a string schema one branch at a time makes, about:
    (branches of the schema, branches of its opposite), where allOf multiplies its parts'
    unions, and `not` swaps the two (the opposite of a union is the opposites together, of
    an allOf the union of its parts' opposites). Capped at _MANY. On the way, whether every
    part can be taken as a set (`takes`): no dynamic reference, no format without an exact
    automaton, no length bound too long to unroll (a format's own too)."""

    def __init__(self, compiler: Any) -> None:
        self.compiler = compiler
        self.made: dict[int, tuple[Any, tuple[int, int]]] = {}
        self.takes = True

    def of(self, node: Any) -> tuple[int, int]:
        if not isinstance(node, dict):
            return 1, 1
        if id(node) in self.made:
            return self.made[id(node)][1]
        self.made[id(node)] = (node, (1, 1))  # (met inside itself: the set route bails)
        self.takes = self.takes and _takes(node)
        # (the opposite of a part of many keywords is the union of theirs; `type` counts
        # for nothing where strings are the values)
        keywords = sum(k in node for k in _OF_STRINGS if k != "type")
        ways, opposite = 1, max(1, keywords)
        parts = [self.of(sub) for sub in _subschemas(node, "allOf")]
        if "$ref" in node:
            try:
                parts.append(self.of(self.compiler.resolve(
                    self.compiler.absolute(node, node["$ref"]), "")))
            except SchemaError:
                pass
        if "anyOf" in node:
            branches = self.branches(_subschemas(node, "anyOf"))
            parts.append((_sum(w for w, _ in branches), _product(o for _, o in branches)))
        if "oneOf" in node:  # (each branch with the opposites of those it may overlap)
            subs = _subschemas(node, "oneOf")
            branches = self.branches(subs)
            apart = len(subs) > _MAX_PAIRS or all(  # (told apart: see _Logic.exclusive)
                self.disjoint(a, b) for a, b in itertools.combinations(subs, 2))
            every = 1 if apart else _product(o for _, o in branches)
            parts.append((min(_sum(w for w, _ in branches) * every, _MANY),
                          min(every + len(branches) ** 2, _MANY)))
        if "not" in node:
            parts.append(tuple(reversed(self.of(node["not"]))))
        if "if" in node:
            holds, then, other = (self.of(node.get(k, True)) for k in ("if", "then", "else"))
            parts.append((holds[0] * then[0] + holds[1] * other[0],
                          holds[0] * then[1] + holds[1] * other[1]))
        for w, o in parts:
            ways, opposite = min(ways * w, _MANY), min(opposite + o, _MANY)
        self.made[id(node)] = (node, (ways, opposite))
        return ways, opposite

    def branches(self, subs: list) -> list[tuple[int, int]]:
        """A union's branches' ways, those that only list values as one (see
        _literals_together)."""
        ways = [self.of(sub) for sub in subs if not _listed(sub)]
        return ways + [(1, 1)] if len(ways) < len(subs) else ways

    def disjoint(self, a: Any, b: Any) -> bool:
        try:
            return self.compiler.disjoint(a, b, "")
        except SchemaError:  # (the compile says what is wrong)
            return False


_MANY = 1 << 20

# A oneOf of more branches is taken as told apart (checking each pair costs more).
_MAX_PAIRS = 32


def _product(values) -> int:
    out = 1
    for v in values:
        out = min(out * v, _MANY)
    return out


def _takes(node: dict) -> bool:
    """Whether the keywords of strings in `node` can be a set's automaton."""
    fmt = node.get("format")
    if not _DYNAMIC.isdisjoint(node) or (fmt is not None and not (
            isinstance(fmt, str) and fmt in FORMATS)):
        return False
    bounded = _format_length(node)
    lo, hi = bounded.get("minLength", 0), bounded.get("maxLength")
    return not isinstance(lo, int) or not (hi is None or isinstance(hi, int)) \
        or _unrolled_length(lo, hi)  # (bad values: the usual compile says what is wrong)


def _sum(values) -> int:
    return min(sum(values), _MANY)


def _subschemas(node: dict, key: str) -> list:
    """The subschemas under `key` (none where it is absent or not a list)."""
    subs = node.get(key, [])
    return subs if isinstance(subs, list) else []


def _subschemas_strictly(node: dict, key: str) -> list:
    """`_subschemas`, where a bad value (not a list, an empty one) is not a set's."""
    if key in node and not (isinstance(node[key], list) and node[key]):
        raise _NotASet
    return _subschemas(node, key)


class _Sets:
    """One `string_set`: each subschema's set of string contents (as JSON spells them, every
    character as patterns spell it, so that complements stay within those spellings), once
    per subschema."""

    def __init__(self, compiler: Any) -> None:
        self.compiler = compiler
        self.everything = compiler.content_dfa({}, [("", True, "")], "")
        self.made: dict[int, tuple[Any, automaton.DFA]] = {}  # id(node) -> (node, set)
        self.entered: set[int] = set()

    def of(self, node: Any, pointer: str) -> automaton.DFA:
        if node is True:
            return self.everything
        if node is False:
            return _NOTHING
        if not isinstance(node, dict):
            raise _NotASet  # (the usual compile says what is wrong)
        if id(node) in self.made:
            return self.made[id(node)][1]
        if id(node) in self.entered or not _DYNAMIC.isdisjoint(node):
            raise _NotASet
        self.entered.add(id(node))
        try:
            found = self.combined(node, pointer)
        except (GrammarError, SchemaError):
            raise _NotASet from None
        finally:
            self.entered.discard(id(node))
        self.made[id(node)] = (node, found)
        return found

    def combined(self, node: dict, pointer: str) -> automaton.DFA:
        """The strings `node` allows: its own keywords' and its subschemas' sets together."""
        found = self.leaf(node, pointer)
        compiler = self.compiler
        if "$ref" in node:
            target = compiler.resolve(compiler.absolute(node, node["$ref"]), pointer)
            if compiler.ref_alone:  # (drafts 4-7: the siblings of $ref are ignored)
                return self.of(target, f"{pointer}/$ref")
            found = self.both(found, self.of(target, f"{pointer}/$ref"))
        for i, sub in enumerate(_subschemas_strictly(node, "allOf")):
            found = self.both(found, self.of(sub, f"{pointer}/allOf/{i}"))
        if "anyOf" in node:
            found = self.both(found, self.union([
                self.of(sub, f"{pointer}/anyOf/{i}")
                for i, sub in enumerate(_subschemas_strictly(node, "anyOf"))]))
        if "oneOf" in node:
            found = self.both(found, self.exactly_one([
                self.of(sub, f"{pointer}/oneOf/{i}")
                for i, sub in enumerate(_subschemas_strictly(node, "oneOf"))]))
        if "not" in node:
            found = products.difference(found, self.of(node["not"], f"{pointer}/not"))
        if "if" in node:
            holds = self.of(node["if"], f"{pointer}/if")
            then = self.of(node.get("then", True), f"{pointer}/then")
            other = self.of(node.get("else", True), f"{pointer}/else")
            found = self.both(found, self.union([
                self.both(holds, then), products.difference(other, holds)]))
        return found

    def leaf(self, node: dict, pointer: str) -> automaton.DFA:
        """The strings the keywords of strings in `node` allow (its subschemas aside)."""
        if _OF_STRINGS.isdisjoint(node):
            return self.everything
        types = node.get("type", "string")
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list):
            raise _NotASet
        if "string" not in types:
            return _NOTHING
        node = _format_length(node)
        lo = _count(node, "minLength", pointer, 0)
        hi = _count(node, "maxLength", pointer)
        if not _unrolled_length(lo, hi):
            raise _NotASet  # (counted at run time: CharCountedTerminal)
        patterns = [("", True, pointer)]  # (the spellings patterns know: see _Sets)
        if "pattern" in node:
            if not isinstance(node["pattern"], str):
                raise _NotASet
            patterns.append((node["pattern"], True, f"{pointer}/pattern"))
        if "format" in node:
            if not _takes(node):
                raise _NotASet  # (unknown or inexact: the usual compile warns or refuses)
            patterns += _format_patterns(node["format"], f"{pointer}/format")
        found = self.compiler.content_dfa(node, patterns, pointer)
        for values in ([node["const"]] if "const" in node else None, node.get("enum")):
            if values is not None:
                if not isinstance(values, list):
                    raise _NotASet
                words = [v for v in values if isinstance(v, str)]
                found = self.both(found, json_names_dfa(words) if words else _NOTHING)
        return found

    def both(self, a: automaton.DFA, b: automaton.DFA) -> automaton.DFA:
        if a is self.everything:
            return b
        if b is self.everything:
            return a
        return products.intersect(a, b)

    def union(self, sets: list[automaton.DFA]) -> automaton.DFA:
        sets = [s for s in sets if s.accept[0] or s.trans[0]]
        if any(s is self.everything for s in sets):
            return self.everything
        if len(sets) < 2:
            return sets[0] if sets else _NOTHING
        return automaton.union(sets)

    def exactly_one(self, sets: list[automaton.DFA]) -> automaton.DFA:
        """The strings in exactly one of `sets`: each less the union of the others (those
        before it and those after it, each union made once)."""
        before = [_NOTHING]
        for s in sets[:-1]:
            before.append(self.union([before[-1], s]))
        after = [_NOTHING]
        for s in reversed(sets[1:]):
            after.append(self.union([after[-1], s]))
        after.reverse()
        return self.union([products.difference(s, self.union([before[i], after[i]]))
                           for i, s in enumerate(sets)])


_NOTHING = automaton.DFA([[]], [False])
