# The C contract of a compiled structure: read-only tables, the parser state, and the byte step.
#
# A structure compiles into rules (recursive transition networks). Inside a rule, a node has
# precomputed entries: (terminal, target node, frames to push), the closure over calls, so the
# step never searches. Terminals are byte DFAs, optionally counted: a unit repeated min..max
# times, or a DFA whose matches hold min..max characters (a pattern with a long maxLength),
# without unrolling. A parser state (PState) is a few ints: the stack is an id into a
# hash-consed arena of frames, so copying or comparing a state is O(1).
#
# Each rule invocation has a small register (key bits and a property count): an entry may
# carry a guard that checks and updates it, which is how an object with properties in any
# order refuses a repeated key and requires its required ones without enumerating orders.
# A call starts the callee with an empty register; the caller's is saved in the frame.
#
# States equal but for the top frames of their stacks, pushed over one stack, are merged into
# one whose frame is a union of the stacks (see merge_stacks): an ambiguity that differs only
# in what was just called for keeps one state, not one per stack. A frame pushed on one just
# like it makes a run (the frame repeated lo..hi times), so stacks that differ only in how many
# times a call is pending are one state too. Where many states are still left, those equal
# but for their stacks become one whatever the stacks: a few tops, each over the union of the
# stacks below it (a graph-structured stack).
#
# An array with uniqueItems keeps, in its register, the items it has seen (an id into a store
# of their canonical texts) and where the open item started; guards on its "[", "," and "]"
# open and close items, and a closed item equal to a seen one ends the parse. The text an
# item spans is read from the Ctx: the bytes consumed so far, up to the current one. An object
# whose key count matters keeps its keys so too (KEY_OPEN, KEY_CLOSE), so that no key repeats.

from libc.stdint cimport int32_t, uint8_t, uint32_t, int64_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memset
cimport numpy as cnp

cdef enum:
    NO_FRAME = -1
    UNION_NODE = -2               # a frame with this node is a cell of a union of stacks: its
                                  # parent is a member stack (never empty; a union only in a
                                  # lazy union, whose cells' `props` is 1), its `seen` the
                                  # next cell (NO_FRAME: the last), its `keys` a hash of the
                                  # members from it on (of their `stack`s: see key_hash; a
                                  # walk's lazy union hashes an arena member's id)
    MERGE_FROM = 4                # step_set merges states equal but for their stacks from this
                                  # many on (as text is consumed)
    NOT_MERGED = -5               # merge_stacks: a state whose stack is empty
    SCRATCH_BIT = 0x40000000      # frame ids with this bit live in a per-call scratch buffer
    CHUNK_BITS = 12
    CHUNK_SIZE = 4096             # frames in the arena's first chunk; chunk k holds CHUNK_SIZE << k
    MAX_CHUNKS = 16               # so at most (CHUNK_SIZE << 16) - CHUNK_SIZE frames
    UNBOUNDED = -1
    ITEM_CLOSE = 1                # guard_item flags
    ITEM_OPEN = 2
    KEY_OPEN = 4                  # an object's key starts with this terminal ...
    KEY_CLOSE = 8                 # ... and ends with this byte: a repeated key is refused
    SEEN_CHUNK_BITS = 10
    SEEN_CHUNK = 1024             # nodes in a store's first chunk; chunk k holds SEEN_CHUNK << k
    MAX_SEEN_CHUNKS = 16          # the structure's store (a walk's: SCRATCH_SEEN_CHUNKS)
    SCRATCH_SEEN_CHUNKS = 10
    MAX_ITEMS_SEEN = 67107840     # (SEEN_CHUNK << MAX_SEEN_CHUNKS) - SEEN_CHUNK: a prefix with more
                                  # completions than this always has a new one
    NO_BYTE = -1                  # expand(): stop before the terminals' first byte
    TERM_PLAIN = 0                # term_counted: the DFA matched once
    TERM_UNITS = 1                # its unit repeated min..max times (count: units done)
    TERM_CHARS = 2                # its match of min..max counted steps (count: steps taken:
                                  # characters done, or a pattern's repeats; CountedTerminal)
    DFA_COUNTED = 1               # dfa_boundary bits (compiler.DFA_COUNTED): entering counts a step
    DFA_FULL_STOP = 2             # at the maximum count, no byte can follow
    LENGTH_BITS = 64              # dfa_lens: lengths per state (counted_lengths.LENGTH_BITS)

