# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Token masks: the walk of the vocabulary trie from the live parser states, with the slice
cache's entries (pse._core.slices); the Matcher holding the live parser states of one engine."""

from libc.stdint cimport (int16_t, int32_t, uint8_t, uint16_t, uint32_t, int64_t,
                          uint64_t, uintptr_t)
from libc.stdlib cimport malloc, realloc, free, calloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np
cimport numpy as cnp

from pse._core.structure cimport (
    Ctx, Frame, NO_BYTE, PState, Returns, SCRATCH_SEEN_CHUNKS, StampedIds, StateSet, Tables,
    any_in_unique, exit_bytes, exit_bytes_from, expand_in, has_bit, in_unique,
    is_accepting, live_bound, merge_made, merge_walk_set, popped_set, returns_begin,
    returns_end, returns_free, seen_free, seen_init, seen_reset, set_next_bytes,
    special_terms, stamped_begin, stamped_clear, stamped_free, stateset_add, stateset_append,
    stateset_clear, stateset_cut, stateset_free, stateset_init, step_bytes, step_reaches,
    step_set, take_special, union_bytes_free, union_bytes_init, widen_walk_set,
)
from pse._core.stepper cimport Stepper
from pse._core.trie cimport Trie, TokenTrie
from pse._core.byte_kinds cimport loop_kinds
from pse._core.slices cimport Slice, SliceCache, SliceEntry, TOKEN_EOS, TOKEN_TEXT, set_bit
from pse.errors import GrammarError
from pse._core.structure import WideWalk

cnp.import_array()

import threading
from collections import OrderedDict

# An exit node with at least this many nodes below it is planned as jobs, not walked (see
# Matcher.plan): below that, a walk with the live states costs less than building an entry.
cdef int32_t min_planned_subtree = 64
# Jobs per mask at most (past that, exits are walked).
cdef int32_t max_jobs = 4096
# Plans so far, in all matchers (a plan's number tells its groups of jobs apart: see add_job).
cdef int64_t plan_epochs = 0


def _set_planning(int32_t min_subtree, int32_t most_jobs) -> tuple:
    """For tests: plan exits into subtrees of at least `min_subtree` nodes, at most
    `most_jobs` jobs per mask; returns the old values."""
    global min_planned_subtree, max_jobs
    old = (min_planned_subtree, max_jobs)
    min_planned_subtree, max_jobs = min_subtree, most_jobs
    return old

cdef extern from *:
    int ctz32 "__builtin_ctz"(uint32_t x) noexcept nogil

cdef enum:
    NOT_PLANNED = 0x7FFFFFFF     # a root none of whose exits is planned (see Matcher.plan)
    FILTER_FROM = 32             # union members a step pops before its siblings are filtered
                                 # (see walk_subtree)


# A mask from this many states or more, where most bytes are no terminal's, plans a subtree
# by the nodes the walk would step into (see large_subtree).
cdef int32_t MANY_ROOTS = 8
cdef int64_t narrow_walked = 0  # nodes found small that way so far (for tests)


def _narrow_walked() -> int:
    """How many trie nodes large_subtree found small by the nodes the walk steps into, where
    their size is large (each once per cache), so far."""
    return narrow_walked


cdef int64_t walk_subtrees_taken = 0  # subtrees walks of live states took at once (see finish)


def _walk_subtrees_taken() -> int:
    """How many subtrees mask walks from live states took at once so far (for tests)."""
    return walk_subtrees_taken


