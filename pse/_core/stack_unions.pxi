# Included by structure.pyx (one module: the byte step calls these without an indirect call).

# --- unions of stacks -------------------------------------------------------------------------
# States equal but for the top frames of their stacks, pushed over one stack, become one state
# whose frame holds all their stacks: a list of cells (frames whose node is UNION_NODE), each
# with one member stack as its parent and the next cell as its `seen`, the members newest
# first (by id, descending), so that the arena interns a union as it interns any frame, and a
# union of an older one's members and newer stacks shares the older one's cells. Popping a
# union pops each member in turn (a lazy union's members with equal tops as one: see
# expand_members), so the merged state parses exactly what the states did, and a stack level
# is shared, not copied per stack (S -> 'a' S 'b' | 'a' S 'c' | '', two branches
# that each call S, holds 2^n stacks after n a's: two states of two members each). "Over one
# stack" looks past frames that return where their rule only ends (`s: "a" t` calling `t: s
# "c"`: the pop goes on through them). Members that are runs of one frame over one stack
# (see push_frame) join into one run when their bounds meet (join_runs): `s: "a" s | "a" s s |
# "a"`, whose stacks differ in how many calls of s are pending (the empty stack, or the pending
# call repeated 1..n times), keeps three live states however many a's were read. Where
# STATE_MERGE_FROM states or more are still left, states equal but for their stacks become
# one whatever their stacks (BY_STATE): its frame is a lazy union of the stacks' tops, those
# with equal tops one top over the lazy union of what was below them (share_tops). A lazy
# union's members may be unions, of any depths; popping one pops each member once
# (`popped`). `s: "a" s s "b" | "a"`, whose stacks are sequences over the two returns of s
# (Fibonacci-many after n a's, "too ambiguous" at the 17th), keeps a few live states. A few
# runs of one frame over one stack stay apart (see one_run). Merged as text is consumed (the
# arena's frames), in a mask walk once it needs to (see step_set). Not in structures with
# unique arrays: their items read the registers down the stack.

cdef enum:  # merge_stacks' passes (group_stacks)
    BY_BELOW = 0
    BY_RUN = 1
    BY_STATE = 2
    STATE_MERGE_FROM = 4      # BY_STATE, from this many states left (5 and 8 states
                              # alternate in `s: "a" s s "b" | "a"`: from 8, a step took
                              # 40% more, merging only every other byte)
    ONE_RUN_BELOW = 8         # BY_STATE leaves fewer runs apart (see one_run)
    WALK_TOPS = 256           # BY_STATE in a mask walk past WALK_FRAMES scratch frames
    WALK_FRAMES = 1 << 20     # shares at most WALK_TOPS tops (see gather_group)
    FEW_TOPS = 8              # share_tops: so few stacks are searched for equal tops first


cdef enum:  # a union's kind: its cells' `props` (see union_of)
    OVER_ONE = 0              # tops over one stack
    LAZY = 1                  # any stacks (see is_lazy)


cdef inline bint is_union(Ctx* c, int32_t f) noexcept nogil:
    return f != NO_FRAME and get_frame(c, f).node == UNION_NODE


cdef inline bint is_lazy(Ctx* c, int32_t f) noexcept nogil:
    """Union f may hold any stacks, unions among them (LAZY): else its members are tops over
    one stack. BY_BELOW never takes a lazy union apart (it would copy every stack merged
    before into each new union); its tops are gathered when the states holding it merge again
    (add_tops), and its members popped each once."""
    return get_frame(c, f).props != 0


cdef inline bint add_stamped(StampedIds* s, int32_t id) noexcept nogil:
    """True when `id` is new to `s` (and now in it), False when it was there: an id marked
    by id (see add_stamped_else) inline, in the pops' loops (13.8 million calls over the
    masks of a long text of three rules calling each other every way at once, 8% of their
    instructions as calls)."""
    cdef uint32_t k = <uint32_t>id - <uint32_t>SCRATCH_BIT  # (a walk's id: below walk_dense_n)
    if <uint32_t>id < <uint32_t>s.dense_n:
        if s.dense[id] == s.stamp:
            return False
        s.dense[id] = s.stamp
        return True
    if k < <uint32_t>s.walk_dense_n:
        if s.walk_dense[k] == s.stamp:
            return False
        s.walk_dense[k] = s.stamp
        return True
    return add_stamped_else(s, id)