ctypedef struct PState:
    int32_t frame     # top of the return stack (NO_FRAME: empty)
    int32_t node      # node to continue at once the current terminal ends
    int32_t term      # current terminal, or -1: positioned at `node` with no terminal
    int32_t dstate    # state of the terminal's DFA
    int32_t count     # counted terminals: units completed (capped at min when max is unbounded)
    int32_t props     # register of the current rule invocation: properties counted so far
    int32_t seen      # ... a unique array's items so far (a seen-store id; 0: none)
    int32_t item      # ... 0: not a unique array; 1: no item open; k >= 2: open at byte k - 2;
                      # in an object whose keys are kept: -1, no key open; k <= -2: a key's
                      # opening terminal began at byte -k - 2
    uint64_t keys     # ... and the key bits set so far

ctypedef struct Frame:
    int32_t node      # where to continue after the called rule ends
    int32_t parent
    int32_t props     # the caller's register, restored on return
    int32_t seen      # (a union cell: the next cell)
    int32_t item
    uint32_t stack    # a hash of this frame's content and its parent's `stack`: frames
                      # holding equal stacks have equal ones (see same_stack; a walk's lazy
                      # union cell: its `keys`, see walk_lazy_union)
    int32_t lo        # a run: the frame repeated k times over `parent`, for each k in
    int32_t hi        # lo..hi (1..1: a single frame; see push_frame)
    uint64_t keys

ctypedef struct Tables:
    int32_t n_classes
    uint8_t byte_class[256]
    int32_t n_dfa_states
    int32_t* dfa_trans        # n_dfa_states * n_classes, -1 = no edge
    uint8_t* dfa_accept
    uint8_t* dfa_final        # accepting with no outgoing edge
    uint8_t* dfa_boundary     # TERM_CHARS: DFA_COUNTED (entering the state completes a character,
                              # or a repeat) | DFA_FULL_STOP
    uint64_t* dfa_lens        # TERM_CHARS: bit L, an accepting state is L counted steps away
    uint8_t* dfa_lens_tail    # ... and is, for every L >= LENGTH_BITS
    int32_t n_terms
    int32_t* term_start
    uint8_t* term_counted
    int32_t* term_min
    int32_t* term_max         # UNBOUNDED or a count
    uint32_t* term_first      # 8 words per terminal: bytes its first step accepts (none for a
                              # special token's: no text byte enters it)
    uint8_t* term_special     # the terminal is one special token (see take_special)
    int32_t n_nodes
    int32_t* node_entry_off   # n_nodes + 1
    uint8_t* node_end         # the node's rule may end here (then the stack is popped)
    uint8_t* node_collapse    # a frame returning here is not pushed on one just like it
    uint8_t* node_tail        # a frame returning here is not pushed (its rule only ends here)
    uint8_t* node_runs        # a frame returning here may be pushed on one just like it: a run
    uint32_t* node_first      # 8 words per node: union of its entries' first bytes
    uint32_t alphabet[8]      # the bytes some terminal's DFA takes: no step takes another
    uint8_t* node_special     # some entry of the node is a special token's terminal
    bint has_special          # some terminal is
    int32_t n_entries
    int32_t* entry_term
    int32_t* entry_target
    int32_t* entry_push_off   # n_entries + 1, into `pushes`
    int32_t* pushes           # frames to push, outermost first
    int32_t* entry_guard      # 0: none, else an index into the guard tables
    uint8_t* node_guarded     # some entry of the node has a guard
    int32_t n_guards
    uint64_t* guard_forbid    # key bits that must be clear
    uint64_t* guard_need      # key bits that must be set
    uint64_t* guard_set       # key bits set on entry
    int32_t* guard_min        # at least this many properties counted
    int32_t* guard_inc        # properties added on entry
    int32_t* guard_max        # then at most this many (UNBOUNDED: no limit) ...
    uint64_t* guard_reserve   # ... counting these key bits still clear as to come
    int32_t* guard_cap        # the count saturates here (states beyond it are equal)
    int32_t* guard_clause_off # n_guards + 1, into the clauses
    uint64_t* clause_if       # clause: if all these bits are set ...
    uint64_t* clause_then     # ... then all these must be too
    uint8_t* guard_item       # ITEM_CLOSE / ITEM_OPEN: the guard closes, then opens, an item
    bint has_unique           # some guard does: steps need the text (Ctx.text)
    int32_t* dfa_forced       # with has_unique: per DFA state, its only byte (-1: none, several,
                              # or accepting)
    int64_t* dfa_values       # with has_unique: per DFA state of a terminal of whole strings,
                              # the strings it can still complete to (-1: not such a terminal;
                              # 0: inside an escape, search on)
    int32_t root_node

