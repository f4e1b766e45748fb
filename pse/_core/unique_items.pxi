# Included by structure.pyx (one module: the byte step calls these without an indirect call).

# --- unique items -----------------------------------------------------------------------------
# An item's text is compared by its canonical form (pse._core.canonical), so that JSON-equal
# values are equal bytes.

cdef enum:
    MAX_FORCED_REST = 64      # a forced rest longer than this is not looked ahead
    MAX_NUMBER_SCAN = 64      # a zero with an exponent longer than this is not recognized


cdef int seen_init(SeenStore* s, int32_t max_chunks) except -1 nogil:
    s.n_chunks = 0
    s.slots = empty_slots(1024)
    s.mask = 1023
    s.max_chunks = max_chunks
    s.n = 0
    return 0


cdef void seen_reset(SeenStore* s) noexcept nogil:
    """Drop every node (the chunks stay, for the next ones)."""
    cdef int32_t i
    for i in range(s.n):
        free(store_node(s, i).data)
    if s.n:
        memset(s.slots, 0xFF, (s.mask + 1) * sizeof(int32_t))
    s.n = 0


cdef void seen_free(SeenStore* s) noexcept nogil:
    cdef int32_t i = 0
    if s.slots == NULL:  # never initialized
        return
    seen_reset(s)
    while i < s.n_chunks:
        free(s.chunks[i])
        i += 1
    free(s.slots)
    s.n_chunks = 0
    s.slots = NULL


cdef inline SeenNode* store_node(SeenStore* st, int32_t i) noexcept nogil:
    cdef int32_t k = chunk_of(i, SEEN_CHUNK_BITS)
    return &st.chunks[k][in_chunk(i, k, SEEN_CHUNK_BITS)]


cdef inline SeenNode* seen_node(Ctx* c, int32_t id) noexcept nogil:
    if id & SCRATCH_BIT:
        return store_node(c.seen_scratch, id & ~SCRATCH_BIT)
    return store_node(c.seen, id - 1)


cdef inline int64_t seen_slot(int32_t parent, uint64_t h, int64_t mask) noexcept nogil:
    return <int64_t>((h ^ (<uint64_t><uint32_t>parent * 0x9E3779B97F4A7C15u)) >> 7) & mask


cdef int seen_grow(SeenStore* st) except -1 nogil:
    cdef int64_t size = 2 * (st.mask + 1), p
    cdef int32_t* slots = empty_slots(size)
    cdef int32_t i
    cdef SeenNode* nd
    for i in range(st.n):
        nd = store_node(st, i)
        p = seen_slot(nd.parent, nd.hash, size - 1)
        while slots[p] >= 0:
            p = (p + 1) & (size - 1)
        slots[p] = i
    free(st.slots)
    st.slots = slots
    st.mask = size - 1
    return 0


cdef int32_t seen_add(Ctx* c, int32_t parent, const uint8_t* data, int32_t n, uint64_t h
                      ) except -2 nogil:
    """The seen set of `parent`'s items and this one, made once: parses that agree on the
    items get one id, so their states merge."""
    cdef SeenStore* st = c.seen_scratch if c.seen_scratch != NULL else c.seen
    cdef int32_t i, k
    cdef int64_t p = seen_slot(parent, h, st.mask)
    cdef SeenNode* nd
    while st.slots[p] >= 0:
        i = st.slots[p]
        nd = store_node(st, i)
        if (nd.parent == parent and nd.hash == h and nd.length == n
                and memcmp(nd.data, data, n) == 0):
            return (i | SCRATCH_BIT) if st == c.seen_scratch else i + 1
        p = (p + 1) & st.mask
    i = st.n
    k = chunk_of(i, SEEN_CHUNK_BITS)
    if k >= st.max_chunks:
        with gil:
            raise MemoryError("pse: the store of unique items seen is full")
    if k == st.n_chunks:  # nodes are numbered in order (a reset keeps the chunks for the next)
        st.chunks[k] = <SeenNode*>malloc((<size_t>SEEN_CHUNK << k) * sizeof(SeenNode))
        if st.chunks[k] == NULL:
            with gil:
                raise MemoryError()
        st.n_chunks += 1
    nd = store_node(st, i)
    nd.data = <uint8_t*>malloc(n + 1)
    if nd.data == NULL:
        with gil:
            raise MemoryError()
    memcpy(nd.data, data, n)
    nd.count = 1 + (seen_node(c, parent).count if parent != 0 else 0)
    nd.parent = parent
    nd.length = n
    nd.hash = h
    st.n = i + 1
    st.slots[p] = i
    if 2 * st.n > st.mask:
        seen_grow(st)
    return (i | SCRATCH_BIT) if st == c.seen_scratch else i + 1


