"""The exceptions pse raises. Every one derives from `PSEError`."""

from __future__ import annotations


class PSEError(Exception):
    """Base class of every error pse raises on purpose."""


class GrammarError(PSEError, ValueError):
    """A structure (combinators, regex or grammar) is malformed or cannot be compiled."""


class MatchesNothing(GrammarError):
    """A structure admits no text at all: every way through it needs a rule that derives no
    text (a recursion that nothing ends, such as `s: "a" s`). From a JsonSchema, a
    SchemaError says so instead.

    Attributes:
        labels: the labels of the first rules that nothing ends, the outermost first (named
            Forwards, a grammar's rules, a JSON Schema's `$ref`s); empty where none has one.
    """

    def __init__(self, message: str, labels: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.labels = tuple(labels)


class SchemaError(GrammarError):
    """A JSON Schema cannot be compiled exactly; the message names the keyword and pointer."""


class MultipliedOut(SchemaError):
    """A JSON Schema would compile to more than MAX_SCHEMA_NODES subschemas (its unions
    multiply out). Without strict, JsonSchema first compiles it again with every oneOf taken
    as anyOf, where its branches' opposites were what multiplied."""

    retried = False  # (set by the compile that raised it: whether that retry is to come)


class VocabularyError(PSEError, ValueError):
    """A tokenizer or vocabulary could not be read, or an id is out of range."""
