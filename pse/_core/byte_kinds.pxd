"""Kinds of bytes below trie nodes, and the kinds a DFA state loops over (byte_kinds.pyx)."""

from libc.stdint cimport int16_t, int32_t

from pse._core.structure cimport Tables
from pse._core.trie cimport TokenTrie

cdef enum:
    KIND_TEXT = 1 << 0        # printable ASCII but the kinds of its own below
    KIND_QUOTE = 1 << 1       # "
    KIND_BACKSLASH = 1 << 2
    KIND_STAR = 1 << 3
    KIND_SLASH = 1 << 4
    KIND_APOSTROPHE = 1 << 5
    KIND_CONTROL = 1 << 6     # 0x00-0x1F, 0x7F
    KIND_UTF8 = 1 << 7        # well-formed UTF-8 past ASCII (a token may stop inside a character)
    KIND_OTHER = 1 << 8       # bytes that are not: no state loops on them
    # (names and numbers: a state inside one loops on some of these)
    KIND_LOWER = 1 << 9       # a-z
    KIND_UPPER = 1 << 10      # A-Z
    KIND_DIGIT = 1 << 11      # 0-9
    KIND_UNDERSCORE = 1 << 12
    KIND_SPACE = 1 << 13      # " "
    ASCII_KINDS = (KIND_TEXT | KIND_QUOTE | KIND_BACKSLASH | KIND_STAR | KIND_SLASH
                   | KIND_APOSTROPHE | KIND_CONTROL | KIND_LOWER | KIND_UPPER | KIND_DIGIT
                   | KIND_UNDERSCORE | KIND_SPACE)
    UTF8_STATES = 8


cdef object kinds_below(TokenTrie trie)
cdef int16_t find_loop_kinds(const Tables* t, int32_t d) noexcept nogil


cdef inline int32_t loop_kinds(const Tables* t, int16_t* cache, int32_t d) noexcept nogil:
    """The kinds of bytes DFA state d goes back to itself over (see find_loop_kinds), found
    once per state into `cache` (-1: not yet)."""
    if cache[d] < 0:
        cache[d] = find_loop_kinds(t, d)
    return cache[d]
