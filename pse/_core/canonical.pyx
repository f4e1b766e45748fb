# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Canonical JSON text: the form by which unique arrays compare items.

JSON-equal values get equal bytes: no whitespace, strings with their escapes decoded, numbers
as significant digits and a power of ten, object members sorted by key. Canonical texts are
only ever compared, never parsed, so they need not be JSON.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp, memcpy


ctypedef struct Canon:
    const uint8_t* s
    int64_t i
    int64_t n
    uint8_t* out
    int64_t o
    int64_t cap
    int depth

cdef enum:
    MAX_CANON_DEPTH = 200     # nesting deeper than this has no canonical form


# exponents beyond this have no canonical form (their items are refused)
cdef int64_t MAX_EXPONENT = 1000000000000000


cdef inline int put(Canon* k, uint8_t b) noexcept nogil:
    if k.o >= k.cap:
        return -1
    k.out[k.o] = b
    k.o += 1
    return 0


cdef inline void skip_ws(Canon* k) noexcept nogil:
    while k.i < k.n and (k.s[k.i] == 32 or k.s[k.i] == 9 or k.s[k.i] == 10 or k.s[k.i] == 13):
        k.i += 1


cdef int put_code_point(Canon* k, uint32_t cp) noexcept nogil:
    """UTF-8 of cp (a lone surrogate too: no valid text holds those bytes, so it stays apart),
    with the quote and the backslash escaped so that a string's end stays unambiguous."""
    if cp == 34 or cp == 92:
        return -1 if put(k, 92) < 0 else put(k, <uint8_t>cp)
    if cp < 0x80:
        return put(k, <uint8_t>cp)
    if cp < 0x800:
        if put(k, <uint8_t>(0xC0 | (cp >> 6))) < 0:
            return -1
    elif cp < 0x10000:
        if (put(k, <uint8_t>(0xE0 | (cp >> 12))) < 0
                or put(k, <uint8_t>(0x80 | ((cp >> 6) & 0x3F))) < 0):
            return -1
    else:
        if (put(k, <uint8_t>(0xF0 | (cp >> 18))) < 0
                or put(k, <uint8_t>(0x80 | ((cp >> 12) & 0x3F))) < 0
                or put(k, <uint8_t>(0x80 | ((cp >> 6) & 0x3F))) < 0):
            return -1
    return put(k, <uint8_t>(0x80 | (cp & 0x3F)))


cdef int hex4(Canon* k, uint32_t* cp) noexcept nogil:
    cdef int j
    cdef uint8_t h
    cp[0] = 0
    if k.i + 4 > k.n:
        return -1
    for j in range(4):
        h = k.s[k.i + j]
        if 48 <= h <= 57:
            cp[0] = cp[0] * 16 + (h - 48)
        elif 97 <= h <= 102:
            cp[0] = cp[0] * 16 + (h - 87)
        elif 65 <= h <= 70:
            cp[0] = cp[0] * 16 + (h - 55)
        else:
            return -1
    k.i += 4
    return 0


cdef int escape_code_point(Canon* k, uint32_t* cp, bint cut) noexcept nogil:
    """The code point of the escape whose backslash k.i has just passed (a surrogate pair as
    one), k.i moved past it: -1 when the text ends within it (or is no escape), and with
    `cut` (a text cut short) where a high surrogate's low half may still follow."""
    cdef uint8_t e
    cdef uint32_t lo
    cdef int64_t back
    if k.i >= k.n:
        return -1
    e = k.s[k.i]
    k.i += 1
    if e == 117:  # u
        if hex4(k, cp) < 0:
            return -1
        if 0xD800 <= cp[0] < 0xDC00:
            if cut and k.i + 6 > k.n:
                return -1
            if k.i + 6 <= k.n and k.s[k.i] == 92 and k.s[k.i + 1] == 117:
                back = k.i
                k.i += 2
                if hex4(k, &lo) == 0 and 0xDC00 <= lo < 0xE000:
                    cp[0] = 0x10000 + ((cp[0] - 0xD800) << 10) + (lo - 0xDC00)
                else:
                    k.i = back
    elif e == 98:
        cp[0] = 8
    elif e == 102:
        cp[0] = 12
    elif e == 110:
        cp[0] = 10
    elif e == 114:
        cp[0] = 13
    elif e == 116:
        cp[0] = 9
    else:  # " \ /
        cp[0] = e
    return 0


cdef int canon_string(Canon* k) noexcept nogil:
    cdef uint8_t b
    cdef uint32_t cp
    k.i += 1
    if put(k, 34) < 0:
        return -1
    while k.i < k.n:
        b = k.s[k.i]
        k.i += 1
        if b == 34:
            return put(k, 34)
        if b != 92:
            if put(k, b) < 0:
                return -1
            continue
        if escape_code_point(k, &cp, False) < 0 or put_code_point(k, cp) < 0:
            return -1
    return -1


