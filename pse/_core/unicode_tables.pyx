# cython: boundscheck=False, wraparound=False
"""Scans of every code point through Python's own character tables, in C, once per process:
the cased characters (the simple lowercase mapping `re` folds case by under IGNORECASE,
`_sre.unicode_tolower`) and the code points of `re`'s Unicode \\d, \\s and \\w. In Python
these took 4 ms and, through numpy's string tests, 20 ms."""

from cpython.unicode cimport (
    Py_UNICODE_ISALNUM, Py_UNICODE_ISDECIMAL, Py_UNICODE_ISSPACE, Py_UNICODE_TOLOWER,
)

cdef enum:
    MAX_CODE_POINT = 0x10FFFF


def lowered(int end) -> list:
    """(code point, its simple lowercase) for each code point below `end` whose simple
    lowercase is another, in order."""
    cdef Py_UCS4 cp, low
    out = []
    for cp in range(<Py_UCS4>end):
        low = Py_UNICODE_TOLOWER(cp)
        if low != cp:
            out.append((<int>cp, <int>low))  # (a Py_UCS4 would become a str)
    return out


def category_ranges(str name) -> tuple:
    """The code point ranges, (first, last) in order, of `re`'s Unicode "digit" (\\d:
    str.isdecimal), "space" (\\s: str.isspace) or "word" (\\w: str.isalnum, or "_").

    Raises:
        ValueError: another name.
    """
    cdef int kind = {"digit": 0, "space": 1, "word": 2}.get(name, -1)
    cdef Py_UCS4 cp, start = 0
    cdef bint inside, was = False
    if kind < 0:
        raise ValueError(f"no category {name!r}: digit, space or word")
    out = []
    for cp in range(MAX_CODE_POINT + 1):
        if kind == 0:
            inside = Py_UNICODE_ISDECIMAL(cp)
        elif kind == 1:
            inside = Py_UNICODE_ISSPACE(cp)
        else:
            inside = Py_UNICODE_ISALNUM(cp) or cp == u"_"
        if inside and not was:
            start = cp
        elif was and not inside:
            out.append((<int>start, <int>cp - 1))
        was = inside
    if was:
        out.append((<int>start, MAX_CODE_POINT))
    return tuple(out)
