"""UTF-8 range splitting and determinization against brute force."""

import gc

import numpy as np
import pytest
from hypothesis import given, strategies as st

from pse import automaton, products
from pse.errors import GrammarError
from pse._core.automata import moore_blocks, quotient, trimmed
from pse._core.key_names import names_product, punched_row, trie_add
from pse._core.structure import class_cuts, pack_dfas

code_points = st.integers(0, automaton.MAX_CODE_POINT).filter(
    lambda c: not automaton.SURROGATES[0] <= c <= automaton.SURROGATES[1])


def _seq_matches(seq, data: bytes) -> bool:
    return len(seq) == len(data) and all(lo <= b <= hi for (lo, hi), b in zip(seq, data))


@given(code_points, code_points, st.lists(code_points, min_size=1, max_size=20))
def test_utf8_sequences_cover_exactly_the_range(a, b, probes):
    lo, hi = min(a, b), max(a, b)
    if lo <= automaton.SURROGATES[1] and hi >= automaton.SURROGATES[0]:
        return  # ranges given to utf8_sequences never contain surrogates
    seqs = list(automaton.utf8_sequences(lo, hi))
    for cp in probes + [lo, hi, lo + 1, hi - 1, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000]:
        if automaton.SURROGATES[0] <= cp <= automaton.SURROGATES[1] or not 0 <= cp <= 0x10FFFF:
            continue
        data = chr(cp).encode("utf-8")
        assert any(_seq_matches(s, data) for s in seqs) == (lo <= cp <= hi), (lo, hi, cp)


@given(st.lists(st.tuples(code_points, code_points).map(sorted), min_size=1, max_size=4),
       st.lists(code_points, max_size=20))
def test_char_class_is_deterministic_and_exact(ranges, probes):
    """A class is one deterministic piece of NFA (no state with two edges on one byte, no
    epsilon edge before its end), matching exactly its code points."""
    nfa = automaton.NFA()
    start, end = automaton.char_class(nfa, ranges)
    for s, row in enumerate(nfa.edges):
        cover = sorted((lo, hi) for lo, hi, _ in row)
        assert all(a[1] < b[0] for a, b in zip(cover, cover[1:])), s
        assert not nfa.eps[s] or all(t == end for t in nfa.eps[s]), s
    dfa = automaton.determinize(nfa, (start, end))
    for cp in probes + [lo for lo, _ in ranges] + [hi for _, hi in ranges]:
        assert dfa.matches(chr(cp).encode()) == any(lo <= cp <= hi for lo, hi in ranges), cp


@given(st.lists(st.lists(st.tuples(code_points, code_points).map(sorted), min_size=1,
                         max_size=3), min_size=1, max_size=4),
       st.lists(st.lists(code_points, min_size=1, max_size=5), max_size=20))
def test_concatenated_classes(classes, probes):
    """`concatenate` of one-character DFAs is deterministic, minimal (equal to what minimize makes
    of it) and matches exactly a character of each class, one after the other."""
    parts = []
    for ranges in classes:
        nfa = automaton.NFA()
        parts.append(automaton.minimize(
            automaton.determinize(nfa, automaton.char_class(nfa, ranges))))
    dfa = automaton.concatenate(parts)
    assert dfa.n_states == automaton.minimize(dfa).n_states
    words = probes + [[lo for lo, _ in ranges] for ranges in classes[:1]] \
        + [[ranges[0][1] for ranges in classes]]
    for word in words:
        expected = len(word) == len(classes) and all(
            any(lo <= cp <= hi for lo, hi in ranges) for cp, ranges in zip(word, classes))
        assert dfa.matches("".join(map(chr, word)).encode()) == expected, word


def test_concatenate_refuses_a_part_that_goes_on_after_a_word():
    nfa = automaton.NFA()
    runs = automaton.minimize(automaton.determinize(
        nfa, automaton.plus(nfa, automaton.byte_class(nfa, [(97, 97)]))))
    with pytest.raises(ValueError, match="one accepting state"):
        automaton.concatenate([runs])


