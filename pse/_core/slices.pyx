# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The slice cache: per (terminal, DFA state, count class) of a compiled structure, the tokens
consumed within the terminal and the trie nodes where a token may leave it (see slices.pxd),
built by a walk of the vocabulary trie on first use; and the memo of recent whole masks."""

from libc.stdint cimport int16_t, int32_t, uint8_t, uint16_t, uint32_t, int64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset

import numpy as np
cimport numpy as cnp

from pse._core.structure cimport (
    CompiledStructure, LENGTH_BITS, MAX_ITEMS_SEEN, PState, TERM_CHARS, TERM_UNITS, Tables,
    UNBOUNDED, as_c_array, dfa_next, exit_bytes, has_bit, new_array, term_accepting, term_done,
    term_step,
)
from pse._core.trie cimport Trie, TokenTrie, trie_find
from pse._core.byte_kinds cimport kinds_below, loop_kinds
from pse.errors import GrammarError

cnp.import_array()

import threading
import weakref
from collections import OrderedDict

# Slice entries kept per vocabulary for reuse across structures (least recently used dropped).
MAX_SHARED_SLICES = 4096
# Count profiles kept per structure (each up to 6 bytes per token of the vocabulary).
MAX_PROFILES = 8
# Subtree entries kept per structure (see Matcher.plan).
MAX_SUBTREE_SLICES = 8192

cdef enum:
    FAR_BELOW = -1    # so far below the minimum count that no token can reach it
    FAR = -2          # at or above the minimum and so far below the maximum that no token can reach it


cdef inline int32_t count_reach(const Tables* t, int32_t term, int32_t horizon
                                ) noexcept nogil:
    """How far a count may be from a bound and still matter to a token: a token holds at
    most `horizon` units; a TERM_CHARS terminal also reads its lengths table, LENGTH_BITS
    further (see chars_within)."""
    return horizon + LENGTH_BITS if t.term_counted[term] == TERM_CHARS else horizon


cdef inline int32_t count_class(const Tables* t, int32_t term, int32_t c, int32_t horizon
                                ) noexcept nogil:
    """Counts that no token can tell apart share one cache entry."""
    cdef int32_t mn, mx, reach
    if not t.term_counted[term]:
        return 0
    mn = t.term_min[term]
    mx = t.term_max[term]
    reach = count_reach(t, term, horizon)
    if c < mn:
        return FAR_BELOW if mn - c > reach else c
    if mx == UNBOUNDED or mx - c > reach:
        return FAR
    return c


cdef inline int32_t class_count(const Tables* t, int32_t term, int32_t cls, int32_t horizon
                                ) noexcept nogil:
    """A count that stands for count class `cls` (see count_class)."""
    if cls == FAR_BELOW:
        return t.term_min[term] - count_reach(t, term, horizon) - 1
    if cls == FAR:
        return t.term_min[term]
    return cls


cdef enum:
    NOT_TRACKING = 0x7FFFFFFF    # walk_entry: no live exit on the path


cdef inline int32_t close_level(uint8_t* full, int32_t* full_list, const int32_t* lvl_node,
                                int32_t* lvl_full, int32_t depth,
                                int32_t track_from) noexcept nogil:
    """The node tracked at `depth` is done: record it as full (flag and list; returns 1), or
    its parent as not (returns 0)."""
    if lvl_full[depth]:
        full[lvl_node[depth]] = 1
        full_list[0] = lvl_node[depth]
        return 1
    if depth > track_from:
        lvl_full[depth - 1] = 0
    return 0


cdef class SliceEntry:
    """The cached part of the mask for one (terminal, DFA state, count class)."""


_buffers = None  # ((n_nodes, n_tokens, max_depth, n_words), the buffers): see walk_buffers
cdef int64_t subtrees_taken = 0  # subtrees taken at once (walk_terminal; walks hold the lock)


def _subtrees_taken() -> int:
    """How many subtrees entries took at once so far (for tests: that the shortcut is used)."""
    return subtrees_taken


_walk_lock = threading.Lock()


cdef tuple walk_buffers(const Trie* tr, int32_t n_words):
    """What SliceCache.walk_terminal writes as it walks: exit nodes and their bytes, leaf
    tokens and their bytes, tokens within, per depth the walk's state (DFA state, count, node
    on the path, full so far), per node whether it is full and the list of nodes marked full
    (a walk clears its marks when done, so the flags are all zero between walks), and a
    bitmask of the vocabulary (pack_entry clears the words it sets). Sized for the whole trie
    and kept from one walk to the next: a walk holds _walk_lock while it uses them."""
    global _buffers
    cdef int32_t n_tokens = max(tr.node_tok_off[tr.n_nodes], 1)
    size = (tr.n_nodes, n_tokens, tr.max_depth, n_words)
    if _buffers is None or _buffers[0] != size:
        _buffers = (size, (
            np.empty(tr.n_nodes, dtype=np.int32), np.empty(tr.n_nodes, dtype=np.uint8),
            np.empty(n_tokens, dtype=np.int32), np.empty(n_tokens, dtype=np.uint8),
            np.empty(n_tokens, dtype=np.int32), np.empty((4, tr.max_depth + 1), dtype=np.int32),
            np.zeros(tr.n_nodes, dtype=np.uint8), np.empty(tr.n_nodes, dtype=np.int32),
            np.zeros(max(n_words, 1), dtype=np.uint32)))
    return _buffers[1]


cdef class SliceCache:
    """Slice entries of one (compiled structure, vocabulary) pair, built on first use, and a
    memo of recent whole masks keyed by the live state set they were computed for.

    Shared by every copy of an engine; entries are created under the GIL and never change,
    so walks in other threads read them safely.

    Args:
        structure: the compiled structure.
        vocab: the vocabulary (its flat trie, token bytes, special and EOS ids).
        max_masks: how many whole masks to remember (each ceil(V/32) * 4 bytes).
    """

    def __init__(self, CompiledStructure structure, vocab, int max_masks=512):
        cdef const Tables* t = &structure.t
        cdef int32_t term
        cdef Py_ssize_t i
        cdef TokenTrie trie = vocab.trie
        cdef int vocab_size = vocab.size
        if trie.shared_slices is None:
            trie.shared_slices = OrderedDict()
        self.t = structure.t
        self.tables_memory = structure._buffers
        self.terminal_keys = structure.terminal_keys
        self.terminal_states = structure.terminal_states
        self.structure_ref = weakref.ref(structure)
        self.trie = trie
        self.vocab_size = vocab_size
        self.n_words = (vocab_size + 31) // 32
        self.masks = OrderedDict()
        self.max_masks = max_masks
        self.tokens, kind = vocab.token_table()
        self._token_kind = as_c_array(kind, cnp.NPY_UINT8)
        if cnp.PyArray_SIZE(<cnp.ndarray>self._token_kind) < vocab_size:
            raise ValueError("the vocabulary's token kinds do not cover its size")
        self.token_kind = <const uint8_t*>cnp.PyArray_DATA(self._token_kind)
        eos = list(vocab.eos_token_ids)
        cdef cnp.npy_intp n_eos = len(eos) + 1  # (a zero after: never an empty array)
        self._eos = cnp.PyArray_ZEROS(1, &n_eos, cnp.NPY_INT32, 0)
        cdef int32_t* eos_ids = <int32_t*>cnp.PyArray_DATA(self._eos)
        for i in range(len(eos)):
            eos_ids[i] = eos[i]
        self.eos_ids = eos_ids
        self.n_eos = len(eos)
        # special tokens the structure names, as this vocabulary's ids (one it has not and
        # need not have is never allowed)
        self.special_ids = {}
        for term, (token, required) in structure.special_tokens.items():
            if required or vocab.has_special_token(token):
                self.special_ids[term] = vocab.special_token_id(token)
        self.special_terms_of = {}
        for term, token_id in self.special_ids.items():
            self.special_terms_of.setdefault(token_id, []).append(term)
            if t.has_unique and kind[token_id] == TOKEN_TEXT:
                # its text and the token would step on apart: the text a unique array reads
                # could not be both
                raise GrammarError(f"SpecialToken({structure.special_tokens[term][0]!r}) names "
                                   "a text token of this vocabulary, in a structure with "
                                   "uniqueItems arrays: name a special token there")
        self.entries = {}
        self._kinds_below = kinds_below(trie)
        self._loop_kinds = new_array(max(t.n_dfa_states, 1), cnp.NPY_INT16, 0xFF)  # (-1)
        # (the subtree size it is for, whether each node is known, whether it is large)
        self._large_memo = (new_array(1 + 2 * (trie.t.n_nodes // 32 + 1), cnp.NPY_UINT32, 0)
                            if sum(bin(word).count("1") for word in t.alphabet) < 128
                            else None)
        self.risky = {}
        self.profiles = OrderedDict()
        self.subtrees = OrderedDict()
        self.horizon = trie.t.max_depth
        self._follow = terminal_follow(t)
        self.follow = <uint32_t*>cnp.PyArray_DATA(self._follow)

    def __dealloc__(self):
        free(self.recent_keys)

    @property
    def structure(self):
        """The compiled structure of this cache, None once it is gone (see `t`)."""
        return self.structure_ref()

    def __len__(self):
        return len(self.entries)

    cdef SliceEntry get(self, const PState* s):
        return self.entry(s.term, s.dstate,
                          count_class(&self.t, s.term, s.count, self.horizon))

    cdef SliceEntry entry(self, int32_t term, int32_t dstate, int32_t cls):
        """The entry of terminal state (term, dstate) at count class `cls`: cached, shared
        with other structures, derived from a twin state's, or built by a walk."""
        key = (term, dstate, cls)
        entry = self.entries.get(key)
        if entry is not None:
            return <SliceEntry>entry
        start = self.t.term_start[term]
        local = dstate - start
        states = self.terminal_states[term]
        how = None if states is None else states.derivation(local)
        if how is not None:
            twin, ends = how
            entry = self.derive(term, self.entry(term, start + twin, cls), ends)
            self.entries[key] = entry
            return <SliceEntry>entry
        # equal terminals in other structures (the same phrase, JSON string) built it already?
        shared = self.trie.shared_slices
        follow = (<char*>&self.follow[8 * term])[:32]
        if states is not None and local in states.residual:
            global_key = (states.residual[local], cls, follow)
        else:
            global_key = (self.terminal_keys[term], local, cls, follow)
        # pop and re-insert rather than get and move_to_end: a thread switch between those
        # two (a garbage collection can run Python code) could let another thread evict the
        # key, and move_to_end would raise KeyError
        entry = shared.pop(global_key, None)
        if entry is None:
            entry = self.build(term, dstate, cls)
        shared[global_key] = entry
        if len(shared) > MAX_SHARED_SLICES:
            shared.popitem(last=False)
        self.entries[key] = entry
        return <SliceEntry>entry

    cdef SliceEntry derive(self, int32_t term, SliceEntry base, tuple ends):
        """`base` (the twin's entry) less the places where the terminal would end: after
        each text of `ends`, the bytes that may follow it lead to no exit and no leaf."""
        cdef const Trie* tr = &self.trie.t
        cdef const uint32_t* follow = &self.follow[8 * term]
        cdef int32_t node, k, b
        cdef bytes data
        nodes, tokens = [], []
        for text in ends:
            if len(text) + 1 > tr.max_depth:
                continue  # no token is that long
            for b in range(256):
                if not has_bit(follow, b):
                    continue
                data = text + bytes([b])
                node = trie_find(tr, <const uint8_t*><char*>data, len(data))
                if node < 0:
                    continue
                nodes.append(node)
                for k in range(tr.node_tok_off[node], tr.node_tok_off[node + 1]):
                    tokens.append(tr.tok_ids[k])
        if not nodes:
            return base
        words, bits, exit_node, leaf_id, full = entry_arrays(base)
        exit_byte = np.repeat(np.arange(256, dtype=np.uint8),
                              [base.s.exit_off[k + 1] - base.s.exit_off[k] for k in range(256)])
        leaf_byte = np.repeat(np.arange(256, dtype=np.uint8),
                              [base.s.leaf_off[k + 1] - base.s.leaf_off[k] for k in range(256)])
        keep_exit = ~np.isin(exit_node, nodes)
        keep_leaf = ~np.isin(leaf_id, tokens)
        return make_entry(words, bits, exit_node[keep_exit], exit_byte[keep_exit],
                          leaf_id[keep_leaf], leaf_byte[keep_leaf], full)

    cdef tuple risky_of(self, const PState* s, SliceEntry entry, bint after_zero):
        """For a root in a unique array: the tokens of `entry`'s "within" set that pass a
        state where the terminal ends or its rest is forced, or an "e" after a "0" or "." (there
        an item may close, or its value be settled, and a repeat is refused), as bits aligned
        with the entry's within words, and the trie nodes of all such tokens (each is checked
        by stepping along it). `after_zero`: the byte before the token is a "0" or "."."""
        cdef const Tables* t = &self.t
        cdef const Trie* tr = &self.trie.t
        cdef int32_t term = s.term
        cdef int32_t cls = count_class(t, term, s.count, self.horizon)
        key = (term, s.dstate, cls, after_zero)
        found = self.risky.get(key)
        if found is not None:
            return <tuple>found
        full = np.zeros(self.n_words, dtype=np.uint32)
        nodes = np.empty(max(tr.n_nodes, 1), dtype=np.int32)
        levels = np.empty((3, tr.max_depth + 1), dtype=np.int32)
        cdef uint32_t* f = <uint32_t*>cnp.PyArray_DATA(full)
        cdef int32_t* out_nodes = <int32_t*>cnp.PyArray_DATA(nodes)
        cdef int32_t* lvl_d = <int32_t*>cnp.PyArray_DATA(levels)
        cdef int32_t* lvl_c = lvl_d + tr.max_depth + 1
        cdef int32_t* lvl_r = lvl_c + tr.max_depth + 1
        cdef bint counted = t.term_counted[term], done, risky
        cdef int32_t i = 1, k, depth, n = 0
        cdef PState ps
        lvl_d[0] = s.dstate
        lvl_c[0] = class_count(t, term, cls, self.horizon)
        lvl_r[0] = 0
        with nogil:
            while i < tr.n_nodes:
                depth = tr.node_depth[i]
                if not term_step(t, term, lvl_d[depth - 1], lvl_c[depth - 1], tr.node_byte[i],
                                 &ps):
                    i = tr.node_end[i]
                    continue
                done = term_done(t, term, ps.dstate, ps.count)
                # an exponent's "e" after a zero digit can settle a number's value (0e...:
                # see structure.zero_exponent_fresh)
                risky = (lvl_r[depth - 1] or done
                         or (not counted and t.dfa_forced[ps.dstate] >= 0)
                         # a string item whose completions are few: see string_item_fresh
                         or (not counted and 0 <= t.dfa_values[ps.dstate] <= MAX_ITEMS_SEEN)
                         or ((tr.node_byte[i] == 101 or tr.node_byte[i] == 69)
                             and (after_zero if depth == 1 else
                                  tr.node_byte[tr.node_parent[i]] == 48
                                  or tr.node_byte[tr.node_parent[i]] == 46)))
                if risky and tr.node_tok_off[i] < tr.node_tok_off[i + 1]:
                    out_nodes[n] = i
                    n += 1
                    for k in range(tr.node_tok_off[i], tr.node_tok_off[i + 1]):
                        set_bit(f, tr.tok_ids[k])
                if done:  # the terminal takes no more bytes: its tokens end here
                    i = tr.node_end[i]
                    continue
                lvl_d[depth] = ps.dstate
                lvl_c[depth] = ps.count
                lvl_r[depth] = risky
                i += 1
        words = entry_arrays(entry)[0]
        found = (np.ascontiguousarray(full[words]), nodes[:n].copy())
        self.risky[key] = found
        return <tuple>found

    cdef SliceEntry build(self, int32_t term, int32_t dstate, int32_t cls):
        cdef const Tables* t = &self.t
        # a counted terminal with a bound sees a new count class at (nearly) every unit: one
        # walk of the trie records what each count allows, and each class is a filter of it
        if t.term_counted[term] == TERM_UNITS and (t.term_max[term] != UNBOUNDED
                                                   or t.term_min[term] > 0):
            return self.profile_entry(term, dstate, cls)
        return self.walk_entry(term, dstate, cls, 0)

    cdef SliceEntry walk_entry(self, int32_t term, int32_t dstate, int32_t cls, int32_t node):
        """One walk of the trie below `node` (0: the whole trie) from the terminal state
        (term, dstate) at count class `cls` (see walk_terminal)."""
        cdef const Trie* tr = &self.trie.t
        with _walk_lock:  # (the walks share one set of buffers)
            return self.walk_terminal(term, dstate, cls, node, walk_buffers(tr, self.n_words))

    cdef SliceEntry walk_terminal(self, int32_t term, int32_t dstate, int32_t cls, int32_t node,
                                  tuple buffers):
        """walk_entry, writing into `buffers` (see walk_buffers) as it goes.

        An exit or leaf whose tokens are all within the terminal is left out: those tokens
        are allowed whatever follows (a name's every letter is a place where another name
        could start, but the tokens below are names already)."""
        cdef const Tables* t = &self.t
        cdef const Trie* tr = &self.trie.t
        cdef int32_t count = class_count(t, term, cls, self.horizon)
        cdef int32_t first = node + 1, stop = tr.node_end[node], base = tr.node_depth[node]
        exit_node, exit_byte, leaf_id, leaf_byte, within_id, levels, full_flags, marked, \
            within_bits = buffers
        cdef int32_t* w_id = <int32_t*>cnp.PyArray_DATA(within_id)
        cdef int32_t* x_node = <int32_t*>cnp.PyArray_DATA(exit_node)
        cdef uint8_t* x_byte = <uint8_t*>cnp.PyArray_DATA(exit_byte)
        cdef int32_t* l_id = <int32_t*>cnp.PyArray_DATA(leaf_id)
        cdef uint8_t* l_byte = <uint8_t*>cnp.PyArray_DATA(leaf_byte)
        cdef int32_t* lvl_d = <int32_t*>cnp.PyArray_DATA(levels)
        cdef int32_t* lvl_c = lvl_d + tr.max_depth + 1
        cdef int32_t* lvl_node = lvl_c + tr.max_depth + 1
        cdef int32_t* lvl_full = lvl_node + tr.max_depth + 1
        cdef uint8_t* full = <uint8_t*>cnp.PyArray_DATA(full_flags)
        cdef int32_t* full_list = <int32_t*>cnp.PyArray_DATA(marked)
        cdef int32_t n_full = 0
        cdef const uint32_t* follow = &self.follow[8 * term]
        cdef const int32_t* tok_off = tr.node_tok_off
        cdef const int32_t* tok_ids = tr.tok_ids
        cdef const int32_t* node_end = tr.node_end
        cdef const uint16_t* node_depth = tr.node_depth
        cdef const uint8_t* node_byte = tr.node_byte
        cdef const int32_t* trans = t.dfa_trans
        cdef const uint8_t* accept = t.dfa_accept
        cdef int64_t n_classes = t.n_classes
        cdef int32_t i = first, k, depth, pd, pc, nd, n_exit = 0, n_leaf = 0, n_within = 0
        cdef int32_t top = 0, track_from = NOT_TRACKING
        cdef bint counted = t.term_counted[term], ends, live, is_exit
        cdef const uint16_t* below = <const uint16_t*>cnp.PyArray_DATA(self._kinds_below)
        cdef int16_t* loops = <int16_t*>cnp.PyArray_DATA(self._loop_kinds)
        cdef uint8_t b
        cdef PState ps
        global subtrees_taken
        lvl_d[0] = dstate
        lvl_c[0] = count
        with nogil:
            while i < stop:
                depth = node_depth[i] - base
                # full flags are kept below live exits only (elsewhere nothing asks): the
                # nodes tracked on the path at this depth and below are done; a node is
                # full when it is live and all its children are full
                while top >= depth and top >= track_from:
                    n_full += close_level(full, full_list + n_full, lvl_node, lvl_full, top,
                                          track_from)
                    top -= 1
                if top < track_from:  # (or no region was open)
                    track_from = NOT_TRACKING
                    top = 0
                pd = lvl_d[depth - 1]
                b = node_byte[i]
                if counted:
                    pc = lvl_c[depth - 1]
                    ends = term_accepting(t, term, pd, pc)
                    live = term_step(t, term, pd, pc, b, &ps)
                    nd = ps.dstate
                    lvl_c[depth] = ps.count
                else:
                    ends = accept[pd]
                    nd = trans[pd * n_classes + t.byte_class[b]]
                    live = nd >= 0
                is_exit = ends and has_bit(follow, b)
                if is_exit:
                    if not live:
                        for k in range(tok_off[i], tok_off[i + 1]):
                            l_id[n_leaf] = tok_ids[k]
                            l_byte[n_leaf] = b
                            n_leaf += 1
                    if node_end[i] > i + 1:
                        x_node[n_exit] = i
                        x_byte[n_exit] = b
                        n_exit += 1
                if not live:
                    if depth > track_from:
                        lvl_full[depth - 1] = 0
                    i = node_end[i]
                    continue
                for k in range(tok_off[i], tok_off[i + 1]):
                    w_id[n_within] = tok_ids[k]
                    n_within += 1
                lvl_d[depth] = nd
                if depth > track_from or (is_exit and node_end[i] > i + 1):
                    if track_from == NOT_TRACKING:
                        track_from = depth
                    lvl_node[depth] = i
                    lvl_full[depth] = 1
                    top = depth
                if (not counted and node_end[i] > i + 1
                        and (below[i] & ~loop_kinds(t, loops, nd)) == 0):
                    # every token below comes back to state nd: all are within (a string's
                    # text or a comment, most of the trie; the rest of a name or a number).
                    # Where nd may end, a token could also leave the terminal there, but
                    # that adds no token: none is left to find
                    for k in range(tok_off[i + 1], tok_off[node_end[i]]):
                        w_id[n_within] = tok_ids[k]
                        n_within += 1
                    subtrees_taken += 1
                    i = node_end[i]
                    continue
                i += 1
            while top >= track_from:
                n_full += close_level(full, full_list + n_full, lvl_node, lvl_full, top,
                                      track_from)
                top -= 1
        try:
            return pack_entry(w_id, n_within, <uint32_t*>cnp.PyArray_DATA(within_bits), x_node,
                              x_byte, n_exit, l_id, l_byte, n_leaf, full, full_list, n_full, tr,
                              self.n_words)
        finally:
            for k in range(n_full):
                full[full_list[k]] = 0

    cdef SliceEntry subtree_entry(self, const PState* s, int32_t node):
        """The entry of the terminal state of `s` (just started on the byte of trie node
        `node`) over the tokens below that node: built on first use, kept in an LRU."""
        cdef int32_t cls = count_class(&self.t, s.term, s.count, self.horizon)
        cdef uint32_t h = ((<uint32_t>s.term * 0x9E3779B1u) ^ (<uint32_t>s.dstate * 0x85EBCA77u)
                           ^ (<uint32_t>cls * 0xC2B2AE3Du) ^ (<uint32_t>node * 0x27D4EB2Fu))
        cdef int32_t slot = (h ^ (h >> 16)) & (RECENT_SLOTS - 1)
        if self.recent_keys == NULL:
            self.recent_keys = <int32_t*>malloc(4 * RECENT_SLOTS * sizeof(int32_t))
            if self.recent_keys == NULL:
                raise MemoryError()
            memset(self.recent_keys, 0xFF, 4 * RECENT_SLOTS * sizeof(int32_t))  # (term -1: empty)
            self.recent = [None] * RECENT_SLOTS
        cdef int32_t* known = &self.recent_keys[4 * slot]
        if known[0] == s.term and known[1] == s.dstate and known[2] == cls and known[3] == node:
            return <SliceEntry>self.recent[slot]
        key = (s.term, s.dstate, cls, node)
        entry = self.subtrees.pop(key, None)  # pop and re-insert: see entry()
        if entry is None:
            entry = self.walk_entry(s.term, s.dstate, cls, node)
        self.subtrees[key] = entry
        if len(self.subtrees) > MAX_SUBTREE_SLICES:
            self.subtrees.popitem(last=False)
        # the key is cleared while the slot changes, so that no look-up ever pairs a key with
        # another's entry (an entry the LRU dropped lives on here until replaced)
        known[0] = -1
        self.recent[slot] = entry
        known[0], known[1], known[2], known[3] = s.term, s.dstate, cls, node
        return <SliceEntry>entry

    cdef tuple profile(self, int32_t term, int32_t dstate):
        """One walk of the trie from (term, dstate) of a counted terminal, recording per token
        what it needs of the count c: `need`, the fewest units left before the maximum
        (c + need <= max), and at the places where the terminal may end, `done`, the units
        completed there (c + done >= min). Returns (within ids sorted by need, their needs,
        leaf ids, bytes, dones, needs, exit nodes, bytes, dones, needs) as arrays."""
        cdef const Tables* t = &self.t
        cdef const Trie* tr = &self.trie.t
        cdef int32_t n_tok = max(tr.node_tok_off[tr.n_nodes], 1)
        cdef cnp.ndarray[cnp.int32_t] w_id = np.empty(n_tok, dtype=np.int32)
        cdef cnp.ndarray[cnp.uint16_t] w_need = np.empty(n_tok, dtype=np.uint16)
        cdef cnp.ndarray[cnp.int32_t] leaf_id = np.empty(n_tok, dtype=np.int32)
        cdef cnp.ndarray[cnp.uint8_t] leaf_byte = np.empty(n_tok, dtype=np.uint8)
        cdef cnp.ndarray[cnp.uint16_t] leaf_done = np.empty(n_tok, dtype=np.uint16)
        cdef cnp.ndarray[cnp.uint16_t] leaf_need = np.empty(n_tok, dtype=np.uint16)
        cdef cnp.ndarray[cnp.int32_t] exit_node = np.empty(tr.n_nodes, dtype=np.int32)
        cdef cnp.ndarray[cnp.uint8_t] exit_byte = np.empty(tr.n_nodes, dtype=np.uint8)
        cdef cnp.ndarray[cnp.uint16_t] exit_done = np.empty(tr.n_nodes, dtype=np.uint16)
        cdef cnp.ndarray[cnp.uint16_t] exit_need = np.empty(tr.n_nodes, dtype=np.uint16)
        cdef cnp.ndarray[cnp.int32_t] lvl_d = np.empty(tr.max_depth + 1, dtype=np.int32)
        cdef cnp.ndarray[cnp.int32_t] lvl_done = np.empty(tr.max_depth + 1, dtype=np.int32)
        cdef cnp.ndarray[cnp.int32_t] lvl_need = np.empty(tr.max_depth + 1, dtype=np.int32)
        cdef uint32_t* follow = &self.follow[8 * term]
        cdef int32_t start = t.term_start[term]
        cdef int32_t i = 1, k, depth, pd, pdone, pneed, nd, done, need
        cdef int32_t n_w = 0, n_leaf = 0, n_exit = 0
        cdef uint8_t b
        lvl_d[0] = dstate
        lvl_done[0] = 0
        lvl_need[0] = 0
        with nogil:
            while i < tr.n_nodes:
                depth = tr.node_depth[i]
                pd = lvl_d[depth - 1]
                pdone = lvl_done[depth - 1]
                pneed = lvl_need[depth - 1]
                b = tr.node_byte[i]
                if pd == start and has_bit(follow, b):  # the terminal may end before b
                    for k in range(tr.node_tok_off[i], tr.node_tok_off[i + 1]):
                        leaf_id[n_leaf] = tr.tok_ids[k]
                        leaf_byte[n_leaf] = b
                        leaf_done[n_leaf] = pdone
                        leaf_need[n_leaf] = pneed
                        n_leaf += 1
                    if tr.node_end[i] > i + 1:
                        exit_node[n_exit] = i
                        exit_byte[n_exit] = b
                        exit_done[n_exit] = pdone
                        exit_need[n_exit] = pneed
                        n_exit += 1
                nd = dfa_next(t, pd, b)
                if nd < 0:
                    i = tr.node_end[i]
                    continue
                # a unit starting here needs the count below the maximum (term_step)
                need = pdone + 1 if pd == start else pneed
                done = pdone
                if t.dfa_accept[nd]:
                    done += 1
                    nd = start
                for k in range(tr.node_tok_off[i], tr.node_tok_off[i + 1]):
                    w_id[n_w] = tr.tok_ids[k]
                    w_need[n_w] = need
                    n_w += 1
                lvl_d[depth] = nd
                lvl_done[depth] = done
                lvl_need[depth] = need
                i += 1
        order = np.argsort(w_need[:n_w], kind="stable")
        return (np.ascontiguousarray(w_id[:n_w][order]), np.ascontiguousarray(w_need[:n_w][order]),
                leaf_id[:n_leaf].copy(), leaf_byte[:n_leaf].copy(), leaf_done[:n_leaf].copy(),
                leaf_need[:n_leaf].copy(), exit_node[:n_exit].copy(), exit_byte[:n_exit].copy(),
                exit_done[:n_exit].copy(), exit_need[:n_exit].copy())

    cdef SliceEntry profile_entry(self, int32_t term, int32_t dstate, int32_t cls):
        """The entry of count class `cls`, filtered from the profile of (term, dstate)."""
        cdef const Tables* t = &self.t
        cdef int32_t mn = t.term_min[term], mx = t.term_max[term], k, n
        cdef int32_t count = class_count(t, term, cls, self.horizon)
        key = (term, dstate)
        prof = self.profiles.pop(key, None)
        if prof is None:
            prof = self.profile(term, dstate)
        self.profiles[key] = prof
        if len(self.profiles) > MAX_PROFILES:
            self.profiles.popitem(last=False)
        w_id, w_need, leaf_id, leaf_byte, leaf_done, leaf_need, exit_node, exit_byte, \
            exit_done, exit_need = prof
        # units left: a token needing more than that is refused; units to reach the minimum
        left = (1 << 30) if mx == UNBOUNDED else mx - count
        short = mn - count
        n = int(np.searchsorted(w_need, left, side="right"))
        cdef cnp.ndarray[cnp.uint32_t] within = np.zeros(self.n_words, dtype=np.uint32)
        cdef uint32_t* w = <uint32_t*>cnp.PyArray_DATA(within)
        cdef const int32_t* ids = <const int32_t*>cnp.PyArray_DATA(w_id)
        with nogil:
            for k in range(n):
                set_bit(w, ids[k])
        leaves = (leaf_done >= short) & (leaf_need <= left)
        exits = (exit_done >= short) & (exit_need <= left)
        return entry_of_mask(within, exit_node[exits], exit_byte[exits], leaf_id[leaves],
                             leaf_byte[leaves])


