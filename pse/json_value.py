"""`Json()`: any JSON value, built from the combinators, and the JSON terminals it uses."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable, Hashable

from pse import automaton
from pse.machines import (
    AnyOf,
    Chain,
    Forward,
    Loop,
    Phrase,
    StateMachine,
    Terminal,
    Whitespace,
    _count,
)
from pse.errors import GrammarError

_HEX = [(ord("0"), ord("9")), (ord("a"), ord("f")), (ord("A"), ord("F"))]
_DIGIT = [(ord("0"), ord("9"))]


class JsonStringContent(Terminal):
    """The characters between the quotes of a JSON string: `min_length` to `max_length` of
    them, where an escape (`\\n`, `\\u00e9`) counts as one character, and so does a
    surrogate pair (`\\ud83d\\ude00`, one code point). A surrogate escape outside a pair
    (no Unicode character) is refused."""

    repeats_unit = True

    def __init__(self, min_length: int = 0, max_length: int | None = None) -> None:
        super().__init__()
        self.min_count = _count(min_length, "min_length")
        self.max_count = _count(max_length, "max_length", allow_none=True)
        if self.max_count is not None and self.min_count > self.max_count:
            raise GrammarError(f"min_length ({min_length}) > max_length ({max_length})")

    def unit_dfa(self) -> automaton.DFA:
        return _string_char_dfa()

    def terminal_key(self) -> Hashable:
        return ("json-string-char",)

    def __repr__(self) -> str:
        return f"JsonStringContent({self.min_count}, {self.max_count})"


@functools.lru_cache(maxsize=1)
def _string_char_dfa() -> automaton.DFA:
    """One character of a JSON string (JsonStringContent's unit), built once: automata are
    immutable, and string lengths and patterns ask for it too."""
    nfa = automaton.NFA()
    plain = automaton.char_class(nfa, [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)])
    simple = automaton.concat(nfa, [
        automaton.literal(nfa, b"\\"),
        automaton.byte_class(nfa, [(c, c) for c in b'"\\/bfnrt']),
    ])

    def escape(first: list, second: list) -> automaton.Fragment:  # \\u and 4 hex digits
        return automaton.concat(nfa, [
            automaton.literal(nfa, b"\\u"), automaton.byte_class(nfa, first),
            automaton.byte_class(nfa, second),
            *[automaton.byte_class(nfa, _HEX) for _ in range(2)]])

    d = [(ord("d"), ord("d")), (ord("D"), ord("D"))]
    bmp = automaton.alternation(nfa, [
        escape([(ord("0"), ord("9")), (ord("a"), ord("c")), (ord("A"), ord("C")),
                (ord("e"), ord("f")), (ord("E"), ord("F"))], _HEX),
        escape(d, [(ord("0"), ord("7"))])])
    pair = automaton.concat(nfa, [
        escape(d, [(ord("8"), ord("9")), (ord("a"), ord("b")), (ord("A"), ord("B"))]),
        escape(d, [(ord("c"), ord("f")), (ord("C"), ord("F"))])])
    return automaton.determinize(nfa, automaton.alternation(nfa, [plain, simple, bmp, pair]))


class JsonNumber(Terminal):
    """A JSON number: `-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?`."""

    def unit_dfa(self) -> automaton.DFA:
        nfa = automaton.NFA()
        digits = lambda: automaton.plus(nfa, automaton.byte_class(nfa, _DIGIT))  # noqa: E731
        integer = automaton.alternation(nfa, [
            automaton.literal(nfa, b"0"),
            automaton.concat(nfa, [
                automaton.byte_class(nfa, [(ord("1"), ord("9"))]),
                automaton.star(nfa, automaton.byte_class(nfa, _DIGIT)),
            ]),
        ])
        parts = [
            automaton.optional(nfa, automaton.literal(nfa, b"-")),
            integer,
            automaton.optional(nfa, automaton.concat(nfa, [automaton.literal(nfa, b"."), digits()])),
            automaton.optional(nfa, automaton.concat(nfa, [
                automaton.byte_class(nfa, [(ord("e"), ord("e")), (ord("E"), ord("E"))]),
                automaton.optional(nfa, automaton.byte_class(nfa, [(ord("+"), ord("+")),
                                                                  (ord("-"), ord("-"))])),
                digits(),
            ])),
        ]
        return automaton.determinize(nfa, automaton.concat(nfa, parts))

    def terminal_key(self) -> Hashable:
        return ("json-number",)

    def __repr__(self) -> str:
        return "JsonNumber()"


def json_string(min_length: int = 0, max_length: int | None = None) -> StateMachine:
    """A JSON string literal, quotes included, with a bounded number of characters."""
    return Chain(Phrase('"'), JsonStringContent(min_length, max_length), Phrase('"'))


# whitespace="flexible": the most blanks between two tokens (a newline and the indentation of
# json.dumps(v, indent=2) nine levels deep)
FLEXIBLE_WHITESPACE = 20


def whitespace_bound(whitespace: int | str | None) -> int:
    """The most blanks between two tokens that `whitespace` allows: None, "compact" or 0 none,
    "flexible" FLEXIBLE_WHITESPACE, an int that many.

    Raises:
        GrammarError: anything else.
    """
    if whitespace is None or whitespace == "compact":
        return 0
    if whitespace == "flexible":
        return FLEXIBLE_WHITESPACE
    if isinstance(whitespace, str):
        raise GrammarError(f"whitespace must be None, \"compact\", \"flexible\" or an int "
                           f">= 0, got {whitespace!r}")
    return _count(whitespace, "whitespace")


def read_json(text: str) -> Any:
    """The Python value of a complete JSON text (what `Json` and `JsonSchema` give back).

    Raises:
        ValueError: the text nests deeper than Python's json module can read (about 1,000
            levels: its reader recurses per level), though it is valid JSON.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON value nests deeper than Python's json module can read "
                         f"(sys.getrecursionlimit() {sys.getrecursionlimit()})") from None


