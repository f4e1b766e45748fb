# cython: boundscheck=False, wraparound=False, cdivision=True
"""The subset construction over byte ranges (`automaton.determinize` without anchors) and the
refinements that minimize a DFA (Moore's rounds, Hopcroft's), in C.

A DFA state is the set of NFA states a text can reach (epsilon closures included), kept as
the bytes of its int32 ids sorted (largest first), so sets are found again through a dict.
The targets a range of bytes leads to (before their closure) are found again by a hash the
sweep keeps up to date (`_Targets`): most ranges find their DFA state without a closure made.
Each set's row is a sweep over the byte positions where one of its members' edges starts or
ends (the positions bucketed, 0 to 256), with the targets that hold counted: a bounded repeat
of a UTF-8 class (`(?:\\S+\\s+){0,199}`) makes thousands of sets with dozens of edges each,
which the Python sweep did at tens of microseconds a set.

Also: the live states of a DFA, its start moved to a state of its own (`start_moved`), and
the product of two DFAs (`product`: intersections and differences, pse.products).
"""

from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from pse._core.int_sort cimport sort_descending


cdef int32_t* _ints(list values) except NULL:
    cdef int32_t* out = <int32_t*>malloc((len(values) + 1) * sizeof(int32_t))
    if out == NULL:
        raise MemoryError()
    cdef Py_ssize_t i
    for i in range(len(values)):
        out[i] = values[i]
    return out


cdef class _Nfa:
    """The NFA's edges and epsilon edges as flat arrays, and the scratch space of a sweep."""
    cdef int n
    cdef int32_t* edge_at   # state -> its first edge (n + 1 entries)
    cdef int32_t* lo
    cdef int32_t* hi
    cdef int32_t* target
    cdef int32_t* eps_at    # state -> its first epsilon edge (n + 1 entries)
    cdef int32_t* eps
    cdef int32_t* held      # per state: edges to it that hold at the sweep's position
    cdef int32_t* seen      # per state: the closure that last reached it
    cdef int32_t* stack
    cdef int32_t* where     # per state: its place in `holding`
    cdef int32_t* holding   # the targets that hold
    cdef int32_t* bucket_at  # byte position -> its first event (258 entries)
    cdef int32_t* event_target
    cdef int32_t* event_step
    cdef int closures

    def __cinit__(self, list edges, list eps):
        self.n = len(edges)
        cdef list at = [0], lo = [], hi = [], target = [], eps_at = [0], eps_to = []
        for row in edges:
            for a, b, t in row:
                lo.append(a)
                hi.append(b)
                target.append(t)
            at.append(len(lo))
        for row in eps:
            eps_to.extend(row)
            eps_at.append(len(eps_to))
        self.edge_at, self.lo, self.hi = _ints(at), _ints(lo), _ints(hi)
        self.target, self.eps_at, self.eps = _ints(target), _ints(eps_at), _ints(eps_to)
        cdef list zeros = [0] * self.n
        self.held, self.seen, self.stack = _ints(zeros), _ints(zeros), _ints(zeros)
        self.where, self.holding = _ints(zeros), _ints(zeros)
        self.bucket_at = _ints([0] * 258)
        cdef list events = [0] * (2 * len(lo))
        self.event_target, self.event_step = _ints(events), _ints(events)
        self.closures = 0

    def __dealloc__(self):
        free(self.edge_at); free(self.lo); free(self.hi); free(self.target)
        free(self.eps_at); free(self.eps); free(self.held); free(self.seen); free(self.stack)
        free(self.where); free(self.holding); free(self.bucket_at)
        free(self.event_target); free(self.event_step)

    cdef bytes closure(self, const int32_t* states, int k):
        """The ids of `states` and the states epsilon edges reach from them, sorted (largest
        first)."""
        cdef int top = 0, count = 0, s, i, t
        self.closures += 1
        cdef int mark = self.closures
        for i in range(k):
            s = states[i]
            if self.seen[s] != mark:
                self.seen[s] = mark
                self.stack[top] = s
                top += 1
        cdef int32_t* out = <int32_t*>malloc(self.n * sizeof(int32_t))
        if out == NULL:
            raise MemoryError()
        try:
            while top:
                top -= 1
                s = self.stack[top]
                out[count] = s
                count += 1
                for i in range(self.eps_at[s], self.eps_at[s + 1]):
                    t = self.eps[i]
                    if self.seen[t] != mark:
                        self.seen[t] = mark
                        self.stack[top] = t
                        top += 1
            sort_descending(out, count)
            return PyBytes_FromStringAndSize(<char*>out, count * sizeof(int32_t))
        finally:
            free(out)


cdef inline uint64_t _mix(uint32_t x) noexcept nogil:
    """A 64-bit value per NFA state (splitmix64's finalizer): a set's hash is the XOR of its
    members', which the sweep keeps up to date as targets come and go."""
    cdef uint64_t z = x + <uint64_t>0x9E3779B97F4A7C15u
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9u
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBu
    return z ^ (z >> 31)


