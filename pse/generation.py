"""`generate`: a structured generation loop for a `transformers` causal language model.

torch is imported when `generate` runs, never when pse is imported.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from pse.engine import StructuringEngine
from pse.json_schema import JsonSchema
from pse.json_value import Json
from pse.vocabulary import Vocabulary, utf8_complete_length


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
            False when `max_new_tokens` ran out or a stop string came first.
        finish_reason: "stop" (the structure was completed), "stop_string" (the text reached
            one of `stop`) or "length" (`max_new_tokens` ran out).
    """

    tokens: int
    forced_tokens: int
    forward_passes: int
    mask_seconds: float
    seconds: float
    finished: bool
    finish_reason: str = "stop"

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of wall time."""
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Generation:
    """The result of `generate`.

    Attributes:
        text: the generated text (EOS not included; with a stop string, the text before it).
        value: the parsed value: JSON for a JSON Schema or `Json()`, a model instance for a
            pydantic class (the structure, or what the engine given was configured with),
            the text itself for other structures; None when unfinished.
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


def _prompt_ids(tokenizer: Any, vocab: Vocabulary, prompt: str | Sequence[int] | None,
                messages: Sequence[dict] | None, tools: Sequence[Any] | None) -> list[int]:
    """The ids the model starts from: the prompt's, or the messages in the chat template."""
    if (prompt is None) == (messages is None):
        raise TypeError("give one of prompt (text or token ids) and messages (a chat)")
    if messages is not None:
        ids = chat_prompt_ids(tokenizer, messages, tools)
    elif isinstance(prompt, str):
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


def chat_prompt_ids(tokenizer: Any, messages: Sequence[dict],
                    tools: Sequence[Any] | None = None) -> list[int]:
    """The ids of `messages` in the tokenizer's chat template, the assistant's turn opened.

    Args:
        tokenizer: a `transformers` tokenizer with a chat template.
        messages: `{"role": ..., "content": ...}` dicts.
        tools: tool definitions the template shows the model (OpenAI style), or None.

    Raises:
        ValueError: the tokenizer has no chat template.
        TypeError: `messages` is not a list of dicts.
    """
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError("messages need a tokenizer with a chat template (a transformers "
                         "tokenizer whose model has one); give a prompt instead")
    if isinstance(messages, (str, bytes)) or not all(isinstance(m, dict) for m in messages):
        raise TypeError("messages must be a list of {'role': ..., 'content': ...} dicts")
    extra = {"tools": list(tools)} if tools else {}
    encoded = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True,
                                            tokenize=True, **extra)
    # a list of ids in older transformers, a BatchEncoding in newer ones
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


def _parser(structure: Any) -> Callable[[str], Any]:
    """How to turn finished text into the value `Generation.value` holds."""
    if isinstance(structure, type) and hasattr(structure, "model_validate_json"):
        return structure.model_validate_json
    if isinstance(structure, StructuringEngine):
        if structure._model is not None:  # (configured with a pydantic class)
            return structure._model.model_validate_json
        structure = structure.structure
    if isinstance(structure, (JsonSchema, Json, dict, str, bytes, bool)):
        return json.loads
    return lambda text: text


def _stop_strings(stop: str | Sequence[str] | None) -> tuple[str, ...]:
    if stop is None:
        return ()
    strings = (stop,) if isinstance(stop, str) else tuple(stop)
    if not all(isinstance(t, str) and t for t in strings):
        raise ValueError(f"stop must be a non-empty string or a list of them, got {stop!r}")
    return strings


