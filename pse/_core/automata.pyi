from typing import Callable, Sequence

def subsets(edges: list[list[tuple[int, int, int]]], eps: list[list[int]], start: int,
            final: int, max_states: int, check_budget: Callable[[], None]
            ) -> tuple[list[list[tuple[int, int, int]]], list[bool]]: ...
def refine(trans: Sequence[Sequence[tuple[int, int, int]]], block_of: list[int],
           check_budget: Callable[[], None]) -> list[int]: ...
