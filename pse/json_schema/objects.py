"""JSON Schema objects: properties, patternProperties, additionalProperties, required, property
counts and dependencies (the automata of key names are names.py's, the members as machines
members.py's).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pse import automaton
from pse.bounded_cache import BoundedCache
from pse.errors import SchemaError
from pse.machines import StateMachine
from pse.registers import KEY_BITS, Guard, Guarded, Scope
from pse.json_schema.common import _content, _count, _escape, _every_state_loops
from pse.json_schema.members import Members
from pse.json_schema.merge import SOME_PROPERTY, _all_of, _search

# The most values of different kinds one property is split into, by which of the object's
# SOME_PROPERTY requirements a value of it meets (2 to the number of requirements it may meet
# by its value).
MAX_SOME_VARIANTS = 8
# The most keys with dependentRequired beside maxProperties in one object: each is present or
# absent in a case of its own (2 to this number of cases).
MAX_DEPENDENCY_CASES = 4


def _needed_by(name: str, depends: dict[str, list[str]]) -> list[str]:
    """The names dependentRequired brings with `name`, and those they bring, in turn (in the
    order found: a schema compiles the same in every process)."""
    out: list[str] = []
    todo = [name]
    while todo:
        for b in depends.get(todo.pop(0), ()):
            if b not in out and b != name:
                out.append(b)
                todo.append(b)
    return out


def _bit(i: int) -> int:
    """Key bit i, as a Python int (a shift of C ints, as Cython would make of `1 << len(x)`,
    overflows at bit 31)."""
    return 1 << i


# _key_endings by key automaton: a schema whose unions multiply out asks it of the same few
# automata in every copy of an object (utam-page-object: 19,751 times, 239 automata)
_KEY_ENDINGS = BoundedCache(1024)
_NOT_KNOWN = object()


def _key_endings(keys: automaton.DFA) -> bool | tuple[str, ...] | None:
    """True when every state of `keys` can reach a loop (each prefix goes on to endless
    names); else the names it spells when at most KEY_BITS (None: more)."""
    found = _KEY_ENDINGS.get(keys.key(), _NOT_KNOWN)
    if found is _NOT_KNOWN:
        names = True if _every_state_loops(keys) else _few_names(keys, KEY_BITS)
        found = names if names is True or names is None else tuple(names)
        _KEY_ENDINGS.put(keys.key(), found)
    return found


def _few_names(keys: automaton.DFA, limit: int) -> list[str] | None:
    """The key names whose JSON spellings `keys` (key contents) accepts, when they are at
    most `limit` spellings; else None."""
    live = automaton.live_states(keys)
    if not live[0]:
        return []
    ordered = set(automaton.peel_order([
        sorted({t for _, _, t in row if live[t]}) if live[q] else []
        for q, row in enumerate(keys.trans)]))
    if any(live[q] and q not in ordered for q in range(keys.n_states)):
        return None  # a cycle: endless spellings
    spellings: list[bytes] = []
    stack = [(0, b"")]
    while stack:
        q, text = stack.pop()
        if keys.accept[q]:
            spellings.append(text)
        for lo, hi, t in keys.trans[q]:
            if live[t]:
                if len(spellings) + len(stack) + hi - lo + 1 > limit:
                    return None
                stack.extend((t, text + bytes([b])) for b in range(lo, hi + 1))
    names = []
    for text in spellings:
        try:
            name = json.loads(b'"' + text + b'"')
        except ValueError:  # (a spelling is a whole JSON string's content)
            return None
        if name not in names:
            names.append(name)
    return names


def _dependent_required(node: dict, pointer: str) -> dict[str, list[str]]:
    """`dependentRequired`, and draft 4-7 `dependencies` whose values are lists."""
    out: dict[str, list[str]] = {}
    for key in ("dependentRequired", "dependencies"):
        for name, needs in (node.get(key) or {}).items():
            if isinstance(needs, list):
                out.setdefault(name, [])
                out[name] += [n for n in needs if n not in out[name]]
            elif key == "dependentRequired":
                raise SchemaError(f"{pointer}/{key}/{_escape(name)}: must be an array")
    return out


def _value_schema(name: str, props: dict, patterns: dict, additional: Any, pointer: str) -> Any:
    """What a named property must satisfy: its own schema (or additionalProperties when it is
    not listed) and every patternProperties schema whose pattern it has."""
    own = [props[name]] if name in props else []
    matching = [sub for pat, sub in patterns.items() if _search(pat, name, pointer)]
    if not own and not matching:
        own = [additional]
    schemas = own + matching
    return schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _needs_before(at: int, needs: dict[str, list[str]], order: dict[str, int],
                  bit: dict[str, int]) -> tuple:
    """The clauses of a key at place `at` in schema order (`order`: each present name's
    place): for each present name placed before it, the key bits of its needs placed before
    it too (those that cannot come after it)."""
    out = ((bit[x], sum(bit[d] for d in needs[x] if d in order and order[d] < at))
           for x in needs if x in order and order[x] < at)
    return tuple((x, ds) for x, ds in out if ds)


def _some_property_cases(node: dict, some: list[dict], some_bit: list[int],
                         values: dict[str, StateMachine], named_kinds: dict[str, list],
                         other_kinds: list[tuple], n_max: int | None,
                         required: list[str]) -> dict | None:
    """The object as an anyOf of cases, one per listed name that can meet a requirement of
    some property (and one for the other keys), where only listed names can meet it (or a
    required one, under maxProperties): a key bit could be left unset with no key left to
    set it, a dead end. None: every requirement can be met by the other keys."""
    by_others = 0
    for o in other_kinds:
        by_others |= o[-1]
    for k, w in enumerate(some):
        if by_others & some_bit[k] and (n_max is None or not any(
                b & some_bit[k] for n in required for _, b in named_kinds.get(n, ()))):
            continue
        rest = {**node, SOME_PROPERTY: [x for x in some if x is not w]}
        cases = [_all_of([rest, {"required": [n], "properties": {n: w["value"]}}])
                 for n in values if any(b & some_bit[k] for _, b in named_kinds[n])]
        if by_others & some_bit[k]:
            cases.append({**node, SOME_PROPERTY: [x for x in some if x is not w] + [{
                **w, "names": {"allOf": [w["names"], {"not": {"enum": list(values)}}]}}]})
        return {"anyOf": cases}
    return None


class _Objects:
    """The _Compiler methods for objects (a mixin of compile._Compiler)."""

    def object(self, node: dict, pointer: str) -> StateMachine | None:
        """The machine of the objects `node` allows (None: no object meets it). In steps: the
        named properties that can be present, with their values; the keys not listed; the
        key bits that tell keys apart; the values split by the requirements of some property
        (SOME_PROPERTY) they meet; the other keys whose repeats must be refused; then the
        members, with the guards that count and check keys."""
        props: dict = node.get("properties", {}) or {}
        required = list(dict.fromkeys(node.get("required", []) or []))
        # in place applicators are merged or distributed into this node by now, so the
        # properties they evaluate are the ones listed here
        additional = node.get("additionalProperties", node.get("unevaluatedProperties", True))
        patterns: dict = node.get("patternProperties", {}) or {}
        depends = _dependent_required(node, pointer)
        needs = {n: _needed_by(n, depends) for n in depends}  # (the names n brings, in turn)
        # a required key's dependencies are required too
        required = list(dict.fromkeys(required + [b for n in required
                                                  for b in needs.get(n, ())]))
        names = list(dict.fromkeys(list(props) + required
                                   + [n for a, bs in depends.items() for n in [a, *bs]]))
        allowed = self.property_names_dfa(node, pointer)
        schemas = {name: _value_schema(name, props, patterns, additional, pointer)
                   for name in names}
        values = self.present_values(names, schemas, depends, allowed, pointer)
        if any(n not in values for n in required):
            return None
        sources = [x for x in needs if x in values and needs[x]]
        if node.get("maxProperties") is not None and sources:
            return self.dependency_cases(node, sources, needs, pointer)
        # SOME_PROPERTY: each requirement, and the key names it takes (None: any)
        some = list(node.get(SOME_PROPERTY) or ())
        some_names = [self.names_taken(w, pointer) for w in some]
        others = self.some_regions(self.other_keys(node, names, allowed, pointer), some_names)
        n_min = _count(node, "minProperties", pointer, 0)
        n_max = _count(node, "maxProperties", pointer)
        if n_max is not None and n_min > n_max:
            return None

        any_order = self.property_order == "any"
        bit = self.key_bits(names, values, required, depends, n_max, len(some), pointer)
        some_bit = [1 << (len(bit) + k) for k in range(len(some))]
        named_kinds = {name: self.some_kinds(schemas[name], [
            k for k, taken in enumerate(some_names)
            if taken is None or taken.matches(_content(name))], some, some_bit,
            f"{pointer}/properties/{_escape(name)}") for name in values}
        other_kinds = [(keys, m, where, states, b)
                       for keys, schema, where, states, meets in others
                       for m, b in self.some_kinds(schema, meets, some, some_bit, where)]
        met = 0
        for b in [b for ks in named_kinds.values() for _, b in ks] + [o[-1] for o in other_kinds]:
            met |= b
        if met != sum(some_bit):
            return None  # no property can meet one of the requirements
        cases = _some_property_cases(node, some, some_bit, values, named_kinds, other_kinds,
                                     n_max, required)
        if cases is not None:
            return self.compile(cases, pointer)
        if n_max is not None and len(some) > 1:
            self.fail(f"{pointer}/maxProperties", "maxProperties", "beside more than one "
                      "requirement that some key be present (the opposite of an open object "
                      "shape, see SOME_PROPERTY), generation could reach a dead end: one key "
                      "may meet several of them, so the places still needed are not known")
        other_kinds, kept, few = self.repeated_keys(other_kinds, n_min, len(bit) + len(some),
                                                    pointer)
        n_few = len({f[0] for f in few})  # (names: a name's value may come in kinds)
        n_possible = math.inf if other_kinds else len(values) + n_few
        # (by now, under maxProperties, no required key can meet a requirement: see above)
        if n_min > n_possible or (n_max is not None and n_max < len(required) + bool(some)):
            return None

        # keys that must still come, under maxProperties: the required ones, and one more
        # while the first requirement is not met (not one per requirement: a key may meet
        # several; the count stays a lower bound, so no object is wrongly refused)
        reserve = 0
        if n_max is not None:
            reserve = sum(bit[n] for n in required if n in bit) | (some_bit[0] if some else 0)
        counted = n_min > 0 or n_max is not None
        maker = Members(self, any_order, counted, n_min, n_max, reserve)
        # in schema order with keys of their own names only, a key is taken only while
        # enough keys may follow it to reach minProperties (else, once past them, a dead
        # end): the count before it, at least n_min - 1 - the keys that may still follow
        least_for_order = not any_order and not other_kinds
        # in schema order, a key whose dependentRequired names (and theirs) are listed
        # before it needs them present already: none of them can come after it; and a key
        # is taken only where the names a present one needs are not passed over
        order = {x: i for i, x in enumerate(values)}
        before = {n: 0 if any_order else sum(bit[d] for d in needs.get(n, ())
                                             if d in order and order[d] < order[n])
                  for n in values}
        if any(before.values()) and n_min > 1 and not other_kinds:
            self.fail(f"{pointer}/minProperties", "minProperties", "beside dependentRequired "
                      "on names listed before the key in schema order, with no other keys: "
                      "which keys may still follow depends on those taken, so generation "
                      "could reach a dead end; use property_order=\"any\"")
        members = []
        for i, n in enumerate(values):
            least = max(0, n_min - 1 - (len(values) - i - 1 + n_few)) if least_for_order else 0
            passed = () if any_order else _needs_before(i, needs, order, bit)
            members.append([maker.named(n, m, maker.guard(bit.get(n, 0), b, least=least,
                                                          need=before[n], clauses=passed))
                            for m, b in named_kinds[n]])
        last = () if any_order else _needs_before(len(values), needs, order, bit)
        least = max(0, n_min - n_few) if least_for_order else 0
        other_members = [maker.other(*o, k, last) for o, k in zip(other_kinds, kept)] + [
            maker.named(n, m, maker.guard(b_n, b, forbid=b_n, clauses=last, least=least))
            for n, m, b, b_n in few]
        clauses = tuple((bit[a], sum(bit[b] for b in bs)) for a, bs in depends.items()
                        if a in values and bs)
        need = (sum(bit.get(n, 0) for n in required) if any_order else 0) | sum(some_bit)
        close: StateMachine = self.phrase("}")
        if need or n_min or clauses:
            close = Guarded(close, Guard(need=need, min_props=n_min, clauses=clauses))
        if any_order:
            body, empty = maker.in_any_order([*(k for ks in members for k in ks),
                                              *other_members])
        else:
            body, empty = maker.in_order(
                [(ks, n in required) for ks, n in zip(members, values)], other_members)
        machine = self.bracketed(self.phrase("{"), body, close, empty)
        return Scope(machine) if bit or counted or any_order or some else machine

    def present_values(self, names: list[str], schemas: dict[str, Any],
                       depends: dict[str, list[str]], allowed: automaton.DFA | None,
                       pointer: str) -> dict[str, StateMachine]:
        """The named properties that can be present (a value can meet their schema, their
        name is allowed, and so are the names they depend on), with their value machines."""
        values: dict[str, StateMachine] = {}
        for name in names:
            m = self.compile(schemas[name], f"{pointer}/properties/{_escape(name)}")
            if m is not None and (allowed is None or allowed.matches(_content(name))):
                values[name] = m
        changed = True
        while changed:  # a property whose dependencies cannot be present cannot be either
            changed = False
            for a, bs in depends.items():
                if a in values and any(b not in values for b in bs):
                    del values[a]
                    changed = True
        return values

    def key_bits(self, names: list[str], values: dict[str, StateMachine], required: list[str],
                 depends: dict[str, list[str]], n_max: int | None, n_some: int,
                 pointer: str) -> dict[str, int]:
        """The key bit of each name that needs one: every present-able name in any order (a
        key appears at most once); else those a dependency clause reads and, under
        maxProperties, the required ones. (`n_some` requirements of some property take the
        bits after them.)"""
        any_order = self.property_order == "any"
        wanted = list(values) if any_order else [
            n for n in values if n in depends or any(n in bs for bs in depends.values())
            or (n_max is not None and n in required)]
        wanted.sort(key=lambda n: (n not in required and n not in depends, names.index(n)))
        if len(wanted) > KEY_BITS:
            self.fail(f"{pointer}/properties", "properties",
                      f"more than {KEY_BITS} properties (KEY_BITS) to tell apart in any order; "
                      "the rest may repeat" + (", and are not required" if sum(
                          n in required for n in wanted) > KEY_BITS else ""))
        bit = {n: 1 << i for i, n in enumerate(wanted[:KEY_BITS])}
        for a, bs in depends.items():
            if a in values and any(b not in bit for b in bs):
                raise SchemaError(f"{pointer}/dependentRequired: more than {KEY_BITS} "
                                  "properties (KEY_BITS) are involved")
        if len(bit) + n_some > KEY_BITS:
            raise SchemaError(f"{pointer}: more than {KEY_BITS} properties and requirements of "
                              "some property (KEY_BITS) to keep track of")
        return bit

    def some_kinds(self, schema: Any, meets: list[int], some: list[dict], some_bit: list[int],
                   where: str) -> list[tuple[StateMachine, int]]:
        """The values `schema` allows, split by which of the requirements of some property
        (`some`, with their bits `some_bit`) that `meets` lists (those whose names the key
        has) they meet: (machine, their bits)."""
        split = [(schema, 0)]
        for k in meets:
            if some[k]["value"] in (True, {}):
                split = [(x, b | some_bit[k]) for x, b in split]
                continue
            meet, fail = some[k]["value"], some[k]["else"]
            split = [(y, b | extra) for x, b in split for y, extra in (
                (_all_of([x, meet]), some_bit[k]), (_all_of([x, fail]), 0)) if y is not False]
        if len(split) > MAX_SOME_VARIANTS:
            raise SchemaError(f"{where}: the values of this property meet more than "
                              f"{MAX_SOME_VARIANTS} combinations of requirements of some "
                              "property (MAX_SOME_VARIANTS)")
        out = [(self.compile(x, where), b) for x, b in split]  # (`schema`: compiled once)
        return [(m, b) for m, b in out if m is not None]

    def repeated_keys(self, other_kinds: list[tuple], n_min: int, bits_used: int,
                      pointer: str) -> tuple[list[tuple], list[bool], list[tuple]]:
        """A key not listed may repeat in the text, where a JSON reader keeps one value for
        it: where the number of keys or their values matter (minProperties above 1, some key
        meeting a requirement), those keys are kept and a repeat is refused at its closing
        quote. Keys of a few names get a key bit each instead, like listed ones (after the
        `bits_used` first bits); other keys that can end only a few ways could find them all
        taken (with minProperties 1 or less, only the keys of a region where a value can
        meet a requirement: a repeat could undo what the first value met).

        Returns the other keys' kinds left, whether each is kept, and the few names as
        (name, value, met bits, its key bit)."""
        meeting = {id(o[0]) for o in other_kinds if o[-1]}
        if not other_kinds or (n_min <= 1 and not meeting):
            return other_kinds, [False] * len(other_kinds), []
        still = []
        few_bit: dict[str, int] = {}
        few: list[tuple[str, StateMachine, int]] = []
        ends: dict[int, Any] = {}  # per key automaton (kinds of values share one)
        for o in other_kinds:
            keys, m, where, _, met_by = o
            if n_min <= 1 and id(keys) not in meeting:
                still.append((o, False))
                continue
            if id(keys) not in ends:
                ends[id(keys)] = _key_endings(keys)
            names_ = ends[id(keys)]
            if names_ is True:
                still.append((o, True))
                continue
            if names_ is None:
                self.fail(where, "minProperties" if n_min > 1 else "not", "over keys not "
                          "listed that can end only a few ways: a key repeated in the text "
                          "(which JSON readers count once) could not be refused without a "
                          "dead end")
                still.append((o, False))
                continue
            for name in names_:
                few_bit.setdefault(name, _bit(bits_used + len(few_bit)))
                few.append((name, m, met_by))
        if bits_used + len(few_bit) > KEY_BITS:
            raise SchemaError(f"{pointer}: more than {KEY_BITS} properties, requirements of "
                              "some property and names of other keys (KEY_BITS) to keep "
                              "track of")
        return ([o for o, _ in still], [k for _, k in still],
                [(n, m, b, few_bit[n]) for n, m, b in few])

    def dependency_cases(self, node: dict, sources: list[str], needs: dict[str, list[str]],
                         pointer: str) -> StateMachine | None:
        """An object with maxProperties and dependentRequired, as one case per set of the
        keys with dependencies present: their needs are required there, the others absent.
        (Taken as they come, a key whose needs no longer fit under maxProperties, with
        other keys taken meanwhile, would be a dead end: the register holds no debt.)"""
        if len(sources) > MAX_DEPENDENCY_CASES:
            self.fail(f"{pointer}/dependentRequired", "dependentRequired", "beside "
                      f"maxProperties, on more than {MAX_DEPENDENCY_CASES} keys "
                      "(MAX_DEPENDENCY_CASES): generation could reach a dead end where the "
                      "names a key needs no longer fit")
            return self.object({k: v for k, v in node.items() if k != "maxProperties"},
                               pointer)
        deps = {k: v for k, v in (node.get("dependencies") or {}).items()
                if not isinstance(v, list)}
        base = {k: v for k, v in node.items() if k not in ("dependentRequired", "dependencies")}
        if deps:
            base["dependencies"] = deps
        cases = []
        for k in range(1 << len(sources)):
            present = [x for i, x in enumerate(sources) if k >> i & 1]
            gone = [x for x in sources if x not in present]
            cases.append({**base, "required": list(dict.fromkeys(
                [*(node.get("required") or []), *present,
                 *(d for x in present for d in needs[x])])),
                "properties": {**(node.get("properties") or {}), **{x: False for x in gone}}})
        return self.compile({"anyOf": cases}, pointer)