class _TextStream:
    """The text of the generated ids as it grows: complete UTF-8 characters only, EOS left
    out, cut before the first stop string. With stop strings, the last characters that could
    begin one are held back from `push`'s result until it is clear they do not."""

    def __init__(self, vocab: Vocabulary, eos: set[int], stop: tuple[str, ...]) -> None:
        self.vocab, self.eos, self.stop = vocab, eos, stop
        self.pending = b""  # the bytes of an unfinished character
        self.text = ""  # every complete character so far (cut at a stop string)
        self.shown = 0  # how much of `text` push has given out
        self.stopped = False
        self.hold = max((len(t) for t in stop), default=1) - 1

    def push(self, ids: Sequence[int]) -> str:
        """Add ids; returns the text that became final (to show to a user)."""
        if self.stopped:
            return ""
        self.pending += self.vocab.decode_bytes([i for i in ids if i not in self.eos])
        done = utf8_complete_length(self.pending)
        searched_from = max(0, len(self.text) - self.hold)
        self.text += self.pending[:done].decode("utf-8", errors="replace")
        self.pending = self.pending[done:]
        for t in self.stop:
            at = self.text.find(t, searched_from)
            if at >= 0:
                self.text = self.text[:at]
                self.stopped = True
        final = len(self.text) if self.stopped else max(self.shown, len(self.text) - self.hold)
        new, self.shown = self.text[self.shown:final], final
        return new

    def close(self) -> str:
        """The rest of the text, once generation has ended."""
        if not self.stopped and self.pending:
            self.text += self.pending.decode("utf-8", errors="replace")
            self.pending = b""
        new, self.shown = self.text[self.shown:], len(self.text)
        return new


def _penalized(sampler: Callable[[Any], int], penalty: float, seen: set[int]
               ) -> Callable[[Any], int]:
    """`sampler` after the repetition penalty of `transformers` (CTRL's): the logits of the
    token ids in `seen` divided by `penalty` where positive, multiplied where negative. It
    comes after the mask: a refused token stays at -inf."""
    import torch

    def sample(logits: Any) -> int:
        hit = torch.tensor([i for i in seen if i < logits.shape[0]], dtype=torch.long,
                           device=logits.device)
        picked = logits[hit]
        logits[hit] = torch.where(picked > 0, picked / penalty, picked * penalty)
        return sampler(logits)

    return sample


def generate(model: Any, tokenizer: Any, prompt: Any = None, structure: Any = None,
             max_new_tokens: int = 256, sampler: Callable[[Any], int] | None = None,
             fast_forward: bool = True, *, messages: Sequence[Any] | None = None,
             tools: Sequence[Any] | None = None, on_token: Callable[..., Any] | None = None,
             repetition_penalty: float = 1.0, stop: str | Sequence[str] | None = None,
             n_threads: int | None = None) -> Any:
    """Generate text in `structure` with a `transformers` causal LM, using its KV cache.

    Each step masks the logits, samples, commits the token, and appends the tokens the
    structure forces after it; the sampled and forced tokens go into the model together in the
    next forward pass. Generation stops at EOS, when the structure allows nothing but EOS (no
    forward pass is spent on it), at a stop string, or after `max_new_tokens`.

    Several prompts (a list of texts or of id lists, or a list of chats as `messages`) run as
    one batch: see `generate_batch`, which this calls then, returning a list of Generations.

    Args:
        model: a causal LM (`transformers` `...ForCausalLM`, or anything called as
            `model(input_ids=, attention_mask=, position_ids=, past_key_values=,
            use_cache=True)` returning `.logits` and `.past_key_values`; newer `transformers`
            name them `cache`).
        tokenizer: a pse.Vocabulary, or a tokenizer `Vocabulary.from_tokenizer` reads (with
            a configured engine as `structure`, the tokenizer only encodes the prompt).
        prompt: text (a `transformers` tokenizer adds its BOS as configured) or token ids;
            or None with `messages`.
        structure: what `StructuringEngine.configure` takes (StateMachine, JSON Schema, pydantic
            class), or a configured StructuringEngine (a copy is used: reuse it for many calls
            to keep its compiled structure and mask caches).
        max_new_tokens: the most tokens to generate, forced ones included.
        sampler: maps masked 1-D logits to a token id (`pse.torch.greedy`, the default,
            `sampling(temperature=, top_k=, top_p=, min_p=, seed=)`, or your own).
        fast_forward: append forced tokens without sampling them.
        messages: instead of `prompt`, a chat (`{"role", "content"}` dicts) that the
            tokenizer's chat template writes out, with the assistant's turn opened.
        tools: tool definitions for the chat template (default: the tools of a `ToolCalls`
            structure).
        on_token: called after each step with the ids it added (sampled, then forced) and the
            text that became final (complete characters; '' when there is none yet): for
            streaming.
        repetition_penalty: > 0; above 1 discourages the tokens of the prompt and of the text
            so far (as `transformers` does), 1 leaves the logits alone.
        stop: a string or strings that end generation; the text is cut before it.
        n_threads: threads for the mask walks of a batch (default: the number of cores).

    Returns:
        The Generation: text, parsed value, ids and statistics.

    Raises:
        TypeError, ValueError: bad arguments (no structure, both or neither of prompt and
            messages, an empty prompt, logits narrower than the vocabulary, a sampler that
            returns tokens the structure refuses).
        GrammarError, SchemaError: the structure cannot be compiled.
    """
    if _is_batch(prompt, messages):
        return generate_batch(model, tokenizer, prompt, structure, max_new_tokens, sampler,
                              fast_forward, messages=messages, tools=tools, on_token=on_token,
                              repetition_penalty=repetition_penalty, stop=stop,
                              n_threads=n_threads)
    row_callback = None if on_token is None else (lambda index, ids, text: on_token(ids, text))
    return _generate(model, tokenizer, [prompt], [structure], max_new_tokens, sampler,
                     fast_forward, None if messages is None else [messages], tools,
                     row_callback, repetition_penalty, stop, n_threads)[0]


