"""`StructuringEngine`: exact token masks, token consumption and healing for one sequence."""

from __future__ import annotations

import os
import threading
from concurrent.futures import CancelledError, Executor, Future, ThreadPoolExecutor
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from pse._core.forced import Boundary, forced_bytes, forced_special_terms
from pse._core.mask import Matcher, fill_batch
from pse._core.slices import SliceCache
from pse._core.stepper import StepperDelta
from pse.explain import Explanation, explain
from pse.lazy import Lazy
from pse.machines import StateMachine, special_text
from pse.vocabulary import MAX_CONTEXT_TOKENS, Vocabulary, utf8_complete_length

_CACHES_LOCK = threading.Lock()

# The most forced bytes computed at once: a longer forced run is taken in several steps.
MAX_FF_BYTES = 1024
MAX_FF_SPECIAL_TOKENS = 16  # forced special tokens in one call (a bound on the recursion)


def _slice_cache(structure: Any, vocab: Vocabulary, mask_memo: int) -> SliceCache:
    """The mask cache of (structure, vocabulary), shared by every engine using the pair. It
    lives on the compiled structure, so it goes when the structure goes (it keeps the
    structure's tables, not the structure: no cycle for the garbage collector to find)."""
    key = (id(vocab), mask_memo)
    with _CACHES_LOCK:
        cache = structure.slice_caches.get(key)
        if cache is None or cache.trie is not vocab.trie:  # an id reused by a new vocabulary
            cache = structure.slice_caches[key] = SliceCache(structure, vocab, mask_memo)
        return cache


