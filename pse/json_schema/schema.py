"""`JsonSchema`: a JSON Schema compiled into a StateMachine.

Property order "schema": listed properties in the order the schema lists them (optional ones
may be skipped), additional ones after. Property order "any": any order, each key at most
once, required ones enforced, tracked in the register of the object's rule (registers.py).
Strings, numbers, arrays and objects become automata
and counted runs; `$ref` becomes a `Forward`, so recursive schemas work. What cannot be
expressed exactly raises `SchemaError` naming the keyword and its JSON pointer (strict=True),
or is approximated with a warning (strict=False).
"""

from __future__ import annotations

import copy
import json
import warnings
from typing import TYPE_CHECKING, Any, Callable

from pse import compile_cache, limits, schema_types
from pse.errors import GrammarError, MatchesNothing, MultipliedOut, SchemaError
from pse.json_value import JsonValued, whitespace_bound
from pse.machines import StateMachine
from pse.json_schema.compile import _Compiler

if TYPE_CHECKING:
    from pse._core.structure import CompiledStructure


class JsonSchema(JsonValued):
    """A JSON Schema (dict or JSON text) as a structure.

    Args:
        schema: the schema; drafts 4 to 2020-12.
        property_order: "schema" — listed properties in schema order (optional ones
            skippable), additional properties after them; "any" — the exact JSON Schema
            meaning: any order, each key at most once.
        whitespace: None (compact JSON), the most blanks allowed between two tokens, or
            "flexible" for FLEXIBLE_WHITESPACE (20) of them.
        retrieve: `retrieve(uri) -> schema` for remote `$ref`s.
        strict: raise SchemaError for what cannot be expressed exactly (else approximate it
            and warn; a schema that multiplies out past MAX_SCHEMA_NODES is then compiled
            again with every oneOf taken as anyOf).
        name: the name of its value in `StructuringEngine.structured_outputs()` (default:
            the schema's `title`, else "json").

    With the compile cache on (`pse.set_cache_dir`), a schema compiled before (same schema,
    options and pse) is loaded, not compiled: its warnings are given again, and its machine
    tree is built only if something asks for it (`state_graph`).

    Raises:
        SchemaError: a malformed or unsatisfiable schema, or (strict) an inexpressible one
            (MultipliedOut: past MAX_SCHEMA_NODES).
    """

    def __init__(self, schema: Any, property_order: str = "schema",
                 whitespace: int | str | None = None, retrieve: Callable[[str], Any] | None = None,
                 strict: bool = True, name: str | None = None) -> None:
        if isinstance(schema, (str, bytes)):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as e:
                text = schema.decode(errors="replace") if isinstance(schema, bytes) else schema
                hint = "" if text.lstrip().startswith(("{", "true", "false")) else (
                    " (text in another format is its own structure: pse.Grammar(text) for a "
                    "Lark grammar, pse.Grammar.from_gbnf(text), pse.Regex(pattern))")
                raise SchemaError(f"the schema is not valid JSON: {e}{hint}") from None
            except RecursionError:
                raise SchemaError("the schema's JSON text nests too deeply to read") from None
        if not isinstance(schema, (dict, bool)):
            hint = (f" (a pydantic model's is {schema.__name__}.model_json_schema())"
                    if isinstance(schema, type) and hasattr(schema, "model_json_schema") else "")
            raise SchemaError(f"a schema is an object or a boolean, got "
                              f"{type(schema).__name__}{hint}")
        if isinstance(schema, dict):
            schema_types.check_depth(schema, "#")
        if property_order not in ("schema", "any"):
            raise SchemaError(f"property_order must be 'schema' or 'any', got "
                              f"{property_order!r}")
        try:
            whitespace = whitespace_bound(whitespace)
        except GrammarError as e:
            raise SchemaError(str(e)) from None
        self.schema = schema
        self.strict = strict
        self.property_order = property_order
        self.whitespace = whitespace
        self._retrieve = retrieve
        title = schema.get("title") if isinstance(schema, dict) else None
        self.name = name or (title if isinstance(title, str) and title else "json")
        super().__init__(None, start_state=0, end_states=("$",))
        self._graph: dict | None = None  # (built by _build, or on first use)
        # False: every oneOf taken as anyOf (strict=False, past MAX_SCHEMA_NODES otherwise)
        self._one_of_apart = True
        self._frozen: Any = None
        found = compile_cache.lookup(self)
        if found is not None:  # compiled before: the machine tree waits until asked for
            # (built from the schema as it is now, should the caller change its dict later)
            self._frozen = copy.deepcopy(schema)
            self._compiled, extra = found
            self.warnings = list(extra["warnings"])
            self._shown = list(extra["shown"])
            self._one_of_apart = extra.get("one_of_apart", True)
            for text in self._shown:
                warnings.warn(text, stacklevel=1)
        else:
            self._build(quiet=False)

    def _build(self, quiet: bool) -> None:
        """The machine tree (`quiet`: its warnings were given already)."""
        schema = self.schema if self._frozen is None else self._frozen
        # one budget (pse.limits.COMPILE_SECONDS) for both attempts: the retry gets what the
        # first left
        with limits.compile_budget("a JSON Schema"):
            try:
                root, warned = self._compile_tree(schema, self._one_of_apart, quiet)
            except MultipliedOut as e:
                if not e.retried:
                    raise
                # approximated: every oneOf as anyOf (the opposites its branches carry to
                # keep them apart are what multiplied out)
                self._one_of_apart = False
                root, warned = self._compile_tree(schema, False, quiet)
                text = (f"{e}; every oneOf is taken as anyOf instead (approximated, "
                        f"strict=False): a value may match more than one branch")
                warned = [text, *warned[0]], [f"pse: {text}", *warned[1]]
        if not quiet:
            self.warnings, self._shown = warned
            for text in self._shown:  # (compiled: no frame of pse's own in between)
                warnings.warn(text, stacklevel=1)
        if root is None:
            raise SchemaError("#: the schema is false: nothing is valid")
        self._graph = {0: [(root, "$")]}

    def _compile_tree(self, schema: Any, one_of_apart: bool, quiet: bool
                      ) -> tuple[StateMachine | None, tuple[list[str], list[str]]]:
        """The machine tree of `schema`, and its warnings (recorded, and as they are given:
        by the caller once the compile succeeds; here where it fails, unless it is to be
        compiled again with oneOf as anyOf: MultipliedOut.retried)."""
        compiler = _Compiler(schema, self.whitespace, self._retrieve, self.strict,
                             self.property_order)
        compiler.one_of_apart = one_of_apart
        try:
            with limits.compile_budget("a JSON Schema"):
                try:
                    root = compiler.compile(compiler.root, "#")
                except Exception as e:
                    retried = isinstance(e, MultipliedOut) and not self.strict \
                        and compiler.kept_apart
                    if isinstance(e, MultipliedOut):
                        e.retried = retried
                    if not quiet and not retried:  # (what they say may explain the error)
                        for text in compiler.shown:
                            warnings.warn(text, stacklevel=1)
                    raise
                warned = compiler.warnings, compiler.shown
                # its memos let go before the budget ends: the collection that sets off then
                # scans only the machine tree kept
                del compiler
        except RecursionError:
            raise SchemaError("#: the schema nests (or refers to itself through allOf) too "
                              "deeply to compile") from None
        except UnicodeEncodeError as e:  # (a const, an enum value, a property name ...)
            raise SchemaError(f"#: the JSON text {e.object!r:.60} holds a lone surrogate "
                              f"({e.object[e.start:e.end]!r}), which no UTF-8 text does: pse "
                              "writes no JSON escape of one outside a pair") from None
        return root, warned

    def compile(self) -> CompiledStructure:
        """Compile into core tables once (see StateMachine.compile).

        Raises:
            SchemaError: no JSON value is valid, the schema's recursion never ending (an
                array that must hold an item of its own kind, an object that must have a
                property of its own kind), as a false schema is refused.
        """
        try:
            return super().compile()
        except MatchesNothing as e:
            # the compiler's labels of schemas: "$ref <uri>", "schema at <pointer>"
            where = [label.split(" ", 1)[1] if label.startswith("$ref ") else
                     label[len("schema at "):] if label.startswith("schema at ") else label
                     for label in e.labels]
            where = [w for w in where if w != "#"]
            raise SchemaError("#: nothing is valid: every value the schema allows must hold "
                              "another such value (a $ref recursion that no value ends"
                              + (f": {', '.join(where)}" if where else "") + ")") from None

    @property
    def state_graph(self) -> dict:
        """The machine tree's top (see StateMachine); built on first use when the compile
        cache gave the compiled structure."""
        if self._graph is None:
            self._build(quiet=True)
        return self._graph

    @state_graph.setter
    def state_graph(self, graph: dict) -> None:
        self._graph = graph

    def cache_key(self) -> str | None:
        """The schema (`compile_cache.json_description`: its JSON in its own key order) with
        property_order, whitespace and strict; None with `retrieve` (a remote document may
        change), a schema that is not plain JSON data, or for a subclass."""
        if type(self) is not JsonSchema or self._retrieve is not None:
            return None
        text = compile_cache.json_description(self.schema)
        if text is None:
            return None
        return json.dumps(["JsonSchema", self.property_order, self.whitespace,
                           bool(self.strict), text])

    def _cache_extra(self) -> dict:
        return {"warnings": list(self.warnings), "shown": list(self._shown),
                "one_of_apart": self._one_of_apart}

    def _cache_valid(self, extra: dict) -> bool:
        for name in ("warnings", "shown"):
            if not (isinstance(extra.get(name), list)
                    and all(isinstance(x, str) for x in extra[name])):
                raise ValueError(f"its {name} are malformed")
        if not isinstance(extra.get("one_of_apart", True), bool):
            raise ValueError("its one_of_apart is malformed")
        return True

    def __repr__(self) -> str:
        # a bounded summary: a schema shared in many places can dump exponentially long
        if isinstance(self.schema, dict):
            return f"JsonSchema({{{', '.join(sorted(map(str, self.schema)))[:60]}}})"
        return f"JsonSchema({self.schema!r})"