cdef inline int32_t find_group(int32_t* group, int32_t n) noexcept nogil:
    while group[n] != n:
        group[n] = group[group[n]]
        n = group[n]
    return n


cdef cnp.ndarray terminal_follow(const Tables* t):
    """Per terminal, 8 words: the bytes that may follow it anywhere (its exits are only
    before those). What follows a rule's end is what follows its calls: the nodes of one
    rule are grouped (an entry joins its node with its target, or with the first frame it
    pushes), and per group, the bytes after each frame that returns into it: the bytes that
    can start at the frame's node, and where that node can end its own rule, what follows
    that rule (a fixpoint over those frames alone). A rule that ends with the stack empty
    ends the structure: no byte follows."""
    cdef int32_t n_nodes = max(t.n_nodes, 1), n, e, k, w, lo, hi, p, g, changed
    cdef int32_t n_pushes = t.entry_push_off[t.n_entries], n_dep = 0
    cdef uint32_t add
    # (numpy's C API: np.zeros runs code a compile otherwise would not fetch)
    cdef cnp.npy_intp[2] dims = [max(t.n_terms, 1), 8]
    follow = cnp.PyArray_ZEROS(2, dims, cnp.NPY_UINT32, 0)
    cdef uint32_t* out = <uint32_t*>cnp.PyArray_DATA(follow)
    cdef int32_t* group = <int32_t*>malloc(n_nodes * sizeof(int32_t))
    # per group, 8 words: what follows its end
    cdef uint32_t* ends = <uint32_t*>calloc(8 * n_nodes, sizeof(uint32_t))
    # per frame whose node can end its rule: (the group it returns into, the node's group)
    cdef int32_t* dep = <int32_t*>malloc(2 * max(n_pushes, 1) * sizeof(int32_t))
    try:
        if group == NULL or ends == NULL or dep == NULL:
            raise MemoryError()
        with nogil:
            for n in range(n_nodes):
                group[n] = n
            for n in range(t.n_nodes):
                for e in range(t.node_entry_off[n], t.node_entry_off[n + 1]):
                    lo = t.entry_push_off[e]
                    p = t.pushes[lo] if t.entry_push_off[e + 1] > lo else t.entry_target[e]
                    group[find_group(group, p)] = find_group(group, n)
            for e in range(t.n_entries):
                lo, hi = t.entry_push_off[e], t.entry_push_off[e + 1]
                for k in range(lo, hi):
                    # the frame pushed returns to node p when the rule it calls ends
                    p = t.pushes[k]
                    g = find_group(group, t.pushes[k + 1] if k + 1 < hi else t.entry_target[e])
                    for w in range(8):
                        ends[8 * g + w] |= t.node_first[8 * p + w]
                    if t.node_end[p]:
                        dep[2 * n_dep] = g
                        dep[2 * n_dep + 1] = find_group(group, p)
                        n_dep += 1
            changed = n_dep > 0
            while changed:
                changed = 0
                for k in range(n_dep):
                    g, p = dep[2 * k], dep[2 * k + 1]
                    for w in range(8):
                        add = ends[8 * p + w] & ~ends[8 * g + w]
                        if add:
                            ends[8 * g + w] |= add
                            changed = 1
            for e in range(t.n_entries):
                n = t.entry_target[e]
                g = find_group(group, n)
                for w in range(8):
                    out[8 * t.entry_term[e] + w] |= t.node_first[8 * n + w]
                    if t.node_end[n]:
                        out[8 * t.entry_term[e] + w] |= ends[8 * g + w]
    finally:
        free(group)
        free(ends)
        free(dep)
    return follow


