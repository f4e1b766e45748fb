# cython: boundscheck=False, wraparound=False, cdivision=True
"""The keys an object allows besides the ones it lists, in C: the product of a key automaton
with the spelling trie of the listed names (`names_product`, for
`json_spelling.without_names_states`), minimized as it is made, children before parents: each
pair's row is the key state's row with the trie's bytes punched out (`_punch`), hashed and
compared as C arrays against the states made so far (`_Rows`), and a row tuple is made only
for a new state, sharing the key automaton's unchanged range tuples. Also the trie of ASCII
names (`trie_add`).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.bytes cimport PyBytes_FromStringAndSize


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)


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
