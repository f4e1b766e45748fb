# Token masks: the vocabulary-trie walk from live states, with the slice cache
# (slices.pxd).
#
# A mask ORs, per live state, its slice entry's "within" tokens, and walks the trie below
# the entry's exit nodes with the live context; exits into large subtrees become jobs.

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t

from pse._core.structure cimport (
    Arena, CompiledStructure, Ctx, PState, Scratch, SeenStore, StateSet, Tables, UnionBytes,
    WalkMerging,
)
from pse._core.slices cimport Slice, SliceCache, SliceEntry
from pse._core.trie cimport TokenTrie, Trie


# What one walk needs, in C, so that walks of several engines can run in threads at once.
ctypedef struct Walker:
    const Tables* tables
    Arena* arena
    const Trie* trie
    uint32_t* large_memo           # where fewer than half the bytes are some terminal's:
                                   # large_subtree's answers so far (the cache's; else NULL)
    const uint16_t* kinds_below    # the kinds of bytes below each trie node (byte_kinds) ...
    int16_t* loop_kinds            # ... and per DFA state, those it loops on (-1: not found yet)
    StateSet* levels               # one state set per trie depth
    int32_t* marks                 # scratch-frame mark per trie depth
    uint32_t* level_bytes          # per trie depth, 8 words: the bytes its set can take next
    uint8_t* level_filtered        # ... where known (see walk_subtree)
    int32_t n_levels
    Scratch scratch                # frames pushed during the walk; dropped after it
    StateSet roots                 # live states, each inside (or before) a terminal
    StateSet seed                  # the states an exit byte leads to (see Matcher.plan) ...
    StateSet ended                 # ... and those of them whose terminal ended on it
    Slice** slices                 # the cache entry of each root
    int32_t* root_group            # the first root with the same entry (walked as one group,
    int32_t* root_next             # as jobs are: see add_job), and the next one (-1: none)
    int32_t* plan_from             # per root: its exits into subtrees this large are jobs
    int64_t taken                  # subtrees walk_subtree took at once (see finish)
    int32_t slices_cap
    # jobs: states that start below a large exit node, each with that subtree's entry; the
    # jobs of one entry form a group, walked as one (the union of their states)
    PState* jobs
    Slice** job_slices
    int32_t* job_plan_from
    int32_t* job_group             # the first job of each job's group
    int32_t* job_next              # the next job of the group (-1: none)
    int32_t* job_slots             # the jobs by a hash of (state, group) (-1: empty), so
    int32_t n_job_slots            # that a group takes a state once (a power of two)
    int32_t n_jobs
    int32_t jobs_cap
    # unique arrays: a step may depend on the bytes before it (see structure.pxd)
    SeenStore* seen_kept           # items closed by committed tokens
    SeenStore seen                 # items closed during the walk; dropped after it
    uint8_t* text                  # the committed bytes, then the trie path being walked
    int64_t text_cap
    int64_t base                   # where a token's first byte goes in `text`
    uint8_t* unique                # per root: it is in a unique array, where a token within
                                   # its terminal may close an item: see walk_unique_root
    const uint32_t** risky_bits    # ... per root: the "within" tokens to check one by one
    const int32_t** risky_nodes    # ... as trie nodes
    int32_t* n_risky
    WalkMerging merging            # whether the walks merge their sets (see structure.step_set)
    UnionBytes exits               # the exit bytes of the arena's unions met, kept for every
                                   # mask (see structure.union_bytes_of)
    int32_t walk_from              # scratch frames when the last walk began


cdef int walk(Walker* w, uint32_t* out) except -1 nogil
cdef int walk_subtree(Walker* w, const StateSet* seed, int32_t node, uint32_t* out,
                      const Slice* known) except -1 nogil


cdef class Matcher:
    cdef readonly SliceCache cache
    cdef CompiledStructure structure
    cdef StateSet live
    cdef list history              # snapshots of `live` before each committed token
    cdef readonly bint finished    # an EOS token was committed
    cdef Py_ssize_t eos_at         # ... as the eos_at-th committed token
    cdef Walker w                  # buffers of the walk, reused from mask to mask
    cdef list _keep                # keeps the entries behind `w.slices` alive during a walk
    cdef bint root_accepting
    cdef bint busy                 # a walk of `w` is under way (possibly in another thread)
    cdef readonly bytes text       # unique arrays: the bytes committed (else empty)
    cdef list text_lengths         # len(text) before each committed token
    cdef list special_hits         # the special token ids the live states allow (prepare)
    cdef int64_t plan_epoch        # this matcher's last plan (see SliceEntry.plan_epoch)

    cdef int push_history(self, bytes data, object text=*) except -1
    cdef int load_text(self, bytes extra) except -1
    cdef int claim(self) except -1
    cdef int compute(self, uint32_t* out) except -1
    cdef object lookup_memo(self, uint32_t* out)
    cdef int prepare(self) except -1
    cdef int prepare_special(self, Ctx* c) except -1
    cdef int plan(self, Ctx* c) except -1
    cdef int plan_group(self, Ctx* c, bint jobs, int32_t start, int32_t lo, const Slice* sl,
                        int32_t smallest) except -1
    cdef int add_jobs(self, Ctx* c, const Slice* sl, int32_t b, int32_t smallest) except -1
    cdef int seed_jobs(self, const Slice* sl, int32_t b, int32_t smallest) except -1
    cdef int add_job(self, const PState* s, int32_t node) except -1
    cdef int grow_job_slots(self) except -1
    cdef int finish(self, object key, uint32_t* out) except -1
