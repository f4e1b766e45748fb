# Included by structure.pyx (one module: the class fills the Tables the step reads).

# --- the compiled structure -------------------------------------------------------------------

_TABLE_FIELDS = {
    "dfa_trans": np.int32, "dfa_accept": np.uint8, "dfa_final": np.uint8,
    "dfa_boundary": np.uint8, "dfa_lens": np.uint64, "dfa_lens_tail": np.uint8,
    "dfa_values": np.int64, "term_start": np.int32, "term_counted": np.uint8, "term_min": np.int32,
    "term_max": np.int32, "term_first": np.uint32, "term_special": np.uint8,
    "node_entry_off": np.int32,
    "node_end": np.uint8, "node_collapse": np.uint8, "node_tail": np.uint8, "node_runs": np.uint8,
    "entry_term": np.int32,
    "entry_target": np.int32, "entry_push_off": np.int32, "pushes": np.int32,
    "entry_guard": np.int32, "node_guarded": np.uint8, "guard_forbid": np.uint64,
    "guard_need": np.uint64, "guard_set": np.uint64, "guard_min": np.int32,
    "guard_inc": np.int32, "guard_max": np.int32, "guard_reserve": np.uint64,
    "guard_cap": np.int32,
    "guard_clause_off": np.int32, "clause_if": np.uint64, "clause_then": np.uint64,
    "guard_item": np.uint8,
}


cdef cnp.ndarray new_array(Py_ssize_t n, int typenum, int fill_byte):
    """A new one-dimensional array of `n` items of numpy type `typenum`, every byte
    `fill_byte` (-1: as allocated). Through numpy's C API: a compile makes a few dozen small
    arrays, and np.empty's argument parsing and dtype lookup run code a compile otherwise
    would not fetch."""
    cdef cnp.npy_intp dims = n
    cdef cnp.ndarray arr = cnp.PyArray_EMPTY(1, &dims, typenum, 0)
    if fill_byte >= 0:
        memset(cnp.PyArray_DATA(arr), fill_byte, cnp.PyArray_NBYTES(arr))
    return arr


cdef cnp.ndarray as_c_array(object obj, int typenum):
    """`obj` as a C-contiguous array of numpy type `typenum`: taken as it is when it already is
    one (the compiler's tables and the vocabulary's are; numpy's ascontiguousarray costs more
    than copying most tables), else converted."""
    if (cnp.PyArray_Check(obj) and cnp.PyArray_TYPE(<cnp.ndarray>obj) == typenum
            and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>obj)):
        return <cnp.ndarray>obj
    return np.ascontiguousarray(obj, dtype=cnp.PyArray_DescrFromType(typenum))


cdef int mark_class_starts(tuple states, uint8_t* starts) except -1:
    """Set starts[b] (257 flags) wherever some state's target changes from byte b - 1 to byte
    b, an edge's or none's: where a byte class must start (starts[0] and starts[256] may be
    set too). `states`: a DFA's `trans`, per state its sorted (lo, hi, target) ranges."""
    cdef tuple row, edge
    cdef int lo, end
    cdef int32_t target, last
    for row in states:
        end, last = -1, -1  # the byte before the range, and its target (-1: none)
        for edge in row:
            lo, target = edge[0], edge[2]
            if end != lo - 1:  # after a gap: a change where it began, and at lo
                starts[end + 1] = 1
                starts[lo] = 1
            elif last != target:
                starts[lo] = 1
            end, last = edge[1], target
        starts[end + 1] = 1
    return 0


def class_cuts(tuple states) -> np.ndarray:
    """Bool per byte (read-only): some state of the DFA whose `trans` is `states` changes its
    target from the byte before to this one (never byte 0)."""
    cdef uint8_t starts[257]
    memset(starts, 0, 257)
    mark_class_starts(states, starts)
    starts[0] = 0
    cuts = new_array(256, cnp.NPY_BOOL, -1)
    memcpy(cnp.PyArray_DATA(cuts), starts, 256)
    cnp.PyArray_CLEARFLAGS(cuts, cnp.NPY_ARRAY_WRITEABLE)
    return cuts


