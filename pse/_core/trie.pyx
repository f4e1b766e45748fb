# cython: boundscheck=False, wraparound=False
"""The flat vocabulary trie (depth-first node arrays) built from token byte strings."""

from libc.stdint cimport int32_t

import numpy as np
cimport numpy as cnp

cnp.import_array()


cdef class TokenTrie:
    """A trie over token byte strings, flattened in depth-first order for the mask walk.

    Args:
        tokens: (bytes, id) pairs; empty byte strings are left out.
    """

    def __init__(self, tokens):
        items = sorted((b, i) for b, i in tokens if b)
        cdef Py_ssize_t total = sum(len(b) for b, _ in items) + 1
        cdef cnp.ndarray[cnp.uint8_t] node_byte = np.zeros(total, dtype=np.uint8)
        cdef cnp.ndarray[cnp.uint16_t] node_depth = np.zeros(total, dtype=np.uint16)
        cdef cnp.ndarray[cnp.int32_t] node_end = np.zeros(total, dtype=np.int32)
        cdef cnp.ndarray[cnp.int32_t] node_parent = np.zeros(total, dtype=np.int32)
        cdef cnp.ndarray[cnp.int32_t] tok_node = np.full(
            max([i for _, i in items], default=0) + 1, -1, dtype=np.int32)
        cdef cnp.ndarray[cnp.int32_t] node_tok_off = np.zeros(total + 1, dtype=np.int32)
        cdef cnp.ndarray[cnp.int32_t] tok_ids = np.zeros(max(len(items), 1), dtype=np.int32)
        cdef list path = []            # node index at each depth of the current prefix
        cdef bytes prev = b""
        cdef bytes tok
        cdef const unsigned char* p
        cdef const unsigned char* q
        cdef Py_ssize_t n_nodes = 1, n_ids = 0, common, d, limit, max_depth = 0
        for tok, tid in items:
            if len(tok) > 65535:
                raise ValueError("a token longer than 65535 bytes")
            p = tok
            q = prev
            limit = min(len(tok), len(prev))
            common = 0
            while common < limit and p[common] == q[common]:
                common += 1
            while len(path) > common:
                node_end[path.pop()] = n_nodes
            for d in range(common, len(tok)):
                node_byte[n_nodes] = p[d]
                node_depth[n_nodes] = d + 1
                node_parent[n_nodes] = path[len(path) - 1] if path else 0
                node_tok_off[n_nodes] = n_ids
                path.append(n_nodes)
                n_nodes += 1
            tok_ids[n_ids] = tid
            tok_node[tid] = path[len(path) - 1]  # (wraparound is off)
            n_ids += 1
            node_tok_off[n_nodes] = n_ids
            max_depth = max(max_depth, len(tok))
            prev = tok
        while path:
            node_end[path.pop()] = n_nodes
        node_end[0] = n_nodes
        node_tok_off[n_nodes] = n_ids
        self._buffers = (node_byte[:n_nodes].copy(), node_depth[:n_nodes].copy(),
                         node_end[:n_nodes].copy(), node_tok_off[:n_nodes + 1].copy(),
                         tok_ids[:max(n_ids, 1)].copy(), node_parent[:n_nodes].copy(),
                         tok_node)
        self.t.n_nodes = n_nodes
        self.t.max_depth = max_depth
        self.t.node_byte = <cnp.uint8_t*>cnp.PyArray_DATA(self._buffers[0])
        self.t.node_depth = <cnp.uint16_t*>cnp.PyArray_DATA(self._buffers[1])
        self.t.node_end = <int32_t*>cnp.PyArray_DATA(self._buffers[2])
        self.t.node_tok_off = <int32_t*>cnp.PyArray_DATA(self._buffers[3])
        self.t.tok_ids = <int32_t*>cnp.PyArray_DATA(self._buffers[4])
        self.t.node_parent = <int32_t*>cnp.PyArray_DATA(self._buffers[5])
        self.t.tok_node = <int32_t*>cnp.PyArray_DATA(self._buffers[6])

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

    def arrays(self) -> dict:
        """The node arrays (read-only views), for tests and tools."""
        names = ("node_byte", "node_depth", "node_end", "node_tok_off", "tok_ids", "node_parent",
                 "tok_node")
        out = {}
        for name, arr in zip(names, self._buffers):
            view = arr.view()
            view.flags.writeable = False
            out[name] = view
        return out
