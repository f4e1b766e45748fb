# Sorting int32 ids in C with the comparisons inline: glibc's qsort calls a comparison per
# pair, which was 8% of a mask's instructions on a grammar whose rules call each other
# (structure's union_of: a union's members) and a third of the compile of the pattern
# `[a-zA-Z0-9_-]{162}` (automata: the members of each set of the subset construction).

from libc.stdint cimport int32_t


cdef inline void sort_descending(int32_t* a, Py_ssize_t n) noexcept nogil:
    """a[:n] sorted, largest first: a quicksort (median of three; the smaller part recursed
    into, the larger looped on: log n deep) down to runs of 16, which an insertion sort
    finishes."""
    cdef Py_ssize_t i, j, m
    cdef int32_t pivot, t, v
    while n > 16:
        m = n // 2
        if a[0] < a[m]:
            a[0], a[m] = a[m], a[0]
        if a[m] < a[n - 1]:
            a[m], a[n - 1] = a[n - 1], a[m]
            if a[0] < a[m]:
                a[0], a[m] = a[m], a[0]
        pivot = a[m]  # a[0] >= pivot >= a[n - 1]: the scans below stop inside
        i, j = 0, n - 1
        while True:
            i += 1
            while a[i] > pivot:
                i += 1
            j -= 1
            while a[j] < pivot:
                j -= 1
            if i >= j:
                break
            t = a[i]
            a[i] = a[j]
            a[j] = t
        # a[:j + 1] >= pivot >= a[j + 1:]
        if j + 1 < n - j - 1:
            sort_descending(a, j + 1)
            a += j + 1
            n -= j + 1
        else:
            sort_descending(a + j + 1, n - j - 1)
            n = j + 1
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] < v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