def test_char_class_dfa_rejects_invalid_utf8_and_surrogates():
    nfa = automaton.NFA()
    dfa = automaton.determinize(nfa, automaton.char_class(nfa, [(0, 0x10FFFF)]))
    for cp in [0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]:
        assert dfa.matches(chr(cp).encode())
    for bad in [b"\xed\xa0\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80", b"\xff"]:
        assert not dfa.matches(bad)


def test_minimize_keeps_language():
    nfa = automaton.NFA()
    frag = automaton.alternation(nfa, [automaton.literal(nfa, w) for w in
                                       (b"hello", b"help", b"hell", b"yellow")])
    dfa = automaton.determinize(nfa, frag)
    for w in [b"hello", b"help", b"hell", b"yellow"]:
        assert dfa.matches(w)
    for w in [b"hel", b"helps", b"yell", b""]:
        assert not dfa.matches(w)


def test_complement():
    assert automaton.complement([(0, 0x10FFFF)]) == []
    comp = automaton.complement([(ord("a"), ord("z"))])
    assert (0, ord("a") - 1) in comp
    assert all(not (lo <= 0xD800 <= hi) for lo, hi in comp)


def _words(alphabet, max_len):
    """Every word over `alphabet` of at most `max_len` bytes."""
    words, layer = [b""], [b""]
    for _ in range(max_len):
        layer = [w + bytes([a]) for w in layer for a in alphabet]
        words += layer
    return words


def _check_minimize(dfa: automaton.DFA, rounds: int, alphabet: range, max_len: int) -> None:
    """`dfa` minimized with `rounds` of Moore's refinement before Hopcroft's: it accepts the
    same words over `alphabet` (all up to `max_len`), its rows merge adjacent ranges into one
    state (a DFA of one state is returned as it is), and no two of its states accept the same
    words (brute force over words up to its size)."""
    if not dfa.accept[0] and not dfa.trans[0]:
        return  # the empty language
    saved = automaton._MOORE_ROUNDS
    automaton._MOORE_ROUNDS = rounds
    try:
        small = automaton.minimize(dfa)
    finally:
        automaton._MOORE_ROUNDS = saved
    words = _words(alphabet, max_len)
    assert [small.matches(w) for w in words] == [dfa.matches(w) for w in words]
    for row in small.trans if dfa.n_states > 1 else ():  # (one state: returned as it is)
        # rows in one form: adjacent ranges into one state are one range
        assert all(a[2] != b[2] or a[1] + 1 < b[0] for a, b in zip(row, row[1:])), row

    def language(s):
        out = []
        for w in _words(alphabet, small.n_states):
            t = s
            for b in w:
                t = small.next(t, b)
                if t < 0:
                    break
            out.append(t >= 0 and small.accept[t])
        return tuple(out)

    assert len({language(s) for s in range(small.n_states)}) == small.n_states


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(-1, n - 1), min_size=3, max_size=3), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n))), st.sampled_from([0, 1, 12]))
def test_minimize_is_minimal_and_keeps_language(graph, rounds):
    """Random DFAs over bytes 0-2 (words up to length 7), whichever of Moore's rounds and
    Hopcroft's refinement finished the partition (see _check_minimize)."""
    table, accept = graph
    trans = [[(b, b, t) for b, t in enumerate(row) if t >= 0] for row in table]
    _check_minimize(automaton.trim(automaton.DFA(trans, accept)), rounds, range(3), 7)


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(-1, n - 1), min_size=3, max_size=3), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_trim_keeps_language_and_only_useful_states(graph):
    """Random DFAs over bytes 0-2 with dead ends and unreachable states: the trimmed one
    accepts the same words (all up to length 6), each of its states is reached from the start
    and reaches an accepting state, `kept` names each one's old state (same acceptance, and
    the same row up to renumbering), and the states come in BFS order from the start."""
    table, accept = graph
    dfa = automaton.DFA([[(b, b, t) for b, t in enumerate(row) if t >= 0] for row in table],
                        accept)
    kept: list[int] = []
    small = automaton.trim(dfa, kept)
    words = _words(range(3), 6)
    assert [small.matches(w) for w in words] == [dfa.matches(w) for w in words]
    if not any(small.accept):
        assert small.n_states == 1 and not small.trans[0]  # the empty language
        return
    assert kept[0] == 0 and len(set(kept)) == len(kept) == small.n_states
    assert all(automaton.live_states(small))
    order, seen = [0], {0}
    for s in order:  # BFS from the start reaches every state, in their numbering's order
        for _, _, t in small.trans[s]:
            if t not in seen:
                seen.add(t)
                order.append(t)
    assert order == list(range(small.n_states))
    for s, old in enumerate(kept):
        assert small.accept[s] == dfa.accept[old]
        assert [(lo, hi, kept[t]) for lo, hi, t in small.trans[s]] == \
            [e for e in dfa.trans[old] if e[2] in kept]


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(-1, n - 1), min_size=3, max_size=3), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_live_states_against_brute_force(graph):
    """A state is live when some word (of at most n bytes, n states) leads it to an
    accepting state."""
    table, accept = graph
    dfa = automaton.DFA([[(b, b, t) for b, t in enumerate(row) if t >= 0] for row in table],
                        accept)

    def reaches_accept(s):
        for w in _words(range(3), dfa.n_states):
            t = s
            for b in w:
                t = dfa.next(t, b)
                if t < 0:
                    break
            if t >= 0 and dfa.accept[t]:
                return True
        return False

    assert automaton.live_states(dfa) == [reaches_accept(s) for s in range(dfa.n_states)]


