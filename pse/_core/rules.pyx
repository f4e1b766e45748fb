# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""One rule's graph of parser nodes, reduced in C (pse.compiler's step 2): epsilon edges
eliminated, calls of rules that match nothing dropped, only the nodes kept that are reachable
from the start and can reach an end, and bisimilar nodes merged.

A node has edges labelled by a terminal and a guard (`terms`: (terminal, target, guard)),
calls of rules (`calls`: (rule, return node)) and epsilon edges (`eps`: target nodes). Two
nodes are bisimilar when both or neither may end the rule and their edges lead, label for
label, into bisimilar nodes: one of them can stand for the other in every parse. The compiler
inlines copies of machines, so rules hold many such twins; merged, they are fewer parser
states.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc

# A label packs (terminal, guard) or a called rule into one integer; odd: a call.
cdef int64_t MAX_ID = 1 << 30
# The merge gives up (merging only saves parser states) past this many edge visits: a round
# visits the edges of the nodes next to those that changed class, and a long chain of twins
# takes a round per node.
cdef int64_t MAX_MERGE_WORK = 1 << 25


cdef struct Edge:
    # while merging: (label, target's class, 0); when written out: (terminal, target, guard)
    # or (rule, target, 0)
    int64_t a, b, c


cdef struct Graph:
    int n
    int32_t* off  # node s: edges off[s] .. off[s + 1]
    Edge* edges   # (label, target, 0)


cdef int cmp_edge(const void* p, const void* q) noexcept nogil:
    cdef const Edge* x = <const Edge*>p
    cdef const Edge* y = <const Edge*>q
    if x.a != y.a:
        return -1 if x.a < y.a else 1
    if x.b != y.b:
        return -1 if x.b < y.b else 1
    return (x.c > y.c) - (x.c < y.c)


cdef int sort_unique(Edge* e, int n) noexcept nogil:
    """Sort n edges and drop repeats; returns how many are left."""
    cdef int i, k = 0
    if n > 1:
        qsort(e, n, sizeof(Edge), cmp_edge)
    for i in range(n):
        if k == 0 or cmp_edge(&e[i], &e[k - 1]) != 0:
            e[k] = e[i]
            k += 1
    return k


def reduce_rule(list eps, list terms, list calls, int start, ends,
                const uint8_t[::1] productive not None, int merge_limit, int64_t max_edges,
                list numbering=None):
    """Reduce one rule: no epsilon edges, no calls of unproductive rules, only live nodes,
    bisimilar nodes merged; renumbered.

    Args:
        eps: per node, the nodes its epsilon edges lead to.
        terms: per node, its edges (terminal, target node, guard).
        calls: per node, its calls (rule, return node).
        start: the start node; it must reach an end.
        ends: the nodes where the rule may end.
        productive: per rule, 1 where it matches something (calls of the others are dropped).
        merge_limit: rules with more live nodes than this are not merged (the merge takes a
            round per step of the longest path that tells two nodes apart; see merge).
        max_edges: the most edges the rule may have once its epsilon edges are gone (a node
            takes the edges of every node its epsilons reach: a chain of n optional parts
            makes n * n / 2).

    Returns:
        (terms, calls, ends) over the new nodes: the start's node is 0, the others follow
        in the order of their first old node; each node's edges and calls sorted, without
        repeats.

    Raises:
        ValueError: the start cannot reach an end, a node out of range, or a terminal, guard
            or rule id of 2**30 or more.
        OverflowError: more than `max_edges` edges (without repeats) once the epsilon edges
            are gone.
        numbering: a list to append, per old node, its new node or -1 (or None).
    """
    cdef int n = len(terms), s, n_live
    cdef Graph raw, g
    raw.n = g.n = n
    raw.off = g.off = NULL
    raw.edges = g.edges = NULL
    cdef int32_t* eps_off = NULL
    cdef int32_t* eps_to = NULL
    cdef int32_t* live = NULL
    cdef int32_t* cls = NULL
    cdef int32_t* scratch = NULL
    cdef int32_t* rev = NULL
    cdef uint8_t* flag = NULL
    cdef Edge* work = NULL
    if not (len(eps) == len(calls) == n and 0 <= start < n):
        raise ValueError(f"a rule of {n} nodes: eps, terms and calls per node, start in range")
    max_edges = min(max_edges, MAX_ID)  # (edge offsets are int32)
    try:
        flag = <uint8_t*>malloc(n + 1)
        live = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        scratch = <int32_t*>malloc((2 * n + 2) * sizeof(int32_t))
        if not (flag and live and scratch):
            raise MemoryError()
        read_graph(&raw, eps, terms, calls, productive, &eps_off, &eps_to)
        for s in range(n):
            flag[s] = 0
        for s in ends:
            check_node(s, n)
            flag[s] = 1
        close_epsilons(&raw, eps_off, eps_to, start, flag, scratch, &g, max_edges)
        cls = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        rev = <int32_t*>malloc((g.off[n] + 1) * sizeof(int32_t))
        work = <Edge*>malloc((g.off[n] + 1) * sizeof(Edge))
        if not (cls and rev and work):
            raise MemoryError()
        find_live(&g, flag, start, scratch, rev, cls)
        n_live = keep_live(&g, flag, cls, live)
        if live[start] < 0:
            raise ValueError("the rule's start cannot reach its end")
        if n_live > merge_limit or not merge(&g, flag, cls, work):
            for s in range(n_live):
                cls[s] = s
        new_of = None if numbering is None else []
        reduced = write_rule(&g, flag, live[start], cls, scratch, work, new_of)
        if numbering is not None:
            for s in range(n):
                numbering.append(new_of[live[s]] if live[s] >= 0 else -1)
        return reduced
    finally:
        free(raw.off)
        free(raw.edges)
        free(g.off)
        free(g.edges)
        free(eps_off)
        free(eps_to)
        free(live)
        free(cls)
        free(scratch)
        free(rev)
        free(flag)
        free(work)


