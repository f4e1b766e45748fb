# The per-terminal-state slice cache of token masks (the walk from live states: mask.pxd).
#
# A live parser state inside terminal T at DFA state d allows two kinds of tokens:
#  - tokens consumed entirely within T: they depend only on (T, d, count class), not on the
#    stack, so they are computed once per key and cached ("within", a bitmask);
#  - tokens that leave T at some point: T is accepting after a prefix of the token and the
#    next byte starts what follows. Those points ("exit nodes" of the trie, grouped by that
#    byte) are cached too; at mask time only their subtrees are walked, with the live context.
# Inside a JSON string nearly every token is "within"; only the few thousand tokens holding a
# quote after string characters are walked.
# An exit node with a large subtree (after a blank: every token " name...") is not walked
# either: each state the exit leads to is a "job", a root of its own below that node, with
# a cached entry of that subtree (the same kind of entry, keyed by the node too).

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t

from pse._core.structure cimport CompiledStructure, PState, Tables
from pse._core.trie cimport TokenTrie


ctypedef struct Slice:
    int32_t* within_words         # the non-zero words of the "within" bitmask: their indices
    uint32_t* within_bits         # ... and their bits
    int32_t n_within_words
    int32_t exit_off[257]         # exit_nodes[exit_off[b]:exit_off[b + 1]]: exits on byte b
    int32_t* exit_nodes           # exit nodes that have children (their subtrees are walked)
    int32_t leaf_off[257]         # leaf_ids[leaf_off[b]:...]: tokens that end at an exit node
    int32_t* leaf_ids
    uint32_t exit_bytes[8]        # bytes with any exit
    const uint8_t* full           # bit (i - full_lo) set: the tokens at node i and below it
    int32_t full_lo               # are all within (a walk below an exit skips them); NULL:
    int32_t full_hi               # no such node below an exit


cdef class SliceEntry:
    cdef Slice s
    cdef object _arrays           # what owns the memory of `s`: its arrays, or one block of
                                  # them all (see entry_arrays)
    cdef int64_t plan_epoch       # the plan (Matcher.plan) that last made this entry a job ...
    cdef int32_t plan_group       # ... and the first job of its group there


# Slots of the table of subtree entries looked up last (SliceCache.recent): a mask may plan
# hundreds of jobs, and finding each in the LRU costs more than the rest of the plan.
cdef enum:
    RECENT_SLOTS = 4096


cdef class SliceCache:
    # the structure's tables, a copy whose memory is `tables_memory` (its arrays) and the lists
    # the entries read: not the structure, which holds this cache (a cycle would leave both to
    # the garbage collector, and the structure's tables with them); `structure` is a weakref
    cdef Tables t
    cdef object tables_memory
    cdef list terminal_keys
    cdef list terminal_states
    cdef object structure_ref
    cdef readonly TokenTrie trie
    cdef readonly int32_t n_words
    cdef dict entries
    cdef object _follow
    cdef uint32_t* follow          # 8 words per terminal: bytes that may follow it anywhere
    cdef int32_t horizon           # no token is longer than this many bytes
    cdef object masks              # recent whole masks by live state set (an exact memo)
    cdef readonly int max_masks
    # the vocabulary, as the matcher needs it per token
    cdef readonly int32_t vocab_size
    cdef tuple tokens              # bytes of each id (None: no token)
    cdef object _token_kind
    cdef const uint8_t* token_kind # TOKEN_TEXT, TOKEN_EOS or TOKEN_OTHER (special, or no token)
    cdef object _eos
    cdef const int32_t* eos_ids
    cdef int32_t n_eos

    cdef readonly dict special_ids      # {terminal: token id} of the SpecialTokens named
    cdef readonly dict special_terms_of # {token id: [terminals naming it]}
    cdef object profiles           # count profiles of counted terminal states (a small LRU)
    cdef dict risky                # see risky_of
    cdef object _kinds_below       # the trie's kinds of bytes below each node
    cdef object _loop_kinds        # per DFA state: the kinds it loops on (-1: not found yet)
    cdef object _large_memo        # where fewer than half the bytes are some terminal's:
                                   # which trie nodes are large (see mask.large_subtree)
    cdef object subtrees           # entries below large exit nodes (an LRU): see plan
    # ... the last looked up, by a hash of their key: (term, dstate, count class, node) and
    # the entry per slot; made at the first look-up (64 KiB a structure that may never mask)
    cdef int32_t* recent_keys
    cdef list recent

    cdef SliceEntry get(self, const PState* s)
    cdef SliceEntry entry(self, int32_t term, int32_t dstate, int32_t cls)
    cdef SliceEntry derive(self, int32_t term, SliceEntry base, tuple ends)
    cdef SliceEntry build(self, int32_t term, int32_t dstate, int32_t count)
    cdef SliceEntry walk_entry(self, int32_t term, int32_t dstate, int32_t count, int32_t node)
    cdef SliceEntry walk_terminal(self, int32_t term, int32_t dstate, int32_t count, int32_t node,
                                  tuple buffers)
    cdef SliceEntry subtree_entry(self, const PState* s, int32_t node)
    cdef tuple profile(self, int32_t term, int32_t dstate)
    cdef SliceEntry profile_entry(self, int32_t term, int32_t dstate, int32_t count)
    cdef tuple risky_of(self, const PState* s, SliceEntry entry, bint after_zero)


cdef inline void set_bit(uint32_t* out, int32_t i) noexcept nogil:
    out[i >> 5] |= (<uint32_t>1) << (i & 31)


# A token's kind, as the matcher needs it (SliceCache.token_kind).
cdef enum:
    TOKEN_TEXT = 0
    TOKEN_EOS = 1
    TOKEN_OTHER = 2
