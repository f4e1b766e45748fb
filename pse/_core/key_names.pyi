from typing import Callable, Sequence

import numpy as np

def punched_row(row: tuple[tuple[int, int, int], ...], kids: list[tuple[int, int]]
                ) -> tuple[tuple[int, int, int], ...]: ...
def trie_add(trans: list[dict[int, int]], ends: list[bool], word: bytes) -> int: ...
def names_product(trie: list[dict[int, int]], is_name: list[bool], table: np.ndarray,
                  key_rows: tuple[tuple[tuple[int, int, int], ...], ...],
                  key_accept: Sequence[bool], key_live: Sequence[bool], wide: list[int],
                  wide_limit: int, check: Callable[[], None]
                  ) -> tuple[list[tuple], list[bool], dict[int, tuple[int, int, bool]], int,
                             int, bytes] | None: ...
