"""Shared test helpers: feeding tokens through the public Stepper API, threads, graphs."""

from __future__ import annotations

import threading
from typing import Callable

from pse import StateMachine


def errors_in_threads(work: Callable[[], None], n: int = 4) -> list[BaseException]:
    """Run `work` in `n` threads at once; the exceptions they raised."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except Exception as e:  # (reported by the caller)
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def run_tokens(machine: StateMachine, tokens: list[bytes | str]) -> list:
    """Live steppers after consuming `tokens` one by one through `Stepper.consume`
    (full consumption only), identical states merged as an engine merges them."""
    steppers = machine.get_steppers()
    for tok in tokens:
        nxt = {}
        for s in steppers:
            for d in s.consume(tok):
                if not d.stepper.remaining_input:
                    nxt.setdefault(d.stepper.state_key(), d.stepper)
        steppers = list(nxt.values())
        if not steppers:
            break
    return steppers


def accepts_tokens(machine: StateMachine, tokens: list[bytes | str]) -> bool:
    return any(s.has_reached_accept_state() for s in run_tokens(machine, tokens))


def every_split(text: str | bytes) -> list[list[bytes]]:
    """The text as two tokens, cut at every byte position (including inside a character)."""
    data = text.encode() if isinstance(text, str) else text
    return [[data[:i], data[i:]] for i in range(1, len(data))]


def check_boundaries(machine: StateMachine, text: str | bytes) -> None:
    """Cutting `text` into two tokens anywhere never changes whether it is accepted."""
    expected = machine.matches(text)
    for tokens in every_split(text):
        assert accepts_tokens(machine, tokens) == expected, tokens
    data = text.encode() if isinstance(text, str) else text
    if data:
        assert accepts_tokens(machine, [bytes([b]) for b in data]) == expected


def longest_blank_run(text: str) -> int:
    """The longest run of JSON whitespace outside strings in `text`."""
    run = longest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        run = run + 1 if ch in " \t\n\r" else 0
        longest = max(longest, run)
    return longest


def reachable(succ, sources) -> set:
    """The nodes reachable from `sources` (themselves included) along `succ` (node -> its
    successors)."""
    seen, todo = set(sources), list(sources)
    while todo:
        for t in succ[todo.pop()]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen
