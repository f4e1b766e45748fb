# Included by mask.pyx (one module): the walk of the vocabulary trie from the roots and jobs
# that Matcher.prepare and Matcher.plan made, without the GIL.

cdef int walk(Walker* w, uint32_t* out) except -1 nogil:
    """OR into `out` the tokens the roots and jobs allow (see cover)."""
    cdef int32_t i, base = w.scratch.n
    w.walk_from = base
    for i in range(w.roots.n):
        if w.unique[i]:
            walk_unique_root(w, i, base, out)
        elif w.root_group[i] == i:
            cover(w, w.roots.items, w.root_next, i, w.slices[i],
                  group_plan_from(w.plan_from, w.root_next, i), base, out)
    for i in range(w.n_jobs):
        if w.job_group[i] == i:
            cover(w, w.jobs, w.job_next, i, w.job_slices[i],
                  group_plan_from(w.job_plan_from, w.job_next, i), base, out)
    return 0


cdef inline int32_t group_plan_from(const int32_t* plan_from, const int32_t* next, int32_t first
                                    ) noexcept nogil:
    """The size from which a group's exits are jobs: its members' largest (past max_jobs some
    were not planned: then the group walks every exit)."""
    cdef int32_t smallest = plan_from[first], j = next[first]
    while j >= 0:
        smallest = max(smallest, plan_from[j])
        j = next[j]
    return smallest


cdef inline bint covers(const uint32_t* have, const uint32_t* need) noexcept nogil:
    """Every bit of the 256 in `need` is in `have`."""
    cdef int k
    for k in range(8):
        if need[k] & ~have[k]:
            return False
    return True


cdef int seed_all(Ctx* c, const PState* states, const int32_t* next, int32_t first, int b,
                  StateSet* seed) except -1 nogil:
    """Expand states[first] and (with `next`) the states chained from it on byte b into
    `seed` (a group's states share their stacks' unions: each member is popped once, and
    their pops are expanded together: see returns_begin)."""
    cdef int32_t j = first
    cdef StampedIds* popped = popped_set(c)
    cdef bint held = returns_begin(c)
    try:
        while j >= 0:
            expand_in(c, &states[j], b, seed, popped)
            j = next[j] if next != NULL else -1
        if held:
            returns_end(c, b, seed, popped)
    finally:
        if held:
            c.returns = NULL
    return 0


cdef int cover(Walker* w, const PState* states, const int32_t* next, int32_t first,
               const Slice* sl, int32_t smallest, int32_t base, uint32_t* out) except -1 nogil:
    """OR into `out` the tokens that states[first] and (with `next`) the states chained from
    it allow, all of whose cache entry is `sl`: the entry's tokens within their terminal,
    plus walks of the trie below the exit nodes whose byte can follow the terminal in a
    state's context, from the union of the states that byte leads to (but for the exits
    with `smallest` nodes or more: they are jobs)."""
    cdef Ctx c
    cdef int32_t k, j, b, x
    cdef uint32_t bytes8[8]
    cdef uint32_t bits
    cdef StampedIds* popped
    walker_ctx(w, &c)
    for k in range(sl.n_within_words):
        out[sl.within_words[k]] |= sl.within_bits[k]
    memset(bytes8, 0, sizeof(bytes8))
    popped = popped_set(&c)  # (the states share their stacks' unions: popped once)
    j = first
    while j >= 0:
        exit_bytes_from(&c, &states[j], bytes8, popped)
        j = next[j] if next != NULL else -1
        if j >= 0 and covers(bytes8, sl.exit_bytes):  # (the others add no byte with exits)
            break
    for k in range(8):
        bits = bytes8[k] & sl.exit_bytes[k]
        while bits:
            b = 32 * k + ctz32(bits)
            bits &= bits - 1
            w.scratch.n = base
            stateset_clear(&w.seed)
            widen_walk_set(&c, c.walk_merging, &w.seed)
            c.pos = w.base
            seed_all(&c, states, next, first, b, &w.seed)
            merge_walk_set(&c, c.walk_merging, &w.seed)
            if w.seed.n == 0:
                continue
            for j in range(sl.leaf_off[b], sl.leaf_off[b + 1]):
                set_bit(out, sl.leaf_ids[j])
            if w.tables.has_unique and any_in_unique(&c, &w.seed):
                # b opened a unique array: its states hold b's position, so each exit node
                # (at its own depth) gets its own
                for j in range(sl.exit_off[b], sl.exit_off[b + 1]):
                    w.scratch.n = base
                    stateset_clear(&w.seed)
                    c.pos = w.base + w.trie.node_depth[sl.exit_nodes[j]] - 1
                    seed_all(&c, states, next, first, b, &w.seed)
                    walk_subtree(w, &w.seed, sl.exit_nodes[j], out, sl)
                continue
            for j in range(sl.exit_off[b], sl.exit_off[b + 1]):
                x = sl.exit_nodes[j]
                if not large_subtree(w, x, smallest, False):
                    walk_subtree(w, &w.seed, x, out, sl)
    return 0


cdef int walk_unique_root(Walker* w, int32_t i, int32_t base, uint32_t* out) except -1 nogil:
    """`walk` for root i, in a unique array: its cached "within" tokens less the risky ones
    (see SliceCache.risky_of); the risky ones, the leaves and the exit nodes each checked by
    stepping along their bytes with the text (an item may close there); below each exit node
    a walk on from the states reached."""
    cdef Ctx c
    cdef const Trie* tr = w.trie
    cdef Slice* sl = w.slices[i]
    cdef const PState* r = &w.roots.items[i]
    cdef const uint32_t* risky = w.risky_bits[i]
    cdef int32_t k, b, node
    cdef uint32_t bytes8[8]
    walker_ctx(w, &c)
    for k in range(sl.n_within_words):
        out[sl.within_words[k]] |= sl.within_bits[k] & ~risky[k]
    for k in range(w.n_risky[i]):
        node = w.risky_nodes[i][k]
        if path_states(w, &c, r, node, base):
            for b in range(tr.node_tok_off[node], tr.node_tok_off[node + 1]):
                set_bit(out, tr.tok_ids[b])
    memset(bytes8, 0, sizeof(bytes8))
    exit_bytes(&c, r, bytes8)
    for b in range(256):
        if not (has_bit(bytes8, b) and has_bit(sl.exit_bytes, b)):
            continue
        for k in range(sl.leaf_off[b], sl.leaf_off[b + 1]):
            if path_states(w, &c, r, tr.tok_node[sl.leaf_ids[k]], base):
                set_bit(out, sl.leaf_ids[k])
        for k in range(sl.exit_off[b], sl.exit_off[b + 1]):
            if path_states(w, &c, r, sl.exit_nodes[k], base):
                walk_subtree(w, &w.seed, sl.exit_nodes[k], out, NULL)
    return 0


cdef int path_states(Walker* w, Ctx* c, const PState* r, int32_t node, int32_t base
                     ) except -1 nogil:
    """Step root r along the bytes of trie node `node` (written into the text after the
    committed bytes) into w.seed; how many states live."""
    cdef const Trie* tr = w.trie
    cdef int32_t x = node, depth = tr.node_depth[node]
    while x != 0:
        w.text[w.base + tr.node_depth[x] - 1] = tr.node_byte[x]
        x = tr.node_parent[x]
    w.scratch.n = base
    stateset_clear(&w.seed)
    stateset_add(&w.seed, r)
    c.pos = w.base
    return step_bytes(c, &w.seed, &w.levels[0], w.text + w.base, depth)


cdef inline int32_t first_walked(const Tables* t, const Trie* tr, int32_t node) noexcept nogil:
    """The first child of trie node `node` that walk_subtree may step into, one whose byte
    some terminal takes; node_end[node] where none is. Then no token below it is taken at
    once either: that needs a terminal looping on every byte below, which takes the bytes."""
    cdef int32_t k = node + 1
    while k < tr.node_end[node] and not has_bit(t.alphabet, tr.node_byte[k]):
        k = tr.node_end[k]
    return k


