from typing import Iterable

def frozen_rows(rows: Iterable[Iterable[tuple[int, int, int]]]
                ) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """`rows` as a tuple of tuples, each range, row and the whole untracked by the garbage
    collector where they hold only ints (see frozen.pyx)."""

def frozen_chain(data: bytes) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """The frozen rows of the chain automaton of exactly `data` (see frozen.pyx)."""
