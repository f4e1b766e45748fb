# cython: boundscheck=False, wraparound=False, cdivision=True
"""The subset construction over byte ranges (`automaton.determinize` without anchors) and the
refinements that minimize a DFA (Moore's rounds, Hopcroft's), in C.

A DFA state is the set of NFA states a text can reach (epsilon closures included), kept as
the bytes of its sorted int32 ids, so sets are found again through a dict. Each set's row is a
sweep over the byte positions where one of its members' edges starts or ends (the positions
bucketed, 0 to 256), with the targets that hold counted: a bounded repeat of a UTF-8 class
(`(?:\\S+\\s+){0,199}`) makes thousands of sets with dozens of edges each, which the Python
sweep did at tens of microseconds a set.

Also: the live states of a DFA, and the product of a key automaton with the spelling trie of an
object's names (`names_product`), minimized with its rows punched, hashed and compared as C
arrays.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcpy, memset
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)


cdef int _compare(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0]
    cdef int32_t y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


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
    cdef int32_t* sorted_   # them, sorted
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
        self.where, self.holding, self.sorted_ = _ints(zeros), _ints(zeros), _ints(zeros)
        self.bucket_at = _ints([0] * 258)
        cdef list events = [0] * (2 * len(lo))
        self.event_target, self.event_step = _ints(events), _ints(events)
        self.closures = 0

    def __dealloc__(self):
        free(self.edge_at); free(self.lo); free(self.hi); free(self.target)
        free(self.eps_at); free(self.eps); free(self.held); free(self.seen); free(self.stack)
        free(self.where); free(self.holding); free(self.sorted_); free(self.bucket_at)
        free(self.event_target); free(self.event_step)

    cdef bytes closure(self, const int32_t* states, int k):
        """The sorted ids of `states` and the states epsilon edges reach from them."""
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
            qsort(out, count, sizeof(int32_t), _compare)
            return PyBytes_FromStringAndSize(<char*>out, count * sizeof(int32_t))
        finally:
            free(out)


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
    cdef dict closures = {}
    cdef list sets = [members], trans = [], accept = []
    cdef list row
    cdef const int32_t* m
    cdef int k, i, e, s, t, p, n_holding, a, j, pos, range_lo, range_j
    cdef int32_t* bucket = nfa.bucket_at
    cdef bytes key, found
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
                elif nfa.held[t] == 0:
                    n_holding -= 1
                    a = nfa.holding[n_holding]
                    nfa.holding[nfa.where[t]] = a
                    nfa.where[a] = nfa.where[t]
                e += 1
            j = -1
            if n_holding and pos < 256:
                for i in range(n_holding):
                    nfa.sorted_[i] = nfa.holding[i]
                qsort(nfa.sorted_, n_holding, sizeof(int32_t), _compare)
                key = PyBytes_FromStringAndSize(<char*>nfa.sorted_, n_holding * sizeof(int32_t))
                found = closures.get(key)
                if found is None:
                    found = closures[key] = nfa.closure(nfa.sorted_, n_holding)
                j = index.get(found, -1)
                if j < 0:
                    j = index[found] = len(sets)
                    sets.append(found)
                    if len(sets) > max_states:
                        from pse.errors import GrammarError
                        raise GrammarError(f"the automaton needs more than {max_states} "
                                           "states (MAX_DFA_STATES)")
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


cdef int _mark_live(object trans, object accept, Py_ssize_t n, int32_t* number) except -1:
    """Sets `number[s]` to -1 for each state of the DFA (`trans[s]`: its (lo, hi, target)
    ranges) that can reach an accepting state, -2 for the others."""
    cdef Py_ssize_t n_edges = 0, s, e, k = 0
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
        while k:
            k -= 1
            t = todo[k]
            for e in range(rev_at[t], rev_at[t + 1]):
                if number[rev[e]] == -2:
                    number[rev[e]] = -1
                    todo[k] = rev[e]
                    k += 1
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
    None when state 0 reaches no accepting state."""
    cdef Py_ssize_t n = len(trans), k = 0, count = 1
    cdef int32_t* number = <int32_t*>malloc((n + 1) * sizeof(int32_t))  # -2 dead, -1 live
    cdef int32_t* order = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t lo, hi, t
    cdef list rows = [], out
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
            out = []
            for lo, hi, t in trans[order[k]]:
                if number[t] == -2:
                    continue
                if number[t] == -1:
                    number[t] = count
                    order[count] = t
                    count += 1
                out.append((lo, hi, number[t]))
            rows.append(out)
            k += 1
        return rows, [accept[order[s]] for s in range(count)], [order[s] for s in range(count)]
    finally:
        free(number)
        free(order)