cdef bint add_stamped_else(StampedIds* s, int32_t id) noexcept nogil:
    """add_stamped, for an id not marked by id yet: its array grown to it, or hashed. Out of
    memory, an id not there is new every time: the walk is then slower, never wrong. With dense_on,
    an id is marked in an array by id, not hashed: an arena id in `dense`, a walk's own in
    `walk_dense` (its scratch ids are reused as the walk moves on: a mark is the id's, as a
    hashed slot was). A walk pops arena ids more than its own (26 million against 11 over the
    masks of a long text of three rules calling each other every way at once), and ids made
    together are neighbours, where each hashed look-up was a cache miss (12% fewer
    first-level misses in those masks with the arena's ids marked, 3% less time with a walk's
    own)."""
    cdef uint32_t stamp = s.stamp
    cdef uint64_t key = (<uint64_t>stamp << 32) | <uint32_t>id, old
    cdef int64_t h, i, size
    cdef uint64_t* grown
    cdef int32_t k = id & ~SCRATCH_BIT
    if s.dense_on and 0 <= id < DENSE_MAX and grow_dense(&s.dense, &s.dense_n, id, s):
        s.dense[id] = stamp  # (past the array before it grew: not there)
        return True
    if (id > 0 and id & SCRATCH_BIT and s.dense_on and k < DENSE_MAX
            and grow_dense(&s.walk_dense, &s.walk_dense_n, k, s)):
        s.walk_dense[k] = stamp
        return True
    if s.slots == NULL:
        s.slots = s.few
        memset(s.few, 0, sizeof(s.few))
        s.mask = sizeof(s.few) // sizeof(uint64_t) - 1
    h = (<uint32_t>id * 0x9E3779B1u) & s.mask
    while True:  # (at most half full: an empty slot, of another stamp, ends the search)
        old = s.slots[h]
        if old == key:
            return False
        if old >> 32 != stamp:
            break
        h = (h + 1) & s.mask
    if 2 * (s.n + 1) <= s.mask + 1:
        s.slots[h] = key
        s.n += 1
        return True
    size = 2 * (s.mask + 1)
    grown = <uint64_t*>calloc(size, sizeof(uint64_t))
    if grown == NULL:
        return True
    for i in range(s.mask + 1):
        old = s.slots[i]
        if old >> 32 == stamp:
            h = (<uint32_t>old * 0x9E3779B1u) & (size - 1)
            while grown[h] != 0:
                h = (h + 1) & (size - 1)
            grown[h] = old
    if s.slots != s.few:
        free(s.slots)
    s.slots = grown
    s.mask = size - 1
    h = (<uint32_t>id * 0x9E3779B1u) & s.mask
    while s.slots[h] != 0:
        h = (h + 1) & s.mask
    s.slots[h] = key
    s.n += 1
    return True


cdef enum:
    DENSE_MAX = 1 << 22       # ids a set marks by id, at most, of the arena and of a walk
                              # (16 MiB each; an arena or a scratch that large holds 160 MiB
                              # of frames)


cdef bint grow_dense(uint32_t** dense, int32_t* dense_n, int32_t id, StampedIds* s
                     ) noexcept nogil:
    """Make the marks dense[0][:dense_n[0]] of set `s` cover id `id` (< DENSE_MAX), a power
    of two of ids; False out of memory (the set goes on hashing the ids past it). Zeroed by
    calloc, not memset: the pages of ids never looked up are not touched (a walk looks up
    the ids of the unions it pops, not every id of its arena), but for the old array's,
    copied."""
    cdef int64_t n = 4096
    cdef uint32_t* grown
    while n <= id:
        n *= 2
    n = min(n, <int64_t>DENSE_MAX)
    grown = <uint32_t*>calloc(n, sizeof(uint32_t))
    if grown == NULL:
        s.dense_on = False
        return False
    if dense[0] != NULL:
        memcpy(grown, dense[0], dense_n[0] * sizeof(uint32_t))
        free(dense[0])
    dense[0] = grown
    dense_n[0] = <int32_t>n
    return True


cdef int32_t add_members(Ctx* c, int32_t f, int32_t* out, int32_t n, int32_t room
                         ) noexcept nogil:
    """Append the member stacks of frame f (itself, unless a union of tops over one stack) to
    out[n:room]; the new count, or -1 past `room`."""
    cdef Frame* cell
    if not is_union(c, f):  # (a lazy union is never a BY_BELOW or BY_RUN state's frame)
        if n == room:
            return -1
        out[n] = f
        return n + 1
    while f != NO_FRAME:
        if n == room:
            return -1
        cell = get_frame(c, f)
        out[n] = cell.parent
        n += 1
        f = cell.seen
    return n


