# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""One rule's graph of parser nodes, pruned in C (pse.compiler's step 2): keep the nodes that
are reachable from the start and can reach an end, then merge bisimilar ones.

A node has edges labelled by a terminal and a guard (`terms`: (terminal, target, guard)) and
calls of rules (`calls`: (rule, return node)); both kinds lead to a target node. Two nodes are
bisimilar when both or neither may end the rule and their edges lead, label for label, into
bisimilar nodes: one of them can stand for the other in every parse. The compiler inlines
copies of machines, so rules hold many such twins; merged, they are fewer parser states.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort

# A label packs (terminal, guard) or a called rule into one integer; odd: a call.
cdef int64_t MAX_ID = 1 << 30


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


def prune_rule(list terms, list calls, ends, int start, int merge_limit):
    """Keep the live nodes of one rule, merge bisimilar ones, renumber.

    Args:
        terms: per node, its edges (terminal, target node, guard).
        calls: per node, its calls (rule, return node).
        ends: the nodes where the rule may end.
        start: the start node (live: its rule matches something).
        merge_limit: rules with more live nodes than this are only pruned, not merged (the
            merge takes a round per step of the longest path that tells two nodes apart).

    Returns:
        (terms, calls, ends) over the new nodes: the start's node is 0, the others follow
        in the order of their first old node; each node's edges and calls sorted, without
        repeats.
    """
    cdef int n = len(terms), n_edges = 0, s, n_live
    cdef Graph g
    g.n = n
    for s in range(n):
        n_edges += len(terms[s]) + len(calls[s])
    # per node: its new number in turn (old -> live -> class -> output); scratch arrays
    cdef int32_t* live = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* cls = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* scratch = <int32_t*>malloc((2 * n + 2) * sizeof(int32_t))
    cdef int32_t* rev = <int32_t*>malloc((n_edges + 1) * sizeof(int32_t))
    cdef uint8_t* flag = <uint8_t*>malloc(n + 1)
    cdef Edge* work = <Edge*>malloc((n_edges + 1) * sizeof(Edge))
    g.off = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    g.edges = <Edge*>malloc((n_edges + 1) * sizeof(Edge))
    try:
        if not (live and cls and scratch and rev and flag and work and g.off and g.edges):
            raise MemoryError()
        read_graph(&g, terms, calls)
        if not 0 <= start < n:
            raise ValueError(f"start node {start} out of range")
        find_live(&g, ends, start, scratch, rev, flag)
        n_live = keep_live(&g, flag, live)
        if live[start] < 0:
            raise ValueError("the rule's start cannot reach its end (trim productive rules only)")
        for s in range(n_live):
            flag[s] = 0
        for s in ends:
            if live[s] >= 0:
                flag[live[s]] = 1
        if n_live <= merge_limit:
            merge(&g, flag, cls, scratch, work)
        else:
            for s in range(n_live):
                cls[s] = s
        return write_rule(&g, flag, live[start], cls, scratch, work)
    finally:
        free(live)
        free(cls)
        free(scratch)
        free(rev)
        free(flag)
        free(work)
        free(g.off)
        free(g.edges)


cdef void read_graph(Graph* g, list terms, list calls) except *:
    cdef int s, k = 0
    cdef int64_t tid, guard, rule
    for s in range(g.n):
        g.off[s] = k
        for tid, target, guard in terms[s]:
            if not (0 <= tid < MAX_ID and 0 <= guard < MAX_ID):
                raise OverflowError(f"terminal {tid} or guard {guard} out of range")
            g.edges[k].a = ((tid << 31) | guard) << 1
            g.edges[k].b = target
            g.edges[k].c = 0
            k += 1
        for rule, target in calls[s]:
            if not 0 <= rule < MAX_ID:
                raise OverflowError(f"rule {rule} out of range")
            g.edges[k].a = (rule << 1) | 1
            g.edges[k].b = target
            g.edges[k].c = 0
            k += 1
    g.off[g.n] = k


