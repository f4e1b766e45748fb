"""pse: structured generation for language models.

Build a structure from combinators (`Phrase`, `Character`, `Chain`, `AnyOf`, `Loop`, ...), or
take `Json()`; it compiles into Cython steppers that consume tokens as bytes.
"""

import logging
from pathlib import Path

from pse._core.stepper import Stepper, StepperDelta
from pse import compiler as _compiler  # noqa: F401  (what StateMachine.compile() calls)
from pse.compile_cache import get_cache_dir, set_cache_dir
from pse.engine import StructuringEngine, compile, compile_async, fill_next_token_bitmask_par
from pse.errors import (
    GrammarError, MatchesNothing, MultipliedOut, PSEError, SchemaError, VocabularyError,
)
from pse.explain import Explanation
from pse.generation import Generation, GenerationStats, generate, generate_batch
from pse.grammar import Grammar
from pse.json_schema import JsonSchema
from pse.json_value import Json
from pse.machines import (
    AnyOf,
    Chain,
    Character,
    Forward,
    Loop,
    Optional,
    Phrase,
    SpecialToken,
    StateMachine,
    Terminal,
    Whitespace,
    special_text,
)
from pse.text import Encapsulated, Freeform, Reasoning, WaitFor
from pse.tool_schema import tool_schema
from pse.tools import ToolCalls

from pse.regex import Regex
from pse.vocabulary import Vocabulary

logging.getLogger("pse").addHandler(logging.NullHandler())

# Installed, `pse.grammars` is a subpackage; in a source checkout it is the top-level
# grammars/ folder, which this makes importable under the same name.
_SOURCE_GRAMMARS = Path(__file__).resolve().parent.parent / "grammars"
if (not (Path(__file__).resolve().parent / "grammars").is_dir()
        and (_SOURCE_GRAMMARS / "__init__.py").is_file()):
    __path__.append(str(_SOURCE_GRAMMARS.parent))  # noqa: F821 (the package's own path)

__version__ = "0.1.0"

__all__ = [
    "AnyOf",
    "Chain",
    "Character",
    "Encapsulated",
    "Explanation",
    "Forward",
    "Freeform",
    "Generation",
    "GenerationStats",
    "Grammar",
    "GrammarError",
    "Json",
    "JsonSchema",
    "Loop",
    "MatchesNothing",
    "MultipliedOut",
    "Optional",
    "PSEError",
    "Phrase",
    "Reasoning",
    "Regex",
    "SchemaError",
    "SpecialToken",
    "StateMachine",
    "StructuringEngine",
    "Stepper",
    "StepperDelta",
    "Terminal",
    "ToolCalls",
    "Vocabulary",
    "VocabularyError",
    "WaitFor",
    "Whitespace",
    "compile",
    "compile_async",
    "fill_next_token_bitmask_par",
    "generate",
    "generate_batch",
    "get_cache_dir",
    "set_cache_dir",
    "special_text",
    "tool_schema",
]
