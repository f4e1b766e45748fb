# cython: boundscheck=False, wraparound=False, cdivision=True
"""Kinds of bytes, for taking a trie subtree's tokens at once (slices.pyx walk_terminal,
mask.pyx walk_subtree).

Below a node of the vocabulary trie, the kinds of bytes its tokens hold; a terminal state
that goes back to itself over every byte of those kinds holds every token below (where it
may also end, what could follow adds no token: each is within already). Strings and
comments are most of the trie, and most of it is made of a few kinds: text, quotes,
backslashes, stars, slashes, apostrophes, control bytes, and well-formed UTF-8 past ASCII
(read with a UTF-8 reader of its own, since a token may stop inside a character or hold
stray bytes); the rest of a name or a number is letters, digits and underscores."""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t

import numpy as np
cimport numpy as cnp

from pse._core.structure cimport Tables
from pse._core.trie cimport Trie, TokenTrie

cnp.import_array()


cdef inline int32_t ascii_kind(int b) noexcept nogil:
    if b < 0x20 or b == 0x7F:
        return KIND_CONTROL
    if b == 34:
        return KIND_QUOTE
    if b == 92:
        return KIND_BACKSLASH
    if b == 42:
        return KIND_STAR
    if b == 47:
        return KIND_SLASH
    if b == 39:
        return KIND_APOSTROPHE
    if 97 <= b <= 122:
        return KIND_LOWER
    if 65 <= b <= 90:
        return KIND_UPPER
    if 48 <= b <= 57:
        return KIND_DIGIT
    if b == 95:
        return KIND_UNDERSCORE
    if b == 32:
        return KIND_SPACE
    return KIND_TEXT


cdef inline int32_t utf8_next(int32_t u, int b) noexcept nogil:
    """A UTF-8 reader's state after byte b (-1: not well-formed; Unicode's table 3-7). States:
    0 between characters, 1-3 that many continuation bytes due, 4 after E0 (A0-BF next), 5
    after ED (80-9F next), 6 after F0 (90-BF next), 7 after F4 (80-8F next)."""
    if u == 0:
        if b < 0x80:
            return 0
        if 0xC2 <= b <= 0xDF:
            return 1
        if b == 0xE0:
            return 4
        if b == 0xED:
            return 5
        if 0xE1 <= b <= 0xEF:
            return 2
        if b == 0xF0:
            return 6
        if b == 0xF4:
            return 7
        if 0xF1 <= b <= 0xF3:
            return 3
        return -1
    if u <= 3:
        return u - 1 if 0x80 <= b <= 0xBF else -1
    if u == 4:
        return 1 if 0xA0 <= b <= 0xBF else -1
    if u == 5:
        return 1 if 0x80 <= b <= 0x9F else -1
    if u == 6:
        return 2 if 0x90 <= b <= 0xBF else -1
    return 2 if 0x80 <= b <= 0x8F else -1


cdef inline uint8_t reader_states_ok(int b, uint8_t below) noexcept nogil:
    """The UTF-8 reader states from which byte b, then any path of a node whose paths are
    well-formed from the states `below`, is well-formed (utf8_next, folded per kind of byte)."""
    cdef uint8_t ok
    if b < 0x80:
        return below & 1
    if 0xC2 <= b <= 0xF4:  # a lead byte: read between characters only
        return (below >> utf8_next(0, b)) & 1
    if b > 0xBF:  # C0, C1, F5-FF: never
        return 0
    # a continuation byte: state u reads it into state v, ok when v is in `below`
    ok = (below & 0b111) << 1  # 1 -> 0, 2 -> 1, 3 -> 2
    if b >= 0xA0:
        ok |= (below & 0b10) << 3   # 4 -> 1
    else:
        ok |= (below & 0b10) << 4   # 5 -> 1
    if b >= 0x90:
        ok |= (below & 0b100) << 4  # 6 -> 2
    else:
        ok |= (below & 0b100) << 5  # 7 -> 2
    return ok


def _reader_states_ok(int b, int below) -> int:
    """reader_states_ok, for tests (against utf8_next state by state)."""
    return reader_states_ok(b, below)


def _utf8_next(int u, int b) -> int:
    """utf8_next, for tests (against Python's UTF-8 decoder)."""
    return utf8_next(u, b)


cdef object kinds_below(TokenTrie trie):
    """Per node of the trie, the kinds of the bytes below it (made once per trie): one pass
    from the leaves up, with per node the UTF-8 reader states from which every path below
    is well-formed."""
    cdef const Trie* tr = &trie.t
    cdef int32_t i, parent, n = max(tr.n_nodes, 1)
    cdef uint8_t b
    if trie.kinds_below is None:
        kinds = np.zeros(n, dtype=np.uint16)
        well_formed = np.full(n, (1 << UTF8_STATES) - 1, dtype=np.uint8)
        out = <uint16_t*>cnp.PyArray_DATA(kinds)
        ok = <uint8_t*>cnp.PyArray_DATA(well_formed)
        for i in range(tr.n_nodes - 1, 0, -1):  # children before parents
            b = tr.node_byte[i]
            parent = tr.node_parent[i]
            out[parent] |= out[i] | (ascii_kind(b) if b < 0x80 else KIND_UTF8)
            ok[parent] &= reader_states_ok(b, ok[i])
        for i in range(tr.n_nodes):
            if not ok[i] & 1:
                out[i] |= KIND_OTHER
        trie.kinds_below = kinds
    return trie.kinds_below


cdef int16_t find_loop_kinds(const Tables* t, int32_t d) noexcept nogil:
    """The ASCII kinds whose every byte takes d back to d, and KIND_UTF8 when every
    well-formed character past ASCII does, through states that are live and cannot end (a
    search over pairs (DFA state, UTF-8 reader state); given up past 64 pairs)."""
    cdef int32_t kinds = ASCII_KINDS
    cdef int32_t seen_d[64]
    cdef int8_t seen_u[64]
    cdef int32_t n_seen = 1, k, j, x, u, v, e, b
    for b in range(0x80):
        if t.dfa_trans[<int64_t>d * t.n_classes + t.byte_class[b]] != d:
            kinds &= ~ascii_kind(b)
    seen_d[0], seen_u[0] = d, 0
    k = 0
    while k < n_seen:
        x, u = seen_d[k], seen_u[k]
        k += 1
        for b in range(0x80, 0x100):
            v = utf8_next(u, b)
            if v < 0:
                continue
            e = t.dfa_trans[<int64_t>x * t.n_classes + t.byte_class[b]]
            if e < 0 or (v == 0 and e != d) or (v != 0 and t.dfa_accept[e]):
                return kinds
            if v == 0:
                continue
            for j in range(n_seen):
                if seen_d[j] == e and seen_u[j] == v:
                    break
            else:
                if n_seen == 64:
                    return kinds
                seen_d[n_seen], seen_u[n_seen] = e, v
                n_seen += 1
    return kinds | KIND_UTF8


def prepare_kinds_below(TokenTrie trie) -> None:
    """Make the trie's kinds_below now (every mask walk needs them) rather than at the first
    walk."""
    kinds_below(trie)
