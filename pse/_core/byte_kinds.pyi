def _reader_states_ok(b: int, below: int) -> int:
    """The UTF-8 reader states from which byte b, then any path of a node whose paths are
    well-formed from the states `below`, is well-formed (for tests)."""

def _utf8_next(u: int, b: int) -> int:
    """A UTF-8 reader's state after byte b from state u, -1 where not well-formed (for
    tests)."""

def prepare_kinds_below(trie: object) -> None:
    """Make the trie's kinds_below now (every mask walk needs them) rather than at the first
    walk."""