cdef class _Targets:
    """The DFA state of each set of targets met in the sweep (the NFA states a byte leads to
    from a set's members, before their closure), by the set's hash (see _mix). A set met
    again, as most are, is found without sorting it, copying it into a key or hashing its
    bytes (a dict of such keys took a quarter of the subset construction's instructions)."""
    cdef uint64_t* hashes   # per slot: the set's hash
    cdef Py_ssize_t* at     # ... where its members start in `pool` (-1: an empty slot)
    cdef int32_t* size      # ... how many
    cdef int32_t* state     # ... its DFA state
    cdef Py_ssize_t mask, n
    cdef int32_t* pool
    cdef Py_ssize_t pool_n, pool_cap

    def __cinit__(self):
        self.mask, self.n, self.pool_n, self.pool_cap = -1, 0, 0, 0

    def __dealloc__(self):
        free(self.hashes); free(self.at); free(self.size); free(self.state); free(self.pool)

    cdef int32_t find(self, uint64_t h, const int32_t* held, int32_t k) noexcept nogil:
        """The DFA state of the set with hash h and k members, each of them held now
        (held[s] > 0: the set that holds is that one); -1 if none was added."""
        cdef Py_ssize_t slot
        cdef int32_t i
        cdef const int32_t* members
        if self.mask < 0:
            return -1
        slot = <Py_ssize_t>(h & <uint64_t>self.mask)
        while self.at[slot] >= 0:
            if self.hashes[slot] == h and self.size[slot] == k:
                members = self.pool + self.at[slot]
                i = 0
                while i < k and held[members[i]] > 0:
                    i += 1
                if i == k:
                    return self.state[slot]
            slot = (slot + 1) & self.mask
        return -1

    cdef int add(self, uint64_t h, const int32_t* members, int32_t k, int32_t state) except -1:
        """Record the set `members[:k]` (hash h, not added yet) as DFA state `state`."""
        cdef Py_ssize_t slot, cap
        if 2 * (self.n + 1) > self.mask + 1:
            self._grow()
        if self.pool_n + k > self.pool_cap:
            cap = max(2 * self.pool_cap, self.pool_n + k, 1024)
            self.pool = <int32_t*>_grown(self.pool, cap * sizeof(int32_t))
            self.pool_cap = cap
        memcpy(self.pool + self.pool_n, members, k * sizeof(int32_t))
        slot = <Py_ssize_t>(h & <uint64_t>self.mask)
        while self.at[slot] >= 0:
            slot = (slot + 1) & self.mask
        self.hashes[slot], self.at[slot] = h, self.pool_n
        self.size[slot], self.state[slot] = k, state
        self.pool_n += k
        self.n += 1
        return 0

    cdef int _grow(self) except -1:
        """Twice the slots (64 at first), the entries placed again; the table as it was if
        memory runs out."""
        cdef Py_ssize_t size = 64 if self.mask < 0 else 2 * (self.mask + 1), i, slot
        cdef uint64_t* hashes = <uint64_t*>malloc(size * sizeof(uint64_t))
        cdef Py_ssize_t* at = <Py_ssize_t*>malloc(size * sizeof(Py_ssize_t))
        cdef int32_t* sizes = <int32_t*>malloc(size * sizeof(int32_t))
        cdef int32_t* states = <int32_t*>malloc(size * sizeof(int32_t))
        if hashes == NULL or at == NULL or sizes == NULL or states == NULL:
            free(hashes); free(at); free(sizes); free(states)
            raise MemoryError()
        for i in range(size):
            at[i] = -1
        for i in range(self.mask + 1):
            if self.at[i] >= 0:
                slot = <Py_ssize_t>(self.hashes[i] & <uint64_t>(size - 1))
                while at[slot] >= 0:
                    slot = (slot + 1) & (size - 1)
                hashes[slot], at[slot] = self.hashes[i], self.at[i]
                sizes[slot], states[slot] = self.size[i], self.state[i]
        free(self.hashes); free(self.at); free(self.size); free(self.state)
        self.hashes, self.at, self.size, self.state = hashes, at, sizes, states
        self.mask = size - 1
        return 0


cdef void* _grown(void* p, size_t size) except NULL:
    """realloc, raising MemoryError (p stays allocated then)."""
    cdef void* q = realloc(p, size)
    if q == NULL:
        raise MemoryError()
    return q