cdef int put_int(Canon* k, int64_t v) noexcept nogil:
    cdef uint8_t digits[24]
    cdef int n = 0
    if v < 0:
        if put(k, 45) < 0:
            return -1
        v = -v
    while True:
        digits[n] = <uint8_t>(48 + v % 10)
        n += 1
        v //= 10
        if v == 0:
            break
    while n > 0:
        n -= 1
        if put(k, digits[n]) < 0:
            return -1
    return 0


cdef int canon_number(Canon* k) noexcept nogil:
    """Significant digits and a power of ten: 1, 1.0 and 10e-1 are all "1"."""
    cdef bint neg = False, eneg = False
    cdef int64_t int_at, int_n, frac_at = 0, frac_n = 0, e = 0, j, first, last, total
    cdef uint8_t d
    if k.s[k.i] == 45:
        neg = True
        k.i += 1
    int_at = k.i
    while k.i < k.n and 48 <= k.s[k.i] <= 57:
        k.i += 1
    int_n = k.i - int_at
    if k.i < k.n and k.s[k.i] == 46:
        k.i += 1
        frac_at = k.i
        while k.i < k.n and 48 <= k.s[k.i] <= 57:
            k.i += 1
        frac_n = k.i - frac_at
    if k.i < k.n and (k.s[k.i] == 101 or k.s[k.i] == 69):
        k.i += 1
        if k.i < k.n and (k.s[k.i] == 43 or k.s[k.i] == 45):
            eneg = k.s[k.i] == 45
            k.i += 1
        while k.i < k.n and 48 <= k.s[k.i] <= 57:
            e = e * 10 + (k.s[k.i] - 48)
            if e > MAX_EXPONENT:  # no canonical form: such an item is refused
                return -1
            k.i += 1
        if eneg:
            e = -e
    if int_n == 0:
        return -1
    total = int_n + frac_n
    first = -1
    last = -1
    for j in range(total):
        d = k.s[int_at + j] if j < int_n else k.s[frac_at + j - int_n]
        if d != 48:
            if first < 0:
                first = j
            last = j
    if first < 0:
        return put(k, 48)
    # value = digits[first..last] * 10^(e - frac_n + trailing zeros)
    e = e - frac_n + (total - 1 - last)
    if neg and put(k, 45) < 0:
        return -1
    for j in range(first, last + 1):
        if put(k, k.s[int_at + j] if j < int_n else k.s[frac_at + j - int_n]) < 0:
            return -1
    if e != 0:
        if put(k, 101) < 0 or put_int(k, e) < 0:
            return -1
    return 0


cdef int canon_object(Canon* k) noexcept nogil:
    cdef int64_t* spans = NULL         # per member: start, end of its key, end
    cdef int64_t* grown
    cdef int32_t n = 0, cap = 0, a, b, j
    cdef int64_t base, x, y, lx, ly
    cdef uint8_t* copy
    cdef int r = -1
    k.i += 1
    if put(k, 123) < 0:
        return -1
    base = k.o
    skip_ws(k)
    if k.i < k.n and k.s[k.i] == 125:
        k.i += 1
        return put(k, 125)
    while True:
        skip_ws(k)
        if k.i >= k.n or k.s[k.i] != 34:
            break
        if n == cap:
            cap = 2 * cap + 4
            grown = <int64_t*>realloc(spans, 3 * cap * sizeof(int64_t))
            if grown == NULL:
                break
            spans = grown
        spans[3 * n] = k.o
        if canon_string(k) < 0:
            break
        spans[3 * n + 1] = k.o
        skip_ws(k)
        if k.i >= k.n or k.s[k.i] != 58:
            break
        k.i += 1
        if put(k, 58) < 0 or canon_value(k) < 0:
            break
        spans[3 * n + 2] = k.o
        n += 1
        skip_ws(k)
        if k.i < k.n and k.s[k.i] == 44:
            k.i += 1
            continue
        if k.i < k.n and k.s[k.i] == 125:
            k.i += 1
            r = 0
        break
    if r == 0 and n > 1:
        # members sorted by key (insertion sort: objects have few), rewritten with commas
        for a in range(1, n):
            j = a
            while j > 0:
                x = spans[3 * (j - 1)]
                y = spans[3 * j]
                lx = spans[3 * (j - 1) + 1] - x
                ly = spans[3 * j + 1] - y
                if key_order(k.out + x, lx, k.out + y, ly) <= 0:
                    break
                for b in range(3):
                    x = spans[3 * j + b]
                    spans[3 * j + b] = spans[3 * (j - 1) + b]
                    spans[3 * (j - 1) + b] = x
                j -= 1
        copy = <uint8_t*>malloc(k.o - base + 1)
        if copy == NULL:
            r = -1
        else:
            memcpy(copy, k.out + base, k.o - base)
            x = base
            k.o = base
            for a in range(n):
                # of members with one key, the last counts (as json.loads reads them); the
                # sort is stable, so it is the last of its run
                if a + 1 < n and key_order(copy + spans[3 * a] - x,
                                           spans[3 * a + 1] - spans[3 * a],
                                           copy + spans[3 * (a + 1)] - x,
                                           spans[3 * (a + 1) + 1] - spans[3 * (a + 1)]) == 0:
                    continue
                if k.o > base and put(k, 44) < 0:
                    r = -1
                    break
                lx = spans[3 * a + 2] - spans[3 * a]
                if k.o + lx > k.cap:
                    r = -1
                    break
                memcpy(k.out + k.o, copy + spans[3 * a] - x, lx)
                k.o += lx
            free(copy)
    free(spans)
    if r < 0:
        return -1
    return put(k, 125)