cdef int32_t add_tops(Ctx* c, int32_t f, int32_t* out, int32_t n, int32_t room,
                      StampedIds* seen) except -2 nogil:
    """Append the stacks of frame f that are no unions (through unions in unions; each once,
    those in `seen` already there) to out[n:room], member before next cell; the new count, or
    -1 past `room`. In a mask walk, the arena's unions are not gone through (they are
    appended as they are): their tops were shared as the text was read, and the walk's
    frames are not interned, so gathering every top at each merge made the scratch grow by
    all of them per merge (a walk merging at every byte of every exit ran out of memory).
    A list of the cells to go on from, not a recursion: unions nest as deep as the text is
    long (450 a's of three rules calling each other overflowed a thread's 256 KiB stack). A
    walk's cell after a union's first stays out of `seen`: it is reached from the cell before
    it alone (see expand_members)."""
    cdef int32_t few[64]
    cdef int32_t* later = few    # cells to go on from, once the member before them is done
    cdef int32_t n_later = 0, cap = 64
    cdef int32_t* grown
    cdef Frame* cell
    cdef bint next_cell = False  # f is a cell after a union's first
    try:
        while True:
            while f != NO_FRAME:
                if not (next_cell and f & SCRATCH_BIT) and not add_stamped(seen, f):
                    break  # (its cells after it are gone through, or will be)
                next_cell = False
                # (in a walk, the arena's frames are appended unread)
                cell = NULL if c.scratch != NULL and not f & SCRATCH_BIT else get_frame(c, f)
                if cell == NULL or cell.node != UNION_NODE:
                    if n == room:
                        return -1
                    out[n] = f
                    n += 1
                    break
                if cell.seen != NO_FRAME:
                    if n_later == cap:
                        grown = <int32_t*>malloc(2 * <size_t>cap * sizeof(int32_t))
                        if grown == NULL:
                            with gil:
                                raise MemoryError()
                        memcpy(grown, later, cap * sizeof(int32_t))
                        if later != few:
                            free(later)
                        later = grown
                        cap *= 2
                    later[n_later] = cell.seen
                    n_later += 1
                f = cell.parent
            if n_later == 0:
                return n
            n_later -= 1
            f = later[n_later]
            next_cell = True
    finally:
        if later != few:
            free(later)


cdef bint one_run(Ctx* c, const int32_t* members, int32_t n) noexcept nogil:
    """The stacks members[:n] (no unions) are runs of one frame over one stack X, X itself
    among them or not: BY_RUN's shape but for bounds that do not meet (k in 0, 1..7, 9).
    BY_STATE leaves such stacks apart: a frame pushed over their union makes no run (a run
    needs its frame below), so each step would nest one more union (`s: s "a" "a" "a" | s s
    "a" | "a"` keeps 9 states apart; merged, it was "too ambiguous" at the 1,020th a)."""
    cdef int32_t i, j, x
    for j in range(min(n, 2)):  # (the run is the first member or, that being X, the second)
        x = get_frame(c, members[j]).parent
        for i in range(n):
            if not (same_stack(c, members[i], x) or (
                    same_top(c, members[i], members[j])
                    and same_stack(c, get_frame(c, members[i]).parent, x))):
                break
        else:
            return True
    return False


cdef int32_t join_runs(Ctx* c, int32_t* members, int32_t n) except -2 nogil:
    """Join the stacks members[:n] that are runs of one frame over one stack with bounds that
    meet or touch (k..l and l+1..m make k..m) into one run each, in place; the new count."""
    cdef int32_t i = 0, j
    cdef Frame* x
    cdef Frame* y
    cdef PState reg
    while i < n:
        j = i + 1
        while j < n:
            x = get_frame(c, members[i])
            y = get_frame(c, members[j])
            if (x.lo <= y.hi + 1 and y.lo <= x.hi + 1
                    and same_runs(c, members[i], members[j])):
                load_register(&reg, x)
                members[i] = make_frame(c, x.node, x.parent, &reg, min(x.lo, y.lo),
                                        max(x.hi, y.hi))
                n -= 1
                members[j] = members[n]
                j = i + 1  # (the longer run may meet one passed over)
            else:
                j += 1
        i += 1
    return n