cdef class Matcher:
    """The live parser states of one engine: masks, committed tokens, snapshots to roll back.

    Args:
        structure: the compiled structure (the matcher keeps it: the cache does not).
        cache: the slice cache of the (structure, vocabulary) pair, shared by copies.
    """

    def __cinit__(self):
        self.w.levels = NULL
        self.w.marks = NULL
        self.w.level_bytes = NULL
        self.w.level_filtered = NULL
        self.w.slices = NULL
        self.w.plan_from = NULL
        self.w.root_group = NULL
        self.w.root_next = NULL
        self.w.taken = 0
        self.w.jobs = NULL
        self.w.job_slices = NULL
        self.w.job_plan_from = NULL
        self.w.job_group = NULL
        self.w.job_next = NULL
        self.w.job_slots = NULL
        self.w.n_job_slots = 0
        self.w.n_jobs = self.w.jobs_cap = 0
        self.w.text = NULL
        self.w.unique = NULL
        self.w.risky_bits = NULL
        self.w.risky_nodes = NULL
        self.w.n_risky = NULL
        self.w.merging.on = False
        self.w.merging.check_at = 0
        self.w.merging.no_hold = False
        union_bytes_init(&self.w.exits)
        self.w.seen.n_chunks = 0
        self.w.seen.slots = NULL
        self.live.items = NULL
        self.live.slots = NULL
        self.w.roots.items = NULL
        self.w.roots.slots = NULL
        self.w.seed.items = NULL
        self.w.seed.slots = NULL
        self.w.ended.items = NULL
        self.w.ended.slots = NULL
        self.w.scratch.frames = NULL
        memset(&self.w.scratch.returns, 0, sizeof(Returns))
        stamped_begin(&self.w.scratch.tops_seen)
        stamped_begin(&self.w.scratch.popped)
        stamped_begin(&self.w.scratch.seeded)
        self.w.scratch.tops_seen.dense_on = True
        self.w.scratch.popped.dense_on = True
        self.w.scratch.seeded.dense_on = True

    def __init__(self, CompiledStructure structure, SliceCache cache):
        cdef int32_t i
        if cache.structure is not structure:
            raise ValueError("the slice cache is not the structure's")
        self.cache = cache
        self.structure = structure
        self.w.tables = &self.structure.t
        self.w.large_memo = (NULL if cache._large_memo is None
                             else <uint32_t*>cnp.PyArray_DATA(cache._large_memo))
        self.w.arena = &self.structure.arena
        self.w.seen_kept = &self.structure.seen
        self.w.text_cap = 0
        self.w.base = 0
        seen_init(&self.w.seen, SCRATCH_SEEN_CHUNKS)
        self.w.trie = &cache.trie.t
        self.w.kinds_below = <const uint16_t*>cnp.PyArray_DATA(cache._kinds_below)
        self.w.loop_kinds = <int16_t*>cnp.PyArray_DATA(cache._loop_kinds)
        self.history = []
        self.finished = False
        self._keep = []
        self.special_hits = []
        stateset_init(&self.live, 4)
        stateset_init(&self.w.roots, 16)
        stateset_init(&self.w.seed, 16)
        stateset_init(&self.w.ended, 16)
        self.w.n_levels = cache.trie.t.max_depth + 2
        self.w.levels = <StateSet*>calloc(self.w.n_levels, sizeof(StateSet))
        self.w.marks = <int32_t*>calloc(self.w.n_levels, sizeof(int32_t))
        self.w.level_bytes = <uint32_t*>calloc(8 * self.w.n_levels, sizeof(uint32_t))
        self.w.level_filtered = <uint8_t*>calloc(self.w.n_levels, 1)
        self.w.slices_cap = 16
        self.w.slices = <Slice**>malloc(self.w.slices_cap * sizeof(Slice*))
        self.w.unique = <uint8_t*>malloc(self.w.slices_cap)
        self.w.plan_from = <int32_t*>malloc(self.w.slices_cap * sizeof(int32_t))
        self.w.root_group = <int32_t*>malloc(self.w.slices_cap * sizeof(int32_t))
        self.w.root_next = <int32_t*>malloc(self.w.slices_cap * sizeof(int32_t))
        self.w.risky_bits = <const uint32_t**>malloc(self.w.slices_cap * sizeof(uint32_t*))
        self.w.risky_nodes = <const int32_t**>malloc(self.w.slices_cap * sizeof(int32_t*))
        self.w.n_risky = <int32_t*>malloc(self.w.slices_cap * sizeof(int32_t))
        if (self.w.levels == NULL or self.w.marks == NULL or self.w.level_bytes == NULL
                or self.w.level_filtered == NULL or self.w.slices == NULL
                or self.w.unique == NULL or self.w.plan_from == NULL or self.w.root_group == NULL
                or self.w.root_next == NULL or self.w.risky_bits == NULL
                or self.w.risky_nodes == NULL or self.w.n_risky == NULL):
            raise MemoryError()
        for i in range(self.w.n_levels):  # (deep levels, rarely reached: no memory yet)
            stateset_init(&self.w.levels[i], 0)
        self.w.scratch.cap = 256
        self.w.scratch.n = 0
        self.w.scratch.frames = <Frame*>malloc(self.w.scratch.cap * sizeof(Frame))
        if self.w.scratch.frames == NULL:
            raise MemoryError()
        self.reset()

    def __dealloc__(self):
        cdef int32_t i
        if self.w.levels != NULL:
            for i in range(self.w.n_levels):
                stateset_free(&self.w.levels[i])
            free(self.w.levels)
        free(self.w.marks)
        free(self.w.level_bytes)
        free(self.w.level_filtered)
        free(self.w.slices)
        free(self.w.unique)
        free(self.w.plan_from)
        free(self.w.root_group)
        free(self.w.root_next)
        free(self.w.jobs)
        free(self.w.job_slices)
        free(self.w.job_plan_from)
        free(self.w.job_group)
        free(self.w.job_next)
        free(self.w.job_slots)
        free(<void*>self.w.risky_bits)
        free(<void*>self.w.risky_nodes)
        free(self.w.n_risky)
        free(self.w.text)
        seen_free(&self.w.seen)
        union_bytes_free(&self.w.exits)
        free(self.w.scratch.frames)
        returns_free(&self.w.scratch.returns)
        stamped_free(&self.w.scratch.tops_seen)
        stamped_free(&self.w.scratch.popped)
        stamped_free(&self.w.scratch.seeded)
        stateset_free(&self.live)
        stateset_free(&self.w.roots)
        stateset_free(&self.w.seed)
        stateset_free(&self.w.ended)

    def reset(self):
        """Back to the start of the structure."""
        cdef PState s = self.structure.initial_state()
        stateset_clear(&self.live)
        stateset_add(&self.live, &s)
        self.history = []
        self.text = b""
        self.text_lengths = []
        self.finished = False

    def copy(self) -> Matcher:
        """An independent matcher in the same state (sharing the cache)."""
        cdef Matcher m = Matcher(self.structure, self.cache)
        m.restore(self.snapshot())
        m.history = list(self.history)
        m.text = self.text
        m.text_lengths = list(self.text_lengths)
        m.finished = self.finished
        m.eos_at = self.eos_at
        return m

    # -- committed state ----------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """The live states as bytes."""
        return (<char*>self.live.items)[:self.live.n * sizeof(PState)]

    def restore(self, bytes snap):
        """Replace the live states by a `snapshot()`."""
        cdef int32_t n = len(snap) // sizeof(PState)
        cdef const char* p = snap
        cdef int32_t i
        stateset_clear(&self.live)
        for i in range(n):  # (a snapshot is a set: no state twice)
            stateset_append(&self.live, <const PState*>(p + i * sizeof(PState)))

    def advance(self, bytes data) -> bool:
        """Commit `data` if some live state consumes all of it; otherwise change nothing."""
        cdef Ctx c
        cdef StateSet nxt, cur
        cdef const unsigned char* p = data
        cdef Py_ssize_t i, n = len(data)
        if self.finished:
            return False
        self.structure.ctx(&c)
        text = None
        if self.structure.t.has_unique:
            text = self.text + data
            c.text = text
            c.pos = len(self.text)
        stateset_init(&cur, self.live.n + 4)
        stateset_init(&nxt, self.live.n + 4)
        try:
            # (both sets hold no state twice: appended, not searched, which would take the
            # square of their sizes)
            for i in range(self.live.n):
                stateset_append(&cur, &self.live.items[i])
            if step_bytes(&c, &cur, &nxt, p, n) == 0:
                return False
            self.push_history(data, text)
            stateset_clear(&self.live)
            for i in range(cur.n):
                stateset_append(&self.live, &cur.items[i])
            return True
        finally:
            stateset_free(&cur)
            stateset_free(&nxt)

    def take_special(self, list terms, object data) -> bool:
        """Commit a token that terminals `terms` name (SpecialToken): the successors of the
        live states on it, and on its bytes `data` too when it is a text token (None: it is
        not); False (state unchanged) when there are none."""
        cdef Ctx c
        cdef StateSet nxt, cur, spare
        cdef int32_t i, term
        cdef const unsigned char* p
        if self.finished:
            return False
        self.structure.ctx(&c)
        if self.structure.t.has_unique:
            c.text = self.text
            c.pos = len(self.text)
        stateset_init(&nxt, self.live.n + 4)
        stateset_init(&cur, self.live.n + 4)
        stateset_init(&spare, self.live.n + 4)
        try:
            for term in terms:
                for i in range(self.live.n):
                    take_special(&c, &self.live.items[i], term, &nxt)
            if data is not None:  # (never with unique arrays: see SliceCache)
                p = <bytes>data
                for i in range(self.live.n):
                    stateset_add(&cur, &self.live.items[i])
                if step_bytes(&c, &cur, &spare, p, len(data)):
                    for i in range(cur.n):
                        stateset_add(&nxt, &cur.items[i])
            if nxt.n == 0:
                return False
            self.push_history(b"")
            stateset_clear(&self.live)
            for i in range(nxt.n):
                stateset_add(&self.live, &nxt.items[i])
            return True
        finally:
            stateset_free(&nxt)
            stateset_free(&cur)
            stateset_free(&spare)

    def commit_eos(self) -> bool:
        """Commit an end-of-sequence token: allowed only when the structure is complete, and
        again after that (the mask of a finished sequence allows EOS, so that a batch can pad
        it; a further EOS changes nothing but counts for `rollback`)."""
        if not self.finished:
            if not self.is_accepting():
                return False
            self.finished = True
            self.eos_at = len(self.history) + 1
        self.push_history(b"")
        return True

    cdef int push_history(self, bytes data, object text=None) except -1:
        """Before committing `data`: the snapshot to roll back to. `text`: the committed text
        followed by `data`, when the caller has it already."""
        self.history.append(self.snapshot())
        if self.structure.t.has_unique:
            self.text_lengths.append(len(self.text))
            self.text = self.text + data if text is None else text
        return 0

    def consume_token(self, object token_id) -> bool:
        """Commit one token id if the structure allows it; False (state unchanged) otherwise.

        Raises:
            ValueError: the id is out of range.
        """
        if not 0 <= token_id < self.cache.vocab_size:
            raise ValueError(f"token id {token_id} is out of range "
                             f"(0 <= id < {self.cache.vocab_size})")
        kind = self.cache.token_kind[<Py_ssize_t>token_id]
        terms = self.cache.special_terms_of.get(token_id)
        if terms is not None:
            if self.take_special(terms, self.cache.tokens[token_id] if kind == TOKEN_TEXT
                                 else None):
                return True
            return kind == TOKEN_EOS and self.commit_eos()
        if kind == TOKEN_TEXT:
            return self.advance(<bytes>self.cache.tokens[token_id])
        if kind == TOKEN_EOS:
            return self.commit_eos()
        return False

    def rollback(self, object n):
        """Undo the last `n` committed tokens.

        Raises:
            TypeError: n is not an int.
            ValueError: fewer than n tokens were committed.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"rollback takes an int, not {type(n).__name__}")
        if n < 0 or n > len(self.history):
            raise ValueError(f"cannot roll back {n} tokens: {len(self.history)} were committed")
        if n == 0:
            return
        cdef Py_ssize_t keep = len(self.history) - n
        snap = self.history[keep]
        del self.history[keep:]
        self.restore(snap)
        if self.structure.t.has_unique:
            self.text = self.text[:self.text_lengths[keep]]
            del self.text_lengths[keep:]
        if keep < self.eos_at:
            self.finished = False

    def is_accepting(self) -> bool:
        """True when the tokens committed so far complete the structure."""
        cdef Ctx c
        cdef int32_t i
        self.structure.ctx(&c)
        for i in range(self.live.n):
            if is_accepting(&c, &self.live.items[i]):
                return True
        return False

    def steppers(self) -> list:
        """The live states as Stepper values (for healing and inspection), each with the
        committed bytes as what it has consumed."""
        history = (None, self.text) if self.text else None
        return [Stepper.make(self.structure, self.live.items[i], history, b"")
                for i in range(self.live.n)]

    # -- masks --------------------------------------------------------------------------------
    def fill(self, cnp.uint32_t[::1] out) -> None:
        """Write the mask into `out` (ceil(V/32) words): bit i set = token i allowed."""
        if out.shape[0] != self.cache.n_words:
            raise ValueError(f"mask row has {out.shape[0]} words, expected {self.cache.n_words}")
        self.compute(&out[0])

    def fill_row(self, cnp.ndarray bitmask, Py_ssize_t index) -> None:
        """Write the mask into row `index` of a C-contiguous (B, ceil(V/32)) int32 array.

        Raises:
            ValueError: wrong dtype, shape, layout or index.
        """
        if (cnp.PyArray_TYPE(bitmask) != cnp.NPY_INT32 or cnp.PyArray_NDIM(bitmask) != 2
                or not cnp.PyArray_IS_C_CONTIGUOUS(bitmask)):
            raise ValueError(f"bitmask must be a C-contiguous 2-D int32 array, got "
                             f"{(<object>bitmask).dtype} with shape {(<object>bitmask).shape}")
        if cnp.PyArray_DIM(bitmask, 1) != self.cache.n_words:
            raise ValueError(f"bitmask rows have {cnp.PyArray_DIM(bitmask, 1)} words; this "
                             f"vocabulary needs {self.cache.n_words}")
        if index < 0 or index >= cnp.PyArray_DIM(bitmask, 0):
            raise ValueError(f"row index {index} out of range for a batch of "
                             f"{cnp.PyArray_DIM(bitmask, 0)}")
        cdef uint32_t* row = <uint32_t*>cnp.PyArray_DATA(bitmask) + index * self.cache.n_words
        self.compute(row)

    def _hold(self) -> None:
        """Take the walk buffers as a walk in another thread does (tests); `_release` gives
        them back."""
        self.claim()

    def _release(self) -> None:
        self.busy = False

    cdef int claim(self) except -1:
        """Take the walk buffers. They are one per engine: a second walk at the same time (the
        engine shared by two threads) would corrupt both masks, so it is refused."""
        if self.busy:
            raise RuntimeError("this engine is computing a mask in another thread; an engine "
                               "is one sequence: give each thread its own (engine.copy())")
        self.busy = True
        return 0

    cdef int compute(self, uint32_t* out) except -1:
        key = self.lookup_memo(out)
        if key is None:
            return 0
        self.claim()
        try:
            self.prepare()
            while True:
                try:
                    with nogil:
                        walk(&self.w, out)
                    break
                except WideWalk:  # (again, merging: it cannot be raised twice)
                    rewind(&self.w, out, self.cache.n_words)
            self.finish(key, out)
        finally:
            self._keep.clear()
            self.busy = False
        return 0

    cdef object lookup_memo(self, uint32_t* out):
        """Write the mask if it is known without a walk and return None; otherwise clear
        `out` and return the memo key for `finish`."""
        cdef SliceCache cache = self.cache
        cdef int32_t i, n_words = cache.n_words
        cdef cnp.ndarray memo
        cdef Ctx c
        if self.finished:
            memset(out, 0, n_words * sizeof(uint32_t))
            for i in range(cache.n_eos):
                set_bit(out, cache.eos_ids[i])
            return None
        key = self.snapshot()
        self.structure.ctx(&c)
        if self.structure.t.has_unique and any_in_unique(&c, &self.live):
            memset(out, 0, n_words * sizeof(uint32_t))
            return False  # the same states after other text may allow other tokens
        memo = cache.masks.pop(key, None)  # pop and re-insert: see SliceCache.get
        if memo is not None:
            cache.masks[key] = memo
            memcpy(out, cnp.PyArray_DATA(memo), n_words * sizeof(uint32_t))
            return None
        memset(out, 0, n_words * sizeof(uint32_t))
        return key

    cdef int finish(self, object key, uint32_t* out) except -1:
        """After the walk: EOS bits, and the mask into the memo."""
        cdef SliceCache cache = self.cache
        cdef int32_t i, n_words = cache.n_words
        cdef cnp.ndarray memo
        global walk_subtrees_taken
        walk_subtrees_taken += self.w.taken
        self.w.taken = 0
        self._keep.clear()
        if self.root_accepting:
            for i in range(cache.n_eos):
                set_bit(out, cache.eos_ids[i])
        if self.special_hits:
            for token_id in self.special_hits:
                set_bit(out, token_id)
            self.special_hits = []
        if cache.max_masks > 0 and key is not False:
            memo = np.empty(n_words, dtype=np.uint32)
            memcpy(cnp.PyArray_DATA(memo), out, n_words * sizeof(uint32_t))
            cache.masks[key] = memo
            if len(cache.masks) > cache.max_masks:
                cache.masks.popitem(last=False)
        return 0

    cdef int prepare(self) except -1:
        """With the GIL: the roots (live states inside or before a terminal) and their cache
        entries (built here on a miss)."""
        cdef Ctx c
        cdef int32_t i
        cdef const PState* s
        cdef SliceEntry entry
        cdef StampedIds* popped
        cdef WalkMerging roots_merge   # (roots past the bound merge: see stateset_add_in)
        cdef bint held
        roots_merge.on = True
        roots_merge.check_at = 0
        roots_merge.no_hold = not self.w.merging.on  # (the roots merge as the walks do)
        self.structure.ctx(&c)
        c.scratch = &self.w.scratch
        c.seen_scratch = &self.w.seen
        c.walk_merging = &roots_merge
        c.exits = &self.w.exits
        self.w.scratch.n = 0
        seen_reset(&self.w.seen)
        if self.structure.t.has_unique:
            self.load_text(b"")
            c.text = self.w.text
            c.pos = self.w.base
        stateset_clear(&self.w.roots)
        widen_walk_set(&c, &self.w.merging, &self.w.roots)
        self.root_accepting = False
        for i in range(self.live.n):
            s = &self.live.items[i]
            if not self.root_accepting and is_accepting(&c, s):
                self.root_accepting = True
            if s.term >= 0:  # (live is a set: appended, not searched ...)
                stateset_append(&self.w.roots, s)
        popped = popped_set(&c)  # (the live states share their stacks' unions: popped once)
        held = returns_begin(&c)  # (... and their pops are expanded together)
        try:
            for i in range(self.live.n):
                s = &self.live.items[i]
                if s.term < 0:  # before a terminal: one root per terminal that can start here
                    expand_in(&c, s, NO_BYTE, &self.w.roots, popped)  # (... found by its search)
            if held:
                returns_end(&c, NO_BYTE, &self.w.roots, popped)
        finally:
            if held:
                c.returns = NULL
        if self.structure.t.has_special:
            self.prepare_special(&c)
        merge_walk_set(&c, &self.w.merging, &self.w.roots)  # (the plan pops them per byte)
        if self.w.roots.n > self.w.slices_cap:
            self.w.slices_cap = self.w.roots.n
            self.w.slices = <Slice**>realloc(self.w.slices, self.w.slices_cap * sizeof(Slice*))
            self.w.unique = <uint8_t*>realloc(self.w.unique, self.w.slices_cap)
            self.w.plan_from = <int32_t*>realloc(self.w.plan_from,
                                                   self.w.slices_cap * sizeof(int32_t))
            self.w.root_group = <int32_t*>realloc(self.w.root_group,
                                                    self.w.slices_cap * sizeof(int32_t))
            self.w.root_next = <int32_t*>realloc(self.w.root_next,
                                                   self.w.slices_cap * sizeof(int32_t))
            self.w.risky_bits = <const uint32_t**>realloc(
                <void*>self.w.risky_bits, self.w.slices_cap * sizeof(uint32_t*))
            self.w.risky_nodes = <const int32_t**>realloc(
                <void*>self.w.risky_nodes, self.w.slices_cap * sizeof(int32_t*))
            self.w.n_risky = <int32_t*>realloc(self.w.n_risky, self.w.slices_cap * sizeof(int32_t))
            if (self.w.slices == NULL or self.w.unique == NULL or self.w.plan_from == NULL
                    or self.w.root_group == NULL or self.w.root_next == NULL
                    or self.w.risky_bits == NULL
                    or self.w.risky_nodes == NULL or self.w.n_risky == NULL):
                raise MemoryError()
        self._keep.clear()
        cdef cnp.ndarray bits, nodes
        cdef bint after_zero = (self.structure.t.has_unique and self.w.base > 0
                                and self.w.text[self.w.base - 1] in (48, 46))
        cdef dict firsts = {}  # {entry: its first root}: roots of one entry are one group
        cdef int32_t first
        for i in range(self.w.roots.n):
            entry = self.cache.get(&self.w.roots.items[i])
            self._keep.append(entry)
            self.w.slices[i] = &entry.s
            # (in a unique array each root is its own group: a step may depend on the text)
            first = i if self.structure.t.has_unique else firsts.setdefault(entry, i)
            self.w.root_group[i] = first
            self.w.root_next[i] = -1
            if first != i:
                self.w.root_next[i] = self.w.root_next[first]
                self.w.root_next[first] = i
            self.w.unique[i] = (self.structure.t.has_unique
                                and in_unique(&c, &self.w.roots.items[i]))
            if self.w.unique[i]:
                bits, nodes = self.cache.risky_of(&self.w.roots.items[i], entry, after_zero)
                self._keep.append((bits, nodes))
                self.w.risky_bits[i] = <const uint32_t*>cnp.PyArray_DATA(bits)
                self.w.risky_nodes[i] = <const int32_t*>cnp.PyArray_DATA(nodes)
                self.w.n_risky[i] = len(nodes)
            # in a unique array a step depends on the bytes before it: no entry below a node
            self.w.plan_from[i] = (NOT_PLANNED if self.structure.t.has_unique
                                   else min_planned_subtree)
        self.plan(&c)
        return 0

    cdef int plan(self, Ctx* c) except -1:
        """Turn the roots' exits into large subtrees into jobs: each state the exit byte leads
        to becomes a root of its own below the exit node, with that subtree's cached entry, so
        that `walk` walks only the small subtrees. A job's exits are planned in turn, those
        of a group's jobs (one entry, stacks that differ) together: their stacks share
        unions, popped once for the group (planned one by one, an ambiguous grammar's n jobs
        each popped unions of about n members). Past max_jobs (checked between groups) the rest
        is walked."""
        global plan_epochs
        plan_epochs += 1
        self.plan_epoch = plan_epochs
        if self.w.n_jobs > 0:  # (the last plan's jobs are still counted: their slots cleared)
            memset(self.w.job_slots, 0xFF, self.w.n_job_slots * sizeof(int32_t))
        cdef Walker* w = &self.w
        cdef int32_t i = 0, j, first, n_roots = w.roots.n, cap = 0
        # per group's first job: its jobs of a lower index than this are planned
        cdef int32_t* planned_to = NULL
        w.n_jobs = 0
        try:
            while i < n_roots + w.n_jobs:
                if i < n_roots:
                    if w.plan_from[i] != NOT_PLANNED and w.n_jobs >= max_jobs:
                        break
                    if w.root_group[i] == i:
                        self.plan_group(c, False, i, i, w.slices[i],
                                        group_plan_from(w.plan_from, w.root_next, i))
                    i += 1
                    continue
                j = i - n_roots
                if w.job_plan_from[j] != NOT_PLANNED and w.n_jobs >= max_jobs:
                    break
                i += 1
                if w.n_jobs > cap:
                    cap = max(64, 2 * w.n_jobs)
                    planned_to = <int32_t*>realloc(planned_to, cap * sizeof(int32_t))
                    if planned_to == NULL:
                        raise MemoryError()
                first = w.job_group[j]
                if first == j:  # the group's jobs so far (the first, the others newest first)
                    planned_to[j] = w.n_jobs
                    self.plan_group(c, True, j, j, w.job_slices[j], w.job_plan_from[j])
                elif j >= planned_to[first]:  # jobs that joined the group once it was planned
                    planned_to[first] = w.n_jobs
                    self.plan_group(c, True, w.job_next[first], j, w.job_slices[j],
                                    w.job_plan_from[j])
            else:
                return 0
            for j in range(i, n_roots):  # past max_jobs: the rest walk every exit
                w.plan_from[j] = NOT_PLANNED
            for j in range(max(i - n_roots, 0), w.n_jobs):
                w.job_plan_from[j] = NOT_PLANNED
        finally:
            free(planned_to)
        return 0

    cdef int plan_group(self, Ctx* c, bint jobs, int32_t start, int32_t lo, const Slice* sl,
                        int32_t smallest) except -1:
        """`plan` for the root (or with `jobs`, the job) `start` and those chained from it
        down to index `lo`, all of whose entry is `sl`: each exit byte into a subtree of
        `smallest` nodes or more leads them to states that become jobs below its exit nodes
        (add_job moves the jobs: they are read anew after it)."""
        cdef Walker* w = &self.w
        cdef const Trie* tr = w.trie
        cdef int32_t j, k, b, few = few_seed_states()
        cdef uint32_t bytes8[8]
        cdef uint32_t bits
        cdef StampedIds* popped
        cdef StampedIds* walk_popped
        if smallest == NOT_PLANNED:
            return 0
        memset(bytes8, 0, sizeof(bytes8))
        walk_popped = popped_set(c)  # (the states share their stacks' unions: popped once)
        j = start
        while j >= lo:
            exit_bytes_from(c, &w.jobs[j] if jobs else &w.roots.items[j], bytes8, walk_popped)
            j = w.job_next[j] if jobs else w.root_next[j]
            if j >= lo and covers(bytes8, sl.exit_bytes):  # (the others add no byte with exits)
                break
        for k in range(8):
            bits = bytes8[k] & sl.exit_bytes[k]
            while bits:
                b = 32 * k + ctz32(bits)
                bits &= bits - 1
                for j in range(sl.exit_off[b], sl.exit_off[b + 1]):
                    if large_subtree(w, sl.exit_nodes[j], smallest, True):
                        break
                else:
                    continue
                # the states b leads to (their frames stay in the scratch for the walk),
                # merged once they are a few and into jobs if still more: the group's together
                # would pass the bound on live states where each alone did not (the unions
                # popped stay popped: what they led to is jobs already)
                # (the walk's popped set, done with the exit bytes: a set of this byte's own
                # regrew from a few hashed slots for every byte)
                popped = popped_set(c)
                stateset_clear(&w.seed)
                j = start
                while j >= lo:
                    widen_walk_set(c, c.walk_merging, &w.seed)
                    # (a job's pops are expanded together, not those of a batch of jobs:
                    # held until the seed held a few states, they were expanded at once into
                    # a seed past the bound that one by one had not passed it)
                    expand_in(c, &w.jobs[j] if jobs else &w.roots.items[j], b, &w.seed,
                              popped)
                    j = w.job_next[j] if jobs else w.root_next[j]
                    if w.seed.n > few:
                        merge_made(c, &w.seed)
                    if j < lo or w.seed.n > few:
                        self.add_jobs(c, sl, b, smallest)
        return 0

    cdef int add_jobs(self, Ctx* c, const Slice* sl, int32_t b, int32_t smallest) except -1:
        """The states in the seed, which byte b led to, as jobs below b's exit nodes of
        `smallest` nodes or more (see plan_group); the seed emptied. A state whose terminal
        ended on b (term -1) starts the next ones below: those states are jobs in turn, a
        few at a time (the seed is a few states, each of which may start many)."""
        cdef Walker* w = &self.w
        cdef int32_t k, few = few_seed_states()
        cdef StampedIds* popped = &w.scratch.seeded  # (plan_group's set is in use)
        # (copied out first: growing, the set may merge in place, moving states not yet read)
        stateset_clear(&w.ended)
        for k in range(w.seed.n):
            if w.seed.items[k].term < 0:
                stateset_append(&w.ended, &w.seed.items[k])
        self.seed_jobs(sl, b, smallest)
        stamped_clear(popped)
        for k in range(w.ended.n):
            # (not wide: its states become jobs, each merged only with its group's as it is
            # walked, and more jobs unmerged made the masks of grammar_bench's `calling each
            # other` 10% longer, for 8% less on `three rules`)
            expand_in(c, &w.ended.items[k], NO_BYTE, &w.seed, popped)
            if w.seed.n > few or k == w.ended.n - 1:
                self.seed_jobs(sl, b, smallest)
        return 0

    cdef int seed_jobs(self, const Slice* sl, int32_t b, int32_t smallest) except -1:
        """The seed's states inside a terminal as jobs below b's exit nodes of `smallest`
        nodes or more; the seed emptied."""
        cdef Walker* w = &self.w
        cdef int32_t j, k, x
        for j in range(sl.exit_off[b], sl.exit_off[b + 1]):
            x = sl.exit_nodes[j]
            if large_subtree(w, x, smallest, True):
                for k in range(w.seed.n):
                    if w.seed.items[k].term >= 0:
                        self.add_job(&w.seed.items[k], x)
        stateset_clear(&w.seed)
        return 0

    cdef int add_job(self, const PState* s, int32_t node) except -1:
        """State `s` (its terminal started on trie node `node`'s byte) as a job below `node`,
        in the group of that subtree entry's jobs (unless the group holds it already). The
        states of a group differ only in what follows their terminal (the stack): `walk`
        walks their exits once, from the union of what each leads to."""
        cdef Walker* w = &self.w
        cdef int32_t cap, j, first = -1
        cdef uint32_t slot
        cdef SliceEntry entry = self.cache.subtree_entry(s, node)
        # (another matcher's plan may take the entry over between two jobs: then it gets a
        # second group here, walked on its own; never a group of another plan)
        if entry.plan_epoch == self.plan_epoch:
            first = entry.plan_group
            slot = job_hash(s, first) & (w.n_job_slots - 1)
            while w.job_slots[slot] >= 0:
                j = w.job_slots[slot]
                if w.job_group[j] == first and memcmp(&w.jobs[j], s, sizeof(PState)) == 0:
                    return 0
                slot = (slot + 1) & (w.n_job_slots - 1)
        if w.n_jobs == w.jobs_cap:
            cap = max(64, 2 * w.jobs_cap)
            w.jobs = <PState*>realloc(w.jobs, cap * sizeof(PState))
            w.job_slices = <Slice**>realloc(w.job_slices, cap * sizeof(Slice*))
            w.job_plan_from = <int32_t*>realloc(w.job_plan_from, cap * sizeof(int32_t))
            w.job_group = <int32_t*>realloc(w.job_group, cap * sizeof(int32_t))
            w.job_next = <int32_t*>realloc(w.job_next, cap * sizeof(int32_t))
            if (w.jobs == NULL or w.job_slices == NULL or w.job_plan_from == NULL
                    or w.job_group == NULL or w.job_next == NULL):
                raise MemoryError()
            w.jobs_cap = cap
        j = w.n_jobs
        w.jobs[j] = s[0]
        w.job_slices[j] = &entry.s
        w.job_plan_from[j] = min_planned_subtree
        if first < 0:
            self._keep.append(entry)
            entry.plan_epoch = self.plan_epoch
            entry.plan_group = j
            w.job_group[j] = j
            w.job_next[j] = -1
        else:
            w.job_group[j] = first
            w.job_next[j] = w.job_next[first]
            w.job_next[first] = j
        w.n_jobs += 1
        if 2 * w.n_jobs > w.n_job_slots:
            self.grow_job_slots()
        else:
            slot = job_hash(s, w.job_group[j]) & (w.n_job_slots - 1)
            while w.job_slots[slot] >= 0:
                slot = (slot + 1) & (w.n_job_slots - 1)
            w.job_slots[slot] = j
        return 0

    cdef int grow_job_slots(self) except -1:
        """Twice the slots (at least 4 per job), every job in them again."""
        cdef Walker* w = &self.w
        cdef int32_t n = max(1024, 2 * w.n_job_slots), j
        cdef uint32_t slot
        while n < 4 * w.n_jobs:
            n *= 2
        cdef int32_t* grown = <int32_t*>realloc(w.job_slots, n * sizeof(int32_t))
        if grown == NULL:
            raise MemoryError()
        w.job_slots = grown
        w.n_job_slots = n
        memset(w.job_slots, 0xFF, n * sizeof(int32_t))
        for j in range(w.n_jobs):
            slot = job_hash(&w.jobs[j], w.job_group[j]) & (n - 1)
            while w.job_slots[slot] >= 0:
                slot = (slot + 1) & (n - 1)
            w.job_slots[slot] = j
        return 0

    cdef int prepare_special(self, Ctx* c) except -1:
        """The special tokens the live states allow (into `special_hits`, for `finish`), and
        the roots less those at a special token's terminal (the walk of the trie is for
        text)."""
        cdef const Tables* t = &self.structure.t
        cdef cnp.ndarray flags = np.zeros(t.n_terms, dtype=np.uint8)
        cdef uint8_t* f = <uint8_t*>cnp.PyArray_DATA(flags)
        cdef StateSet scratch
        cdef int32_t i, k = 0
        stateset_init(&scratch, 8)
        try:
            for i in range(self.live.n):
                special_terms(c, &self.live.items[i], &scratch, f)
        finally:
            stateset_free(&scratch)
        for i in range(self.w.roots.n):
            if not t.term_special[self.w.roots.items[i].term]:
                self.w.roots.items[k] = self.w.roots.items[i]
                k += 1
        stateset_cut(&self.w.roots, k)
        ids = self.cache.special_ids
        self.special_hits = [ids[term] for term in np.flatnonzero(flags) if term in ids]
        return 0

    cdef int load_text(self, bytes extra) except -1:
        """The committed bytes and `extra` into the walk's text buffer, with room for a token
        after; w.base is where `extra` starts."""
        cdef Py_ssize_t n = len(self.text)
        cdef int64_t need = n + len(extra) + self.w.n_levels + 1
        cdef uint8_t* grown
        if need > self.w.text_cap:
            grown = <uint8_t*>realloc(self.w.text, need)
            if grown == NULL:
                raise MemoryError()
            self.w.text = grown
            self.w.text_cap = need
        if n:
            memcpy(self.w.text, <const char*>self.text, n)
        if extra:
            memcpy(self.w.text + n, <const char*>extra, len(extra))
        self.w.base = n
        return 0

cdef inline void walker_ctx(Walker* w, Ctx* c) noexcept nogil:
    c.t = w.tables
    c.arena = w.arena
    c.scratch = &w.scratch
    c.seen = w.seen_kept
    c.seen_scratch = &w.seen
    c.text = w.text
    c.pos = w.base
    c.walk_merging = &w.merging
    c.popped = 0
    c.exits = &w.exits
    c.first_in = NULL
    c.returns = NULL


cdef inline uint32_t job_hash(const PState* s, int32_t group) noexcept nogil:
    cdef uint64_t h = ((<uint64_t><uint32_t>s.frame * 0x9E3779B97F4A7C15u)
                       ^ (<uint64_t><uint32_t>s.node * 0xC2B2AE3D27D4EB4Fu)
                       ^ (<uint64_t><uint32_t>s.term * 0x165667B19E3779F9u)
                       ^ (<uint64_t><uint32_t>s.dstate * 0x85EBCA77C2B2AE63u)
                       ^ (<uint64_t><uint32_t>s.count * 0x27D4EB2F165667C5u)
                       ^ (<uint64_t><uint32_t>s.props * 0x94D049BB133111EBu)
                       ^ (<uint64_t><uint32_t>s.item * 0xBF58476D1CE4E5B9u)
                       ^ (<uint64_t><uint32_t>s.seen * 0xD6E8FEB86659FD93u)
                       ^ s.keys ^ (<uint64_t><uint32_t>group << 32))
    h ^= h >> 29
    h *= 0xBF58476D1CE4E5B9u
    return <uint32_t>(h ^ (h >> 32))


cdef inline int32_t few_seed_states() noexcept nogil:
    """How many states a plan's seed holds before they are merged or made jobs: an eighth of
    the bound on live states (plan_group, add_jobs)."""
    return live_bound() // 8


cdef inline bint large_subtree(const Walker* w, int32_t node, int32_t smallest,
                               bint keep) noexcept nogil:
    """Whether the walk below trie node `node` may step into `smallest` nodes or more (the
    node counted): the subtree's size, or where most bytes are no terminal's (`large_memo`
    is set) and the mask starts from MANY_ROOTS states or more, the nodes the walk may step
    into: whose byte some terminal takes, below nodes that are. `three rules` of
    grammar_bench takes a, b and c: the few tokens of those letters below a node of
    thousands were planned as jobs, 4,500 a mask (one per state an exit byte leads to), at
    twice the cost of walking them. From fewer states the jobs are few, and their cached
    entries cost less than a walk (chess.gbnf).

    Each node's answer is kept in the cache with `keep`, which only the plan passes: it holds
    the GIL, so it reads whole what matchers of one cache in other threads kept. A walk
    (without it) reads its own plan's answers, or may read one half-written as not large, and
    then walks a subtree that was planned too (the same tokens): never the other way round.
    (The answers are for one size: tests change it, with no mask under way in another
    thread.)"""
    global narrow_walked
    cdef const Trie* tr = w.trie
    cdef int32_t i = node + 1, end = tr.node_end[node], n = 1, words = tr.n_nodes // 32 + 1
    cdef uint32_t* known
    cdef uint32_t* large_bits
    if end - node < smallest:
        return False
    if w.large_memo == NULL or w.roots.n < MANY_ROOTS:
        return True
    known, large_bits = w.large_memo + 1, w.large_memo + 1 + words
    if w.large_memo[0] == <uint32_t>smallest:
        if has_bit(known, node):
            return has_bit(large_bits, node)
    elif keep:  # (answers for another size: tests change it)
        memset(known, 0, 2 * words * sizeof(uint32_t))
        w.large_memo[0] = smallest
    while i < end and n < smallest:
        if has_bit(w.tables.alphabet, tr.node_byte[i]):
            n += 1
            i += 1
        else:
            i = tr.node_end[i]
    if keep:
        if n >= smallest:
            set_bit(large_bits, node)
        else:
            narrow_walked += 1
        set_bit(known, node)
    return n >= smallest


# --- the walk of the trie: trie_walk.pxi ----------------------------------------------------
include "trie_walk.pxi"


cdef void check_bitmask(cnp.ndarray bitmask, Py_ssize_t rows, int32_t n_words) except *:
    if (cnp.PyArray_TYPE(bitmask) != cnp.NPY_INT32 or cnp.PyArray_NDIM(bitmask) != 2
            or not cnp.PyArray_IS_C_CONTIGUOUS(bitmask)):
        raise ValueError(f"bitmask must be a C-contiguous 2-D int32 array, got "
                         f"{(<object>bitmask).dtype} with shape {(<object>bitmask).shape}")
    if cnp.PyArray_DIM(bitmask, 1) != n_words:
        raise ValueError(f"bitmask rows have {cnp.PyArray_DIM(bitmask, 1)} words; this "
                         f"vocabulary needs {n_words}")
    if cnp.PyArray_DIM(bitmask, 0) < rows:
        raise ValueError(f"bitmask has {cnp.PyArray_DIM(bitmask, 0)} rows for {rows} engines")


cdef void rewind(Walker* w, uint32_t* out, int32_t n_words) noexcept nogil:
    """Undo a walk that raised WideWalk, so that it can be made again: its frames and the
    mask row it was filling (cleared before the walk)."""
    w.scratch.n = w.walk_from
    memset(out, 0, n_words * sizeof(uint32_t))


def _walk_range(cnp.uintp_t[::1] walkers, cnp.uintp_t[::1] rows, Py_ssize_t lo, Py_ssize_t hi,
                int32_t n_words):
    """Run the walks lo..hi-1 without the GIL (one thread's share of a batch)."""
    cdef Py_ssize_t i = lo
    while i < hi:
        try:
            with nogil:
                while i < hi:
                    walk(<Walker*>walkers[i], <uint32_t*>rows[i])
                    i += 1
        except WideWalk:  # (walk i again, merging)
            rewind(<Walker*>walkers[i], <uint32_t*>rows[i], n_words)


def fill_batch(list matchers, cnp.ndarray bitmask, object pool, int n_threads):
    """Fill row i of `bitmask` for matchers[i]. Memo look-ups and the preparation of each
    walk run here with the GIL; the walks themselves run in `n_threads` shares, all but one
    in `pool` (a concurrent.futures executor), without the GIL.

    Raises:
        ValueError: the bitmask has the wrong layout, or fewer rows than matchers.
    """
    cdef Py_ssize_t i, n = 0, n_rows = len(matchers)
    cdef Matcher m
    cdef uint32_t* row
    cdef int32_t n_words
    if n_rows == 0:
        return
    n_words = (<Matcher>matchers[0]).cache.n_words
    check_bitmask(bitmask, n_rows, n_words)
    walkers = np.empty(n_rows, dtype=np.uintp)
    rows = np.empty(n_rows, dtype=np.uintp)
    cdef cnp.uintp_t[::1] wv = walkers
    cdef cnp.uintp_t[::1] rv = rows
    cdef uint32_t* base = <uint32_t*>cnp.PyArray_DATA(bitmask)
    pending = []
    claimed = []
    # an engine in several rows is walked once (its walk buffers cannot serve two threads)
    # and its row copied
    first_row = {}
    repeats = []
    try:
        for i in range(n_rows):
            m = matchers[i]
            if m.cache.n_words != n_words:
                raise ValueError("the engines of a batch must share one vocabulary size")
            if id(m) in first_row:
                repeats.append((i, first_row[id(m)]))
                continue
            first_row[id(m)] = i
            row = base + i * n_words
            key = m.lookup_memo(row)
            if key is None:
                continue
            m.claim()
            claimed.append(m)
            m.prepare()
            pending.append((m, key, <uintptr_t>row))
            wv[n] = <uintptr_t>&m.w
            rv[n] = <uintptr_t>row
            n += 1
        shares = max(1, min(n_threads, n))
        bounds = [n * k // shares for k in range(shares + 1)]
        futures = [pool.submit(_walk_range, walkers, rows, bounds[k], bounds[k + 1], n_words)
                   for k in range(1, shares)]
        _walk_range(walkers, rows, bounds[0], bounds[1], n_words)
        for f in futures:
            f.result()
        for m, key, address in pending:
            m.finish(key, <uint32_t*><uintptr_t>address)
    finally:
        for m in claimed:
            m._keep.clear()
            m.busy = False
    cdef Py_ssize_t src
    for i, src in repeats:
        memcpy(base + i * n_words, base + src * n_words, n_words * sizeof(uint32_t))
