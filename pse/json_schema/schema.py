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

import json
from typing import Any, Callable

from pse import limits
from pse.errors import GrammarError, SchemaError
from pse.json_value import whitespace_bound
from pse.machines import StateMachine
from pse.json_schema.compile import _Compiler

class JsonSchema(StateMachine):
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
            and warn).
        name: the name of its value in `StructuringEngine.structured_outputs()` (default:
            the schema's `title`, else "json").

    Raises:
        SchemaError: a malformed or unsatisfiable schema, or (strict) an inexpressible one.
    """

    def __init__(self, schema: Any, property_order: str = "schema",
                 whitespace: int | str | None = None, retrieve: Callable[[str], Any] | None = None,
                 strict: bool = True, name: str | None = None) -> None:
        if isinstance(schema, (str, bytes)):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as e:
                raise SchemaError(f"the schema is not valid JSON: {e}") from None
        if not isinstance(schema, (dict, bool)):
            raise SchemaError(f"a schema is an object or a boolean, got {type(schema).__name__}")
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
        compiler = _Compiler(schema, whitespace, retrieve, strict, property_order)
        try:
            with limits.compile_budget("a JSON Schema"):
                root = compiler.compile(compiler.root, "#")
        except RecursionError:
            raise SchemaError("#: the schema nests (or refers to itself through allOf) too "
                              "deeply to compile") from None
        if root is None:
            raise SchemaError("#: the schema is false: nothing is valid")
        self.warnings = compiler.warnings
        title = schema.get("title") if isinstance(schema, dict) else None
        self.name = name or (title if isinstance(title, str) and title else "json")
        super().__init__({0: [(root, "$")]}, start_state=0, end_states=("$",))

    def parse_value(self, text: str) -> Any:
        """The Python value of a complete JSON text."""
        return json.loads(text)

    def value_parser(self) -> Callable[[str], Any]:
        return json.loads

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        return [(self.name, json.loads(text))] if complete else []

    def __repr__(self) -> str:
        # a bounded summary: a schema shared in many places can dump exponentially long
        if isinstance(self.schema, dict):
            return f"JsonSchema({{{', '.join(sorted(map(str, self.schema)))[:60]}}})"
        return f"JsonSchema({self.schema!r})"