@given(st.lists(st.binary(max_size=4), max_size=6))
def test_trie_add_against_a_set_of_words(words):
    """`trie_add` builds a trie whose marked nodes are exactly the words added (each word's
    path read back byte by byte), sharing prefixes: a node per distinct prefix."""
    trans, ends = [{}], [False]
    for w in words:
        node = trie_add(trans, ends, w)
        assert ends[node]
    prefixes = {w[:k] for w in words for k in range(len(w) + 1)} | {b""}
    assert len(trans) == len(ends) == len(prefixes)
    for p in prefixes:
        s = 0
        for b in p:
            s = trans[s][b]
        assert ends[s] == (p in words)


@st.composite
def _punch_cases(draw):
    """A row of joined byte ranges over bytes 0-15 and some of the bytes it covers, each sent
    to a target (-1: nowhere)."""
    cuts = sorted(set(draw(st.lists(st.integers(1, 15), max_size=6))) | {0, 16})
    row: list[tuple[int, int, int]] = []
    for lo, nxt in zip(cuts, cuts[1:]):
        t = draw(st.integers(-1, 3))
        if t < 0:
            continue
        if row and row[-1][2] == t and row[-1][1] == lo - 1:
            row[-1] = (row[-1][0], nxt - 1, t)
        else:
            row.append((lo, nxt - 1, t))
    covered = [b for lo, hi, _ in row for b in range(lo, hi + 1)]
    if not covered:
        return tuple(row), []
    picked = draw(st.lists(st.sampled_from(covered), min_size=1, max_size=4, unique=True))
    kids = [(b, draw(st.integers(-1, 6))) for b in sorted(picked)]
    return tuple(row), kids


