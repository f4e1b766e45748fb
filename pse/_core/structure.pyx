# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled structures: flat tables, the frame arena and the byte step of the parser."""

from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcmp, memset, memcpy

import numpy as np
cimport numpy as cnp

cnp.import_array()


from pse.errors import GrammarError

# --- state sets -------------------------------------------------------------------------------

# The most states a set may hold (pse.limits.set_max_live_states): identical states merge, so
# only a structure whose live parses differ in their stacks (alternatives sharing a long prefix,
# nested) gets near it; past it a step would be slow (the merge is quadratic), so it raises.
cdef int32_t max_live = 1024


def get_max_live_states() -> int:
    """The bound on parser states in one set (see pse.limits)."""
    return max_live


def set_max_live_states(int n) -> None:
    """Set the bound on parser states in one set (see pse.limits; checked there)."""
    global max_live
    max_live = n


cdef int stateset_init(StateSet* s, int32_t cap) except -1 nogil:
    s.items = <PState*>malloc(cap * sizeof(PState))
    if s.items == NULL:
        with gil:
            raise MemoryError()
    s.n = 0
    s.cap = cap
    return 0


cdef void stateset_free(StateSet* s) noexcept nogil:
    free(s.items)
    s.items = NULL
    s.n = s.cap = 0


cdef int stateset_add(StateSet* s, const PState* p) except -1 nogil:
    """Append `p` unless an identical state is already there (live sets are small)."""
    cdef int32_t i
    cdef PState* grown
    for i in range(s.n):
        if memcmp(&s.items[i], p, sizeof(PState)) == 0:
            return 0
    if s.n >= max_live:
        with gil:
            raise GrammarError(f"the structure is too ambiguous here: more than {max_live} "
                               f"live parser states at once (pse.limits.max_live_states())")
    if s.n == s.cap:
        grown = <PState*>realloc(s.items, 2 * s.cap * sizeof(PState))
        if grown == NULL:
            with gil:
                raise MemoryError()
        s.items = grown
        s.cap *= 2
    s.items[s.n] = p[0]
    s.n += 1
    return 0


# --- frames -----------------------------------------------------------------------------------

cdef inline uint32_t frame_hash(int32_t node, int32_t parent, int32_t props, uint64_t keys
                                ) noexcept nogil:
    cdef uint32_t h = <uint32_t>node * 0x9E3779B1u
    h ^= <uint32_t>parent + 0x7F4A7C15u + (h << 6) + (h >> 2)
    h ^= <uint32_t>props + <uint32_t>keys + <uint32_t>(keys >> 32) + (h << 6) + (h >> 2)
    return h * 0x85EBCA77u


cdef int arena_init(Arena* a) except -1:
    a.chunks = <Frame**>calloc(MAX_CHUNKS, sizeof(Frame*))
    a.hash_slots = <int32_t*>malloc(1024 * sizeof(int32_t))
    if a.chunks == NULL or a.hash_slots == NULL:
        raise MemoryError()
    memset(a.hash_slots, 0xFF, 1024 * sizeof(int32_t))
    a.hash_mask = 1023
    a.n_frames = 0
    return 0


cdef void arena_free(Arena* a) noexcept:
    cdef int32_t i
    if a.chunks != NULL:
        for i in range(MAX_CHUNKS):
            if a.chunks[i] != NULL:
                free(a.chunks[i])
        free(a.chunks)
        a.chunks = NULL
    free(a.hash_slots)
    a.hash_slots = NULL


cdef int arena_grow_hash(Arena* a) except -1 nogil:
    cdef int64_t size = (a.hash_mask + 1) * 2
    cdef int32_t* slots = <int32_t*>malloc(size * sizeof(int32_t))
    cdef int32_t i
    cdef int64_t h
    cdef Frame* fr
    if slots == NULL:
        with gil:
            raise MemoryError()
    memset(slots, 0xFF, size * sizeof(int32_t))
    for i in range(a.n_frames):
        fr = &a.chunks[i >> CHUNK_BITS][i & (CHUNK_SIZE - 1)]
        h = frame_hash(fr.node, fr.parent, fr.props, fr.keys) & (size - 1)
        while slots[h] >= 0:
            h = (h + 1) & (size - 1)
        slots[h] = i
    free(a.hash_slots)
    a.hash_slots = slots
    a.hash_mask = size - 1
    return 0


