# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Fast-forward: the forced path of the live parser states, and the spanning-token check."""

from libc.stdint cimport int32_t, uint8_t, uint32_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset

import weakref

import numpy as np
cimport numpy as cnp

from pse._core.mask cimport Matcher, Walker, walk_subtree
from pse._core.structure cimport (
    CompiledStructure, Ctx, PState, StampedIds, StateSet, Tables, dfa_next, exit_bytes_from,
    is_accepting, popped_set, seen_reset, special_next, special_terms, stateset_append,
    stateset_free, stateset_init, step_bytes, step_set, term_accepting, term_full,
)
from pse._core.trie cimport trie_find
from pse._core.structure import WideWalk

cnp.import_array()

# Per compiled structure: for each DFA state, the bytes with an edge (8 words), so that the
# forced path does not probe 256 bytes per state and byte.
_DFA_OUT = weakref.WeakKeyDictionary()


cdef cnp.ndarray dfa_out_table(CompiledStructure structure):
    cdef cnp.ndarray arr = _DFA_OUT.get(structure)
    cdef const Tables* t = &structure.t
    cdef uint32_t* out
    cdef int32_t d, b
    if arr is None:
        arr = np.zeros((max(t.n_dfa_states, 1), 8), dtype=np.uint32)
        out = <uint32_t*>cnp.PyArray_DATA(arr)
        with nogil:
            for d in range(t.n_dfa_states):
                for b in range(256):
                    if dfa_next(t, d, <unsigned char>b) >= 0:
                        out[8 * d + (b >> 5)] |= (<uint32_t>1) << (b & 31)
        _DFA_OUT[structure] = arr
    return arr


cdef void state_next_bytes(Ctx* c, const uint32_t* dfa_out, const PState* s, uint32_t* out8,
                           StampedIds* popped) noexcept nogil:
    """structure.next_bytes, with the terminal's bytes read from the DFA-out table, through
    the union members not in `popped` (those gave their bytes to another state's already)."""
    cdef const Tables* t = c.t
    memset(out8, 0, 8 * sizeof(uint32_t))
    if s.term >= 0:
        # a counted terminal at its maximum count takes no more units (of a TERM_CHARS
        # terminal's state the DFA's bytes are a superset of those it takes: never fewer)
        if not term_full(t, s.term, s.dstate, s.count):
            memcpy(out8, &dfa_out[8 * s.dstate], 8 * sizeof(uint32_t))
        if not term_accepting(t, s.term, s.dstate, s.count):
            return
    exit_bytes_from(c, s, out8, popped)


cdef inline bint two_bytes_or_more(const uint32_t* words8) noexcept nogil:
    """Whether the 8 words of bits hold two bits or more."""
    cdef int k, seen = 0
    for k in range(8):
        if words8[k]:
            if seen or words8[k] & (words8[k] - 1):
                return True
            seen = 1
    return False


cdef Py_ssize_t forced_path(Ctx* c, const uint32_t* dfa_out, StateSet* cur, StateSet* spare,
                            unsigned char* out, Py_ssize_t max_len) except -1:
    """Write into `out` the bytes every state of `cur` must produce next and advance `cur`
    over them; stop where a state accepts (the sequence could end there) or may take a
    special token, where more than one byte can come, or after `max_len` bytes. Returns how
    many bytes were written. With unique arrays, `out` is c.text at c.pos."""
    cdef Py_ssize_t n = 0
    cdef int32_t i, k, b, only
    cdef uint32_t words[8]
    cdef uint32_t union8[8]
    cdef StateSet swap
    cdef StampedIds* popped
    while n < max_len and cur.n > 0:
        for k in range(8):
            union8[k] = 0
        popped = popped_set(c)  # (the states share their stacks' unions: popped once)
        for i in range(cur.n):
            # (a special token may come instead: no text byte is forced then)
            if is_accepting(c, &cur.items[i]) or special_next(c, &cur.items[i]):
                return n
            state_next_bytes(c, dfa_out, &cur.items[i], words, popped)
            for k in range(8):
                union8[k] |= words[k]
            if two_bytes_or_more(union8):  # (union8 only grows: no byte is forced, whatever
                return n                       # the states left)
        only = -1
        for b in range(256):
            if (union8[b >> 5] >> (b & 31)) & 1:
                only = b
                break
        if only < 0:
            return n
        out[n] = <unsigned char>only
        step_set(c, cur, <unsigned char>only, spare)
        if spare.n == 0:
            return n
        c.pos += 1
        swap = cur[0]
        cur[0] = spare[0]
        spare[0] = swap
        n += 1
    return n