@given(_punch_cases())
def test_punched_row_against_a_byte_table(case):
    """`punched_row` (a key state's row with the bytes of a trie node's children redirected)
    equals the row read back from a 16-byte table with those bytes rewritten, neighbouring
    bytes into one target joined into a range."""
    row, kids = case
    table = [-1] * 16
    for lo, hi, t in row:
        table[lo:hi + 1] = [t] * (hi - lo + 1)
    for b, t in kids:
        table[b] = t
    expected: list[tuple[int, int, int]] = []
    for b, t in enumerate(table):
        if t < 0:
            continue
        if expected and expected[-1][2] == t and expected[-1][1] == b - 1:
            expected[-1] = (expected[-1][0], b, t)
        else:
            expected.append((b, b, t))
    assert punched_row(row, kids) == tuple(expected)


@st.composite
def _range_dfas(draw):
    """Trimmed random DFAs over bytes 0-7 whose edges are byte ranges."""
    n = draw(st.integers(1, 4))
    trans = []
    for _ in range(n):
        cuts = sorted(set(draw(st.lists(st.integers(1, 7), max_size=3))) | {0, 8})
        row = []
        for lo, nxt in zip(cuts, cuts[1:]):
            t = draw(st.integers(-1, n - 1))
            if t >= 0:
                row.append((lo, nxt - 1, t))
        trans.append(row)
    accept = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return automaton.trim(automaton.DFA(trans, accept))


@given(_range_dfas(), st.sampled_from([0, 1, 12]))
def test_minimize_with_range_edges_is_minimal_and_keeps_language(dfa, rounds):
    """Random DFAs whose edges are byte ranges cut at different places (one edge covers
    several byte classes), words over bytes 0-7 up to length 4 (see _check_minimize)."""
    _check_minimize(dfa, rounds, range(8), 4)


@given(_range_dfas(), _range_dfas())
def test_intersect_and_difference_against_brute_force(a, b):
    """Products of automata with range edges cut at different places: every word of up to 4
    bytes over 0-7 is in the intersection / difference exactly when `matches` says so; each
    is trimmed, its states in BFS order (as `automaton.trim` makes them: the same rows)."""
    both, minus = products.intersect(a, b), products.difference(a, b)
    for made in (both, minus):
        again = automaton.trim(made)
        assert (again.trans, again.accept) == (made.trans, made.accept)
        assert all(automaton.live_states(made)) or made.n_states == 1
    for w in _words(range(8), 4):
        assert both.matches(w) == (a.matches(w) and b.matches(w)), w
        assert minus.matches(w) == (a.matches(w) and not b.matches(w)), w


def test_a_product_past_its_bound_is_a_clear_error(monkeypatch):
    """A product that would pass MAX_PRODUCT_STATES raises GrammarError naming the bound;
    one that reaches it exactly is made. ([ab]{0,7} against itself: a pair per length.)"""
    chain = automaton.DFA([[(97, 98, i + 1)] for i in range(7)] + [[]], [True] * 8)
    other = automaton.DFA([[(97, 98, i + 1)] for i in range(7)] + [[]], [True] * 8,
                          key="other")  # (not found in the cache of products)
    monkeypatch.setattr(products, "MAX_PRODUCT_STATES", 7)
    with pytest.raises(GrammarError, match="MAX_PRODUCT_STATES"):
        products.intersect(chain, other)
    monkeypatch.setattr(products, "MAX_PRODUCT_STATES", 8)
    both = products.intersect(chain, other)
    assert both.n_states == 8 and both.matches(b"ab" * 3) and not both.matches(b"a" * 8)


def test_products_are_computed_once_per_content():
    """Operands equal in content (not the same objects) give the very product made before:
    a schema whose unions multiply out intersects the same automata in every copy of an
    object. An intersection and a difference of the same operands stay apart."""
    def make():
        letters = automaton.DFA([[(97, 122, 0)]], [True])  # [a-z]*
        short = automaton.DFA([[(97, 98, 1)], [(97, 98, 2)], []], [True, True, True])
        return letters, short

    (a1, b1), (a2, b2) = make(), make()
    assert a1 is not a2 and a1.key() == a2.key()
    both = products.intersect(a1, b1)
    assert products.intersect(a2, b2) is both
    minus = products.difference(a2, b2)
    assert minus is not both
    assert [both.matches(w) for w in (b"", b"ab", b"abb", b"c")] == [True, True, False, False]
    assert [minus.matches(w) for w in (b"", b"ab", b"abb", b"c")] == [False, False, True, True]