class StructuringEngine:
    """Constrains one sequence of tokens to a structure.

    Args:
        vocab: the vocabulary of the model's tokenizer.
        mask_memo: how many recent masks to remember per (structure, vocabulary), keyed by the
            exact live parser states they were computed for (0: none). A mask is
            ceil(V/32) * 4 bytes (16 KB for Llama 3); the memo is shared by engine copies.

    The mask layout is the one llguidance, XGrammar and vLLM share: int32 words, bit
    `i % 32` of word `i // 32` set when token i is allowed.
    """

    def __init__(self, vocab: Vocabulary, mask_memo: int = 512) -> None:
        if not isinstance(vocab, Vocabulary):
            raise TypeError(f"vocab must be a pse.Vocabulary, not {type(vocab).__name__}")
        if isinstance(mask_memo, bool) or not isinstance(mask_memo, int) or mask_memo < 0:
            raise ValueError(f"mask_memo must be an int >= 0, got {mask_memo!r}")
        self.mask_memo = mask_memo
        self.vocab = vocab
        self._structure: StateMachine | None = None
        self._model: type | None = None  # the pydantic class configured (pse.generate's value)
        self._matcher: Matcher | None = None
        self._committed: list[int] = []  # ids committed, in step with the matcher's history
        self._pending: Future | None = None  # a configure_async under way ...
        self._pending_structure: Any = None  # ... and what it configures

    # -- configuration ------------------------------------------------------------------------
    @property
    def n_words(self) -> int:
        """Words in one mask row: ceil(vocab.size / 32)."""
        return (self.vocab.size + 31) // 32

    def configure(self, structure: Any) -> None:
        """Constrain the sequence to `structure` and start from its beginning.

        Args:
            structure: a StateMachine, a JSON Schema (dict or JSON text), or a pydantic
                model class (its `model_json_schema()`).

        Raises:
            TypeError: `structure` is none of those.
            GrammarError, SchemaError: the structure cannot be compiled.
        """
        if self._pending is not None:  # a configure_async under way: this one comes after
            try:
                self._wait_configured()
            except Exception:  # (its error no longer matters)
                pass
        self._configure(structure)

    @property
    def structure(self) -> StateMachine | None:
        """The structure configured (after a configure_async under way: its structure)."""
        if self._pending is not None:
            self._wait_configured()
        return self._structure

    def _configure(self, structure: Any) -> StructuringEngine:
        model = structure if _is_pydantic_class(structure) else None
        structure = _as_structure(structure)
        compiled = structure.compile()
        self._structure, self._model = structure, model
        self._matcher = Matcher(compiled, _slice_cache(compiled, self.vocab, self.mask_memo))
        self._committed = []
        return self

    def configure_async(self, structure: Any, executor: Executor | None = None) -> Future:
        """`configure(structure)` off the calling thread: a server compiles the next
        request's structure while the model runs (the compile holds the GIL in its Python
        parts; a model's forward pass releases it).

        Args:
            structure: as for `configure`.
            executor: where to compile (default: one background thread pse keeps).

        Returns:
            A Future whose result is this engine, configured; its exception is the
            compile's error (then the engine keeps its previous structure). Using the engine
            before the future is done waits for it (and raises that error once).

        Raises:
            RuntimeError: another configure_async of this engine is under way.
        """
        if self._pending is not None and not self._pending.done():
            raise RuntimeError("a configure_async of this engine is under way: wait for its "
                               "future first")
        future = (executor or _COMPILE_POOL.get()).submit(self._configure, structure)
        self._pending, self._pending_structure = future, structure
        return future

    def _wait_configured(self) -> None:
        """Wait for a configure_async under way; raise its error once. On pse's compile
        thread (a callback of another compile, say), where it would wait for itself, the
        compile is taken off the queue and run here."""
        future, structure = self._pending, self._pending_structure
        self._pending = self._pending_structure = None
        if future is None:
            return
        if threading.current_thread().name.startswith("pse-compile") and future.cancel():
            self._configure(structure)
            return
        try:
            future.result()
        except CancelledError:  # (cancelled by the caller: the previous structure stays)
            pass

    @property
    def matcher(self) -> Matcher:
        if self._pending is not None:
            self._wait_configured()
        if self._matcher is None:
            raise RuntimeError("the engine has no structure: call engine.configure(...) first")
        return self._matcher

    # -- masks --------------------------------------------------------------------------------
    def compute_mask(self) -> np.ndarray:
        """The allowed tokens as int32 words, shape (ceil(V/32),)."""
        out = np.empty(self.n_words, dtype=np.uint32)
        self.matcher.fill(out)
        return out.view(np.int32)

    def allowed_token_ids(self) -> np.ndarray:
        """The ids the mask allows, in increasing order."""
        bits = np.unpackbits(self.compute_mask().view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.vocab.size])

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        """Fill row `index` of a (B, ceil(V/32)) int32 numpy array or torch tensor.

        Raises:
            ValueError: wrong shape, dtype or index.
        """
        matcher = self.matcher
        host, copy_back = _host_bitmask(bitmask)
        matcher.fill_row(host, _index(index))
        if copy_back is not None:
            copy_back()

    # -- consuming ----------------------------------------------------------------------------
    def consume_token(self, token_id: int) -> bool:
        """Commit one token if the structure allows it; False (state unchanged) otherwise.

        Raises:
            ValueError: `token_id` is not an id of the vocabulary.
        """
        if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
            raise ValueError(f"a token id is an int, got {type(token_id).__name__}")
        if not self.matcher.consume_token(token_id):
            return False
        self._committed.append(int(token_id))
        return True

    def consume_tokens(self, token_ids: Iterable[int]) -> int:
        """Commit tokens in order, stopping at the first one refused; how many were committed.

        Raises:
            ValueError: some id is not an id of the vocabulary (checked before any token is
                committed: the state is then unchanged).
        """
        token_ids = list(token_ids)
        for token_id in token_ids:
            if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
                raise ValueError(f"a token id is an int, got {type(token_id).__name__}")
            self._check_in_range(int(token_id))
        n = 0
        for token_id in token_ids:
            if not self.consume_token(token_id):
                break
            n += 1
        return n

    def _check_in_range(self, token_id: int) -> None:
        if not 0 <= token_id < self.vocab.size:
            raise ValueError(f"token id {token_id} is out of range "
                             f"(0 <= id < {self.vocab.size})")

    def consume(self, token: int | str | bytes, heal: bool = True) -> int | None:
        """Commit a token that may come from outside the mask (a draft model, user text).

        Args:
            token: a token id, or the token's text or bytes.
            heal: when the structure takes only part of the token, commit the longest
                vocabulary token that is a prefix of that part instead (token healing).

        Returns:
            The id actually committed, or None when nothing could be (state unchanged).
        """
        matcher = self.matcher
        if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
            token_id = int(token)
            self._check_in_range(token_id)
            if not self.vocab.has_token(token_id) or token_id in self.vocab.special_token_ids:
                return token_id if self.consume_token(token_id) else None
            data = self.vocab.token_bytes(token_id)
        elif isinstance(token, (str, bytes, bytearray)):
            data = token.encode("utf-8") if isinstance(token, str) else bytes(token)
        else:
            raise TypeError(f"token must be an id, str or bytes, not {type(token).__name__}")
        known = self.vocab.lookup(data)
        if known is not None and matcher.advance(data):
            self._committed.append(known)
            return known
        if not heal:
            return None
        deltas = StateMachine.advance_all(matcher.steppers(), data, self.vocab)
        deltas = [d for d in deltas if not d.stepper.remaining_input
                  and self.vocab.lookup(d.token) is not None]
        best = StepperDelta.choose_best_path(deltas)
        if best is None:
            return None
        chosen = best[0]
        # every live parse of the bytes committed, not only the paths that healed to them
        # (others may read them and go on)
        if not matcher.advance(chosen):
            return None
        committed = self.vocab.lookup(chosen)
        self._committed.append(committed)
        return committed

    def is_accepting(self) -> bool:
        """True when the tokens committed so far complete the structure."""
        return self.matcher.is_accepting()

    def explain(self, token: int | str | bytes) -> Explanation:
        """Why `token` (an id, or a text or bytes) is refused here, or that it is allowed:
        where (a JSON path, the grammar rules, the character position), what the structure
        allows there, and why the token does not fit (`at $.days: an integer at most 14;
        "30" exceeds it`). Changes nothing; see `pse.explain`.

        Raises:
            TypeError, ValueError: `token` is not an id, str or bytes of the vocabulary.
        """
        return explain(self, token)

    def structured_outputs(self) -> list[tuple[str, Any]]:
        """The parsed values of the structured parts completed so far, in order, as
        (name, value) pairs: for `ToolCalls`, (tool name, arguments dict) per call; for a
        JSON Schema, `Json` or pydantic part, (its name, the parsed value). Free text has
        none (see `StateMachine.structured_outputs`).

        Raises:
            ValueError: a JSON value nests deeper than Python's json module can read back.
        """
        if self.structure is None:
            raise RuntimeError("the engine has no structure: call engine.configure(...) first")
        vocab = self.vocab
        eos, special = set(vocab.eos_token_ids), vocab.special_token_ids
        parts, run = [], bytearray()
        for t in self._committed:
            if t in eos:
                continue
            if t in special:  # marked: not the same text spelled out in free text
                parts.append(run.decode("utf-8", errors="replace"))
                parts.append(special_text(vocab.token_bytes(t).decode("utf-8", "replace")))
                run = bytearray()
            else:
                run += vocab.token_bytes(t)
        parts.append(run.decode("utf-8", errors="replace"))
        return self.structure.structured_outputs("".join(parts), self.is_accepting())

    @property
    def is_finished(self) -> bool:
        """True once an EOS token was committed."""
        return self.matcher.finished

    def rollback(self, n: int = 1) -> None:
        """Undo the last `n` committed tokens.

        Raises:
            ValueError: fewer than `n` tokens were committed.
        """
        self.matcher.rollback(n)
        if n:
            del self._committed[-n:]

    def reset(self) -> None:
        """Back to the start of the structure."""
        self.matcher.reset()
        self._committed = []

    # -- fast-forward -------------------------------------------------------------------------
    def compute_ff_bytes(self, max_bytes: int = MAX_FF_BYTES) -> bytes:
        """The bytes the structure forces next: the longest byte string every live parser
        state must produce. It stops where the structure could end (EOS is allowed), where
        more than one byte can come, or after `max_bytes` bytes; it may end inside a UTF-8
        character.

        Args:
            max_bytes: the most bytes to return.

        Returns:
            The forced bytes (empty when the next byte is not forced, or after EOS).

        Raises:
            ValueError: max_bytes is negative.
        """
        return _forced_bytes(self.matcher, _max_bytes(max_bytes))

    def compute_ff_tokens(self, max_bytes: int = MAX_FF_BYTES) -> list[int]:
        """The forced tokens: canonical tokens for the forced bytes, which a caller can append
        in one forward pass and commit with `consume_tokens`.

        Appended to the tokens committed so far, they are exactly what the tokenizer itself
        produces for the final text, whatever the model generates after them: the forced
        bytes are tokenized after the last committed tokens, and trailing tokens are held
        back where a vocabulary token the structure allows could start inside them and run
        past their end (seeds/fast_forward.md); so is an incomplete UTF-8 character. Where
        the structure forces a special token (`SpecialToken`: nothing else can come, not even
        the end), it is a forced token too, and so is what is forced after it.

        Args:
            max_bytes: the most forced bytes to look at.

        Returns:
            Token ids, possibly none.

        Raises:
            ValueError: max_bytes is negative.
            RuntimeError: the engine is computing a mask in another thread.
        """
        return self._forced_tokens(_max_bytes(max_bytes), MAX_FF_SPECIAL_TOKENS)

    def _forced_tokens(self, max_bytes: int, specials: int) -> list[int]:
        """compute_ff_tokens, with at most `specials` special tokens."""
        matcher = self.matcher
        data = _forced_bytes(matcher, max_bytes)
        body = data[:utf8_complete_length(data)]
        if not body:
            return self._forced_special(max_bytes, specials)
        boundary = Boundary(matcher, body)
        tokens, held_back = self.vocab.tokenize_partial(
            body, self._committed[-MAX_CONTEXT_TOKENS:], spans=boundary.spanned_from)
        if (specials and matcher.cache.special_ids and not held_back
                and len(body) == len(data) < max_bytes):
            # all the forced text is in tokens: a special token may be forced after it (looked
            # at after committing them, then rolled back: no copy of the engine per step)
            taken = self.consume_tokens(tokens)
            try:
                if taken == len(tokens):
                    tokens = tokens + self._forced_special(max_bytes - len(body), specials)
            finally:
                self.rollback(taken)
        return tokens

    def _forced_special(self, max_bytes: int, specials: int) -> list[int]:
        """The special token the structure forces next, then the tokens forced after it."""
        special_ids = self.matcher.cache.special_ids
        if not specials or max_bytes <= 0 or not special_ids:
            return []
        ids = {special_ids[t] for t in forced_special_terms(self.matcher) if t in special_ids}
        if len(ids) != 1:
            return []
        token = ids.pop()
        after = self.copy()
        if not after.consume_token(token):  # a guard refused it
            return []
        spent = max(1, len(self.vocab.token_bytes(token)))
        return [token] + after._forced_tokens(max_bytes - spent, specials - 1)

    def copy(self) -> StructuringEngine:
        """An independent engine in the same state; caches are shared."""
        if self._pending is not None:
            self._wait_configured()
        other = StructuringEngine.__new__(StructuringEngine)
        other._pending = other._pending_structure = None
        other.vocab = self.vocab
        other.mask_memo = self.mask_memo
        other._structure, other._model = self._structure, self._model
        other._matcher = None if self._matcher is None else self._matcher.copy()
        other._committed = list(self._committed)
        return other