# Ids seen since the set was last emptied, emptied in O(1) (stamped_clear): a set used again
# and again, at its largest size, with neither a fill nor a growth each time. As the members a
# walk down the stacks has popped (`popped`): unions share their members' stacks, so the paths
# through them multiply; each member is popped once (its frame decides all that follows), and
# each union gone through once (its id is its first cell's: a member may be a union). An
# arena cell after a union's first is the union of the members from it on (unions share an
# older one's cells): it goes in too, and one met again ends a list (see expand_members).
ctypedef struct StampedIds:
    uint64_t* slots           # open addressing, (stamp << 32) | id; a slot holding another
    int64_t mask              # stamp is empty (NULL until the first id; then `few`, until it
    int32_t n                 # holds too many: most sets allocate nothing)
    uint32_t stamp
    uint64_t few[16]
    uint32_t* dense           # arena ids below dense_n marked by id, each with the stamp it
    int32_t dense_n           # was added with (see add_stamped): grown while dense_on (the
    bint dense_on             # walker's and the arena's sets; not after a failed growth of
                              # either array)
    uint32_t* walk_dense      # ... and a walk's own (scratch) ids, by id & ~SCRATCH_BIT (the
                              # walker's sets)
    int32_t walk_dense_n

ctypedef struct Arena:
    Frame* chunks[MAX_CHUNKS]     # the first n_chunks allocated; they never move (see chunk_of)
    int32_t n_chunks
    int32_t n_frames
    int32_t* hash_slots       # open addressing over frame ids, -1 = empty
    int64_t hash_mask
    int32_t* old_slots        # while the hash grows: the smaller one (NULL: none), its ids
    int64_t old_mask          # moved a few slots per new frame (no step pays for all of
    int64_t moved             # them), the first `moved` slots already
    StampedIds tops_seen      # the cells a gather of tops went through, text consumed (see
                              # gather_group; with the GIL, as every push into the arena)
    StampedIds popped         # the members popped outside a mask walk: a step as text is
                              # consumed, the forced path (see popped_set; with the GIL)

ctypedef struct Returns:       # an expansion's pops, waiting to be expanded by node and register
    PState* at                # each: the return node, the caller's register, the stack left
    int32_t n
    int32_t cap
    int32_t done              # at[:done] are expanded
    int32_t* work             # expand_returns' table and lists
    int64_t work_cap

ctypedef struct Scratch:
    Frame* frames
    int32_t n
    int32_t cap
    StampedIds tops_seen      # the cells a gather of tops went through (see gather_group)
    StampedIds popped         # the members popped in a mask walk: by a step, the roots, the
                              # exit bytes of a group of states, then each byte's states
                              # (see popped_set)
    StampedIds seeded         # ... by the states a plan's exit byte ended a terminal on
                              # (Matcher.add_jobs)
    Returns returns           # a walk's expansions' pops, while they wait (see returns_begin)

ctypedef struct SeenNode:     # one item of a unique array, and the items before it
    int32_t parent
    int32_t length
    int32_t count             # the items of the set: this one and those before it
    uint64_t hash
    uint8_t* data             # its canonical text (owned by the store)

ctypedef struct SeenStore:    # nodes in chunks that never move (walks in threads read them)
    SeenNode* chunks[MAX_SEEN_CHUNKS]  # the first n_chunks allocated (see chunk_of)
    int32_t max_chunks
    int32_t n_chunks
    int32_t n
    int32_t* slots            # open addressing over nodes (-1: empty): equal sets, equal ids
    int64_t mask

