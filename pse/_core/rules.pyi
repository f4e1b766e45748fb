def reduce_rule(eps: list[list[int]], terms: list[list[tuple[int, int, int]]],
                calls: list[list[tuple[int, int]]], start: int, ends: set[int],
                productive: bytes, merge_limit: int, max_edges: int
                ) -> tuple[list[list[tuple[int, int, int]]], list[list[tuple[int, int]]], set[int]]: ...