def _is_pydantic_class(structure: Any) -> bool:
    return isinstance(structure, type) and hasattr(structure, "model_json_schema")


def _as_structure(structure: Any) -> StateMachine:
    from pse.json_schema import JsonSchema

    if isinstance(structure, StateMachine):
        return structure
    if isinstance(structure, (dict, str, bytes)) or structure is True or structure is False:
        return JsonSchema(structure)
    if _is_pydantic_class(structure):
        return JsonSchema(structure.model_json_schema())
    raise TypeError(f"configure() takes a StateMachine, a JSON Schema (dict or JSON text) or a "
                    f"pydantic model class, not {type(structure).__name__}")


# forced_bytes fills a buffer of the size it is given: a first look at this many bytes, then
# sixteen times more while the forced bytes fill it (not a buffer of max_bytes at once)
FORCED_CHUNK = 4096


def _forced_bytes(matcher: Matcher, max_bytes: int) -> bytes:
    """forced_bytes(matcher, max_bytes), in buffers that grow only as the bytes need."""
    size = min(max_bytes, FORCED_CHUNK)
    while True:
        data = forced_bytes(matcher, size)
        if len(data) < size or size == max_bytes:
            return data
        size = min(max_bytes, size * 16)


def _max_bytes(max_bytes: Any) -> int:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) \
            or max_bytes < 0:
        raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
    return int(max_bytes)