ctypedef struct StateSet:
    PState* items
    int32_t n
    int32_t cap
    uint64_t* slots           # from INDEX_FROM states: a hash index of items[:indexed] for
    int64_t slot_mask         # stateset_add_in, each slot (stamp << 32) | item; a slot
    int32_t indexed           # holding another stamp is empty (stateset_clear bumps it)
    uint32_t stamp
    bint wide                 # a step's set that merges once it is made: it may hold
                              # WIDE_STEP times max_live states before it merges (step_set)

ctypedef struct WalkMerging:  # a mask walker's: whether its walks merge their sets (step_set)
    bint on                   # merge at every byte, as when text is consumed
    int32_t check_at          # off: the set size at which a walk next checks whether its set
                              # would merge (at least max_live // 64)
    bint no_hold              # on, but its walks' pops are not held (a mask's roots and plan
                              # where the walker's walks do not merge: see returns_begin)

# The exit bytes of arena unions, each found once (see union_bytes_of): what a union's members
# can start next depends only on the union, and the arena's frames never change.
ctypedef struct UnionBytes:
    int32_t* slots            # open addressing over union frame ids: their index, -1 = empty
    int64_t mask
    int32_t* ids
    uint32_t* bytes           # 8 words per union: the bytes its members' returns can start
    int32_t n
    int32_t cap
    bint off                  # out of memory once: the unions are popped each time

cdef struct Ctx:
    const Tables* t
    Arena* arena
    Scratch* scratch          # NULL: pushes are interned into the arena (needs the GIL)
    SeenStore* seen           # where closed items go (ids 1..n; with SCRATCH_BIT: seen_scratch)
    SeenStore* seen_scratch   # NULL: into `seen`
    const uint8_t* text       # unique arrays: every byte consumed, up to the current one ...
    int64_t pos               # ... at text[pos] (the next one, before a terminal's first byte)
    WalkMerging* walk_merging # a mask walk's (scratch) merging (NULL: never merge in scratch)
    int32_t popped            # union members popped since the last step_set (or
                              # step_reaches, until it stopped) began (a mask walk's hint: see
                              # walk_subtree)
    UnionBytes* exits         # a mask walker's exit bytes of arena unions (NULL: none kept)
    StateSet* first_in        # while step_reaches runs, its set: an expansion into it stops
                              # once it holds a state (NULL: none)
    Returns* returns          # the pops of the expansions under way wait here, to be expanded
                              # by node and register (see returns_begin; NULL: as reached)

# --- small helpers, inline so the mask walk gets them without a call ------------------------

cdef inline void stamped_begin(StampedIds* s) noexcept nogil:
    """`s` a new empty set (its slots and dense marks the caller's to free: stamped_free;
    dense_on is set after this)."""
    s.slots = NULL
    s.mask = 0
    s.n = 0
    s.stamp = 1
    s.dense = NULL
    s.dense_n = 0
    s.dense_on = False
    s.walk_dense = NULL
    s.walk_dense_n = 0


cdef inline void stamped_free(StampedIds* s) noexcept nogil:
    if s.slots != s.few:
        free(s.slots)
    s.slots = NULL
    free(s.dense)
    s.dense = NULL
    s.dense_n = 0
    free(s.walk_dense)
    s.walk_dense = NULL
    s.walk_dense_n = 0


cdef inline void stamped_clear(StampedIds* s) noexcept nogil:
    """Empty `s`: a new stamp, never 0 (the stamp of empty slots: all are emptied when the
    stamp wraps)."""
    s.n = 0
    s.stamp += 1
    if s.stamp == 0:
        if s.slots != NULL:
            memset(s.slots, 0, (s.mask + 1) * sizeof(uint64_t))
        if s.dense != NULL:
            memset(s.dense, 0, s.dense_n * sizeof(uint32_t))
        if s.walk_dense != NULL:
            memset(s.walk_dense, 0, s.walk_dense_n * sizeof(uint32_t))
        s.stamp = 1


cdef inline bint may_hold(const Ctx* c) noexcept nogil:
    """Whether returns_begin may hold pops: in a walk that merges, where none are held yet
    (inline: checked at every step and expansion of every walk)."""
    return (c.returns == NULL and c.walk_merging != NULL and c.walk_merging.on
            and not c.walk_merging.no_hold)


