# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled structures: flat tables, the frame arena and the byte step of the parser."""

from libc.stdlib cimport calloc, malloc, realloc, free
from libc.string cimport memcmp, memset, memcpy
from libc.stdint cimport uintptr_t

from pse._core.canonical cimport canonical, string_prefix
from pse._core.int_sort cimport sort_descending

import numpy as np
cimport numpy as cnp

cnp.import_array()


from pse.errors import GrammarError


class WideWalk(Exception):
    """A mask walk's state set was found to merge, or neared the bound, before its engine's
    walks merged their sets: the walk is undone and made again, merging at every byte (see
    step_set)."""

# --- state sets -------------------------------------------------------------------------------

# The most states a set may hold (pse.limits.set_max_live_states): identical states merge, so
# only a structure whose live parses differ in their stacks (alternatives sharing a long prefix,
# nested) gets near it; past it a step would be slow (the merge is quadratic), so it raises.
# A set merged once made (see step_set) holds up to WIDE_STEP times as many while it is made.
cdef int32_t max_live = 1024
cdef int64_t wide_merges = 0  # merges of wide sets while they were made (see stateset_add_in;
                              # counted atomically: walks run in threads without the GIL)
cdef int64_t grouped_returns = 0  # groups of pops expanded as one (see expand_returns; so too)

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline void pse_count_one(int64_t* n) { _InterlockedIncrement64((volatile __int64*)n); }
    #else
    static inline void pse_count_one(int64_t* n) { __atomic_fetch_add(n, 1, __ATOMIC_RELAXED); }
    #endif
    """
    void pse_count_one(int64_t* n) noexcept nogil


def _wide_merges() -> int:
    """How many wide sets merged while they were made, so far (for tests)."""
    return wide_merges


def _grouped_returns() -> int:
    """How many groups of a mask walk's pops were expanded as one, so far (for tests)."""
    return grouped_returns


def get_max_live_states() -> int:
    """The bound on parser states in one set (see pse.limits)."""
    return max_live


cdef int32_t live_bound() noexcept nogil:
    """max_live, for the mask's plan (see Matcher.plan_group)."""
    return max_live


def set_max_live_states(int n) -> None:
    """Set the bound on parser states in one set (see pse.limits; checked there)."""
    global max_live
    max_live = n


cdef enum:
    WIDE_STEP = 16   # a wide set (see step_set) merges while it is made from this many times
                     # max_live states (on three rules calling each other every way at once,
                     # 23% less a token; in a first try, 4 took 20% less and 16 27%) ...
    WIDE_MOST = 1 << 24  # ... or from this many, if more than max_live (a set's counts and
                         # sizes are 32-bit)
    INDEX_FROM = 32  # a set this large finds equal states through its hash index (an
                     # ambiguous grammar's: a linear search made each byte quadratic)
    MAX_WALK_FRAMES = 1 << 23  # a mask walk's scratch frames (40 bytes each, 320 MiB), past
                               # which it is "too ambiguous": its frames are not interned, and
                               # random ambiguous grammars of three rules made a walk's grow
                               # past 18 GB (the longest bench text, 1.1 million)


cdef int stateset_init(StateSet* s, int32_t cap) except -1 nogil:
    """An empty set with room for `cap` states (0: no memory until the first one)."""
    s.items = NULL
    if cap > 0:
        s.items = <PState*>malloc(cap * sizeof(PState))
        if s.items == NULL:
            with gil:
                raise MemoryError()
    s.n = 0
    s.cap = cap
    s.slots = NULL
    s.slot_mask = -1
    s.indexed = 0
    s.stamp = 1
    s.wide = False
    return 0


cdef void stateset_free(StateSet* s) noexcept nogil:
    free(s.items)
    free(s.slots)
    s.items = NULL
    s.slots = NULL
    s.n = s.cap = 0
    s.indexed = 0


cdef inline void drop_index(StateSet* s) noexcept nogil:
    """Empty s's index, in O(1): a new stamp."""
    s.indexed = 0
    s.stamp += 1
    if s.stamp == 0 and s.slots != NULL:  # (wrapped: old stamps would read as current)
        memset(s.slots, 0, (s.slot_mask + 1) * sizeof(uint64_t))
        s.stamp = 1


cdef void stateset_clear(StateSet* s) noexcept nogil:
    """Empty `s` (no longer wide: see step_set)."""
    stateset_cut(s, 0)
    s.wide = False


cdef void stateset_cut(StateSet* s, int32_t n) noexcept nogil:
    """Keep the first n items of `s` (after the caller has rearranged them)."""
    s.n = n
    drop_index(s)


cdef int stateset_add(StateSet* s, const PState* p) except -1 nogil:
    """Append `p` unless an identical state is already there (live sets are small)."""
    cdef int32_t i
    for i in range(s.n):
        if memcmp(&s.items[i], p, sizeof(PState)) == 0:
            return 0
    return stateset_append(s, p)


cdef bint same_stack(Ctx* c, int32_t f, int32_t g) noexcept nogil:
    """Frames f and g hold equal stacks: the same id, or equal frames down to a common one (a
    walk's frames are not interned: it may push a copy of a frame of the arena or of its
    own)."""
    cdef Frame* x
    cdef Frame* y
    while f != g:
        if f == NO_FRAME or g == NO_FRAME or not ((f | g) & SCRATCH_BIT):
            return False  # (two frames of the arena are interned: different ids differ)
        x = get_frame(c, f)
        y = get_frame(c, g)
        if (x.stack != y.stack or x.node != y.node or x.props != y.props or x.keys != y.keys
                or x.seen != y.seen or x.item != y.item or x.lo != y.lo or x.hi != y.hi):
            return False
        f = x.parent
        g = y.parent
    return True


cdef inline bint same_state(Ctx* c, const PState* q, const PState* p) noexcept nogil:
    """q and p are equal but maybe for their frames' ids, and hold equal stacks."""
    # (frame is PState's first field: the rest compared at once)
    return (memcmp(&q.node, &p.node, sizeof(PState) - sizeof(int32_t)) == 0
            and (q.frame == p.frame or same_stack(c, q.frame, p.frame)))


cdef inline bint count_past_least(const Tables* t, const PState* p) noexcept nogil:
    """p is in a terminal counted up to a bound with its least count reached: of two states
    equal but for such counts, the smaller one's terminal reads every text the larger one's
    reads (and ends wherever it does), so the set keeps that one alone (stateset_add_in)."""
    # (a count is 0 out of counted terminals: most states are told by that alone; a count of
    # 0 past a least of 0 is left out, which only keeps a state apart that could merge)
    return (p.count > 0 and p.term >= 0 and p.count >= t.term_min[p.term]
            and t.term_max[p.term] != UNBOUNDED)