cdef int32_t union_of(Ctx* c, int32_t* members, int32_t n, int kind) except -2 nogil:
    """The frame holding the stacks members[:n] (n >= 1; reordered in place), a union of
    `kind`: tops over one stack, or any stacks (see is_lazy). Newest first: the cells of the
    older members are then those of a union made before from them, where there was one (a
    union of the stacks below a top gains the newer ones at each byte; oldest first, each
    byte made all its cells again: `s: "a" s s "b" | "a" s "c" | "a" s | "a"`, 400 a's, 46%
    less per token). A mask walk's lazy unions keep the order given (walk_lazy_union)."""
    cdef int32_t i, kept, cell
    cdef PState reg
    if c.scratch != NULL and kind == LAZY:
        return walk_lazy_union(c, members, n)
    sort_descending(members, n)
    kept = 1
    for i in range(1, n):
        if members[i] != members[kept - 1]:
            members[kept] = members[i]
            kept += 1
    if kept == 1:
        return members[0]
    reg = ZERO_REG
    reg.props = kind
    cell = NO_FRAME
    for i in range(kept - 1, -1, -1):  # (a cell's `keys`: a hash of its members and those after)
        reg.keys = (reg.keys ^ get_frame(c, members[i]).stack) * <uint64_t>0x9E3779B97F4A7C15u
        reg.seen = cell
        cell = make_frame(c, UNION_NODE, members[i], &reg, 1, 1)
    return cell


cdef int32_t walk_lazy_union(Ctx* c, int32_t* members, int32_t n) except -2 nogil:
    """union_of(members, n, LAZY) in a mask walk: each member once (in place), in the order
    given, the cells made in one go, the arena's members not read. A walk's cells are not
    interned, so no order shares an older union's cells: not sorted. A cell's `keys` hashes
    an arena member by its id (interned: equal stacks, equal ids) and the walk's own by its
    `stack`; its `stack` is its `keys` (no two of a walk's unions hold equal stacks: their
    cells' `seen` differ). So equal unions given in other orders are not grouped BY_BELOW
    (same_below reads their members in order; BY_STATE merges them), and the arena's frames,
    a cache miss each, are not read: about 30% fewer instructions in the masks of a long text
    of three rules calling each other every way at once."""
    cdef Scratch* s = c.scratch
    cdef Frame* fr
    cdef PState reg = ZERO_REG
    cdef uint64_t keys = 0
    cdef int32_t i, kept = 0, cell = NO_FRAME
    cdef StampedIds* seen = &s.tops_seen  # (no gather of tops is under way: see gather_group)
    stamped_clear(seen)
    for i in range(n):
        if add_stamped(seen, members[i]):
            members[kept] = members[i]
            kept += 1
    n = kept
    if n == 1:
        return members[0]
    reg.props = LAZY
    scratch_reserve(s, n)
    for i in range(n - 1, -1, -1):  # (as union_of: a cell's `keys` hashes it and those after)
        if members[i] & SCRATCH_BIT:
            keys = (keys ^ get_frame(c, members[i]).stack) * <uint64_t>0x9E3779B97F4A7C15u
        else:
            keys = (keys ^ (<uint32_t>members[i] * 0x2545F491u)) * <uint64_t>0x9E3779B97F4A7C15u
        reg.keys = keys
        reg.seen = cell
        fr = &s.frames[s.n]
        set_frame(fr, UNION_NODE, members[i], &reg, 1, 1)
        fr.stack = <uint32_t>(keys >> 32) ^ <uint32_t>keys
        cell = s.n | SCRATCH_BIT
        s.n += 1
    return cell


cdef inline int32_t stack_below(Ctx* c, int32_t f, bint* saw_run) except -2 nogil:
    """The stack under frame f's top (of a union: under its members' tops, which they share;
    of a run of k frames: the run of k - 1), past frames that return where their rule only
    ends (a pop goes on through them); NOT_MERGED for the empty stack, for a top that is such
    a frame itself, and for a run of more than one length (its runs join: see join_runs).
    A run sets `saw_run`."""
    cdef Frame* fr
    cdef const Tables* t = c.t
    cdef PState reg
    if f == NO_FRAME:
        return NOT_MERGED
    fr = get_frame(c, f)
    if fr.node == UNION_NODE:
        if is_lazy(c, f):  # (its members share nothing)
            return NOT_MERGED
        fr = get_frame(c, fr.parent)  # (the first member: they share what is below)
    elif only_ends(t, fr.node):
        return NOT_MERGED
    if fr.hi > 1:
        saw_run[0] = True
        if fr.lo < fr.hi:
            return NOT_MERGED
        if not only_ends(t, fr.node):
            load_register(&reg, fr)
            return make_frame(c, fr.node, fr.parent, &reg, fr.lo - 1, fr.hi - 1)
    f = fr.parent
    while f != NO_FRAME:
        fr = get_frame(c, f)
        if fr.node == UNION_NODE or not only_ends(t, fr.node):
            break
        f = fr.parent
    return f