def pack_dfas(list rows, list accepts, list cuts) -> dict:
    """The terminals' automata in one table over byte classes they share: a class starts
    wherever some state's target changes, its first byte stands for it, and each automaton's
    targets shift by its offset. Read from the automata's ranges (no (states, 256) table is
    spread out per automaton: most terminals of a structure are new, small ones).

    Args:
        rows: per terminal, its DFA's `trans`: per state, sorted (lo, hi, target) ranges.
        accepts: per terminal, its states' acceptance.
        cuts: per terminal, its DFA's `cuts()` (built once per automaton: a terminal cached
            across structures is not read again for them).
    Returns:
        The compiler's DFA tables: n_classes, byte_class, dfa_trans, dfa_accept, dfa_final
        (accepting, no edge out), term_start and term_first (the first bytes, 8 words each).
    """
    cdef int n_terms = len(rows)
    cdef uint8_t starts[257]
    cdef int k, b, c, lo, hi, n_classes = 0
    cdef int64_t s, off = 0, total = 0, at
    cdef int32_t target
    cdef tuple states, row, edge, accept
    cdef cnp.ndarray cut
    cdef const uint8_t* cp
    memset(starts, 0, 257)
    for k in range(n_terms):
        total += len(rows[k])
        # (raw pointers, not typed memoryviews: acquiring one costs more than a small
        # terminal's loop)
        cut = cuts[k]
        if (cnp.PyArray_SIZE(cut) != 256 or cnp.PyArray_ITEMSIZE(cut) != 1
                or not cnp.PyArray_IS_C_CONTIGUOUS(cut)):
            raise ValueError("a terminal's cuts are 256 one-byte flags")
        cp = <const uint8_t*>cnp.PyArray_DATA(cut)
        for b in range(256):
            starts[b] |= cp[b]
    starts[0] = 1
    byte_class = new_array(256, cnp.NPY_UINT8, -1)
    cdef uint8_t* bc = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>byte_class)
    for b in range(256):
        n_classes += starts[b]
        bc[b] = n_classes - 1
    trans = new_array(total * n_classes, cnp.NPY_INT32, 0xFF)  # (-1: no edge)
    accept_out = new_array(total, cnp.NPY_UINT8, -1)
    final = new_array(total, cnp.NPY_UINT8, -1)
    term_start = new_array(n_terms, cnp.NPY_INT32, -1)
    term_first = new_array(8 * n_terms, cnp.NPY_UINT32, 0)
    cdef int32_t* tr = <int32_t*>cnp.PyArray_DATA(<cnp.ndarray>trans)
    cdef uint8_t* acc = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>accept_out)
    cdef uint8_t* fin = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>final)
    cdef int32_t* ts = <int32_t*>cnp.PyArray_DATA(<cnp.ndarray>term_start)
    cdef uint32_t* tf = <uint32_t*>cnp.PyArray_DATA(<cnp.ndarray>term_first)
    for k in range(n_terms):
        states = rows[k]
        accept = tuple(accepts[k])
        ts[k] = <int32_t>off
        for s in range(len(states)):
            row = states[s]
            at = (off + s) * n_classes
            for edge in row:  # a range's bytes are whole classes
                lo, hi, target = edge[0], edge[1], edge[2]
                for c in range(bc[lo], bc[hi] + 1):
                    tr[at + c] = target + <int32_t>off
                if s == 0:
                    for b in range(lo, hi + 1):
                        tf[8 * k + (b >> 5)] |= (<uint32_t>1) << (b & 31)
            acc[off + s] = 1 if accept[s] else 0
            fin[off + s] = 1 if accept[s] and not row else 0
        off += len(states)
    return dict(n_classes=n_classes, byte_class=byte_class, dfa_trans=trans,
                dfa_accept=accept_out, dfa_final=final, term_start=term_start,
                term_first=term_first)