cdef inline StampedIds* popped_set(Ctx* c) noexcept nogil:
    """The set of popped union members that a walk down `c`'s stacks starts from, emptied:
    the mask walk's (its scratch) or, as text is consumed, the arena's. One set used again,
    not one of the caller's own: a set made per call regrew from a few slots every time."""
    cdef StampedIds* popped = &c.scratch.popped if c.scratch != NULL else &c.arena.popped
    stamped_clear(popped)
    return popped


cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int pse_log2(uint32_t x) { unsigned long i; _BitScanReverse(&i, x); return (int)i; }
    #else
    static inline int pse_log2(uint32_t x) { return 31 - __builtin_clz(x); }
    #endif
    """
    int pse_log2(uint32_t x) noexcept nogil  # x > 0


# Arena frames and seen items live in chunks that double in size (chunk k holds 2^(bits + k)
# of them) and never move once allocated, since walks in threads read them: a few pointers
# address them all, and a new structure allocates no table of chunks.
cdef inline int32_t chunk_of(int32_t i, int32_t bits) noexcept nogil:
    """The chunk holding element i."""
    return pse_log2(<uint32_t>(i >> bits) + 1)


cdef inline int32_t in_chunk(int32_t i, int32_t k, int32_t bits) noexcept nogil:
    """Element i's place in its chunk k."""
    return i + (1 << bits) - ((1 << bits) << k)


cdef inline Frame* get_frame(Ctx* c, int32_t f) noexcept nogil:
    cdef int32_t k
    if f & SCRATCH_BIT:
        return &c.scratch.frames[f & ~SCRATCH_BIT]
    k = chunk_of(f, CHUNK_BITS)
    return &c.arena.chunks[k][in_chunk(f, k, CHUNK_BITS)]


cdef inline int32_t dfa_next(const Tables* t, int32_t d, uint8_t b) noexcept nogil:
    return t.dfa_trans[<int64_t>d * t.n_classes + t.byte_class[b]]


cdef inline bint only_ends(const Tables* t, int32_t node) noexcept nogil:
    """`node` only ends its rule (no entries): a frame returning there only pops again."""
    return t.node_end[node] and t.node_entry_off[node] == t.node_entry_off[node + 1]


cdef inline bint has_bit(const uint32_t* words, uint32_t b) noexcept nogil:
    return (words[b >> 5] >> (b & 31)) & 1


cdef inline bint chars_within(const Tables* t, int32_t term, int32_t d, int32_t cnt
                              ) noexcept nogil:
    """TERM_CHARS: whether state d, `cnt` characters in, can still reach an accepting state
    with a count within the terminal's bounds."""
    cdef int64_t lo = t.term_min[term] - cnt
    cdef int64_t hi = (<int64_t>1 << 40) if t.term_max[term] == UNBOUNDED \
        else t.term_max[term] - cnt
    cdef int64_t top
    if lo < 0:
        lo = 0
    if hi < lo:
        return False
    if lo < LENGTH_BITS:
        top = hi if hi < LENGTH_BITS - 1 else LENGTH_BITS - 1
        if t.dfa_lens[d] & ((~(<uint64_t>0) >> (LENGTH_BITS - 1 - (top - lo))) << lo):
            return True
    return hi >= LENGTH_BITS and t.dfa_lens_tail[d]


cdef inline bint term_step(const Tables* t, int32_t term, int32_t d, int32_t cnt, uint8_t b,
                           PState* out) noexcept nogil:
    """Advance terminal `term` from (d, cnt) by byte b into out.dstate/out.count."""
    cdef int32_t nd
    cdef uint8_t kind = t.term_counted[term]
    if kind == TERM_UNITS:
        if d == t.term_start[term] and t.term_max[term] != UNBOUNDED and cnt >= t.term_max[term]:
            return False
        nd = dfa_next(t, d, b)
        if nd < 0:
            return False
        if t.dfa_accept[nd]:
            # a unit is complete (units are prefix-free): count it and start the next one
            cnt += 1
            if t.term_max[term] == UNBOUNDED and cnt > t.term_min[term]:
                cnt = t.term_min[term]
            nd = t.term_start[term]
        out.dstate = nd
        out.count = cnt
        return True
    nd = dfa_next(t, d, b)
    if nd < 0:
        return False
    if kind == TERM_CHARS:
        if t.dfa_boundary[nd] & DFA_COUNTED:  # a character (or a repeat) is complete
            cnt += 1
        # refused at once where no way on keeps the count within the bounds (no dead end)
        if not chars_within(t, term, nd, cnt):
            return False
        if t.term_max[term] == UNBOUNDED and cnt > t.term_min[term]:
            cnt = t.term_min[term]
        out.dstate = nd
        out.count = cnt
        return True
    out.dstate = nd
    out.count = 0
    return True


