# Canonical JSON text (see canonical.pyx): the C functions the unique-array steps call.

from libc.stdint cimport int64_t, uint8_t

cdef int64_t canonical(const uint8_t* text, int64_t n, uint8_t* out, int64_t cap) noexcept nogil
cdef int64_t string_prefix(const uint8_t* s, int64_t n, uint8_t* out, int64_t cap
                           ) noexcept nogil