cdef bint same_below(Ctx* c, int32_t f, int32_t g) noexcept nogil:
    """Stacks f and g (as stack_below finds them) are equal: same_stack, or unions whose
    cells hold equal members in the same order (a walk's unions are not interned: merging two
    groups over one stack makes two unions of the same members; a walk's lazy unions made in
    other orders are not equal here: see walk_lazy_union)."""
    cdef Frame* x
    cdef Frame* y
    if f == g:
        return True
    if f < 0 or g < 0:  # (the empty stack, NOT_MERGED)
        return False
    if not (is_union(c, f) and is_union(c, g)):
        return same_stack(c, f, g)
    while f != NO_FRAME and g != NO_FRAME:
        x = get_frame(c, f)
        y = get_frame(c, g)
        if not same_stack(c, x.parent, y.parent):
            return False
        f = x.seen
        g = y.seen
    return f == g


cdef bint same_runs(Ctx* c, int32_t f, int32_t g) noexcept nogil:
    """Frames f and g (NOT_MERGED: none) are runs of one frame over one stack."""
    return (same_top(c, f, g) and get_frame(c, f).node != UNION_NODE
            and same_stack(c, get_frame(c, f).parent, get_frame(c, g).parent))


cdef int32_t top_over(Ctx* c, int32_t f) noexcept nogil:
    """Frame f, when its top can be shared by stacks that differ below it (share_tops): a
    frame over a stack, or an exact run of k >= 2 frames (the frame over the run of k - 1);
    else NOT_MERGED."""
    if f == NO_FRAME or not top_shares(get_frame(c, f)):
        return NOT_MERGED
    return f


cdef inline bint top_shares(const Frame* fr) noexcept nogil:
    """top_over, of a frame that is not the empty stack."""
    return not (fr.node == UNION_NODE or fr.lo != fr.hi or (fr.hi == 1 and fr.parent == NO_FRAME))


cdef bint same_top(Ctx* c, int32_t f, int32_t g) noexcept nogil:
    """Frames f and g (NOT_MERGED: none) return to one node with one register."""
    if f < 0 or g < 0:
        return False
    return equal_tops(get_frame(c, f), get_frame(c, g))


cdef inline bint equal_tops(const Frame* x, const Frame* y) noexcept nogil:
    """same_top, of two frames."""
    return (x.node == y.node and x.props == y.props and x.keys == y.keys and x.seen == y.seen
            and x.item == y.item)


cdef int32_t parent_of_top(Ctx* c, int32_t f) except -2 nogil:
    """The stack under the top of frame f (as top_over finds it): its parent, or of a run of
    k frames, the run of k - 1."""
    cdef Frame* fr = get_frame(c, f)
    cdef PState reg
    if fr.hi == 1:
        return fr.parent
    load_register(&reg, fr)
    return make_frame(c, fr.node, fr.parent, &reg, fr.lo - 1, fr.hi - 1)


cdef int32_t top_on(Ctx* c, int32_t f, int32_t below) except -2 nogil:
    """The top of frame f (as top_over finds it) pushed on the stack `below`."""
    cdef Frame* fr = get_frame(c, f)
    cdef PState reg
    load_register(&reg, fr)
    return push_frame(c, fr.node, below, &reg)


