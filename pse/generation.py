"""`generate`: a structured generation loop for a `transformers` causal language model.

torch is imported when `generate` runs, never when pse is imported.
"""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from pse.engine import StructuringEngine
from pse.json_schema import JsonSchema
from pse.json_value import Json
from pse.vocabulary import Vocabulary


@dataclass(frozen=True)
class GenerationStats:
    """What one `generate` call did.

    Attributes:
        tokens: tokens generated (sampled and forced), EOS included.
        forced_tokens: of those, tokens the structure forced (appended without sampling).
        forward_passes: calls of the model, the prompt's included.
        mask_seconds: time spent computing and applying token masks.
        seconds: wall time of the whole call.
        finished: True when the structure was completed (EOS, or nothing else possible);
            False when `max_new_tokens` ran out first.
    """

    tokens: int
    forced_tokens: int
    forward_passes: int
    mask_seconds: float
    seconds: float
    finished: bool

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of wall time."""
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Generation:
    """The result of `generate`.

    Attributes:
        text: the generated text (EOS not included).
        value: the parsed value: JSON for a JSON Schema or `Json()`, a model instance for a
            pydantic class, the text itself for other structures; None when unfinished.
        token_ids: the generated ids (EOS included when one was generated).
        stats: counts and timings.
        outputs: the structured parts completed, as (name, value) pairs: one (tool name,
            arguments) per tool call (`StructuringEngine.structured_outputs`).
    """

    text: str
    value: Any
    token_ids: list[int]
    stats: GenerationStats
    outputs: list = field(default_factory=list)


_VOCABS: dict[int, tuple[Any, Vocabulary]] = {}


def _vocabulary(tokenizer: Any) -> Vocabulary:
    """The Vocabulary of a tokenizer, built once per tokenizer object (it takes seconds)."""
    if isinstance(tokenizer, Vocabulary):
        return tokenizer
    cached = _VOCABS.get(id(tokenizer))
    if cached is not None and cached[0] is tokenizer:
        return cached[1]
    vocab = Vocabulary.from_tokenizer(tokenizer)
    _VOCABS.clear()  # keep the latest only: a vocabulary is tens of MB
    _VOCABS[id(tokenizer)] = (tokenizer, vocab)
    return vocab


def _prompt_ids(tokenizer: Any, vocab: Vocabulary, prompt: str | Sequence[int]) -> list[int]:
    if isinstance(prompt, str):
        if hasattr(tokenizer, "convert_ids_to_tokens"):  # transformers: BOS as it configures
            ids = list(tokenizer(prompt)["input_ids"])
        else:
            ids = vocab.encode(prompt)
    elif isinstance(prompt, Sequence) and all(
            isinstance(i, int) and not isinstance(i, bool) for i in prompt):
        ids = list(prompt)
    else:
        raise TypeError(f"prompt must be a str or a sequence of token ids, not "
                        f"{type(prompt).__name__}")
    if not ids:
        raise ValueError("the prompt is empty: the model needs at least one token to start")
    return ids


def _parser(structure: Any) -> Callable[[str], Any]:
    """How to turn finished text into the value `Generation.value` holds."""
    if isinstance(structure, type) and hasattr(structure, "model_validate_json"):
        return structure.model_validate_json
    if isinstance(structure, StructuringEngine):
        structure = structure.structure
    if isinstance(structure, (JsonSchema, Json, dict, str, bytes, bool)):
        return json.loads
    return lambda text: text


def generate(model: Any, tokenizer: Any, prompt: str | Sequence[int], structure: Any,
             max_new_tokens: int = 256, sampler: Callable[[Any], int] | None = None,
             fast_forward: bool = True) -> Generation:
    """Generate text in `structure` with a `transformers` causal LM, using its KV cache.

    Each step masks the logits, samples, commits the token, and appends the tokens the
    structure forces after it; the sampled and forced tokens go into the model together in the
    next forward pass. Generation stops at EOS, when the structure allows nothing but EOS (no
    forward pass is spent on it), or after `max_new_tokens`.

    Args:
        model: a causal LM (`transformers` `...ForCausalLM`, or anything called as
            `model(input_ids=, past_key_values=, use_cache=True)` returning `.logits` and
            `.past_key_values`).
        tokenizer: a pse.Vocabulary, or a tokenizer `Vocabulary.from_tokenizer` reads (with
            a configured engine as `structure`, the tokenizer only encodes the prompt).
        prompt: text (a `transformers` tokenizer adds its BOS as configured) or token ids.
        structure: what `StructuringEngine.configure` takes (StateMachine, JSON Schema, pydantic
            class), or a configured StructuringEngine (a copy is used: reuse it for many calls
            to keep its compiled structure and mask caches).
        max_new_tokens: the most tokens to generate, forced ones included.
        sampler: maps masked 1-D logits to a token id (`pse.torch.greedy`, the default,
            `multinomial`, `top_k`, `top_p`, or your own).
        fast_forward: append forced tokens without sampling them.

    Returns:
        The Generation: text, parsed value, ids and statistics.

    Raises:
        TypeError, ValueError: bad arguments (an empty prompt, logits narrower than the
            vocabulary, a sampler that returns tokens the structure refuses).
        GrammarError, SchemaError: the structure cannot be compiled.
    """
    import torch

    from pse.torch import _sample_timed, greedy

    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
            or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    started = time.perf_counter()
    if isinstance(structure, StructuringEngine):
        engine = structure.copy()
        vocab = engine.vocab
        if isinstance(tokenizer, Vocabulary) and tokenizer is not vocab:
            raise ValueError("the engine was built for another Vocabulary than `tokenizer`")
    else:
        vocab = _vocabulary(tokenizer)
        engine = StructuringEngine(vocab)
        engine.configure(structure)
    ids = _prompt_ids(tokenizer, vocab, prompt)
    sampler = sampler or greedy
    eos = set(vocab.eos_token_ids)
    device = next(model.parameters()).device

    generated: list[int] = []
    forced = forward_passes = 0
    mask_seconds = 0.0
    pending = list(ids)
    if fast_forward:
        head = engine.compute_ff_tokens()[:max_new_tokens]
        if engine.consume_tokens(head) != len(head):
            raise RuntimeError("the engine refused the tokens it forced")
        generated += head
        forced += len(head)
        pending += head
    past = None
    finished = False
    last_only = _last_logits_only(model)
    with torch.inference_mode():
        while len(generated) < max_new_tokens:
            t = time.perf_counter()
            only_eos = _only_eos_allowed(engine, eos)
            mask_seconds += time.perf_counter() - t
            if only_eos:
                finished = True
                break
            out = model(input_ids=torch.tensor([pending], device=device),
                        past_key_values=past, use_cache=True, **last_only)
            forward_passes += 1
            past = out.past_key_values
            logits = out.logits[0, -1, :].float()
            new, seconds = _sample_timed(engine, logits, sampler, fast_forward)
            mask_seconds += seconds
            new = new[: max_new_tokens - len(generated)]
            forced += len(new) - 1
            generated += new
            if engine.is_finished:
                finished = True
                break
            pending = new
    seconds = time.perf_counter() - started
    text_ids = [i for i in generated if i not in eos]
    text = vocab.decode(text_ids)
    value = _parser(structure)(text) if finished else None
    stats = GenerationStats(tokens=len(generated), forced_tokens=forced,
                            forward_passes=forward_passes, mask_seconds=mask_seconds,
                            seconds=seconds, finished=finished)
    return Generation(text=text, value=value, token_ids=generated, stats=stats,
                      outputs=engine.structured_outputs())


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
