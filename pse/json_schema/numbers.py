"""JSON Schema numbers: integer and number types, minimum/maximum (exclusive or not) and
multipleOf, on decimals.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal

from pse import automaton, products
from pse.errors import GrammarError, SchemaError
from pse.json_value import JsonNumber
from pse.machines import DfaTerminal, StateMachine
from pse.regex import compile_regex
from pse.json_schema.common import _nonempty

# --- integer ranges as digit patterns ----------------------------------------------------------

def _same_length(lo: str, hi: str) -> list[str]:
    n = len(lo)
    if lo == hi:
        return [lo]
    if lo == "0" * n and hi == "9" * n:
        return [f"[0-9]{{{n}}}"]
    if n == 1:
        return [f"[{lo}-{hi}]"]
    if lo[0] == hi[0]:
        return [lo[0] + x for x in _same_length(lo[1:], hi[1:])]
    out = [lo[0] + x for x in _same_length(lo[1:], "9" * (n - 1))]
    if int(hi[0]) - int(lo[0]) > 1:
        out.append(f"[{int(lo[0]) + 1}-{int(hi[0]) - 1}][0-9]{{{n - 1}}}")
    out += [hi[0] + x for x in _same_length("0" * (n - 1), hi[1:])]
    return out


def _nonnegative_range(a: int, b: int | None) -> list[str]:
    """Alternatives matching the decimal integers a..b (b None: unbounded), a >= 0."""
    out: list[str] = []
    if b is not None and a > b:
        return out
    la = len(str(a))
    top = len(str(b)) if b is not None else la
    for length in range(la, top + 1):
        lo = max(a, 10 ** (length - 1) if length > 1 else 0)
        hi = 10 ** length - 1 if b is None else min(b, 10 ** length - 1)
        if lo <= hi:
            out += _same_length(str(lo), str(hi))
    if b is None:
        out.append(f"[1-9][0-9]{{{la},}}")
    return out


def integer_pattern(lo: int | None, hi: int | None) -> str:
    """A regex for the JSON integers in [lo, hi] (None: unbounded), -0 included with 0."""
    alts: list[str] = []
    if hi is None or hi >= 0:
        alts += _nonnegative_range(max(lo, 0) if lo is not None else 0, hi)
    if lo is None or lo < 0:
        # negatives: -n for n in [max(1, -hi), -lo]
        n_lo = 1 if hi is None or hi >= 0 else -hi
        n_hi = None if lo is None else -lo
        alts += ["-(" + a + ")" for a in _nonnegative_range(n_lo, n_hi)]
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        alts.append("-0")
    return "|".join(f"(?:{a})" for a in alts) if alts else "(?!)"


def integer_range_dfa(lo: int | None, hi: int | None) -> automaton.DFA:
    """The minimal DFA of the JSON integers in [lo, hi] (None: unbounded), -0 included with
    0: the language of `integer_pattern(lo, hi)`, built digit by digit instead of through the
    regex (reading the pattern back cost more than building the automaton)."""
    trans: list[list[tuple[int, int, int]]] = [[]]  # state 0: the start
    accept = [False]
    zero = (lo is None or lo <= 0) and (hi is None or hi >= 0)

    def add(accepting: bool) -> int:
        trans.append([])
        accept.append(accepting)
        return len(trans) - 1

    def magnitudes(a: int, b: int | None, at: int) -> None:
        """From state `at`: the decimal integers a..b (b None: unbounded), 1 <= a, without a
        leading zero. A state is (digits read, how they compare with a's first digits, with
        b's): -1 below, 0 equal, 1 above; longer than a is above it, and with b unbounded
        every length past a's is one state."""
        da, db = str(a), None if b is None else str(b)
        states: dict[tuple[int, int, int], int] = {}
        todo = [(0, 0, 0, at)]
        while todo:
            k, ca, cb, state = todo.pop()
            if db is not None and k >= len(db):
                continue  # as long as b: no digit more
            row = trans[state]
            for d in range(1 if k == 0 else 0, 10):
                na = 1 if k >= len(da) else ca or (d > int(da[k])) - (d < int(da[k]))
                nb = 0 if db is None else cb or (d > int(db[k])) - (d < int(db[k]))
                key = (k + 1 if db is not None else min(k + 1, len(da) + 1), na, nb)
                target = states.get(key)
                if target is None:
                    n = key[0]
                    target = states[key] = add(
                        (n > len(da) or n == len(da) and na >= 0)
                        and (db is None or n < len(db) or n == len(db) and nb <= 0))
                    todo.append((*key, target))
                row.append((0x30 + d, 0x30 + d, target))  # (minimize joins neighbours)

    if zero:
        trans[0].append((0x30, 0x30, add(True)))
    if hi is None or hi >= 1:
        magnitudes(max(lo, 1) if lo is not None else 1, hi, 0)
    if lo is None or lo < 0 or zero:
        minus = add(False)
        trans[0].insert(0, (0x2D, 0x2D, minus))
        if zero:
            trans[minus].append((0x30, 0x30, add(True)))
        if lo is None or lo <= -1:
            magnitudes(1 if hi is None or hi >= 0 else -hi, None if lo is None else -lo, minus)
    return automaton.minimize(automaton.trim(automaton.DFA(trans, accept)))


@functools.lru_cache(maxsize=1024)
def _integers_dfa(lo: int | None, hi: int | None, zero_fraction: bool) -> automaton.DFA:
    """integer_range_dfa, then `.0`, `.00`, ... allowed after it where `zero_fraction`; shared
    by the schemas with the same bounds."""
    dfa = integer_range_dfa(lo, hi)
    if not zero_fraction:
        return dfa
    # (deterministic: no integer takes a '.')
    return automaton.minimize(automaton.then_run(dfa, compile_regex(r"(?:\.0+)?")))


# --- decimal ranges ------------------------------------------------------------------------------
# Numbers with bounds are written without an exponent: -?(0|[1-9][0-9]*)(\.[0-9]+)?, and a
# bound compares the magnitude I.F digit by digit (exact for any decimal bound).

_ANY_FRACTION = r"(\.[0-9]+)?"


def _split(d: Decimal) -> tuple[int, str]:
    """|d| as (integer part, fraction digits without trailing zeros)."""
    text = format(abs(d), "f")
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


@functools.lru_cache(maxsize=1024)
def _magnitude_at_least(d: Decimal, strict: bool) -> automaton.DFA:
    """Magnitudes I.F >= |d| (strict: >)."""
    a, b = _split(d)
    alts = []
    if not b:
        alts.append(f"{a}" + (r"\.[0-9]*[1-9][0-9]*" if strict else _ANY_FRACTION))
    else:
        for i, digit in enumerate(b):
            if digit != "9":
                alts.append(f"{a}\\.{b[:i]}[{int(digit) + 1}-9][0-9]*")
        alts.append(f"{a}\\.{b}" + (r"[0-9]*[1-9][0-9]*" if strict else r"[0-9]*"))
    return _with_integers(a + 1, None, alts)


@functools.lru_cache(maxsize=1024)
def _magnitude_at_most(d: Decimal, strict: bool) -> automaton.DFA:
    """Magnitudes I.F <= |d| (strict: <)."""
    a, b = _split(d)
    alts = []
    if not b:
        if not strict:
            alts.append(f"{a}" + r"(\.0+)?")
    else:
        alts.append(f"{a}")
        for i, digit in enumerate(b):
            if digit != "0":
                alts.append(f"{a}\\.{b[:i]}[0-{int(digit) - 1}][0-9]*")
        for i in range(1, len(b) + (0 if strict else 1)):
            alts.append(f"{a}\\.{b[:i]}0*")
    return _with_integers(0, a - 1, alts)


def _with_integers(lo: int, hi: int | None, alts: list[str]) -> automaton.DFA:
    """The magnitudes whose integer part is in lo..hi (none when hi < lo), any fraction, and
    the regexes `alts` (the integer part at the bound): the integers built digit by digit, as
    a regex their alternatives grew with the square of the digits (a bound of 1e308 passed
    MAX_NFA_STATES). (With lo 0, "-0" too, as integer_range_dfa has it: number_range_dfa
    keeps the magnitudes.)"""
    nfa = automaton.NFA()
    parts = [automaton.embed(nfa, compile_regex("|".join(f"(?:{x})" for x in alts)))] \
        if alts else []
    if hi is None or hi >= lo:
        parts.append(automaton.concat(nfa, [automaton.embed(nfa, integer_range_dfa(lo, hi)),
                                            automaton.embed(nfa, compile_regex(_ANY_FRACTION))]))
    if not parts:
        return automaton.DFA([[]], [False])
    return automaton.determinize(nfa, automaton.alternation(nfa, parts))


_MAGNITUDE = r"(0|[1-9][0-9]*)(\.[0-9]+)?"


def number_range_dfa(lo, hi) -> automaton.DFA:
    """JSON numbers (no exponent) v with lo <= v <= hi; lo/hi are (Decimal, exclusive) or None."""
    def side(constraints: list[tuple[str, Decimal, bool]]) -> automaton.DFA:
        dfa = compile_regex(_MAGNITUDE)
        for kind, d, strict in constraints:
            bound = (_magnitude_at_least if kind == "ge" else _magnitude_at_most)(d, strict)
            dfa = products.intersect(dfa, bound)
        return dfa

    # v >= 0, written without "-": the magnitude is v
    pos: list = []
    pos_ok = True
    if lo is not None and (lo[0] > 0 or (lo[0] == 0 and lo[1])):
        pos.append(("ge", lo[0], lo[1]))
    if hi is not None:
        if hi[0] < 0 or (hi[0] == 0 and hi[1]):
            pos_ok = False
        else:
            pos.append(("le", hi[0], hi[1]))
    # v <= 0, written with "-": v = -m
    neg: list = []
    neg_ok = True
    if lo is not None:
        if lo[0] > 0 or (lo[0] == 0 and lo[1]):
            neg_ok = False
        else:
            neg.append(("le", -lo[0], lo[1]))  # -m >= lo  <=>  m <= -lo
    if hi is not None and (hi[0] < 0 or (hi[0] == 0 and hi[1])):
        neg.append(("ge", -hi[0], hi[1]))  # -m <= hi  <=>  m >= -hi
    nfa = automaton.NFA()
    parts = []
    if pos_ok:
        parts.append(automaton.embed(nfa, side(pos)))
    if neg_ok:
        parts.append(automaton.concat(nfa, [automaton.literal(nfa, b"-"),
                                            automaton.embed(nfa, side(neg))]))
    if not parts:
        return automaton.DFA([[]], [False])
    return automaton.determinize(nfa, automaton.alternation(nfa, parts))


# --- the compiler ------------------------------------------------------------------------------

# multipleOf a/10^k runs a remainder automaton of a * (k + 3) states; above this a is refused.
MAX_MULTIPLE_STATES = 20_000


def multiple_of_dfa(m: Decimal) -> automaton.DFA:
    """JSON numbers (no exponent) that are integer multiples of m > 0: with m = a / 10^k, the
    digits of x * 10^k are read as an integer, its remainder modulo a tracked.

    Raises:
        GrammarError: m needs more than MAX_MULTIPLE_STATES states.
    """
    sign, digits, exponent = m.normalize().as_tuple()
    k = max(0, -exponent)
    a = int(m.scaleb(k))
    if a * (k + 3) > MAX_MULTIPLE_STATES:
        raise GrammarError(f"multipleOf {m} needs more than {MAX_MULTIPLE_STATES} automaton "
                           "states (MAX_MULTIPLE_STATES)")
    # states: 0 start, 1 after "-", 2 after a leading "0"; then per remainder r: integer part
    # I(r), after "." D(r) (a digit must follow), fraction digit j of k F(r, j), zeros Z(r)
    n_fixed = 3

    def integer(r: int) -> int:
        return n_fixed + r

    def dot(r: int) -> int:
        return n_fixed + a + r

    def fraction(r: int, j: int) -> int:  # j in 1..k
        return n_fixed + 2 * a + (j - 1) * a + r

    def zeros(r: int) -> int:
        return n_fixed + (2 + k) * a + r

    n = n_fixed + (3 + k) * a
    trans: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    accept = [False] * n
    zero, point = ord("0"), ord(".")
    pow10 = [pow(10, e, a) for e in range(k + 1)]

    def digits_row(r: int, step) -> list[tuple[int, int, int]]:
        return [(zero + d, zero + d, step((r * 10 + d) % a)) for d in range(10)]

    trans[0] = [(ord("-"), ord("-"), 1), (zero, zero, 2)] + [
        (zero + d, zero + d, integer(d % a)) for d in range(1, 10)]
    trans[1] = [(zero, zero, 2)] + [(zero + d, zero + d, integer(d % a)) for d in range(1, 10)]
    accept[2] = True  # 0 is a multiple of everything
    trans[2] = [(point, point, dot(0))]
    for r in range(a):
        trans[integer(r)] = digits_row(r, integer) + [(point, point, dot(r))]
        accept[integer(r)] = r * pow10[k] % a == 0
        if k == 0:
            trans[dot(r)] = [(zero, zero, zeros(r))]
        else:
            trans[dot(r)] = digits_row(r, lambda q: fraction(q, 1))
        for j in range(1, k + 1):
            if j < k:
                trans[fraction(r, j)] = digits_row(r, lambda q, j=j: fraction(q, j + 1))
            else:  # past the k-th fraction digit only zeros keep x * 10^k an integer
                trans[fraction(r, j)] = [(zero, zero, zeros(r))]
            accept[fraction(r, j)] = r * pow10[k - j] % a == 0
        trans[zeros(r)] = [(zero, zero, zeros(r))]
        accept[zeros(r)] = r == 0
    for row in trans:
        row.sort()
    return automaton.minimize(automaton.trim(automaton.DFA(trans, accept)))


def _bounds(node: dict, pointer: str):
    """(value, exclusive) lower and upper bounds, drafts 4 to 2020-12."""
    lo = hi = None
    if "minimum" in node:
        lo = (node["minimum"], node.get("exclusiveMinimum") is True)
    if "maximum" in node:
        hi = (node["maximum"], node.get("exclusiveMaximum") is True)
    em, eM = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if isinstance(em, (int, float)) and not isinstance(em, bool):
        if lo is None or em >= lo[0]:
            lo = (em, True)
    if isinstance(eM, (int, float)) and not isinstance(eM, bool):
        if hi is None or eM <= hi[0]:
            hi = (eM, True)
    for b in (lo, hi):
        if b is not None and (isinstance(b[0], bool) or not isinstance(b[0], (int, float))):
            raise SchemaError(f"{pointer}: minimum/maximum must be numbers")
    return lo, hi


def integer_bounds(node: dict, pointer: str) -> tuple[int | None, int | None]:
    """The least and the greatest integer that `node`'s minimum and maximum (exclusive or
    not) allow; None where unbounded."""
    lo, hi = _bounds(node, pointer)
    ilo = None if lo is None else (math.floor(lo[0]) + 1 if lo[1] else math.ceil(lo[0]))
    ihi = None if hi is None else (math.ceil(hi[0]) - 1 if hi[1] else math.floor(hi[0]))
    return ilo, ihi


class _Numbers:
    """The _Compiler methods for numbers (a mixin of compile._Compiler)."""

    def number(self, node: dict, pointer: str, integer: bool) -> StateMachine | None:
        lo, hi = _bounds(node, pointer)
        multiple = self.multiple_of(node, pointer)
        if multiple is not None:
            base = self.number({k: v for k, v in node.items() if k != "multipleOf"}, pointer,
                               integer)
            if base is None:
                return None
            dfa = self.intersect(base.unit_dfa(), multiple, f"{pointer}/multipleOf")
            return DfaTerminal(dfa, f"multiple at {pointer}") if _nonempty(dfa) else None
        if integer:
            ilo, ihi = integer_bounds(node, pointer)
            if ilo is not None and ihi is not None and ilo > ihi:
                return None
            # from draft 6 on, 1.0 is an integer too ("integer" is a value, not a spelling)
            zero_fraction = not self.draft4
            return DfaTerminal(_integers_dfa(ilo, ihi, zero_fraction), f"integer at {pointer}",
                               key=("integers", ilo, ihi, zero_fraction))
        if lo is None and hi is None:
            return JsonNumber()
        dec = lambda b: None if b is None else (Decimal(str(b[0])), b[1])  # noqa: E731
        try:
            dfa = number_range_dfa(dec(lo), dec(hi))
        except GrammarError as e:
            raise SchemaError(f"{pointer}: minimum/maximum: {e}") from None
        if not dfa.trans[0]:
            return None
        return DfaTerminal(dfa, f"number at {pointer}")

    def fraction(self, node: dict, pointer: str) -> StateMachine | None:
        """The numbers `node` allows that are not integers, spelled with a fraction part and
        no exponent (1.5e1 is 15; the spelling without one is exact for every value)."""
        base = self.number(node, pointer, integer=False)
        if base is None:
            return None
        # draft 4: 1.0 is not an integer either
        digits = "[0-9]+" if self.draft4 else "[0-9]*[1-9][0-9]*"
        dfa = self.intersect(base.unit_dfa(), compile_regex(f"-?(?:0|[1-9][0-9]*)\\.{digits}"),
                             f"{pointer}/not")
        return DfaTerminal(dfa, f"fraction at {pointer}") if _nonempty(dfa) else None

    def multiple_of(self, node: dict, pointer: str) -> automaton.DFA | None:
        """Numbers that are multiples of `multipleOf` (None: no such keyword, or 1 for an
        integer)."""
        if "multipleOf" not in node:
            return None
        m = node["multipleOf"]
        where = f"{pointer}/multipleOf"
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not m > 0:
            raise SchemaError(f"{where}: must be a number > 0, got {m!r}")
        try:
            return multiple_of_dfa(Decimal(str(m)))
        except GrammarError as e:
            self.fail(where, "multipleOf", str(e))
            return None