cdef SliceEntry entry_of_mask(cnp.ndarray within, exit_node, exit_byte, leaf_id, leaf_byte):
    """make_entry with the tokens within the terminal as a bitmask."""
    words = np.flatnonzero(within).astype(np.int32)
    return make_entry(words, np.ascontiguousarray(within[words]), exit_node, exit_byte,
                      leaf_id, leaf_byte)


cdef SliceEntry make_entry(words, bits, exit_node, exit_byte, leaf_id, leaf_byte, full=None):
    """A slice entry from the tokens within the terminal (the nonzero words of their bitmask,
    which it keeps as they are), the trie nodes and tokens where it may end, each with the
    byte after its end (grouped by that byte), and `full`: None or (bits, lo, hi), the nodes
    lo..hi-1 whose tokens and those below them are all within."""
    cdef SliceEntry entry = SliceEntry.__new__(SliceEntry)
    cdef cnp.ndarray full_bits
    nodes = grouped(exit_node, exit_byte, entry.s.exit_off)
    leaves = grouped(leaf_id, leaf_byte, entry.s.leaf_off)
    entry._arrays = (words, bits, nodes, leaves, full)
    set_exit_bytes(&entry.s)
    entry.s.full = NULL
    entry.s.full_lo = entry.s.full_hi = 0
    if full is not None:
        full_bits, entry.s.full_lo, entry.s.full_hi = full
        entry.s.full = <const uint8_t*>cnp.PyArray_DATA(full_bits)
    entry.s.within_words = <int32_t*>cnp.PyArray_DATA(words)
    entry.s.within_bits = <uint32_t*>cnp.PyArray_DATA(bits)
    entry.s.n_within_words = len(words)
    entry.s.exit_nodes = <int32_t*>cnp.PyArray_DATA(nodes)
    entry.s.leaf_ids = <int32_t*>cnp.PyArray_DATA(leaves)
    return entry