cdef inline int key_order(const uint8_t* x, int64_t lx, const uint8_t* y, int64_t ly
                          ) noexcept nogil:
    cdef int c = memcmp(x, y, lx if lx < ly else ly)
    if c != 0:
        return c
    return (lx > ly) - (lx < ly)


cdef int canon_array(Canon* k) noexcept nogil:
    k.i += 1
    if put(k, 91) < 0:
        return -1
    skip_ws(k)
    if k.i < k.n and k.s[k.i] == 93:
        k.i += 1
        return put(k, 93)
    while True:
        if canon_value(k) < 0:
            return -1
        skip_ws(k)
        if k.i < k.n and k.s[k.i] == 44:
            k.i += 1
            if put(k, 44) < 0:
                return -1
            continue
        if k.i < k.n and k.s[k.i] == 93:
            k.i += 1
            return put(k, 93)
        return -1


cdef int canon_value(Canon* k) noexcept nogil:
    cdef uint8_t b
    cdef int r
    skip_ws(k)
    if k.i >= k.n or k.depth > MAX_CANON_DEPTH:
        return -1
    b = k.s[k.i]
    k.depth += 1
    if b == 34:
        r = canon_string(k)
    elif b == 123:
        r = canon_object(k)
    elif b == 91:
        r = canon_array(k)
    elif b == 45 or 48 <= b <= 57:
        r = canon_number(k)
    else:  # true, false, null
        r = 0
        while k.i < k.n and 97 <= k.s[k.i] <= 122:
            if put(k, k.s[k.i]) < 0:
                r = -1
                break
            k.i += 1
    k.depth -= 1
    return r


cdef int64_t canonical(const uint8_t* text, int64_t n, uint8_t* out, int64_t cap
                       ) noexcept nogil:
    """The canonical form of the JSON value `text` (whitespace around it allowed) into out;
    its length, 0 for whitespace only, -1 when it is not one JSON value or out is too small."""
    cdef Canon k
    k.s = text
    k.i = 0
    k.n = n
    k.out = out
    k.o = 0
    k.cap = cap
    k.depth = 0
    skip_ws(&k)
    if k.i == k.n:
        return 0
    if canon_value(&k) < 0:
        return -1
    skip_ws(&k)
    return k.o if k.i == k.n else -1


def canonical_text(bytes text) -> bytes:
    """The canonical form by which unique arrays compare items (for tests); None when `text`
    is not one JSON value."""
    cdef int64_t cap = 4 * len(text) + 64
    cdef bytearray out = bytearray(cap)
    cdef int64_t n = canonical(text, len(text), out, cap)
    return None if n < 0 else bytes(out[:n])


cdef int64_t string_prefix(const uint8_t* s, int64_t n, uint8_t* out, int64_t cap
                           ) noexcept nogil:
    """The canonical form (see canon_string) of the characters complete in s[:n], the start
    of a string (s[0] is its quote): an escape cut short, or a high surrogate whose low half
    may follow, is left out. -1 if `out` is too small."""
    cdef Canon k
    cdef uint32_t cp
    k.s = s
    k.n = n
    k.i = 1
    k.out = out
    k.o = 0
    k.cap = cap
    if put(&k, 34) < 0:  # (the quote)
        return -1
    while k.i < n:
        k.i += 1
        if s[k.i - 1] != 92:
            if put(&k, s[k.i - 1]) < 0:
                return -1
        elif escape_code_point(&k, &cp, True) < 0:
            break
        elif put_code_point(&k, cp) < 0:
            return -1
    return k.o