def generate_batch(model: Any, tokenizer: Any, prompts: Sequence[Any] | None = None,
                   structures: Any = None, max_new_tokens: int = 256,
                   sampler: Callable[[Any], int] | None = None, fast_forward: bool = True, *,
                   messages: Sequence[Sequence[dict]] | None = None,
                   tools: Sequence[Any] | None = None,
                   on_token: Callable[[int, list[int], str], Any] | None = None,
                   repetition_penalty: float = 1.0, stop: str | Sequence[str] | None = None,
                   n_threads: int | None = None) -> list[Generation]:
    """`generate` for several prompts at once: one batch through the model, with the KV cache.

    Each row has its own structure (or all share one) and its own engine; rows end on their
    own (a row that is done is padded and hidden from the model until the last one ends). The
    rows' masks are computed on other threads while the model runs the step's forward pass.
    With greedy decoding each row's text is the one `generate` gives for it alone (up to the
    rounding of batched arithmetic). The arguments not listed below are as in `generate`;
    the sampler, the repetition penalty and the stop strings apply to every row.

    Args:
        prompts: texts or id lists, one per row; or None with `messages`.
        structures: one structure for every row, or a list of them, one per row (each what
            `generate` takes).
        messages: instead of `prompts`, one chat per row.
        on_token: called as `on_token(row, ids, text)` after each step of a row.

    Returns:
        One Generation per row, in order; each one's `stats.seconds` is the batch's wall time.

    Raises:
        TypeError, ValueError: as `generate`, and a list of structures whose length is not
            the number of rows, or engines built for different vocabularies.
    """
    chats = None if messages is None else list(messages)
    texts = None if prompts is None else list(prompts)
    count = len(chats) if chats is not None else len(texts or [])
    if texts is not None and chats is not None:
        raise TypeError("give one of prompts and messages (chats), not both")
    if count == 0:
        raise ValueError("generate_batch needs at least one prompt or chat")
    if isinstance(structures, list):
        if len(structures) != count:
            raise ValueError(f"{len(structures)} structures for {count} rows: give one per "
                             "row, or one for all")
        per_row = structures
    else:
        per_row = [structures] * count
    return _generate(model, tokenizer, texts or [None] * count, per_row, max_new_tokens,
                     sampler, fast_forward, chats, tools, on_token, repetition_penalty, stop,
                     n_threads)


def _is_batch(prompt: Any, messages: Any) -> bool:
    """Several prompts (a list of texts or of id lists) or several chats (a list of lists)."""
    if messages is not None:
        return (isinstance(messages, (list, tuple)) and bool(messages)
                and all(isinstance(m, (list, tuple)) for m in messages))
    return (isinstance(prompt, (list, tuple)) and bool(prompt)
            and all(isinstance(p, (str, list, tuple)) for p in prompt))


