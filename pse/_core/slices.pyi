from typing import Any

from pse._core.structure import CompiledStructure
from pse._core.trie import TokenTrie

# Slice entries kept per vocabulary, count profiles per structure, subtree entries per structure.
MAX_SHARED_SLICES: int
MAX_PROFILES: int
MAX_SUBTREE_SLICES: int

class SliceEntry:
    """The cached part of the mask for one (terminal, DFA state, count class)."""

class SliceCache:
    """Slice entries and the memo of masks of one (compiled structure, vocabulary) pair."""

    structure: CompiledStructure
    trie: TokenTrie
    n_words: int
    max_masks: int
    vocab_size: int
    def __init__(self, structure: CompiledStructure, vocab: Any, max_masks: int = 512) -> None: ...
    def __len__(self) -> int: ...

def _subtrees_taken() -> int:
    """How many subtrees entries took at once so far (for tests: that the shortcut is used)."""