cdef int32_t share_tops(Ctx* c, int32_t* members, int32_t n) except -2 nogil:
    """Stacks members[:n] (no unions) with equal tops (see top_over) become one each, the top
    over the lazy union of what is below them, in place; the new count. So merged states
    keep a few tops, each over the stacks below it, as a graph-structured stack does: its
    union is not taken apart until the top is popped. The tops are grouped through a hash
    table (a search of each top's equals among the rest cost the stacks times the distinct
    tops: about 250 by 25 at each byte of a mask over 40 a's of three rules calling each
    other)."""
    cdef int32_t few[3 * 64 + 128]
    cdef int32_t* buf = few
    cdef int64_t size = 16, h
    cdef int32_t i, j, k, m, kept = 0
    cdef const Frame* x
    if n <= FEW_TOPS and not any_top_shared(c, members, n):  # (most: no table to clear)
        return n
    while size < 2 * n:
        size *= 2
    if n > 64:
        buf = <int32_t*>malloc((3 * n + size) * sizeof(int32_t))
        if buf == NULL:
            with gil:
                raise MemoryError()
    cdef int32_t* next = buf           # per stack: the next of its top's group (-1: the last)
    cdef int32_t* grouped = buf + n    # ... 1 where an earlier stack leads its group
    cdef int32_t* below = buf + 2 * n  # a group's stacks under their top
    cdef int32_t* slots = buf + 3 * n  # the stack leading each group, by its top's hash
    try:
        memset(slots, 0xFF, size * sizeof(int32_t))
        for i in range(n):
            next[i] = -1
            grouped[i] = 0
            x = get_frame(c, members[i])  # (members are no empty stacks: see add_tops)
            if not top_shares(x):
                continue
            h = <int64_t>(top_hash(x) & <uint64_t>(size - 1))
            while slots[h] >= 0 and not equal_tops(get_frame(c, members[slots[h]]), x):
                h = (h + 1) & (size - 1)
            if slots[h] < 0:
                slots[h] = i
            else:
                j = slots[h]
                next[i] = next[j]
                next[j] = i
                grouped[i] = 1
        for i in range(n):  # (a group's stacks come after its first: members[kept] is done)
            if grouped[i]:
                continue
            if next[i] < 0:
                members[kept] = members[i]
            else:
                m = 0
                k = i
                while k >= 0:
                    below[m] = parent_of_top(c, members[k])
                    m += 1
                    k = next[k]
                members[kept] = top_on(c, members[i], union_of(c, below, m, LAZY))
            kept += 1
    finally:
        if buf != few:
            free(buf)
    return kept


cdef bint any_top_shared(Ctx* c, const int32_t* members, int32_t n) noexcept nogil:
    """Whether two of the stacks members[:n] have equal tops that share_tops would make one
    (a search of each among those before it: for a few stacks)."""
    cdef int32_t i, j
    for i in range(1, n):
        if top_over(c, members[i]) == NOT_MERGED:
            continue
        for j in range(i):
            if same_top(c, members[i], members[j]) and top_over(c, members[j]) != NOT_MERGED:
                return True
    return False


cdef inline uint64_t top_hash(const Frame* x) noexcept nogil:
    """share_tops: equal for frames same_top calls equal."""
    cdef uint64_t h = <uint32_t>x.node * <uint64_t>0x9E3779B97F4A7C15u ^ <uint32_t>x.props
    h = (h * <uint64_t>0x9E3779B97F4A7C15u) ^ x.keys
    h = (h * <uint64_t>0x9E3779B97F4A7C15u) ^ ((<uint64_t><uint32_t>x.seen << 32)
                                                | <uint32_t>x.item)
    h *= <uint64_t>0x9E3779B97F4A7C15u
    return h ^ (h >> 32)


cdef int32_t merge_stacks(Ctx* c, StateSet* s, bint dry=False) except -1 nogil:
    """Make the states of `s` equal but for their stacks fewer, in place: those equal but for
    the top of their stacks one each, whose frame holds all their stacks (see union_of),
    then those whose stacks are runs of one frame over one stack with bounds that meet one
    each (join_runs), then, where STATE_MERGE_FROM states or more are left, those equal but
    for their stacks one each, whatever their stacks (a lazy union: see share_tops). How
    many states are left (dry: about how many would be; `s` stays). A mask walk's set skips
    BY_BELOW: BY_STATE, which follows once a few states are left, takes a walk's unions apart
    again to gather their tops (add_tops), so they were made for nothing (a tenth of the masks
    of a long text of three rules calling each other every way at once)."""
    cdef int32_t n = s.n, left
    cdef bint saw_run = False
    if c.scratch != NULL and not dry:
        saw_run = any_run(c, s)
        left = n
    else:
        left = group_stacks(c, s, BY_BELOW, dry, &saw_run)
    if saw_run:  # (runs are rare: most sets skip that pass)
        if dry:  # (the passes counted over the unchanged set: an estimate)
            left -= n - group_stacks(c, s, BY_RUN, True, &saw_run)
        else:
            left = group_stacks(c, s, BY_RUN, False, &saw_run)
    if left >= STATE_MERGE_FROM:  # (the passes above keep most sets small: few get here)
        if dry:
            left -= n - group_stacks(c, s, BY_STATE, True, &saw_run)
        else:
            left = group_stacks(c, s, BY_STATE, False, &saw_run)
    return max(1, left)