cdef class _Ints:
    """A growable int32 array."""
    cdef int32_t* at
    cdef Py_ssize_t n, cap

    def __cinit__(self):
        self.cap = 64
        self.n = 0
        self.at = <int32_t*>malloc(64 * sizeof(int32_t))
        if self.at == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.at)

    cdef int push(self, int32_t v) except -1:
        cdef int32_t* grown
        if self.n == self.cap:
            grown = <int32_t*>realloc(self.at, 2 * self.cap * sizeof(int32_t))
            if grown == NULL:
                raise MemoryError()
            self.at, self.cap = grown, 2 * self.cap
        self.at[self.n] = v
        self.n += 1
        return 0


cdef struct _Range:
    int32_t lo, hi, t
    int32_t src  # the index of the key range it is (kept whole), or -1


cdef inline Py_ssize_t _put(_Range* out, Py_ssize_t m, int32_t lo, int32_t hi, int32_t t,
                            int32_t src) noexcept:
    """Append (lo, hi, t) to the m ranges of `out`, joined with the last if it continues it
    into the same target; the new length."""
    if m and out[m - 1].t == t and out[m - 1].hi == lo - 1:
        out[m - 1].hi = hi
        out[m - 1].src = -1
        return m
    out[m].lo, out[m].hi, out[m].t, out[m].src = lo, hi, t, src
    return m + 1


cdef Py_ssize_t _punch(const _Range* row, Py_ssize_t n, const int32_t* kb, const int32_t* kt,
                       Py_ssize_t nk, _Range* out) except -1:
    """Row `row` (n sorted ranges) with byte kb[k] sent to kt[k] (-1: nowhere; kb sorted,
    each byte inside a range), neighbouring ranges into one target joined, written to `out`
    (room for n + 2 nk ranges); its length. A range left whole keeps its `src`."""
    cdef Py_ssize_t i, k = 0, m = 0
    cdef int32_t lo, hi, t, c
    cdef bint whole
    for i in range(n):
        lo, hi, t = row[i].lo, row[i].hi, row[i].t
        whole = True
        while k < nk and kb[k] <= hi:
            c = kb[k]
            if c < lo:
                raise ValueError(f"punched_row: byte {c} is in no range of the row")
            whole = False
            if lo < c:
                m = _put(out, m, lo, c - 1, t, -1)
            if kt[k] >= 0:
                m = _put(out, m, c, c, kt[k], -1)
            lo = c + 1
            k += 1
        if whole:
            m = _put(out, m, lo, hi, t, row[i].src)
        elif lo <= hi:
            m = _put(out, m, lo, hi, t, -1)
    if k < nk:
        raise ValueError(f"punched_row: byte {kb[k]} is in no range of the row")
    return m


cdef tuple _row_tuple(const _Range* r, Py_ssize_t m, list ranges):
    """The row as a tuple of (lo, hi, target) tuples, untracked by the garbage collector: a
    range with a `src` is that tuple of `ranges`."""
    cdef tuple row = PyTuple_New(m)
    cdef object item
    cdef Py_ssize_t i
    for i in range(m):
        if r[i].src >= 0:
            item = ranges[r[i].src]
        else:
            item = (r[i].lo, r[i].hi, r[i].t)
            PyObject_GC_UnTrack(<PyObject*>item)
        Py_INCREF(item)
        PyTuple_SET_ITEM(row, i, item)
    PyObject_GC_UnTrack(<PyObject*>row)
    return row