cdef int item_close(Ctx* c, PState* s, int64_t end, const uint8_t* rest=NULL,
                    int64_t n_rest=0) except -1 nogil:
    """Close the open item of unique-array register `s`, which ends before byte `end`: 0 when
    it equals an item seen before (the parse ends), else 1, with the item added. With `rest`:
    only ask whether the item, followed by those n_rest bytes, would be a repeat (0), adding
    nothing."""
    if s.item < 2:
        return 1
    return close_span(c, s, s.item - 2, end, rest, n_rest, rest == NULL, 1)


cdef uint8_t QUOTE = 34


cdef int key_close(Ctx* c, PState* s) except -1 nogil:
    """Close the key open in object register `s` with its closing quote, the byte at c.pos
    (not read: before a terminal's first byte it is not in the text yet): 0 when the object
    has that key already, else 1, with the key added. The key's opening terminal may begin
    with a comma and whitespace: its text starts at the first quote."""
    cdef int64_t start
    if s.item > -2:
        return 1
    start = -2 - <int64_t>s.item
    while start < c.pos and c.text[start] != QUOTE:
        start += 1
    return close_span(c, s, start, c.pos, &QUOTE, 1, True, -1)


cdef int close_span(Ctx* c, PState* s, int64_t start, int64_t end, const uint8_t* rest,
                    int64_t n_rest, bint add, int32_t closed) except -1 nogil:
    """`item_close` of the text from byte `start` to before `end`, followed by the n_rest
    bytes of `rest`; with `add`, a text not seen is added and register `s` is left with
    item `closed`."""
    cdef int64_t n, cap, length
    cdef uint8_t* buf
    cdef const uint8_t* text
    cdef uint64_t h = 14695981039346656037u
    cdef int32_t id, j
    cdef SeenNode* nd
    n = end - start
    if n < 0:  # a state stepped with another text than its own: refuse, never read past it
        return 0
    cap = 4 * (n + n_rest) + 64
    buf = <uint8_t*>malloc(cap + n + n_rest)
    if buf == NULL:
        with gil:
            raise MemoryError()
    text = c.text + start
    if n_rest:  # the item's text and its rest, side by side after the output buffer
        memcpy(buf + cap, text, n)
        memcpy(buf + cap + n, rest, n_rest)
        text = buf + cap
        n += n_rest
    length = canonical(text, n, buf, cap)
    if length == 0:  # whitespace only: the item has not started
        free(buf)
        return 1
    if length < 0:
        # no canonical form. Closing, the text is a whole value: an exponent beyond 10^15 or
        # nesting deeper than 200, refused rather than told apart. Looking ahead, the text may
        # be incomplete: nothing is known
        free(buf)
        return 0 if add else 1
    for j in range(length):
        h = (h ^ buf[j]) * 1099511628211u
    id = s.seen
    while id != 0:
        nd = seen_node(c, id)
        if nd.hash == h and nd.length == length and memcmp(nd.data, buf, length) == 0:
            free(buf)
            return 0
        id = nd.parent
    if add:
        s.seen = seen_add(c, s.seen, buf, <int32_t>length, h)
        s.item = closed
    free(buf)
    return 1