cdef inline bint term_accepting(const Tables* t, int32_t term, int32_t d, int32_t cnt
                                ) noexcept nogil:
    cdef uint8_t kind = t.term_counted[term]
    if kind == TERM_UNITS:
        return d == t.term_start[term] and cnt >= t.term_min[term]
    if kind == TERM_CHARS:
        return t.dfa_accept[d] and cnt >= t.term_min[term]
    return t.dfa_accept[d]


cdef inline bint term_full(const Tables* t, int32_t term, int32_t d, int32_t cnt
                           ) noexcept nogil:
    """A counted terminal at its maximum count, between two units or characters (where no
    byte can follow: DFA_FULL_STOP): it takes no more bytes."""
    if t.term_max[term] == UNBOUNDED or cnt < t.term_max[term]:
        return False
    if t.term_counted[term] == TERM_UNITS:
        return d == t.term_start[term]
    return t.term_counted[term] == TERM_CHARS and t.dfa_boundary[d] & DFA_FULL_STOP


cdef inline bint term_done(const Tables* t, int32_t term, int32_t d, int32_t cnt
                           ) noexcept nogil:
    """The terminal is complete and can take no more bytes."""
    if t.term_counted[term] == TERM_UNITS:
        return term_full(t, term, d, cnt)
    return t.dfa_final[d] or term_full(t, term, d, cnt)


cdef inline void normalize(const Tables* t, PState* s) noexcept nogil:
    """A terminal that is complete and can take no more bytes hands over to its target node,
    so that states reached through different terminals merge."""
    if term_done(t, s.term, s.dstate, s.count):
        s.term = -1
        s.dstate = 0
        s.count = 0


cdef inline void load_register(PState* s, const Frame* fr) noexcept nogil:
    s.props = fr.props
    s.keys = fr.keys
    s.seen = fr.seen
    s.item = fr.item


cdef inline bint guard_pass(const Tables* t, int32_t g, PState* s) noexcept nogil:
    """Check guard g against the register of `s` and apply it; False: the entry is closed."""
    cdef uint64_t k = s.keys
    cdef int32_t i
    if (k & t.guard_forbid[g]) != 0 or (k & t.guard_need[g]) != t.guard_need[g]:
        return False
    if s.props < t.guard_min[g]:
        return False
    for i in range(t.guard_clause_off[g], t.guard_clause_off[g + 1]):
        if (k & t.clause_if[i]) == t.clause_if[i] and (k & t.clause_then[i]) != t.clause_then[i]:
            return False
    s.props += t.guard_inc[g]
    k |= t.guard_set[g]
    if (t.guard_max[g] != UNBOUNDED
            and s.props + popcount64(t.guard_reserve[g] & ~k) > t.guard_max[g]):
        return False
    if t.guard_inc[g] and s.props > t.guard_cap[g]:  # (a guard that adds nothing keeps it)
        s.props = t.guard_cap[g]
    s.keys = k
    return True


cdef inline int popcount64(uint64_t x) noexcept nogil:
    x = x - ((x >> 1) & <uint64_t>0x5555555555555555)
    x = (x & <uint64_t>0x3333333333333333) + ((x >> 2) & <uint64_t>0x3333333333333333)
    x = (x + (x >> 4)) & <uint64_t>0x0F0F0F0F0F0F0F0F
    return <int>((x * <uint64_t>0x0101010101010101) >> 56)


# --- the parser ------------------------------------------------------------------------------

cdef int stateset_init(StateSet* s, int32_t cap) except -1 nogil
cdef void stateset_free(StateSet* s) noexcept nogil
cdef void stateset_clear(StateSet* s) noexcept nogil
cdef void stateset_cut(StateSet* s, int32_t n) noexcept nogil
cdef int stateset_add(StateSet* s, const PState* p) except -1 nogil
cdef int stateset_append(StateSet* s, const PState* p) except -1 nogil