def punched_row(tuple row, list kids):
    """`row` (sorted (lo, hi, target) ranges, each byte of `kids` inside one) with the bytes
    of `kids` sent elsewhere (sorted (byte, target); target -1: nowhere), neighbouring ranges
    into one target joined. (`names_product` makes a row so per pair.)"""
    cdef Py_ssize_t k, n = len(row), nk = len(kids)
    cdef int32_t kb[256]
    cdef int32_t kt[256]
    if nk > 256:
        raise ValueError("punched_row: more than 256 bytes to punch")
    for k in range(nk):
        kb[k], kt[k] = kids[k]
    cdef _Range* r = <_Range*>malloc((2 * n + 2 * nk + 1) * sizeof(_Range))
    if r == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            r[k].lo, r[k].hi, r[k].t = row[k]
            r[k].src = -1
        return _row_tuple(&r[n], _punch(r, n, kb, kt, nk, &r[n]), [])
    finally:
        free(r)


cdef uint64_t _row_hash(const _Range* r, Py_ssize_t m, bint acc) noexcept:
    cdef uint64_t h = (<uint64_t>0x1E3779B97F4A7C15) ^ (<uint64_t>m << 1) ^ acc
    cdef Py_ssize_t i
    for i in range(m):
        h = (h ^ (<uint64_t>(r[i].lo & 255) | (<uint64_t>(r[i].hi & 255) << 8)
                  | (<uint64_t>(<uint32_t>r[i].t) << 16))) * (<uint64_t>0x100000001B3)
        h ^= h >> 29
    return h


cdef class _Rows:
    """States' rows (ranges and acceptance) in flat arrays, and a hash table finding a state
    by its row: `names_product`'s minimization without a tuple hashed per pair."""
    cdef _Range* ranges
    cdef Py_ssize_t n_ranges, cap_ranges
    cdef _Ints off  # per state, where its ranges start (one more at the end)
    cdef _Ints acc  # per state, 1: accepting
    cdef int32_t* slots  # state numbers, -1: empty
    cdef Py_ssize_t n_slots, n_in

    def __cinit__(self):
        self.cap_ranges = 1024
        self.ranges = <_Range*>malloc(self.cap_ranges * sizeof(_Range))
        self.n_slots = 256
        self.slots = <int32_t*>malloc(self.n_slots * sizeof(int32_t))
        if self.ranges == NULL or self.slots == NULL:
            raise MemoryError()
        memset(self.slots, 0xFF, self.n_slots * sizeof(int32_t))
        self.off = _Ints()
        self.off.push(0)
        self.acc = _Ints()

    def __dealloc__(self):
        free(self.ranges)
        free(self.slots)

    cdef int add(self, const _Range* r, Py_ssize_t m, bint acc) except -1:
        """A state of its own with this row (the next number)."""
        cdef _Range* grown
        cdef Py_ssize_t cap = self.cap_ranges
        while self.n_ranges + m > cap:
            cap *= 2
        if cap != self.cap_ranges:
            grown = <_Range*>realloc(self.ranges, cap * sizeof(_Range))
            if grown == NULL:
                raise MemoryError()
            self.ranges, self.cap_ranges = grown, cap
        if m:
            memcpy(&self.ranges[self.n_ranges], r, m * sizeof(_Range))
        self.n_ranges += m
        self.off.push(<int32_t>self.n_ranges)
        self.acc.push(acc)
        return 0

    cdef bint same(self, int32_t q, const _Range* r, Py_ssize_t m, bint acc) noexcept:
        cdef Py_ssize_t i, at = self.off.at[q]
        if self.off.at[q + 1] - at != m or self.acc.at[q] != acc:
            return False
        for i in range(m):
            if (self.ranges[at + i].lo != r[i].lo or self.ranges[at + i].hi != r[i].hi
                    or self.ranges[at + i].t != r[i].t):
                return False
        return True

    cdef int32_t find(self, const _Range* r, Py_ssize_t m, bint acc) noexcept:
        """The state entered (`enter`) with this row, or -1."""
        cdef Py_ssize_t mask = self.n_slots - 1
        cdef Py_ssize_t i = <Py_ssize_t>(_row_hash(r, m, acc) & <uint64_t>mask)
        while self.slots[i] >= 0:
            if self.same(self.slots[i], r, m, acc):
                return self.slots[i]
            i = (i + 1) & mask
        return -1

    cdef int enter(self, int32_t q) except -1:
        """Make state q findable by its row (which no state entered has)."""
        cdef Py_ssize_t k, n_old
        cdef int32_t* old
        if 2 * (self.n_in + 1) > self.n_slots:  # grow: every entered state again
            old, n_old = self.slots, self.n_slots
            self.slots = <int32_t*>malloc(2 * n_old * sizeof(int32_t))
            if self.slots == NULL:
                self.slots = old
                raise MemoryError()
            self.n_slots = 2 * n_old
            memset(self.slots, 0xFF, self.n_slots * sizeof(int32_t))
            self.n_in = 0
            for k in range(n_old):
                if old[k] >= 0:
                    self._place(old[k])
            free(old)
        self._place(q)
        return 0

    cdef void _place(self, int32_t q) noexcept:
        cdef Py_ssize_t at = self.off.at[q], mask = self.n_slots - 1
        cdef Py_ssize_t i = <Py_ssize_t>(_row_hash(&self.ranges[at], self.off.at[q + 1] - at,
                                                   self.acc.at[q]) & <uint64_t>mask)
        while self.slots[i] >= 0:
            i = (i + 1) & mask
        self.slots[i] = q
        self.n_in += 1