cdef int32_t arena_intern(Arena* a, int32_t node, int32_t parent, const PState* reg
                          ) except -2 nogil:
    """The id of frame (node, parent, register of `reg`), creating it once: equal stacks get
    equal ids."""
    cdef int64_t h = frame_hash(node, parent, reg.props, reg.keys) & a.hash_mask
    cdef int32_t f
    cdef Frame* fr
    while True:
        f = a.hash_slots[h]
        if f < 0:
            break
        fr = &a.chunks[f >> CHUNK_BITS][f & (CHUNK_SIZE - 1)]
        if (fr.node == node and fr.parent == parent and fr.props == reg.props
                and fr.keys == reg.keys):
            return f
        h = (h + 1) & a.hash_mask
    f = a.n_frames
    if (f >> CHUNK_BITS) >= MAX_CHUNKS:
        with gil:
            raise MemoryError("pse: the parser's stack arena is full")
    if a.chunks[f >> CHUNK_BITS] == NULL:
        a.chunks[f >> CHUNK_BITS] = <Frame*>malloc(CHUNK_SIZE * sizeof(Frame))
        if a.chunks[f >> CHUNK_BITS] == NULL:
            with gil:
                raise MemoryError()
    fr = &a.chunks[f >> CHUNK_BITS][f & (CHUNK_SIZE - 1)]
    fr.node = node
    fr.parent = parent
    fr.props = reg.props
    fr.keys = reg.keys
    a.n_frames = f + 1
    a.hash_slots[h] = f
    if 2 * a.n_frames > a.hash_mask:
        arena_grow_hash(a)
    return f


cdef int32_t push_frame(Ctx* c, int32_t node, int32_t parent, const PState* reg
                       ) except -2 nogil:
    """A frame returning to `node` under `parent` that restores the register of `reg`."""
    cdef Scratch* s = c.scratch
    cdef Frame* grown
    if s == NULL:
        return arena_intern(c.arena, node, parent, reg)
    if s.n == s.cap:
        grown = <Frame*>realloc(s.frames, (2 * s.cap + 16) * sizeof(Frame))
        if grown == NULL:
            with gil:
                raise MemoryError()
        s.frames = grown
        s.cap = 2 * s.cap + 16
    s.frames[s.n].node = node
    s.frames[s.n].parent = parent
    s.frames[s.n].props = reg.props
    s.frames[s.n].keys = reg.keys
    s.n += 1
    return (s.n - 1) | SCRATCH_BIT


# --- the byte step ----------------------------------------------------------------------------

cdef PState ZERO_REG               # the register of a rule invocation that has just started
memset(&ZERO_REG, 0, sizeof(PState))


cdef int expand(Ctx* c, const PState* at, int b, StateSet* out) except -1 nogil:
    """Start every terminal reachable from `at`'s node (popping the stack where rules end) on
    byte b; with b = NO_BYTE, the states before each such terminal's first byte."""
    cdef const Tables* t = c.t
    cdef int32_t e, p, f, term, g, first
    cdef int32_t node = at.node, frame = at.frame
    cdef int produced = 0
    cdef PState ns, reg
    cdef Frame* fr
    reg.props = at.props
    reg.keys = at.keys
    while True:
        if b == NO_BYTE or has_bit(&t.node_first[8 * node], b):
            for e in range(t.node_entry_off[node], t.node_entry_off[node + 1]):
                term = t.entry_term[e]
                if b != NO_BYTE and not has_bit(&t.term_first[8 * term], b):
                    continue
                first = t.entry_push_off[e]
                # a call starts the callee's register empty; the guard sees the callee's
                ns.props = reg.props if first == t.entry_push_off[e + 1] else 0
                ns.keys = reg.keys if first == t.entry_push_off[e + 1] else 0
                g = t.entry_guard[e]
                if g != 0 and not guard_pass(t, g, &ns):
                    continue
                f = frame
                for p in range(first, t.entry_push_off[e + 1]):
                    f = push_frame(c, t.pushes[p], f, &reg if p == first else &ZERO_REG)
                ns.frame = f
                ns.node = t.entry_target[e]
                ns.term = term
                if b == NO_BYTE:
                    ns.dstate = t.term_start[term]
                    ns.count = 0
                else:
                    term_step(t, term, t.term_start[term], 0, <uint8_t>b, &ns)
                    normalize(t, &ns)
                stateset_add(out, &ns)
                produced += 1
        if t.node_end[node] and frame != NO_FRAME:
            fr = get_frame(c, frame)
            node = fr.node
            frame = fr.parent
            reg.props = fr.props
            reg.keys = fr.keys
            continue
        return produced


cdef int step_state(Ctx* c, const PState* s, uint8_t b, StateSet* out) except -1 nogil:
    """Add every successor of `s` on byte b to `out`; returns how many were produced."""
    cdef const Tables* t = c.t
    cdef PState ns
    cdef int produced = 0
    if s.term >= 0:
        ns = s[0]
        if term_step(t, s.term, s.dstate, s.count, b, &ns):
            normalize(t, &ns)
            stateset_add(out, &ns)
            produced = 1
        if not term_accepting(t, s.term, s.dstate, s.count):
            return produced
    return produced + expand(c, s, b, out)


