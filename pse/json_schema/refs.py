"""JSON Schema `$ref`, `$dynamicRef`, `$recursiveRef`, anchors and ids: the schema resources of a
document, and the dynamic scope a reference resolves in.
"""

from __future__ import annotations

from typing import Any, Callable
from urllib.parse import unquote, urljoin

from pse import schema_types
from pse.errors import SchemaError
from pse.machines import Forward, StateMachine
from pse.json_schema.common import _KEYWORDS, _escape, _misspelled, _pair_disjoint, _same

# Keywords whose value is a schema or a list of schemas, and those whose value maps names
# to schemas: where `index` looks for identifiers (contentSchema too, which is not compiled).
_SUBSCHEMAS = frozenset([key for key, holds in schema_types._HOLDS.items()
                         if holds != schema_types._MAP] + ["contentSchema"])
_SCHEMA_MAPS = frozenset([key for key, holds in schema_types._HOLDS.items()
                          if holds == schema_types._MAP])


# The keywords `_Refs.index` reads beyond the schemas inside (ids, anchors, the draft's hints)
_INDEXED = frozenset(["$schema", "exclusiveMinimum", "exclusiveMaximum", "id", "$id",
                      "$anchor", "$dynamicAnchor", "$recursiveAnchor"])


# The name under which draft 2019-09's `"$recursiveAnchor": true` binds in the dynamic scope
# (no $dynamicAnchor can be named so: it is not a valid anchor name).
RECURSIVE = "#recursive"


def _subschemas(node: dict) -> list[tuple[str, str | None, Any]]:
    """(keyword, name in its map or None, value) of each place in a schema object that holds
    a schema (or a list of them)."""
    out: list[tuple[str, str | None, Any]] = []
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out.extend([(key, name, v) for name, v in value.items()])
        elif key in _SUBSCHEMAS:
            out.append((key, None, value))
    return out


def _schema_objects(doc: Any, pointer: str, skip: frozenset = frozenset()) -> Any:
    """Each schema object of `doc` once, with its pointer (from `pointer`), through the
    places that hold schemas but those under a keyword of `skip`."""
    seen: set[int] = set()
    todo: list = [(doc, pointer)]
    while todo:
        node, where = todo.pop()
        if isinstance(node, list):
            todo.extend((x, f"{where}/{i}") for i, x in enumerate(node))
            continue
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        yield node, where
        todo.extend((v, f"{where}/{key}" if name is None else
                     f"{where}/{key}/{_escape(name)}")
                    for key, name, v in _subschemas(node) if key not in skip)


def _draft(root: Any) -> int:
    """The draft a schema's `$schema` names: 4 (draft 3 read as 4), 6, 7, 2019; else 2020."""
    dialect = root.get("$schema", "") if isinstance(root, dict) else ""
    dialect = dialect if isinstance(dialect, str) else ""
    for mark, draft in (("draft-03", 4), ("draft-04", 4), ("draft-06", 6), ("draft-07", 7),
                        ("2019-09", 2019)):
        if mark in dialect:
            return draft
    return 2020


def _join(base: str, ref: str) -> str:
    """`ref` read against `base`, as `urljoin` reads it, and also where urllib does not take
    the base's scheme for a hierarchical one (`urn:`, `tag:`): a fragment alone ("#",
    "#/$defs/x") points into the base's own resource there too, not the document's."""
    if ref.startswith("#"):
        return base.partition("#")[0] + ref
    return urljoin(base, ref)


def leads_only_to(machine: StateMachine, forward: Forward) -> bool:
    """Whether `machine` is `forward`, or references (Forwards) that lead only back to it."""
    seen = set()
    while isinstance(machine, Forward) and id(machine) not in seen:
        if machine is forward:
            return True
        seen.add(id(machine))
        machine = machine.target
    return False


