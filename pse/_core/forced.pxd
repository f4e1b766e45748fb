# Fast-forward: the bytes every live parser state must produce next, and whether a vocabulary
# token can span the end of such bytes (the check that keeps forced tokens canonical).

from libc.stdint cimport uint32_t

from pse._core.structure cimport Ctx, StateSet
from pse._core.mask cimport Walker


cdef Py_ssize_t forced_path(Ctx* c, const uint32_t* dfa_out, StateSet* cur, StateSet* spare,
                            unsigned char* out, Py_ssize_t max_len) except -1


cdef class Boundary:
    cdef StateSet after           # the live states once `data` is consumed
    cdef readonly bytes data
    cdef object matcher