cdef int step_set(Ctx* c, const StateSet* cur, uint8_t b, StateSet* out) except -1 nogil:
    cdef int32_t i
    out.n = 0
    for i in range(cur.n):
        step_state(c, &cur.items[i], b, out)
    return out.n


cdef int step_bytes(Ctx* c, StateSet* cur, StateSet* spare, const uint8_t* p, Py_ssize_t n
                    ) except -1 nogil:
    """Advance the set `cur` over n bytes in place (`spare` is scratch); how many states live.
    Stops early once none is left."""
    cdef Py_ssize_t i
    cdef StateSet swap
    for i in range(n):
        step_set(c, cur, p[i], spare)
        swap = cur[0]
        cur[0] = spare[0]
        spare[0] = swap
        if cur.n == 0:
            return 0
    return cur.n


cdef bint is_accepting(Ctx* c, const PState* s) noexcept nogil:
    cdef int32_t node = s.node
    cdef int32_t frame = s.frame
    cdef Frame* fr
    if s.term >= 0 and not term_accepting(c.t, s.term, s.dstate, s.count):
        return False
    while c.t.node_end[node]:
        if frame == NO_FRAME:
            return True
        fr = get_frame(c, frame)
        node = fr.node
        frame = fr.parent
    return False


cdef void exit_bytes(Ctx* c, const PState* at, uint32_t* out8) noexcept nogil:
    """The bytes that can start something at `at`'s node (popping where rules end), ORed in."""
    cdef const Tables* t = c.t
    cdef int k
    cdef int32_t e, g, node = at.node, frame = at.frame
    cdef Frame* fr
    cdef PState reg
    reg.props = at.props
    reg.keys = at.keys
    while True:
        if not t.node_guarded[node]:
            for k in range(8):
                out8[k] |= t.node_first[8 * node + k]
        else:
            for e in range(t.node_entry_off[node], t.node_entry_off[node + 1]):
                g = t.entry_guard[e]
                if g != 0 and not entry_open(t, e, g, &reg):
                    continue
                for k in range(8):
                    out8[k] |= t.term_first[8 * t.entry_term[e] + k]
        if t.node_end[node] and frame != NO_FRAME:
            fr = get_frame(c, frame)
            node = fr.node
            frame = fr.parent
            reg.props = fr.props
            reg.keys = fr.keys
        else:
            return


cdef inline bint entry_open(const Tables* t, int32_t e, int32_t g, const PState* reg
                            ) noexcept nogil:
    """Whether guard g of entry e lets a state with register `reg` in."""
    cdef PState probe
    if t.entry_push_off[e] == t.entry_push_off[e + 1]:
        probe.props = reg.props
        probe.keys = reg.keys
    else:
        probe.props = 0
        probe.keys = 0
    return guard_pass(t, g, &probe)


cdef void next_bytes(Ctx* c, const PState* s, uint32_t* out8) noexcept nogil:
    """The set of bytes `s` can consume next, as 8 words of bits."""
    cdef const Tables* t = c.t
    cdef int b
    cdef PState probe
    memset(out8, 0, 8 * sizeof(uint32_t))
    if s.term >= 0:
        for b in range(256):
            if term_step(t, s.term, s.dstate, s.count, <uint8_t>b, &probe):
                out8[b >> 5] |= (<uint32_t>1) << (b & 31)
        if not term_accepting(t, s.term, s.dstate, s.count):
            return
    exit_bytes(c, s, out8)


# --- the compiled structure -------------------------------------------------------------------

_TABLE_FIELDS = {
    "dfa_trans": np.int32, "dfa_accept": np.uint8, "dfa_final": np.uint8,
    "term_start": np.int32, "term_counted": np.uint8, "term_min": np.int32,
    "term_max": np.int32, "term_first": np.uint32, "node_entry_off": np.int32,
    "node_end": np.uint8, "node_first": np.uint32, "entry_term": np.int32,
    "entry_target": np.int32, "entry_push_off": np.int32, "pushes": np.int32,
    "entry_guard": np.int32, "node_guarded": np.uint8, "guard_forbid": np.uint64,
    "guard_need": np.uint64, "guard_set": np.uint64, "guard_min": np.int32,
    "guard_inc": np.int32, "guard_max": np.int32, "guard_reserve": np.uint64,
    "guard_cap": np.int32,
    "guard_clause_off": np.int32, "clause_if": np.uint64, "clause_then": np.uint64,
}


cdef void* _ptr(dict bufs, str name):
    cdef cnp.ndarray arr = bufs[name]
    return cnp.PyArray_DATA(arr)