def subsets(list edges, list eps, int start, int final, int max_states, object check_budget):
    """The subset construction from NFA state `start` (no anchors): (trans, accept), a row of
    (lo, hi, target) ranges per DFA state in the order found (the start's closure first) and
    whether each holds `final`.

    Raises:
        GrammarError: more than `max_states` DFA states.
    """
    cdef _Nfa nfa = _Nfa(edges, eps)
    cdef int32_t first = start
    cdef bytes members = nfa.closure(&first, 1)
    cdef dict index = {members: 0}
    cdef _Targets targets = _Targets()
    cdef list sets = [members], trans = [], accept = []
    cdef list row
    cdef const int32_t* m
    cdef int k, i, e, s, t, p, n_holding, a, j, pos, range_lo, range_j
    cdef int32_t* bucket = nfa.bucket_at
    cdef bytes found
    cdef uint64_t h
    cdef Py_ssize_t done = 0
    while done < len(sets):
        check_budget()
        members = sets[done]
        done += 1
        m = <const int32_t*>PyBytes_AS_STRING(members)
        k = PyBytes_GET_SIZE(members) // sizeof(int32_t)
        j = 0
        for i in range(k):
            if m[i] == final:
                j = 1
        accept.append(j == 1)
        # the events (an edge starts holding at lo, stops at hi + 1) bucketed by position
        memset(bucket, 0, 258 * sizeof(int32_t))
        for i in range(k):
            s = m[i]
            for e in range(nfa.edge_at[s], nfa.edge_at[s + 1]):
                bucket[nfa.lo[e] + 1] += 1
                bucket[nfa.hi[e] + 2] += 1
        for p in range(1, 258):
            bucket[p] += bucket[p - 1]
        for i in range(k):
            s = m[i]
            for e in range(nfa.edge_at[s], nfa.edge_at[s + 1]):
                p = bucket[nfa.lo[e]]
                bucket[nfa.lo[e]] += 1
                nfa.event_target[p], nfa.event_step[p] = nfa.target[e], 1
                p = bucket[nfa.hi[e] + 1]
                bucket[nfa.hi[e] + 1] += 1
                nfa.event_target[p], nfa.event_step[p] = nfa.target[e], -1
        # (each bucket's start moved to the next one's: position p's events end at bucket[p])
        row = []
        n_holding = 0
        h = 0
        range_lo, range_j = 0, -1
        e = 0
        for pos in range(257):
            if e == bucket[pos]:
                continue  # the same targets hold as before
            while e < bucket[pos]:
                t = nfa.event_target[e]
                nfa.held[t] += nfa.event_step[e]
                if nfa.held[t] == 1 and nfa.event_step[e] == 1:
                    nfa.where[t] = n_holding
                    nfa.holding[n_holding] = t
                    n_holding += 1
                    h ^= _mix(t)
                elif nfa.held[t] == 0:
                    n_holding -= 1
                    a = nfa.holding[n_holding]
                    nfa.holding[nfa.where[t]] = a
                    nfa.where[a] = nfa.where[t]
                    h ^= _mix(t)
                e += 1
            j = -1
            if n_holding and pos < 256:
                j = targets.find(h, nfa.held, n_holding)
                if j < 0:
                    found = nfa.closure(nfa.holding, n_holding)
                    j = index.get(found, -1)
                    if j < 0:
                        j = index[found] = len(sets)
                        sets.append(found)
                        if len(sets) > max_states:
                            from pse.errors import GrammarError
                            raise GrammarError(f"the automaton needs more than {max_states} "
                                               "states (MAX_DFA_STATES)")
                    targets.add(h, nfa.holding, n_holding, j)
            if j != range_j:  # a range ends here (and another may start)
                if range_j >= 0:
                    row.append((range_lo, pos - 1, range_j))
                range_lo, range_j = pos, j
        trans.append(row)
    return trans, accept


# the sort of `refine`'s touched states: by block, then by the classes they enter on (set just
# before each qsort, which calls no Python, so another thread cannot change them meanwhile)
cdef int32_t* _sort_block
cdef uint64_t* _sort_masks
cdef int _sort_words


