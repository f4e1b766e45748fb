# Cython's view of compiler.py's classes when it compiles that module (setup.py): their
# attributes as C fields, read without a dictionary lookup (the back end reads them in every
# loop). Where the module runs uncompiled (PSE_SANITIZE builds), they are plain classes.

cdef class _Rule:
    cdef public str name
    cdef public tuple base
    cdef public list paths, eps, terms, calls
    cdef public dict edge_paths
    cdef public object start, end
    cdef public set ends
    cdef public bint done


cdef class _Terminal:
    cdef public object dfa, kind, min, max, key, states, lengths, special


cdef class _Compiler:
    cdef public bint share
    cdef public list terminals, rules, keep, guards, pending
    cdef public dict terminal_ids, terminal_of, rule_ids, sizes, guarded, guard_ids, copied



cdef class _Entries:
    cdef public list rules
    cdef public dict base, first_of_rule
    cdef public set nullable, in_progress


cdef class _Fragment:
    cdef public list rules, terminals, guards, node_rows

