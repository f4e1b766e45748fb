"""JSON Schema: `JsonSchema` (a schema compiled into a StateMachine), by keyword family.

- schema.py: `JsonSchema`, what users build.
- compile.py: `_Compiler`, one schema node to machines: it dispatches each keyword family to
  its mixin.
- refs.py (`$ref`, `$dynamicRef`, anchors, scopes), logic.py (allOf, anyOf, oneOf,
  if/then/else, dependencies), negation.py (not), enums.py (enum, const), strings.py (lengths,
  pattern, format, content), numbers.py (bounds, multipleOf on decimals), objects.py
  (properties, required, dependencies), names.py (key names: additional and pattern
  properties, propertyNames), arrays.py (items, prefixItems, contains, uniqueItems).
- merge.py (allOf merged, anyOf spread over types), formats.py (string formats as patterns),
  common.py (what the families share).

Imports go one way: common, then merge and formats, then the families, then compile, then
schema (tests/test_imports.py checks there is no cycle).
"""

from pse.json_schema.numbers import (integer_pattern, integer_range_dfa, multiple_of_dfa,
                                     number_range_dfa)
from pse.json_schema.schema import JsonSchema

__all__ = ["JsonSchema", "integer_pattern", "integer_range_dfa", "multiple_of_dfa",
           "number_range_dfa"]