cdef void find_live(Graph* g, ends, int start, int32_t* scratch, int32_t* rev,
                    uint8_t* mark) except *:
    """mark[s]: bit 1 where s is reachable from `start`, bit 2 where it reaches an end."""
    cdef int n = g.n, s, t, e, top = 0
    cdef int32_t* rev_off = scratch  # n + 1 entries; then the stack, n more
    cdef int32_t* todo = scratch + n + 1
    # the sources of each node's incoming edges: counted, summed (rev_off[t]: the end of
    # t's sources), then placed counting down (rev_off[t]: their start; rev_off[n]: all)
    for s in range(n + 1):
        rev_off[s] = 0
    for e in range(g.off[n]):
        rev_off[g.edges[e].b] += 1
    for s in range(n):
        rev_off[s + 1] += rev_off[s]
    for s in range(n):
        for e in range(g.off[s], g.off[s + 1]):
            t = <int>g.edges[e].b
            rev_off[t] -= 1
            rev[rev_off[t]] = s
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
    for s in ends:
        if not mark[s] & 2:
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


cdef int keep_live(Graph* g, const uint8_t* mark, int32_t* live) noexcept:
    """Drop the nodes not marked 3 (reachable and live) and the edges into them, in place;
    live[old] is then a node's new number (in the old order), or -1. Returns their count."""
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
    g.off[m] = k
    g.n = m
    return m


cdef void merge(Graph* g, const uint8_t* is_end, int32_t* cls, int32_t* scratch,
                Edge* sig) except *:
    """cls[s]: the class of node s among bisimilar nodes, classes numbered by first node.

    Moore's refinement: start from {ends, others}; in each round a node's signature is its
    class and the set of (label, class of target) over its edges; nodes with equal signatures
    share the next class. The partition only splits; once a round splits nothing it is the
    coarsest stable one. Signatures are grouped in an open hash table, compared exactly."""
    cdef int n = g.n, s, r, e, k, n_classes, count, slot
    cdef int size = 1
    cdef int32_t* nxt = scratch
    cdef int32_t* sig_len
    cdef int32_t* table
    cdef uint64_t h
    while size < 2 * n:
        size <<= 1
    table = <int32_t*>malloc(size * sizeof(int32_t))
    sig_len = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    try:
        if not (table and sig_len):
            raise MemoryError()
        n_classes = 0
        for s in range(n):  # classes of {ends, others}, numbered by first node
            cls[s] = -1
        r = -1  # the class of the first end, then of the first other node
        k = -1
        for s in range(n):
            if is_end[s]:
                if r < 0:
                    r = n_classes
                    n_classes += 1
                cls[s] = r
            else:
                if k < 0:
                    k = n_classes
                    n_classes += 1
                cls[s] = k
        while True:
            for s in range(n):
                for e in range(g.off[s], g.off[s + 1]):
                    sig[e].a = g.edges[e].a
                    sig[e].b = cls[g.edges[e].b]
                    sig[e].c = 0
                sig_len[s] = sort_unique(sig + g.off[s], g.off[s + 1] - g.off[s])
            for slot in range(size):
                table[slot] = -1
            count = 0
            for s in range(n):
                h = <uint64_t>cls[s] * 0x9E3779B97F4A7C15ULL
                for e in range(g.off[s], g.off[s] + sig_len[s]):
                    h = (h ^ <uint64_t>sig[e].a) * 0x100000001B3ULL
                    h = (h ^ <uint64_t>sig[e].b) * 0x100000001B3ULL
                slot = <int>((h ^ (h >> 29)) & <uint64_t>(size - 1))
                while True:
                    r = table[slot]
                    if r < 0:
                        table[slot] = s
                        nxt[s] = count
                        count += 1
                        break
                    if same_signature(g, sig, sig_len, cls, r, s):
                        nxt[s] = nxt[r]
                        break
                    slot = (slot + 1) & (size - 1)
            if count == n_classes:
                return
            n_classes = count
            for s in range(n):
                cls[s] = nxt[s]
    finally:
        free(table)
        free(sig_len)


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
                      int32_t* scratch, Edge* buf):
    """The rule as (terms, calls, ends), one node per class: the start's class first, the
    others in the order of their first node; a class's edges are its first node's."""
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