cdef int forced_rest_fresh(Ctx* c, const PState* s) except -1 nogil:
    """For a state inside a terminal whose remaining bytes are forced (the rest of a literal
    such as "true"): 0 when the terminal ends an item of a unique array and that item would
    be a repeat, so that the dead end is refused at the first byte, not after the last."""
    cdef const Tables* t = c.t
    cdef uint8_t rest[MAX_FORCED_REST]
    cdef int32_t n = 0, d = s.dstate, b
    cdef PState reg
    if t.term_counted[s.term]:
        return 1
    while not t.dfa_final[d]:
        b = t.dfa_forced[d]
        if b < 0 or n == MAX_FORCED_REST:
            return 1
        rest[n] = <uint8_t>b
        n += 1
        d = dfa_next(t, d, <uint8_t>b)
    if not ends_item(c, s, &reg):
        return 1
    return item_close(c, &reg, c.pos + 1, rest, n)


cdef int string_item_fresh(Ctx* c, const PState* s) except -1 nogil:
    """For a state inside a terminal of whole strings (dfa_values): 0 when it is inside a
    string item of a unique array and every string it can complete to is an item seen
    before. Those strings are counted (dfa_values): while they outnumber the items seen
    that begin as this one does, one is new; else the search goes on byte by byte."""
    cdef PState reg
    cdef Frame* fr
    cdef int32_t frame = s.frame
    cdef int64_t start, n, cap
    cdef uint8_t* buf
    cdef int found
    if c.t.dfa_values[s.dstate] > MAX_ITEMS_SEEN:
        return 1
    copy_register(&reg, s)
    while reg.item == 0 and frame != NO_FRAME:  # the innermost register with an item open
        fr = get_frame(c, frame)
        load_register(&reg, fr)
        frame = fr.parent
    if reg.item < 2:
        return 1  # no unique array's item (a kept key: never a whole string item)
    start = reg.item - 2
    while start <= c.pos and (c.text[start] == 32 or c.text[start] == 9
                              or c.text[start] == 10 or c.text[start] == 13):
        start += 1
    if start > c.pos or c.text[start] != QUOTE:
        return 1  # the item is not this string: one holding it
    n = c.pos + 1 - start
    cap = n + c.t.n_dfa_states + 8  # (a search never revisits a state: no loop is counted)
    buf = <uint8_t*>malloc(cap + 4 * cap + 64)
    if buf == NULL:
        with gil:
            raise MemoryError()
    memcpy(buf, c.text + start, n)
    try:
        found = fresh_from(c, &reg, s.dstate, buf, n, c.pos + 1 - start, buf + cap,
                           4 * cap + 64)
    finally:
        free(buf)
    return found


cdef int fresh_from(Ctx* c, PState* reg, int32_t d, uint8_t* buf, int64_t n, int64_t n_text,
                    uint8_t* canon, int64_t canon_cap) except -1 nogil:
    """Whether DFA state d, reached by the string item spelled buf[:n] (its first n_text
    bytes in the text, the rest a search's), can complete to a string not seen in `reg`."""
    cdef int64_t v = c.t.dfa_values[d], m = 0, length
    cdef int32_t id, nd
    cdef int b
    cdef SeenNode* node
    if c.t.dfa_final[d]:
        return item_close(c, reg, c.pos + 1, buf + n_text, n - n_text)
    if v > MAX_ITEMS_SEEN or (v > 0 and (reg.seen == 0 or v > seen_node(c, reg.seen).count)):
        return 1  # more strings than items seen
    if v > 0:
        length = string_prefix(buf, n, canon, canon_cap)
        id = reg.seen
        while id != 0 and m < v:
            node = seen_node(c, id)
            if m + node.count < v:
                break  # too few items left to reach v
            if node.length >= length and memcmp(node.data, canon, length) == 0:
                m += 1
            id = node.parent
        if m < v:
            return 1
    for b in range(256):
        nd = dfa_next(c.t, d, <uint8_t>b)
        if nd < 0:
            continue
        buf[n] = <uint8_t>b
        if b == 92 and v > 0:
            # a character begins: each one escaped in one spelling (as json.dumps writes it),
            # never in each of its spellings (those would be searched once per spelling)
            if fresh_escapes(c, reg, nd, buf, n + 1, n_text, canon, canon_cap):
                return 1
        elif fresh_from(c, reg, nd, buf, n + 1, n_text, canon, canon_cap):
            return 1
    return 0


