"""Free text around a structure: `Freeform`, `WaitFor`, `Encapsulated`, `Reasoning`.

Models write text around the part that must follow a structure: a sentence, then a fenced
JSON block; a reasoning model's thoughts inside `<think>...</think>`, then the answer. Free
text is any UTF-8 text (special tokens are no text: it never contains one). Where free text
ends at a delimiter (`</think>`, an opening fence), it is one byte automaton up to and
including the delimiter's first occurrence, so the text cannot run on past it and every
token inside free text is decided by that automaton's state alone: its masks come from the
mask cache, with no walk of the vocabulary.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pse import automaton, products
from pse.errors import GrammarError
from pse.vocabulary import utf8_complete_length
from pse.machines import (
    SPECIAL_MARK, AnyOf, Chain, Character, DfaTerminal, Phrase, StateMachine, Whitespace,
    _machine,
)

# Every Unicode scalar value (a surrogate is no character of UTF-8 text).
ANY_CHARACTER = [(0, automaton.SURROGATES[0] - 1),
                 (automaton.SURROGATES[1] + 1, automaton.MAX_CODE_POINT)]


class Freeform(Character):
    """Any text, optionally at most `max_length` characters.

    Args:
        max_length: the most characters (None: unbounded).

    Raises:
        GrammarError: `max_length` is not an int >= 0 or None.
    """

    def __init__(self, max_length: int | None = None) -> None:
        super().__init__(ANY_CHARACTER, min_length=0, max_length=max_length)

    def __repr__(self) -> str:
        return f"Freeform(max_length={self.max_count})"


def _dfa(build) -> automaton.DFA:
    nfa = automaton.NFA()
    return automaton.minimize(automaton.determinize(nfa, build(nfa)))


def _any_text(nfa: automaton.NFA) -> automaton.Fragment:
    return automaton.star(nfa, automaton.char_class(nfa, ANY_CHARACTER))


@functools.lru_cache(maxsize=256)
def text_until(delimiter: bytes) -> automaton.DFA:
    """Text that ends with the first occurrence of `delimiter` (which it includes)."""
    ends = _dfa(lambda n: automaton.concat(n, [_any_text(n), automaton.literal(n, delimiter)]))
    earlier = _dfa(lambda n: automaton.concat(n, [
        _any_text(n), automaton.literal(n, delimiter),
        automaton.plus(n, automaton.char_class(n, ANY_CHARACTER))]))
    return automaton.minimize(products.difference(ends, earlier))


@functools.lru_cache(maxsize=256)
def text_without(delimiter: bytes) -> automaton.DFA:
    """Text in which `delimiter` does not occur."""
    anything = _dfa(_any_text)
    holding = _dfa(lambda n: automaton.concat(n, [_any_text(n), automaton.literal(n, delimiter),
                                                  _any_text(n)]))
    return automaton.minimize(products.difference(anything, holding))


@functools.lru_cache(maxsize=256)
def text_before(delimiter: bytes) -> automaton.DFA:
    """Text x such that `delimiter` occurs first in x + delimiter at its end: what may come
    before a structure that begins with `delimiter`, where its first occurrence commits."""
    until = text_until(delimiter)
    accept = []
    for s in range(until.n_states):
        for b in delimiter:
            s = until.next(s, b)
            if s < 0:
                break
        accept.append(s >= 0 and until.accept[s])
    return automaton.minimize(automaton.trim(automaton.DFA(until.trans, tuple(accept))))


def _delimiter(text: str | bytes, name: str) -> bytes:
    if isinstance(text, str):
        data = text.encode("utf-8")
    elif isinstance(text, bytes):
        data = text
    else:
        raise GrammarError(f"{name} must be a str, got {type(text).__name__}")
    if not data:
        raise GrammarError(f"{name} must not be empty")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise GrammarError(f"{name} is not UTF-8 text: {data!r}") from None
    return data


class _DelimitedText(DfaTerminal):
    """Any text, as an automaton of `automaton_for(delimiter)`."""

    kind = ""

    def __init__(self, delimiter: str | bytes) -> None:
        self.delimiter = _delimiter(delimiter, "delimiter")
        super().__init__(self.automaton_for(self.delimiter), f"{self.kind} {self.delimiter!r}",
                         key=(self.kind, self.delimiter))

    @staticmethod
    def automaton_for(delimiter: bytes) -> automaton.DFA:
        raise NotImplementedError


class TextUntil(_DelimitedText):
    """Any text up to and including the first occurrence of `delimiter`.

    Args:
        delimiter: the text that ends it (not empty).

    Raises:
        GrammarError: an empty delimiter, or one that is not UTF-8.
    """

    kind = "text until"
    automaton_for = staticmethod(text_until)


class TextWithout(_DelimitedText):
    """Any text in which `delimiter` does not occur.

    Args:
        delimiter: the text left out (not empty).

    Raises:
        GrammarError: an empty delimiter, or one that is not UTF-8.
    """

    kind = "text without"
    automaton_for = staticmethod(text_without)


def opening(machine: StateMachine, max_bytes: int = 64) -> tuple[bytes, bytes]:
    """How `machine` begins: the bytes every match starts with (cut to whole characters),
    and, when there are none, the bytes a match can start with."""
    steppers = machine.get_steppers()
    forced = bytearray()
    while len(forced) < max_bytes:
        if any(s.has_reached_accept_state() for s in steppers):
            break
        nxt = set()
        for s in steppers:
            nxt.update(s.next_bytes())
        if len(nxt) != 1:
            break
        byte = bytes(nxt)
        steppers = [d.stepper for s in steppers for d in s.consume(byte)]
        forced += byte
    whole = bytes(forced[:utf8_complete_length(bytes(forced))])
    if whole:
        return whole, b""
    first = set()
    for s in machine.get_steppers():
        first.update(s.next_bytes())
    return b"", bytes(sorted(first))


def _chars_not_starting_with(first: bytes) -> list[tuple[int, int]]:
    """The characters whose UTF-8 form does not begin with one of the bytes `first`."""
    left_out = []
    for b in first:
        if b < 0x80:
            left_out.append((b, b))
        elif 0xC2 <= b <= 0xDF:
            left_out.append(((b & 0x1F) << 6, ((b & 0x1F) << 6) + 0x3F))
        elif 0xE0 <= b <= 0xEF:
            left_out.append(((b & 0x0F) << 12, ((b & 0x0F) << 12) + 0xFFF))
        elif 0xF0 <= b <= 0xF4:
            left_out.append(((b & 0x07) << 18, min(((b & 0x07) << 18) + 0x3FFFF,
                                                     automaton.MAX_CODE_POINT)))
    kept = automaton.complement(automaton.normalize_ranges(left_out))
    return [r for r in automaton.normalize_ranges(
        [(max(lo, a), min(hi, b)) for lo, hi in kept for a, b in ANY_CHARACTER
         if max(lo, a) <= min(hi, b)])]


class WaitFor(StateMachine):
    """Any text until `machine` starts, then `machine`.

    The machine's opening is the text all its matches begin with (`<tool_call>`, `{`), or,
    where they share none, any byte a match can begin with. The first place where the
    opening occurs commits to the machine, as XGrammar's triggers do: the free text before
    it never contains the opening, and a text that has opened the structure and then breaks
    it is refused, not taken as more free text. A machine that begins with a special token
    is waited for after any text (a special token is never text).

    Args:
        machine: the structure to wait for.

    Raises:
        GrammarError: `machine` is not a StateMachine (or str), or it cannot be compiled.
    """

    def __init__(self, machine: StateMachine | str) -> None:
        self.machine = _machine(machine, "WaitFor machine")
        self.opening, first = opening(self.machine)
        if self.opening:
            free: StateMachine = DfaTerminal(text_before(self.opening),
                                             f"text before {self.opening!r}",
                                             key=("text_before", self.opening))
        elif first:
            free = Character(_chars_not_starting_with(first), min_length=0)
        else:
            free = Freeform()
        self.free_text = free
        super().__init__({0: [(free, 1)], 1: [(self.machine, "$")]}, start_state=0,
                         end_states=("$",))

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        start = _opening_at(text, self.opening, self.free_text)
        if start is None:
            return []
        return self.machine.structured_outputs(text[start:], complete)

    def __repr__(self) -> str:
        return f"WaitFor({self.machine!r})"


def _opening_at(text: str, opening: bytes, free: StateMachine) -> int | None:
    """Where the machine starts in `text` (a WaitFor's): the first occurrence of its opening,
    or the first character free text cannot hold (a special token's, see special_text)."""
    if opening:
        at = text.find(opening.decode("utf-8"))
        return None if at < 0 else at
    for i, ch in enumerate(text):
        if ch == SPECIAL_MARK or not free.matches(ch):
            return i
    return None


class Encapsulated(StateMachine):
    """Free text, `open`, the structure, `close`: a chat answer with a fenced block.

    The free text ends at the first occurrence of `open`.

    Args:
        machine: the structure inside.
        open: the text that opens it (default: a JSON code fence).
        close: the text that closes it.

    Raises:
        GrammarError: `open` or `close` is empty or not text, or `machine` is not a machine.
    """

    def __init__(self, machine: StateMachine | str, open: str = "```json\n",
                 close: str = "\n```") -> None:
        self.machine = _machine(machine, "Encapsulated machine")
        self.open = _delimiter(open, "open").decode("utf-8")
        self.close = _delimiter(close, "close").decode("utf-8")
        super().__init__({0: [(TextUntil(self.open), 1)], 1: [(self.machine, 2)],
                          2: [(Phrase(self.close), "$")]}, start_state=0, end_states=("$",))

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        at = text.find(self.open)
        if at < 0:
            return []
        inner = text[at + len(self.open):]
        if complete and inner.endswith(self.close):
            return self.machine.structured_outputs(inner[:len(inner) - len(self.close)], True)
        # the structure is complete where the close has begun after it
        end = inner.find(self.close)
        while end >= 0:
            # (not inside a special token's text: special_text marks it on both sides)
            if inner.count(SPECIAL_MARK, 0, end) % 2 == 0 and self.machine.matches(inner[:end]):
                return self.machine.structured_outputs(inner[:end], True)
            end = inner.find(self.close, end + 1)
        return []

    def __repr__(self) -> str:
        return f"Encapsulated({self.machine!r}, open={self.open!r}, close={self.close!r})"


class Reasoning(StateMachine):
    """A reasoning model's output: `open`, free text without `close`, `close`, optional
    whitespace (at most 20 blanks), then `machine`.

    Args:
        machine: what comes after the reasoning.
        open: the text that opens the reasoning.
        close: the text that closes it.
        required: when False, the output may also be `machine` alone, with no reasoning.

    Raises:
        GrammarError: `open` or `close` is empty or not text, or `machine` is not a machine.
    """

    def __init__(self, machine: StateMachine | str, open: str = "<think>",
                 close: str = "</think>", required: bool = True) -> None:
        self.machine = _machine(machine, "Reasoning machine")
        self.open = _delimiter(open, "open").decode("utf-8")
        self.close = _delimiter(close, "close").decode("utf-8")
        if not isinstance(required, bool):
            raise GrammarError(f"required must be a bool, got {required!r}")
        self.required = required
        reasoning = Chain(Phrase(self.open), TextUntil(self.close), Whitespace(), self.machine)
        body = reasoning if required else AnyOf(reasoning, self.machine)
        super().__init__({0: [(body, "$")]}, start_state=0, end_states=("$",))

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        if text.startswith(self.open):
            end = text.find(self.close, len(self.open))
            if end < 0:
                return []
            rest = text[end + len(self.close):]
            return self.machine.structured_outputs(rest.lstrip(" \t\n\r"), complete)
        return [] if self.required else self.machine.structured_outputs(text, complete)

    def __repr__(self) -> str:
        return (f"Reasoning({self.machine!r}, open={self.open!r}, close={self.close!r}, "
                f"required={self.required})")


def json_output(name: str, text: str, complete: bool) -> list[tuple[str, Any]]:
    """The (name, value) of a JSON part whose text is `text`, once it is complete."""
    if not complete:
        return []
    return [(name, json.loads(text))]


__all__ = ["Encapsulated", "Freeform", "Reasoning", "TextUntil", "TextWithout", "WaitFor",
           "json_output"]