cdef inline void check_node(int64_t s, int n) except *:
    if not 0 <= s < n:
        raise ValueError(f"node {s} out of range (the rule has {n})")


cdef void read_graph(Graph* g, list eps, list terms, list calls,
                     const uint8_t[::1] productive, int32_t** eps_off, int32_t** eps_to) except *:
    """g: the rule's labelled edges (calls of unproductive rules left out); eps_off/eps_to:
    its epsilon edges, node s's at eps_to[eps_off[s] .. eps_off[s + 1]]."""
    cdef int n = g.n, s, k = 0, n_edges = 0, n_eps = 0
    cdef int64_t tid, guard, rule, target
    for s in range(n):
        n_edges += len(terms[s]) + len(calls[s])
        n_eps += len(eps[s])
    g.off = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    g.edges = <Edge*>malloc((n_edges + 1) * sizeof(Edge))
    eps_off[0] = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    eps_to[0] = <int32_t*>malloc((n_eps + 1) * sizeof(int32_t))
    if not (g.off and g.edges and eps_off[0] and eps_to[0]):
        raise MemoryError()
    for s in range(n):
        g.off[s] = k
        for tid, target, guard in terms[s]:
            if not (0 <= tid < MAX_ID and 0 <= guard < MAX_ID):
                raise ValueError(f"terminal {tid} or guard {guard} out of range")
            check_node(target, n)
            g.edges[k].a = ((tid << 31) | guard) << 1
            g.edges[k].b = target
            g.edges[k].c = 0
            k += 1
        for rule, target in calls[s]:
            if not 0 <= rule < MAX_ID:
                raise ValueError(f"rule {rule} out of range")
            check_node(target, n)
            if rule < productive.shape[0] and productive[rule]:
                g.edges[k].a = (rule << 1) | 1
                g.edges[k].b = target
                g.edges[k].c = 0
                k += 1
    g.off[n] = k
    k = 0
    for s in range(n):
        eps_off[0][s] = k
        for target in eps[s]:
            check_node(target, n)
            eps_to[0][k] = <int32_t>target
            k += 1
    eps_off[0][n] = k