def test_transitions_are_not_tracked_by_the_garbage_collector():
    """A DFA's rows and ranges are tuples of ints, which no collection needs to scan (each
    collection after a compile would scan thousands of them); a row holding anything else
    stays tracked, and the frozen rows equal the rows given."""
    rows = [[(97, 98, 1), (99, 99, 0)], []]
    dfa = automaton.DFA(rows, [False, True])
    assert dfa.trans == (((97, 98, 1), (99, 99, 0)), ())
    tuples = [dfa.trans, *dfa.trans, *dfa.trans[0]]
    assert not any(gc.is_tracked(t) for t in tuples)
    odd = automaton.DFA([[(97, 98, 1)], [(1, 2, [3])]], [False, True])  # (not a real DFA)
    assert gc.is_tracked(odd.trans) and gc.is_tracked(odd.trans[1])
    assert gc.is_tracked(odd.trans[1][0]) and not gc.is_tracked(odd.trans[0])
    # nor are the automaton, its acceptance and its key, which then hold only such tuples;
    # one holding a tracked row stays tracked
    assert not any(gc.is_tracked(x) for x in (dfa, dfa.accept, dfa.key()))
    assert gc.is_tracked(odd) and gc.is_tracked(odd.key())
    # rows frozen already are kept as they are
    assert automaton.DFA(dfa.trans, dfa.accept).trans is dfa.trans
    again = automaton.DFA([dfa.trans[0], [(97, 97, 0)]], [False, True])
    assert again.trans[0] is dfa.trans[0] and not gc.is_tracked(again.trans[1])
    # a name given for the key (of strings, bytes and tuples) is the key, untracked like the
    # rows; one holding a list keeps the automaton tracked
    named = automaton.DFA(rows, [False, True], key=("name", b"\x01", ("a", "b")))
    assert named.key() == ("name", b"\x01", ("a", "b"))
    assert not gc.is_tracked(named) and not gc.is_tracked(named.key())
    assert gc.is_tracked(automaton.DFA(rows, [False, True], key=("name", [1])))


def test_cache_entries_of_untracked_parts_are_untracked():
    """A cache's key and value tuples holding only untracked objects (automata, frozen rows,
    strings) need no collection; one holding a dict (which the collector may track again) or
    a tracked object stays tracked, as do the objects themselves."""
    from pse.bounded_cache import BoundedCache

    class Tracked:  # (hashable, and tracked by the collector)
        pass

    dfa = automaton.DFA([[(97, 97, 1)], []], [False, True])
    other = Tracked()
    cache = BoundedCache(8)
    entries = {("a", (dfa.key(), 1)): (dfa, None), ("b",): (dfa, {}), ("c",): (dfa, [1]),
               ("d", other): (1, 2)}
    for key, value in entries.items():
        cache.put(key, value)
    tracked = {key: (gc.is_tracked(key), gc.is_tracked(value)) for key, value in entries.items()}
    assert tracked == {("a", (dfa.key(), 1)): (False, False), ("b",): (False, True),
                       ("c",): (False, True), ("d", other): (True, False)}
    assert cache.get(("a", (dfa.key(), 1)))[0] is dfa