cdef class CompiledStructure:
    """The read-only tables of one compiled structure, plus its arena of stack frames.

    Built by `pse.compiler`; shared by every stepper and engine of the structure.
    """

    def __cinit__(self):
        self.arena.chunks = NULL
        self.arena.hash_slots = NULL

    def __init__(self, machine, dict tables, int n_rules):
        cdef dict bufs = {}
        cdef int i
        for name, dtype in _TABLE_FIELDS.items():
            # one extra element keeps empty tables addressable
            arr = np.ascontiguousarray(tables[name], dtype=dtype)
            bufs[name] = np.concatenate([arr, np.zeros(1, dtype=dtype)])
        self._buffers = bufs
        self.machine = machine
        self.n_rules = n_rules
        self.terminal_keys = list(tables["terminal_keys"])
        self.terminal_states = list(tables.get("terminal_states") or
                                    [None] * len(self.terminal_keys))
        self.slice_caches = {}
        classes = np.asarray(tables["byte_class"], dtype=np.uint8)
        for i in range(256):
            self.t.byte_class[i] = classes[i]
        self.t.n_classes = int(tables["n_classes"])
        self.t.n_dfa_states = len(tables["dfa_accept"])
        self.t.n_terms = len(tables["term_start"])
        self.t.n_nodes = len(tables["node_end"])
        self.t.n_entries = len(tables["entry_term"])
        self.t.root_node = int(tables["root_node"])
        self.t.dfa_trans = <int32_t*>_ptr(bufs, "dfa_trans")
        self.t.dfa_accept = <uint8_t*>_ptr(bufs, "dfa_accept")
        self.t.dfa_final = <uint8_t*>_ptr(bufs, "dfa_final")
        self.t.term_start = <int32_t*>_ptr(bufs, "term_start")
        self.t.term_counted = <uint8_t*>_ptr(bufs, "term_counted")
        self.t.term_min = <int32_t*>_ptr(bufs, "term_min")
        self.t.term_max = <int32_t*>_ptr(bufs, "term_max")
        self.t.term_first = <uint32_t*>_ptr(bufs, "term_first")
        self.t.node_entry_off = <int32_t*>_ptr(bufs, "node_entry_off")
        self.t.node_end = <uint8_t*>_ptr(bufs, "node_end")
        self.t.node_first = <uint32_t*>_ptr(bufs, "node_first")
        self.t.entry_term = <int32_t*>_ptr(bufs, "entry_term")
        self.t.entry_target = <int32_t*>_ptr(bufs, "entry_target")
        self.t.entry_push_off = <int32_t*>_ptr(bufs, "entry_push_off")
        self.t.pushes = <int32_t*>_ptr(bufs, "pushes")
        self.t.entry_guard = <int32_t*>_ptr(bufs, "entry_guard")
        self.t.node_guarded = <uint8_t*>_ptr(bufs, "node_guarded")
        self.t.n_guards = len(tables["guard_min"])
        self.t.guard_forbid = <uint64_t*>_ptr(bufs, "guard_forbid")
        self.t.guard_need = <uint64_t*>_ptr(bufs, "guard_need")
        self.t.guard_set = <uint64_t*>_ptr(bufs, "guard_set")
        self.t.guard_min = <int32_t*>_ptr(bufs, "guard_min")
        self.t.guard_inc = <int32_t*>_ptr(bufs, "guard_inc")
        self.t.guard_max = <int32_t*>_ptr(bufs, "guard_max")
        self.t.guard_reserve = <uint64_t*>_ptr(bufs, "guard_reserve")
        self.t.guard_cap = <int32_t*>_ptr(bufs, "guard_cap")
        self.t.guard_clause_off = <int32_t*>_ptr(bufs, "guard_clause_off")
        self.t.clause_if = <uint64_t*>_ptr(bufs, "clause_if")
        self.t.clause_then = <uint64_t*>_ptr(bufs, "clause_then")
        arena_init(&self.arena)

    def __dealloc__(self):
        arena_free(&self.arena)

    cdef PState initial_state(self) noexcept:
        cdef PState s
        s.frame = NO_FRAME
        s.node = self.t.root_node
        s.term = -1
        s.dstate = 0
        s.count = 0
        s.props = 0
        s.keys = 0
        return s

    @property
    def n_nodes(self) -> int:
        """Number of parser nodes over all rules."""
        return self.t.n_nodes

    @property
    def n_terminals(self) -> int:
        """Number of distinct terminals (byte automata)."""
        return self.t.n_terms

    @property
    def n_dfa_states(self) -> int:
        """Number of DFA states over all terminals."""
        return self.t.n_dfa_states

    @property
    def n_frames(self) -> int:
        """Number of distinct stack frames created so far (grows with nesting seen)."""
        return self.arena.n_frames

    def __repr__(self):
        return (f"<CompiledStructure rules={self.n_rules} nodes={self.t.n_nodes} "
                f"terminals={self.t.n_terms} dfa_states={self.t.n_dfa_states}>")