cdef dfa_forced_table(const Tables* t, bint needed):
    """Per DFA state, the one byte it can take next when it is not accepting and takes only
    that one, else -1 (all -1 when not `needed`)."""
    forced = new_array(t.n_dfa_states + 1, cnp.NPY_INT32, 0xFF)  # (-1)
    if not needed:
        return forced
    cdef int32_t* out = <int32_t*>cnp.PyArray_DATA(<cnp.ndarray>forced)
    cdef int32_t class_size[256]
    cdef int32_t class_first[256]
    cdef int32_t s, c, only, count
    cdef int b
    for c in range(256):
        class_size[c] = 0
        class_first[c] = -1
    for b in range(255, -1, -1):
        class_size[t.byte_class[b]] += 1
        class_first[t.byte_class[b]] = b
    for s in range(t.n_dfa_states):
        if t.dfa_accept[s]:
            continue
        count = 0
        only = -1
        for c in range(t.n_classes):
            if t.dfa_trans[s * t.n_classes + c] >= 0:
                count += class_size[c]
                if count > 1:
                    break
                only = class_first[c]
        if count == 1:
            out[s] = only
    return forced


cdef void set_alphabet(Tables* t) noexcept:
    """t.alphabet: the bytes of the classes some DFA state has an edge on."""
    cdef int32_t s, c
    cdef int b
    cdef uint8_t taken[256]
    memset(taken, 0, sizeof(taken))
    for s in range(t.n_dfa_states):
        for c in range(t.n_classes):
            if t.dfa_trans[<int64_t>s * t.n_classes + c] >= 0:
                taken[c] = 1
    memset(t.alphabet, 0, sizeof(t.alphabet))
    for b in range(256):
        if taken[t.byte_class[b]]:
            t.alphabet[b >> 5] |= 1u << (b & 31)


cdef node_first_table(const Tables* t):
    """Per node, 8 words: the union of its entries' first bytes."""
    out = new_array(8 * t.n_nodes + 8, cnp.NPY_UINT32, 0)
    cdef uint32_t* o = <uint32_t*>cnp.PyArray_DATA(<cnp.ndarray>out)  # (see pack_dfas)
    cdef int32_t node, e, k
    for node in range(t.n_nodes):
        for e in range(t.node_entry_off[node], t.node_entry_off[node + 1]):
            for k in range(8):
                o[8 * node + k] |= t.term_first[8 * t.entry_term[e] + k]
    return out


cdef node_special_table(const Tables* t):
    """Per node, whether one of its entries is a special token's terminal."""
    out = new_array(t.n_nodes + 1, cnp.NPY_UINT8, 0)
    cdef uint8_t* o = <uint8_t*>cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef int32_t node, e
    for node in range(t.n_nodes):
        for e in range(t.node_entry_off[node], t.node_entry_off[node + 1]):
            if t.term_special[t.entry_term[e]]:
                o[node] = 1
    return out


cdef void* _ptr(dict bufs, str name):
    """The memory of table `name`: its array's, or its place in the packed tables (an int)."""
    cdef object where = bufs[name]
    if type(where) is int:
        return <void*><uintptr_t>where
    return cnp.PyArray_DATA(<cnp.ndarray>where)


cdef bint _any_set(const uint8_t* p, Py_ssize_t n):
    """Whether a uint8 table of `n` bytes holds a nonzero one (np.any costs more than a short
    table's loop)."""
    cdef Py_ssize_t i
    for i in range(n):
        if p[i]:
            return True
    return False


# the element types of the tables, as _pack_tables writes them
cdef enum:
    _U8, _I32, _U32, _I64, _U64

cdef dict _KIND_OF = {np.uint8: _U8, np.int32: _I32, np.uint32: _U32, np.int64: _I64,
                      np.uint64: _U64}