def test_untracking_leaks_no_cycle():
    """Only objects that stay untracked let a cache's tuple go untracked: a running frame is
    untracked until it returns (a cycle through the tuple would never be collected), and a
    subclass of DFA may hold anything, so it stays tracked."""
    import sys
    import weakref

    from pse.bounded_cache import BoundedCache

    class Canary:
        pass

    def put_frame(cache):
        canary = Canary()
        cache.put(("k", sys._getframe()), 1)  # frame -> canary; the tuple -> frame
        return weakref.ref(canary)

    cache = BoundedCache(1)
    canary = put_frame(cache)
    cache.put("other", 2)  # the tuple, the frame and the canary are garbage: a cycle
    gc.collect()
    assert canary() is None

    class Sub(automaton.DFA):
        pass

    sub = Sub([[(97, 97, 1)], []], [False, True])
    assert gc.is_tracked(sub)
    other = Canary()
    sub.extra, other.back = other, sub
    other = weakref.ref(other)
    del sub
    gc.collect()
    assert other() is None


@given(_range_dfas())
def test_start_moved_automata_against_brute_force(dfa):
    """The compiler's `_without_empty` (the language less the empty word) and
    `_without_reentry` (the same language) leave no edge into the start (every word up to 3
    bytes over 0-8), keep each row no edge of which enters the start (the same tuple), and
    keep the byte classes' cuts."""
    from pse.compiler import _without_empty, _without_reentry

    for moved, empty in ((_without_empty(dfa), False), (_without_reentry(dfa), dfa.accept[0])):
        assert not any(t == 0 for row in moved.trans for _, _, t in row)
        for w in _words(range(9), 3):
            assert moved.matches(w) == (dfa.matches(w) and (bool(w) or empty)), w
        assert (moved.cuts() == class_cuts(moved.trans)).all()
        assert all(moved.trans[s] is row for s, row in enumerate(dfa.trans)
                   if all(t for _, _, t in row))


@given(_range_dfas(), st.lists(st.integers(0, 8), min_size=1, max_size=3).map(bytes))
def test_then_literal_against_brute_force(dfa, data):
    """`then_literal` accepts exactly a word of `dfa` followed by `data` (every split of every
    word up to 5 bytes over 0-8); built directly (byte 8 is on no edge) or through the
    subset construction, a minimal `dfa` stays minimal."""
    if not dfa.accept[0] and not dfa.trans[0]:
        return  # the empty language
    dfa = automaton.minimize(dfa)
    both = automaton.then_literal(dfa, data)
    for w in _words(range(9), 5):
        expected = w.endswith(data) and dfa.matches(w[:len(w) - len(data)])
        assert both.matches(w) == expected, w
    assert both.n_states == automaton.minimize(both).n_states


@given(_range_dfas(), _range_dfas())
def test_then_run_against_brute_force(dfa, word):
    """`then_run(dfa, run)` with run = `word`* accepts exactly a word of `dfa` followed by any
    words of `word` (every word up to 5 bytes over 0-7), or is None exactly where an accepting
    state of `dfa` has an edge on a byte that starts a text of the run."""
    if not dfa.accept[0] and not dfa.trans[0] or not word.trans[0]:
        return  # the empty language, or a run of nothing but the empty text
    nfa = automaton.NFA()
    run = automaton.determinize(nfa, automaton.star(nfa, automaton.embed(nfa, word)))
    both = automaton.then_run(dfa, run)
    starts = {b for lo, hi, _ in run.trans[0] for b in range(lo, hi + 1)}
    clash = any(acc and any(lo <= b <= hi for lo, hi, _ in row for b in starts)
                for row, acc in zip(dfa.trans, dfa.accept))
    assert (both is None) == clash
    if both is None:
        return
    for w in _words(range(8), 5):
        expected = any(dfa.matches(w[:k]) and run.matches(w[k:]) for k in range(len(w) + 1))
        assert both.matches(w) == expected, w


def _repeated_by_subset_construction(unit, lo, hi):
    nfa = automaton.NFA()
    parts = [automaton.embed(nfa, unit) for _ in range(lo)]
    if hi is None:
        parts.append(automaton.star(nfa, automaton.embed(nfa, unit)))
    else:
        tail = None
        for _ in range(hi - lo):
            one = automaton.embed(nfa, unit)
            tail = automaton.optional(nfa, one if tail is None
                                      else automaton.concat(nfa, [one, tail]))
        if tail is not None:
            parts.append(tail)
    return automaton.determinize(nfa, automaton.concat(nfa, parts))


