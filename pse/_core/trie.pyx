# cython: boundscheck=False, wraparound=False
"""The flat vocabulary trie (depth-first node arrays) built from token byte strings, and the
prefix look-ups the vocabulary answers with it."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcmp, memcpy, memset

import numpy as np
cimport numpy as cnp

cnp.import_array()

# the node arrays, in the order of TokenTrie._buffers (and of a saved vocabulary's file)
ARRAY_NAMES = ("node_byte", "node_depth", "node_end", "node_tok_off", "tok_ids", "node_parent",
               "tok_node")
_DTYPES = (np.uint8, np.uint16, np.int32, np.int32, np.int32, np.int32, np.int32)


ctypedef struct Entry:
    const uint8_t* p
    int32_t n
    int32_t id


cdef int entry_cmp(const void* a, const void* b) noexcept nogil:
    """Byte order, a prefix before its extensions, then the lower id first."""
    cdef const Entry* x = <const Entry*>a
    cdef const Entry* y = <const Entry*>b
    cdef int32_t m = x.n if x.n < y.n else y.n
    cdef int c = memcmp(x.p, y.p, m)
    if c:
        return c
    if x.n != y.n:
        return -1 if x.n < y.n else 1
    return -1 if x.id < y.id else (1 if x.id > y.id else 0)


cdef void insertion_sort(Entry* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef Entry x
    for i in range(1, n):
        x = a[i]
        j = i
        while j > 0 and entry_cmp(&a[j - 1], &x) > 0:
            a[j] = a[j - 1]
            j -= 1
        a[j] = x


cdef void comparison_sort(Entry* a, Py_ssize_t n) noexcept nogil:
    if n < 32:
        insertion_sort(a, n)
    else:
        qsort(a, n, sizeof(Entry), entry_cmp)


cdef void radix_sort(Entry* a, Entry* tmp, Py_ssize_t n, int32_t d) noexcept nogil:
    """Sort entries whose first d bytes are equal into entry_cmp's order: by their byte at d
    (a token that ends there first), each bucket then from byte d + 1 (MSD radix sort: the
    work is about the bytes that tell tokens apart, not n log n comparisons)."""
    cdef Py_ssize_t count[257]
    cdef Py_ssize_t pos[257]
    cdef Py_ssize_t i, k, at
    if n < 32 or d >= 64:  # few entries, or long shared prefixes: the recursion stops
        comparison_sort(a, n)
        return
    memset(count, 0, sizeof(count))
    for i in range(n):
        count[a[i].p[d] + 1 if a[i].n > d else 0] += 1
    at = 0
    for k in range(257):
        pos[k] = at
        at += count[k]
    for i in range(n):
        k = a[i].p[d] + 1 if a[i].n > d else 0
        tmp[pos[k]] = a[i]
        pos[k] += 1
    memcpy(a, tmp, n * sizeof(Entry))
    comparison_sort(a, count[0])  # equal tokens (ending at d): by id
    at = count[0]
    for k in range(1, 257):
        if count[k] > 1:
            radix_sort(a + at, tmp, count[k], d + 1)
        at += count[k]


cdef Py_ssize_t fill_nodes(Entry* items, Entry* tmp, Py_ssize_t n_items, int32_t* path,
                           uint8_t* node_byte,
                           uint16_t* node_depth, int32_t* node_end, int32_t* node_parent,
                           int32_t* node_tok_off, int32_t* tok_ids, int32_t* tok_node
                           ) noexcept nogil:
    """Sort the entries and lay their trie out depth first; the number of nodes."""
    cdef Py_ssize_t n_nodes = 1, n_ids = 0, k, d, common, limit, depth = 0
    cdef const uint8_t* prev = NULL
    cdef int32_t prev_n = 0
    radix_sort(items, tmp, n_items, 0)
    for k in range(n_items):
        limit = items[k].n if items[k].n < prev_n else prev_n
        common = 0
        while common < limit and items[k].p[common] == prev[common]:
            common += 1
        while depth > common:  # close the nodes the new token leaves
            depth -= 1
            node_end[path[depth]] = n_nodes
        for d in range(common, items[k].n):
            node_byte[n_nodes] = items[k].p[d]
            node_depth[n_nodes] = d + 1
            node_parent[n_nodes] = path[depth - 1] if depth else 0
            node_tok_off[n_nodes] = n_ids
            path[depth] = n_nodes
            depth += 1
            n_nodes += 1
        tok_ids[n_ids] = items[k].id
        tok_node[items[k].id] = path[depth - 1]
        n_ids += 1
        node_tok_off[n_nodes] = n_ids
        prev = items[k].p
        prev_n = items[k].n
    while depth:
        depth -= 1
        node_end[path[depth]] = n_nodes
    node_end[0] = n_nodes
    node_tok_off[n_nodes] = n_ids
    return n_nodes


cdef class TokenTrie:
    """A trie over token byte strings, flattened in depth-first order for the mask walk.

    Args:
        tokens: (bytes, id) pairs; empty byte strings are left out.
    """

    def __init__(self, tokens=()):
        pairs = [(b, i) for b, i in tokens if b]
        self._build([b for b, _ in pairs], [i for _, i in pairs])

    @staticmethod
    def from_token_list(tuple tokens, skip=()):
        """The trie of `tokens[i]` (bytes or None) for every id i not in `skip` (ids no
        structure matches as text); None and empty tokens are left out."""
        cdef TokenTrie trie = TokenTrie.__new__(TokenTrie)
        skipped = skip if isinstance(skip, (set, frozenset)) else set(skip)
        cdef list data = []
        cdef list ids = []
        cdef Py_ssize_t i
        for i in range(len(tokens)):
            b = tokens[i]
            if b and i not in skipped:
                data.append(b)
                ids.append(i)
        trie._build(data, ids)
        return trie

    cdef _build(self, list data, list ids):
        cdef Py_ssize_t n_items = len(data), k, total = 1, max_len = 0, highest = 0
        cdef Entry* items = <Entry*>malloc(max(n_items, 1) * sizeof(Entry))
        cdef Entry* tmp = <Entry*>malloc(max(n_items, 1) * sizeof(Entry))
        cdef int32_t* path = NULL
        cdef bytes b
        cdef uint8_t* p_byte
        cdef uint16_t* p_depth
        cdef int32_t* p_end
        cdef int32_t* p_parent
        cdef int32_t* p_off
        cdef int32_t* p_ids
        cdef int32_t* p_node
        cdef Py_ssize_t n_nodes
        if items == NULL or tmp == NULL:
            free(items)
            free(tmp)
            raise MemoryError()
        try:
            for k in range(n_items):
                b = <bytes?>data[k]
                tid = ids[k]
                if PyBytes_GET_SIZE(b) > 65535:
                    raise ValueError("a token longer than 65535 bytes")
                if not 0 <= tid < 2 ** 31 - 1:
                    raise ValueError(f"token id {tid!r} out of range")
                items[k].p = <const uint8_t*>PyBytes_AS_STRING(b)
                items[k].n = <int32_t>PyBytes_GET_SIZE(b)
                items[k].id = <int32_t>tid
                total += items[k].n
                max_len = max(max_len, items[k].n)
                highest = max(highest, items[k].id)
            path = <int32_t*>malloc((max_len + 1) * sizeof(int32_t))
            if path == NULL:
                raise MemoryError()
            node_byte = np.zeros(total, dtype=np.uint8)
            node_depth = np.zeros(total, dtype=np.uint16)
            node_end = np.zeros(total, dtype=np.int32)
            node_parent = np.zeros(total, dtype=np.int32)
            node_tok_off = np.zeros(total + 1, dtype=np.int32)
            tok_ids = np.zeros(max(n_items, 1), dtype=np.int32)
            tok_node = np.full(highest + 1, -1, dtype=np.int32)
            p_byte = <uint8_t*>cnp.PyArray_DATA(node_byte)
            p_depth = <uint16_t*>cnp.PyArray_DATA(node_depth)
            p_end = <int32_t*>cnp.PyArray_DATA(node_end)
            p_parent = <int32_t*>cnp.PyArray_DATA(node_parent)
            p_off = <int32_t*>cnp.PyArray_DATA(node_tok_off)
            p_ids = <int32_t*>cnp.PyArray_DATA(tok_ids)
            p_node = <int32_t*>cnp.PyArray_DATA(tok_node)
            # `data` keeps the bytes alive while the sort and the layout run without the GIL
            with nogil:
                n_nodes = fill_nodes(items, tmp, n_items, path, p_byte, p_depth, p_end, p_parent,
                                     p_off, p_ids, p_node)
        finally:
            free(items)
            free(tmp)
            free(path)
        self._set((node_byte[:n_nodes].copy(), node_depth[:n_nodes].copy(),
                   node_end[:n_nodes].copy(), node_tok_off[:n_nodes + 1].copy(), tok_ids,
                   node_parent[:n_nodes].copy(), tok_node), max_len)

    cdef _set(self, tuple buffers, Py_ssize_t max_depth):
        cdef int32_t i = 1
        cdef int k
        self._buffers = buffers
        self.t.n_nodes = len(buffers[0])
        self.t.max_depth = max_depth
        self.t.node_byte = <cnp.uint8_t*>cnp.PyArray_DATA(buffers[0])
        self.t.node_depth = <cnp.uint16_t*>cnp.PyArray_DATA(buffers[1])
        self.t.node_end = <int32_t*>cnp.PyArray_DATA(buffers[2])
        self.t.node_tok_off = <int32_t*>cnp.PyArray_DATA(buffers[3])
        self.t.tok_ids = <int32_t*>cnp.PyArray_DATA(buffers[4])
        self.t.node_parent = <int32_t*>cnp.PyArray_DATA(buffers[5])
        self.t.tok_node = <int32_t*>cnp.PyArray_DATA(buffers[6])
        for k in range(256):
            self.t.root_child[k] = -1
        while i < self.t.n_nodes:  # the root's children (node_end[i] > i: checked if loaded)
            self.t.root_child[self.t.node_byte[i]] = i
            i = self.t.node_end[i]

    @staticmethod
    def from_arrays(arrays, Py_ssize_t n_ids):
        """The trie whose node arrays are `arrays` ({name: array}, as `arrays()` gives them:
        a saved vocabulary's), for ids below `n_ids`. The arrays are checked to be a trie
        every walk can index safely (a bad one raises ValueError); they are used as they
        are, not copied.

        Raises:
            ValueError: an array is missing, of the wrong type or size, or indexes out of
                bounds.
        """
        cdef TokenTrie trie = TokenTrie.__new__(TokenTrie)
        buffers = []
        for name, dtype in zip(ARRAY_NAMES, _DTYPES):
            arr = arrays.get(name)
            if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != 1 \
                    or not arr.flags.c_contiguous or not arr.flags.aligned:
                raise ValueError(f"trie array {name!r} is missing or not a 1-d aligned "
                                 f"{np.dtype(dtype).name} array")
            buffers.append(arr)
        max_depth = check_trie(buffers, n_ids)
        trie._set(tuple(buffers), max_depth)
        return trie

    @property
    def n_nodes(self) -> int:
        """Number of nodes, the root included."""
        return self.t.n_nodes

    @property
    def max_depth(self) -> int:
        """Length in bytes of the longest token."""
        return self.t.max_depth

    @property
    def nbytes(self) -> int:
        """Memory held by the node arrays, in bytes."""
        return sum(a.nbytes for a in self._buffers)

    def extends(self, bytes prefix) -> bool:
        """True when some token starts with `prefix` and is longer than it."""
        cdef int32_t node = trie_find(&self.t, prefix, len(prefix))
        return node >= 0 and self.t.node_end[node] > node + 1

    def lookup(self, bytes data) -> int:
        """The lowest id of the tokens whose bytes are exactly `data`; -1 when none."""
        cdef int32_t node = trie_find(&self.t, data, len(data)) if data else -1
        if node < 0 or self.t.node_tok_off[node] == self.t.node_tok_off[node + 1]:
            return -1
        return self.t.tok_ids[self.t.node_tok_off[node]]

    def longest_prefix(self, bytes data):
        """(length, lowest id) of the longest token that is a prefix of `data`; None when no
        token is."""
        cdef const Trie* t = &self.t
        cdef const uint8_t* p = data
        cdef Py_ssize_t k, n = len(data), best_len = 0
        cdef int32_t node = 0, best_id = -1
        for k in range(n):
            node = t.root_child[p[0]] if k == 0 else trie_child(t, node, p[k])
            if node < 0:
                break
            if t.node_tok_off[node] < t.node_tok_off[node + 1]:
                best_len = k + 1
                best_id = t.tok_ids[t.node_tok_off[node]]
        if best_id < 0:
            return None
        return best_len, best_id

    def ids_with_prefix(self, bytes prefix) -> list:
        """The lowest id of each distinct token that starts with `prefix`, in byte order."""
        cdef const Trie* t = &self.t
        cdef int32_t node = trie_find(t, prefix, len(prefix)), j
        cdef list out = []
        if node < 0:
            return out
        for j in range(node, t.node_end[node]):
            if t.node_tok_off[j] < t.node_tok_off[j + 1]:
                out.append(t.tok_ids[t.node_tok_off[j]])
        return out

    def arrays(self) -> dict:
        """The node arrays (read-only views), for tests and tools."""
        out = {}
        for name, arr in zip(ARRAY_NAMES, self._buffers):
            view = arr.view()
            view.flags.writeable = False
            out[name] = view
        return out


cdef Py_ssize_t check_trie(list buffers, Py_ssize_t n_ids) except -1:
    """The trie's max depth, after checking that its arrays index only within themselves
    (the walks trust them): parents before children, subtrees nested, depths one more than
    the parent's, token offsets rising, token ids below n_ids."""
    cdef cnp.ndarray a_byte = buffers[0], a_depth = buffers[1], a_end = buffers[2]
    cdef cnp.ndarray a_off = buffers[3], a_ids = buffers[4], a_parent = buffers[5]
    cdef cnp.ndarray a_node = buffers[6]
    cdef Py_ssize_t n = a_byte.shape[0], n_tok = a_ids.shape[0], n_tnode = a_node.shape[0]
    cdef const uint16_t* depth = <const uint16_t*>cnp.PyArray_DATA(a_depth)
    cdef const int32_t* end = <const int32_t*>cnp.PyArray_DATA(a_end)
    cdef const int32_t* off = <const int32_t*>cnp.PyArray_DATA(a_off)
    cdef const int32_t* ids = <const int32_t*>cnp.PyArray_DATA(a_ids)
    cdef const int32_t* parent = <const int32_t*>cnp.PyArray_DATA(a_parent)
    cdef const int32_t* tok_node = <const int32_t*>cnp.PyArray_DATA(a_node)
    cdef Py_ssize_t i, p, max_depth = 0, bad_node = -1, bad_token = -1
    if n < 1 or a_depth.shape[0] != n or a_end.shape[0] != n or a_parent.shape[0] != n \
            or a_off.shape[0] != n + 1 or n_tok < 1 or n >= 2 ** 31 - 1 or n_tnode > n_ids:
        raise ValueError("trie arrays of inconsistent sizes")
    with nogil:
        if end[0] != n or depth[0] != 0 or off[0] != 0 or off[n] > n_tok:
            bad_node = 0
        for i in range(n):
            if off[i] > off[i + 1]:
                bad_node = i
                break
            if i == 0:
                continue
            p = parent[i]
            if not (0 <= p < i and i < end[i] <= end[p] and depth[i] == depth[p] + 1):
                bad_node = i
                break
            if depth[i] > max_depth:
                max_depth = depth[i]
        if bad_node < 0:
            for i in range(off[n]):
                if not 0 <= ids[i] < n_tnode:
                    bad_token = i
                    break
            for i in range(n_tnode):
                if not -1 <= tok_node[i] < n:
                    bad_token = i
                    break
    if bad_node >= 0:
        raise ValueError(f"not a consistent trie (node {bad_node})")
    if bad_token >= 0:
        raise ValueError(f"not a consistent trie (token {bad_token})")
    return max_depth


def check_trie_tokens(TokenTrie trie, tuple tokens, special_ids) -> None:
    """Check that `trie` holds exactly `tokens` (bytes or None per id): every token but the
    special and empty ones ends at its node (the path from the root spells its bytes), every
    id a node lists is a token ending there, and each node's children come in byte order.
    (A saved vocabulary: the walks, healing and look-ups read these as they are.)

    Raises:
        ValueError: they differ.
    """
    cdef const Trie* t = &trie.t
    cdef Py_ssize_t n_ids = len(tokens), i, k, m, length
    cdef int32_t node, j
    cdef const uint8_t* p
    cdef bytes b
    cdef Py_ssize_t n_tnode = len(trie._buffers[6])  # (tok_node: ids past it have no node)
    for i in range(n_ids):
        b = tokens[i]
        node = t.tok_node[i] if i < n_tnode else -1
        if b is None or not b or i in special_ids:
            if node != -1:
                raise ValueError(f"not the trie of its tokens (id {i} should be in none)")
            continue
        length = len(b)
        p = b
        if node < 0 or t.node_depth[node] != length:
            raise ValueError(f"not the trie of its tokens (id {i})")
        j = node
        for k in range(length - 1, -1, -1):
            if t.node_byte[j] != p[k]:
                raise ValueError(f"not the trie of its tokens (id {i})")
            j = t.node_parent[j]
        if j != 0:
            raise ValueError(f"not the trie of its tokens (id {i})")
    for j in range(t.n_nodes):
        for m in range(t.node_tok_off[j], t.node_tok_off[j + 1]):
            if t.tok_node[t.tok_ids[m]] != j:
                raise ValueError(f"not the trie of its tokens (node {j})")
        if j and t.node_end[j] < t.node_end[t.node_parent[j]] \
                and t.node_byte[t.node_end[j]] <= t.node_byte[j]:
            raise ValueError(f"not the trie of its tokens (node {j}: children out of order)")


def tokens_from_blob(bytes blob, cnp.ndarray ends, cnp.ndarray present):
    """The tuple of token bytes (None where `present` is 0): token i is
    blob[ends[i - 1]:ends[i]] (ends: int64, non-decreasing, the last at most len(blob))."""
    cdef Py_ssize_t n = present.shape[0], i
    cdef const int64_t* e = <const int64_t*>cnp.PyArray_DATA(ends)
    cdef const uint8_t* ok = <const uint8_t*>cnp.PyArray_DATA(present)
    cdef const char* base = PyBytes_AS_STRING(blob)
    cdef int64_t start = 0, size = PyBytes_GET_SIZE(blob)
    if ends.dtype != np.int64 or present.dtype != np.uint8 or ends.shape[0] != n \
            or not ends.flags.c_contiguous or not present.flags.c_contiguous:
        raise ValueError("token offsets of the wrong type or size")
    out = [None] * n
    for i in range(n):
        if e[i] < start or e[i] > size:
            raise ValueError(f"token {i}'s offsets are out of bounds")
        if ok[i]:
            out[i] = PyBytes_FromStringAndSize(base + start, e[i] - start)
        start = e[i]
    return tuple(out)