cdef int _compare_touched(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    if _sort_block[x] != _sort_block[y]:
        return -1 if _sort_block[x] < _sort_block[y] else 1
    cdef int w
    for w in range(_sort_words):
        if _sort_masks[x * _sort_words + w] != _sort_masks[y * _sort_words + w]:
            return -1 if _sort_masks[x * _sort_words + w] < _sort_masks[y * _sort_words + w] \
                else 1
    return 0


cdef inline bint _same_masks(uint64_t* masks, int words, int32_t x, int32_t y) noexcept nogil:
    cdef int w
    for w in range(words):
        if masks[x * words + w] != masks[y * words + w]:
            return False
    return True


def refine(object trans, list block_of, object check_budget):
    """Hopcroft's refinement of the partition `block_of` (coarser than the equivalence of
    the states of the DFA whose rows are `trans`) to the equivalence, with whole blocks as
    splitters: a splitter parts each block by the byte classes on which its states enter the
    splitter (a bitmask of classes per state). A block that splits while waiting to split
    others leaves all its parts waiting; otherwise all but the largest part wait. Returns the
    block of each state."""
    cdef int n = len(trans), n_blocks = max(block_of) + 1 if block_of else 0
    # the byte classes: cut where some range starts or ends
    cdef int class_at[258]
    cdef int pos, c, n_classes = 0, words, s, t, i, k, w, lo, hi, e
    memset(class_at, 0, sizeof(class_at))
    class_at[0] = class_at[256] = 1
    cdef int n_edges = 0
    for row in trans:
        for lo, hi, t in row:
            class_at[lo] = 1
            class_at[hi + 1] = 1
            n_edges += 1
    for pos in range(257):  # a cut's class index: how many cuts come before it
        c = class_at[pos]
        class_at[pos] = n_classes
        n_classes += c
    words = (n_classes + 63) // 64
    cdef int32_t* pred_at = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* pred = <int32_t*>malloc((n_edges + 1) * sizeof(int32_t))
    cdef uint64_t* pred_mask = <uint64_t*>malloc((n_edges + 1) * words * sizeof(uint64_t))
    cdef uint64_t* acc = <uint64_t*>malloc((n + 1) * words * sizeof(uint64_t))
    cdef int32_t* touched = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* elems = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* place = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* block = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* first = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* end = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* todo = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef char* waiting = <char*>malloc(n + 1)
    cdef int32_t* pieces = <int32_t*>malloc((2 * n + 2) * sizeof(int32_t))
    cdef int n_todo = 0, n_touched, splitter, y, run, run_end, n_pieces, largest
    cdef int untouched, groups, g, stay, q
    global _sort_block, _sort_masks, _sort_words
    try:
        if not (pred_at and pred and pred_mask and acc and touched and elems and place and block
                and first and end and todo and waiting and pieces):
            raise MemoryError()
        # predecessors by target, each with the classes of its edge (bits lo's to hi's)
        memset(pred_at, 0, (n + 1) * sizeof(int32_t))
        for row in trans:
            for lo, hi, t in row:
                pred_at[t + 1] += 1
        for s in range(n):
            pred_at[s + 1] += pred_at[s]
        memset(touched, 0, (n + 1) * sizeof(int32_t))  # (here: how many placed per target)
        for s in range(n):
            for lo, hi, t in trans[s]:
                e = pred_at[t] + touched[t]
                touched[t] += 1
                pred[e] = s
                for w in range(words):
                    pred_mask[e * words + w] = 0
                for c in range(class_at[lo], class_at[hi + 1]):
                    pred_mask[e * words + (c >> 6)] |= (<uint64_t>1) << (c & 63)
        memset(acc, 0, (n + 1) * words * sizeof(uint64_t))
        # the partition: each block a range of `elems`
        memset(first, 0, (n + 1) * sizeof(int32_t))
        for s in range(n):
            block[s] = block_of[s]
            first[block[s] + 1] += 1
        for k in range(n_blocks):
            first[k + 1] += first[k]
        for k in range(n_blocks):
            end[k] = first[k]
        for s in range(n):
            k = block[s]
            elems[end[k]] = s
            place[s] = end[k]
            end[k] += 1
        for k in range(n_blocks):
            todo[k] = k
            waiting[k] = 1
        n_todo = n_blocks
        while n_todo:
            check_budget()
            n_todo -= 1
            splitter = todo[n_todo]
            waiting[splitter] = 0
            n_touched = 0
            for i in range(first[splitter], end[splitter]):
                t = elems[i]
                for e in range(pred_at[t], pred_at[t + 1]):
                    s = pred[e]
                    k = 0
                    for w in range(words):
                        if acc[s * words + w]:
                            k = 1
                    if not k:
                        touched[n_touched] = s
                        n_touched += 1
                    for w in range(words):
                        acc[s * words + w] |= pred_mask[e * words + w]
            _sort_block, _sort_masks, _sort_words = block, acc, words
            qsort(touched, n_touched, sizeof(int32_t), _compare_touched)
            run = 0
            while run < n_touched:  # the touched states of one block y
                y = block[touched[run]]
                run_end = run
                while run_end < n_touched and block[touched[run_end]] == y:
                    run_end += 1
                untouched = (end[y] - first[y]) - (run_end - run)
                # its groups (runs of equal classes): pieces[] holds each group's start
                groups = 0
                i = run
                while i < run_end:
                    pieces[groups] = i
                    groups += 1
                    i += 1
                    while i < run_end and _same_masks(acc, words, touched[i], touched[i - 1]):
                        i += 1
                pieces[groups] = run_end
                stay = -1  # the group that stays in y (none: the untouched states stay)
                if untouched == 0:
                    if groups == 1:
                        run = run_end
                        continue
                    largest = -1
                    for g in range(groups):
                        if pieces[g + 1] - pieces[g] > largest:
                            largest, stay = pieces[g + 1] - pieces[g], g
                # each other group moves to the end of y's range, a block of its own
                n_pieces = 0
                for g in range(groups):
                    if g == stay:
                        continue
                    for i in range(pieces[g], pieces[g + 1]):
                        s = touched[i]
                        q = elems[end[y] - 1]  # swap s with y's last state
                        elems[place[s]], elems[end[y] - 1] = q, s
                        place[q], place[s] = place[s], end[y] - 1
                        end[y] -= 1
                    first[n_blocks] = end[y]
                    end[n_blocks] = end[y] + (pieces[g + 1] - pieces[g])
                    for i in range(first[n_blocks], end[n_blocks]):
                        block[elems[i]] = n_blocks
                    waiting[n_blocks] = 0
                    pieces[groups + 1 + n_pieces] = n_blocks  # (after the group starts)
                    n_pieces += 1
                    n_blocks += 1
                # the pieces wait to split others: all of them if y was waiting, else all but
                # the largest (y itself among them)
                largest, stay = end[y] - first[y], y
                if not waiting[y]:
                    for i in range(n_pieces):
                        k = pieces[groups + 1 + i]
                        if end[k] - first[k] > largest:
                            largest, stay = end[k] - first[k], k
                else:
                    stay = -1
                if y != stay and not waiting[y]:
                    waiting[y] = 1
                    todo[n_todo] = y
                    n_todo += 1
                for i in range(n_pieces):
                    k = pieces[groups + 1 + i]
                    if k != stay:
                        waiting[k] = 1
                        todo[n_todo] = k
                        n_todo += 1
                run = run_end
            for i in range(n_touched):
                s = touched[i]
                for w in range(words):
                    acc[s * words + w] = 0
        return [block[s] for s in range(n)]
    finally:
        free(pred_at); free(pred); free(pred_mask); free(acc); free(touched); free(elems)
        free(place); free(block); free(first); free(end); free(todo); free(waiting); free(pieces)


cdef inline int _check_target(Py_ssize_t t, Py_ssize_t n) except -1:
    """A row's target indexes the C arrays below (no bounds checks): one out of range is an
    error, not a stray read or write."""
    if t < 0 or t >= n:
        raise ValueError(f"a DFA row leads to state {t}, out of its {n} states")
    return 0


def moore_blocks(object trans, object accept, int rounds, object check_budget):
    """Moore's refinement of the states of a trimmed DFA (`trans[s]`: its sorted (lo, hi,
    target) ranges): first by acceptance and the bytes a state has edges on, then up to
    `rounds` rounds splitting blocks by the blocks their edges lead to. A state's signature
    is its block and its row with targets replaced by their blocks (adjacent ranges into one
    block merged), kept as bytes so that equal signatures meet in a dict; blocks are numbered
    in the order their first state comes. Returns (the block of each state, whether the
    partition is stable: the equivalence of the states)."""
    cdef Py_ssize_t n = len(trans), n_edges = 0, width = 0, s, e, k
    for row in trans:
        n_edges += len(row)
        width = max(width, len(row))
    cdef int32_t* row_at = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* edges = <int32_t*>malloc((3 * n_edges + 1) * sizeof(int32_t))
    cdef int32_t* block = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* fresh = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* sig = <int32_t*>malloc((3 * width + 1) * sizeof(int32_t))
    cdef int32_t lo, hi, b
    cdef int round_, n_blocks = -1
    cdef bint stable = False
    cdef dict seen
    try:
        if row_at == NULL or edges == NULL or block == NULL or fresh == NULL or sig == NULL:
            raise MemoryError()
        e = 0
        for s in range(n):
            row_at[s] = e
            for lo, hi, b in trans[s]:
                _check_target(b, n)
                edges[3 * e], edges[3 * e + 1], edges[3 * e + 2] = lo, hi, b
                e += 1
            block[s] = 1 if accept[s] else 0
        row_at[n] = e
        for round_ in range(rounds + 1):  # (round 0: every target in one block)
            if round_:
                check_budget()
            seen = {}
            for s in range(n):
                sig[0] = block[s]
                k = 1
                for e in range(row_at[s], row_at[s + 1]):
                    lo, hi = edges[3 * e], edges[3 * e + 1]
                    b = block[edges[3 * e + 2]] if round_ else 0
                    if k > 1 and sig[k - 1] == b and sig[k - 2] == lo - 1:
                        sig[k - 2] = hi
                    else:
                        sig[k], sig[k + 1], sig[k + 2] = lo, hi, b
                        k += 3
                fresh[s] = seen.setdefault(
                    PyBytes_FromStringAndSize(<char*>sig, k * sizeof(int32_t)), len(seen))
            block, fresh = fresh, block
            if round_ and len(seen) == n_blocks:
                stable = True
                break
            n_blocks = len(seen)
        return [block[s] for s in range(n)], stable
    finally:
        free(row_at)
        free(edges)
        free(block)
        free(fresh)
        free(sig)


def quotient(object trans, object accept, list block):
    """The DFA of the blocks of states (`block[s]`, from the refinements above) of a trimmed
    DFA: (rows, accept), the blocks numbered in BFS order from the start's block (for
    locality), each block's row its first state's with targets replaced by their blocks'
    numbers and adjacent ranges into one block merged."""
    cdef Py_ssize_t n = len(trans), n_blocks = max(block) + 1, s, k = 0, count = 1
    cdef int32_t* first = <int32_t*>malloc(n_blocks * sizeof(int32_t))
    cdef int32_t* number = <int32_t*>malloc(n_blocks * sizeof(int32_t))
    cdef int32_t* order = <int32_t*>malloc(n_blocks * sizeof(int32_t))
    cdef int32_t b, lo, hi, t, run_lo = 0, run_hi = 0, run_to
    cdef list rows = [], out, accepting = []
    try:
        if first == NULL or number == NULL or order == NULL:
            raise MemoryError()
        if len(block) != n or min(block) < 0:
            raise ValueError(f"quotient: {len(block)} blocks (from 0) for {n} states")
        for s in range(n_blocks):
            first[s] = number[s] = -1
        for s in range(n - 1, -1, -1):
            first[<int32_t>block[s]] = s
        order[0] = block[0]
        number[order[0]] = 0
        while k < count:
            b = order[k]
            k += 1
            out = []
            run_to = -1
            for lo, hi, t in trans[first[b]]:
                _check_target(t, n)
                t = block[t]
                if number[t] < 0:
                    number[t] = count
                    order[count] = t
                    count += 1
                t = number[t]
                if run_to == t and run_hi == lo - 1:
                    run_hi = hi
                    continue
                if run_to >= 0:
                    out.append((run_lo, run_hi, run_to))
                run_lo, run_hi, run_to = lo, hi, t
            if run_to >= 0:
                out.append((run_lo, run_hi, run_to))
            rows.append(out)
            accepting.append(accept[first[b]])
        return rows, accepting
    finally:
        free(first)
        free(number)
        free(order)


cdef void _spread_live(const int32_t* rev_at, const int32_t* rev, int32_t* number,
                       int32_t* todo, Py_ssize_t k) noexcept nogil:
    """From the k live states in `todo` (numbered -1), number -1 each state with an edge
    into a live one (the others are -2), along the edges reversed: `rev[rev_at[t] ..
    rev_at[t + 1]]` are the states with an edge into t."""
    cdef int32_t t
    cdef Py_ssize_t e
    while k:
        k -= 1
        t = todo[k]
        for e in range(rev_at[t], rev_at[t + 1]):
            if number[rev[e]] == -2:
                number[rev[e]] = -1
                todo[k] = rev[e]
                k += 1


cdef int _mark_live(object trans, object accept, Py_ssize_t n, int32_t* number) except -1:
    """Sets `number[s]` to -1 for each state of the DFA (`trans[s]`: its (lo, hi, target)
    ranges) that can reach an accepting state, -2 for the others."""
    cdef Py_ssize_t n_edges = 0, s, k = 0
    cdef int32_t lo, hi, t
    for row in trans:
        n_edges += len(row)
    cdef int32_t* rev_at = <int32_t*>calloc(n + 2, sizeof(int32_t))
    cdef int32_t* rev = <int32_t*>malloc((n_edges + 1) * sizeof(int32_t))
    cdef int32_t* todo = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    try:
        if rev_at == NULL or rev == NULL or todo == NULL:
            raise MemoryError()
        # the edges reversed (grouped by target), then a search back from the accepting states
        for row in trans:
            for lo, hi, t in row:
                _check_target(t, n)
                rev_at[t + 2] += 1
        for s in range(2, n + 2):
            rev_at[s] += rev_at[s - 1]
        for s in range(n):
            for lo, hi, t in trans[s]:
                rev[rev_at[t + 1]] = s
                rev_at[t + 1] += 1
        for s in range(n):
            number[s] = -1 if accept[s] else -2
            if accept[s]:
                todo[k] = s
                k += 1
        _spread_live(rev_at, rev, number, todo, k)
        return 0
    finally:
        free(rev_at)
        free(rev)
        free(todo)


def live_states(object trans, object accept):
    """Which states of a DFA (`trans[s]`: its (lo, hi, target) ranges) can reach an accepting
    state, as a list of bools."""
    cdef Py_ssize_t n = len(trans), s
    cdef int32_t* number = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    if number == NULL:
        raise MemoryError()
    try:
        _mark_live(trans, accept, n, number)
        return [number[s] == -1 for s in range(n)]
    finally:
        free(number)


def trimmed(object trans, object accept):
    """The states of a DFA (`trans[s]`: its (lo, hi, target) ranges) that are reachable from
    state 0 and can reach an accepting state, in BFS order from 0: (their rows renumbered
    in that order, edges to other states dropped; their acceptance; their old numbers).
    None when state 0 reaches no accepting state. A DFA trimmed already (a subset
    construction's, which finds its states in this order) comes back as it is."""
    cdef Py_ssize_t n = len(trans), k = 0, count = 1
    cdef int32_t* number = <int32_t*>malloc((n + 1) * sizeof(int32_t))  # -2 dead, -1 live
    cdef int32_t* order = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t lo, hi, t
    cdef bint same = True
    try:
        if number == NULL or order == NULL:
            raise MemoryError()
        if n == 0:
            return None
        _mark_live(trans, accept, n, number)
        if number[0] == -2:
            return None
        # the live states reached from 0, numbered in BFS order
        order[0] = 0
        number[0] = 0
        while k < count:
            for lo, hi, t in trans[order[k]]:
                if number[t] == -2:
                    same = False
                elif number[t] == -1:
                    number[t] = count
                    order[count] = t
                    same = same and t == count
                    count += 1
            k += 1
        if same and count == n:
            return trans, accept, list(range(n))
        return ([[(lo, hi, number[t]) for lo, hi, t in trans[order[k]] if number[t] >= 0]
                 for k in range(count)],
                [accept[order[k]] for k in range(count)], [order[k] for k in range(count)])
    finally:
        free(number)
        free(order)


def start_moved(tuple trans):
    """`trans` (a DFA's rows) with the edges into the start (state 0) sent to a copy of it
    appended as state n (its own such edges too): then no edge enters the start. Rows without
    such an edge are kept (the same tuples)."""
    cdef Py_ssize_t n = len(trans), s, k
    cdef list out = list(trans)
    cdef tuple row, edge
    cdef list moved
    for s in range(n):
        row = <tuple>trans[s]
        for k in range(len(row)):
            if (<tuple>row[k])[2] == 0:
                break
        else:
            continue
        moved = []
        for edge in row:
            moved.append(edge if edge[2] != 0 else (edge[0], edge[1], n))
        out[s] = tuple(moved)
    out.append(out[0])
    return out


# --- products ---------------------------------------------------------------------------------

ctypedef struct _Rows:
    int32_t* at               # row s: edges at[s] .. at[s + 1]
    int32_t* lo
    int32_t* hi
    int32_t* to


cdef int _rows_read(_Rows* r, object trans) except -1:
    """`trans` (each row sorted, disjoint (lo, hi, target) ranges) into C arrays."""
    cdef Py_ssize_t n = len(trans), n_edges = 0, s, e = 0
    for row in trans:
        n_edges += len(row)
    r.at = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    r.lo = <int32_t*>malloc((n_edges + 1) * sizeof(int32_t))
    r.hi = <int32_t*>malloc((n_edges + 1) * sizeof(int32_t))
    r.to = <int32_t*>malloc((n_edges + 1) * sizeof(int32_t))
    if r.at == NULL or r.lo == NULL or r.hi == NULL or r.to == NULL:
        raise MemoryError()
    for s in range(n):
        r.at[s] = e
        for lo, hi, t in trans[s]:
            _check_target(t, n)
            if not 0 <= lo <= hi <= 255:
                raise ValueError(f"a DFA row holds the byte range {lo}..{hi}")
            r.lo[e], r.hi[e], r.to[e] = lo, hi, t
            e += 1
    r.at[n] = e
    return 0


cdef void _rows_free(_Rows* r) noexcept:
    free(r.at)
    free(r.lo)
    free(r.hi)
    free(r.to)


cdef inline uint64_t _pair_hash(uint64_t key) noexcept nogil:
    key ^= key >> 33
    key *= 0xFF51AFD7ED558CCDu
    return key ^ (key >> 29)


cdef enum:
    _NO_PAIR = -1


cdef class _PairIndex:
    """Pairs of states (t1, t2 >= -1) -> their numbers, by open addressing."""
    cdef uint64_t* keys
    cdef int32_t* values         # _NO_PAIR: an empty slot
    cdef Py_ssize_t mask, n

    def __cinit__(self):
        self.mask = 127
        self.n = 0
        self.keys = <uint64_t*>malloc((self.mask + 1) * sizeof(uint64_t))
        self.values = <int32_t*>malloc((self.mask + 1) * sizeof(int32_t))
        if self.keys == NULL or self.values == NULL:
            raise MemoryError()
        memset(self.values, 0xFF, (self.mask + 1) * sizeof(int32_t))

    def __dealloc__(self):
        free(self.keys)
        free(self.values)

    cdef inline Py_ssize_t slot(self, uint64_t key) noexcept:
        cdef Py_ssize_t i = _pair_hash(key) & self.mask
        while self.values[i] != _NO_PAIR and self.keys[i] != key:
            i = (i + 1) & self.mask
        return i

    cdef int add(self, Py_ssize_t i, uint64_t key, int32_t value) except -1:
        """Put `value` at slot i, found empty by slot(key)."""
        cdef uint64_t* old_keys = self.keys
        cdef int32_t* old_values = self.values
        cdef Py_ssize_t old_mask = self.mask, j
        self.keys[i], self.values[i] = key, value
        self.n += 1
        if 2 * self.n <= self.mask:
            return 0
        self.mask = 2 * old_mask + 1
        self.keys = <uint64_t*>malloc((self.mask + 1) * sizeof(uint64_t))
        self.values = <int32_t*>malloc((self.mask + 1) * sizeof(int32_t))
        if self.keys == NULL or self.values == NULL:
            free(self.keys)
            free(self.values)
            self.keys, self.values, self.mask = old_keys, old_values, old_mask
            raise MemoryError()
        memset(self.values, 0xFF, (self.mask + 1) * sizeof(int32_t))
        for j in range(old_mask + 1):
            if old_values[j] != _NO_PAIR:
                i = self.slot(old_keys[j])
                self.keys[i], self.values[i] = old_keys[j], old_values[j]
        free(old_keys)
        free(old_values)
        return 0


cdef class _Edges:
    """A growing automaton in C arrays: per state its first edge and acceptance, per edge
    (lo, hi, target)."""
    cdef int32_t* at
    cdef uint8_t* accept
    cdef int32_t* lo
    cdef int32_t* hi
    cdef int32_t* to
    cdef Py_ssize_t n_states, n_edges, state_cap, edge_cap

    def __cinit__(self):
        self.state_cap, self.edge_cap = 64, 256
        self.at = <int32_t*>malloc((self.state_cap + 1) * sizeof(int32_t))
        self.accept = <uint8_t*>malloc(self.state_cap)
        self.lo = <int32_t*>malloc(self.edge_cap * sizeof(int32_t))
        self.hi = <int32_t*>malloc(self.edge_cap * sizeof(int32_t))
        self.to = <int32_t*>malloc(self.edge_cap * sizeof(int32_t))
        if (self.at == NULL or self.accept == NULL or self.lo == NULL or self.hi == NULL
                or self.to == NULL):
            raise MemoryError()
        self.at[0] = 0

    def __dealloc__(self):
        free(self.at)
        free(self.accept)
        free(self.lo)
        free(self.hi)
        free(self.to)

    cdef int end_state(self, bint accepting) except -1:
        """Close the state whose edges were added last."""
        if self.n_states == self.state_cap:
            self.state_cap *= 2
            self.at = <int32_t*>_realloc(self.at, (self.state_cap + 1) * sizeof(int32_t))
            self.accept = <uint8_t*>_realloc(self.accept, self.state_cap)
        self.accept[self.n_states] = accepting
        self.n_states += 1
        self.at[self.n_states] = <int32_t>self.n_edges
        return 0

    cdef int add_edge(self, int32_t lo, int32_t hi, int32_t to) except -1:
        """An edge of the open state; adjacent to its last into the same target: merged."""
        cdef Py_ssize_t last = self.n_edges - 1
        if (last >= self.at[self.n_states] and self.to[last] == to
                and self.hi[last] == lo - 1):
            self.hi[last] = hi
            return 0
        if self.n_edges == self.edge_cap:
            self.edge_cap *= 2
            self.lo = <int32_t*>_realloc(self.lo, self.edge_cap * sizeof(int32_t))
            self.hi = <int32_t*>_realloc(self.hi, self.edge_cap * sizeof(int32_t))
            self.to = <int32_t*>_realloc(self.to, self.edge_cap * sizeof(int32_t))
        self.lo[self.n_edges], self.hi[self.n_edges], self.to[self.n_edges] = lo, hi, to
        self.n_edges += 1
        return 0

    cdef tuple trimmed(self):
        """(rows, accept) of the states that can reach an accepting one, kept in their order
        (states found in BFS order from state 0 keep it: what reaches a live state is live,
        and a dead state reaches only dead ones), edges to the others dropped; the empty
        language's one state when state 0 cannot."""
        cdef Py_ssize_t n = self.n_states, s, e, k = 0
        cdef int32_t* number = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        cdef int32_t* rev_at = <int32_t*>calloc(n + 2, sizeof(int32_t))
        cdef int32_t* rev = <int32_t*>malloc((self.n_edges + 1) * sizeof(int32_t))
        cdef int32_t* todo = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        cdef int32_t count = 0
        try:
            if number == NULL or rev_at == NULL or rev == NULL or todo == NULL:
                raise MemoryError()
            for e in range(self.n_edges):  # the edges reversed, grouped by target
                rev_at[self.to[e] + 2] += 1
            for s in range(2, n + 2):
                rev_at[s] += rev_at[s - 1]
            for s in range(n):
                for e in range(self.at[s], self.at[s + 1]):
                    rev[rev_at[self.to[e] + 1]] = <int32_t>s
                    rev_at[self.to[e] + 1] += 1
            for s in range(n):  # -1: live, -2: not (yet) found live
                number[s] = -1 if self.accept[s] else -2
                if self.accept[s]:
                    todo[k] = <int32_t>s
                    k += 1
            _spread_live(rev_at, rev, number, todo, k)
            if number[0] == -2:
                return [[]], [False]
            for s in range(n):
                if number[s] == -1:
                    number[s] = count
                    count += 1
            return ([[(self.lo[e], self.hi[e], number[self.to[e]])
                      for e in range(self.at[s], self.at[s + 1]) if number[self.to[e]] >= 0]
                     for s in range(n) if number[s] >= 0],
                    [bool(self.accept[s]) for s in range(n) if number[s] >= 0])
        finally:
            free(number)
            free(rev_at)
            free(rev)
            free(todo)


cdef void* _realloc(void* p, size_t size) except NULL:
    cdef void* grown = realloc(p, size)
    if grown == NULL:
        raise MemoryError()
    return grown


def product(object a_trans, object a_accept, object b_trans, object b_accept, bint difference,
            Py_ssize_t max_states, object check_budget):
    """The product of DFAs a and b (`trans[s]`: sorted, disjoint (lo, hi, target) ranges),
    its states the pairs of their states reached from (0, 0) that can reach an accepting
    pair, in BFS order (trimmed, as `automaton.trim` numbers them): the intersection (edges
    where both have one, accepting where both accept) or, with `difference`, a less b (edges
    where a has one, b's missing edges leading to a dead b; accepting where a accepts and b
    does not). Adjacent ranges into one pair are one edge. Returns (rows, accept), or None
    past `max_states` pairs."""
    cdef _Rows a, b
    cdef _PairIndex index = _PairIndex()
    cdef _Edges out = _Edges()
    cdef Py_ssize_t i = 0, e, j, j_end, at
    cdef int32_t lo, hi, hi1, t1, t2, k, s1, s2
    cdef uint64_t key
    memset(&a, 0, sizeof(_Rows))
    memset(&b, 0, sizeof(_Rows))
    pairs = [(0, 0)]
    try:
        _rows_read(&a, a_trans)
        _rows_read(&b, b_trans)
        index.add(index.slot(1), 1, 0)  # (0, 0): t1 << 32 | (t2 + 1)
        while i < len(pairs):
            if i & 63 == 0:
                check_budget()
            s1, s2 = pairs[i]
            i += 1
            j = j_end = 0
            if s2 >= 0:
                j, j_end = b.at[s2], b.at[s2 + 1]
            for e in range(a.at[s1], a.at[s1 + 1]):
                lo, hi1, t1 = a.lo[e], a.hi[e], a.to[e]
                while lo <= hi1:  # cut where b's row changes (as automaton.paired_ranges)
                    while j < j_end and b.hi[j] < lo:
                        j += 1
                    if j < j_end and b.lo[j] <= lo:
                        hi, t2 = min(hi1, b.hi[j]), b.to[j]
                    else:
                        hi, t2 = (hi1 if j == j_end else min(hi1, b.lo[j] - 1)), -1
                    if t2 >= 0 or difference:
                        key = (<uint64_t>t1 << 32) | <uint32_t>(t2 + 1)
                        at = index.slot(key)
                        k = index.values[at]
                        if k == _NO_PAIR:
                            if len(pairs) >= max_states:
                                return None
                            k = len(pairs)
                            pairs.append((t1, t2))
                            index.add(at, key, k)
                        out.add_edge(lo, hi, k)
                    lo = hi + 1
            if difference:
                out.end_state(bool(a_accept[s1]) and not (s2 >= 0 and b_accept[s2]))
            else:
                out.end_state(bool(a_accept[s1]) and bool(b_accept[s2]))
        return out.trimmed()
    finally:
        _rows_free(&a)
        _rows_free(&b)