cdef void close_epsilons(const Graph* raw, const int32_t* eps_off, const int32_t* eps_to,
                         int start, uint8_t* is_end, int32_t* scratch, Graph* g,
                         int64_t max_edges) except *:
    """g: raw without epsilon edges. A node takes the edges of every node its epsilon edges
    reach, and ends where one of them ends; only the start and the targets of edges keep
    edges (no other node is reachable once the epsilons are gone). is_end is updated."""
    cdef int n = raw.n, s, k, e, t, top, size = raw.off[n] + 1, used = 0
    cdef int32_t* seen = scratch  # per node: the last node whose closure reached it
    cdef int32_t* todo = scratch + n + 1
    cdef uint8_t* entered = <uint8_t*>malloc(n + 1)
    cdef uint8_t* ends_here = <uint8_t*>malloc(n + 1)
    cdef Edge* grown
    g.off = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    g.edges = <Edge*>malloc(size * sizeof(Edge))
    try:
        if not (entered and ends_here and g.off and g.edges):
            raise MemoryError()
        for s in range(n):
            entered[s] = 0
            seen[s] = -1
            ends_here[s] = is_end[s]
        entered[start] = 1
        for e in range(raw.off[n]):
            entered[raw.edges[e].b] = 1
        for s in range(n):
            g.off[s] = used
            is_end[s] = 0
            if not entered[s]:
                continue
            seen[s] = s
            todo[0] = s
            top = 1
            while top:
                top -= 1
                k = todo[top]
                if ends_here[k]:
                    is_end[s] = 1
                if used + raw.off[k + 1] - raw.off[k] > size:
                    size = 2 * size + raw.off[k + 1] - raw.off[k]
                    grown = <Edge*>realloc(g.edges, size * sizeof(Edge))
                    if not grown:
                        raise MemoryError()
                    g.edges = grown
                for e in range(raw.off[k], raw.off[k + 1]):
                    g.edges[used] = raw.edges[e]
                    used += 1
                for e in range(eps_off[k], eps_off[k + 1]):
                    t = eps_to[e]
                    if seen[t] != s:
                        seen[t] = s
                        todo[top] = t
                        top += 1
            # (nodes with the same edges bring them twice: kept and counted once)
            used = g.off[s] + sort_unique(g.edges + g.off[s], used - g.off[s])
            if used > max_edges:
                raise OverflowError(f"more than {max_edges} edges once epsilon edges are gone")
        g.off[n] = used
    finally:
        free(entered)
        free(ends_here)


cdef void find_live(const Graph* g, const uint8_t* is_end, int start, int32_t* scratch,
                    int32_t* rev, int32_t* mark) noexcept:
    """mark[s]: bit 1 where s is reachable from `start`, bit 2 where it reaches an end."""
    cdef int n = g.n, s, t, e, top = 0
    cdef int32_t* rev_off = scratch  # n + 1 entries; then the stack, n + 1 more
    cdef int32_t* todo = scratch + n + 1
    sources(g, rev_off, rev)
    for s in range(n):
        mark[s] = 0
    mark[start] = 1
    todo[top] = start
    top += 1
    while top:
        top -= 1
        s = todo[top]
        for e in range(g.off[s], g.off[s + 1]):
            t = <int>g.edges[e].b
            if not mark[t] & 1:
                mark[t] |= 1
                todo[top] = t
                top += 1
    for s in range(n):
        if is_end[s]:
            mark[s] |= 2
            todo[top] = s
            top += 1
    while top:
        top -= 1
        s = todo[top]
        for e in range(rev_off[s], rev_off[s + 1]):
            t = rev[e]
            if not mark[t] & 2:
                mark[t] |= 2
                todo[top] = t
                top += 1


cdef int keep_live(Graph* g, uint8_t* is_end, const int32_t* mark, int32_t* live) noexcept:
    """Keep the nodes marked 3 (reachable and live), the edges between them and their end
    flags, in place; live[old] is then a node's new number (in the old order), or -1.
    Returns their count."""
    cdef int n = g.n, s, e, k = 0, m = 0, first
    for s in range(n):
        if mark[s] == 3:
            live[s] = m
            m += 1
        else:
            live[s] = -1
    for s in range(n):  # (live[s] <= s and k <= e: nothing is overwritten before it is read)
        if live[s] < 0:
            continue
        first = k
        for e in range(g.off[s], g.off[s + 1]):
            if live[g.edges[e].b] >= 0:
                g.edges[k].a = g.edges[e].a
                g.edges[k].b = live[g.edges[e].b]
                k += 1
        g.off[live[s]] = first
        is_end[live[s]] = is_end[s]
    g.off[m] = k
    g.n = m
    return m