cdef bint any_run(Ctx* c, const StateSet* s) noexcept nogil:
    """Whether a state of `s` has a run of more than one frame on top of its stack (what
    BY_BELOW's stack_below finds on its way; a union's cell is no run)."""
    cdef int32_t i
    for i in range(s.n):
        if s.items[i].frame != NO_FRAME and get_frame(c, s.items[i].frame).hi > 1:
            return True
    return False


cdef int32_t group_stacks(Ctx* c, StateSet* s, int by, bint dry, bint* saw_run
                          ) except -1 nogil:
    """merge_stacks' passes over states equal but for their stacks: BY_BELOW, those whose
    stacks are over one stack (see stack_below: their pops lead back to one place, so a
    union's members do not overlap) get a union of them; BY_RUN, those whose stacks are runs
    of one frame over one stack join theirs; BY_STATE, any get a lazy union of their stacks'
    tops (share_tops). How many states are left (dry: would be)."""
    cdef int32_t i, j, k, n = s.n, kept = 0, n_members, n_grouped = 0
    cdef int kind
    cdef int64_t size = 1, h
    cdef int32_t few_members[256]
    cdef int32_t* members = few_members
    cdef int32_t room = 256
    cdef int32_t few[3 * INDEX_FROM]
    cdef int32_t* slots = NULL
    cdef int32_t* group = few    # per state: the first state it merges with (-1: merged)
    cdef int32_t* next = NULL    # ... the next state of its group (-1: the last)
    cdef int32_t* key = NULL     # ... and what it must share: the stack under its frame's
                                 # top (BY_BELOW), its frame (BY_RUN; BY_STATE: a stack)
    cdef PState* items = s.items
    try:
        if n > INDEX_FROM:
            group = <int32_t*>malloc(3 * n * sizeof(int32_t))
            if group == NULL:
                with gil:
                    raise MemoryError()
        next = group + n
        key = group + 2 * n
        if n >= INDEX_FROM:  # (a hash of all but the frame, and of the key; below, a search)
            while size < 2 * n:
                size *= 2
            slots = empty_slots(size)
        for i in range(n):
            group[i] = i
            next[i] = -1
            if by == BY_BELOW:
                key[i] = stack_below(c, items[i].frame, saw_run)
            elif by == BY_RUN:
                key[i] = NOT_MERGED if is_union(c, items[i].frame) else items[i].frame
            else:  # (the empty stack is no union's member)
                key[i] = NOT_MERGED if items[i].frame == NO_FRAME else items[i].frame
            if key[i] == NOT_MERGED:
                continue
            if slots == NULL:
                for j in range(i):
                    if (group[j] == j and memcmp(&items[j].node, &items[i].node,
                                                 sizeof(PState) - sizeof(int32_t)) == 0
                            and same_key(c, by, key[j], key[i])):
                        group[i] = j
                        break
            else:
                h = <int64_t>((state_hash(c, &items[i], False) ^ key_hash(c, by, key[i]))
                              & <uint64_t>(size - 1))
                while slots[h] >= 0:
                    j = slots[h]
                    if memcmp(&items[j].node, &items[i].node,
                              sizeof(PState) - sizeof(int32_t)) == 0 and same_key(
                                  c, by, key[j], key[i]):
                        group[i] = j
                        break
                    h = (h + 1) & (size - 1)
                if group[i] == i:
                    slots[h] = i
            if group[i] != i:  # chained after its first
                j = group[i]
                next[i] = next[j]
                next[j] = i
                n_grouped += 1
        if dry or n_grouped == 0:
            return n - n_grouped
        for i in range(n):
            if group[i] != i or next[i] < 0:
                continue
            n_members = gather_group(c, items, next, i, by, &members, &room, few_members)
            kind = LAZY if by == BY_STATE else OVER_ONE
            if n_members < 0:  # a walk's group with too many tops: its stacks as they are, in
                n_members = 0  # unions of unions (see gather_group)
                k = i
                while k >= 0:
                    if n_members == room:
                        members[0] = union_of(c, members, n_members, LAZY)
                        n_members = 1
                    members[n_members] = items[k].frame
                    n_members += 1
                    k = next[k]
            elif by == BY_RUN:  # the joined runs go to the group's first states, the others go
                n_members = join_runs(c, members, n_members)
                items[i].frame = members[0]
                j = 1
                k = next[i]
                while k >= 0:
                    if j < n_members:
                        items[k].frame = members[j]
                        j += 1
                    else:
                        group[k] = -1
                    k = next[k]
                continue
            elif by == BY_STATE:
                if 1 < n_members < ONE_RUN_BELOW and one_run(c, members, n_members):
                    continue  # (a few stay apart: see one_run; many, as `s: "a" s "b" | "a" s s
                              # | "a"` makes, one per two a's, merge)
                n_members = share_tops(c, members, n_members)
            items[i].frame = union_of(c, members, n_members, kind)
            k = next[i]
            while k >= 0:
                group[k] = -1
                k = next[k]
        for i in range(n):
            if group[i] >= 0:
                items[kept] = items[i]
                kept += 1
    finally:
        free(slots)
        if group != few:
            free(group)
        if members != few_members:
            free(members)
    stateset_cut(s, kept)
    return kept