cdef int expand(Ctx* c, const PState* at, int b, StateSet* out) except -1 nogil
cdef int expand_in(Ctx* c, const PState* at, int b, StateSet* out, StampedIds* popped
                   ) except -1 nogil
cdef int step_state(Ctx* c, const PState* s, uint8_t b, StateSet* out) except -1 nogil
cdef bint returns_begin(Ctx* c) noexcept nogil
cdef int returns_end(Ctx* c, int b, StateSet* out, StampedIds* popped) except -1 nogil
cdef void returns_free(Returns* r) noexcept nogil
cdef int step_set(Ctx* c, const StateSet* cur, uint8_t b, StateSet* out) except -1 nogil
cdef int step_reaches(Ctx* c, const StateSet* cur, uint8_t b, StateSet* out) except -1 nogil
cdef void widen_walk_set(Ctx* c, const WalkMerging* m, StateSet* s) noexcept nogil
cdef int merge_made(Ctx* c, StateSet* s) except -1 nogil
cdef int merge_walk_set(Ctx* c, const WalkMerging* m, StateSet* s) except -1 nogil
cdef int32_t merge_stacks(Ctx* c, StateSet* s, bint dry=*) except -1 nogil
cdef int32_t live_bound() noexcept nogil
cdef int step_bytes(Ctx* c, StateSet* cur, StateSet* spare, const uint8_t* p, Py_ssize_t n
                    ) except -1 nogil
cdef bint is_accepting(Ctx* c, const PState* s) noexcept nogil
cdef int take_special(Ctx* c, const PState* s, int32_t term, StateSet* out) except -1 nogil
cdef int special_terms(Ctx* c, const PState* s, StateSet* scratch, uint8_t* out) except -1 nogil
cdef bint special_next(Ctx* c, const PState* s) noexcept nogil
cdef bint in_unique(Ctx* c, const PState* s) noexcept nogil
cdef bint any_in_unique(Ctx* c, const StateSet* set) noexcept nogil
cdef int seen_init(SeenStore* s, int32_t max_chunks) except -1 nogil
cdef void seen_reset(SeenStore* s) noexcept nogil
cdef void seen_free(SeenStore* s) noexcept nogil
cdef void exit_bytes(Ctx* c, const PState* at, uint32_t* out8) noexcept nogil
cdef void exit_bytes_from(Ctx* c, const PState* at, uint32_t* out8, StampedIds* popped
                          ) noexcept nogil
cdef void union_bytes_init(UnionBytes* m) noexcept nogil
cdef void union_bytes_free(UnionBytes* m) noexcept nogil
cdef void next_bytes(Ctx* c, const PState* s, uint32_t* out8) noexcept nogil
cdef void set_next_bytes(Ctx* c, const StateSet* set, uint32_t* out8) noexcept nogil
cdef cnp.ndarray new_array(Py_ssize_t n, int typenum, int fill_byte)
cdef cnp.ndarray as_c_array(object obj, int typenum)


cdef class CompiledStructure:
    cdef Tables t
    cdef Arena arena
    cdef SeenStore seen
    cdef object _buffers        # numpy arrays that own the table memory
    cdef readonly object parse_value   # text -> value (the machine's; see stepper.get_current_value)
    cdef readonly list terminal_keys   # per terminal: a key equal terminals share
    cdef readonly list terminal_states # per terminal: what its states' masks share, or None
    cdef readonly dict special_tokens  # {terminal: (its special token, id or text; required)}
    cdef public dict slice_caches      # mask caches per (vocabulary, memo size); see engine.py
    cdef readonly int n_rules
    cdef list node_labels              # per node: the labels of the machines it is inside
    cdef dict edge_labels              # {(terminal, target node): labels} where not the target's
    cdef object __weakref__

    cdef PState initial_state(self) noexcept
    cdef inline void ctx(self, Ctx* c) noexcept nogil:
        c.t = &self.t
        c.arena = &self.arena
        c.scratch = NULL
        c.seen = &self.seen
        c.seen_scratch = NULL
        c.text = NULL
        c.pos = 0
        c.walk_merging = NULL
        c.popped = 0
        c.exits = NULL
        c.first_in = NULL
        c.returns = NULL