class _Refs:
    """The _Compiler methods for `$ref`, `$dynamicRef`, `$recursiveRef`, anchors and ids (a mixin
    of compile._Compiler)."""

    def index(self, doc: Any, base: str, refused: frozenset = frozenset()) -> bool:
        """Record the resources ($id) and anchors of `doc`, read against `base`. Stops and
        returns True at a schema object with a keyword of `refused` (leaving the record
        unfinished), else False."""
        self.resources.setdefault(base, doc)
        todo = [(doc, base)]
        seen: set[tuple[int, str]] = set()  # a schema object shared by several parents
        misspelled: dict[int, list] = {}  # id of a schema object -> [(key, hint)]
        while todo:
            node, here = todo.pop()
            if (id(node), here) in seen:
                continue
            seen.add((id(node), here))
            if isinstance(node, list):
                todo.extend([(v, here) for v in node])
                continue
            if not isinstance(node, dict):
                continue
            # one loop over its keys (most schema objects have a few): the schemas inside
            # (only where schemas are: an "$id" inside an unknown keyword is data), and
            # whether it has a key that is no keyword or one of _INDEXED
            inside: list = []
            unknown = indexed = False
            for key, value in node.items():
                if key in refused:
                    return True
                if key not in _KEYWORDS:
                    unknown = True
                elif key in _SCHEMA_MAPS:
                    if isinstance(value, dict):
                        inside.extend(value.values())
                elif key in _SUBSCHEMAS:
                    inside.append(value)
                elif key in _INDEXED:
                    indexed = True
            # (drafts 4-7 ignore a $ref's siblings, keywords or not: no hint there)
            if unknown and not (self.ref_alone and "$ref" in node):
                hints = [(key, _misspelled(key)) for key in node if key not in _KEYWORDS
                         and not (key == "nullable" and node[key] is not True)]
                if any(hint for _, hint in hints):
                    misspelled[id(node)] = [(key, f"{key!r} is not a keyword: ignored ({hint})")
                                            for key, hint in hints if hint]
            if indexed:
                here = self.index_node(doc, node, base, here, misspelled)
            self.bases[id(node)] = (node, here)
            todo.extend([(v, here) for v in inside])
        if misspelled:
            self.warn_misspelled(doc, base, misspelled)
        return False

    def index_node(self, doc: Any, node: dict, base: str, here: str,
                   misspelled: dict[int, list]) -> str:
        """`index`'s work on a schema object with a keyword of _INDEXED: its draft's hints,
        its resource and anchors. Returns the base URI of the schemas inside it."""
        if isinstance(node.get("$schema"), str) and node is not doc and \
                _draft(node) != self.drafts.get(base, self.draft):
            misspelled.setdefault(id(node), []).append(("$schema", (
                "a resource of another draft inside the document: read by the "
                "document's draft")))
        if not self.draft4:  # (a bool there is no valid schema of a later draft)
            for key in ("exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(node.get(key), bool):
                    misspelled.setdefault(id(node), []).append((key, (
                        f"a boolean {key} is draft 4's (later drafts' is the bound "
                        "itself): read as draft 4 reads it")))
        ident = node.get("id") if self.draft4 else node.get("$id")  # ($id: from draft 6)
        if self.ref_alone and "$ref" in node:
            ident = None  # drafts 4-7: the $ref's siblings, $id too, are ignored
        if isinstance(ident, str):
            if ident.startswith("#"):
                self.anchors[(here, ident[1:])] = node
            else:
                here, _, frag = _join(here, ident).partition("#")
                self.resources.setdefault(here, node)
                if frag:
                    self.anchors[(here, frag)] = node
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                self.anchors.setdefault((here, node[key]), node)
        if isinstance(node.get("$dynamicAnchor"), str):
            self.dynamic_names.setdefault(here, []).append(node["$dynamicAnchor"])
        if node.get("$recursiveAnchor") is True:
            self.dynamic_names.setdefault(here, []).append(RECURSIVE)
        return here

    def warn_misspelled(self, doc: Any, base: str, misspelled: dict) -> None:
        """Warn, naming its pointer, of each key of `doc`'s schema objects that is no
        keyword but likely meant one, or a keyword of another draft (`misspelled`: id of the
        object -> [(key, what to say of it)])."""
        for node, where in _schema_objects(doc, f"{base}#"):
            for key, said in misspelled.get(id(node), ()):
                msg = f"{where}/{_escape(key)}: {said}"
                if msg not in self.warnings:  # (a document read again warns once)
                    self.warn(msg, f"pse: {msg}")

    def derived(self, node: dict, new: dict) -> dict:
        """`new`, a rewrite of `node`, read against the same base URI."""
        if id(node) in self.bases:
            self.bases[id(new)] = (new, self.bases[id(node)][1])
        return new

    def rebased(self, new: dict, node: dict) -> dict:
        """`new`, made from `node`'s keywords, with its references made absolute against
        `node`'s base URI (a merged schema has no base of its own)."""
        keys = [k for k in ("$ref", "$dynamicRef", "$recursiveRef")
                if isinstance(new.get(k), str)]
        if not keys:
            return new
        return {**new, **{k: self.absolute(node, new[k]) for k in keys}}

    def same_meaning(self, a: Any, b: Any) -> bool:
        """Whether two schemas are the same JSON with their references read against the
        same base URIs (so that they point to the same places)."""
        if a is b:
            return True
        if not _same(a, b):
            return False
        todo = [(a, b)]
        while todo:
            x, y = todo.pop()
            if isinstance(x, dict):
                if ("$ref" in x or "$dynamicRef" in x or "$recursiveRef" in x) and \
                        self.bases.get(id(x), (None, ""))[1] != self.bases.get(id(y), (None, ""))[1]:
                    return False
                todo.extend((x[k], y[k]) for k in x)
            elif isinstance(x, list):
                todo.extend(zip(x, y))
        return True

    def dynamic_scope(self, node: Any, scope: str | None) -> str | None:
        """`node`'s resource when it defines dynamic anchors (a schema merged from `node`
        enters it, see `enter`), else `scope`."""
        base = self.bases.get(id(node), (None, None))[1]
        return base if self.dynamic_names.get(base) else scope

    def absolute(self, node: dict, ref: str) -> str:
        """The absolute URI a `$ref` found in `node` points to."""
        return _join(self.bases.get(id(node), (None, ""))[1], ref)

    def dynamic_target(self, node: dict, pointer: str) -> str:
        """The absolute URI a `$dynamicRef` (or draft 2019-09 `$recursiveRef`) in `node`
        points to from here: where its first target is a dynamic anchor, the outermost
        resource of the dynamic scope that defines the same one; else its plain target."""
        key = "$dynamicRef" if "$dynamicRef" in node else "$recursiveRef"
        uri = self.absolute(node, node[key])
        target = self.resolve(uri, f"{pointer}/{key}")
        base, _, name = uri.partition("#")
        if key == "$recursiveRef":
            if name or not isinstance(target, dict) or target.get("$recursiveAnchor") is not True:
                return uri
            name = RECURSIVE
        elif name not in self.dynamic_names.get(base, ()):
            return uri
        outer = dict(self.bound[-1]).get(name)
        if outer is None:
            return uri
        return outer + ("#" + name if name != RECURSIVE else "")

    def ref(self, ref: str, pointer: str) -> StateMachine | None:
        """The machine a reference stands for (None: nothing is valid there); while its
        target compiles, a Forward, which closes recursion."""
        key = (ref, self.bound[-1])
        if key in self.refs:
            forward = self.refs[key]
            if forward is not None and forward.target is None:
                self.recursive.add(key)
            return forward
        target = self.resolve(ref, pointer)
        forward = self.refs[key] = Forward(name=f"$ref {ref}")
        try:
            machine = self.compile(target, ref)
        except SchemaError:  # (a caller may catch it and go on: no unset Forward is left)
            del self.refs[key]
            self.recursive.discard(key)
            raise
        if machine is None:
            if key in self.recursive:  # the Forward is in use, and nothing can replace it
                raise SchemaError(f"{pointer}/$ref: {ref} refers to itself and allows "
                                  "nothing")
            self.refs[key] = None
            return None
        if leads_only_to(machine, forward):
            raise SchemaError(f"{pointer}/$ref: {ref} refers only to itself")
        forward.set(machine)
        return forward

    def resolve(self, ref: str, pointer: str) -> Any:
        """The schema an absolute reference (see `absolute`) points to."""
        base, _, fragment = ref.partition("#")
        doc = self.resources.get(base)
        if doc is None:
            if self.retrieve is None:
                raise SchemaError(f"{pointer}/$ref: {ref!r} is remote and no retrieve= was given")
            try:
                doc = self.retrieve(base)
            except Exception as e:
                raise SchemaError(f"{pointer}/$ref: retrieving {base!r} failed: {e}") from None
            if isinstance(doc, (dict, list)):
                schema_types.check_depth(doc, f"{pointer}/$ref: {base}")
            self.drafts[base] = _draft(doc) if isinstance(doc, dict) and "$schema" in doc \
                else self.draft
            doc = self.in_dialect(doc, f"{base}#", self.drafts[base])
            self.index(doc, base)
        if not fragment:
            return doc
        fragment = unquote(fragment)
        if not fragment.startswith("/"):
            found = self.anchors.get((base, fragment))
            if found is None:
                raise SchemaError(f"{pointer}/$ref: anchor {fragment!r} not found")
            return found
        node = doc
        for part in fragment.split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise SchemaError(f"{pointer}/$ref: {ref!r} does not resolve") from None
        if isinstance(node, dict) and id(node) not in self.in_dialect_ids:
            # a schema where no keyword holds one (under "x-defs", say): its draft's keywords
            # only, too
            if id(node) not in self.outside:
                self.outside[id(node)] = (node, self.in_dialect(
                    node, ref, self.drafts.get(base, self.draft)))
            node = self.outside[id(node)][1]
        return node

    def shallow(self, pointer: str) -> Callable[[Any], Any]:
        """`resolve_shallow` at `pointer`, as a function of the node alone."""
        return lambda node: self.resolve_shallow(node, pointer)

    def disjoint(self, a: Any, b: Any, pointer: str) -> bool:
        """`_pair_disjoint` with references followed from `pointer` and compared by base."""
        return _pair_disjoint(a, b, self.shallow(pointer), self.same_meaning)

    def resolve_shallow(self, node: Any, pointer: str) -> Any:
        """`node` with a top-level $ref and allOf merged in (see `merge_all`): the same
        schema, flatter; as it was where they do not merge."""
        for _ in range(16):  # (a merged target may have a $ref of its own)
            if isinstance(node, dict) and "$ref" in node:
                siblings = {} if self.ref_alone else {k: v for k, v in node.items()
                                                      if k != "$ref"}
                node = {**siblings, "allOf": [*siblings.get("allOf", ()),
                                              {"$ref": self.absolute(node, node["$ref"])}]}
            if not isinstance(node, dict) or "allOf" not in node:
                break
            try:
                node = self.merge_all(node, pointer)
            except SchemaError:
                break
            if not isinstance(node, dict) or "$ref" not in node:
                break
        return node
