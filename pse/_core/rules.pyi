def reduce_rule(eps: list[list[int]], terms: list[list[tuple[int, int, int]]],
                calls: list[list[tuple[int, int]]], start: int, ends: set[int],
                productive: bytes, merge_limit: int, max_edges: int,
                numbering: list[int] | None = None
                ) -> tuple[list[list[tuple[int, int, int]]], list[list[tuple[int, int]]], set[int]]:
    """Reduce one rule (see rules.pyx); `numbering` gets each old node's new one (-1: dropped)."""