class JsonValued(StateMachine):
    """A machine whose matches are JSON texts (`Json`, `JsonSchema`): their value is the
    Python value the text reads into, and a complete match is one structured output."""

    def parse_value(self, text: str) -> Any:
        """The Python value of a complete JSON text."""
        return read_json(text)

    def value_parser(self) -> Callable[[str], Any]:
        return read_json

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        return [(self.name, read_json(text))] if complete else []


class Json(JsonValued):
    """Any JSON value: object, array, string (every escape and `\\uXXXX`), number, true,
    false or null.

    Args:
        whitespace: the most whitespace characters allowed between two tokens; 0 (the
            default) means compact JSON, the form `json.dumps(v, separators=(",", ":"))` makes;
            "flexible" means FLEXIBLE_WHITESPACE (20).
        name: the name of its value in `StructuringEngine.structured_outputs()`.

    Raises:
        GrammarError: `whitespace` is negative or not an int or "flexible".
    """

    def __init__(self, whitespace: int | str = 0, name: str = "json") -> None:
        self.whitespace = whitespace_bound(whitespace)
        self.name = name
        value = Forward(name="json value")
        ws: list[StateMachine] = [Whitespace(0, self.whitespace)] if self.whitespace else []

        def sep(text: str) -> StateMachine:
            return Chain(*ws, Phrase(text), *ws)

        string = json_string()
        member = Chain(string, sep(":"), value)
        obj = Chain(Phrase("{"), *ws, AnyOf(
            Phrase("}"),
            Chain(Loop(member, 1, None, separator=sep(",")), *ws, Phrase("}")),
        ))
        arr = Chain(Phrase("["), *ws, AnyOf(
            Phrase("]"),
            Chain(Loop(value, 1, None, separator=sep(",")), *ws, Phrase("]")),
        ))
        value.set(AnyOf(obj, arr, string, JsonNumber(), Phrase("true"), Phrase("false"),
                        Phrase("null")))
        self.value = value
        super().__init__({0: [(value, "$")]}, start_state=0, end_states=("$",))

    def cache_key(self) -> str | None:
        """The whitespace bound (None for a subclass): see `StateMachine.cache_key`."""
        return json.dumps(["Json", self.whitespace]) if type(self) is Json else None

    def __repr__(self) -> str:
        return f"Json(whitespace={self.whitespace})"
