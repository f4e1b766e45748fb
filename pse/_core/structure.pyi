from typing import Any

class CompiledStructure:
    """The read-only tables of one compiled structure, plus its arena of stack frames."""

    parse_value: Any             # text -> value, as the machine parses a match
    n_rules: int
    terminal_keys: list[Any]     # per terminal: a key equal terminals share
    terminal_states: list[Any]   # per terminal: what its states' masks share, or None
    special_tokens: dict[int, tuple[int | str, bool]]  # {terminal: (token, required)}
    slice_caches: dict[Any, Any]
    def __init__(self, parse_value: Any, tables: dict[str, Any], n_rules: int) -> None: ...
    def rules_of(self, frame: int, node: int, term: int = -1) -> list[str]:
        """The labels of the machines (grammar rules, named Forwards) a parser state is
        inside, outermost first."""
    @property
    def n_nodes(self) -> int: ...
    @property
    def n_terminals(self) -> int: ...
    @property
    def n_dfa_states(self) -> int: ...
    @property
    def n_frames(self) -> int: ...
    def arena_frames(self) -> list[tuple[int, ...]]:
        """The arena's frames by id, as (node, parent, props, keys, seen, item, lo, hi)."""

def get_max_live_states() -> int:
    """The bound on parser states in one set (see pse.limits)."""

def set_max_live_states(n: int) -> None:
    """Set the bound on parser states in one set (see pse.limits; checked there)."""

def _wide_merges() -> int:
    """How many wide sets merged while they were made, so far (for tests)."""

def _grouped_returns() -> int:
    """How many groups of a mask walk's pops were expanded as one, so far (for tests)."""

def class_cuts(states: tuple[Any, ...]) -> Any:
    """Bool per byte (read-only): where some state's target changes from the byte before."""

def pack_dfas(rows: list[Any], accepts: list[Any], cuts: list[Any]) -> dict[str, Any]:
    """The terminals' automata in one table over byte classes they share."""
