"""UTF-8 range splitting and determinization against brute force."""

from hypothesis import given, strategies as st

from pse import automaton

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
