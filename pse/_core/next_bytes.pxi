# Included by structure.pyx (one module: the mask walk calls these without an indirect call).

cdef void set_next_bytes(Ctx* c, const StateSet* set, uint32_t* out8) noexcept nogil:
    """The set of bytes any state of `set` can consume next, as 8 words of bits (a superset:
    guards on items are taken as open). Each union member is popped once, as in step_set (a
    mask walk's call: outside one, the arena's set is used, with the GIL)."""
    cdef const Tables* t = c.t
    cdef const PState* s
    cdef const PState* last = NULL
    cdef StampedIds* popped = popped_set(c)
    cdef int32_t i
    memset(out8, 0, 8 * sizeof(uint32_t))
    for i in range(set.n):
        s = &set.items[i]
        if s.term >= 0:
            if (last == NULL or s.term != last.term or s.dstate != last.dstate
                    or s.count != last.count):  # (a walk's states share their terminals')
                term_bytes(t, s, out8)
                last = s
            if not term_accepting(t, s.term, s.dstate, s.count):
                continue
        exit_bytes_from(c, s, out8, popped)


cdef void exit_bytes(Ctx* c, const PState* at, uint32_t* out8) noexcept nogil:
    """The bytes that can start something at `at`'s node (popping where rules end), ORed in."""
    cdef StampedIds popped
    stamped_begin(&popped)
    exit_bytes_from(c, at, out8, &popped)
    stamped_free(&popped)


cdef void exit_bytes_from(Ctx* c, const PState* at, uint32_t* out8, StampedIds* popped
                          ) noexcept nogil:
    """exit_bytes(), through the unions and union members not in `popped`."""
    cdef PState then = at[0]
    cdef int32_t u = chain_bytes(c, &then, out8)
    if u != NO_FRAME and add_stamped(popped, u):
        members_bytes(c, u, out8, popped)


cdef inline int32_t chain_bytes(Ctx* c, PState* at, uint32_t* out8) noexcept nogil:
    """OR into `out8` the bytes that can start something at `at`'s node and, where rules
    end, at the nodes its frames return to, up to a union frame: that union (NO_FRAME: none
    reached). `at` is moved along (its node, frame and register)."""
    cdef const Tables* t = c.t
    cdef int k
    cdef int32_t e, g, node = at.node
    cdef Frame* fr
    while True:
        if not t.node_guarded[node]:
            for k in range(8):
                out8[k] |= t.node_first[8 * node + k]
        else:
            for e in range(t.node_entry_off[node], t.node_entry_off[node + 1]):
                g = t.entry_guard[e]
                if g != 0 and not entry_open(t, e, g, at):
                    continue
                for k in range(8):
                    out8[k] |= t.term_first[8 * t.entry_term[e] + k]
        if not t.node_end[node] or at.frame == NO_FRAME:
            return NO_FRAME
        fr = get_frame(c, at.frame)
        if fr.node == UNION_NODE:
            return at.frame
        node = at.node = fr.node
        at.frame = fr.parent
        load_register(at, fr)


cdef inline int32_t member_bytes(Ctx* c, int32_t member, uint32_t* out8) noexcept nogil:
    """chain_bytes() from the return of union member `member` (itself, when a union)."""
    cdef Frame* fr
    cdef PState then
    if is_union(c, member):
        return member
    fr = get_frame(c, member)
    then.node = fr.node
    then.frame = fr.parent
    load_register(&then, fr)
    return chain_bytes(c, &then, out8)


cdef void members_bytes(Ctx* c, int32_t u, uint32_t* out8, StampedIds* popped) noexcept nogil:
    """The exit bytes of union u's members' returns not in `popped` (and of the unions they
    reach, each once, waiting in a list: see expand_members, whose cells met again end a
    list too), ORed into `out8`; an arena union's as kept (or_kept)."""
    cdef int n = 0
    cdef int32_t v
    cdef Frame* cell
    cdef int32_t waiting[PENDING]
    cdef bint first
    while True:
        if or_kept(c, u, out8):  # (checked once per union, not per cell: a cell's `seen` is
            u = NO_FRAME         # the rest of the list, a union too)
        first = True
        while u != NO_FRAME:
            if not first and u & SCRATCH_BIT == 0 and not add_stamped(popped, u):
                break  # (see expand_members: a walk's cells are reached from one alone)
            first = False
            cell = get_frame(c, u)
            u = cell.seen
            if not add_stamped(popped, cell.parent):
                continue
            v = member_bytes(c, cell.parent, out8)
            if v == NO_FRAME or (v != cell.parent and not add_stamped(popped, v)):
                continue
            if n < PENDING:
                waiting[n] = v
                n += 1
            else:
                members_bytes(c, v, out8, popped)
        if n == 0:
            return
        n -= 1
        u = waiting[n]


# --- exit bytes kept per arena union (a mask walker's: Walker.exits) --------------------------
# Each state's exit bytes pop the unions below it; where each a pops through stacks of every
# depth, many states sit over one graph of unions, and a mask finds the exit bytes of many
# (a plan's roots and jobs, the sets a walk filters by: set_next_bytes), each popping all of
# it. What a union's members' returns can start depends only on the union (each member's
# return loads its own register), and the arena's frames never change (a walk's own, in the
# scratch, are dropped after it): a walker keeps each arena union's bytes, found once.

cdef void union_bytes_init(UnionBytes* m) noexcept nogil:
    memset(m, 0, sizeof(UnionBytes))


cdef void union_bytes_free(UnionBytes* m) noexcept nogil:
    free(m.slots)
    free(m.ids)
    free(m.bytes)
    memset(m, 0, sizeof(UnionBytes))


