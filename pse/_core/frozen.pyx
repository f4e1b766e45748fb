# cython: boundscheck=False, wraparound=False
"""Objects the garbage collector need not track: transition rows frozen as tuples, automata
and the caches' entries made of them.

CPython stops tracking a tuple of plain values only when a collection first scans it, so a
compile's automata (a row per state, a (lo, hi, target) per range: a thousand tuples for a
median schema) are all scanned by the first collection after the compile. They cannot be part
of a reference cycle; untracked as they are made, no collection looks at them. It never stops
tracking other objects (an automaton) or tuples holding them (a cache's entries), which every
full collection then scans: thousands in a process that compiled many structures.
"""

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)
    int PyObject_GC_IsTracked(object op)
    int PyObject_IS_GC(object op)


cdef inline bint _untrack_if_plain(tuple t):
    """Untrack `t` if it holds only ints (bools too) and untracked tuples; whether it is
    untracked now."""
    cdef object x
    for x in t:
        if type(x) is int or type(x) is bool:
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
    if type(rows) is tuple and not PyObject_GC_IsTracked(rows):
        return rows  # frozen already (an automaton's rows, reused)
    cdef list out = []
    cdef tuple row
    cdef object r
    for r in rows:
        if type(r) is tuple and not PyObject_GC_IsTracked(r):
            out.append(r)  # a frozen row: its ranges are untracked already
            continue
        row = tuple(r)
        for x in row:
            if type(x) is tuple:
                _untrack_if_plain(<tuple>x)
        _untrack_if_plain(row)
        out.append(row)
    cdef tuple frozen = tuple(out)
    _untrack_if_plain(frozen)
    return frozen


# The rows of chain automata for the first CHAIN_SHARED bytes, made once per (position, byte)
# and shared by every chain: a compile's key names and literals are chains, each made and
# freed with its automaton (a tuple per byte and one per range, made and freed again for
# every schema), where a shared row costs a reference. At most CHAIN_SHARED * 256 rows.
cdef enum:
    CHAIN_SHARED = 48
cdef PyObject* _chain_rows[CHAIN_SHARED][256]


cdef tuple _chain_row(Py_ssize_t i, int b):
    """The frozen row ((b, b, i + 1),) (shared below CHAIN_SHARED)."""
    cdef tuple row, edge
    if i < CHAIN_SHARED and _chain_rows[i][b] != NULL:
        return <tuple>_chain_rows[i][b]
    edge = (b, b, i + 1)
    PyObject_GC_UnTrack(<PyObject *>edge)
    row = (edge,)
    PyObject_GC_UnTrack(<PyObject *>row)
    if i < CHAIN_SHARED:
        Py_INCREF(row)  # (the table's reference, for good)
        _chain_rows[i][b] = <PyObject *>row
    return row


def frozen_chain(bytes data) -> tuple:
    """The rows of the chain automaton of exactly `data` (state i reads byte i into state
    i + 1; the last state has no edge), frozen as `frozen_rows` freezes rows: made so at once
    (a JSON Schema's key names and values are such chains, a few hundred bytes per schema),
    the rows of its first bytes shared with other chains."""
    cdef Py_ssize_t i, n = len(data)
    cdef const unsigned char* p = data
    cdef tuple rows = PyTuple_New(n + 1)
    cdef tuple row
    for i in range(n):
        row = _chain_row(i, p[i])
        Py_INCREF(row)
        PyTuple_SET_ITEM(rows, i, row)
    row = ()
    Py_INCREF(row)
    PyTuple_SET_ITEM(rows, n, row)
    PyObject_GC_UnTrack(<PyObject *>rows)
    return rows


def frozen_flags(values) -> tuple:
    """`values` (ints or bools) as a tuple the garbage collector does not track."""
    cdef tuple t = tuple(values)
    _untrack_if_plain(t)
    return t


# the classes whose instances untrack_acyclic untracked: they stay untracked for good (an
# untracked object of another class may be tracked again: a dict given a container, a frame
# once it returns)
cdef set _settled_classes = set()


def untrack_acyclic(obj):
    """Stop the garbage collector tracking `obj`, which cannot be part of a reference cycle:
    everything it refers to (now and later) is untracked or cannot refer to other objects.
    Returns `obj`."""
    if PyObject_GC_IsTracked(obj):
        _settled_classes.add(type(obj))
        PyObject_GC_UnTrack(<PyObject *>obj)
    return obj


def untrack_if_settled(obj):
    """Stop the garbage collector tracking `obj` if it is a tuple of objects it does not track
    and never will (ints, strings, untracked tuples, what untrack_acyclic untracked): such a
    tuple cannot be part of a reference cycle. The collector does this itself for tuples of
    plain values, but not for tuples holding an object of a class of ours, tracked or not (a
    cache's entries). Any other object it may track keeps `obj` tracked."""
    if type(obj) is not tuple or not PyObject_GC_IsTracked(obj):
        return
    for x in <tuple>obj:
        if type(x) is tuple:
            untrack_if_settled(x)
        if PyObject_IS_GC(x) and (PyObject_GC_IsTracked(x) or (
                type(x) is not tuple and type(x) not in _settled_classes)):
            return
    PyObject_GC_UnTrack(<PyObject *>obj)