cdef void _mark_cuts(const _Range* r, Py_ssize_t m, uint8_t* starts) noexcept:
    """Set starts[b] (257 flags) where the row's target changes from byte b - 1 to b (as
    _core.structure.class_cuts reads a DFA's rows)."""
    cdef Py_ssize_t i
    cdef int end = -1
    cdef int32_t last = -1
    for i in range(m):
        if end != r[i].lo - 1:
            starts[end + 1] = 1
            starts[r[i].lo] = 1
        elif last != r[i].t:
            starts[r[i].lo] = 1
        end, last = r[i].hi, r[i].t
    starts[end + 1] = 1


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


def trie_add(list trans, list ends, bytes word):
    """Add `word` to a trie (`trans`: per node, byte -> child; `ends`: per node, whether a
    word ends there), one edge per byte from the root (node 0); the node where it ends
    (marked). The ASCII names of an object's keys, spelled one way each, go in so."""
    cdef Py_ssize_t s = 0, i, n = len(word)
    cdef const unsigned char* p = word
    cdef dict row
    cdef object t
    for i in range(n):
        if not 0 <= s < len(trans):
            raise ValueError(f"trie_add: no node {s}")
        row = trans[s]
        t = row.get(p[i])
        if t is None:
            t = len(trans)
            row[p[i]] = t
            trans.append({})
            ends.append(False)
        s = t
    if not 0 <= s < len(ends):
        raise ValueError(f"trie_add: no node {s}")
    ends[s] = True
    return s