cdef inline bint or_kept(Ctx* c, int32_t u, uint32_t* out8) noexcept nogil:
    """OR the exit bytes of union u into `out8` from those kept (c.exits), when it is the
    arena's; False when it is not, none are kept, or out of memory (the caller pops it)."""
    cdef int32_t i
    cdef int k
    if c.exits == NULL or c.exits.off or u & SCRATCH_BIT:
        return False
    i = union_bytes_of(c, c.exits, u)
    if i < 0:
        return False
    for k in range(8):
        out8[k] |= c.exits.bytes[8 * i + k]
    return True


cdef int32_t union_bytes_of(Ctx* c, UnionBytes* m, int32_t u) noexcept nogil:
    """The index in `m` of arena union u's exit bytes, found now with those of the unions
    below it (all the arena's: its frames only point to its older ones; post-order, on a
    stack of its own, since unions nest as deep as the text is long) unless found before; -1
    out of memory (`m` is then left empty and off)."""
    cdef int32_t i = union_find(m, u), j, k, v, cell_id, sp = 0, cap = 0
    cdef int32_t* work = NULL  # pairs: a union's index in `m`, its next cell
    cdef int32_t* grown
    cdef Frame* cell
    if i >= 0:
        return i
    v = u
    while True:
        if v != NO_FRAME:  # a union not found before: its members next
            k = union_add(m, v)
            if sp == cap:
                cap = max(64, 2 * cap)
                grown = <int32_t*>realloc(work, 2 * cap * sizeof(int32_t))
                if grown == NULL:
                    k = -1
                else:
                    work = grown
            if k < 0:
                free(work)
                union_bytes_free(m)
                m.off = True
                return -1
            work[2 * sp] = k
            work[2 * sp + 1] = v
            sp += 1
        j = work[2 * sp - 2]
        cell_id = work[2 * sp - 1]
        if cell_id == NO_FRAME:  # its bytes are all in: into the union below which it was
            sp -= 1
            if sp == 0:
                free(work)
                return j
            or_bytes(m, work[2 * sp - 2], j)
            v = NO_FRAME
            continue
        cell = get_frame(c, cell_id)
        work[2 * sp - 1] = cell.seen
        v = member_bytes(c, cell.parent, &m.bytes[8 * j])
        if v != NO_FRAME:
            k = union_find(m, v)  # (found: done, frames only point to older ones)
            if k >= 0:
                or_bytes(m, j, k)
                v = NO_FRAME


cdef inline void or_bytes(UnionBytes* m, int32_t into, int32_t src) noexcept nogil:
    cdef int k
    for k in range(8):
        m.bytes[8 * into + k] |= m.bytes[8 * src + k]


cdef int32_t union_find(const UnionBytes* m, int32_t u) noexcept nogil:
    """u's index in `m`, or -1."""
    cdef int64_t h
    if m.n == 0:
        return -1
    h = (<uint32_t>u * 0x9E3779B1u) & m.mask
    while m.slots[h] != -1:
        if m.ids[m.slots[h]] == u:
            return m.slots[h]
        h = (h + 1) & m.mask
    return -1


cdef int32_t union_add(UnionBytes* m, int32_t u) noexcept nogil:
    """A new index for u (not in `m`), its bytes none yet; -1 out of memory or when off."""
    cdef int64_t h, size
    cdef int32_t i, cap
    cdef int32_t* slots
    cdef void* grown
    if m.off:
        return -1
    if m.n == m.cap:
        cap = max(64, 2 * m.cap)
        grown = realloc(m.ids, cap * sizeof(int32_t))
        if grown == NULL:
            return -1
        m.ids = <int32_t*>grown
        grown = realloc(m.bytes, 8 * cap * sizeof(uint32_t))
        if grown == NULL:
            return -1
        m.bytes = <uint32_t*>grown
        m.cap = cap
    if 2 * (m.n + 1) > m.mask + 1:
        size = max(128, 2 * (m.mask + 1))
        slots = no_ids(size)
        if slots == NULL:
            return -1
        for i in range(m.n):
            h = (<uint32_t>m.ids[i] * 0x9E3779B1u) & (size - 1)
            while slots[h] != -1:
                h = (h + 1) & (size - 1)
            slots[h] = i
        free(m.slots)
        m.slots = slots
        m.mask = size - 1
    h = (<uint32_t>u * 0x9E3779B1u) & m.mask
    while m.slots[h] != -1:
        h = (h + 1) & m.mask
    i = m.n
    m.slots[h] = i
    m.ids[i] = u
    memset(&m.bytes[8 * i], 0, 8 * sizeof(uint32_t))
    m.n += 1
    return i


cdef inline bint entry_open(const Tables* t, int32_t e, int32_t g, const PState* reg
                            ) noexcept nogil:
    """Whether guard g of entry e lets a state with register `reg` in. An item guard is
    taken as open: that needs the text, and callers only use this to narrow the bytes tried."""
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
    memset(out8, 0, 8 * sizeof(uint32_t))
    if s.term >= 0:
        term_bytes(c.t, s, out8)
        if not term_accepting(c.t, s.term, s.dstate, s.count):
            return
    exit_bytes(c, s, out8)


cdef void term_bytes(const Tables* t, const PState* s, uint32_t* out8) noexcept nogil:
    """The bytes that go on within `s`'s terminal (s.term >= 0), ORed into `out8`."""
    cdef int b
    cdef PState probe
    for b in range(256):
        if term_step(t, s.term, s.dstate, s.count, <uint8_t>b, &probe):
            out8[b >> 5] |= (<uint32_t>1) << (b & 31)
