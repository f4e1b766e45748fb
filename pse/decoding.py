"""The decoding loop of `generate`: rows of a batch, each with its own structure, through a
`transformers` causal LM with the KV cache.

Each step feeds every row the tokens it gained (the sampled one and the forced ones after it)
in one forward pass. Rows gain different numbers of tokens, so each row's new tokens are
right-aligned in the step and padded on the left with tokens the attention mask hides; the
positions are given explicitly, so a row's text is encoded as if it were alone. While the
model runs, the rows' masks are computed on other threads (the trie walks release the GIL);
the step then applies them, samples and commits.

torch is imported when the loop runs, never when pse is imported.
"""

from __future__ import annotations

import inspect
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from pse.engine import StructuringEngine, fill_next_token_bitmask_par
from pse.lazy import Lazy

# the thread that computes a step's masks while the model runs
_OVERLAP = Lazy(lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="pse-overlap"))


class Row:
    """One sequence of a batch: its engine, its tokens so far, why it stopped.

    Attributes:
        engine: the row's own configured engine; it advances by every token the row gains.
        pending: the tokens the next forward pass feeds (the prompt and forced head first).
        generated: the ids generated so far (sampled and forced).
        forced: how many of them were forced.
        passes: forward passes the row took part in with tokens of its own.
        mask_seconds: time spent computing and applying its masks.
        reason: None while the row runs; then "stop", "stop_string" or "length".
    """

    def __init__(self, engine: StructuringEngine, prompt: list[int], max_new_tokens: int,
                 sampler: Callable[[Any], int], on_tokens: Callable[[list[int]], bool]) -> None:
        self.engine = engine
        self.pending = list(prompt)
        self.max_new_tokens = max_new_tokens
        self.sampler = sampler
        self._on_tokens = on_tokens  # True when a stop string was reached
        self.generated: list[int] = []
        self.forced = 0
        self.passes = 0
        self.mask_seconds = 0.0
        self.reason: str | None = None

    def start(self, fast_forward: bool) -> None:
        """Before the first forward pass: the tokens the structure forces at its start go
        after the prompt."""
        if not fast_forward:
            return
        head = self.engine.compute_ff_tokens()[: self.max_new_tokens]
        if self.engine.consume_tokens(head) != len(head):
            raise RuntimeError("the engine refused the tokens it forced")
        if head:
            prompt = self.pending
            self.add(head, sampled=False)
            self.pending = prompt + self.pending

    def add(self, ids: list[int], sampled: bool = True) -> None:
        """Append ids (the first one sampled, or none), then see whether the row is done."""
        ids = ids[: self.max_new_tokens - len(self.generated)]
        self.generated += ids
        self.forced += len(ids) - 1 if sampled else len(ids)
        self.pending = ids
        stopped = self._on_tokens(ids)
        if self.engine.is_finished:
            self.reason = "stop"
        elif stopped:
            self.reason = "stop_string"
        elif len(self.generated) >= self.max_new_tokens:
            self.reason = "length"