def names_product(list trie, list is_name, const int32_t[:, ::1] table, tuple key_rows,
                  key_accept, key_live, list wide, int wide_limit, check):
    """The product of a key automaton with the spelling trie of names (json_spelling's
    `without_names_states`: keys that are not one of the names), pairs (trie node, key state)
    from (0, 0), minimized on the way: children before parents, each pair is a state of its
    own unless one with its row and acceptance exists.

    Args:
        trie, is_name: the names' spelling trie (byte -> child per node; which nodes end a
            name).
        table: the key automaton's transitions, (states, 256), -1: no edge.
        key_rows, key_accept: its states numbered from 1 (0 is the product's start), as
            rows and acceptance (a new row reuses their range tuples).
        key_live: per key state, whether it reaches an accepting state.
        wide: per key state, the states (numbered from 1, as bits) that a pair's row surely
            still leads to when it punches at most `wide_limit` bytes.
        check: called every 256 new pairs (the compile budget).

    Returns:
        (rows, accept, derived, reached, begin, cuts): the product's rows and acceptance
        (0: the start, 1 to n: the key states, then the new ones); per new state (the start
        included) made by a pair that is not twinless, (its twin, trie node, False), the
        twin being the pair's key state (numbered from 1, see json_spelling.KeyStates); the
        states surely reached, as bits; another state equal to the start (0: none); and the
        rows' class cuts (as `DFA.cuts`, a byte per byte). None when the start is dead. A
        pair is twinless when on some byte it reaches a dead pair whose key state lives:
        its twin allows what it does not.
    """
    cdef Py_ssize_t n_keys = len(key_rows), n_pairs = 1, e, m
    cdef Py_ssize_t n_trie = len(trie)
    if not n_keys or not n_trie or table.shape[0] != n_keys or table.shape[1] != 256 \
            or len(key_accept) != n_keys or len(key_live) != n_keys or len(wide) != n_keys \
            or len(is_name) != n_trie:
        raise ValueError("names_product: tables of different sizes (or empty)")
    cdef dict ids = {0: 0}  # a pair's number by its key: trie node * key states + key state
    cdef _Ints node_of = _Ints(), state_of = _Ints(), edge_at = _Ints(), edge_byte = _Ints()
    cdef _Ints edge_to = _Ints(), stack = _Ints(), post = _Ints()
    cdef bytearray entered = bytearray(1)
    cdef int32_t kb[256]
    cdef int32_t kt[256]
    cdef int32_t pid, node, state, b, child, target, cid, nk, i
    cdef object children
    node_of.push(0)
    state_of.push(0)
    edge_at.push(-1)
    stack.push(0)
    # the pairs from the start, depth first, each one's edges to others (on the trie's bytes,
    # in order) listed when it is entered, and the pairs in post-order (the trie is acyclic)
    while stack.n:
        stack.n -= 1
        pid = stack.at[stack.n]
        if pid & 1:
            post.push(pid >> 1)
            continue
        pid >>= 1
        if entered[pid]:
            continue
        entered[pid] = 1
        stack.push((pid << 1) | 1)
        node, state = node_of.at[pid], state_of.at[pid]
        edge_at.at[pid] = edge_byte.n
        children = trie[node]
        nk = 0
        for b, child in (<dict>children).items():  # sorted by byte (insertion)
            if not 0 <= b < 256 or not 0 <= child < n_trie:
                raise ValueError(f"names_product: bad trie edge {b} -> {child}")
            i = nk
            while i and kb[i - 1] > b:
                kb[i], kt[i] = kb[i - 1], kt[i - 1]
                i -= 1
            kb[i], kt[i] = b, child
            nk += 1
        for i in range(nk):
            b, child = kb[i], kt[i]
            target = table[state, b]
            if target < 0:
                continue
            if target >= n_keys:
                raise ValueError(f"names_product: a key state {target} out of range")
            cid = ids.setdefault(<int64_t>child * n_keys + target, n_pairs)
            if cid == n_pairs:
                n_pairs += 1
                node_of.push(child)
                state_of.push(target)
                edge_at.push(-1)
                entered.append(0)
                if not cid & 255:
                    check()
            if not entered[cid]:
                stack.push(cid << 1)
            edge_byte.push(b)
            edge_to.push(cid)
        edge_byte.push(-1)  # (the end of pid's edges)
        edge_to.push(-1)
    # children first, each pair a state unless one with its row and acceptance exists (the
    # key states first: a pair may be one of them; canon -1: dead). Rows are punched, hashed
    # and compared as C arrays; a tuple is made only for a new state
    cdef list rows = [()], ranges = []
    rows.extend(key_rows)
    cdef list accept = [False]
    accept.extend(key_accept)
    cdef _Rows known = _Rows()
    cdef _Range* krow = NULL
    cdef _Range* out = NULL
    cdef Py_ssize_t* koff = <Py_ssize_t*>malloc((n_keys + 1) * sizeof(Py_ssize_t))
    cdef int32_t* canon = <int32_t*>calloc(n_pairs, sizeof(int32_t))
    cdef bytearray twinless = bytearray(n_pairs)
    cdef dict derived = {}
    cdef object reached = 1, r
    cdef Py_ssize_t n_out, longest = 0
    cdef int32_t q
    cdef bint acc
    cdef uint8_t starts[257]
    memset(starts, 0, 257)
    try:
        if koff == NULL or canon == NULL:
            raise MemoryError()
        known.add(NULL, 0, False)  # (the start's place: its row is made last)
        koff[0] = 0
        for state in range(n_keys):
            koff[state + 1] = koff[state] + len(<tuple>key_rows[state])
            longest = max(longest, len(<tuple>key_rows[state]))
        krow = <_Range*>malloc((koff[n_keys] + 1) * sizeof(_Range))
        out = <_Range*>malloc((longest + 2 * 256 + 1) * sizeof(_Range))
        if krow == NULL or out == NULL:
            raise MemoryError()
        for state in range(n_keys):
            e = koff[state]
            for r in <tuple>key_rows[state]:
                krow[e].lo, krow[e].hi, krow[e].t = r
                krow[e].src = len(ranges)
                ranges.append(r)
                e += 1
            e = koff[state]
            _mark_cuts(&krow[e], koff[state + 1] - e, starts)
            known.add(&krow[e], koff[state + 1] - e, key_accept[state])
            if known.find(&krow[e], koff[state + 1] - e, key_accept[state]) < 0:
                known.enter(state + 1)  # (two alike: the first is found)
        for m in range(post.n):
            pid = post.at[m]
            node, state = node_of.at[pid], state_of.at[pid]
            nk = 0
            e = edge_at.at[pid]
            while edge_to.at[e] >= 0:
                cid = edge_to.at[e]
                kb[nk], kt[nk] = edge_byte.at[e], canon[cid]
                nk += 1
                if twinless[cid] or (canon[cid] < 0 and key_live[state_of.at[cid]]):
                    twinless[pid] = 1
                e += 1
            n_out = _punch(&krow[koff[state]], koff[state + 1] - koff[state], kb, kt, nk, out)
            acc = key_accept[state] and not is_name[node]
            if not n_out and not acc:
                canon[pid] = -1
                continue
            if nk <= wide_limit:
                reached = reached | wide[state]
            if pid == 0:  # (the last in post-order)
                rows[0], accept[0] = _row_tuple(out, n_out, ranges), acc
                if not twinless[pid]:
                    derived[0] = (state + 1, node, False)
                _mark_cuts(out, n_out, starts)
                starts[0] = 0
                q = known.find(out, n_out, acc)
                return (rows, accept, derived, reached, max(q, 0),
                        PyBytes_FromStringAndSize(<char*>starts, 256))
            q = known.find(out, n_out, acc)
            if q < 0:
                _mark_cuts(out, n_out, starts)
                q = len(rows)
                known.add(out, n_out, acc)
                known.enter(q)
                rows.append(_row_tuple(out, n_out, ranges))
                accept.append(acc)
                if not twinless[pid]:
                    derived[q] = (state + 1, node, False)
            canon[pid] = q
        return None  # (the start is dead)
    finally:
        free(koff)
        free(krow)
        free(out)
        free(canon)