cdef cnp.ndarray grouped(items, keys, int32_t* off):
    """`items` (int32) in the order of their `keys` (bytes), with off[b]..off[b + 1] the range
    of key b (see group_by_byte)."""
    item = np.ascontiguousarray(items, dtype=np.int32)
    key = np.ascontiguousarray(keys, dtype=np.uint8)
    out = np.empty(len(item), dtype=np.int32)
    group_by_byte(<const int32_t*>cnp.PyArray_DATA(item), <const uint8_t*>cnp.PyArray_DATA(key),
                  len(item), <int32_t*>cnp.PyArray_DATA(out), off)
    return out


cdef SliceEntry pack_entry(const int32_t* w_id, int32_t n_within, uint32_t* dense,
                           int32_t* x_node, uint8_t* x_byte, int32_t n_exit, const int32_t* l_id,
                           const uint8_t* l_byte, int32_t n_leaf, const uint8_t* full,
                           const int32_t* full_list, int32_t n_marked, const Trie* tr,
                           int32_t n_words):
    """The slice entry of a walk (see SliceCache.walk_terminal), in one block of memory: the
    tokens within as the nonzero words of their bitmask (made in `dense`, n_words words all
    zero, and left so), the exits whose tokens are not all within and the leaves grouped by
    byte, the full flags of the nodes below those exits (`full` per node, the `n_marked`
    nodes flagged in `full_list`)."""
    cdef SliceEntry entry = SliceEntry.__new__(SliceEntry)
    cdef int32_t k, m = 0, x_lo = tr.n_nodes, x_hi = 0, lo = tr.n_nodes, hi = 0, n_full = 0
    cdef int32_t most_words, n_w = 0, word, node
    cdef uint8_t* flags
    for k in range(n_exit):
        if not full[x_node[k]]:
            x_node[m] = x_node[k]
            x_byte[m] = x_byte[k]
            m += 1
    n_exit = m
    for k in range(n_exit):
        x_lo = min(x_lo, x_node[k])
        x_hi = max(x_hi, tr.node_end[x_node[k]])
    # the flags kept: full nodes below the exits left (a walk below an exit asks them)
    for k in range(n_marked):
        node = full_list[k]
        if x_lo <= node < x_hi:
            lo = min(lo, node)
            hi = max(hi, node + 1)
    if hi > lo:
        n_full = (hi - lo + 7) // 8
    # within: each word once, in the order the walk first set a bit of it (the order a mask
    # ORs them in does not matter; no pass over the whole vocabulary)
    most_words = min(n_within, n_words)
    cdef cnp.ndarray store = np.empty(2 * most_words + n_exit + n_leaf + (n_full + 3) // 4,
                                      dtype=np.int32)
    cdef int32_t* words = <int32_t*>cnp.PyArray_DATA(store)
    cdef uint32_t* bits = <uint32_t*>(words + most_words)
    for k in range(n_within):
        word = w_id[k] >> 5
        if dense[word] == 0:
            words[n_w] = word
            n_w += 1
        dense[word] |= (<uint32_t>1) << (w_id[k] & 31)
    for k in range(n_w):
        bits[k] = dense[words[k]]
        dense[words[k]] = 0
    entry._arrays = store
    entry.s.within_words = words
    entry.s.within_bits = bits
    entry.s.n_within_words = n_w
    entry.s.exit_nodes = <int32_t*>(bits + most_words)
    entry.s.leaf_ids = entry.s.exit_nodes + n_exit
    group_by_byte(x_node, x_byte, n_exit, entry.s.exit_nodes, entry.s.exit_off)
    group_by_byte(l_id, l_byte, n_leaf, entry.s.leaf_ids, entry.s.leaf_off)
    set_exit_bytes(&entry.s)
    entry.s.full = NULL
    entry.s.full_lo = entry.s.full_hi = 0
    if n_full:
        flags = <uint8_t*>(entry.s.leaf_ids + n_leaf)
        memset(flags, 0, n_full)
        for k in range(n_marked):
            node = full_list[k] - lo
            if 0 <= node < hi - lo:
                flags[node >> 3] |= 1 << (node & 7)
        entry.s.full = flags
        entry.s.full_lo = lo
        entry.s.full_hi = hi
    return entry


