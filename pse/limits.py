"""Limits on the work a structure may cost: the compile budget (time and memory) and the live
parser states per step. The size limits of each compiler stage live beside the code they bound
(see docs/limits.md); this module holds those that span stages.

The compile budget is checked at safe points of the compilers (between automaton states,
parser nodes and schema keywords): no signal, no thread. A compile that runs past it raises
`GrammarError` (`SchemaError` for a JSON Schema, naming the pointer being compiled).
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import threading
import time
from typing import Any, Callable

from pse._core import structure as _structure
from pse.errors import GrammarError

try:
    import resource
except ImportError:  # (Windows)
    resource = None  # type: ignore[assignment]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# Seconds one structure may take to compile (None: no limit). Every maskbench schema that
# compiles at all takes far less (p99 0.3 s on one core).
COMPILE_SECONDS: float | None = 30.0
# Bytes of resident memory one compile may add to the process (None: no limit), so that a
# schema that multiplies out is an error, not an out-of-memory kill. Looked at every
# MEMORY_CHECK_EVERY budget checks, the growth counted from the first look. Resident memory
# is the whole process's, so the growth counts only where the interpreter's own blocks grew
# with it (a compile's memory is Python objects: at least one block per BYTES_PER_BLOCK
# bytes); model weights, tensors and buffers that other threads allocate meanwhile are few
# blocks and do not count.
COMPILE_MEMORY: int | None = 768 << 20
MEMORY_CHECK_EVERY = 1024
BYTES_PER_BLOCK = 256

# Budget checks per look at the clock (the first check of a compile looks): compilers check
# between small steps, and reading the clock cost more than most of them.
CLOCK_CHECK_EVERY = 16

MAX_INT32 = 2**31 - 1  # (the core keeps the live state bound in a C int)

# Groups a Lark or GBNF grammar may nest, one in another (a GBNF repetition is a level around
# what it repeats; Lark terminals made of terminals count too): the readers and the passes
# after them recurse per level, compiled by Cython, where Python's recursion limit does not
# stop them (a GBNF rule of 20,000 nested groups crashed the process).
MAX_GROUP_DEPTH = 200

_local = threading.local()


class _Budget:
    """The compile under way in this thread: its deadline, name, memory limit and start, the
    budget checks left before the next look at the clock, and the looks made."""

    __slots__ = ("deadline", "what", "memory_limit", "memory_start", "left", "looks")

    def __init__(self, deadline: float, what: str) -> None:
        self.deadline, self.what = deadline, what
        self.left, self.looks = 1, 0  # (the first check looks)
        self.memory_limit = COMPILE_MEMORY
        # (resident bytes, interpreter blocks) at the first look (see _look)
        self.memory_start: tuple[int, int] | None = None


class compile_budget:
    """Start the clock for compiling `what`, unless a compile that encloses this one already
    has (a schema compiles its regexes, then its machine tree: one budget for all). A context
    manager: `with compile_budget("a JSON Schema"): ...` (a class, not a generator: compiles
    enter it several times each, and a generator's frame cost more than most of them).

    Args:
        what: a name for the error message ("JSON Schema", the machine's repr), or a
            function of no arguments that gives it (called only for the outermost compile).
    """

    __slots__ = ("what", "paused", "outermost")

    def __init__(self, what: str | Callable[[], str]) -> None:
        self.what, self.paused, self.outermost = what, False, False

    def __enter__(self) -> None:
        if getattr(_local, "budget", None) is not None:
            return
        what = self.what if isinstance(self.what, str) else self.what()
        _local.budget = _Budget(float("inf") if COMPILE_SECONDS is None else
                                time.monotonic() + COMPILE_SECONDS, what)
        self.outermost = True
        # no garbage collection while compiling: a compile allocates many short-lived
        # containers, and each collection it set off would also scan everything the process
        # holds (one collection after the compile instead)
        self.paused = gc.isenabled()
        if self.paused:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.outermost:
            _local.budget = None
            self.outermost = False
            if self.paused:
                gc.enable()


def within_budget(describe: Callable[..., str]) -> Callable[[Callable], Callable]:
    """Decorate a compiling function: each call runs within `compile_budget(describe(...))`
    (`describe` is called only where no compile encloses the call).

    Args:
        describe: names what is compiled, given the call's arguments.
    """

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with compile_budget(lambda: describe(*args, **kwargs)):
                return fn(*args, **kwargs)
        return run

    return wrap


def check_budget() -> None:
    """Raise once the compile under way has run past COMPILE_SECONDS (or COMPILE_MEMORY).

    Raises:
        GrammarError: the budget is spent.
    """
    budget = getattr(_local, "budget", None)
    if budget is None:
        return
    budget.left -= 1  # (a count down: most checks end here)
    if budget.left <= 0:
        _look(budget)


def _look(budget: _Budget) -> None:
    """`check_budget`'s look at the clock, every CLOCK_CHECK_EVERY checks, and at memory,
    every MEMORY_CHECK_EVERY checks (the nearest look)."""
    budget.left = CLOCK_CHECK_EVERY
    budget.looks += 1
    if time.monotonic() > budget.deadline:
        raise GrammarError(f"compiling {budget.what} took more than {COMPILE_SECONDS} s "
                           f"(pse.limits.COMPILE_SECONDS)")
    if budget.looks % max(1, MEMORY_CHECK_EVERY // CLOCK_CHECK_EVERY) == 0 \
            and budget.memory_limit is not None:
        # growth is measured from the first look, not from the start: counting the
        # interpreter's blocks walks all its memory, which costs more than most compiles
        # (they end before a look), and the checks before the first look add little
        if budget.memory_start is None:
            budget.memory_start = (resident_bytes(), sys.getallocatedblocks())
            return
        limit, (rss, blocks) = budget.memory_limit, budget.memory_start
        if resident_bytes() - rss > limit \
                and (sys.getallocatedblocks() - blocks) * BYTES_PER_BLOCK > limit:
            raise GrammarError(f"compiling {budget.what} took more than {limit >> 20} MiB of "
                               f"memory (pse.limits.COMPILE_MEMORY)")


def resident_bytes() -> int:
    """The process's resident memory now (Linux; elsewhere its peak so far), in bytes."""
    try:
        return int(os.pread(_statm(), 64, 0).split()[1]) * _PAGE
    except (OSError, ValueError, IndexError, AttributeError):
        if resource is None:
            return 0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # (bytes there, KiB here)


_statm_fd: tuple[int, int] | None = None  # (process id, descriptor of its /proc/<pid>/statm)
_statm_lock = threading.Lock()


def _statm() -> int:
    """/proc/self/statm kept open (each compile reads it, and opening it costs more than the
    read); opened again in a forked child, whose "self" is another process."""
    global _statm_fd
    found, pid = _statm_fd, os.getpid()
    if found is not None and found[0] == pid:
        return found[1]
    with _statm_lock:
        if _statm_fd is None or _statm_fd[0] != pid:
            _statm_fd = (pid, os.open(f"/proc/{pid}/statm", os.O_RDONLY))
        return _statm_fd[1]


def max_live_states() -> int:
    """The most parser states a step may hold at once (over every live parse of the
    structure; identical states merged). A step of a structure without unique arrays merges
    the states it makes once it has made them (those equal but for their stacks become one):
    on its way it may hold 16 times as many, and it raises where more than the bound is left.

    Returns:
        The limit currently in force.
    """
    return _structure.get_max_live_states()


def set_max_live_states(n: int) -> None:
    """Change the bound on live parser states per step. A text whose parses hold more
    (parses pending at every depth: `s: "a" s | "a" s s | "a"` holds one per a read)
    raises `GrammarError` when consuming or masking, instead of slowing every mask.

    Args:
        n: the new bound, from 1 to 2**31 - 1.

    Raises:
        ValueError: n is not an int from 1 to 2**31 - 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_INT32:
        raise ValueError(f"the live state bound must be an int from 1 to {MAX_INT32:,}, "
                         f"got {n!r}")
    _structure.set_max_live_states(n)
