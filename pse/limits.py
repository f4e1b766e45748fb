"""Limits on the work a structure may cost: the compile-time budget and the live parser states
per step. The size limits of each compiler stage live beside the code they bound (see
docs/limits.md); this module holds the two that span stages.

The compile-time budget is checked at safe points of the compilers (between automaton states,
parser nodes and schema keywords): no signal, no thread. A compile that runs past it raises
`GrammarError` (`SchemaError` for a JSON Schema, naming the pointer being compiled).
"""

from __future__ import annotations

import functools
import gc
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from pse._core import structure as _structure
from pse.errors import GrammarError

# Seconds one structure may take to compile (None: no limit). Every maskbench schema that
# compiles at all takes far less (p99 0.3 s on one core).
COMPILE_SECONDS: float | None = 30.0

_local = threading.local()


@contextmanager
def compile_budget(what: str) -> Iterator[None]:
    """Start the clock for compiling `what`, unless a compile that encloses this one already
    has (a schema compiles its regexes, then its machine tree: one budget for all).

    Args:
        what: a name for the error message ("JSON Schema", the machine's repr).
    """
    if getattr(_local, "deadline", None) is not None:
        yield
        return
    _local.deadline = float("inf") if COMPILE_SECONDS is None else \
        time.monotonic() + COMPILE_SECONDS
    _local.what = what
    # no garbage collection while compiling: a compile allocates many short-lived containers,
    # and each collection it set off would also scan everything the process holds (one
    # collection after the compile instead)
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        _local.deadline = None
        if paused:
            gc.enable()


def within_budget(describe: Callable[..., str]) -> Callable[[Callable], Callable]:
    """Decorate a compiling function: each call runs within `compile_budget(describe(...))`.

    Args:
        describe: names what is compiled, given the call's arguments.
    """

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with compile_budget(describe(*args, **kwargs)):
                return fn(*args, **kwargs)
        return run

    return wrap


def check_budget() -> None:
    """Raise once the compile under way has run past COMPILE_SECONDS.

    Raises:
        GrammarError: the budget is spent.
    """
    deadline = getattr(_local, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise GrammarError(f"compiling {_local.what} took more than {COMPILE_SECONDS} s "
                           f"(pse.limits.COMPILE_SECONDS)")


def max_live_states() -> int:
    """The most parser states a step may hold at once (over every live parse of the
    structure; identical states merged).

    Returns:
        The limit currently in force.
    """
    return _structure.get_max_live_states()


def set_max_live_states(n: int) -> None:
    """Change the bound on live parser states per step. A structure ambiguous enough to
    exceed it (alternatives that share a long prefix and differ after it, nested to any
    depth) raises `GrammarError` when consuming or masking, instead of slowing every mask.

    Args:
        n: the new bound, at least 1.

    Raises:
        ValueError: n is not an int >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the live state bound must be an int >= 1, got {n!r}")
    _structure.set_max_live_states(n)