cdef int[5] _SIZE_OF = [1, 4, 4, 8, 8]
cdef int[5] _TYPE_NUMBER = [cnp.NPY_UINT8, cnp.NPY_INT32, cnp.NPY_UINT32, cnp.NPY_INT64,
                            cnp.NPY_UINT64]


cdef _pack_tables(dict tables, dict bufs):
    """Every table written one after another into one array (each 8-aligned, with a zero
    after it): bufs[name] is then its address. Returns the array, which owns them. (One
    array filled in C instead of an array per table: most tables are short, and numpy's
    per-call cost was most of a small structure's.)"""
    cdef Py_ssize_t total = 0, at, i, n, end = 0
    cdef int kind
    cdef list value
    cdef cnp.ndarray arr
    cdef dict places = {}
    cdef dict arrays = {}
    for name, dtype in _TABLE_FIELDS.items():
        kind = _KIND_OF[dtype]
        total = (total + 7) & ~7
        table = tables[name]
        if type(table) is list:
            n = len(<list>table)
        else:  # an array (from the compiler, or a cache file)
            arr = arrays[name] = as_c_array(table, _TYPE_NUMBER[kind])
            if arr.ndim != 1:
                raise ValueError(f"table {name} has {arr.ndim} dimensions, not one")
            n = cnp.PyArray_SIZE(arr)
        places[name] = (total, kind, n)
        total += (n + 1) * _SIZE_OF[kind]
    pack = new_array(total + 8, cnp.NPY_UINT8, -1)  # (what no table fills is zeroed below)
    cdef char* base = <char*>cnp.PyArray_DATA(<cnp.ndarray>pack)
    cdef char* p
    cdef long long v
    for name, (at, kind, n) in places.items():
        memset(base + end, 0, at - end)  # (the zero after the table before, and the gap)
        end = at + n * _SIZE_OF[kind]
        p = base + at
        bufs[name] = <uintptr_t>p
        if name in arrays:
            arr = arrays[name]
            memcpy(p, cnp.PyArray_DATA(arr), cnp.PyArray_NBYTES(arr))
            continue
        value = tables[name]
        if kind == _U64:
            for i in range(n):
                (<uint64_t*>p)[i] = <uint64_t>value[i]
        elif kind == _I64:
            for i in range(n):
                (<int64_t*>p)[i] = <int64_t>value[i]
        else:
            for i in range(n):
                v = value[i]
                if kind == _I32:
                    if not -2147483648 <= v <= 2147483647:
                        raise OverflowError(f"table {name}: {v} is not an int32")
                    (<int32_t*>p)[i] = <int32_t>v
                elif kind == _U32:
                    if not 0 <= v <= 4294967295:
                        raise OverflowError(f"table {name}: {v} is not a uint32")
                    (<uint32_t*>p)[i] = <uint32_t>v
                else:
                    if not 0 <= v <= 255:
                        raise OverflowError(f"table {name}: {v} is not a uint8")
                    (<uint8_t*>p)[i] = <uint8_t>v
    memset(base + end, 0, total + 8 - end)
    return pack