def _index(index: Any) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"row index must be an int, got {type(index).__name__}")
    return int(index)


def _host_bitmask(bitmask: Any) -> tuple[np.ndarray, Callable[[], None] | None]:
    """A numpy view of a bitmask (numpy, or a CPU torch tensor), or for a tensor elsewhere a
    host copy and the function that copies it back."""
    if type(bitmask) is np.ndarray:
        return bitmask, None
    if type(bitmask).__module__.split(".")[0] != "torch":
        raise ValueError(f"bitmask must be a numpy array or a torch tensor, not "
                         f"{type(bitmask).__name__}")
    if str(bitmask.dtype) != "torch.int32" or bitmask.dim() != 2:
        raise ValueError(f"bitmask must be a 2-D int32 tensor, got {bitmask.dtype} "
                         f"with {bitmask.dim()} dimensions")
    if bitmask.device.type == "cpu" and bitmask.is_contiguous():
        return bitmask.numpy(), None
    import torch

    host = bitmask.cpu().contiguous().numpy()
    return host, lambda: bitmask.copy_(torch.from_numpy(host).to(bitmask.device))


# the threads of fill_next_token_bitmask_par (one core is the caller's)
_MASK_POOL = Lazy(lambda: ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) - 1),
                                             thread_name_prefix="pse-mask"))
