import pytest

from helpers import accepts_tokens, check_boundaries
from pse import Character, GrammarError


def test_default_is_one_or_more():
    c = Character("abc")
    assert c.matches("a") and c.matches("cabbac")
    assert not c.matches("") and not c.matches("abd")


@pytest.mark.parametrize("n, ok", [(0, False), (1, False), (2, True), (3, True), (4, False)])
def test_length_bounds(n, ok):
    assert Character([("a", "z")], min_length=2, max_length=3).matches("x" * n) == ok


def test_min_zero_accepts_empty():
    assert Character("a", min_length=0).matches("")
    assert Character("a", min_length=0, max_length=0).matches("")
    assert not Character("a", min_length=0, max_length=0).matches("a")


def test_large_max_length_is_not_unrolled():
    c = Character("a", min_length=3, max_length=1_000_000)
    assert c.compile().n_dfa_states < 10
    assert c.matches("a" * 5000)
    assert not c.matches("aa")


def test_ranges_of_code_points_and_chars():
    c = Character([(0x41, 0x43), ("x", "z")])
    assert c.matches("ABCxyz")
    assert not c.matches("D")


def test_negated():
    c = Character('"\\', negated=True)
    assert c.matches("hello wörld 🎉")
    assert not c.matches('a"b')
    assert not c.matches("a\\b")


def test_case_insensitive():
    c = Character("abé", case_sensitive=False)
    assert c.matches("AbÉé")
    assert not Character("abé").matches("A")


def test_non_ascii_fed_byte_by_byte():
    c = Character("éあ🎉")
    for text in ["é", "あ", "🎉", "éあ🎉é"]:
        data = text.encode()
        assert accepts_tokens(c, [bytes([b]) for b in data]), text
    assert not accepts_tokens(c, [b"\xc3", b"\xa8"])  # è is not in the class
    assert c.matches("é".encode()[:1], partial=True)
    assert not c.matches("é".encode()[:1])


def test_invalid_utf8_never_matches():
    c = Character([(0, 0x10FFFF)])
    assert c.matches("\x00\U0010ffff")
    for bad in [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]:
        assert not c.matches(bad), bad


def test_boundaries():
    c = Character("aé🎉", min_length=2, max_length=4)
    for text in ["aé", "é🎉a", "aaaaa", "a", "🎉🎉🎉🎉"]:
        check_boundaries(c, text)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(charset="a", min_length=-1), "min_length"),
    (dict(charset="a", max_length=-2), "max_length"),
    (dict(charset="a", min_length=3, max_length=2), "min_length"),
    (dict(charset=""), "charset"),
    (dict(charset=[("z", "a")]), "first > last"),
    (dict(charset=[("a",)]), "pair"),
    (dict(charset=[("ab", "c")]), "one character"),
    (dict(charset=5), "charset"),
    (dict(charset="a", min_length=1.5), "min_length"),
])
def test_bad_arguments(kwargs, needle):
    with pytest.raises(GrammarError, match=needle):
        Character(**kwargs)