cdef struct Refinement:
    # the partition being refined (see merge); per node unless it says per class
    int32_t* cls       # its class
    int32_t* head      # per class: its first member (the round's dirty members first)
    int32_t* next      # the next and the previous member of its class (-1: none)
    int32_t* prev
    int32_t* size      # per class: its members
    int32_t* pred_off  # node t's sources: pred[pred_off[t] .. pred_off[t + 1]]
    int32_t* pred
    int32_t* dirty     # the round's dirty nodes, n_dirty of them
    int32_t* touched   # the round's classes with dirty members, n_touched of them
    int32_t* n_dirty_in  # per class: its dirty members
    int32_t* rep       # per class: a member that is not dirty, or -1
    int32_t* largest   # per class: the first node of its largest group
    int32_t* moved     # the nodes the round moves to another class
    int32_t* dirty_in  # the round a node is dirty in
    int32_t* touched_in  # per class: the round it is touched in
    int32_t* group     # the first node of its group (its signature in the round)
    int32_t* group_size  # per first node of a group: the group's members
    int32_t* new_cls   # per first node of a group: the group's class after the round
    int32_t* sig_len   # its signature: sig[g.off[s] .. g.off[s] + sig_len[s]]
    int32_t* table     # hash slot: the first node of a group, where table_round is the round
    int32_t* table_round
    int table_size, n_dirty, n_touched, round


cdef bint merge(Graph* g, const uint8_t* is_end, int32_t* cls, Edge* sig) except -1:
    """cls[s]: the class of node s among bisimilar nodes (class numbers below g.n). Returns
    False, cls undefined, where that would take more than MAX_MERGE_WORK.

    Moore's refinement, from {ends, others}: in each round a node's signature is its class
    and the set of (label, class of target) over its edges, and each class splits into
    groups by signature; the partition only splits, and once a round splits nothing it is
    the coarsest stable one. A round signs only the `dirty` nodes, those with an edge into a
    node that changed class in the round before: the others' signatures are as they were,
    alike within their class, so one of them (the class's rep) stands for all. The largest
    group of a split class keeps its number and the others move (Hopcroft's "all but the
    largest"): a node moves only into a class at most half as large, a few times in all, and
    a round costs the edges into the nodes that moved, not every edge. Signatures are grouped
    in an open hash table, compared exactly."""
    cdef int n = g.n, s, t, e, c, k, n_classes, n_moved
    cdef int64_t work = 0
    cdef Refinement R
    cdef int32_t* block
    cdef int32_t** per_node[17]
    per_node[:] = [&R.head, &R.next, &R.prev, &R.size, &R.pred_off, &R.dirty, &R.touched,
                   &R.n_dirty_in, &R.rep, &R.largest, &R.moved, &R.dirty_in, &R.touched_in,
                   &R.group, &R.group_size, &R.new_cls, &R.sig_len]
    R.table_size = 1
    while R.table_size < 2 * n:
        R.table_size <<= 1
    block = <int32_t*>malloc((17 * (n + 1) + 2 * R.table_size + g.off[n] + 1)
                             * sizeof(int32_t))
    if not block:
        raise MemoryError()
    for k in range(17):
        per_node[k][0] = block + k * (n + 1)
    R.cls = cls
    R.table = block + 17 * (n + 1)
    R.table_round = R.table + R.table_size
    R.pred = R.table_round + R.table_size
    try:
        sources(g, R.pred_off, R.pred)
        for s in range(n):
            R.head[s] = -1
            R.size[s] = R.dirty_in[s] = R.touched_in[s] = 0
        for k in range(R.table_size):
            R.table_round[k] = 0
        n_classes = 0  # {ends, others}, numbered by first node
        t = k = -1
        for s in range(n):
            if is_end[s]:
                if t < 0:
                    t = n_classes
                    n_classes += 1
                cls[s] = t
            else:
                if k < 0:
                    k = n_classes
                    n_classes += 1
                cls[s] = k
            push_front(&R, s)
        R.round = 1
        R.n_dirty = R.n_touched = 0
        for s in range(n):  # every node is dirty in the first round
            mark_dirty(&R, s)
        while R.n_dirty:
            for k in range(R.n_dirty):
                s = R.dirty[k]
                work += 1 + g.off[s + 1] - g.off[s]
                signature(g, &R, sig, s)
            if work > MAX_MERGE_WORK:
                return False
            for k in range(R.n_touched):  # the reps, each the first of its group
                c = R.touched[k]
                s = R.head[c]
                for t in range(R.n_dirty_in[c]):
                    s = R.next[s]
                R.rep[c] = R.largest[c] = s
                if s >= 0:
                    work += 1 + g.off[s + 1] - g.off[s]
                    signature(g, &R, sig, s)
                    R.group[s] = group_of(g, &R, sig, s)
                    R.group_size[s] = R.size[c] - R.n_dirty_in[c]
            for k in range(R.n_dirty):  # the groups and their sizes
                s = R.dirty[k]
                t = R.group[s] = group_of(g, &R, sig, s)
                if t == s:
                    R.group_size[s] = 1
                else:
                    R.group_size[t] += 1
            for k in range(R.n_dirty):
                s = R.dirty[k]
                c = cls[s]
                if R.group[s] == s and (R.largest[c] < 0
                                        or R.group_size[s] > R.group_size[R.largest[c]]):
                    R.largest[c] = s
            n_moved = 0  # all but the largest group of each class move
            for k in range(R.n_touched):
                c = R.touched[k]
                s = R.rep[c]
                if s >= 0:
                    R.new_cls[s] = c if R.largest[c] == s else new_class(&n_classes)
                    t = s
                    while R.new_cls[t] != c and s >= 0:  # (each member not dirty moves)
                        R.group[s] = t
                        R.moved[n_moved] = s
                        n_moved += 1
                        s = R.next[s]
            for k in range(R.n_dirty):
                s = R.dirty[k]
                c = cls[s]
                t = R.group[s]
                if t == s and s != R.rep[c]:
                    R.new_cls[s] = c if R.largest[c] == s else new_class(&n_classes)
                if R.new_cls[t] != c:
                    R.moved[n_moved] = s
                    n_moved += 1
            for k in range(n_moved):
                s = R.moved[k]
                unlink(&R, s)
                cls[s] = R.new_cls[R.group[s]]
                push_front(&R, s)
            R.round += 1
            R.n_dirty = R.n_touched = 0
            for k in range(n_moved):
                s = R.moved[k]
                for e in range(R.pred_off[s], R.pred_off[s + 1]):
                    mark_dirty(&R, R.pred[e])
        return True
    finally:
        free(block)