cdef inline bint same_but_count(Ctx* c, const PState* q, const PState* p) noexcept nogil:
    """q and p are equal but for their counts (and their frames' ids, with equal stacks)."""
    return (memcmp(&q.node, &p.node, <char*>&p.count - <char*>&p.node) == 0
            and memcmp(&q.props, &p.props, sizeof(PState) - (<char*>&p.props - <char*>p)) == 0
            and (q.frame == p.frame or same_stack(c, q.frame, p.frame)))


cdef inline uint64_t state_hash(Ctx* c, const PState* p, bint with_stack=True) noexcept nogil:
    """Equal for states same_state calls equal (a frame's `stack` hashes its whole stack),
    and for states equal but for counts past their terminal's least (count_past_least)."""
    cdef const uint32_t* w = <const uint32_t*>&p.node
    cdef uint64_t h = 0 if p.frame == NO_FRAME or not with_stack else get_frame(c, p.frame).stack
    cdef size_t k, at_count = (<char*>&p.count - <char*>&p.node) // sizeof(uint32_t)
    cdef uint32_t count_word = 0xFFFFFFFFu if count_past_least(c.t, p) else w[at_count]
    for k in range((sizeof(PState) - sizeof(int32_t)) // sizeof(uint32_t)):
        h = (h ^ (count_word if k == at_count else w[k])) * <uint64_t>0x9E3779B97F4A7C15u
    return h ^ (h >> 29)


cdef int index_states(Ctx* c, StateSet* s) except -1 nogil:
    """Bring s's hash index up to its items, with room for one more."""
    cdef int64_t size, h
    cdef int32_t i
    if s.indexed > s.n or 2 * (s.n + 1) > s.slot_mask + 1:  # cut (or too full): anew
        if 2 * (s.n + 1) > s.slot_mask + 1:
            size = 64
            while size < 4 * (s.n + 1):
                size *= 2
            free(s.slots)
            s.slots = <uint64_t*>calloc(size, sizeof(uint64_t))
            if s.slots == NULL:
                with gil:
                    raise MemoryError()
            s.slot_mask = size - 1
            s.stamp = 1
        else:
            drop_index(s)
        s.indexed = 0
    for i in range(s.indexed, s.n):
        h = <int64_t>(state_hash(c, &s.items[i]) & <uint64_t>s.slot_mask)
        while s.slots[h] >> 32 == s.stamp:
            h = (h + 1) & s.slot_mask
        s.slots[h] = (<uint64_t>s.stamp << 32) | <uint32_t>i
    s.indexed = s.n
    return 0


cdef int stateset_add_in(Ctx* c, StateSet* s, const PState* p) except -1 nogil:
    """stateset_add, where a state equal to one already there but for its frame's id, with
    an equal stack, is not added either: in an ambiguous grammar's walk such copies would
    multiply at every byte. Nor is one equal to a state there but for a count past its
    terminal's least (count_past_least): the two become one with the smaller count, so
    that a bounded repeat that may start at many places (`start: A A`, with `A: /a{1,5000}/`,
    or blanks that %ignore and the repeat both read) is one live state, not one per place."""
    cdef int32_t i, n
    cdef int64_t h
    cdef uint64_t slot
    cdef bint past = count_past_least(c.t, p), merging
    if s.n >= max_live:
        # a step that would pass the bound (a wide set's: WIDE_STEP times it) merges what it
        # has made so far (popping a union of stacks of every depth makes a state per member
        # before they merge again); a mask walk that does not merge yet is made again,
        # merging (see step_set)
        merging = not c.t.has_unique and (
            c.scratch == NULL or (c.walk_merging != NULL and c.walk_merging.on))
        if merging and s.wide and s.n < max(max_live, min(<int64_t>WIDE_STEP * max_live,
                                                          WIDE_MOST)):
            pass  # (stateset_append lets a wide set pass the bound)
        elif merging:
            if s.wide:
                pse_count_one(&wide_merges)
            merge_stacks(c, s)
            if s.n > max_live - max_live // 4:  # (too little gained to merge again so soon)
                too_ambiguous()
        elif c.walk_merging != NULL and not c.t.has_unique:
            c.walk_merging.on = True
            with gil:
                raise WideWalk()
        elif s.wide:  # (a step that does not merge: see stateset_append)
            too_ambiguous()
    n = s.n
    if n < INDEX_FROM:
        for i in range(n):
            if same_state(c, &s.items[i], p) or (past and count_kept(c, &s.items[i], p)):
                return 0
        return stateset_append(s, p)
    index_states(c, s)
    h = <int64_t>(state_hash(c, p) & <uint64_t>s.slot_mask)
    while True:
        slot = s.slots[h]
        if slot >> 32 != s.stamp:
            break
        if same_state(c, &s.items[<uint32_t>slot], p) or (
                past and count_kept(c, &s.items[<uint32_t>slot], p)):
            return 0
        h = (h + 1) & s.slot_mask
    stateset_append(s, p)
    s.slots[h] = (<uint64_t>s.stamp << 32) | <uint32_t>n
    s.indexed = s.n
    return 0


cdef inline bint count_kept(Ctx* c, PState* q, const PState* p) noexcept nogil:
    """p, its count past its terminal's least, is q but for that count, past the least as
    well: q keeps the smaller one. (q's hash does not move: it leaves such counts out.)"""
    if q.count < c.t.term_min[p.term] or not same_but_count(c, q, p):
        return False
    if p.count < q.count:
        q.count = p.count
    return True


cdef int too_ambiguous() except -1 nogil:
    with gil:
        raise GrammarError(f"the structure is too ambiguous here: more than {max_live} "
                           f"live parser states at once (pse.limits.max_live_states())")


cdef int stateset_append(StateSet* s, const PState* p) except -1 nogil:
    cdef PState* grown
    cdef int32_t cap
    if s.n >= max_live and not s.wide:  # (a wide set's bound is stateset_add_in's)
        too_ambiguous()
    if s.n == s.cap:
        cap = max(2 * s.cap, 4)
        grown = <PState*>realloc(s.items, cap * sizeof(PState))
        if grown == NULL:
            with gil:
                raise MemoryError()
        s.items = grown
        s.cap = cap
    s.items[s.n] = p[0]
    s.n += 1
    return 0


# --- frames -----------------------------------------------------------------------------------

cdef inline uint32_t frame_hash(int32_t node, int32_t parent, const Frame* reg) noexcept nogil:
    cdef uint32_t h = <uint32_t>node * 0x9E3779B1u
    h ^= <uint32_t>parent + 0x7F4A7C15u + (h << 6) + (h >> 2)
    h ^= (<uint32_t>reg.props + <uint32_t>reg.keys + <uint32_t>(reg.keys >> 32) + (h << 6)
          + (h >> 2))
    h ^= <uint32_t>reg.seen * 0x2545F491u + <uint32_t>reg.item + (h << 6) + (h >> 2)
    h ^= <uint32_t>reg.lo * 0x27D4EB2Fu + <uint32_t>reg.hi + (h << 6) + (h >> 2)
    return h * 0x85EBCA77u


cdef inline void set_frame(Frame* fr, int32_t node, int32_t parent, const PState* reg,
                           int32_t lo, int32_t hi) noexcept nogil:
    fr.node = node
    fr.parent = parent
    fr.props = reg.props
    fr.keys = reg.keys
    fr.seen = reg.seen
    fr.item = reg.item
    fr.lo = lo
    fr.hi = hi


cdef int32_t* no_ids(int64_t size) noexcept nogil:
    """`size` empty id slots (-1), or NULL when out of memory."""
    cdef int32_t* slots = <int32_t*>malloc(size * sizeof(int32_t))
    if slots != NULL:
        memset(slots, 0xFF, size * sizeof(int32_t))
    return slots


cdef int32_t* empty_slots(int64_t size) except NULL nogil:
    """An open-addressing table of `size` ids, all empty (-1); MemoryError when out of
    memory."""
    cdef int32_t* slots = no_ids(size)
    if slots == NULL:
        with gil:
            raise MemoryError()
    return slots


cdef int arena_init(Arena* a) except -1:
    a.n_chunks = 0
    a.hash_slots = empty_slots(1024)
    a.hash_mask = 1023
    a.old_slots = NULL
    a.n_frames = 0
    stamped_begin(&a.tops_seen)
    stamped_begin(&a.popped)
    a.tops_seen.dense_on = True
    a.popped.dense_on = True
    return 0


cdef void arena_free(Arena* a) noexcept:
    cdef int32_t i = 0
    while i < a.n_chunks:
        free(a.chunks[i])
        i += 1
    a.n_chunks = 0
    free(a.hash_slots)
    a.hash_slots = NULL
    free(a.old_slots)
    a.old_slots = NULL
    stamped_free(&a.tops_seen)
    stamped_free(&a.popped)


cdef enum:
    MOVED_PER_FRAME = 4  # old hash slots moved per new frame: the old table is gone after a
                         # quarter of its size in new frames, the new one then at most 3/8 full


cdef int arena_grow_hash(Arena* a) except -1 nogil:
    """Start a hash twice as large; the old one's ids move over with the next frames (see
    arena_move). Rehashing every frame at once made the step that crossed a power of two
    pay for all of them: a step the more costly the longer the text."""
    cdef int32_t* slots = empty_slots(2 * (a.hash_mask + 1))
    while a.old_slots != NULL:  # (not reached: the last growth's move is over by now)
        arena_move(a)
    a.old_slots = a.hash_slots
    a.old_mask = a.hash_mask
    a.moved = 0
    a.hash_slots = slots
    a.hash_mask = 2 * (a.hash_mask + 1) - 1
    return 0


cdef void arena_move(Arena* a) noexcept nogil:
    """Move the ids of the next MOVED_PER_FRAME slots of the old hash into the new one."""
    cdef int64_t h, end = min(a.moved + MOVED_PER_FRAME, a.old_mask + 1)
    cdef int32_t f, k
    cdef Frame* fr
    while a.moved < end:
        f = a.old_slots[a.moved]
        a.moved += 1
        if f < 0:
            continue
        k = chunk_of(f, CHUNK_BITS)
        fr = &a.chunks[k][in_chunk(f, k, CHUNK_BITS)]
        h = frame_hash(fr.node, fr.parent, fr) & a.hash_mask
        while a.hash_slots[h] >= 0:
            h = (h + 1) & a.hash_mask
        a.hash_slots[h] = f
    if a.moved > a.old_mask:
        free(a.old_slots)
        a.old_slots = NULL


cdef inline int32_t arena_find(const Arena* a, const int32_t* slots, int64_t mask,
                               uint32_t hash, const Frame* want) noexcept nogil:
    """The id of the frame equal to `want` (its hash `hash`) in `slots`, or -1 - the empty
    slot where its search ended."""
    cdef int64_t h = hash & mask
    cdef int32_t f, k
    cdef const Frame* fr
    while True:
        f = slots[h]
        if f < 0:
            return -1 - <int32_t>h
        k = chunk_of(f, CHUNK_BITS)
        fr = &a.chunks[k][in_chunk(f, k, CHUNK_BITS)]
        if (fr.node == want.node and fr.parent == want.parent and fr.props == want.props
                and fr.keys == want.keys and fr.seen == want.seen and fr.item == want.item
                and fr.lo == want.lo and fr.hi == want.hi):
            return f
        h = (h + 1) & mask


cdef int32_t arena_intern(Arena* a, int32_t node, int32_t parent, const PState* reg,
                          int32_t lo, int32_t hi) except -2 nogil:
    """The id of frame (node, parent, register of `reg`, run lo..hi), creating it once: equal
    stacks get equal ids."""
    cdef Frame want
    set_frame(&want, node, parent, reg, lo, hi)
    cdef uint32_t content = frame_hash(node, -1, &want)
    cdef uint32_t hash = frame_hash(node, parent, &want)
    cdef int32_t f, k, slot
    if parent == NO_FRAME:
        want.stack = content
    else:
        k = chunk_of(parent, CHUNK_BITS)
        want.stack = stack_hash(content, a.chunks[k][in_chunk(parent, k, CHUNK_BITS)].stack)
    slot = arena_find(a, a.hash_slots, a.hash_mask, hash, &want)
    if slot >= 0:
        return slot
    if a.old_slots != NULL:  # (an id not moved yet)
        f = arena_find(a, a.old_slots, a.old_mask, hash, &want)
        if f >= 0:
            return f
    f = a.n_frames
    k = chunk_of(f, CHUNK_BITS)
    if k >= MAX_CHUNKS:
        with gil:
            raise MemoryError("pse: the parser's stack arena is full")
    if k == a.n_chunks:  # frames are numbered in order: the next chunk is needed
        a.chunks[k] = <Frame*>malloc((<size_t>CHUNK_SIZE << k) * sizeof(Frame))
        if a.chunks[k] == NULL:
            with gil:
                raise MemoryError()
        a.n_chunks += 1
    a.chunks[k][in_chunk(f, k, CHUNK_BITS)] = want
    a.n_frames = f + 1
    a.hash_slots[-1 - slot] = f
    if a.old_slots != NULL:
        arena_move(a)
    elif 2 * a.n_frames > a.hash_mask:
        arena_grow_hash(a)
    return f


cdef inline int32_t push_frame(Ctx* c, int32_t node, int32_t parent, const PState* reg
                              ) except -2 nogil:
    """A frame returning to `node` under `parent` that restores the register of `reg`. Pushed
    on a frame (or run) just like it, the two are a run one longer: stacks that differ only in
    how many times a call is pending (`s: "a" s | "a" s s | "a"`) then differ only in the
    run's bounds, and merge (see join_runs). Looked for where a call of a rule to itself
    returns (node_runs: elsewhere a push reads no frame for it); not in structures with
    unique arrays (their items read the registers frame by frame)."""
    cdef Frame* top
    if c.t.node_runs[node] and not c.t.has_unique and repeats_frame(c, parent, node, reg):
        top = get_frame(c, parent)
        return make_frame(c, node, top.parent, reg, top.lo + 1, top.hi + 1)
    return make_frame(c, node, parent, reg, 1, 1)


cdef int32_t make_frame(Ctx* c, int32_t node, int32_t parent, const PState* reg, int32_t lo,
                        int32_t hi) except -2 nogil:
    """The frame (node, parent, register of `reg`, run lo..hi): interned into the arena, or
    new in the walk's scratch."""
    cdef Scratch* s = c.scratch
    cdef Frame* fr
    if s == NULL:
        return arena_intern(c.arena, node, parent, reg, lo, hi)
    if s.n == s.cap:
        scratch_reserve(s, 1)
    fr = &s.frames[s.n]
    set_frame(fr, node, parent, reg, lo, hi)
    fr.stack = frame_hash(node, -1, fr)
    if parent != NO_FRAME:
        fr.stack = stack_hash(fr.stack, get_frame(c, parent).stack)
    s.n += 1
    return (s.n - 1) | SCRATCH_BIT


cdef int scratch_reserve(Scratch* s, int32_t k) except -1 nogil:
    """Room for k more frames in the walk's scratch (a walk past MAX_WALK_FRAMES raises
    GrammarError)."""
    cdef Frame* grown
    cdef int64_t cap = s.cap
    if s.n + <int64_t>k <= cap:
        return 0
    if s.n + <int64_t>k > MAX_WALK_FRAMES:
        with gil:
            raise GrammarError(f"the structure is too ambiguous here: a mask walk made "
                               f"more than {MAX_WALK_FRAMES:,} parser frames")
    while cap < s.n + <int64_t>k:
        cap = 2 * cap + 16
    cap = min(cap, <int64_t>MAX_WALK_FRAMES)
    grown = <Frame*>realloc(s.frames, cap * sizeof(Frame))
    if grown == NULL:
        with gil:
            raise MemoryError()
    s.frames = grown
    s.cap = <int32_t>cap
    return 0


cdef inline uint32_t stack_hash(uint32_t content, uint32_t parent_stack) noexcept nogil:
    cdef uint32_t h = content ^ (parent_stack * 0x9E3779B1u + 0x7F4A7C15u)
    h ^= h >> 15
    h *= 0x2C1B3C6Du
    return h ^ (h >> 12)


# --- the byte step ----------------------------------------------------------------------------

cdef PState ZERO_REG               # the register of a rule invocation that has just started
memset(&ZERO_REG, 0, sizeof(PState))


cdef inline void copy_register(PState* to, const PState* src) noexcept nogil:
    to.props = src.props
    to.keys = src.keys
    to.seen = src.seen
    to.item = src.item


# --- unions of stacks: stack_unions.pxi -----------------------------------------------------
include "stack_unions.pxi"


# --- unique items: unique_items.pxi ---------------------------------------------------------
include "unique_items.pxi"


# --- expanding and stepping -------------------------------------------------------------------

cdef inline bint repeats_frame(Ctx* c, int32_t f, int32_t node, const PState* reg
                               ) noexcept nogil:
    """Whether frame f returns to `node` with register `reg`: a frame like it pushed on f,
    at a node_collapse node, is left out (see pse.compiler._collapsing_returns)."""
    cdef Frame* fr
    if f == NO_FRAME:
        return False
    fr = get_frame(c, f)
    return (fr.node == node and fr.props == reg.props and fr.keys == reg.keys
            and fr.seen == reg.seen and fr.item == reg.item)


cdef enum:  # unions, or their members' returns, waiting to be popped (expand_members,
            # pops_reach, members_bytes), before one is popped in a call of its own
    PENDING = 256


cdef int expand(Ctx* c, const PState* at, int b, StateSet* out) except -1 nogil:
    """Start every terminal reachable from `at`'s node (popping the stack where rules end) on
    byte b; with b = NO_BYTE, the states before each such terminal's first byte."""
    return expand_from(c, at, b, out, NULL, False)


cdef int expand_in(Ctx* c, const PState* at, int b, StateSet* out, StampedIds* popped
                   ) except -1 nogil:
    """expand(), where union members and unions in `popped` are popped already (their
    successors are in `out`): states that share their stacks' unions, expanded on one byte
    into one set, pop each once (see step_set). Its pops are expanded by node where a walk
    merges (see returns_begin)."""
    cdef int produced
    if not (may_hold(c) and returns_begin(c)):
        return expand_from(c, at, b, out, popped, False)
    try:
        produced = expand_from(c, at, b, out, popped, False)
        return produced + returns_end(c, b, out, popped)
    finally:
        c.returns = NULL


cdef bint returns_begin(Ctx* c) noexcept nogil:
    """Start holding the pops of the expansions that follow, in a mask walk that merges its
    sets (and unless they are held already: False, as where nothing is held): returns_end
    expands them, those that return to one node with one register as one, from the lazy union
    of the stacks left (the caller clears c.returns once done, or on an error). Expanded one
    by one, each made the same states over its own stack, pushed its own frames and popped
    its own node's ends, and the merge made them one state again: on a long text of three
    rules calling each other every way at once, 9,000 pops returned to a few hundred nodes at
    a mask's steps (the states equal but for their stacks a step made went from 4,700 to
    400). Held only where the walk merges its sets (elsewhere a union of stacks would stand
    where the states stayed apart), and once a step has popped HOLD_FROM union members; the
    pops of a step's states, of a mask's roots and of a group's exit byte are held together,
    those of a plan's job on its own (see Matcher.plan_group)."""
    cdef Returns* r
    if not may_hold(c) or c.scratch == NULL or c.first_in != NULL or c.t.has_unique:
        return False
    r = &c.scratch.returns
    r.n = 0
    r.done = 0
    c.returns = r
    return True


cdef int returns_end(Ctx* c, int b, StateSet* out, StampedIds* popped) except -1 nogil:
    """Expand the pops held (see returns_begin) on byte b into `out`, and those their
    expansions make, until none is left; how many states were produced."""
    cdef int produced = 0
    while c.returns.done < c.returns.n:
        produced += expand_returns(c, b, out, popped)
    return produced


cdef int add_return(Returns* r, const PState* at) except -1 nogil:
    """Hold the pop that returned to at.node with at's register over the stack at.frame."""
    cdef PState* grown
    cdef PState* x
    if r.n == r.cap:
        grown = <PState*>realloc(r.at, (2 * <size_t>r.cap + 16) * sizeof(PState))
        if grown == NULL:
            with gil:
                raise MemoryError()
        r.at = grown
        r.cap = 2 * r.cap + 16
    x = &r.at[r.n]
    x[0] = at[0]
    x.term = -1  # (a return is at its node, in no terminal: the rest is its key)
    x.dstate = 0
    x.count = 0
    r.n += 1
    return 0


cdef enum:
    HOLD_FROM = 8           # pops are held once a step has popped this many union members
                            # (c.popped): before, they are expanded as reached. The bundled SQL
                            # grammar's walks merge, but their pops never group: held from the
                            # first, its masks took 4-7% longer
    GROUP_RETURNS_FROM = 8  # fewer pops held are expanded one by one: a few pops rarely share
                            # a node, and grouping them made `stacked` of grammar_bench --long
                            # 13% slower


cdef int expand_returns(Ctx* c, int b, StateSet* out, StampedIds* popped) except -1 nogil:
    """returns_end: expand the pops held (not those their expansions hold in turn), each
    group with one node and register once, over the lazy union of the group's stacks."""
    cdef Returns* r = c.returns
    cdef int32_t lo = r.done, k = r.n - r.done, i, j, m
    cdef int64_t size = 16, h
    cdef int produced = 0
    cdef int32_t* grown
    cdef int32_t* slots
    cdef int32_t* next
    cdef int32_t* members
    cdef PState at
    r.done = r.n
    if k < GROUP_RETURNS_FROM:
        for i in range(k):
            at = r.at[lo + i]
            produced += expand_from(c, &at, b, out, popped, False)
        return produced
    while size < 2 * k:
        size *= 2
    if size + 2 * k > r.work_cap:
        grown = <int32_t*>realloc(r.work, (size + 2 * k) * sizeof(int32_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        r.work = grown
        r.work_cap = size + 2 * k
    slots = r.work      # the first pop of each group, by hash
    next = slots + size  # per pop: the next of its group (-1: the last)
    members = next + k   # a group's stacks
    memset(slots, 0xFF, size * sizeof(int32_t))
    for i in range(k):
        next[i] = -1
        h = <int64_t>(state_hash(c, &r.at[lo + i], False) & <uint64_t>(size - 1))
        while slots[h] >= 0:
            j = slots[h]
            if memcmp(&r.at[lo + j].node, &r.at[lo + i].node,
                      sizeof(PState) - sizeof(int32_t)) == 0:
                next[i] = next[j]
                next[j] = i
                break
            h = (h + 1) & (size - 1)
        else:
            slots[h] = i
    for h in range(size):  # (the expansions hold their pops past r.n: r.at may move)
        i = slots[h]
        if i < 0:
            continue
        m = 0
        j = i
        while j >= 0:
            members[m] = r.at[lo + j].frame
            m += 1
            j = next[j]
        at = r.at[lo + i]
        if m > 1:
            at.frame = union_of(c, members, m, LAZY)
            pse_count_one(&grouped_returns)
        produced += expand_from(c, &at, b, out, popped, False)
    return produced


cdef void returns_free(Returns* r) noexcept nogil:
    free(r.at)
    free(r.work)
    r.at = NULL
    r.work = NULL
    r.n = 0
    r.cap = 0
    r.done = 0
    r.work_cap = 0


cdef int32_t pop_frame(Ctx* c, int32_t f, PState* at, int32_t* also) except -2 nogil:
    """Pop frame f (not a union): `at` gets its return node and the caller's register, and
    the stack left is returned. A run (a frame repeated lo..hi times) leaves the run one
    shorter, and its parent where the run may be a single frame: the second stack left goes
    to `also` (NOT_MERGED: none), whose entries are taken at the return node but not its pops.
    Where the return node may end its rule, popping on returns there under every shorter run,
    down to the parent: the stacks left are the parent and the run of 1..hi-1 (whose pops are
    the parent's, taken from it)."""
    cdef Frame* fr = get_frame(c, f)
    cdef int32_t lo = fr.lo, hi = fr.hi, parent = fr.parent
    at.node = fr.node
    load_register(at, fr)
    also[0] = NOT_MERGED
    if hi == 1:
        return parent
    if lo > 1 and not c.t.node_end[at.node]:
        return make_frame(c, at.node, parent, at, lo - 1, hi - 1)
    also[0] = make_frame(c, at.node, parent, at, 1, hi - 1)
    return parent


cdef int expand_from(Ctx* c, const PState* at, int b, StateSet* out, StampedIds* popped,
                     bint entries_only, int32_t* reached=NULL) except -1 nogil:
    """expand(), where union members and unions in `popped` (NULL: none yet) are popped
    already; with `entries_only`, the entries of `at`'s node alone, no pops (see pop_frame);
    with `reached`, a union the pops reach is left there (else NO_FRAME), not popped."""
    cdef const Tables* t = c.t
    cdef int32_t e, p, f, r, term, g, first, also
    cdef int32_t node = at.node, frame = at.frame
    cdef int produced = 0
    cdef PState ns, reg
    cdef const PState* caller
    cdef Frame* fr
    copy_register(&reg, at)
    while True:
        if b == NO_BYTE or has_bit(&t.node_first[8 * node], b):
            for e in range(t.node_entry_off[node], t.node_entry_off[node + 1]):
                term = t.entry_term[e]
                if b != NO_BYTE and not has_bit(&t.term_first[8 * term], b):
                    continue
                first = t.entry_push_off[e]
                # a call starts the callee's register empty; the guard sees the callee's
                copy_register(&ns, &reg if first == t.entry_push_off[e + 1] else &ZERO_REG)
                g = t.entry_guard[e]
                if g != 0 and not guard_pass(t, g, &ns):
                    continue
                if g != 0 and t.guard_item[g] and not item_guard(c, g, &ns):
                    continue
                f = frame
                for p in range(first, t.entry_push_off[e + 1]):
                    r = t.pushes[p]
                    caller = &reg if p == first else &ZERO_REG
                    # a tail call: returning to r would only pop again (the register is
                    # restored for nothing, unless a unique array's item needs it)
                    if t.node_tail[r] and caller.item == 0 and caller.seen == 0:
                        continue
                    if not (t.node_collapse[r] and repeats_frame(c, f, r, caller)):
                        f = push_frame(c, r, f, caller)
                ns.frame = f
                ns.node = t.entry_target[e]
                ns.term = term
                if b == NO_BYTE:
                    ns.dstate = t.term_start[term]
                    ns.count = 0
                else:
                    # (a TERM_CHARS terminal may refuse a first byte its DFA takes)
                    if not term_step(t, term, t.term_start[term], 0, <uint8_t>b, &ns):
                        continue
                    normalize(t, &ns)
                    if t.has_unique and not unique_live(c, &ns):
                        continue
                stateset_add_in(c, out, &ns)
                produced += 1
                if out == c.first_in:  # (found_first: `out` holds a state now)
                    return produced
        if t.node_end[node] and frame != NO_FRAME and not entries_only:
            fr = get_frame(c, frame)
            if fr.node == UNION_NODE:
                if reached != NULL:  # (the caller pops it: see expand_members)
                    reached[0] = frame
                    return produced
                if popped != NULL and not add_stamped(popped, frame):
                    return produced  # (its members are popped, or wait to be)
                return produced + expand_members(c, frame, b, out, popped)
            if fr.hi == 1:
                node = fr.node
                frame = fr.parent
                load_register(&reg, fr)
            else:  # a run: its pops leave a second stack, whose entries are taken here
                frame = pop_frame(c, frame, &reg, &also)
                node = reg.node
                if also != NOT_MERGED:
                    ns = reg
                    ns.frame = also
                    produced += expand_from(c, &ns, b, out, popped, True)
                    if found_first(c, out):
                        return produced
            # back in a unique array with an item open: the item has ended before this byte
            if reg.item >= 2 and not item_close(c, &reg, c.pos):
                return produced
            if c.returns != NULL and c.popped >= HOLD_FROM and frame != NO_FRAME:
                # (expanded by node: see returns_begin)
                reg.node = node
                reg.frame = frame
                add_return(c.returns, &reg)
                return produced
            continue
        return produced


cdef int expand_members(Ctx* c, int32_t cell, int b, StateSet* out, StampedIds* popped
                        ) except -1 nogil:
    """expand() past the end of a rule whose caller is a union: from each member's return.
    A lazy union's members that return to one node with one register are popped as one, the
    top over the lazy union of their stacks below it (share_tops), as a graph-structured
    stack pops a node once whatever its parents: popped one by one, each made its own states,
    its own pushes and its own pops below, which merged back into a few (a random ambiguous
    grammar of three rules made 132,000 pops and 880,000 frames at the 48th byte of its text;
    as one, 3,800 and 4,100). The members of a union of tops over one stack differ in their
    tops: they are popped one by one, as met. The unions met on the way (a member that is a
    union, or the union a member's pops reach) wait in a list, not in a recursion, however
    deep they nest (past the list's room, one is popped in a call of its own). A union goes
    into `popped` as it is met, as its members do: one met again, through another member, is
    not gone through again. So do its cells after the first, the arena's: a union shares the
    cells of an older one holding its older members (see union_of), and a cell met again
    starts members gone through already, to the end."""
    cdef int produced = 0
    cdef int32_t member, n = 0, n_tops, i
    cdef int32_t waiting[PENDING]
    cdef int32_t few_tops[64]
    cdef int32_t* tops = few_tops  # a lazy union's members that are no unions, to pop
    cdef int32_t room = 64
    cdef int32_t* grown
    cdef Frame* fr
    cdef StampedIds own
    cdef bint first, lazy
    stamped_begin(&own)
    try:
        if popped == NULL:
            popped = &own
        while True:
            # (a union's first cell is its id, in `popped` as it was met; in a set of its
            # own it is not, but no list from the union's members runs into it: frames
            # point only to older ones)
            first = True
            lazy = is_lazy(c, cell)
            n_tops = 0
            while cell != NO_FRAME:
                if found_first(c, out):
                    return produced
                # (a walk's cells are its own, each reached from the one before it alone: only
                # the arena's are shared by unions)
                if not first and cell & SCRATCH_BIT == 0 and not add_stamped(popped, cell):
                    break
                first = False
                fr = get_frame(c, cell)
                member = fr.parent
                cell = fr.seen  # (read first: the scratch may move as expand pushes)
                if not add_stamped(popped, member):
                    continue  # popped already
                c.popped += 1
                if is_union(c, member):
                    n = wait_for(c, member, waiting, n, b, out, popped, &produced)
                    continue
                if not lazy:
                    n = pop_member(c, member, waiting, n, b, out, popped, &produced)
                    continue
                if n_tops == room:
                    grown = <int32_t*>malloc(2 * <size_t>room * sizeof(int32_t))
                    if grown == NULL:
                        with gil:
                            raise MemoryError()
                    memcpy(grown, tops, room * sizeof(int32_t))
                    if tops != few_tops:
                        free(tops)
                    tops = grown
                    room *= 2
                tops[n_tops] = member
                n_tops += 1
            if n_tops > 1:
                n_tops = share_tops(c, tops, n_tops)
            for i in range(n_tops):
                n = pop_member(c, tops[i], waiting, n, b, out, popped, &produced)
                if found_first(c, out):
                    return produced
            if n == 0:
                return produced
            n -= 1
            cell = waiting[n]
    finally:
        stamped_free(&own)
        if tops != few_tops:
            free(tops)


cdef inline int32_t pop_member(Ctx* c, int32_t member, int32_t* waiting, int32_t n, int b,
                               StateSet* out, StampedIds* popped, int* produced
                               ) except -1 nogil:
    """expand_members: pop `member` (no union) and expand from its return; the union its
    pops reach waits to be popped (wait_for). The list's new length."""
    cdef int32_t also, reached = NO_FRAME
    cdef PState at, at2
    at.frame = pop_frame(c, member, &at, &also)
    if also != NOT_MERGED:
        at2 = at
        at2.frame = also
        produced[0] += expand_from(c, &at2, b, out, popped, True)
        if found_first(c, out):
            return n
    if c.returns != NULL and c.popped >= HOLD_FROM and at.frame != NO_FRAME:
        # (expanded by node: see returns_begin)
        add_return(c.returns, &at)
        return n
    produced[0] += expand_from(c, &at, b, out, popped, False, &reached)
    if reached != NO_FRAME and add_stamped(popped, reached):
        return wait_for(c, reached, waiting, n, b, out, popped, produced)
    return n


cdef inline int32_t wait_for(Ctx* c, int32_t stacks, int32_t* waiting, int32_t n, int b,
                             StateSet* out, StampedIds* popped, int* produced) except -1 nogil:
    """expand_members: put the union `stacks` in the list waiting to be popped
    (waiting[:n]); past its room, pop it in a call of its own. The list's new length."""
    if n < PENDING:
        waiting[n] = stacks
        return n + 1
    produced[0] += expand_members(c, stacks, b, out, popped)
    return n


cdef int step_state(Ctx* c, const PState* s, uint8_t b, StateSet* out) except -1 nogil:
    """Add every successor of `s` on byte b to `out`; returns how many were produced."""
    return step_state_in(c, s, b, out, NULL)


cdef inline int step_state_in(Ctx* c, const PState* s, uint8_t b, StateSet* out,
                              StampedIds* popped) except -1 nogil:
    """step_state(), where union members and unions in `popped` (NULL: none yet) are popped
    already (their successors are in `out`, and count for another state)."""
    cdef const Tables* t = c.t
    cdef PState ns
    cdef int produced = 0
    if s.term >= 0:
        ns = s[0]
        if term_step(t, s.term, s.dstate, s.count, b, &ns):
            normalize(t, &ns)
            if not t.has_unique or unique_live(c, &ns):
                stateset_add_in(c, out, &ns)
                produced = 1
        if found_first(c, out) or not term_accepting(t, s.term, s.dstate, s.count):
            return produced
    # (not expand_in: step_set holds its states' pops, or not, for all of them; expand_in, no
    # longer a tail call, cost JSON Schema masks 1% more instructions here)
    return produced + expand_from(c, s, b, out, popped, False)


cdef int step_set(Ctx* c, const StateSet* cur, uint8_t b, StateSet* out) except -1 nogil:
    """Add the successors of every state of `cur` on byte b (at c.pos) to `out`, emptied
    first; states equal but for their stacks are merged once there are a few: always when
    text is consumed (the frames go to the arena), in a mask walk once one of its engine's
    sets has been found to merge (by a quarter or more) or has neared the bound (raising
    WideWalk that first time)."""
    cdef int32_t i
    cdef WalkMerging* m = c.walk_merging
    # one set of popped union members for all the states: a member's pops do not depend on
    # the state that reached it, and states of a walk share their stacks' unions (popped once
    # per state, a step cost the states times the unions' size). A set of the step's own
    # regrew from a few slots at every step (a tenth of a mask's time on three rules that
    # call each other every way at once)
    cdef StampedIds* popped = popped_set(c)
    stateset_clear(out)
    # a set that merges once made merges here, once, not each time it reaches max_live while
    # it is made: each of those merges gathered again the stacks of the unions the one
    # before had made (a step of a long text of three rules calling each other every way at
    # once merged 7 times, gathering 76,837 stacks for the 7,420 states it made)
    out.wide = not c.t.has_unique  # (where the step merges: see stateset_add_in)
    c.popped = 0
    if may_hold(c) and returns_begin(c):  # (the states' pops, expanded together)
        try:
            for i in range(cur.n):
                step_state_in(c, &cur.items[i], b, out, popped)
            returns_end(c, b, out, popped)
        finally:
            c.returns = NULL
    else:
        for i in range(cur.n):
            step_state_in(c, &cur.items[i], b, out, popped)
    out.wide = False
    if c.t.has_unique or out.n < MERGE_FROM:
        if out.n > max_live:  # (a wide set, too small to merge, over a bound below it)
            too_ambiguous()
        return out.n
    if c.scratch == NULL:
        merge_made(c, out)
    elif m != NULL:
        # (merging at every trie node from the first walk made JSON Schema masks' p99 on
        # maskbench a quarter higher: their sets do not merge. An ambiguous grammar's states
        # double per byte of a long token, and merged late they would only halve: the walk
        # starts again, merging, once a set is seen to merge, checked (without merging) at
        # max_live // 64 states and again each time a set has doubled since; at max_live // 4
        # it merges in any case)
        if not m.on:
            if out.n < max(m.check_at, max_live // 64):
                return out.n
            if out.n < max_live // 4 and merge_stacks(c, out, True) > out.n - out.n // 4:
                m.check_at = 2 * out.n
                return out.n
            m.on = True
            with gil:
                raise WideWalk()
        merge_made(c, out)
    return out.n


cdef int step_reaches(Ctx* c, const StateSet* cur, uint8_t b, StateSet* out) except -1 nogil:
    """1 when some state of `cur` has a successor on byte b, else 0: step_set, stopped once
    `out` (emptied first) holds a state, neither widened nor merged, so that it never raises
    "too ambiguous" or WideWalk (a token whose step would is refused, or taken, when it is
    consumed). For a mask walk's step into a trie node below which it walks no further, where
    only whether the set is empty counts: on a long text of three rules calling each other
    every way at once, 23 of a mask's 31 steps were such steps, and they made 120,000 of its
    140,000 pops. c.popped counts the pops made until it stopped."""
    cdef int32_t i
    cdef StampedIds* popped = popped_set(c)
    stateset_clear(out)
    c.popped = 0
    c.first_in = out
    try:
        for i in range(cur.n):
            step_state_in(c, &cur.items[i], b, out, popped)
            if out.n > 0:
                break
    finally:
        c.first_in = NULL
    return out.n > 0


cdef inline bint found_first(const Ctx* c, const StateSet* out) noexcept nogil:
    """`out` is step_reaches' set and holds a state: the expansion into it may stop.
    Expansions into other sets (item_start_fresh's, in unique arrays) go on to the end."""
    return out == c.first_in and out.n > 0


cdef int merge_made(Ctx* c, StateSet* s) except -1 nogil:
    """merge_stacks, for `s`, a set (wide, or not) made: too ambiguous where more than
    max_live states are left (a set merged as it reached the bound never held more). `s` is
    no longer wide."""
    s.wide = False
    merge_stacks(c, s)
    if s.n > max_live:
        too_ambiguous()
    return 0


cdef void widen_walk_set(Ctx* c, const WalkMerging* m, StateSet* s) noexcept nogil:
    """Make `s`, an empty set a mask walk will step from, wide (see step_set) where `m` is
    on: its maker merges it once it is made (merge_walk_set, or a plan's merge_made)."""
    s.wide = m != NULL and m.on and not c.t.has_unique


cdef int merge_walk_set(Ctx* c, const WalkMerging* m, StateSet* s) except -1 nogil:
    """Merge `s`, a set a mask walk steps from (its roots, an exit byte's seed), as its steps'
    sets merge once `m` is on (its engine's walks merge): otherwise each step below, and each
    exit byte, went through every one of its states (800 seed states on a long text of three
    rules calling each other every way at once: merging the seeds took 30% off its masks,
    merging the roots 20% more). `s` is no longer wide."""
    s.wide = False
    if m != NULL and m.on and not c.t.has_unique and s.n >= MERGE_FROM:
        merge_made(c, s)
    elif s.n > max_live:  # (a wide set, too small to merge, over a bound below it)
        too_ambiguous()
    return 0


cdef int step_bytes(Ctx* c, StateSet* cur, StateSet* spare, const uint8_t* p, Py_ssize_t n
                    ) except -1 nogil:
    """Advance the set `cur` over n bytes in place (`spare` is scratch); how many states live.
    Stops early once none is left. c.pos moves along: c.text must hold the n bytes at c.pos."""
    cdef Py_ssize_t i
    cdef StateSet swap
    for i in range(n):
        step_set(c, cur, p[i], spare)
        c.pos += 1
        swap = cur[0]
        cur[0] = spare[0]
        spare[0] = swap
        if cur.n == 0:
            return 0
    return cur.n


cdef bint is_accepting(Ctx* c, const PState* s) noexcept nogil:
    cdef StampedIds popped
    cdef bint found
    if s.term >= 0 and not term_accepting(c.t, s.term, s.dstate, s.count):
        return False
    stamped_begin(&popped)
    found = pops_reach(c, s.node, s.frame, &popped, False)
    stamped_free(&popped)
    return found


cdef inline void member_return(Ctx* c, int32_t node, int32_t member, int32_t* to_node,
                               int32_t* to_frame) noexcept nogil:
    """Where a union's `member` goes on from `node`, whose rule ends: a union, popped at
    `node` in turn; a frame, popped to its return node over its parent."""
    cdef Frame* fr = get_frame(c, member)
    if fr.node == UNION_NODE:
        to_node[0] = node
        to_frame[0] = member
    else:
        to_node[0] = fr.node
        to_frame[0] = fr.parent


cdef bint pops_reach(Ctx* c, int32_t node, int32_t frame, StampedIds* popped, bint special
                    ) noexcept nogil:
    """Whether the pops from `node` under `frame`, where rules end (through some member of
    each union, those in `popped` tried already), reach the empty stack (is_accepting) or,
    with `special`, a node a special token may start at (special_next). The members wait in
    a list, not in a recursion (past its room, one is tried in a call of its own)."""
    cdef Frame* fr
    cdef int32_t member, n = 0, m_node, m_frame
    cdef int32_t nodes[PENDING]
    cdef int32_t frames[PENDING]
    while True:
        while True:
            if special and c.t.node_special[node]:
                return True
            if not c.t.node_end[node]:
                break
            if frame == NO_FRAME:
                if special:
                    break
                return True
            fr = get_frame(c, frame)
            if fr.node != UNION_NODE:
                node = fr.node
                frame = fr.parent
                continue
            while frame != NO_FRAME:
                fr = get_frame(c, frame)
                frame = fr.seen
                member = fr.parent
                if not add_stamped(popped, member):
                    continue
                member_return(c, node, member, &m_node, &m_frame)
                if n < PENDING:
                    nodes[n] = m_node
                    frames[n] = m_frame
                    n += 1
                elif pops_reach(c, m_node, m_frame, popped, special):
                    return True
            break
        if n == 0:
            return False
        n -= 1
        node = nodes[n]
        frame = frames[n]


# --- special tokens ---------------------------------------------------------------------------
# A special token (<|python_tag|>, [TOOL_CALLS]) is a terminal of its own that no text byte
# enters (it has no first bytes, so steps, masks walks and forced bytes never start it). Its
# token id starts it from here, and it is complete at once.

cdef int take_special(Ctx* c, const PState* s, int32_t term, StateSet* out) except -1 nogil:
    """Add to `out` the successors of `s` on the special token of terminal `term`; returns
    how many were produced."""
    cdef StateSet starts
    cdef PState ns
    cdef int32_t i
    cdef int produced = 0
    if s.term >= 0 and not term_accepting(c.t, s.term, s.dstate, s.count):
        return 0
    stateset_init(&starts, 8)
    try:
        expand(c, s, NO_BYTE, &starts)
        for i in range(starts.n):
            if starts.items[i].term == term:
                ns = starts.items[i]
                ns.term = -1
                ns.dstate = 0
                ns.count = 0
                stateset_add(out, &ns)
                produced += 1
    finally:
        stateset_free(&starts)
    return produced


cdef int special_terms(Ctx* c, const PState* s, StateSet* scratch, uint8_t* out
                       ) except -1 nogil:
    """Set out[term] for each special token's terminal `s` can take next (`scratch`: a set
    to work in)."""
    cdef int32_t i
    if s.term >= 0 and not term_accepting(c.t, s.term, s.dstate, s.count):
        return 0
    if not special_next(c, s):
        return 0
    stateset_clear(scratch)
    expand(c, s, NO_BYTE, scratch)
    for i in range(scratch.n):
        if c.t.term_special[scratch.items[i].term]:
            out[scratch.items[i].term] = 1
    return 0


cdef bint special_next(Ctx* c, const PState* s) noexcept nogil:
    """Whether a special token may come next at `s` (guards not checked: it may be refused)."""
    cdef int32_t node = s.node, frame = s.frame
    cdef Frame* fr
    cdef StampedIds popped
    cdef bint found
    if not c.t.has_special:
        return False
    if s.term >= 0 and not term_accepting(c.t, s.term, s.dstate, s.count):
        return False
    stamped_begin(&popped)
    found = pops_reach(c, node, frame, &popped, True)
    stamped_free(&popped)
    return found


# --- the bytes a state can take next: next_bytes.pxi -----------------------------------------
include "next_bytes.pxi"


# --- the compiled structure: compiled_structure.pxi -------------------------------------------
include "compiled_structure.pxi"