def test_repeat_unit_is_the_subset_constructions_minimal_dfa():
    from pse.json_value import JsonStringContent

    unit = JsonStringContent().unit_dfa()
    for lo, hi in [(lo, hi) for hi in range(8) for lo in range(hi + 1)] + [
            (lo, None) for lo in range(8)] + [(3, 20), (20, None)]:
        direct = automaton.repeat_unit(unit, lo, hi)
        built = _repeated_by_subset_construction(unit, lo, hi)
        assert (direct.trans, direct.accept) == (built.trans, built.accept), (lo, hi)


def test_repeat_unit_refuses_a_unit_it_cannot_chain():
    # two accepting states; an edge out of the accepting state; an edge back into the start
    for trans, accept in [([[(97, 97, 1), (98, 98, 2)], [], []], [False, True, True]),
                          ([[(97, 97, 1)], [(98, 98, 1)]], [False, True]),
                          ([[(97, 97, 1)], [(98, 98, 0), (99, 99, 2)], []],
                           [False, False, True])]:
        with pytest.raises(ValueError, match="repeat_unit"):
            automaton.repeat_unit(automaton.DFA(trans, accept), 1, 3)


def _spread(dfa: automaton.DFA) -> automaton.DFA:
    """The same automaton over bytes 0-255: byte k's edges cover 32k to 32k + 31."""
    return automaton.DFA([[(32 * lo, 32 * hi + 31, t) for lo, hi, t in row]
                          for row in dfa.trans], dfa.accept)


@given(st.lists(st.tuples(_range_dfas(), st.booleans()), min_size=1, max_size=4))
def test_packed_automata_against_their_dense_tables(drawn):
    """pack_dfas reads the ranges: every byte's target in the packed table is the dense
    table's, and the byte classes are as few as that allows; each DFA's cuts are where its
    dense table's columns change."""
    dfas = [_spread(d) if wide else d for d, wide in drawn]
    packed = pack_dfas([d.trans for d in dfas], [d.accept for d in dfas],
                       [d.cuts() for d in dfas])
    n_classes, byte_class = packed["n_classes"], packed["byte_class"]
    trans = packed["dfa_trans"].reshape(-1, n_classes)
    denses = [d.dense() for d in dfas]
    changes = {b for dense in denses for b in range(1, 256)
               if (dense[:, b] != dense[:, b - 1]).any()}
    assert n_classes == 1 + len(changes)
    off = 0
    for k, (dfa, dense) in enumerate(zip(dfas, denses)):
        cuts = (dense[:, 1:] != dense[:, :-1]).any(axis=0)
        assert list(dfa.cuts()) == [False, *cuts]
        assert packed["term_start"][k] == off
        for s in range(dfa.n_states):
            want = np.where(dense[s] >= 0, dense[s] + off, -1)
            assert (trans[off + s][byte_class] == want).all()
            assert packed["dfa_accept"][off + s] == dfa.accept[s]
            assert packed["dfa_final"][off + s] == (dfa.accept[s] and not dfa.trans[s])
        first = np.unpackbits(packed["term_first"][8 * k:8 * k + 8].view(np.uint8),
                              bitorder="little").astype(bool)
        assert (first == (dense[0] >= 0)).all()
        off += dfa.n_states


