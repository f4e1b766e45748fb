"""pse in vLLM: a V1 logits processor that constrains the requests that ask for a structure.

    LLM(model=..., logits_processors=["pse.vllm:StructuringLogitsProcessor"])
    python -m vllm.entrypoints.openai.api_server --model DIR \
        --logits-processors pse.vllm:StructuringLogitsProcessor

(installed with the `vllm` extra, the `vllm.logits_processors` entry point loads it in every
vLLM engine). A request asks for a structure through `SamplingParams.extra_args` (REST:
`vllm_xargs`) with the keys of `pse.serving` (`pse_json_schema`, `pse_grammar`, `pse_regex`,
`pse_tools`, ...); requests without them are left alone. A structure that does not compile is
refused when the request arrives (`validate_params`: an HTTP 400 from the server), and the
other requests go on.

Each constrained row keeps its own engine, advances it by the row's new output tokens before
each step, and writes its mask into the row's logits; the rows' masks are filled together on
threads without the GIL. A structure new to the process compiles on a thread while the model
runs the step that added its row; the row's first mask waits for it. Compiled structures are
shared across requests by content (a bounded cache). A row whose structure refuses a token
(another processor changed its logits) or comes to a dead end is allowed only EOS, and a
warning names it.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from pse.engine import fill_next_token_bitmask_par
from pse.serving import (
    ConstrainedRow, RequestError, StructureCache, check_request, vocabulary_of,
)
from pse.torch import apply_token_bitmask_inplace

if TYPE_CHECKING:
    from vllm import SamplingParams
    from vllm.config import VllmConfig

logger = logging.getLogger(__name__)

_COMPILER: list[ThreadPoolExecutor] = []
_COMPILER_LOCK = threading.Lock()


class StructuringLogitsProcessor(LogitsProcessor):
    """vLLM's V1 logits processor interface over pse (see the module's documentation)."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Compile the request's structure, if it asks for one.

        Raises:
            ValueError: the structure is malformed or does not compile (vLLM answers 400).
        """
        try:
            check_request(sampling_params.extra_args)
        except RequestError as e:
            raise ValueError(f"pse: {e}") from None

    def __init__(self, vllm_config: VllmConfig, device: torch.device,
                 is_pin_memory: bool) -> None:
        model = vllm_config.model_config
        self._tokenizer = model.tokenizer
        self._revision = getattr(model, "tokenizer_revision", None)
        self._trust_remote_code = bool(getattr(model, "trust_remote_code", False))
        self._width = model.get_vocab_size()
        self._cache: StructureCache | None = None
        self.rows: dict[int, ConstrainedRow] = {}

    def is_argmax_invariant(self) -> bool:
        """A mask changes the greedy choice."""
        return False

    def _structures(self) -> StructureCache:
        """The cache of compiled structures, over the model's vocabulary (built on the first
        constrained request: a server with none never pays for it)."""
        if self._cache is None:
            self._cache = StructureCache(vocabulary_of(self._tokenizer, self._width,
                                                       self._revision, self._trust_remote_code))
        return self._cache

    def _engine(self, args: dict) -> Any:
        engine = self._structures().engine(args)
        if engine is None:  # validate_params lets no such request through; a guard anyway
            raise RequestError("no structure")
        return engine

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        """Rows added (a constrained one gets a fresh engine), removed and moved, in that
        order."""
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.rows.pop(index, None)
        for index, params, _prompt, output_ids in batch_update.added:
            self.rows.pop(index, None)
            args = params.extra_args
            if not args or not any(k.startswith("pse_") for k in args):
                continue
            # compiled while the model runs this step; apply() waits for it
            self.rows[index] = ConstrainedRow(_compiler().submit(self._engine, args),
                                              output_ids)
        for a, b, direction in batch_update.moved:
            row_a, row_b = self.rows.pop(a, None), self.rows.pop(b, None)
            if row_a is not None:
                self.rows[b] = row_a
            if row_b is not None and direction == MoveDirectionality.SWAP:
                self.rows[a] = row_b

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """Advance each constrained row by its new tokens and mask its logits in place."""
        if not self.rows:
            return logits
        live, ended = [], []
        for index, row in self.rows.items():
            if index >= logits.shape[0]:
                continue
            row.advance()
            if row.failed is None and not row.engine.is_finished:
                live.append(index)
            else:
                ended.append(index)
        if live:
            vocab = self._structures().vocab
            bitmask = np.empty((len(live), (vocab.size + 31) // 32), dtype=np.int32)
            fill_next_token_bitmask_par([self.rows[i].engine for i in live], bitmask)
            for j, index in enumerate(live):
                if not bitmask[j].any():
                    self.rows[index].failed = "a dead end: no token continues the structure"
                    ended.append(index)
                    continue
                apply_token_bitmask_inplace(logits[index], bitmask[j])
        for index in ended:
            row = self.rows[index]
            if row.failed is not None and not row.reported:
                logger.warning("pse: row %d: %s; only EOS is allowed", index, row.failed)
                row.reported = True
            self._only_eos(logits[index])
        return logits

    def _only_eos(self, row: torch.Tensor) -> None:
        eos = list(self._structures().vocab.eos_token_ids)
        keep = row[eos].clone()
        row.fill_(float("-inf"))
        row[eos] = keep


def _compiler() -> ThreadPoolExecutor:
    """The thread that compiles new structures (one: compiling holds the GIL)."""
    with _COMPILER_LOCK:
        if not _COMPILER:
            _COMPILER.append(ThreadPoolExecutor(1, thread_name_prefix="pse-compile"))
        return _COMPILER[0]