cdef int32_t gather_group(Ctx* c, const PState* items, const int32_t* next, int32_t i, int by,
                          int32_t** members, int32_t* room, int32_t* few) except -2 nogil:
    """group_stacks: the stacks of the group whose first state is items[i] (BY_STATE: their
    tops, each once, each over its own stack) into members[0][:n], grown past `room` (a
    buffer other than `few` is the caller's to free); n. As text is consumed, no bound: past
    one (256 stacks), a group was left apart, or merged as a union of unions whose tops no
    longer shared what was below them, and the arena's stacks grew exponentially with the
    text (three rules calling each other: 2.7 times the frames per a from the 18th). In a
    mask walk (whose tops stop at the arena's unions: see add_tops) that has made
    WALK_FRAMES frames, -1 past WALK_TOPS: its frames are not interned, so each merge makes
    every top's union again (a walk whose roots refilled their set and merged again and
    again ran out of memory); a walk nests unions only as deep as a token is long."""
    cdef int32_t n, k
    cdef int32_t* grown
    # (walk_lazy_union empties the walk's set too: no union is made while a gather is under way)
    cdef StampedIds* tops = &c.scratch.tops_seen if c.scratch != NULL else &c.arena.tops_seen
    while True:
        n = 0
        k = i
        stamped_clear(tops)
        while k >= 0 and n >= 0:
            if by == BY_STATE:
                n = add_tops(c, items[k].frame, members[0], n, room[0], tops)
            else:
                n = add_members(c, items[k].frame, members[0], n, room[0])
            k = next[k]
        if n >= 0:
            return n
        if (by == BY_STATE and c.scratch != NULL and room[0] >= WALK_TOPS
                and c.scratch.n >= WALK_FRAMES):
            return -1
        grown = NULL if room[0] > (1 << 29) else <int32_t*>malloc(
            2 * <size_t>room[0] * sizeof(int32_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        if members[0] != few:
            free(members[0])
        members[0] = grown
        room[0] *= 2


cdef inline uint64_t key_hash(Ctx* c, int by, int32_t key) noexcept nogil:
    """group_stacks: a hash equal for keys same_key groups (without it, states equal but for
    their stacks all collide: a search per state through every other, at 1,000 states). A
    union's is that of all its members, kept in its first cell: unions sharing their first
    members collided, and each comparison walked those (`s: "a" s s "b" | "a" s s | "a" s "c"
    | "a"`, 1,200 a's: 10 s, 1.2 s with it)."""
    cdef Frame* fr
    if by == BY_STATE or key == NO_FRAME:
        return 0
    fr = get_frame(c, key)
    if by == BY_RUN:  # (same_runs: the top, and the stack under the run; not its bounds)
        return (fr.node * <uint64_t>0x9E3779B97F4A7C15u) ^ (
            0 if fr.parent == NO_FRAME else get_frame(c, fr.parent).stack)
    if fr.node == UNION_NODE:  # (same_below: unions hold equal members in one order)
        return fr.keys
    return fr.stack * <uint64_t>0x9E3779B97F4A7C15u


cdef inline bint same_key(Ctx* c, int by, int32_t f, int32_t g) noexcept nogil:
    """group_stacks: whether the keys f and g of two states group them."""
    if by == BY_BELOW:
        return same_below(c, f, g)
    if by == BY_RUN:
        return same_runs(c, f, g)
    return f >= 0 and g >= 0  # (BY_STATE: any stacks but the empty one)