cdef class CompiledStructure:
    """The read-only tables of one compiled structure, plus its arena of stack frames.

    Built by `pse.compiler`; shared by every stepper and engine of the structure.
    """

    def __cinit__(self):
        self.arena.n_chunks = 0
        self.arena.hash_slots = NULL
        self.arena.old_slots = NULL
        self.seen.n_chunks = 0
        self.seen.slots = NULL

    def __init__(self, parse_value, dict tables, int n_rules):
        cdef dict bufs = {}
        cdef int i
        # (the zero after each table keeps an empty one addressable)
        bufs["(packed)"] = _pack_tables(tables, bufs)
        self._buffers = bufs  # (it owns the memory of the tables)
        # (not the machine itself: it holds this structure, and a cycle would leave both to
        # the garbage collector)
        self.parse_value = parse_value
        self.n_rules = n_rules
        self.node_labels = list(tables.get("node_labels") or [])
        self.edge_labels = dict(tables.get("edge_labels") or {})
        self.terminal_keys = list(tables["terminal_keys"])
        self.special_tokens = dict(tables.get("special_tokens") or {})
        self.terminal_states = list(tables.get("terminal_states") or
                                    [None] * len(self.terminal_keys))
        self.slice_caches = {}
        cdef cnp.ndarray classes = as_c_array(tables["byte_class"], cnp.NPY_UINT8)
        if cnp.PyArray_SIZE(classes) != 256:
            raise ValueError("byte_class is not 256 bytes")
        memcpy(self.t.byte_class, cnp.PyArray_DATA(classes), 256)
        self.t.n_classes = int(tables["n_classes"])
        self.t.n_dfa_states = len(tables["dfa_accept"])
        self.t.n_terms = len(tables["term_start"])
        self.t.n_nodes = len(tables["node_end"])
        self.t.n_entries = len(tables["entry_term"])
        self.t.root_node = int(tables["root_node"])
        self.t.dfa_trans = <int32_t*>_ptr(bufs, "dfa_trans")
        self.t.dfa_accept = <uint8_t*>_ptr(bufs, "dfa_accept")
        self.t.dfa_final = <uint8_t*>_ptr(bufs, "dfa_final")
        self.t.dfa_boundary = <uint8_t*>_ptr(bufs, "dfa_boundary")
        self.t.dfa_lens = <uint64_t*>_ptr(bufs, "dfa_lens")
        self.t.dfa_lens_tail = <uint8_t*>_ptr(bufs, "dfa_lens_tail")
        self.t.term_start = <int32_t*>_ptr(bufs, "term_start")
        self.t.term_counted = <uint8_t*>_ptr(bufs, "term_counted")
        self.t.term_min = <int32_t*>_ptr(bufs, "term_min")
        self.t.term_max = <int32_t*>_ptr(bufs, "term_max")
        self.t.term_first = <uint32_t*>_ptr(bufs, "term_first")
        self.t.term_special = <uint8_t*>_ptr(bufs, "term_special")
        self.t.has_special = _any_set(self.t.term_special, len(tables["term_special"]))
        self.t.node_entry_off = <int32_t*>_ptr(bufs, "node_entry_off")
        self.t.node_end = <uint8_t*>_ptr(bufs, "node_end")
        self.t.node_collapse = <uint8_t*>_ptr(bufs, "node_collapse")
        self.t.node_tail = <uint8_t*>_ptr(bufs, "node_tail")
        self.t.node_runs = <uint8_t*>_ptr(bufs, "node_runs")
        self.t.entry_term = <int32_t*>_ptr(bufs, "entry_term")
        self.t.entry_target = <int32_t*>_ptr(bufs, "entry_target")
        self.t.entry_push_off = <int32_t*>_ptr(bufs, "entry_push_off")
        self.t.pushes = <int32_t*>_ptr(bufs, "pushes")
        self.t.entry_guard = <int32_t*>_ptr(bufs, "entry_guard")
        self.t.node_guarded = <uint8_t*>_ptr(bufs, "node_guarded")
        self.t.n_guards = len(tables["guard_min"])
        self.t.guard_forbid = <uint64_t*>_ptr(bufs, "guard_forbid")
        self.t.guard_need = <uint64_t*>_ptr(bufs, "guard_need")
        self.t.guard_set = <uint64_t*>_ptr(bufs, "guard_set")
        self.t.guard_min = <int32_t*>_ptr(bufs, "guard_min")
        self.t.guard_inc = <int32_t*>_ptr(bufs, "guard_inc")
        self.t.guard_max = <int32_t*>_ptr(bufs, "guard_max")
        self.t.guard_reserve = <uint64_t*>_ptr(bufs, "guard_reserve")
        self.t.guard_cap = <int32_t*>_ptr(bufs, "guard_cap")
        self.t.guard_clause_off = <int32_t*>_ptr(bufs, "guard_clause_off")
        self.t.clause_if = <uint64_t*>_ptr(bufs, "clause_if")
        self.t.clause_then = <uint64_t*>_ptr(bufs, "clause_then")
        self.t.guard_item = <uint8_t*>_ptr(bufs, "guard_item")
        self.t.has_unique = _any_set(self.t.guard_item, len(tables["guard_item"]))
        set_alphabet(&self.t)
        bufs["node_first"] = node_first_table(&self.t)
        self.t.node_first = <uint32_t*>_ptr(bufs, "node_first")
        bufs["node_special"] = node_special_table(&self.t)
        self.t.node_special = <uint8_t*>_ptr(bufs, "node_special")
        bufs["dfa_forced"] = dfa_forced_table(&self.t, self.t.has_unique)
        self.t.dfa_forced = <int32_t*>_ptr(bufs, "dfa_forced")
        self.t.dfa_values = <int64_t*>_ptr(bufs, "dfa_values")
        arena_init(&self.arena)
        seen_init(&self.seen, MAX_SEEN_CHUNKS)

    def __dealloc__(self):
        arena_free(&self.arena)
        seen_free(&self.seen)

    cdef PState initial_state(self) noexcept:
        cdef PState s
        s.frame = NO_FRAME
        s.node = self.t.root_node
        s.term = -1
        s.dstate = 0
        s.count = 0
        s.props = 0
        s.keys = 0
        s.seen = 0
        s.item = 0
        return s

    def rules_of(self, int32_t frame, int32_t node, int32_t term=-1) -> list:
        """The labels of the machines (grammar rules, named Forwards) a parser state
        (`Stepper.state_key()`'s frame, node and terminal) is inside, outermost first, a
        label repeated in a row once (of a state whose stacks were merged: the first
        stack's)."""
        cdef Ctx c
        cdef Frame* f
        self.ctx(&c)
        if not 0 <= node < self.t.n_nodes or len(self.node_labels) != self.t.n_nodes:
            return []
        nodes = [node]
        while frame != NO_FRAME and not frame & SCRATCH_BIT and frame < self.arena.n_frames:
            f = get_frame(&c, frame)
            if f.node == UNION_NODE:  # stacks merged: the first one's
                frame = f.parent
                continue
            nodes.append(f.node)
            frame = f.parent
        labels = []
        inner = self.edge_labels.get((term, node)) if term >= 0 else None
        for k in range(len(nodes) - 1, -1, -1):
            for label in (inner if k == 0 and inner is not None else self.node_labels[nodes[k]]):
                if not labels or labels[len(labels) - 1] != label:  # (no wraparound)
                    labels.append(label)
        return labels

    @property
    def n_nodes(self) -> int:
        """Number of parser nodes over all rules."""
        return self.t.n_nodes

    @property
    def n_terminals(self) -> int:
        """Number of distinct terminals (byte automata)."""
        return self.t.n_terms

    @property
    def n_dfa_states(self) -> int:
        """Number of DFA states over all terminals."""
        return self.t.n_dfa_states

    @property
    def n_frames(self) -> int:
        """Number of distinct stack frames created so far (grows with nesting seen)."""
        return self.arena.n_frames

    def arena_frames(self) -> list:
        """The frames of the arena, by id, each as (node, parent, props, keys, seen, item, lo,
        hi): what interning compares (equal frames get one id). For tests and debugging."""
        cdef Ctx c
        cdef Frame* f
        cdef int32_t i
        self.ctx(&c)
        out = []
        for i in range(self.arena.n_frames):
            f = get_frame(&c, i)
            out.append((f.node, f.parent, f.props, f.keys, f.seen, f.item, f.lo, f.hi))
        return out

    def __repr__(self):
        return (f"<CompiledStructure rules={self.n_rules} nodes={self.t.n_nodes} "
                f"terminals={self.t.n_terms} dfa_states={self.t.n_dfa_states}>")
