# The flat vocabulary trie the mask walk uses: nodes in depth-first order.
#
# Node 0 is the root (the empty prefix). Node i's subtree is [i, node_end[i]), so a byte that
# is refused at node i skips straight to node_end[i]. The tokens whose bytes end at node i are
# tok_ids[node_tok_off[i]:node_tok_off[i + 1]].

from libc.stdint cimport int32_t, uint8_t, uint16_t

ctypedef struct Trie:
    int32_t n_nodes
    uint8_t* node_byte        # the byte on the edge into the node
    uint16_t* node_depth      # the length of the node's prefix
    int32_t* node_end         # one past the node's subtree
    int32_t* node_parent      # the node one byte shorter (the root's: 0)
    int32_t* tok_node         # per token id: the node its bytes end at (-1: no such token)
    int32_t* node_tok_off     # n_nodes + 1
    int32_t* tok_ids
    int32_t max_depth
    int32_t root_child[256]   # per byte: the root's child on it (-1: none), to skip its scan


cdef class TokenTrie:
    cdef Trie t
    cdef object _buffers
    cdef public object shared_slices   # slice entries shared by every structure (slices.pyx)
    cdef public object kinds_below     # per node: the kinds of bytes below it (byte_kinds.pyx)

    cdef _build(self, list data, list ids)
    cdef _set(self, tuple buffers, Py_ssize_t max_depth)


cdef inline int32_t trie_child(const Trie* t, int32_t node, uint8_t b) noexcept nogil:
    """The child of `node` by byte b, or -1."""
    cdef int32_t i = node + 1, end = t.node_end[node]
    while i < end:
        if t.node_byte[i] == b:
            return i
        if t.node_byte[i] > b:    # children are in byte order
            return -1
        i = t.node_end[i]
    return -1


cdef inline int32_t trie_find(const Trie* t, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """The node whose prefix is p[:n], or -1 when no token starts with it."""
    cdef int32_t node
    cdef Py_ssize_t k
    if n == 0:
        return 0
    node = t.root_child[p[0]]
    for k in range(1, n):
        if node < 0:
            return -1
        node = trie_child(t, node, p[k])
    return node