cdef void group_by_byte(const int32_t* items, const uint8_t* keys, int32_t n, int32_t* out,
                        int32_t* off) noexcept:
    """`items` in the order of their `keys` (a stable counting sort) into `out`, with
    off[b]..off[b + 1] the range of key b."""
    cdef int32_t cursor[256]
    cdef int32_t k
    memset(off, 0, 257 * sizeof(int32_t))
    for k in range(n):
        off[keys[k] + 1] += 1
    for k in range(256):
        off[k + 1] += off[k]
    memcpy(cursor, off, sizeof(cursor))
    for k in range(n):
        out[cursor[keys[k]]] = items[k]
        cursor[keys[k]] += 1


cdef void set_exit_bytes(Slice* s) noexcept:
    cdef int k
    memset(s.exit_bytes, 0, sizeof(s.exit_bytes))
    for k in range(256):
        if s.exit_off[k + 1] > s.exit_off[k] or s.leaf_off[k + 1] > s.leaf_off[k]:
            s.exit_bytes[k >> 5] |= (<uint32_t>1) << (k & 31)


cdef tuple entry_arrays(SliceEntry entry):
    """An entry's parts as arrays: (within words, their bits, exit nodes, leaf ids, full
    flags as None or (bits, lo, hi)), the exits and leaves grouped by byte."""
    if isinstance(entry._arrays, tuple):
        return entry._arrays
    cdef cnp.ndarray store = entry._arrays
    cdef int32_t* base = <int32_t*>cnp.PyArray_DATA(store)
    cdef Slice* s = &entry.s
    cdef Py_ssize_t w = s.within_words - base, b = <int32_t*>s.within_bits - base
    cdef Py_ssize_t x = s.exit_nodes - base, l = s.leaf_ids - base
    cdef Py_ssize_t n_x = s.exit_off[256], n_l = s.leaf_off[256]
    full = None
    if s.full != NULL:
        full = (store[l + n_l:].view(np.uint8)[:(s.full_hi - s.full_lo + 7) // 8],
                s.full_lo, s.full_hi)
    return (store[w:w + s.n_within_words], store[b:b + s.n_within_words].view(np.uint32),
            store[x:x + n_x], store[l:l + n_l], full)