cdef inline int new_class(int* n_classes) noexcept:
    n_classes[0] += 1
    return n_classes[0] - 1


cdef void sources(const Graph* g, int32_t* pred_off, int32_t* pred) noexcept:
    """Node t's sources (a node once per edge into t) at pred[pred_off[t] .. pred_off[t + 1]]:
    counted, summed (pred_off[t]: the end of t's sources), then placed counting down
    (pred_off[t]: their start; pred_off[n]: all)."""
    cdef int n = g.n, s, t, e
    for s in range(n + 1):
        pred_off[s] = 0
    for e in range(g.off[n]):
        pred_off[g.edges[e].b] += 1
    for s in range(n):
        pred_off[s + 1] += pred_off[s]
    for s in range(n):
        for e in range(g.off[s], g.off[s + 1]):
            t = <int>g.edges[e].b
            pred_off[t] -= 1
            pred[pred_off[t]] = s


cdef inline void unlink(Refinement* R, int s) noexcept:
    R.size[R.cls[s]] -= 1
    if R.prev[s] >= 0:
        R.next[R.prev[s]] = R.next[s]
    else:
        R.head[R.cls[s]] = R.next[s]
    if R.next[s] >= 0:
        R.prev[R.next[s]] = R.prev[s]


cdef inline void push_front(Refinement* R, int s) noexcept:
    cdef int c = R.cls[s]
    R.size[c] += 1
    R.prev[s] = -1
    R.next[s] = R.head[c]
    if R.head[c] >= 0:
        R.prev[R.head[c]] = s
    R.head[c] = s


