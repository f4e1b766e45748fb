# cython: boundscheck=False, wraparound=False
"""Transition rows frozen as tuples the garbage collector does not track.

CPython stops tracking a tuple of plain values only when a collection first scans it, so a
compile's automata (a row per state, a (lo, hi, target) per range: a thousand tuples for a
median schema) are all scanned by the first collection after the compile. They cannot be part
of a reference cycle; untracked as they are made, no collection looks at them.
"""

from cpython.object cimport PyObject


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)
    int PyObject_GC_IsTracked(object op)


cdef inline bint _untrack_if_plain(tuple t):
    """Untrack `t` if it holds only ints and untracked tuples; whether it is untracked now."""
    cdef object x
    for x in t:
        if type(x) is int:
            continue
        if type(x) is tuple and not PyObject_GC_IsTracked(x):
            continue
        return False
    if PyObject_GC_IsTracked(t):
        PyObject_GC_UnTrack(<PyObject *>t)
    return True


def frozen_rows(rows) -> tuple:
    """`rows` (an iterable of iterables of (lo, hi, target)) as a tuple of tuples, each
    range, row and the whole untracked where they hold only ints."""
    cdef list out = []
    cdef tuple row
    cdef object r
    for r in rows:
        row = tuple(r)
        for x in row:
            if type(x) is tuple:
                _untrack_if_plain(<tuple>x)
        _untrack_if_plain(row)
        out.append(row)
    cdef tuple frozen = tuple(out)
    _untrack_if_plain(frozen)
    return frozen