cdef int walk_subtree(Walker* w, const StateSet* seed, int32_t node, uint32_t* out,
                      const Slice* known) except -1 nogil:
    """Walk the children of trie node `node`, whose byte took the live states to `seed`,
    setting in `out` the tokens they allow. With out NULL: 1 at the first such token (the
    forced path's spanning check), else 0. `known` (or NULL): an entry whose tokens within
    are set in `out` already: its full nodes are skipped. Where a state's terminal goes back
    to the same DFA state over every kind of byte below a node (the rest of a name, a
    number, a string), every token there is allowed: taken at once (see walk_terminal).
    Where a step pops many unions' members (a pop through stacks of every depth), the bytes
    its set can take next are found once, and siblings whose byte is not among them skipped
    (each would pop them all again to find nothing). A step into a node whose children are
    not stepped into stops at its first state (step_reaches): only whether it finds one
    counts there."""
    cdef Ctx c
    cdef const Tables* t = w.tables
    cdef const Trie* tr = w.trie
    cdef int32_t base_depth = tr.node_depth[node]
    cdef int32_t i = node + 1, end = tr.node_end[node], depth, k, below
    cdef const StateSet* cur
    cdef StateSet* nxt
    cdef const PState* s
    cdef bint unique = t.has_unique, taken, filtering = False, leaf
    walker_ctx(w, &c)
    w.marks[base_depth] = w.scratch.n
    while i < end:
        if (known != NULL and known.full != NULL and known.full_lo <= i < known.full_hi
                and known.full[(i - known.full_lo) >> 3] >> ((i - known.full_lo) & 7) & 1):
            i = tr.node_end[i]
            continue
        depth = tr.node_depth[i]
        if not has_bit(t.alphabet, tr.node_byte[i]):  # (no state takes it: a step would pop
            i = tr.node_end[i]                        # all the way down to find nothing)
            continue
        if (filtering and w.level_filtered[depth - 1]
                and not has_bit(&w.level_bytes[8 * (depth - 1)], tr.node_byte[i])):
            i = tr.node_end[i]
            continue
        cur = seed if depth - 1 == base_depth else &w.levels[depth - 1]
        nxt = &w.levels[depth]
        w.scratch.n = w.marks[depth - 1]
        if unique:  # a token's byte at depth d is the d-th after the committed text
            c.pos = w.base + depth - 1
            w.text[c.pos] = tr.node_byte[i]
        below = first_walked(t, tr, i)
        leaf = below == tr.node_end[i]
        if leaf:  # (the set is not stepped from: whether it is empty is all that counts)
            step_reaches(&c, cur, tr.node_byte[i], nxt)
        else:
            step_set(&c, cur, tr.node_byte[i], nxt)
        if filtering:
            w.level_filtered[depth] = False
        if c.popped >= FILTER_FROM and tr.node_end[i] < tr.node_end[tr.node_parent[i]]:
            if not filtering:  # (from here on the flags are kept: most walks never get here)
                memset(w.level_filtered, 0, w.n_levels)
                filtering = True
            if not w.level_filtered[depth - 1]:  # (siblings follow)
                set_next_bytes(&c, cur, &w.level_bytes[8 * (depth - 1)])
                w.level_filtered[depth - 1] = True
        if nxt.n == 0:
            i = tr.node_end[i]
            continue
        if out == NULL:
            if tr.node_tok_off[i] < tr.node_tok_off[i + 1]:
                return 1
        else:
            for k in range(tr.node_tok_off[i], tr.node_tok_off[i + 1]):
                set_bit(out, tr.tok_ids[k])
            # (in a unique array a step may depend on the bytes before it: no shortcut)
            if not leaf and not unique:
                taken = False
                for k in range(nxt.n):
                    s = &nxt.items[k]
                    if (s.term >= 0 and not t.term_counted[s.term] and (
                            w.kinds_below[i] & ~loop_kinds(t, w.loop_kinds, s.dstate)) == 0):
                        taken = True
                        break
                if taken:
                    for k in range(tr.node_tok_off[i + 1], tr.node_tok_off[tr.node_end[i]]):
                        set_bit(out, tr.tok_ids[k])
                    w.taken += 1
                    i = tr.node_end[i]
                    continue
        w.marks[depth] = w.scratch.n
        i = below  # (the children before it are skipped: no terminal takes their bytes)
    return 0