def forced_bytes(Matcher matcher, Py_ssize_t max_bytes) -> bytes:
    """The longest byte string every live state of `matcher` must produce next.

    It stops where some state accepts (an end of sequence could come instead), where more than
    one byte can come, or after `max_bytes` bytes. The matcher is not changed.

    Args:
        matcher: the live states.
        max_bytes: the most bytes to return.

    Returns:
        The forced bytes; empty after an end of sequence was committed.

    Raises:
        ValueError: `max_bytes` is negative.
    """
    cdef Ctx c
    cdef StateSet cur, spare
    cdef int32_t i
    cdef Py_ssize_t n
    cdef bytearray out
    cdef unsigned char* at
    cdef cnp.ndarray dfa_out
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
    if matcher.finished or max_bytes == 0:
        return b""
    # the forced bytes go after the committed ones: unique arrays read them as they step
    out = bytearray(matcher.text) + bytearray(max_bytes)
    at = <unsigned char*>out + len(matcher.text)
    dfa_out = dfa_out_table(matcher.structure)
    matcher.structure.ctx(&c)
    c.text = <unsigned char*>out
    c.pos = len(matcher.text)
    stateset_init(&cur, matcher.live.n + 4)
    stateset_init(&spare, matcher.live.n + 4)
    try:
        for i in range(matcher.live.n):  # (a set: appended, not searched)
            stateset_append(&cur, &matcher.live.items[i])
        n = forced_path(&c, <const uint32_t*>cnp.PyArray_DATA(dfa_out), &cur, &spare, at,
                        max_bytes)
    finally:
        stateset_free(&cur)
        stateset_free(&spare)
    return bytes(at[:n])


def forced_special_terms(Matcher matcher) -> list:
    """The terminals of the special tokens the live states can take next, where nothing else
    can come: no state accepts (no end of sequence) and none takes a text byte. Empty
    otherwise. (Guards are not checked: the token may still be refused.)"""
    cdef Ctx c
    cdef StateSet scratch
    cdef int32_t i, k, t
    cdef uint32_t words[8]
    cdef uint8_t* flags
    cdef cnp.ndarray dfa_out
    cdef const uint32_t* out8
    cdef StampedIds* popped
    cdef int32_t n_terms = matcher.structure.t.n_terms
    if matcher.finished or not matcher.structure.t.has_special or matcher.live.n == 0:
        return []
    dfa_out = dfa_out_table(matcher.structure)
    out8 = <const uint32_t*>cnp.PyArray_DATA(dfa_out)
    text = matcher.text
    matcher.structure.ctx(&c)
    c.text = text
    c.pos = len(text)
    flags = <uint8_t*>calloc(max(n_terms, 1), 1)
    if flags == NULL:
        raise MemoryError()
    stateset_init(&scratch, 8)
    try:
        # (one set for all the states: a member an earlier state popped gave no byte, else
        # that state returned already)
        popped = popped_set(&c)
        for i in range(matcher.live.n):
            if is_accepting(&c, &matcher.live.items[i]):
                return []
            state_next_bytes(&c, out8, &matcher.live.items[i], words, popped)
            for k in range(8):
                if words[k]:
                    return []
            special_terms(&c, &matcher.live.items[i], &scratch, flags)
        return [t for t in range(n_terms) if flags[t]]
    finally:
        stateset_free(&scratch)
        free(flags)


cdef class Boundary:
    """The live states of a matcher after `data`, to ask whether a vocabulary token could
    cross the end of `data`: start inside it and run on past it, as the structure allows.

    Args:
        matcher: the live states before `data` (not changed).
        data: bytes every live state can consume (forced bytes, typically).

    Raises:
        ValueError: no live state consumes all of `data`.
    """

    def __cinit__(self):
        self.after.items = NULL
        self.after.slots = NULL

    def __init__(self, Matcher matcher, bytes data):
        cdef Ctx c
        cdef StateSet spare
        cdef int32_t i
        cdef const unsigned char* p = data
        self.matcher = matcher
        self.data = data
        text = matcher.text + data
        matcher.structure.ctx(&c)
        c.text = text
        c.pos = len(matcher.text)
        stateset_init(&self.after, matcher.live.n + 4)
        stateset_init(&spare, matcher.live.n + 4)
        try:
            if not matcher.finished:
                for i in range(matcher.live.n):  # (a set: appended, not searched)
                    stateset_append(&self.after, &matcher.live.items[i])
                step_bytes(&c, &self.after, &spare, p, len(data))
        finally:
            stateset_free(&spare)
        if matcher.finished or self.after.n == 0:
            raise ValueError(f"the structure does not allow {data[:40]!r} here")

    def __dealloc__(self):
        stateset_free(&self.after)

    def spanned_from(self, Py_ssize_t start) -> bool:
        """True when some vocabulary token starts with data[start:], is longer, and the
        structure allows data[:start] followed by that token.

        Raises:
            ValueError: `start` is not within 0 .. len(data).
            RuntimeError: the matcher is computing a mask in another thread.
        """
        cdef Matcher m = self.matcher
        cdef Py_ssize_t n = len(self.data)
        cdef const unsigned char* p = self.data
        cdef int node
        if start < 0 or start > n:
            raise ValueError(f"start {start} is outside 0 .. {n}")
        node = trie_find(m.w.trie, p + start, n - start)
        if node < 0:
            return False
        m.claim()  # (the walk buffers are the matcher's: a mask walk may hold them)
        try:
            m.w.scratch.n = 0
            seen_reset(&m.w.seen)
            if m.structure.t.has_unique:
                m.load_text(self.data)
                m.w.base += start  # the path below `node` continues data[start:]
            try:
                return walk_subtree(&m.w, &self.after, node, NULL, NULL) == 1
            except WideWalk:  # (again, merging: it cannot be raised twice)
                m.w.scratch.n = 0
                return walk_subtree(&m.w, &self.after, node, NULL, NULL) == 1
        finally:
            m.busy = False
