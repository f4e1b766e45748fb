"""JSON Schema objects' key names: the keys other than the listed ones, propertyNames, and the
regions of names a patternProperties or an additionalProperties covers.
"""

from __future__ import annotations

from typing import Any

from pse import automaton, products
from pse.errors import GrammarError, SchemaError
from pse.json_spelling import (KeyStates, json_char_class, json_names_dfa, without_names,
                               without_names_states)
from pse.regex import compile_regex
from pse.json_schema import common
from pse.json_schema.common import _ANNOTATIONS, _content, _escape, _json_key, _nonempty
from pse.json_schema.formats import FORMATS, _format_length, _format_patterns
from pse.json_schema.merge import SOME_PROPERTY, _all_of

# Regions a key space is cut into by overlapping patternProperties (2**patterns at worst).
MAX_KEY_REGIONS = 32


def _union(a: automaton.DFA, b: automaton.DFA) -> automaton.DFA:
    nfa = automaton.NFA()
    return automaton.determinize(nfa, automaton.alternation(nfa, [
        automaton.embed(nfa, a), automaton.embed(nfa, b)]))


class _Names:
    """The _Compiler methods for objects' key names (a mixin of compile._Compiler)."""

    def other_keys(self, node: dict, names: list[str], allowed: automaton.DFA | None,
                   pointer: str
                   ) -> list[tuple[automaton.DFA, Any, str, KeyStates | None]]:
        """Keys not named: one kind per region of the patternProperties patterns (a key that
        two patterns match must satisfy both schemas), then the rest; each a key DFA, the
        value's schema, where in the schema it comes from, and what the masks of the key
        DFA's states can share (KeyStates, or None)."""
        patterns: dict = node.get("patternProperties", {}) or {}
        additional = node.get("additionalProperties", node.get("unevaluatedProperties", True))
        others = []
        covered = None
        regions: list[tuple[automaton.DFA, list[str]]] = []  # keys, the patterns they match
        for pat in patterns:
            where = f"{pointer}/patternProperties/{_escape(pat)}"
            keys = self.key_dfa(pat, True, where)
            if names:
                keys = without_names(keys, names)
            split = []
            for region, pats in regions:
                both = self.intersect(region, keys, where)
                if _nonempty(both):
                    split.append((both, pats + [pat]))
                    region = products.difference(region, keys)
                if _nonempty(region):
                    split.append((region, pats))
            fresh = keys if covered is None else products.difference(keys, covered)
            if _nonempty(fresh):
                split.append((fresh, [pat]))
            regions = split
            if len(regions) > MAX_KEY_REGIONS:
                self.fail(where, "patternProperties", f"the patterns overlap in more than "
                          f"{MAX_KEY_REGIONS} ways (MAX_KEY_REGIONS)")
            covered = keys if covered is None else _union(covered, keys)
        for keys, pats in regions:
            where = f"{pointer}/patternProperties/{_escape(pats[0])}"
            if allowed is not None:
                keys = self.intersect(keys, allowed, where)
            if _nonempty(keys):
                others.append((keys, _all_of([patterns[p] for p in pats]), where, None))
        if additional is not False:
            keys = self.key_dfa("(?s).*", False, pointer) if allowed is None else allowed
            states = None
            if names:
                keys, states = without_names_states(keys, names)
            if covered is not None:
                keys, states = products.difference(keys, covered), None
            if _nonempty(keys):
                others.append((keys, additional, f"{pointer}/additionalProperties", states))
        return others

    def names_taken(self, requirement: dict, pointer: str) -> automaton.DFA | None:
        """The key names a SOME_PROPERTY requirement takes (None: any), made once for it."""
        if id(requirement) not in self.some_names:
            self.some_names[id(requirement)] = (requirement, self.property_names_dfa(
                {"propertyNames": requirement["names"]}, f"{pointer}/{SOME_PROPERTY}"))
        return self.some_names[id(requirement)][1]

    def some_regions(self, others: list, some_names: list[automaton.DFA | None]) -> list[
            tuple[automaton.DFA, Any, str, KeyStates | None, list[int]]]:
        """The kinds of keys of `other_keys` split by the SOME_PROPERTY requirements whose
        names they are (`some_names`, None: any): each with the indexes of those."""
        out = []
        for keys, schema, where, states in others:
            parts = [(keys, states, [])]
            for k, taken in enumerate(some_names):
                if taken is None:
                    parts = [(x, st, [*ks, k]) for x, st, ks in parts]
                    continue
                split = []
                for x, st, ks in parts:
                    inside = self.intersect(x, taken, where)
                    outside = products.difference(x, taken)
                    if not _nonempty(outside):
                        split.append((x, st, [*ks, k]))
                    elif not _nonempty(inside):
                        split.append((x, st, ks))
                    else:
                        split += [(inside, None, [*ks, k]), (outside, None, ks)]
                parts = split
            out += [(x, schema, where, st, ks) for x, st, ks in parts]
        return out

    def property_names_dfa(self, node: dict, pointer: str, depth: int = 0
                           ) -> automaton.DFA | None:
        """Key contents (as JSON spells them) that `propertyNames` allows; None: any."""
        where = f"{pointer}/propertyNames"
        if depth > common.MAX_SCHEMA_DEPTH:
            raise SchemaError(f"{where}: the schema nests more than {common.MAX_SCHEMA_DEPTH} "
                              "subschemas deep (MAX_SCHEMA_DEPTH)")
        sub = self.resolve_shallow(node.get("propertyNames", True), where)
        if sub is True or sub == {}:
            return None
        if sub is False:
            return automaton.union([])  # no name
        if not isinstance(sub, dict):
            raise SchemaError(f"{where}: a schema is an object or a boolean, got {sub!r}")
        sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
        for key in ("allOf", "anyOf", "oneOf"):
            if isinstance(sub.get(key), list):
                return self.combined_names_dfa(sub, key, pointer, depth)
        if "not" in sub:  # the names it leaves out, of those the rest allows
            left_out = self.property_names_dfa({"propertyNames": sub["not"]}, pointer,
                                               depth + 1)
            rest = self.property_names_dfa(
                {"propertyNames": {k: v for k, v in sub.items() if k != "not"}}, pointer,
                depth + 1)
            if left_out is None:
                return automaton.union([])
            try:
                return automaton.minimize(products.difference(
                    rest or self.key_dfa("", True, where), left_out))
            except GrammarError as e:
                raise SchemaError(f"{where}: {e}") from None
        types = sub.get("type", "string")
        if "string" not in ([types] if isinstance(types, str) else types):
            return automaton.union([])
        if "const" in sub or "enum" in sub:
            values = [sub["const"]] if "const" in sub else list(sub["enum"])
            if "const" in sub and "enum" in sub:  # both hold
                values = [v for v in values if isinstance(sub["enum"], list)
                          and _json_key(v) in {_json_key(x) for x in sub["enum"]}]
            rest = {k: v for k, v in sub.items() if k not in ("const", "enum", "type")}
            names = [v for v in values if isinstance(v, str)]
            if rest:
                inner = self.property_names_dfa({"propertyNames": rest}, pointer, depth + 1)
                names = [n for n in names if inner is None or inner.matches(_content(n))]
            return json_names_dfa(names)
        sub = _format_length(sub)
        unknown = set(sub) - {"type", "pattern", "format", "minLength", "maxLength"}
        if unknown:
            self.fail(where, "propertyNames", f"{sorted(unknown)} on key names not supported")
        patterns = []
        if "pattern" in sub:
            patterns.append((sub["pattern"], True, f"{where}/pattern"))
        if sub.get("format") in FORMATS:
            patterns += _format_patterns(sub["format"], f"{where}/format")
        return self.content_dfa(sub, patterns, where)

    def combined_names_dfa(self, sub: dict, key: str, pointer: str,
                           depth: int) -> automaton.DFA | None:
        """Key contents `propertyNames` allows when it is allOf, anyOf or oneOf (the others
        of its keywords holding too); None: any."""
        where = f"{pointer}/propertyNames"
        anything = self.key_dfa("", True, where)
        parts = [self.property_names_dfa({"propertyNames": part}, pointer, depth + 1)
                 or anything for part in sub[key]]
        rest = self.property_names_dfa(
            {"propertyNames": {k: v for k, v in sub.items() if k != key}}, pointer, depth + 1)
        try:
            if key == "allOf":
                dfa = anything
                for part in parts:
                    dfa = products.intersect(dfa, part)
            elif key == "anyOf":
                dfa = automaton.union(parts)
            else:  # names exactly one part allows
                one = many = automaton.union([])
                for part in parts:
                    one, many = automaton.union([products.difference(one, part),
                                                 products.difference(
                                                     products.difference(part, one), many)]), \
                        automaton.union([many, products.intersect(one, part)])
                dfa = one
            return automaton.minimize(dfa if rest is None else products.intersect(dfa, rest))
        except GrammarError as e:
            raise SchemaError(f"{where}: {e}") from None

    def key_dfa(self, pattern: str, search: bool, where: str) -> automaton.DFA:
        """Object keys (string content, spelled as `json_char_class` spells characters) whose
        value matches `pattern`."""
        try:
            return compile_regex(pattern, 0, search=search, char_class=json_char_class,
                                 ecma=True)
        except GrammarError as e:
            raise SchemaError(f"{where}: {e}") from None