cdef int fresh_escapes(Ctx* c, PState* reg, int32_t d, uint8_t* buf, int64_t n,
                       int64_t n_text, uint8_t* canon, int64_t canon_cap) except -1 nogil:
    """`fresh_from` after a backslash that begins a character (DFA state d): the quote, the
    backslash and each control character, in the one spelling json.dumps gives it."""
    cdef int i, cp, j, k
    cdef int32_t x
    cdef uint8_t spelled[5]
    cdef const char* hexdigits = b"0123456789abcdef"
    for i in range(34):
        cp = i if i < 32 else (34 if i == 32 else 92)
        k = 1
        if cp == 34 or cp == 92:
            spelled[0] = <uint8_t>cp
        elif cp == 8 or cp == 9 or cp == 10 or cp == 12 or cp == 13:
            spelled[0] = b"btn?fr"[cp - 8]
        else:
            spelled[0] = 117  # u00XX
            spelled[1] = 48
            spelled[2] = 48
            spelled[3] = <uint8_t>hexdigits[cp >> 4]
            spelled[4] = <uint8_t>hexdigits[cp & 15]
            k = 5
        x = d
        for j in range(k):
            x = dfa_next(c.t, x, spelled[j])
            if x < 0:
                break
            buf[n + j] = spelled[j]
        if x >= 0 and fresh_from(c, reg, x, buf, n + k, n_text, canon, canon_cap):
            return 1
    return 0


cdef bint ends_item(Ctx* c, const PState* s, PState* reg) noexcept nogil:
    """Whether the item of a unique array ends with the terminal `s` is in (nothing of the item
    can follow it); `reg` is then that array's register."""
    cdef const Tables* t = c.t
    cdef int32_t node = s.node, frame = s.frame
    cdef bint popped = False
    cdef Frame* fr
    copy_register(reg, s)
    while frame != NO_FRAME and only_ends(t, node):
        fr = get_frame(c, frame)
        node = fr.node
        frame = fr.parent
        load_register(reg, fr)
        popped = True
    return popped and reg.item >= 2


cdef int zero_exponent_fresh(Ctx* c, const PState* s) except -1 nogil:
    """A number whose digits are zeros and whose exponent has begun (0e, -0.0E+1) is 0 however
    it goes on: 0 when it ends an item of a unique array that already holds 0."""
    cdef const uint8_t* x = c.text
    cdef int64_t j = c.pos, lo = c.pos - MAX_NUMBER_SCAN
    cdef uint8_t rest = 48
    cdef PState reg
    if lo < 0:
        lo = 0
    while j >= lo and 48 <= x[j] <= 57:  # exponent digits
        rest = 0
        j -= 1
    if j >= lo and (x[j] == 43 or x[j] == 45):
        j -= 1
    if j < lo or not (x[j] == 101 or x[j] == 69):
        return 1
    j -= 1
    if j < lo or x[j] != 48 and x[j] != 46:  # the mantissa: zeros and a point only
        return 1
    while j >= lo and (x[j] == 48 or x[j] == 46):
        j -= 1
    if j >= lo and x[j] == 45:
        j -= 1
    if j >= lo and (48 <= x[j] <= 57 or x[j] == 46 or 97 <= x[j] <= 122 or 65 <= x[j] <= 90
                    or x[j] == 34 or x[j] == 92):
        return 1  # part of a longer number, a word or a string
    if not ends_item(c, s, &reg):
        return 1
    return item_close(c, &reg, c.pos + 1, &rest, 1 if rest else 0)


cdef int item_guard(Ctx* c, int32_t g, PState* s) except -1 nogil:
    """The item part of guard g on the unique-array register `s`, entered at byte c.pos: close
    the open item (0: it was a repeat), then open one after this byte. In an object that
    keeps its keys: open a key at this byte, or close it with this byte (0: a repeat)."""
    if c.t.guard_item[g] & KEY_OPEN:
        s.item = <int32_t>(-2 - c.pos)
        return 1
    if c.t.guard_item[g] & KEY_CLOSE:
        return key_close(c, s)
    if c.t.guard_item[g] & ITEM_CLOSE and not item_close(c, s, c.pos):
        return 0
    if c.t.guard_item[g] & ITEM_OPEN:
        s.item = <int32_t>(c.pos + 3)
    return 1