# one thread for compiles in the background (they hold the GIL: more would not help)
_COMPILE_POOL = Lazy(lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="pse-compile"))


def compile(structure: Any) -> StateMachine:
    """`structure` (a StateMachine, a JSON Schema as a dict or JSON text, or a pydantic model
    class) as a compiled StateMachine: configuring an engine with it costs nothing more.

    Raises:
        TypeError: `structure` is none of those.
        GrammarError, SchemaError: the structure cannot be compiled.
    """
    machine = _as_structure(structure)
    machine.compile()
    return machine


def compile_async(structure: Any, executor: Executor | None = None) -> Future:
    """`compile(structure)` off the calling thread (default: pse's one compile thread, as
    `StructuringEngine.configure_async`); a Future of the compiled StateMachine."""
    return (executor or _COMPILE_POOL.get()).submit(compile, structure)


def fill_next_token_bitmask_par(engines: Sequence[StructuringEngine], bitmask: Any,
                                n_threads: int | None = None) -> None:
    """Fill row i of `bitmask` for engines[i]; the trie walks run on `n_threads` threads
    (default: the number of cores) without the GIL.

    Args:
        engines: configured engines sharing one vocabulary.
        bitmask: a (B, ceil(V/32)) int32 numpy array or torch tensor, B >= len(engines).
        n_threads: threads to spread the walks over.

    Raises:
        TypeError: something in `engines` is not a StructuringEngine.
        ValueError: the bitmask has fewer rows than there are engines, or the wrong layout.
    """
    for e in engines:
        if not isinstance(e, StructuringEngine):
            raise TypeError(f"engines holds a {type(e).__name__}, not a StructuringEngine")
    matchers = [e.matcher for e in engines]
    threads = n_threads or os.cpu_count() or 1
    host, copy_back = _host_bitmask(bitmask)
    fill_batch(matchers, host, _MASK_POOL.get(), threads)
    if copy_back is not None:
        copy_back()