cdef void mark_dirty(Refinement* R, int s) noexcept:
    """s is dirty in this round: listed, and first among its class's members."""
    cdef int c = R.cls[s]
    if R.dirty_in[s] == R.round:
        return
    R.dirty_in[s] = R.round
    R.dirty[R.n_dirty] = s
    R.n_dirty += 1
    if R.touched_in[c] != R.round:
        R.touched_in[c] = R.round
        R.n_dirty_in[c] = 0
        R.touched[R.n_touched] = c
        R.n_touched += 1
    R.n_dirty_in[c] += 1
    unlink(R, s)
    push_front(R, s)


cdef inline void signature(const Graph* g, Refinement* R, Edge* sig, int s) noexcept:
    cdef int e
    for e in range(g.off[s], g.off[s + 1]):
        sig[e].a = g.edges[e].a
        sig[e].b = R.cls[g.edges[e].b]
        sig[e].c = 0
    R.sig_len[s] = sort_unique(sig + g.off[s], g.off[s + 1] - g.off[s])


cdef int group_of(const Graph* g, Refinement* R, const Edge* sig, int s) noexcept:
    """The first node of this round with s's class and signature (s itself if none)."""
    cdef uint64_t h = <uint64_t>R.cls[s] * 0x9E3779B97F4A7C15ULL
    cdef int e, r, slot
    for e in range(g.off[s], g.off[s] + R.sig_len[s]):
        h = (h ^ <uint64_t>sig[e].a) * 0x100000001B3ULL
        h = (h ^ <uint64_t>sig[e].b) * 0x100000001B3ULL
    slot = <int>((h ^ (h >> 29)) & <uint64_t>(R.table_size - 1))
    while True:
        if R.table_round[slot] != R.round:
            R.table_round[slot] = R.round
            R.table[slot] = s
            return s
        r = R.table[slot]
        if same_signature(g, sig, R.sig_len, R.cls, r, s):
            return r
        slot = (slot + 1) & (R.table_size - 1)


cdef bint same_signature(const Graph* g, const Edge* sig, const int32_t* sig_len,
                         const int32_t* cls, int r, int s) noexcept:
    cdef int i
    if cls[r] != cls[s] or sig_len[r] != sig_len[s]:
        return False
    for i in range(sig_len[s]):
        if cmp_edge(&sig[g.off[r] + i], &sig[g.off[s] + i]) != 0:
            return False
    return True


cdef tuple write_rule(const Graph* g, const uint8_t* is_end, int start, const int32_t* cls,
                      int32_t* scratch, Edge* buf, list new_of):
    """The rule as (terms, calls, ends), one node per class: the start's class first, the
    others in the order of their first node; a class's edges are its first node's. `new_of`
    (unless None) gets each node's new number."""
    cdef int n = g.n, s, e, k, c, n_out = 0
    cdef int64_t label
    cdef int32_t* out = scratch  # class -> output node
    cdef int32_t* rep = scratch + n + 1  # output node -> its first node
    for s in range(n):
        out[s] = -1
    out[cls[start]] = 0
    rep[0] = start
    n_out = 1
    for s in range(n):
        if out[cls[s]] < 0:
            out[cls[s]] = n_out
            rep[n_out] = s
            n_out += 1
    terms, calls, ends = [], [], set()
    if new_of is not None:
        for s in range(n):
            new_of.append(out[cls[s]])
    for c in range(n_out):
        s = rep[c]
        k = 0
        for e in range(g.off[s], g.off[s + 1]):
            label = g.edges[e].a
            if label & 1:  # a call: (rule, target)
                buf[k].a = 1
                buf[k].b = label >> 1
                buf[k].c = out[cls[g.edges[e].b]]
            else:  # (terminal, target, guard), as Python orders the tuples
                buf[k].a = 0
                buf[k].b = label >> 32
                buf[k].c = ((<int64_t>out[cls[g.edges[e].b]]) << 31) | ((label >> 1) & (MAX_ID * 2 - 1))
            k += 1
        k = sort_unique(buf, k)
        row_terms, row_calls = [], []
        for e in range(k):
            if buf[e].a:
                row_calls.append((buf[e].b, buf[e].c))
            else:
                row_terms.append((buf[e].b, buf[e].c >> 31, buf[e].c & (MAX_ID * 2 - 1)))
        terms.append(row_terms)
        calls.append(row_calls)
    for s in range(n):
        if is_end[s]:
            ends.add(out[cls[s]])
    return terms, calls, ends