cdef int settle(Ctx* c, PState* s) except -1 nogil:
    """After a terminal has ended at byte c.pos: leave the rules that can only end, and if that
    lands in a unique array with an item open, the item is complete: close it now, so that a
    repeat is refused at its last byte rather than at the comma. 0: the state is dead."""
    cdef const Tables* t = c.t
    cdef Frame* fr
    while s.frame != NO_FRAME and only_ends(t, s.node):
        fr = get_frame(c, s.frame)
        s.node = fr.node
        s.frame = fr.parent
        load_register(s, fr)
    if s.item >= 2:
        if not item_close(c, s, c.pos + 1):
            return 0
        if s.item >= 2 and s.seen != 0:  # still open, so not begun: a comma just opened it
            return item_start_fresh(c, s)
    return 1


cdef bint blank_only(const Tables* t, int32_t term) noexcept nogil:
    """Whether terminal `term` begins only with whitespace bytes."""
    cdef const uint32_t* first = &t.term_first[8 * term]
    cdef int k
    if first[0] & ~((<uint32_t>1 << 9) | (<uint32_t>1 << 10) | (<uint32_t>1 << 13)):
        return False
    if first[1] & ~(<uint32_t>1):  # (byte 32 is bit 0 of the second word)
        return False
    for k in range(2, 8):
        if first[k]:
            return False
    return True


cdef int item_start_fresh(Ctx* c, PState* s) except -1 nogil:
    """For a unique array whose item has just been opened at `s` (by a comma): 0 when no new
    item can begin there. The items that can run out are strings of a counted terminal
    (dfa_values) and literals whose terminal forces every byte (true, false, null); any
    other item is open-ended (JsonSchema checked) and blanks lead to the same items."""
    cdef StateSet starts
    cdef PState* ns
    cdef int32_t i, d
    cdef int64_t cap = c.t.n_dfa_states + 8
    cdef uint8_t* space
    cdef int found = 0
    stateset_init(&starts, 8)
    space = <uint8_t*>malloc(cap + 4 * cap + 64)
    if space == NULL:
        stateset_free(&starts)
        with gil:
            raise MemoryError()
    space[0] = QUOTE
    try:
        expand(c, s, NO_BYTE, &starts)
        for i in range(starts.n):
            ns = &starts.items[i]
            if blank_only(c.t, ns.term):
                continue
            if c.t.dfa_values[ns.dstate] >= 0:
                d = dfa_next(c.t, ns.dstate, QUOTE)
                found = d >= 0 and fresh_from(c, s, d, space, 1, 0, space + cap, 4 * cap + 64)
            else:
                found = forced_rest_fresh(c, ns)
            if found:
                break
    finally:
        free(space)
        stateset_free(&starts)
    return found


cdef inline int unique_live(Ctx* c, PState* s) except -1 nogil:
    """After a byte at c.pos, in a structure with unique arrays: 0 when `s` has completed, or
    can only complete, an item seen before."""
    cdef uint8_t b
    if s.term < 0:
        return settle(c, s)
    if c.t.dfa_values[s.dstate] >= 0:
        return string_item_fresh(c, s)
    if c.t.dfa_forced[s.dstate] >= 0:
        return forced_rest_fresh(c, s)
    b = c.text[c.pos]
    if b == 101 or b == 69 or b == 43 or b == 45 or 48 <= b <= 57:
        return zero_exponent_fresh(c, s)
    return 1


cdef bint any_in_unique(Ctx* c, const StateSet* set) noexcept nogil:
    """Whether some state of `set` is inside a unique array."""
    cdef int32_t i
    for i in range(set.n):
        if in_unique(c, &set.items[i]):
            return True
    return False


cdef bint in_unique(Ctx* c, const PState* s) noexcept nogil:
    """Whether `s` is inside a unique array (its steps may depend on the text before it)."""
    cdef int32_t f = s.frame
    cdef Frame* fr
    if s.item != 0:
        return True
    while f != NO_FRAME:
        fr = get_frame(c, f)
        if fr.item != 0:
            return True
        f = fr.parent
    return False
