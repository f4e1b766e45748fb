"""pse as an SGLang grammar backend: `json_schema`, `regex`, `ebnf` and `structural_tag`
requests (and `response_format`, `tools` through them) constrained by pse.

    python -m sglang.launch_server --model-path DIR --grammar-backend pse

SGLang runs the functions of the `sglang.srt.plugins` entry point (installed with pse) early in
each of its processes; pse's `plugin` calls `register()`, which adds "pse" to
`--grammar-backend`'s choices and registers the backend with `register_grammar_backend`. Nothing
changes unless the backend is "pse". Outside a server, `register()` does the same.

Each request gets its own engine, copied from a compiled structure (compiled on SGLang's
compile threads, shared by content in a bounded cache). Masks are filled together on threads
without the GIL, with the model's EOS tokens allowed exactly where the structure is complete.
`try_jump_forward` gives the tokens the structure forces next, in the tokenizer's canonical form
(pse's fast-forward), for the caller to commit with `accept_token`. JSON whitespace follows
`--constrained-json-disable-any-whitespace` (bounded flexible whitespace by default). A Lark
`ebnf` grammar is read as GBNF (rules `name ::= ...`), else as Lark; structural tags in
XGrammar's form with one trigger.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterable, List, Optional, Tuple

import numpy as np
import torch
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend, BaseGrammarObject, GrammarRow, InvalidGrammarObject,
    register_grammar_backend,
)

from pse.bounded_cache import BoundedCache
from pse.engine import fill_next_token_bitmask_par
from pse.serving import (
    RequestError, ServedGrammar, StructureCache, standard_structure, vocabulary_of,
)
from pse.torch import apply_token_bitmask_inplace

logger = logging.getLogger(__name__)

BACKEND = "pse"
CACHED_STRUCTURES = 128
"""Compiled structures kept (SGLang's own cache of grammars is bounded to this too)."""


def register() -> None:
    """Offer "pse" as SGLang's grammar backend (idempotent)."""
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices

    if BACKEND not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([BACKEND])
    register_grammar_backend(BACKEND, create_backend)


def plugin() -> None:
    """The `sglang.srt.plugins` entry point: `register`, or a warning where this SGLang has no
    such extension points (a plugin must not stop SGLang from starting)."""
    try:
        register()
    except ImportError as e:
        logger.warning("pse: the 'pse' grammar backend is not offered: %s", e)


def create_backend(server_args: Any, tokenizer: Any, vocab_size: int,
                   eos_token_ids: Optional[Iterable[int]] = None) -> PseGrammarBackend:
    """The factory SGLang calls for `--grammar-backend pse`."""
    compact = bool(getattr(server_args, "constrained_json_disable_any_whitespace", False))
    return PseGrammarBackend(tokenizer, vocab_size, eos_token_ids,
                             whitespace="compact" if compact else "flexible")


class _Grammars(BoundedCache):
    """SGLang's cache of grammars (a dict to it: get, [key] = value, clear), bounded."""

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)


class PseGrammarBackend(BaseGrammarBackend):
    """SGLang's grammar backend over pse.

    Args:
        tokenizer: the served model's Hugging Face tokenizer.
        vocab_size: the model's vocabulary size (its logits' width).
        eos_token_ids: the ids that end a request (default: the tokenizer's EOS).
        whitespace: between the tokens of JSON: "flexible" (bounded) or "compact".
    """

    def __init__(self, tokenizer: Any, vocab_size: int,
                 eos_token_ids: Optional[Iterable[int]] = None,
                 whitespace: str = "flexible") -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.eos_token_ids = sorted(eos_token_ids) if eos_token_ids else None
        self.whitespace = whitespace
        self.cache = _Grammars(CACHED_STRUCTURES)
        self._structures: StructureCache | None = None
        self._lock = threading.Lock()

    def _grammar(self, kind: str, spec: str) -> BaseGrammarObject:
        """Compiled on SGLang's compile threads; a structure that does not compile is an
        InvalidGrammarObject carrying why (SGLang ends that request with it)."""
        with self._lock:
            if self._structures is None:
                self._structures = StructureCache(vocabulary_of(self.tokenizer,
                                                                self.vocab_size),
                                                  CACHED_STRUCTURES)
        try:
            engine = self._structures.compiled(*standard_structure(kind, spec,
                                                                   self.whitespace))
        except RequestError as e:
            logger.warning("pse: %s", e)
            return InvalidGrammarObject(f"pse: {e}")
        return PseGrammar(ServedGrammar(engine, self.eos_token_ids))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        return self._grammar("json", key_string)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._grammar("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._grammar("grammar", key_string)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._grammar("structural_tag", key_string)


class PseGrammar(BaseGrammarObject):
    """SGLang's grammar object over one request's pse engine."""

    def __init__(self, served: ServedGrammar) -> None:
        super().__init__()
        self.served = served

    def accept_token(self, token: int) -> None:
        """Commit one token.

        Raises:
            ValueError: the structure refuses it (SGLang aborts the request).
        """
        if not self.served.accept(token):
            raise ValueError(f"pse: token {token} is not allowed by the structure")

    def rollback(self, k: int) -> None:
        self.served.rollback(k)

    def is_terminated(self) -> bool:
        return self.served.terminated

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any
                            ) -> torch.Tensor:
        return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        self.served.engine.fill_next_token_bitmask(vocab_mask, idx)
        self.served.fix_stops(vocab_mask[idx].numpy())

    @staticmethod
    def fill_vocab_mask_batched(entries: List[GrammarRow], vocab_mask: torch.Tensor) -> None:
        """All rows' trie walks at once, on threads without the GIL."""
        ours = [e for e in entries if isinstance(e.grammar, PseGrammar)]
        if len(ours) < len(entries):
            BaseGrammarObject.fill_vocab_mask_batched(
                [e for e in entries if not isinstance(e.grammar, PseGrammar)], vocab_mask)
        if not ours:
            return
        rows = np.empty((len(ours), vocab_mask.shape[1]), dtype=np.int32)
        fill_next_token_bitmask_par([e.grammar.served.engine for e in ours], rows)
        for j, entry in enumerate(ours):
            entry.grammar.served.fix_stops(rows[j])
        vocab_mask[[e.row for e in ours]] = torch.from_numpy(rows)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> PseGrammar:
        return PseGrammar(self.served.copy())

    def try_jump_forward(self, tokenizer: Any) -> Optional[Tuple[List[int], str]]:
        """The tokens the structure forces next (canonical for the tokenizer), or None."""
        tokens = self.served.jump_forward()
        return (tokens, "") if tokens else None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return "", -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int],
                            next_state: int) -> None:
        """Nothing to redo: the forced tokens are already canonical, and the caller commits
        them with accept_token."""