def decode(model: Any, rows: Sequence[Row], eos: set[int], fast_forward: bool,
           pad_token: int, n_threads: int | None = None) -> None:
    """Run the rows to their end (EOS, a complete structure, a stop string, their budget).

    Args:
        model: a causal LM called as `model(input_ids=, attention_mask=, position_ids=,
            use_cache=True, <cache>=)` returning `.logits` and the cache.
        rows: the rows, each with its prompt in `pending`.
        eos: the vocabulary's end-of-sequence ids.
        fast_forward: append the tokens a structure forces after each sampled one.
        pad_token: the id fed where a row has nothing to feed (hidden by the attention mask).
        n_threads: threads for the batch's mask walks (default: the number of cores).
    """
    import torch

    from pse.torch import _pick_and_commit, apply_token_bitmask_inplace

    device = next(model.parameters()).device
    cache_keyword = _cache_keyword(model)
    last_only = _last_logits_only(model)
    words = (rows[0].engine.vocab.size + 31) // 32
    bitmask = np.empty((len(rows), words), dtype=np.int32)
    attention = torch.zeros((len(rows), 0), dtype=torch.long, device=device)
    lengths = [0] * len(rows)  # each row's real tokens in the cache
    past = None
    with torch.inference_mode():
        while True:
            for row in rows:  # complete, with nothing but EOS left: no forward pass for it
                if row.reason is None and _only_eos_allowed(row.engine, eos):
                    row.reason = "stop"
            active = [i for i, row in enumerate(rows) if row.reason is None]
            if not active:
                return
            ids, mask, positions = _step_inputs(rows, lengths, pad_token)
            attention = torch.cat([attention, torch.tensor(mask, device=device)], dim=1)
            masks = _OVERLAP.get().submit(_fill, [rows[i].engine for i in active],
                                      bitmask[: len(active)], n_threads)
            out = model(input_ids=torch.tensor(ids, device=device), attention_mask=attention,
                        position_ids=torch.tensor(positions, device=device), use_cache=True,
                        **{cache_keyword: past}, **last_only)
            past = getattr(out, cache_keyword)
            fill_seconds = masks.result() / len(active)
            logits = out.logits[:, -1, :].float()
            if logits.shape[-1] < rows[0].engine.vocab.size:
                raise ValueError(f"the model's logits have {logits.shape[-1]} columns but the "
                                 f"vocabulary {rows[0].engine.vocab.size} ids")
            for j, i in enumerate(active):
                row = rows[i]
                row.passes += 1
                lengths[i] += len(row.pending)
                started = time.perf_counter()
                apply_token_bitmask_inplace(logits[i], bitmask[j])
                row.mask_seconds += time.perf_counter() - started + fill_seconds
                row.add(_pick_and_commit(row.engine, logits[i], row.sampler, fast_forward))


def _step_inputs(rows: Sequence[Row], lengths: list[int], pad_token: int
                 ) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Input ids, attention mask columns and positions of one step: each running row's
    pending tokens right-aligned, padding (mask 0) before them and in rows that are done."""
    width = max(len(row.pending) for row in rows if row.reason is None)
    ids, mask, positions = [], [], []
    for row, length in zip(rows, lengths):
        n = len(row.pending) if row.reason is None else 0
        pad = width - n
        ids.append([pad_token] * pad + (row.pending if n else []))
        mask.append([0] * pad + [1] * n)
        positions.append([length] * pad + list(range(length, length + n)))
    return ids, mask, positions


def _fill(engines: list[StructuringEngine], bitmask: np.ndarray, n_threads: int | None
          ) -> float:
    """The rows' masks (on the overlap thread, while the model runs); returns the seconds."""
    started = time.perf_counter()
    fill_next_token_bitmask_par(engines, bitmask, n_threads)
    return time.perf_counter() - started


def _cache_keyword(model: Any) -> str:
    """The name of the KV cache in the model's forward pass and its output: `cache` in
    `transformers` from 5.2x on (`past_key_values` is deprecated there), `past_key_values`
    before and in most other code."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return "past_key_values"
    return "cache" if "cache" in parameters else "past_key_values"


def _last_logits_only(model: Any) -> dict[str, int]:
    """The keyword that makes a `transformers` model compute the logits of the last position
    only: with forced tokens a forward pass takes several, and the vocabulary-wide projection
    of the others would be wasted."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return {}
    for name in ("logits_to_keep", "num_logits_to_keep"):  # transformers >= 4.50, >= 4.45
        if name in parameters:
            return {name: 1}
    return {}


def _only_eos_allowed(engine: StructuringEngine, eos: set[int]) -> bool:
    """True when the structure is complete and cannot take another text token."""
    if not engine.is_accepting():
        return False
    allowed = engine.allowed_token_ids()
    return all(int(i) in eos for i in allowed[: len(eos) + 1])