def test_c_automaton_helpers_refuse_targets_out_of_range():
    """The C helpers index arrays by a row's targets, and rows by the bytes punched, without
    bounds checks: a target past the automaton's states, or a byte in no range of the row, is
    a ValueError, not a stray read or write."""
    with pytest.raises(ValueError, match="state 5"):
        trimmed([[(0, 0, 5)]], [True])
    with pytest.raises(ValueError, match="state 2"):
        automaton.live_states(automaton.DFA([[(0, 0, 2)], []], [False, True]))
    with pytest.raises(ValueError, match="state -1"):
        moore_blocks([[(0, 0, -1)], []], [True, False], 3, lambda: None)
    with pytest.raises(ValueError, match="state 7"):
        quotient([[(0, 0, 7)], []], [True, False], [0, 1])
    with pytest.raises(ValueError, match="blocks"):
        quotient([[(0, 0, 1)], []], [True, False], [0])
    with pytest.raises(ValueError, match="no range"):
        punched_row((), [(3, 1)])
    with pytest.raises(ValueError, match="byte 4"):
        punched_row(((0, 2, 1), (5, 6, 2)), [(4, 0)])
    # trie_add follows the trie's own edges
    with pytest.raises(ValueError, match="no node 5"):
        trie_add([{97: 5}], [False], b"ab")
    # names_product indexes the key table by the trie's bytes and its own targets
    keys = automaton.DFA([[(97, 97, 1)], []], [False, True])
    rows = tuple(tuple((lo, hi, t + 1) for lo, hi, t in row) for row in keys.trans)

    def product(trie, is_name, table=keys.dense()):
        return names_product(trie, is_name, table, rows, keys.accept, [True, True],
                             [0, 0], 16, lambda: None)

    assert product([{97: 1}, {}], [False, True]) is None  # "a" less "a": nothing
    with pytest.raises(ValueError, match="bad trie edge 300"):
        product([{300: 1}, {}], [False, True])
    with pytest.raises(ValueError, match="bad trie edge 97 -> 2"):
        product([{97: 2}, {}], [False, True])
    with pytest.raises(ValueError, match="different sizes"):
        product([{97: 1}, {}], [False])
    with pytest.raises(ValueError, match="different sizes"):
        product([], [])
    with pytest.raises(ValueError, match="key state 5"):
        bad = keys.dense().copy()
        bad[0, 97] = 5
        product([{97: 1}, {}], [False, True], bad)


@st.composite
def nfas(draw):
    """An NFA over byte ranges with epsilon edges (cycles among them), a start and a final."""
    n = draw(st.integers(1, 12))
    top = draw(st.sampled_from([3, 7, 255]))  # (few bytes: targets overlap on most of them)
    state = st.integers(0, n - 1)
    ranges = st.tuples(st.integers(0, top), st.integers(0, top)).map(sorted)
    edges = [[(lo, hi, t) for (lo, hi), t in draw(st.lists(st.tuples(ranges, state),
                                                              max_size=5))]
             for _ in range(n)]
    eps = [draw(st.lists(state, max_size=2)) for _ in range(n)]
    return edges, eps, draw(state), draw(state)


@given(nfas())
def test_subsets_against_a_construction_by_frozensets(nfa):
    """The C subset construction (its sets found again by a hash kept as the sweep goes)
    against one written plainly: per DFA state and byte, the closure of the targets as a
    frozenset, numbered in the order found."""
    from helpers import reachable
    from pse._core.automata import subsets

    edges, eps, start, final = nfa

    def closure(states):
        return frozenset(reachable(eps, states))

    number = {closure([start]): 0}
    sets, trans, accept = list(number), [], []
    for members in sets:
        accept.append(final in members)
        targets = [closure([t for s in members for lo, hi, t in edges[s] if lo <= b <= hi])
                   for b in range(256)]
        row = []
        for b, found in enumerate(targets):
            if found and found not in number:
                number[found] = len(sets)
                sets.append(found)
            j = number[found] if found else -1
            if row and row[-1][2] == j and row[-1][1] == b - 1:
                row[-1] = (row[-1][0], b, j)
            elif j >= 0:
                row.append((b, b, j))
        trans.append(row)
    got_trans, got_accept = subsets(edges, eps, start, final, 100_000, lambda: None)
    assert [list(r) for r in got_trans] == trans and list(got_accept) == accept