def _generate(model: Any, tokenizer: Any, prompts: list[Any], structures: list[Any],
              max_new_tokens: int, sampler: Callable[[Any], int] | None, fast_forward: bool,
              chats: list[Any] | None, tools: Sequence[Any] | None,
              on_token: Callable[[int, list[int], str], Any] | None,
              repetition_penalty: float, stop: str | Sequence[str] | None,
              n_threads: int | None) -> list[Generation]:
    from pse.decoding import Row, decode
    from pse.torch import greedy

    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
            or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    if isinstance(repetition_penalty, bool) or not isinstance(repetition_penalty, (int, float)) \
            or not repetition_penalty > 0:
        raise ValueError(f"repetition_penalty must be a number > 0, got {repetition_penalty!r}")
    stops = _stop_strings(stop)
    started = time.perf_counter()
    engines = _engines(tokenizer, structures)
    vocab = engines[0].vocab
    eos = set(vocab.eos_token_ids)
    rows, streams = [], []
    for index, (prompt, engine) in enumerate(zip(prompts, engines)):
        chat = None if chats is None else chats[index]
        row_tools = tools if tools is not None or chat is None else \
            getattr(engine.structure, "tools", None)
        ids = _prompt_ids(tokenizer, vocab, prompt, chat, row_tools)
        stream = _TextStream(vocab, eos, stops)
        seen = set(ids)  # for the repetition penalty
        row_sampler = sampler or greedy
        if repetition_penalty != 1:
            row_sampler = _penalized(row_sampler, float(repetition_penalty), seen)

        def on_tokens(new: list[int], index=index, stream=stream, seen=seen) -> bool:
            seen.update(new)
            text = stream.push(new)
            if on_token is not None:
                on_token(index, new, text)
            return stream.stopped

        rows.append(Row(engine, ids, max_new_tokens, row_sampler, on_tokens))
        streams.append(stream)
    for row in rows:
        row.start(fast_forward)
    pad = vocab.eos_token_ids[0] if vocab.eos_token_ids else 0
    decode(model, rows, eos, fast_forward, pad, n_threads)
    seconds = time.perf_counter() - started
    results = []
    for index, (row, stream, structure) in enumerate(zip(rows, streams, structures)):
        rest = stream.close()
        if on_token is not None and rest:
            on_token(index, [], rest)
        reason = row.reason or "length"
        finished = reason == "stop"
        text = stream.text if stops else vocab.decode([i for i in row.generated
                                                       if i not in eos])
        value = _parser(structure)(text) if finished else None
        stats = GenerationStats(tokens=len(row.generated), forced_tokens=row.forced,
                                forward_passes=row.passes, mask_seconds=row.mask_seconds,
                                seconds=seconds, finished=finished, finish_reason=reason)
        results.append(Generation(text=text, value=value, token_ids=row.generated,
                                  stats=stats, outputs=row.engine.structured_outputs()))
    return results


def _engines(tokenizer: Any, structures: list[Any]) -> list[StructuringEngine]:
    """A fresh engine per row: copies of a given engine, or of one compiled per structure."""
    compiled: dict[int, StructuringEngine] = {}
    engines = []
    for structure in structures:
        if structure is None:
            raise TypeError("generate needs a structure (a JSON Schema, a pydantic class, a "
                            "StateMachine or a configured StructuringEngine)")
        if isinstance(structure, StructuringEngine):
            if isinstance(tokenizer, Vocabulary) and tokenizer is not structure.vocab:
                raise ValueError("the engine was built for another Vocabulary than `tokenizer`")
            engines.append(structure.copy())
            continue
        if id(structure) not in compiled:
            engine = StructuringEngine(_vocabulary(tokenizer))
            engine.configure(structure)
            compiled[id(structure)] = engine
        engines.append(compiled[id(structure)].copy())
    if any(e.vocab is not engines[0].vocab for e in engines):
        raise ValueError("the rows' engines were built for different vocabularies: a batch "
                         "shares one")
    return engines
