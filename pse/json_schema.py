"""`JsonSchema`: a JSON Schema compiled into a StateMachine.

Property order "schema": listed properties in the order the schema lists them (optional ones
may be skipped), additional ones after. Property order "any": any order, each key at most
once, required ones enforced, tracked in the register of the object's rule (registers.py).
Strings, numbers, arrays and objects become automata
and counted runs; `$ref` becomes a `Forward`, so recursive schemas work. What cannot be
expressed exactly raises `SchemaError` naming the keyword and its JSON pointer (strict=True),
or is approximated with a warning (strict=False).
"""

from __future__ import annotations

import collections
import copy
import functools
import itertools
import json
import math
import operator
from decimal import Decimal
import re
import warnings
from typing import Any, Callable, Iterator
from urllib.parse import quote, unquote, urljoin

from pse import automaton, limits, schema_types
from pse.compiler import share_rules
from pse.errors import GrammarError, SchemaError
from pse.json_spelling import (KeyStates, char_boundaries, json_char_class, json_names_dfa,
                               MANY_VALUES, quoted, string_values, without_names,
                               without_names_states)
from pse.json_value import Json, JsonNumber, JsonStringContent, whitespace_bound
from pse.machines import (AnyOf, Chain, CharCountedTerminal, DfaTerminal, Forward, Phrase,
                          StateMachine, Terminal, Whitespace)
from pse.registers import (ITEM_CLOSE, ITEM_OPEN, KEY_BITS, KEY_CLOSE, KEY_OPEN, Guard, Guarded,
                           Scope)
from pse.regex import compile_regex, search_for_all

# An object member: its opening (the key, or a comma and the key) made for its place, first
# or not, and the rest (the value) one machine wherever the member stands.
Member = tuple[Callable[[bool], StateMachine], StateMachine]

_HEX = [(ord("0"), ord("9")), (ord("a"), ord("f")), (ord("A"), ord("F"))]

# Keywords whose value is a schema or a list of schemas, and those whose value maps names
# to schemas: where `index` looks for identifiers.
_SUBSCHEMAS = frozenset([
    "additionalProperties", "additionalItems", "items", "prefixItems", "contains",
    "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties",
    "contentSchema", "allOf", "anyOf", "oneOf"])
_SCHEMA_MAPS = frozenset(["properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas", "dependencies"])
# A contains and the counts that go with it.
_CONTAINS = ("contains", "minContains", "maxContains")
# Keywords a draft does not have (later ones), by draft: unknown keywords there.
_UNTIL_2019 = {"dependentRequired", "dependentSchemas", "unevaluatedItems",
               "unevaluatedProperties", "prefixItems", "minContains", "maxContains",
               "$recursiveRef", "$dynamicRef"}
_LATER_KEYWORDS = {4: {"const", "contains", "propertyNames", "if", "then", "else",
                       *_UNTIL_2019},
                   6: {"if", "then", "else", *_UNTIL_2019},
                   7: _UNTIL_2019,
                   2019: {"prefixItems", "$dynamicRef"},
                   # (2020-12 keeps "dependencies", as the official suite's optional
                   # compatibility tests ask)
                   2020: {"$recursiveRef"}}
# Keywords that only annotate; they never change what is valid.
_ANNOTATIONS = {"title", "description", "default", "examples", "$comment", "$schema", "$id",
                "id", "readOnly", "writeOnly", "deprecated", "$anchor", "$dynamicAnchor",
                "$recursiveAnchor", "$defs", "definitions", "contentMediaType",
                "contentEncoding", "$vocabulary", "discriminator", "xml", "externalDocs",
                "example"}

# A calendar date, month lengths and leap years included (2024-02-29 yes, 2023-02-29 no).
_DATE = (r"(\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)"
         r"|02-(0[1-9]|1\d|2[0-8]))"
         r"|(\d\d(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)")
# a leap second only at 23:59 UTC; with a non-zero offset it is refused (conservative)
_TIME = (r"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
         r"|23:59:60(\.\d+)?([Zz]|[+-]00:00))")

# Keywords that change what is valid (a conflict between allOf branches on any other key is
# no conflict at all).
_VALIDATION = {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
               "exclusiveMinimum", "maxLength", "minLength", "pattern", "items", "prefixItems",
               "additionalItems", "maxItems", "minItems", "uniqueItems", "contains",
               "maxContains", "minContains", "maxProperties", "minProperties", "required",
               "properties", "patternProperties", "additionalProperties", "dependencies",
               "dependentRequired", "dependentSchemas", "propertyNames", "if", "then", "else",
               "not", "format", "unevaluatedItems", "unevaluatedProperties", "$ref"}

# URIs and IRIs by the ABNF of RFC 3986 and RFC 3987 (an IPv6 literal without an embedded
# IPv4 part; IRIs' extra characters are non-ASCII ones).
_IPV4 = r"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_H16 = r"[0-9a-fA-F]{1,4}"
_IPV6 = (rf"(({_H16}:){{7}}{_H16}|({_H16}:){{1,7}}:|({_H16}:){{1,6}}:{_H16}"
         rf"|({_H16}:){{1,5}}(:{_H16}){{1,2}}|({_H16}:){{1,4}}(:{_H16}){{1,3}}"
         rf"|({_H16}:){{1,3}}(:{_H16}){{1,4}}|({_H16}:){{1,2}}(:{_H16}){{1,5}}"
         rf"|{_H16}:(:{_H16}){{1,6}}|:((:{_H16}){{1,7}}|:))")


def _uri_grammar(extra: str) -> tuple[str, str]:
    """(absolute URI, URI reference) regexes; `extra` adds characters to 'unreserved'."""
    unreserved = rf"[A-Za-z0-9._~{extra}-]"
    pct = r"%[0-9A-Fa-f]{2}"
    sub = r"[!$&'()*+,;=]"
    pchar = rf"({unreserved}|{pct}|{sub}|[:@])"
    userinfo = rf"({unreserved}|{pct}|{sub}|:)*"
    host = (rf"(\[({_IPV6}|v[0-9A-Fa-f]+\.({unreserved}|{sub}|:)+)\]"
            rf"|({unreserved}|{pct}|{sub})*)")
    authority = rf"({userinfo}@)?{host}(:\d*)?"
    segment_nz = rf"{pchar}+"
    abempty = rf"(/{pchar}*)*"
    absolute = rf"/({segment_nz}(/{pchar}*)*)?"
    rootless = rf"{segment_nz}(/{pchar}*)*"
    noscheme = rf"({unreserved}|{pct}|{sub}|@)+(/{pchar}*)*"
    tail = rf"(\?({pchar}|[/?])*)?(#({pchar}|[/?])*)?"
    uri = rf"[A-Za-z][A-Za-z0-9+.-]*:(//{authority}{abempty}|{absolute}|{rootless}|){tail}"
    relative = rf"(//{authority}{abempty}|{absolute}|{noscheme}|){tail}"
    return uri, f"{uri}|{relative}"


_URI, _URI_REFERENCE = _uri_grammar("")
_IRI, _IRI_REFERENCE = _uri_grammar("\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef\U00010000-\U000effff")
# RFC 6570 URI templates: literals (any character but controls, space and "%<>\\^`{|}, or
# a percent escape; the apostrophe allowed, as erratum 6937 reads it) and expressions
_UCSCHAR = ("\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
            + "".join(f"{chr(p << 16)}-{chr((p << 16) + 0xFFFD)}" for p in range(1, 14))
            + "\U000e1000-\U000efffd")
_IPRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_VARCHAR = r"([A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = rf"{_VARCHAR}(\.?{_VARCHAR})*(:[1-9][0-9]{{0,3}}|\*)?"
_URI_TEMPLATE = (rf"([!#$&-;=?-\[\]_a-z~{_UCSCHAR}{_IPRIVATE}]|%[0-9A-Fa-f]{{2}}"
                 rf"|\{{[+#./;?&=,!@|]?{_VARSPEC}(,{_VARSPEC})*\}})*")
# a hostname label: 1-63 letters, digits and hyphens, no hyphen at either end
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

FORMATS = {
    "date": _DATE,
    "time": _TIME,
    "date-time": f"({_DATE})[Tt]{_TIME}",
    # RFC 3339 appendix A: a unit may only be followed by the next smaller one
    "duration": r"P(\d+W|(\d+D|\d+M(\d+D)?|\d+Y(\d+M(\d+D)?)?)(T(\d+S|\d+M(\d+S)?"
                r"|\d+H(\d+M(\d+S)?)?))?|T(\d+S|\d+M(\d+S)?|\d+H(\d+M(\d+S)?)?))",
    "email": r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
             r"@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+",
    "hostname": rf"{_LABEL}(\.{_LABEL})*",
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uri": _URI,
    "uri-reference": _URI_REFERENCE,
    "iri": _IRI,
    "iri-reference": _IRI_REFERENCE,
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "json-pointer": r"(/([^/~]|~[01])*)*",
    "relative-json-pointer": r"(0|[1-9][0-9]*)(#|(/([^/~]|~[01])*)*)",
    "uri-template": _URI_TEMPLATE,
}

# What a format's regex matches but the format does not allow: labels with "--" in the 3rd
# and 4th place are reserved for IDNA (xn--), whose rules no automaton checks, so refused.
FORMAT_EXCLUDED = {"hostname": r"(.*\.)?[A-Za-z0-9]{2}--.*"}
# the most characters a string of the format has (a host name: 253, RFC 1034 and 1123), counted
# as maxLength is (see _format_length)
FORMAT_MAX_LENGTH = {"hostname": 253}

# Formats the specification defines that no automaton can check exactly (a regex is nested,
# IDNs need more than this): strict=True refuses them, as it would any keyword it cannot
# enforce. Other unknown formats are annotations.
UNSUPPORTED_FORMATS = {"regex", "idn-email", "idn-hostname"}

# content_dfa's mark of a pattern whose matches anywhere in a string leave the string out
_NOT_FOUND = "not found"

# Strings whose length is bounded and constrained by a pattern too are intersected with an
# unrolled length automaton; above this bound their characters are counted at run time (key
# names: refused).
MAX_UNROLLED_LENGTH = 64
# A binding of the dynamic scope no anchor has: inside a unique array (see whole_strings).
WHOLE_STRINGS = "pse:whole strings"
# minItems/maxItems are unrolled, one parser state per item, up to this bound; larger bounds
# are counted in the register for items of one kind, and refused beside prefixItems.
MAX_UNROLLED_ITEMS = 256
_CLOSED = ("closed",)  # the state after an object's or array's close (see bracketed)
# Regions a key space is cut into by overlapping patternProperties (2**patterns at worst).
MAX_KEY_REGIONS = 32
# The largest count the core keeps (its counters are 32-bit; -1 means unbounded).
MAX_COUNT = 2**31 - 2


def _unrolled_length(lo: int, hi: int | None) -> bool:
    """Whether string length bounds beside a pattern are unrolled into its automaton (else
    the characters are counted at run time: CharCountedTerminal)."""
    return (hi is None and lo <= MAX_UNROLLED_LENGTH) or (hi is not None
                                                         and hi <= MAX_UNROLLED_LENGTH)


def _length_dfa(lo: int, hi: int) -> automaton.DFA:
    """JSON string content of lo..hi characters, unrolled (hi is small)."""
    nfa = automaton.NFA()
    unit = JsonStringContent().unit_dfa()
    parts = [automaton.embed(nfa, unit) for _ in range(lo)]
    tail = None
    for _ in range(hi - lo):
        one = automaton.embed(nfa, unit)
        tail = automaton.optional(nfa, one if tail is None else automaton.concat(nfa, [one, tail]))
    if tail is not None:
        parts.append(tail)
    return automaton.determinize(nfa, automaton.concat(nfa, parts))


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


# --- decimal ranges ------------------------------------------------------------------------------
# Numbers with bounds are written without an exponent: -?(0|[1-9][0-9]*)(\.[0-9]+)?, and a
# bound compares the magnitude I.F digit by digit (exact for any decimal bound).

_ANY_FRACTION = r"(\.[0-9]+)?"


def _split(d: Decimal) -> tuple[int, str]:
    """|d| as (integer part, fraction digits without trailing zeros)."""
    text = format(abs(d), "f")
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


def _int_regex(lo: int, hi: int | None) -> str:
    alts = _nonnegative_range(lo, hi)
    return "(?:" + "|".join(alts) + ")" if alts else "(?!)"


def _magnitude_at_least(d: Decimal, strict: bool) -> str:
    """Regex of magnitudes I.F >= |d| (strict: >)."""
    a, b = _split(d)
    alts = [_int_regex(a + 1, None) + _ANY_FRACTION]
    if not b:
        alts.append(f"{a}" + (r"\.[0-9]*[1-9][0-9]*" if strict else _ANY_FRACTION))
    else:
        for i, digit in enumerate(b):
            if digit != "9":
                alts.append(f"{a}\\.{b[:i]}[{int(digit) + 1}-9][0-9]*")
        alts.append(f"{a}\\.{b}" + (r"[0-9]*[1-9][0-9]*" if strict else r"[0-9]*"))
    return "|".join(f"(?:{x})" for x in alts)


def _magnitude_at_most(d: Decimal, strict: bool) -> str:
    """Regex of magnitudes I.F <= |d| (strict: <)."""
    a, b = _split(d)
    alts = [_int_regex(0, a - 1) + _ANY_FRACTION] if a > 0 else []
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
    return "|".join(f"(?:{x})" for x in alts) if alts else "(?!)"


_MAGNITUDE = r"(0|[1-9][0-9]*)(\.[0-9]+)?"


def number_range_dfa(lo, hi) -> automaton.DFA:
    """JSON numbers (no exponent) v with lo <= v <= hi; lo/hi are (Decimal, exclusive) or None."""
    def side(constraints: list[tuple[str, Decimal, bool]]) -> automaton.DFA:
        dfa = compile_regex(_MAGNITUDE)
        for kind, d, strict in constraints:
            pattern = (_magnitude_at_least if kind == "ge" else _magnitude_at_most)(d, strict)
            dfa = automaton.intersect(dfa, compile_regex(pattern))
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


@functools.lru_cache(maxsize=1024)
def _literal_trie(texts: tuple, integers: tuple, decimals: tuple) -> automaton.DFA:
    """`automaton.trie`, once per list of literals (schemas repeat their enums: one automaton,
    whose content key is then hashed once)."""
    return automaton.trie(texts, integers, decimals)


@functools.lru_cache(maxsize=64)
def _blanks(ws: int) -> Whitespace:
    """At most `ws` blanks (a terminal is never changed: one per bound serves every schema)."""
    return Whitespace(0, ws)


@functools.lru_cache(maxsize=64)
def _colon(ws: int) -> DfaTerminal:
    """`_Compiler.colon` (a terminal is never changed: one per bound serves every schema)."""
    blank = f"[ \\t\\n\\r]{{0,{ws}}}"
    pattern = f"{blank}:{blank}"
    return DfaTerminal(compile_regex(pattern), "colon", key=("regex", pattern))


@functools.lru_cache(maxsize=64)
def _comma_dfa(ws: int) -> automaton.DFA:
    """A comma with at most `ws` blanks on each side."""
    if not ws:
        return automaton.literal_dfa(b",")
    blank = f"[ \\t\\n\\r]{{0,{ws}}}"
    return compile_regex(f"{blank},{blank}")


@functools.lru_cache(maxsize=4096)
def _comma_then_dfa(ws: int, text: str) -> automaton.DFA:
    """`_comma_dfa(ws)` then `text` (a member's key): one per key, built without a subset
    construction (a key starts with a quote, which no comma's blank is)."""
    return automaton.then_literal(_comma_dfa(ws), text.encode())


class JsonSchema(StateMachine):
    """A JSON Schema (dict or JSON text) as a structure.

    Args:
        schema: the schema; drafts 4 to 2020-12.
        property_order: "schema" — listed properties in schema order (optional ones
            skippable), additional properties after them; "any" — the exact JSON Schema
            meaning: any order, each key at most once.
        whitespace: None (compact JSON), the most blanks allowed between two tokens, or
            "flexible" for FLEXIBLE_WHITESPACE (20) of them.
        retrieve: `retrieve(uri) -> schema` for remote `$ref`s.
        strict: raise SchemaError for what cannot be expressed exactly (else approximate it
            and warn).
        name: the name of its value in `StructuringEngine.structured_outputs()` (default:
            the schema's `title`, else "json").

    Raises:
        SchemaError: a malformed or unsatisfiable schema, or (strict) an inexpressible one.
    """

    def __init__(self, schema: Any, property_order: str = "schema",
                 whitespace: int | str | None = None, retrieve: Callable[[str], Any] | None = None,
                 strict: bool = True, name: str | None = None) -> None:
        if isinstance(schema, (str, bytes)):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as e:
                raise SchemaError(f"the schema is not valid JSON: {e}") from None
        if not isinstance(schema, (dict, bool)):
            raise SchemaError(f"a schema is an object or a boolean, got {type(schema).__name__}")
        if property_order not in ("schema", "any"):
            raise SchemaError(f"property_order must be 'schema' or 'any', got "
                              f"{property_order!r}")
        try:
            whitespace = whitespace_bound(whitespace)
        except GrammarError as e:
            raise SchemaError(str(e)) from None
        self.schema = schema
        self.strict = strict
        self.property_order = property_order
        compiler = _Compiler(schema, whitespace, retrieve, strict, property_order)
        try:
            with limits.compile_budget("a JSON Schema"):
                root = compiler.compile(compiler.root, "#")
        except RecursionError:
            raise SchemaError("#: the schema nests (or refers to itself through allOf) too "
                              "deeply to compile") from None
        if root is None:
            raise SchemaError("#: the schema is false: nothing is valid")
        self.warnings = compiler.warnings
        title = schema.get("title") if isinstance(schema, dict) else None
        self.name = name or (title if isinstance(title, str) and title else "json")
        super().__init__({0: [(root, "$")]}, start_state=0, end_states=("$",))

    def parse_value(self, text: str) -> Any:
        """The Python value of a complete JSON text."""
        return json.loads(text)

    def value_parser(self) -> Callable[[str], Any]:
        return json.loads

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        return [(self.name, json.loads(text))] if complete else []

    def __repr__(self) -> str:
        # a bounded summary: a schema shared in many places can dump exponentially long
        if isinstance(self.schema, dict):
            return f"JsonSchema({{{', '.join(sorted(map(str, self.schema)))[:60]}}})"
        return f"JsonSchema({self.schema!r})"


# The name under which draft 2019-09's `"$recursiveAnchor": true` binds in the dynamic scope
# (no $dynamicAnchor can be named so: it is not a valid anchor name).
RECURSIVE = "#recursive"

# Subschemas nested (through properties, items, applicators, references being expanded) deeper
# than this are refused with the pointer, well before Python's recursion limit.
MAX_SCHEMA_DEPTH = 100
# Subschemas one schema may compile to. Unions inside allOf (and the opposites that keep
# oneOf's branches apart) are multiplied out, one subschema per combination; past this the
# schema is refused with a clear error instead of minutes and gigabytes (every maskbench
# schema that compiles needs under 50,000, all but one under 14,000).
MAX_SCHEMA_NODES = 100_000
# States of an array with `contains`: (matches needed + 1) x (items counted + 1).
MAX_CONTAINS_STATES = 4096
# The most pairs of overlapping branches the opposite of a oneOf lists (each "these two
# both hold" is a branch of its own).
MAX_ONE_OF_PAIRS = 32
# The most values of different kinds one property is split into, by which of the object's
# SOME_PROPERTY requirements a value of it meets (2 to the number of requirements it may meet
# by its value).
MAX_SOME_VARIANTS = 8
# The most keys with dependentRequired beside maxProperties in one object: each is present or
# absent in a case of its own (2 to this number of cases).
MAX_DEPENDENCY_CASES = 4

# A keyword of pse's own, never read from a user's schema (see `in_dialect`): a list of
# {"names": a schema for key names, "value": a schema, "else": the values "value" rejects},
# each asking for some property whose name "names" allows and whose value "value" does. It
# is how `opposite` says what no JSON Schema keyword says: "some key not listed is present".
SOME_PROPERTY = "pse:someProperty"


def _depth_limited(compile_node: Callable) -> Callable:
    """Bound the nesting of `_Compiler.compile` (MAX_SCHEMA_DEPTH), check the compile
    budget at each subschema, and the JSON types of keywords (the whole document at the root;
    each node compiled, for documents reached by remote references)."""

    def compile(self: Any, node: Any, pointer: str) -> Any:
        depth = getattr(self, "depth", 0)
        if depth == 0:
            schema_types.check_document(node)
        schema_types.check_node(node, pointer)
        if depth >= MAX_SCHEMA_DEPTH:
            raise SchemaError(f"{pointer}: the schema nests more than {MAX_SCHEMA_DEPTH} "
                              f"subschemas deep (MAX_SCHEMA_DEPTH)")
        try:
            limits.check_budget()
        except GrammarError as e:
            raise SchemaError(f"{pointer}: {e}") from None
        self.depth = depth + 1
        try:
            return compile_node(self, node, pointer)
        finally:
            self.depth = depth

    compile.__doc__ = compile_node.__doc__
    return compile


class _Compiler:
    def __init__(self, root: Any, ws: int, retrieve, strict: bool, property_order: str) -> None:
        self.property_order = property_order
        self.ws = ws
        self.retrieve = retrieve
        self.strict = strict
        self.warnings: list[str] = []
        # machines by (schema object or reference, dynamic anchors bound where it is compiled)
        self.refs: dict[tuple[str, tuple], Forward | None] = {}
        self.recursive: set[tuple[str, tuple]] = set()  # references met while they compile
        self.compiled: dict[tuple[int, tuple], tuple[Any, StateMachine | None]] = {}
        # schema objects compiling now; a Forward once one is met inside itself
        self.compiling: dict[tuple[int, tuple], Forward | None] = {}
        self.nodes = 0  # subschemas compiled (MAX_SCHEMA_NODES)
        self.any_order: _Compiler | None = None  # for literals: see `checker`
        # $dynamicAnchor names (and RECURSIVE for $recursiveAnchor) by the resource defining
        # them; the bindings of the dynamic scope, innermost last: ((name, resource), ...)
        self.dynamic_names: dict[str, list[str]] = {}
        self.bound: list[tuple] = [()]
        # schema resources by base URI, anchors by (base URI, name), and the base URI each
        # schema object is read against
        self.resources: dict[str, Any] = {}
        self.anchors: dict[tuple[str, str], Any] = {}
        self.bases: dict[int, tuple[Any, str]] = {}  # id -> (the object, kept alive; base)
        # the opposite of each reference (see `opposite_ref`): the URI of a resource made for
        # it, or None where it has none
        self.opposites: dict[str, str | None] = {}
        # the key names of each SOME_PROPERTY requirement (a requirement is one object, met in
        # every schema its opposite is merged into): id -> (the requirement, names DFA)
        self.some_names: dict[int, tuple[dict, automaton.DFA | None]] = {}
        self.any_value = _any_value(ws)
        self.draft = _draft(root)
        self.drafts: dict[str, int] = {}  # of remote documents, by base URI
        # the schema objects `in_dialect` went through, and those it did not (reached by a
        # $ref into some other JSON) with their version in the schema's draft
        self.in_dialect_ids: set[int] = set()
        self.outside: dict[int, tuple[Any, Any]] = {}
        self.draft4 = self.draft == 4
        # drafts 4 to 7: "$ref" replaces its siblings instead of joining them
        self.ref_alone = self.draft <= 7
        self.root = root = self.in_dialect(root, "#", self.draft)
        self.index(root, "")

    # -- helpers ---------------------------------------------------------------------------
    def in_dialect(self, doc: Any, pointer: str, draft: int) -> Any:
        """`doc` without the keywords `draft` does not have (unknown keywords there, which
        constrain nothing: `const` in draft 4, `if` in draft 6, `prefixItems` in 2019-09),
        with a warning naming each; `doc` itself when it has none."""
        ignored = _LATER_KEYWORDS.get(draft, frozenset()) | {SOME_PROPERTY}
        if not isinstance(doc, dict):
            return doc
        found: dict[str, str] = {}
        seen: set[int] = set()
        todo: list = [(doc, pointer)]
        while todo:  # a first pass, without copies (most documents have none to drop)
            node, where = todo.pop()
            if isinstance(node, list):
                todo.extend((x, f"{where}/{i}") for i, x in enumerate(node))
                continue
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            for key in ignored & node.keys():
                found.setdefault(key, f"{where}/{key}")
            todo.extend((v, f"{where}/{key}" if name is None else
                         f"{where}/{key}/{_escape(name)}")
                        for key, name, v in _subschemas(node) if key not in ignored)
        if not found:
            self.in_dialect_ids |= seen
            return doc
        for key, where in found.items():
            msg = (f"{where}: {key!r} is not a keyword of draft {draft} (the schema's "
                   "$schema): ignored")
            self.warnings.append(msg)
            warnings.warn(f"pse: {msg}", stacklevel=4)
        copies: dict[int, dict] = {}
        pending: list = []

        def copied(node: Any) -> Any:
            if isinstance(node, list):
                return [copied(x) for x in node]
            if not isinstance(node, dict):
                return node
            if id(node) not in copies:  # (a shared subschema stays shared)
                copies[id(node)] = {}
                pending.append((node, copies[id(node)]))
            return copies[id(node)]

        out = copied(doc)
        while pending:
            node, new = pending.pop()
            for key, value in node.items():
                if key in ignored:
                    continue
                if key in _SCHEMA_MAPS and isinstance(value, dict):
                    new[key] = {n: copied(v) for n, v in value.items()}
                elif key in _SUBSCHEMAS:
                    new[key] = copied(value)
                else:
                    new[key] = value
        self.in_dialect_ids.update(id(x) for x in copies.values())
        return out

    def fail(self, pointer: str, keyword: str, message: str) -> None:
        text = f"{pointer}: {keyword}: {message}"
        if self.strict:
            raise SchemaError(text)
        self.warnings.append(text)
        warnings.warn(f"pse: {text} (approximated, strict=False)", stacklevel=4)

    def wsp(self) -> list[StateMachine]:
        return [_blanks(self.ws)] if self.ws else []

    def sep(self, text: str) -> StateMachine:
        return Chain(*self.wsp(), Phrase(text), *self.wsp())

    def colon(self) -> StateMachine:
        """A key's colon with the blanks allowed around it, as one terminal (every member
        has one: fewer parser nodes than blanks, colon, blanks)."""
        return _colon(self.ws)

    def bracketed(self, opening: StateMachine, body: StateMachine, close: StateMachine,
                  empty: Any = None) -> StateMachine:
        """`opening`, `body`, `close`, with the blanks allowed after the opening and before
        the close; where the body ends empty (in its end state `empty`), the blanks come
        once, so that "[ ]" has no more of them than any two tokens."""
        if not self.ws:
            return Chain(opening, body, close)
        after = Chain(*self.wsp(), close)
        graph = {state: list(edges) for state, edges in body.state_graph.items()}
        for end in body.end_states:
            graph.setdefault(end, []).append((close if end == empty else after, _CLOSED))
        return Chain(opening, *self.wsp(),
                     StateMachine(graph, start_state=body.start_state, end_states=[_CLOSED]))

    # -- dispatch --------------------------------------------------------------------------
    @_depth_limited
    def compile(self, node: Any, pointer: str) -> StateMachine | None:
        """The machine for `node`, or None when nothing is valid (a false schema). A schema
        object used in several places compiles once (schemas are DAGs, often)."""
        entered = self.enter(node)
        key = (id(node), self.bound[-1])
        try:
            if key in self.compiled:
                return self.compiled[key][1]
            if key in self.compiling:  # met inside itself (an allOf of a $ref, say)
                forward = self.compiling[key]
                if forward is None:
                    forward = self.compiling[key] = Forward(name=f"schema at {pointer}")
                return forward
            self.nodes += 1
            if self.nodes > MAX_SCHEMA_NODES:
                raise SchemaError(f"{pointer}: the schema multiplies out into more than "
                                  f"{MAX_SCHEMA_NODES} subschemas (MAX_SCHEMA_NODES): unions "
                                  "inside allOf, or oneOf branches kept apart, combine")
            self.compiling[key] = None
            try:
                machine = self.compile_new(node, pointer)
            finally:
                forward = self.compiling.pop(key)
            if forward is not None:
                if machine is None:
                    raise SchemaError(f"{pointer}: the schema refers to itself and allows "
                                      "nothing")
                machine = forward.set(machine)
            self.compiled[key] = (node, machine)  # the node is kept so its id stays its own
            return machine
        finally:
            if entered:
                self.bound.pop()

    def enter(self, node: Any) -> bool:
        """Track the dynamic scope: when `node` starts a schema resource with dynamic anchors
        not bound yet, bind them to it (the outermost resource wins) and say so."""
        names = self.dynamic_names.get(self.bases.get(id(node), (None, None))[1])
        if not names:
            return False
        outer = dict(self.bound[-1])
        base = self.bases[id(node)][1]
        fresh = {name: base for name in names if name not in outer}
        if not fresh:
            return False
        self.bound.append(tuple(sorted({**outer, **fresh}.items())))
        return True

    def compile_new(self, node: Any, pointer: str) -> StateMachine | None:
        if node is True or node == {}:
            return self.any_value
        if node is False:
            return None
        if not isinstance(node, dict):
            raise SchemaError(f"{pointer}: a schema is an object or a boolean, got {node!r}")
        if "$ref" in node:
            uri = self.absolute(node, node["$ref"])
            target = self.ref(uri, pointer)
            rest = {} if self.ref_alone else {k: v for k, v in node.items()
                                              if k != "$ref" and k not in _ANNOTATIONS}
            if rest:
                return self.compile(self.derived(node, {
                    **rest, "allOf": [*rest.get("allOf", ()), {"$ref": uri}]}), pointer)
            return target
        for key in ("$dynamicRef", "$recursiveRef"):
            if key in node:
                rest = {k: v for k, v in node.items() if k != key and k not in _ANNOTATIONS}
                ref = {"$ref": self.dynamic_target(node, pointer)}
                if rest:
                    ref = self.derived(node, {**rest, "allOf": [*rest.get("allOf", ()), ref]})
                return self.compile(ref, pointer)
        if "allOf" in node:
            merged = self.merge_all(node, pointer)
            if "allOf" not in merged:
                return self.compile(merged, pointer)
            if not any(k in merged for k in ("anyOf", "oneOf", "if", "contains")):
                raise SchemaError(f"{pointer}/allOf: these schemas could not be merged")
            node = merged  # unions and conditions that did not merge are left: taken one
            # at a time below, the others merged into each case
        if node.get("type") == []:
            return None  # types that exclude each other: the unions need not be expanded
        for key in ("anyOf", "oneOf"):
            if key in node:
                return self.union(node, key, pointer)
        if "not" in node:
            # (literal values, patterns and integers are left out where the type is compiled)
            opposite = None if _left_out_where_typed(node["not"]) \
                else self.opposite(node["not"], f"{pointer}/not")
            if opposite is not None:
                rest = {k: v for k, v in node.items() if k != "not"}
                return self.compile(_all_of([rest, opposite]) if rest else opposite, pointer)
            node = self.negate(node, pointer)
            if node is None:
                return None
        dependent = _dependent_schemas(node)
        if dependent:
            return self.dependent(node, dependent, pointer)
        if "if" in node:
            switched = _switch(node)
            return self.compile(switched if switched is not None
                                else self.conditional(node, pointer), pointer)
        if "const" in node or "enum" in node:
            return self.enum(node, pointer)  # (which applies the rest, `not` too)
        excluded = None
        parts = _alternatives(node.get("not"))
        fractional = any(_is_type(p, "integer") for p in parts)  # numbers, not integers
        if fractional:
            node = {k: v for k, v in node.items() if k != "not"}
            kept = [p for p in parts if not _is_type(p, "integer")]
            if kept:
                node["not"] = _any_of(kept)
        if "not" in node and node["not"] is not True and node["not"] != {}:
            excluded = _exclusion(node["not"])
            if excluded is None:
                self.fail(f"{pointer}/not", "not", "not of this schema is not supported yet "
                          "(only of types, literal values, string patterns and what "
                          "opposite() rewrites)")
        types = node.get("type")
        if types is None:
            types = ["object", "array", "string", "number", "boolean", "null"]
        elif isinstance(types, str):
            types = [types]
        if "number" in types and "integer" in types:
            types = [t for t in types if t != "integer"]
        machines = []
        for t in types:
            m = self.typed(t, node, pointer, excluded, fractional)
            if m is not None:
                machines.append(m)
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def typed(self, t: str, node: dict, pointer: str,
              excluded: tuple[list, list[str]] | None = None,
              fractional: bool = False) -> StateMachine | None:
        """The values of JSON type `t` that `node` allows, less the `excluded` ones (literal
        values, and strings that patterns find a match in: see `_exclusion`), and less the
        integers when `fractional`."""
        values, patterns = excluded or ([], [])
        banned = [v for v in values if _json_type(v) == t
                  or (_json_type(v) == "integer" and t == "number")
                  or (_json_type(v) == "number" and t == "integer" and float(v).is_integer())]
        if t == "string":
            return self.string(node, pointer, banned, patterns)
        if t in ("boolean", "null"):
            words = ["true", "false"] if t == "boolean" else ["null"]
            left = [w for w in words if json.loads(w) not in banned]
            return AnyOf(*map(Phrase, left)) if len(left) > 1 else \
                Phrase(left[0]) if left else None
        if banned and t in ("array", "object"):  # as "differs from each" (see _unlike)
            rest = {**{k: v for k, v in node.items() if k != "not"}, "type": t}
            return self.compile(_all_of([rest, *({"anyOf": _unlike(v)} for v in banned)]),
                                pointer)
        if banned:
            self.fail(f"{pointer}/not", "not", f"leaving out a value of type {t} (an "
                      "exact automaton would need every spelling of it) is not supported")
        if t in ("number", "integer"):
            if fractional:
                return None if t == "integer" else self.fraction(node, pointer)
            return self.number(node, pointer, integer=(t == "integer"))
        if t == "object":
            return self.object(node, pointer)
        if t == "array":
            return self.array(node, pointer)
        raise SchemaError(f"{pointer}/type: unknown type {t!r}")

    # -- references --------------------------------------------------------------------------
    def index(self, doc: Any, base: str) -> None:
        """Record the resources ($id) and anchors of `doc`, read against `base`."""
        self.resources.setdefault(base, doc)
        todo = [(doc, base)]
        seen: set[tuple[int, str]] = set()  # a schema object shared by several parents
        while todo:
            node, here = todo.pop()
            if (id(node), here) in seen:
                continue
            seen.add((id(node), here))
            if isinstance(node, list):
                todo.extend((v, here) for v in node)
                continue
            if not isinstance(node, dict):
                continue
            ident = node.get("id") if self.draft4 else node.get("$id")  # ($id: from draft 6)
            if self.ref_alone and "$ref" in node:
                ident = None  # drafts 4-7: the $ref's siblings, $id too, are ignored
            if isinstance(ident, str):
                if ident.startswith("#"):
                    self.anchors[(here, ident[1:])] = node
                else:
                    here, _, frag = urljoin(here, ident).partition("#")
                    self.resources.setdefault(here, node)
                    if frag:
                        self.anchors[(here, frag)] = node
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    self.anchors.setdefault((here, node[key]), node)
            if isinstance(node.get("$dynamicAnchor"), str):
                self.dynamic_names.setdefault(here, []).append(node["$dynamicAnchor"])
            if node.get("$recursiveAnchor") is True:
                self.dynamic_names.setdefault(here, []).append(RECURSIVE)
            self.bases[id(node)] = (node, here)
            # only where schemas are: an "$id" inside an unknown keyword is data
            todo.extend((v, here) for _, _, v in _subschemas(node))

    def derived(self, node: dict, new: dict) -> dict:
        """`new`, a rewrite of `node`, read against the same base URI."""
        if id(node) in self.bases:
            self.bases[id(new)] = (new, self.bases[id(node)][1])
        return new

    def rebased(self, new: dict, node: dict) -> dict:
        """`new`, made from `node`'s keywords, with its references made absolute against
        `node`'s base URI (a merged schema has no base of its own)."""
        keys = [k for k in ("$ref", "$dynamicRef", "$recursiveRef")
                if isinstance(new.get(k), str)]
        if not keys:
            return new
        return {**new, **{k: self.absolute(node, new[k]) for k in keys}}

    def same_meaning(self, a: Any, b: Any) -> bool:
        """Whether two schemas are the same JSON with their references read against the
        same base URIs (so that they point to the same places)."""
        if a is b:
            return True
        if not _same(a, b):
            return False
        todo = [(a, b)]
        while todo:
            x, y = todo.pop()
            if isinstance(x, dict):
                if ("$ref" in x or "$dynamicRef" in x or "$recursiveRef" in x) and \
                        self.bases.get(id(x), (None, ""))[1] != self.bases.get(id(y), (None, ""))[1]:
                    return False
                todo.extend((x[k], y[k]) for k in x)
            elif isinstance(x, list):
                todo.extend(zip(x, y))
        return True

    def dynamic_scope(self, node: Any, scope: str | None) -> str | None:
        """`node`'s resource when it defines dynamic anchors (a schema merged from `node`
        enters it, see `enter`), else `scope`."""
        base = self.bases.get(id(node), (None, None))[1]
        return base if self.dynamic_names.get(base) else scope

    def absolute(self, node: dict, ref: str) -> str:
        """The absolute URI a `$ref` found in `node` points to."""
        return urljoin(self.bases.get(id(node), (None, ""))[1], ref)

    def dynamic_target(self, node: dict, pointer: str) -> str:
        """The absolute URI a `$dynamicRef` (or draft 2019-09 `$recursiveRef`) in `node`
        points to from here: where its first target is a dynamic anchor, the outermost
        resource of the dynamic scope that defines the same one; else its plain target."""
        key = "$dynamicRef" if "$dynamicRef" in node else "$recursiveRef"
        uri = self.absolute(node, node[key])
        target = self.resolve(uri, f"{pointer}/{key}")
        base, _, name = uri.partition("#")
        if key == "$recursiveRef":
            if name or not isinstance(target, dict) or target.get("$recursiveAnchor") is not True:
                return uri
            name = RECURSIVE
        elif name not in self.dynamic_names.get(base, ()):
            return uri
        outer = dict(self.bound[-1]).get(name)
        if outer is None:
            return uri
        return outer + ("#" + name if name != RECURSIVE else "")

    def ref(self, ref: str, pointer: str) -> StateMachine | None:
        """The machine a reference stands for (None: nothing is valid there); while its
        target compiles, a Forward, which closes recursion."""
        key = (ref, self.bound[-1])
        if key in self.refs:
            forward = self.refs[key]
            if forward is not None and forward.target is None:
                self.recursive.add(key)
            return forward
        target = self.resolve(ref, pointer)
        forward = self.refs[key] = Forward(name=f"$ref {ref}")
        try:
            machine = self.compile(target, ref)
        except SchemaError:  # (a caller may catch it and go on: no unset Forward is left)
            del self.refs[key]
            self.recursive.discard(key)
            raise
        if machine is None:
            if key in self.recursive:  # the Forward is in use, and nothing can replace it
                raise SchemaError(f"{pointer}/$ref: {ref} refers to itself and allows "
                                  "nothing")
            self.refs[key] = None
            return None
        chained = machine
        while isinstance(chained, Forward):  # references that lead only back here
            if chained is forward:
                raise SchemaError(f"{pointer}/$ref: {ref} refers only to itself")
            chained = chained.target
        forward.set(machine)
        return forward

    def resolve(self, ref: str, pointer: str) -> Any:
        """The schema an absolute reference (see `absolute`) points to."""
        base, _, fragment = ref.partition("#")
        doc = self.resources.get(base)
        if doc is None:
            if self.retrieve is None:
                raise SchemaError(f"{pointer}/$ref: {ref!r} is remote and no retrieve= was given")
            try:
                doc = self.retrieve(base)
            except Exception as e:
                raise SchemaError(f"{pointer}/$ref: retrieving {base!r} failed: {e}") from None
            self.drafts[base] = _draft(doc) if isinstance(doc, dict) and "$schema" in doc \
                else self.draft
            doc = self.in_dialect(doc, f"{base}#", self.drafts[base])
            self.index(doc, base)
        if not fragment:
            return doc
        fragment = unquote(fragment)
        if not fragment.startswith("/"):
            found = self.anchors.get((base, fragment))
            if found is None:
                raise SchemaError(f"{pointer}/$ref: anchor {fragment!r} not found")
            return found
        node = doc
        for part in fragment.split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise SchemaError(f"{pointer}/$ref: {ref!r} does not resolve") from None
        if isinstance(node, dict) and id(node) not in self.in_dialect_ids:
            # a schema where no keyword holds one (under "x-defs", say): its draft's keywords
            # only, too
            if id(node) not in self.outside:
                self.outside[id(node)] = (node, self.in_dialect(
                    node, ref, self.drafts.get(base, self.draft)))
            node = self.outside[id(node)][1]
        return node

    def resolve_shallow(self, node: Any, pointer: str) -> Any:
        """`node` with a top-level $ref and allOf merged in (see `merge_all`): the same
        schema, flatter; as it was where they do not merge."""
        for _ in range(16):  # (a merged target may have a $ref of its own)
            if isinstance(node, dict) and "$ref" in node:
                siblings = {} if self.ref_alone else {k: v for k, v in node.items()
                                                      if k != "$ref"}
                node = {**siblings, "allOf": [*siblings.get("allOf", ()),
                                              {"$ref": self.absolute(node, node["$ref"])}]}
            if not isinstance(node, dict) or "allOf" not in node:
                break
            try:
                node = self.merge_all(node, pointer)
            except SchemaError:
                break
            if not isinstance(node, dict) or "$ref" not in node:
                break
        return node

    def opposite(self, sub: Any, pointer: str, depth: int = 0,
                 keys: frozenset | None = None, within: dict | None = None) -> Any:
        """A schema exactly the instances `sub` rejects, where a simple rewrite gives one:
        a bound flipped, required names absent, De Morgan over anyOf/allOf/oneOf, a reference
        to the opposite of its target; None otherwise (`negate` handles the type forms).
        `keys`: the only property names the instances in question can have (None: any),
        which lets a closed object shape be negated. `within`: a schema those instances
        match; what it already asks of them (see `_holds_within`) cannot fail and is left
        out, which keeps the unions the opposite makes small."""
        if sub is True or sub == {}:
            return False
        if sub is False:
            return True
        if not isinstance(sub, dict) or depth >= MAX_SCHEMA_DEPTH or SOME_PROPERTY in sub:
            return None
        node = sub
        # unknown keywords are annotations
        sub = _numeric_bounds({k: v for k, v in sub.items() if k not in _ANNOTATIONS
                               and (k in _VALIDATION or k in _APPLICATORS)})
        if "$ref" in sub:
            ref = self.absolute(node, sub["$ref"])
            if self.ref_alone:  # drafts 4-7: the siblings of $ref are ignored
                return self.opposite_ref(ref, pointer, depth, keys)
            sub["$ref"] = ref  # (an absolute URI needs no base when regrouped below)
        if "items" in sub and not isinstance(sub["items"], list):
            sub.pop("additionalItems", None)  # ignored beside a single items schema
        if within is not None:
            within = _numeric_bounds(within)
            sub = {k: v for k, v in sub.items()
                   if k in _OBJECT_SHAPE or not _holds_within(k, v, within)}
        if not sub:
            return False
        if set(sub) == {"$ref"}:
            return self.opposite_ref(sub["$ref"], pointer, depth, keys)
        if "if" not in sub:  # then and else alone do nothing
            sub = {k: v for k, v in sub.items() if k not in ("then", "else")}
            if not sub:
                return False
        shape = {k: v for k, v in sub.items() if k in _OBJECT_SHAPE}
        if shape and len(shape) == len(sub):
            return self.opposite_shape(shape, pointer, depth, keys, within)
        condition = {k: v for k, v in sub.items() if k in ("if", "then", "else")}
        if condition and len(condition) == len(sub):
            return self.opposite_condition(condition, pointer, depth, keys)
        if len(sub) > 1:
            # a conjunction of keywords that each hold on their own (the object shape and
            # the condition each as one): one of them fails
            singles = [k for k in sub if k not in shape and k not in condition]
            groups = [g for g in (shape, condition) if g] + [{k: sub[k]} for k in singles]
            if not set(singles) <= _SELF_CONTAINED:
                return None
            parts = [self.opposite(g, pointer, depth + 1, keys, within) for g in groups]
            if any(p is None for p in parts):
                return None
            return _any_of(parts)
        (key, value), = sub.items()
        if key in ("enum", "const"):
            return {"not": {key: value}}  # compiled as the values left out (`_exclusion`)
        if key == "pattern" and isinstance(value, str):
            return {"type": "string", "not": {"type": "string", "pattern": value}}
        if key == "format" and isinstance(value, str):
            return _format_opposite(value)
        if key == "items" and isinstance(value, (dict, bool)):
            fails = self.opposite(value, pointer, depth + 1)
            if fails is None:
                return None
            return {"type": "array", "contains": fails} if fails is not False else False
        if key == "anyOf" and isinstance(value, list) and value:
            resolved = [self.resolve_shallow(b, pointer) for b in value]
            return self.opposite_union(value, resolved, pointer, depth, keys)
        if key == "allOf" and isinstance(value, list) and value:
            parts = [self.opposite(v, pointer, depth + 1, keys) for v in value]
            return None if any(p is None for p in parts) else _any_of(parts)
        if key == "oneOf" and isinstance(value, list) and value:
            return self.opposite_one_of(value, pointer, depth, keys)
        if key == "not":
            return value
        if key == "type":
            banned = {value} if isinstance(value, str) else set(value)
            if "integer" in banned and "number" not in banned:
                # the other types, and numbers with a fraction (see `number`)
                others = sorted(_ALL_TYPES - banned - {"number"})
                fractions = {"type": "number", "not": {"type": "integer"}}
                return {"anyOf": [{"type": others}, fractions]} if others else fractions
            return {"type": sorted(_ALL_TYPES - banned)}
        # the keywords below hold for every value of the other types, so their opposite is
        # a value of their own type that breaks them
        if key == "required" and isinstance(value, list):
            if not value:
                return False
            return {"type": "object", "anyOf": [{"properties": {n: False}} for n in value]}
        if key == "propertyNames":
            names = self.resolve_shallow(value, pointer)
            names = {k: v for k, v in names.items() if k not in _ANNOTATIONS} \
                if isinstance(names, dict) else names
            if names is True or names == {}:
                return False  # no name fails
            if names is False or names == {"not": {}}:
                return {"type": "object", "minProperties": 1}  # any name fails
            left_out = _exclusion(names["not"]) if isinstance(names, dict) \
                and set(names) == {"not"} else None
            if left_out is not None and not left_out[1]:
                # the names it lists fail: one of them present (where there are more, the
                # names failing are no list, and "some key is one of them" has no schema)
                listed = [n for n in left_out[0] if isinstance(n, str)]
                return {"type": "object", "anyOf": [{"required": [n]} for n in
                                                    dict.fromkeys(listed)]} if listed else False
            return {"type": "object",
                    SOME_PROPERTY: [{"names": {"not": names}, "value": True, "else": False}]}
        if key in ("dependentRequired", "dependencies") and isinstance(value, dict) \
                and all(isinstance(v, list) for v in value.values()):
            # a name present, and one it needs absent
            broken = [{"required": [name], "anyOf": [{"properties": {n: False}} for n in needs]}
                      for name, needs in value.items() if needs]
            return {"type": "object", "anyOf": broken} if broken else False
        flips = {"minItems": ("array", "maxItems", -1), "maxItems": ("array", "minItems", 1),
                 "minLength": ("string", "maxLength", -1), "maxLength": ("string", "minLength", 1),
                 "minProperties": ("object", "maxProperties", -1),
                 "maxProperties": ("object", "minProperties", 1)}
        if key in flips and isinstance(value, int) and not isinstance(value, bool):
            kind, other, step = flips[key]
            if value + step < 0:
                return False  # a minimum of 0: every value passes
            return {"type": kind, other: value + step}
        bounds = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
                  "exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}
        if key in bounds and isinstance(value, (int, float)) and not isinstance(value, bool):
            return {"type": "number", bounds[key]: value}
        if key == "uniqueItems" and value is False:
            return False
        return None

    def opposite_condition(self, condition: dict, pointer: str, depth: int,
                           keys: frozenset | None) -> Any:
        """The opposite of if/then/else: the condition holds and `then` fails, or it fails
        and `else` does."""
        cond = condition["if"]
        parts = [self.opposite(condition.get(k, True), pointer, depth + 1, keys)
                 for k in ("if", "then", "else")]
        if any(p is None for p in parts):
            return None
        not_if, not_then, not_else = parts
        return _any_of([_all_of([cond, not_then]), _all_of([not_if, not_else])])

    def opposite_ref(self, ref: str, pointer: str, depth: int,
                     keys: frozenset | None) -> Any:
        """The opposite of `{"$ref": ref}`: a reference to a schema resource made once for
        it, so that the opposite of a recursive schema recurses too (False or True when it
        is that simple)."""
        if keys is not None:  # (particular to the caller: not kept)
            return self.opposite(self.resolve(ref, pointer), pointer, depth + 1, keys)
        if ref in self.opposites:
            made = self.opposites[ref]
            if made is None:
                return None
            found = self.resources.get(made)  # absent while it is being made: a cycle
            return found if isinstance(found, bool) else {"$ref": made}
        made = "pse:opposite/" + quote(ref, safe="")  # (no "#": a resource of its own)
        self.opposites[ref] = made
        before = set(self.opposites)
        fails = self.opposite(self.resolve(ref, pointer), pointer, depth + 1)
        if fails is None:
            # the opposites made meanwhile may refer to this one: made again if needed
            for other in set(self.opposites) - before:
                del self.opposites[other]
            self.opposites[ref] = None
            return None
        self.resources[made] = fails
        return fails if isinstance(fails, bool) else {"$ref": made}

    def opposite_one_of(self, branches: list, pointer: str, depth: int,
                        keys: frozenset | None) -> Any:
        """The opposite of oneOf: no branch holds, or two do (of those that may overlap:
        see `_pair_disjoint`). None beyond MAX_ONE_OF_PAIRS such pairs."""
        resolved = [self.resolve_shallow(b, pointer) for b in branches]
        none = self.opposite_union(branches, resolved, pointer, depth, keys)
        if none is None:
            return None
        pairs = [_all_of([branches[i], branches[j]]) for i in range(len(branches))
                 for j in range(i + 1, len(branches))
                 if not _pair_disjoint(resolved[i], resolved[j])]
        if len(pairs) > MAX_ONE_OF_PAIRS:
            return None
        return _any_of([none, *pairs])

    def opposite_union(self, branches: list, resolved: list, pointer: str, depth: int,
                       keys: frozenset | None) -> Any:
        """The values no branch holds for: every branch's opposite. Object branches told
        apart by the value of one property they require (a discriminator) are taken case by
        case instead: that property outside every branch's values, or inside one branch's
        and that branch failing. Unlike the conjunction of opposites, each an anyOf, whose
        union is their product, this grows with the branches. (`resolved`: the branches
        resolved shallowly, see `resolve_shallow`.)"""
        name, cases = _discriminator(resolved)
        parts = [self.opposite(b, pointer, depth + 1, keys)
                 for i, b in enumerate(branches) if i not in cases]
        if cases:
            every = [v for values in cases.values() for v in values]
            outside = self.opposite({"type": "object", "required": [name],
                                     "properties": {name: {"enum": every}}}, pointer, depth + 1,
                                    keys)
            inside = [self.opposite(branches[i], pointer, depth + 1, keys) for i in cases]
            if outside is None or any(p is None for p in inside):
                return None
            parts.append(_any_of([outside, *(
                _all_of([{"type": "object", "required": [name],
                          "properties": {name: {"enum": values}}}, fails])
                for values, fails in zip(cases.values(), inside))]))
        return None if any(p is None for p in parts) else _all_of(parts)

    def opposite_shape(self, shape: dict, pointer: str, depth: int,
                       keys: frozenset | None, within: dict | None = None) -> Any:
        """The opposite of properties, patternProperties and additionalProperties (any of
        them): an object with a listed property present and failing its schema, a key a
        pattern finds failing the pattern's schema, or another key failing
        additionalProperties. Where the names the object can have are known (`keys`), these
        are required names; else the keys not listed are a SOME_PROPERTY requirement."""
        props = shape.get("properties") or {}
        patterns = shape.get("patternProperties") or {}
        if not isinstance(props, dict) or not isinstance(patterns, dict):
            return None
        branches = []
        held = (within or {}).get("properties") or {}
        for name, schema in props.items():
            if keys is not None and name not in keys:
                continue  # never present
            if isinstance(held, dict) and name in held and _same(held[name], schema):
                continue  # `within` asks the same of it
            fails = self.opposite(schema, pointer, depth + 1)
            if fails is None:
                return None
            if fails is not False:
                branches.append({"required": [name], "properties": {name: fails}})
        additional = shape.get("additionalProperties", True)
        taken = _any_of(([{"enum": list(props)}] if props else [])
                        + [{"pattern": p} for p in patterns])  # (False: no name)
        for names, schema in [*(({"pattern": p}, s) for p, s in patterns.items()),
                              ({"not": taken} if taken is not False else True, additional)]:
            fails = self.opposite(schema, pointer, depth + 1)
            if fails is None:
                return None
            if fails is False:
                continue
            if keys is None:
                branches.append({SOME_PROPERTY: [{"names": names, "value": fails,
                                                  "else": schema}]})
                continue
            allowed = self.property_names_dfa({"propertyNames": names}, pointer)
            for name in sorted(keys):
                if allowed is None or allowed.matches(_content(name)):
                    branches.append({"required": [name], "properties": {name: fails}})
        return {"type": "object", "anyOf": branches} if branches else False

    def negate(self, node: dict, pointer: str) -> dict | None:
        """`node` with its `not` folded in where that is exact: `not {}` (nothing is valid),
        `not false` (no constraint), `not {"type": ...}` (those types left out). None when
        nothing is valid; `not` stays in the node otherwise (and is refused)."""
        sub = node["not"]
        rest = {k: v for k, v in node.items() if k != "not"}
        if sub is True or sub == {}:
            return None
        if sub is False:
            return rest
        if isinstance(sub, dict) and set(sub) - _ANNOTATIONS == {"type"}:
            banned = {sub["type"]} if isinstance(sub["type"], str) else set(sub["type"])
            if "number" in banned:
                banned.add("integer")
            current = rest.get("type", sorted(_ALL_TYPES | {"integer"}))
            current = [current] if isinstance(current, str) else list(current)
            if "integer" in banned and "number" in current:
                return node  # numbers that are not integers: not expressible here
            kept = [t for t in current if t not in banned]
            if not kept:
                return None
            return {**rest, "type": kept}
        return node

    # -- composition ---------------------------------------------------------------------------
    def dependent(self, node: dict, dependent: dict, pointer: str) -> StateMachine | None:
        """`dependentSchemas` (draft 4-7 `dependencies` with schema values): for the first
        such key, the union of "present, and the object also matches its schema" and
        "absent"; the rest is handled in each branch."""
        name, sub = next(iter(dependent.items()))
        rest = {k: v for k, v in node.items() if k not in ("dependentSchemas", "dependencies")}
        for key in ("dependentSchemas", "dependencies"):
            left = {k: v for k, v in (node.get(key) or {}).items() if k != name}
            if left:
                rest[key] = left
        where = f"{pointer}/dependentSchemas/{_escape(name)}"
        absent = _merge(rest, {"properties": {name: False}}, lambda k: None)
        branches = [self.compile(absent, pointer)]
        if sub is not False:
            present = {**rest, "allOf": [*rest.get("allOf", ()),
                                         {"type": "object", "required": [name]}, sub]}
            branches.append(self.compile(present, where))
        machines = [m for m in branches if m is not None]
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def conditional(self, node: dict, pointer: str) -> Any:
        """`if`/`then`/`else` where it folds away: a boolean `if`, or `then` and `else` that
        constrain nothing."""
        cond = node["if"]
        rest = {k: v for k, v in node.items() if k not in ("if", "then", "else")}
        then, other = node.get("then", True), node.get("else", True)
        if cond is True or cond == {}:
            branch = then
        elif cond is False:
            branch = other
        elif then in (True, {}) and other in (True, {}) and not _reads_evaluation(rest):
            return rest
        else:
            # (if and then) or (not if and else), where `not if` has a schema
            fails = self.opposite(cond, f"{pointer}/if")
            if fails is None:
                self.fail(f"{pointer}/if", "if", "if/then/else with a condition whose "
                          "opposite has no schema (see opposite) is not supported yet")
                return rest
            if fails is False:  # the condition holds for every value (annotations only)
                branch = then
            elif fails is True:
                branch = other
            else:
                either = [b for b in (_all_of([cond, then]), _all_of([fails, other]))
                          if b is not False]
                if not either:
                    return False
                branch = either[0] if len(either) == 1 else {"anyOf": either}
                return _all_of([rest, branch]) if rest else branch
        if branch is False:
            return False
        return {**rest, "allOf": [*rest.get("allOf", ()), branch]} if branch not in (True, {}) \
            else rest

    def merge_all(self, node: dict, pointer: str, merging: frozenset = frozenset()) -> dict:
        merged = _without_dangling(
            self.rebased({k: v for k, v in node.items() if k != "allOf"}, node))
        scope = None  # a resource with dynamic anchors merged in (see `enter`)
        for i, sub in enumerate(node["allOf"]):
            where = f"{pointer}/allOf/{i}"
            if sub is True:
                continue
            if sub is False:
                return {"not": {}, "type": []}
            scope = self.dynamic_scope(sub, scope)  # its own resource, before its $ref's
            if "$ref" not in sub and ("$dynamicRef" in sub or "$recursiveRef" in sub):
                # resolved here, in this dynamic scope and against the sub's own base URI
                sub = {**{k: v for k, v in sub.items()
                          if k not in ("$dynamicRef", "$recursiveRef")},
                       "$ref": self.dynamic_target(sub, where)}
            inner = merging  # the references this sub's own allOf sits inside
            entered = None  # the outermost resource of the chain with dynamic anchors
            while "$ref" in sub:  # (a target may have a $ref of its own)
                ref = self.absolute(sub, sub["$ref"])
                if ref in inner:
                    raise SchemaError(f"{where}/$ref: {ref} refers back to itself inside "
                                      "allOf; such a schema cannot be merged")
                target = self.resolve(ref, where)
                if target is False:
                    return {"not": {}, "type": []}
                own = self.rebased(target, target) if isinstance(target, dict) else {}
                siblings = {} if self.ref_alone else self.rebased(  # (drafts 4-7: ignored)
                    {k: v for k, v in sub.items() if k != "$ref"}, sub)
                sub = _merge(own, siblings, lambda k: self.fail(
                    where, k, "conflicting values")) if siblings else own
                inner = inner | {ref}
                if entered is None:
                    entered = self.dynamic_scope(target, None)
                    scope = entered or scope
            if "allOf" in sub:
                sub = self.merge_all(sub, where, inner)
            scope = self.dynamic_scope(sub, scope)
            if _reads_evaluation(sub):
                self.fail(where, "unevaluatedProperties", "unevaluatedProperties/Items inside "
                          "allOf or a $ref with siblings is not supported yet")
            merged = _merge(merged, _without_dangling(sub), lambda k: self.fail(
                f"{pointer}/allOf/{i}", k, "conflicting values"), self.same_meaning)
        if scope is not None:
            self.bases[id(merged)] = (merged, scope)
        return merged

    def union(self, node: dict, key: str, pointer: str) -> StateMachine | None:
        rest = {k: v for k, v in node.items() if k != key}
        branches = node[key]
        self.check_evaluation(rest, branches, key, pointer)
        if key == "oneOf" and len(branches) > 1:
            branches = self.exclusive(branches, rest, pointer)
        machines = []
        for i, sub in enumerate(branches):
            if rest and sub is not False:
                sub = {**rest, "allOf": [*rest.get("allOf", ()), sub]} if sub is not True \
                    else rest
            m = self.compile(sub, f"{pointer}/{key}/{i}")
            if m is not None:
                machines.append(m)
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    def check_evaluation(self, rest: dict, branches: list, key: str, pointer: str) -> None:
        """Each branch is compiled with the keywords beside the union, unevaluated ones too:
        exact where one branch at most matches (the keys or items it evaluates are those
        the union does), and for unevaluatedItems beside anyOf (its branches evaluate
        leading items: the one evaluating most decides). Where branches may overlap,
        unevaluatedProperties beside anyOf would need the keys of every branch that
        matches, and oneOf's branches get opposites (see exclusive) whose keys and items
        would count as evaluated though they are not: refused."""
        if not _reads_evaluation(rest) or len(branches) < 2:
            return
        word = "unevaluatedProperties" if rest.get("unevaluatedProperties", True) not in (
            True, {}) else "unevaluatedItems"
        if key == "anyOf" and word == "unevaluatedItems":
            return
        resolved = self.resolved_branches(branches, rest, pointer)
        if all(_pair_disjoint(a, b) for a, b in itertools.combinations(resolved, 2)):
            return
        self.fail(f"{pointer}/{word}", word, f"beside {key} whose branches may overlap is "
                  "not supported: what a branch evaluates counts only where it matches")

    def resolved_branches(self, branches: list, rest: dict, pointer: str) -> list:
        """A union's branches with the keywords beside it, resolved (see resolve_shallow)."""
        return [self.resolve_shallow(
            {**rest, "allOf": [*rest.get("allOf", ()), b]} if rest and isinstance(b, dict)
            else rest if rest and b is True else b, pointer) for b in branches]

    def exclusive(self, branches: list, rest: dict, pointer: str) -> list:
        """oneOf's branches as anyOf branches: each one also fails the branches it may
        overlap with (their opposites, see `opposite`); branches that provably share no value
        are left as they are."""
        resolved = self.resolved_branches(branches, rest, pointer)
        alone = [self.resolve_shallow(b, pointer) for b in branches]  # (`rest` holds anyway)
        out = []
        for i, branch in enumerate(branches):
            others = [j for j in range(len(branches))
                      if j != i and not _pair_disjoint(resolved[i], resolved[j])]
            keys = _closed_keys(resolved[i])
            within = resolved[i] if isinstance(resolved[i], dict) else None
            fails = []
            for j in others:
                fails.append(self.opposite(alone[j], f"{pointer}/oneOf/{j}", keys=keys,
                                           within=within))
                if fails[-1] is None:
                    self.fail(f"{pointer}/oneOf/{j}", "oneOf", "branches may overlap, and "
                              "this one has no opposite schema (see opposite) to keep the "
                              "others from matching it too")
                    return branches  # not strict: anyOf
            out.append(_all_of([branch, *fails]))
        return out

    def enum(self, node: dict, pointer: str) -> StateMachine | None:
        """The listed values that the schema's other keywords allow too."""
        if "const" in node:
            values, key = [node["const"]], "const"
        else:
            values, key = node["enum"], "enum"
            if not isinstance(values, list) or not values:
                raise SchemaError(f"{pointer}/enum: must be a non-empty array")
        rest = {k: v for k, v in node.items() if k not in ("const", "enum")
                and k not in _ANNOTATIONS}
        if "const" in node and "enum" in node:
            rest["enum"] = node["enum"]
        excluded = _exclusion(rest.get("not"))
        if excluded is not None and not excluded[1]:  # other values: left out here
            out = {_json_key(v) for v in excluded[0]}
            values = [v for v in values if _json_key(v) not in out]
            del rest["not"]
        elif _is_type(rest.get("not"), "integer") and not self.draft4:  # numbers with a
            # fraction, other types (in draft 4, 1.0 too: left to the check below)
            values = [v for v in values if _json_type(v) != "integer"
                      and not (_json_type(v) == "number" and float(v).is_integer())]
            del rest["not"]
        elif rest.get("not") not in (None, True, {}) and not self.draft4:
            try:  # the values the negated schema does not match (1 and 1.0 alike: not 4)
                fails = self.checker(rest["not"], pointer)
            except SchemaError:
                fails = False  # (left to the rest below)
            if fails is not False:
                values = [v for v in values if fails is None or not fails.matches(_dumps(v))]
                del rest["not"]
        spelling = None  # draft 4: which spellings of a whole number the rest allows
        if set(rest) == {"type"}:
            types = rest["type"] if isinstance(rest["type"], list) else [rest["type"]]
            values = _of_types(values, types)
            if self.draft4 and "number" not in types:  # 1.0 is not an integer there
                spelling = lambda text: b"." not in text and b"e" not in text  # noqa: E731
        elif rest:
            try:
                whole = self.checker(rest, pointer)
            except SchemaError:  # then in this compiler's order: a literal out of it is
                # left out (on the safe side)
                whole = _whole(self.compile(rest, pointer))
            if whole is None:
                return None
            # (draft 4: an array or object may hold 1 where 1.0 fails, or the other way
            # round; those are compiled beside the rest instead)
            values = [v for v in values if (self.draft4 and _nested_whole_number(v))
                      or any(whole.matches(t) for t in _spellings(v))]
            if self.draft4:
                spelling = whole.matches
        within = rest if self.draft4 and rest else None
        return self.literals(values, f"{pointer}/{key}", spelling, within) if values else None

    def checker(self, node: Any, pointer: str) -> StateMachine | None:
        """A machine that tells whether a literal value (compact JSON) matches `node`, with
        an object's keys in any order; None: nothing matches.

        Raises:
            SchemaError: `node` cannot be compiled so (more than KEY_BITS properties, say).
        """
        compiler = self
        if self.property_order != "any" or self.ws:
            if self.any_order is None:  # a compiler like this one, with caches of its own
                other = self.any_order = copy.copy(self)
                other.property_order, other.ws, other.any_value = "any", 0, _any_value(0)
                other.compiled, other.refs, other.compiling = {}, {}, {}
                other.recursive, other.any_order = set(), other
            compiler = self.any_order
            compiler.bound, compiler.depth = [self.bound[-1]], getattr(self, "depth", 0)
        return _whole(compiler.compile(node, pointer))

    def literals(self, values: list, pointer: str, spelling=None,
                 within: dict | None = None) -> StateMachine | None:
        """The values, compared as JSON compares them: a number in any spelling of its
        value (1, 1.0), an object's members in any order when property_order is "any".
        `spelling(text)`, where given, says which spellings of a whole number are kept (in
        draft 4, 1 is an integer and 1.0 is not); arrays and objects are compiled beside
        the schema `within`, where given, if they hold a whole number."""
        texts, integers, decimals, composite = set(), [], [], []
        for v in _distinct(values):
            if isinstance(v, (dict, list)):
                composite.append(v)
                continue
            dumped = _dumps(v)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v)):
                texts.add(dumped)
                continue
            # the decimal spellings of the same value: 1, 1.0, 1.00; 1.5, 1.50; 0, -0
            d = Decimal(str(v)) if isinstance(v, float) else Decimal(v)
            if d != d.to_integral_value():
                spelled = format(d.normalize(), "f").encode()
                texts.update((spelled, dumped))
                decimals.append(spelled)
                continue
            for sign in ((b"", b"-") if d == 0 else (b"",)):
                spelled = sign + str(int(d)).encode()
                if spelling is None or spelling(spelled):
                    texts.add(spelled)
                if spelling is None or spelling(spelled + b".0"):
                    integers.append(spelled)
                    if b"e" in dumped:  # 1e+20: as Python reads it, a float
                        texts.add(dumped)
        try:
            dfa = _literal_trie(tuple(sorted(texts)), tuple(integers), tuple(decimals)) \
                if texts or integers else None
        except GrammarError as e:
            raise SchemaError(f"{pointer}: {e}") from None
        machines = [] if dfa is None else [DfaTerminal(dfa, f"enum at {pointer}")]
        for v in composite:
            if isinstance(v, dict):
                shape = {"type": "object", "properties": {k: {"const": x} for k, x in v.items()},
                         "required": list(v), "additionalProperties": False}
            else:
                shape = {"type": "array", "prefixItems": [{"const": x} for x in v],
                         "minItems": len(v), "items": False}
            m = self.compile(_all_of([within, shape]) if within and _nested_whole_number(v)
                             else shape, pointer)
            if m is not None:
                machines.append(m)
        if not machines:
            return None
        return machines[0] if len(machines) == 1 else AnyOf(*machines)

    # -- strings -----------------------------------------------------------------------------
    def string(self, node: dict, pointer: str, banned: list = (),
               banned_patterns: list[str] = ()) -> StateMachine | None:
        """A string as `node` says, other than the `banned` ones and those the
        `banned_patterns` find a match in."""
        node = _format_length(node)
        lo = _count(node, "minLength", pointer, 0)
        hi = _count(node, "maxLength", pointer)
        if not isinstance(lo, int) or lo < 0 or (hi is not None and (not isinstance(hi, int)
                                                                     or hi < 0)):
            raise SchemaError(f"{pointer}: minLength/maxLength must be integers >= 0")
        if hi is not None and lo > hi:
            return None
        patterns = []
        if "pattern" in node:
            patterns.append((node["pattern"], True, f"{pointer}/pattern"))
        fmt = node.get("format")
        if fmt is not None:
            if fmt in FORMATS:
                patterns += _format_patterns(fmt, f"{pointer}/format")
            elif fmt in UNSUPPORTED_FORMATS:
                self.fail(f"{pointer}/format", "format", f"{fmt!r} cannot be checked exactly")
            else:
                msg = f"{pointer}/format: unknown format {fmt!r} is an annotation; ignored"
                self.warnings.append(msg)
                warnings.warn(f"pse: {msg}", stacklevel=4)
        if banned or banned_patterns:
            # the spellings patterns know (escapes only where JSON needs them), so that what
            # is left out is left out in every spelling the automaton accepts
            patterns.insert(0, ("", True, f"{pointer}/not"))
        patterns += [(p, _NOT_FOUND, f"{pointer}/not/pattern") for p in banned_patterns]
        if not patterns and not banned:
            return Chain(Phrase('"'), JsonStringContent(lo, hi), Phrase('"'))
        dfa = self.content_dfa(node, patterns, pointer, count_length=True)
        if banned:
            dfa = automaton.difference(dfa, json_names_dfa(banned))
        if not dfa.accept[0] and not dfa.trans[0]:
            return None
        if not _unrolled_length(lo, hi):
            content = self.counted_content(dfa, lo, hi, pointer)
            if content is None:
                return None
            if self.whole_strings() and not isinstance(content, CharCountedTerminal):
                return DfaTerminal(quoted(dfa), content.name)
            return Chain(Phrase('"'), content, Phrase('"'))
        if self.whole_strings():  # a unique array sees the item whole (string_values)
            return DfaTerminal(quoted(dfa), f"string at {pointer}")
        return Chain(Phrase('"'), DfaTerminal(dfa, f"string at {pointer}"), Phrase('"'))

    def counted_content(self, dfa: automaton.DFA, lo: int, hi: int | None,
                        pointer: str) -> StateMachine | None:
        """String contents `dfa` allows, of lo..hi characters counted at run time (a bound
        too large to unroll into the automaton); None: no match has such a length."""
        keyword = "maxLength" if hi is not None else "minLength"
        boundaries = char_boundaries(dfa)
        if boundaries is None:
            self.fail(f"{pointer}/{keyword}", keyword,
                      "the pattern's automaton does not tell characters apart")
            return DfaTerminal(dfa, f"string at {pointer}")  # (not strict: the length unchecked)
        fewest, most = automaton.count_range(dfa, boundaries)
        if fewest > (MAX_COUNT if hi is None else hi) or (most is not None and most < lo):
            return None  # no match has a length within the bounds
        if lo <= fewest and (hi is None or (most is not None and most <= hi)):
            return DfaTerminal(dfa, f"string at {pointer}")  # every match's length is in them
        try:
            content = CharCountedTerminal(dfa, boundaries, lo, hi, f"string at {pointer}")
        except GrammarError as e:
            self.fail(f"{pointer}/{keyword}", keyword, str(e))
            return DfaTerminal(dfa, f"string at {pointer}")
        return content if content.matches_some_length() else None

    def content_dfa(self, node: dict, patterns: list, pointer: str,
                    count_length: bool = False) -> automaton.DFA:
        """String content (as JSON spells it) that the patterns and length bounds allow
        (`count_length`: bounds too large to unroll are left to the caller to count)."""
        lo = _count(node, "minLength", pointer, 0)
        hi = _count(node, "maxLength", pointer)
        if hi is not None and lo > hi:
            return automaton.union([])  # no length fits
        dfa = None
        # search: True, a match anywhere; False, the whole string; None, strings the pattern
        # matches are left out; _NOT_FOUND, those it finds a match in are
        for pattern, search, where in patterns:
            try:
                p = compile_regex(pattern, 0, search=search is True or search is _NOT_FOUND,
                                  char_class=json_char_class, ecma=True)
                if search is None or search is _NOT_FOUND:
                    dfa = automaton.difference(dfa, p)
                    continue
            except GrammarError as e:
                raise SchemaError(f"{where}: {e}") from None
            dfa = p if dfa is None else self.intersect(dfa, p, where)
        if dfa is None:
            dfa = _at_least_dfa(0)
        if lo > 0 or hi is not None:
            if not _unrolled_length(lo, hi):
                if not count_length:
                    self.fail(pointer, "maxLength" if hi is not None else "minLength",
                              f"a length bound over {MAX_UNROLLED_LENGTH} on key names "
                              "together with a pattern or format is not supported")
            elif hi is None:
                dfa = self.intersect(dfa, _at_least_dfa(lo), f"{pointer}/minLength")
            else:
                dfa = self.intersect(dfa, _length_dfa(lo, hi), f"{pointer}/maxLength")
        return dfa

    # -- numbers -----------------------------------------------------------------------------
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
            ilo = None if lo is None else (math.floor(lo[0]) + 1 if lo[1] else math.ceil(lo[0]))
            ihi = None if hi is None else (math.ceil(hi[0]) - 1 if hi[1] else math.floor(hi[0]))
            if ilo is not None and ihi is not None and ilo > ihi:
                return None
            # from draft 6 on, 1.0 is an integer too ("integer" is a value, not a spelling)
            fraction = "" if self.draft4 else "(?:\\.0+)?"
            pattern = f"(?:{integer_pattern(ilo, ihi)}){fraction}"
            return DfaTerminal(compile_regex(pattern), f"integer at {pointer}",
                               key=("regex", pattern))
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

    # -- objects -----------------------------------------------------------------------------
    def object(self, node: dict, pointer: str) -> StateMachine | None:
        props: dict = node.get("properties", {}) or {}
        required = list(dict.fromkeys(node.get("required", []) or []))
        # in place applicators are merged or distributed into this node by now, so the
        # properties they evaluate are the ones listed here
        additional = node.get("additionalProperties", node.get("unevaluatedProperties", True))
        patterns: dict = node.get("patternProperties", {}) or {}
        depends = _dependent_required(node, pointer)
        needs = {n: _needed_by(n, depends) for n in depends}  # (the names n brings, in turn)
        # a required key's dependencies are required too
        required = list(dict.fromkeys(required + [b for n in required
                                                  for b in needs.get(n, ())]))
        names = list(dict.fromkeys(list(props) + required
                                   + [n for a, bs in depends.items() for n in [a, *bs]]))
        allowed = self.property_names_dfa(node, pointer)

        def value_schema(name: str) -> Any:
            """What a named property must satisfy: its own schema (or additionalProperties
            when it is not listed) and every patternProperties schema whose pattern it has."""
            own = [props[name]] if name in props else []
            matching = [sub for pat, sub in patterns.items() if _search(pat, name, pointer)]
            if not own and not matching:
                own = [additional]
            schemas = own + matching
            return schemas[0] if len(schemas) == 1 else {"allOf": schemas}

        # the named properties that can be present, with their value machines
        schemas = {name: value_schema(name) for name in names}
        values: dict[str, StateMachine] = {}
        for name in names:
            m = self.compile(schemas[name], f"{pointer}/properties/{_escape(name)}")
            if m is not None and (allowed is None or allowed.matches(_content(name))):
                values[name] = m
        absent = {n for n in names if n not in values}
        changed = True
        while changed:  # a property whose dependencies cannot be present cannot be either
            changed = False
            for a, bs in depends.items():
                if a in values and any(b in absent for b in bs):
                    del values[a]
                    absent.add(a)
                    changed = True
        if any(n in absent for n in required):
            return None
        sources = [x for x in needs if x in values and needs[x]]
        if node.get("maxProperties") is not None and sources:
            return self.dependency_cases(node, sources, needs, pointer)
        # SOME_PROPERTY: each requirement, and the key names it takes (None: any)
        some = list(node.get(SOME_PROPERTY) or ())
        some_names = [self.names_taken(w, pointer) for w in some]
        others = self.some_regions(self.other_keys(node, names, allowed, pointer), some_names)
        n_min = _count(node, "minProperties", pointer, 0)
        n_max = _count(node, "maxProperties", pointer)
        if n_max is not None and n_min > n_max:
            return None

        any_order = self.property_order == "any"
        counted = n_min > 0 or n_max is not None
        # key bits: every present-able name in any order (a key appears at most once); else
        # those a dependency clause reads and, under maxProperties, the required ones
        wanted = list(values) if any_order else [
            n for n in values if n in depends or any(n in bs for bs in depends.values())
            or (n_max is not None and n in required)]
        wanted.sort(key=lambda n: (n not in required and n not in depends, names.index(n)))
        if len(wanted) > KEY_BITS:
            self.fail(f"{pointer}/properties", "properties",
                      f"more than {KEY_BITS} properties (KEY_BITS) to tell apart in any order; "
                      "the rest may repeat" + (", and are not required" if sum(
                          n in required for n in wanted) > KEY_BITS else ""))
        bit = {n: 1 << i for i, n in enumerate(wanted[:KEY_BITS])}
        for a, bs in depends.items():
            if a in values and any(b not in bit for b in bs):
                raise SchemaError(f"{pointer}/dependentRequired: more than {KEY_BITS} "
                                  "properties (KEY_BITS) are involved")
        if len(bit) + len(some) > KEY_BITS:
            raise SchemaError(f"{pointer}: more than {KEY_BITS} properties and requirements of "
                              "some property (KEY_BITS) to keep track of")
        some_bit = [1 << (len(bit) + k) for k in range(len(some))]

        def kinds(schema: Any, meets: list[int], where: str) -> list[tuple[StateMachine, int]]:
            """The values `schema` allows, split by which of the requirements `meets` lists
            (those whose names the key has) they meet: (machine, their bits)."""
            split = [(schema, 0)]
            for k in meets:
                if some[k]["value"] in (True, {}):
                    split = [(x, b | some_bit[k]) for x, b in split]
                    continue
                meet, fail = some[k]["value"], some[k]["else"]
                split = [(y, b | extra) for x, b in split for y, extra in (
                    (_all_of([x, meet]), some_bit[k]), (_all_of([x, fail]), 0)) if y is not False]
            if len(split) > MAX_SOME_VARIANTS:
                raise SchemaError(f"{where}: the values of this property meet more than "
                                  f"{MAX_SOME_VARIANTS} combinations of requirements of some "
                                  "property (MAX_SOME_VARIANTS)")
            out = [(self.compile(x, where), b) for x, b in split]  # (`schema`: compiled once)
            return [(m, b) for m, b in out if m is not None]

        named_kinds = {name: kinds(schemas[name], [
            k for k, taken in enumerate(some_names)
            if taken is None or taken.matches(_content(name))],
            f"{pointer}/properties/{_escape(name)}") for name in values}
        other_kinds = [(keys, m, where, states, b)
                       for keys, schema, where, states, meets in others
                       for m, b in kinds(schema, meets, where)]
        met = 0
        for b in [b for ks in named_kinds.values() for _, b in ks] + [o[-1] for o in other_kinds]:
            met |= b
        if met != sum(some_bit):
            return None  # no property can meet one of the requirements
        by_others = 0
        for o in other_kinds:
            by_others |= o[-1]
        for k, w in enumerate(some):
            if by_others & some_bit[k] and (n_max is None or not any(
                    b & some_bit[k] for n in required for _, b in named_kinds.get(n, ()))):
                continue
            # only listed names can meet it (or a required one, under maxProperties): a
            # key bit could be left unset with no key left to set it, a dead end; so one
            # case per name instead (and one for the other keys)
            rest = {**node, SOME_PROPERTY: [x for x in some if x is not w]}
            cases = [_all_of([rest, {"required": [n], "properties": {n: w["value"]}}])
                     for n in values if any(b & some_bit[k] for _, b in named_kinds[n])]
            if by_others & some_bit[k]:
                cases.append({**node, SOME_PROPERTY: [x for x in some if x is not w] + [{
                    **w, "names": {"allOf": [w["names"], {"not": {"enum": list(values)}}]}}]})
            return self.compile({"anyOf": cases}, pointer)
        if n_max is not None and len(some) > 1:
            self.fail(f"{pointer}/maxProperties", "maxProperties", "beside more than one "
                      "requirement that some key be present (the opposite of an open object "
                      "shape, see SOME_PROPERTY), generation could reach a dead end: one key "
                      "may meet several of them, so the places still needed are not known")
        # a key not listed may repeat in the text, where a JSON reader keeps one value for it:
        # where the number of keys or their values matter (minProperties above 1, some key
        # meeting a requirement), those keys are kept (`kept`) and a repeat is refused at its
        # closing quote. Keys of a few names get a key bit each instead, like listed ones
        # (`few`); other keys that can end only a few ways could find them all taken
        # (with minProperties 1 or less, only the keys of a region where a value can meet
        # a requirement: a repeat could undo what the first value met)
        kept = [False] * len(other_kinds)
        few_bit: dict[str, int] = {}
        few: list[tuple[str, StateMachine, int]] = []  # (name, value, met bits)
        meeting = {id(o[0]) for o in other_kinds if o[-1]}
        if other_kinds and (n_min > 1 or meeting):
            still = []
            ends: dict[int, Any] = {}  # per key automaton (kinds of values share one)
            for o in other_kinds:
                keys, m, where, _, met_by = o
                if n_min <= 1 and id(keys) not in meeting:
                    still.append((o, False))
                    continue
                if id(keys) not in ends:
                    ends[id(keys)] = True if _every_state_loops(keys) else \
                        _few_names(keys, KEY_BITS)
                names_ = ends[id(keys)]
                if names_ is True:
                    still.append((o, True))
                    continue
                if names_ is None:
                    self.fail(where, "minProperties" if n_min > 1 else "not", "over keys "
                              "not listed that can end only a few ways: a key repeated in "
                              "the text (which JSON readers count once) could not be "
                              "refused without a dead end")
                    still.append((o, False))
                    continue
                for name in names_:
                    few_bit.setdefault(name, _bit(len(bit) + len(some) + len(few_bit)))
                    few.append((name, m, met_by))
            if len(bit) + len(some) + len(few_bit) > KEY_BITS:
                raise SchemaError(f"{pointer}: more than {KEY_BITS} properties, requirements "
                                  "of some property and names of other keys (KEY_BITS) to "
                                  "keep track of")
            other_kinds = [o for o, _ in still]
            kept = [k for _, k in still]
        n_possible = math.inf if other_kinds else len(values) + len(few_bit)
        # (by now, under maxProperties, no required key can meet a requirement: see above)
        if n_min > n_possible or (n_max is not None and n_max < len(required) + bool(some)):
            return None
        # in schema order with keys of their own names only, a key is taken only while
        # enough keys may follow it to reach minProperties (else, once past them, a dead end):
        # the count before it, at least n_min - 1 - the keys that may still follow
        def min_before(after: int) -> int:
            return max(0, n_min - 1 - after) if not any_order and not other_kinds else 0
        # keys that must still come, under maxProperties: the required ones, and one more
        # while the first requirement is not met (not one per requirement: a key may meet
        # several; the count stays a lower bound, so no object is wrongly refused)
        reserve = 0
        if n_max is not None:
            reserve = sum(bit[n] for n in required if n in bit) | (some_bit[0] if some else 0)

        def key_guard(b: int, met: int = 0, item: int = 0, forbid: int = 0,
                      least: int = 0, need: int = 0, clauses: tuple = ()) -> Guard | None:
            if not (b or met or counted or item or need or clauses):
                return None
            return Guard(forbid=b if any_order else forbid, need=need, clauses=clauses,
                         set=b | met, inc=int(counted), min_props=least, max_props=n_max,
                         reserve=reserve,
                         cap=n_max if n_max is not None else n_min, item=item)

        def opening(text: str, first: bool, guard: Guard | None) -> StateMachine:
            """The start of a member: its key (or opening quote) with the comma before it,
            one terminal, so that a guard that refuses the key refuses the comma too."""
            term = Phrase(text) if first else self.comma_then(text)
            return term if guard is None else Guarded(term, guard)

        def spelled_key(name: str, first: bool, guard: Guard | None) -> StateMachine:
            """`opening` for a name JSON can spell in more than one way (a slash, a quote,
            a backslash or a control character: "\\/" or "/", "\\n" or "\\u000a"): every
            spelling, as one terminal."""
            nfa = automaton.NFA()
            parts = []
            if not first:
                parts.append(automaton.embed(nfa, self.comma_dfa()))
            parts += [automaton.literal(nfa, b'"'), automaton.embed(nfa, json_names_dfa([name])),
                      automaton.literal(nfa, b'"' if self.ws else b'":')]
            dfa = automaton.minimize(automaton.determinize(nfa, automaton.concat(nfa, parts)))
            term = DfaTerminal(dfa, f"key {name!r}")
            return term if guard is None else Guarded(term, guard)

        def named(name: str, m: StateMachine, guard: Guard | None) -> Member:
            if any(ord(c) < 0x20 or c in '"\\/' for c in name):
                return ((lambda first: spelled_key(name, first, guard)),
                        m if not self.ws else Chain(self.colon(), m))
            text = json.dumps(name, ensure_ascii=False)
            if not self.ws:  # compact: the colon joins the key's terminal
                return (lambda first: opening(text + ":", first, guard)), m
            return (lambda first: opening(text, first, guard)), Chain(self.colon(), m)

        def other(keys: automaton.DFA, m: StateMachine, where: str, states: KeyStates | None,
                  met: int, keep: bool, clauses: tuple) -> Member:
            rest = DfaTerminal(keys, f"keys at {where}", states=states)
            guard = key_guard(0, met, KEY_OPEN if keep else 0, clauses=clauses)
            quote: StateMachine = Phrase('":' if not self.ws else '"')
            if keep:
                quote = Guarded(quote, Guard(item=KEY_CLOSE))
            close = quote if not self.ws else Chain(quote, self.colon())
            return (lambda first: opening('"', first, guard)), Chain(rest, close, m)

        # in schema order, a key whose dependentRequired names (and theirs) are listed
        # before it needs them present already: none of them can come after it; and a key
        # is taken only where the names a present one needs are not passed over
        order = {x: i for i, x in enumerate(values)}
        before = {n: 0 if any_order else sum(bit[d] for d in needs.get(n, ())
                                             if d in values and order[d] < order[n])
                  for n in values}

        def passed(at: int) -> tuple:
            """The clauses of a key at place `at`: a present name's needs placed before."""
            if any_order:
                return ()
            out = ((bit[x], sum(bit[d] for d in needs[x] if d in values and order[d] < at))
                   for x in needs if x in values and order[x] < at)
            return tuple((x, ds) for x, ds in out if ds)
        if any(before.values()) and n_min > 1 and not other_kinds:
            self.fail(f"{pointer}/minProperties", "minProperties", "beside dependentRequired "
                      "on names listed before the key in schema order, with no other keys: "
                      "which keys may still follow depends on those taken, so generation "
                      "could reach a dead end; use property_order=\"any\"")
        members = [[named(n, m, key_guard(bit.get(n, 0), b, least=min_before(
            len(values) - i - 1 + len(few_bit)), need=before[n], clauses=passed(i)))
            for m, b in named_kinds[n]] for i, n in enumerate(values)]
        last = passed(len(values))
        other_members = [other(*o, k, last) for o, k in zip(other_kinds, kept)] + [
            named(n, m, key_guard(few_bit[n], b, forbid=few_bit[n], clauses=last,
                                  least=min_before(len(few_bit) - 1))) for n, m, b in few]
        clauses = tuple((bit[a], sum(bit[b] for b in bs)) for a, bs in depends.items()
                        if a in values and bs)
        need = (sum(bit.get(n, 0) for n in required) if any_order else 0) | sum(some_bit)
        close: StateMachine = Phrase("}")
        if need or n_min or clauses:
            close = Guarded(close, Guard(need=need, min_props=n_min, clauses=clauses))
        if any_order:
            graph: dict = {"first": [], "more": []}
            for i, (open_, tail) in enumerate([*(k for ks in members for k in ks),
                                               *other_members]):
                graph["first"].append((open_(True), ("member", i)))
                graph["more"].append((open_(False), ("member", i)))
                graph[("member", i)] = [(tail, "more")]
            body = StateMachine(graph, start_state="first", end_states=["first", "more"])
            empty: Any = "first"
        else:
            body, empty = self.ordered_members(
                [(ks, n in required) for ks, n in zip(members, values)], other_members)
        machine = self.bracketed(Phrase("{"), body, close, empty)
        # the member builders refer to each other through this frame: a cycle that would keep
        # the whole compiler until the garbage collector ran
        key_guard = opening = spelled_key = named = other = None  # type: ignore[assignment]
        return Scope(machine) if bit or counted or any_order or some else machine

    def comma_then(self, text: str) -> Terminal:
        """`,` then `text`, with the blanks allowed around the comma, as one terminal."""
        if not self.ws:
            return Phrase("," + text)
        # (a key of its own: hashing the automaton's transitions costs more than this)
        return DfaTerminal(_comma_then_dfa(self.ws, text), f",{text}",
                           key=("comma then", self.ws, text))

    def comma_dfa(self) -> automaton.DFA:
        """A comma with the blanks allowed around it."""
        return _comma_dfa(self.ws)

    def dependency_cases(self, node: dict, sources: list[str], needs: dict[str, list[str]],
                         pointer: str) -> StateMachine | None:
        """An object with maxProperties and dependentRequired, as one case per set of the
        keys with dependencies present: their needs are required there, the others absent.
        (Taken as they come, a key whose needs no longer fit under maxProperties, with
        other keys taken meanwhile, would be a dead end: the register holds no debt.)"""
        if len(sources) > MAX_DEPENDENCY_CASES:
            self.fail(f"{pointer}/dependentRequired", "dependentRequired", "beside "
                      f"maxProperties, on more than {MAX_DEPENDENCY_CASES} keys "
                      "(MAX_DEPENDENCY_CASES): generation could reach a dead end where the "
                      "names a key needs no longer fit")
            return self.object({k: v for k, v in node.items() if k != "maxProperties"},
                               pointer)
        deps = {k: v for k, v in (node.get("dependencies") or {}).items()
                if not isinstance(v, list)}
        base = {k: v for k, v in node.items() if k not in ("dependentRequired", "dependencies")}
        if deps:
            base["dependencies"] = deps
        cases = []
        for k in range(1 << len(sources)):
            present = [x for i, x in enumerate(sources) if k >> i & 1]
            gone = [x for x in sources if x not in present]
            cases.append({**base, "required": list(dict.fromkeys(
                [*(node.get("required") or []), *present,
                 *(d for x in present for d in needs[x])])),
                "properties": {**(node.get("properties") or {}), **{x: False for x in gone}}})
        return self.compile({"anyOf": cases}, pointer)

    def ordered_members(self, members: list[tuple[list[Member], bool]],
                        others: list[Member]) -> tuple[StateMachine, Any]:
        """Named members in schema order (optional ones skippable), then other keys, and
        the end state of an empty object. A member's opening is made for its place (first
        in the object, or after a comma); the rest of the member (its value) is one copy
        whatever the place. A named member may come in kinds (see SOME_PROPERTY), each a
        member of its own at the same place."""
        graph: dict = {}
        n = len(members)
        empty = Phrase("")
        first_possible = True  # can member i be the first? (all before it are optional)
        for i, (kinds, req) in enumerate(members):
            # (lists: Cython would type these tuples as C tuples of unequal lengths)
            places = [True] if i == 0 else [True, False] if first_possible else [False]
            for first in places:
                edges = graph.setdefault((i, first), [])
                for v, (open_, _) in enumerate(kinds):
                    edges.append((open_(first), ("member", (i, v))))
                if not req:
                    edges.append((empty, (i + 1, first)))
            for v, (_, tail) in enumerate(kinds):
                graph[("member", (i, v))] = [(tail, (i + 1, False))]
            first_possible = first_possible and not req
        ends = [(n, False)] + ([(n, True)] if first_possible else [])
        for end in ends:
            graph.setdefault(end, [])
        for j, (open_, tail) in enumerate(others):
            for end in ends:
                graph[end].append((open_(end[1]), ("other", j)))
            graph[("other", j)] = [(tail, (n, False))]
        return StateMachine(graph, start_state=(0, True), end_states=ends), (n, True)

    def other_keys(self, node: dict, names: list[str], allowed: automaton.DFA | None,
                   pointer: str
                   ) -> list[tuple[automaton.DFA, Any, str, KeyStates | None]]:
        """Keys not named: one kind per region of the patternProperties patterns (a key that
        two patterns match must satisfy both schemas), then the rest; each a key DFA, the
        value's schema, where in the schema it comes from, and what the masks of the key
        DFA's states can share (KeyStates, or None)."""
        patterns: dict = node.get("patternProperties", {}) or {}
        additional = node.get("additionalProperties", node.get("unevaluatedProperties", True))
        others = []
        covered = None
        regions: list[tuple[automaton.DFA, list[str]]] = []  # keys, the patterns they match
        for pat in patterns:
            where = f"{pointer}/patternProperties/{_escape(pat)}"
            keys = self.key_dfa(pat, True, where)
            if names:
                keys = without_names(keys, names)
            split = []
            for region, pats in regions:
                both = self.intersect(region, keys, where)
                if _nonempty(both):
                    split.append((both, pats + [pat]))
                    region = automaton.difference(region, keys)
                if _nonempty(region):
                    split.append((region, pats))
            fresh = keys if covered is None else automaton.difference(keys, covered)
            if _nonempty(fresh):
                split.append((fresh, [pat]))
            regions = split
            if len(regions) > MAX_KEY_REGIONS:
                self.fail(where, "patternProperties", f"the patterns overlap in more than "
                          f"{MAX_KEY_REGIONS} ways (MAX_KEY_REGIONS)")
            covered = keys if covered is None else _union(covered, keys)
        for keys, pats in regions:
            where = f"{pointer}/patternProperties/{_escape(pats[0])}"
            if allowed is not None:
                keys = self.intersect(keys, allowed, where)
            if _nonempty(keys):
                others.append((keys, _all_of([patterns[p] for p in pats]), where, None))
        if additional is not False:
            keys = self.key_dfa("(?s).*", False, pointer) if allowed is None else allowed
            states = None
            if names:
                keys, states = without_names_states(keys, names)
            if covered is not None:
                keys, states = automaton.difference(keys, covered), None
            if _nonempty(keys):
                others.append((keys, additional, f"{pointer}/additionalProperties", states))
        return others

    def names_taken(self, requirement: dict, pointer: str) -> automaton.DFA | None:
        """The key names a SOME_PROPERTY requirement takes (None: any), made once for it."""
        if id(requirement) not in self.some_names:
            self.some_names[id(requirement)] = (requirement, self.property_names_dfa(
                {"propertyNames": requirement["names"]}, f"{pointer}/{SOME_PROPERTY}"))
        return self.some_names[id(requirement)][1]

    def some_regions(self, others: list, some_names: list[automaton.DFA | None]) -> list[
            tuple[automaton.DFA, Any, str, KeyStates | None, list[int]]]:
        """The kinds of keys of `other_keys` split by the SOME_PROPERTY requirements whose
        names they are (`some_names`, None: any): each with the indexes of those."""
        out = []
        for keys, schema, where, states in others:
            parts = [(keys, states, [])]
            for k, taken in enumerate(some_names):
                if taken is None:
                    parts = [(x, st, [*ks, k]) for x, st, ks in parts]
                    continue
                split = []
                for x, st, ks in parts:
                    inside = self.intersect(x, taken, where)
                    outside = automaton.difference(x, taken)
                    if not _nonempty(outside):
                        split.append((x, st, [*ks, k]))
                    elif not _nonempty(inside):
                        split.append((x, st, ks))
                    else:
                        split += [(inside, None, [*ks, k]), (outside, None, ks)]
                parts = split
            out += [(x, schema, where, st, ks) for x, st, ks in parts]
        return out

    def property_names_dfa(self, node: dict, pointer: str, depth: int = 0
                           ) -> automaton.DFA | None:
        """Key contents (as JSON spells them) that `propertyNames` allows; None: any."""
        where = f"{pointer}/propertyNames"
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"{where}: the schema nests more than {MAX_SCHEMA_DEPTH} "
                              "subschemas deep (MAX_SCHEMA_DEPTH)")
        sub = self.resolve_shallow(node.get("propertyNames", True), where)
        if sub is True or sub == {}:
            return None
        if sub is False:
            return automaton.union([])  # no name
        if not isinstance(sub, dict):
            raise SchemaError(f"{where}: a schema is an object or a boolean, got {sub!r}")
        sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
        for key in ("allOf", "anyOf", "oneOf"):
            if isinstance(sub.get(key), list):
                return self.combined_names_dfa(sub, key, pointer, depth)
        if "not" in sub:  # the names it leaves out, of those the rest allows
            left_out = self.property_names_dfa({"propertyNames": sub["not"]}, pointer,
                                               depth + 1)
            rest = self.property_names_dfa(
                {"propertyNames": {k: v for k, v in sub.items() if k != "not"}}, pointer,
                depth + 1)
            if left_out is None:
                return automaton.union([])
            try:
                return automaton.minimize(automaton.difference(
                    rest or self.key_dfa("", True, where), left_out))
            except GrammarError as e:
                raise SchemaError(f"{where}: {e}") from None
        types = sub.get("type", "string")
        if "string" not in ([types] if isinstance(types, str) else types):
            return automaton.union([])
        if "const" in sub or "enum" in sub:
            values = [sub["const"]] if "const" in sub else list(sub["enum"])
            if "const" in sub and "enum" in sub:  # both hold
                values = [v for v in values if isinstance(sub["enum"], list)
                          and _json_key(v) in {_json_key(x) for x in sub["enum"]}]
            rest = {k: v for k, v in sub.items() if k not in ("const", "enum", "type")}
            names = [v for v in values if isinstance(v, str)]
            if rest:
                inner = self.property_names_dfa({"propertyNames": rest}, pointer, depth + 1)
                names = [n for n in names if inner is None or inner.matches(_content(n))]
            return json_names_dfa(names)
        sub = _format_length(sub)
        unknown = set(sub) - {"type", "pattern", "format", "minLength", "maxLength"}
        if unknown:
            self.fail(where, "propertyNames", f"{sorted(unknown)} on key names not supported")
        patterns = []
        if "pattern" in sub:
            patterns.append((sub["pattern"], True, f"{where}/pattern"))
        if sub.get("format") in FORMATS:
            patterns += _format_patterns(sub["format"], f"{where}/format")
        return self.content_dfa(sub, patterns, where)

    def combined_names_dfa(self, sub: dict, key: str, pointer: str,
                           depth: int) -> automaton.DFA | None:
        """Key contents `propertyNames` allows when it is allOf, anyOf or oneOf (the others
        of its keywords holding too); None: any."""
        where = f"{pointer}/propertyNames"
        anything = self.key_dfa("", True, where)
        parts = [self.property_names_dfa({"propertyNames": part}, pointer, depth + 1)
                 or anything for part in sub[key]]
        rest = self.property_names_dfa(
            {"propertyNames": {k: v for k, v in sub.items() if k != key}}, pointer, depth + 1)
        try:
            if key == "allOf":
                dfa = anything
                for part in parts:
                    dfa = automaton.intersect(dfa, part)
            elif key == "anyOf":
                dfa = automaton.union(parts)
            else:  # names exactly one part allows
                one = many = automaton.union([])
                for part in parts:
                    one, many = automaton.union([automaton.difference(one, part),
                                                 automaton.difference(
                                                     automaton.difference(part, one), many)]), \
                        automaton.union([many, automaton.intersect(one, part)])
                dfa = one
            return automaton.minimize(dfa if rest is None else automaton.intersect(dfa, rest))
        except GrammarError as e:
            raise SchemaError(f"{where}: {e}") from None

    def key_dfa(self, pattern: str, search: bool, where: str) -> automaton.DFA:
        """Object keys (string content, spelled as `json_char_class` spells characters) whose
        value matches `pattern`."""
        try:
            return compile_regex(pattern, 0, search=search, char_class=json_char_class,
                                 ecma=True)
        except GrammarError as e:
            raise SchemaError(f"{where}: {e}") from None

    def intersect(self, a: automaton.DFA, b: automaton.DFA, where: str) -> automaton.DFA:
        try:
            return automaton.intersect(a, b)
        except GrammarError as e:
            raise SchemaError(f"{where}: {e}") from None

    # -- arrays ------------------------------------------------------------------------------
    def whole_strings(self) -> bool:
        """Whether strings compile to one terminal from quote to quote (inside a unique
        array's items: see counted_strings), not quotes around a terminal of contents (which
        the strings of all schemas share, and so their masks)."""
        return any(name == WHOLE_STRINGS for name, _ in self.bound[-1])

    def array(self, node: dict, pointer: str) -> StateMachine | None:
        unevaluated = node.get("unevaluatedItems", True)
        items = node.get("items", unevaluated)
        prefix = node.get("prefixItems")
        rest: Any = items
        if isinstance(items, list):  # drafts 4-7: a list of items, then additionalItems
            prefix, rest = items, node.get("additionalItems", unevaluated)
        prefix = prefix or []
        if unevaluated not in (True, {}) and "contains" in node:
            self.fail(f"{pointer}/unevaluatedItems", "unevaluatedItems", "together with "
                      "contains (which evaluates the items it matches) is not supported yet")
        lo = _count(node, "minItems", pointer, 0)
        hi = _count(node, "maxItems", pointer)
        unique = node.get("uniqueItems") is True
        if unique and not self.whole_strings():
            # the items' strings compile whole (see `string`): a binding of the dynamic scope,
            # so that the machines compiled for other places are kept apart from these
            self.bound.append(tuple(sorted({**dict(self.bound[-1]), WHOLE_STRINGS: ""}.items())))
            try:
                return self.array(node, pointer)
            finally:
                self.bound.pop()
        if unique:
            values = None if prefix else _literal_values(self.resolve_shallow(rest, pointer))
            if values is not None and len(values) <= KEY_BITS and "contains" not in node:
                return self.unique_literals(values, lo, hi, pointer)
            self.check_unique(prefix, rest, pointer)
            contains = any(isinstance(part, dict) and "contains" in part
                           for part in [node, *node.get("allOf", ())])
            if not self.unique_room(prefix, rest, lo, contains, pointer):
                return None
        counted = []  # (contains, minContains, maxContains): this node's, and those merged
        # beside it (see _merge)
        for part in [node, *node.get("allOf", ())]:
            if part is not node and not (isinstance(part, dict) and set(part) <= set(_CONTAINS)):
                raise SchemaError(f"{pointer}/allOf: these schemas could not be merged")
            if "contains" not in part:
                continue
            n_min = _count(part, "minContains", pointer, 1)
            n_max = _count(part, "maxContains", pointer)
            sub = part["contains"]
            if n_max is not None and n_min > n_max:
                return None
            if sub is False:
                if n_min > 0:
                    return None
            elif sub is True or sub == {}:  # every item counts
                lo = max(lo, n_min)
                hi = n_max if hi is None else hi if n_max is None else min(hi, n_max)
            elif n_min > 0 or n_max is not None:
                counted.append((sub, n_min, n_max))
        if counted:
            return self.containing(node, counted, lo, hi, unique, pointer)
        opening, comma, closing, wrap = self.array_parts(unique)
        machines = []
        for i, sub in enumerate(prefix):
            m = self.compile(sub, f"{pointer}/prefixItems/{i}")
            if m is None:
                hi = i if hi is None else min(hi, i)
                break
            machines.append(wrap(m))
        rest_m = self.compile(rest, f"{pointer}/items")
        rest_m = None if rest_m is None else wrap(rest_m)
        if rest_m is None:
            hi = len(machines) if hi is None else min(hi, len(machines))
        if hi is not None and lo > hi:
            return None
        if max(lo, hi or 0) > MAX_UNROLLED_ITEMS and not machines and rest_m is not None:
            return self.counted_items(rest_m, lo, hi, unique)
        if max(lo, hi or 0) > MAX_UNROLLED_ITEMS:
            if lo > MAX_UNROLLED_ITEMS:
                self.fail(f"{pointer}/minItems", "minItems",
                          f"more than {MAX_UNROLLED_ITEMS} (MAX_UNROLLED_ITEMS) is not supported")
                lo = MAX_UNROLLED_ITEMS
            if hi is not None and hi > MAX_UNROLLED_ITEMS:
                self.fail(f"{pointer}/maxItems", "maxItems",
                          f"more than {MAX_UNROLLED_ITEMS} (MAX_UNROLLED_ITEMS) is not supported")
                hi = None
        top = max(lo, len(machines)) if hi is None else hi
        graph: dict = {}
        last = 0
        for j in range(top):
            item = machines[j] if j < len(machines) else rest_m
            if item is None:
                break
            graph.setdefault(j, []).append((item if j == 0 else Chain(comma, item), j + 1))
            last = j + 1
        if hi is None and rest_m is not None and last == top:
            if last == 0:
                graph.setdefault(0, []).append((rest_m, 1))
                last = 1
            graph.setdefault(last, []).append((Chain(comma, rest_m), last))
        if lo > last:
            return None
        body = StateMachine(graph, start_state=0, end_states=range(lo, last + 1))
        array = self.bracketed(opening, body, closing, empty=0)
        return Scope(array) if unique else array

    def array_parts(self, unique: bool) -> tuple:
        """The "[", comma and "]" of an array, and what wraps each item. With uniqueItems the
        brackets and the comma open and close items in the array's register, and each item
        is a rule of its own, so that its end is seen (see pse.registers)."""
        if not unique:
            return Phrase("["), self.sep(","), Phrase("]"), lambda m: m
        return (Guarded(Phrase("["), Guard(item=ITEM_OPEN)),
                Chain(*self.wsp(), Guarded(Phrase(","), Guard(item=ITEM_CLOSE | ITEM_OPEN)),
                      *self.wsp()),
                Guarded(Phrase("]"), Guard(item=ITEM_CLOSE)), Scope)

    def counted_items(self, item: StateMachine, lo: int, hi: int | None,
                      unique: bool) -> StateMachine:
        """An array of `lo` to `hi` items of one kind whose bounds are too large to unroll:
        the commas are counted in the register (n items have n - 1), each one guarded by the
        maximum, the closing bracket by the minimum. `item` is wrapped already (array_parts)."""
        cap = hi - 1 if hi is not None else lo - 1
        flags = (ITEM_CLOSE | ITEM_OPEN) if unique else 0
        comma = Guarded(Phrase(","), Guard(inc=1, max_props=None if hi is None else hi - 1,
                                           cap=cap, item=flags))
        items = StateMachine({0: [(item, 1)],
                              1: [(Chain(*self.wsp(), comma, *self.wsp(), item), 1)]},
                             start_state=0, end_states=[0, 1] if lo == 0 else [1])
        close = Guarded(Phrase("]"), Guard(min_props=max(lo - 1, 0), cap=cap,
                                           item=flags & ITEM_CLOSE))
        if lo <= 1 and not unique:
            close = Phrase("]")
        opening = Guarded(Phrase("["), Guard(item=ITEM_OPEN)) if unique else Phrase("[")
        return Scope(self.bracketed(opening, items, close, empty=0))

    def containing(self, node: dict, counted: list[tuple[Any, int, int | None]], lo: int,
                   hi: int | None, unique: bool, pointer: str) -> StateMachine | None:
        """An array with, for each (contains, minContains, maxContains) of `counted`, at
        least minContains items matching that contains (items otherwise as `items` says),
        and lo..hi items in all: counters of matches and of items in the states, an item
        matching some of the contains schemas counting for each. maxContains and
        prefixItems alongside would need the complement of a contains schema."""
        where = f"{pointer}/contains"
        rest = node.get("items", True)
        if any(n_max is not None for _, _, n_max in counted) or "prefixItems" in node \
                or isinstance(rest, list):
            self.fail(where, "contains", "contains with maxContains or prefixItems is not "
                      "supported yet")
        needs = [n_min for _, n_min, _ in counted]
        if hi is not None and (max(needs) > hi or lo > hi):
            return None
        cap = hi if hi is not None else lo  # items counted up to here (past lo: enough)
        if math.prod(n + 1 for n in needs) * (cap + 1) > MAX_CONTAINS_STATES \
                or len(counted) > 4:
            self.fail(where, "contains", f"minContains and an item count beside it need more "
                      f"than {MAX_CONTAINS_STATES} states (MAX_CONTAINS_STATES), or more "
                      "than 4 contains schemas are merged")
            counted, needs, cap, lo, hi = counted[:1], [1], 0, 0, None  # (not strict)
        opening, comma, closing, wrap = self.array_parts(unique)
        item = self.compile(rest, f"{pointer}/items")
        item = None if item is None else wrap(item)
        matches = []  # (which contains schemas, the machine of an item matching them all)
        for k in range(1, len(counted) + 1):
            for which in itertools.combinations(range(len(counted)), k):
                subs = [counted[i][0] for i in which]
                m = self.compile(_all_of([rest, *subs]), where)
                if m is not None:
                    matches.append((which, wrap(m)))
        graph: dict = {}
        for js in itertools.product(*(range(n + 1) for n in needs)):  # matches so far
            for c in range(cap + 1):  # items so far
                if hi is not None and c == hi:
                    graph.setdefault((js, c, c == 0), [])
                    continue
                for first in [True, False][c > 0:]:
                    sep = [] if first else [comma]
                    edges = graph.setdefault((js, c, first), [])
                    nc = min(c + 1, cap)
                    if item is not None:
                        edges.append((Chain(*sep, item), (js, nc, False)))
                    for which, m in matches:
                        more = tuple(min(j + 1, needs[i]) if i in which else j
                                     for i, j in enumerate(js))
                        edges.append((Chain(*sep, m), (more, nc, False)))
        full = tuple(needs)
        ends = [s for s in graph if s[0] == full and s[1] >= lo]
        if not ends or not matches:
            return None
        start = ((0,) * len(needs), 0, True)
        array = self.bracketed(opening, StateMachine(graph, start_state=start, end_states=ends),
                               closing, empty=start)
        return Scope(array) if unique else array

    def check_unique(self, prefix: list, rest: Any, pointer: str) -> None:
        """uniqueItems over items of any kind is exact (a repeat is refused at its last
        byte) where no item prefix can run out of new values, or where the strings that can
        are terminals whose states count their completions (counted_strings: the core
        refuses a prefix whose strings were all seen); elsewhere a prefix whose every
        completion is an item already seen would be a dead end: refused in strict mode."""
        for i, sub in enumerate(prefix):
            if not self.open_ended(sub, f"{pointer}/prefixItems/{i}"):
                break
        else:
            if rest is False or self.open_ended(rest, f"{pointer}/items"):
                return
        self.fail(f"{pointer}/uniqueItems", "uniqueItems", "over items that can run out of "
                  "new values after a prefix (bounded numbers, integers (1. can only go on "
                  "as 1.0), enums of other values than strings, closed objects, a maxLength "
                  "without a pattern or past 64, and with whitespace objects and arrays) "
                  "is not supported: generation could reach a dead end "
                  "there; supported: any value, strings (with a pattern, format or enum too: "
                  "their prefixes whose strings were all seen are refused), numbers without "
                  "bounds, booleans, null, open objects and arrays")

    def open_ended(self, sub: Any, pointer: str, depth: int = 0,
                   counted: bool = True) -> bool:
        """Whether every incomplete prefix of an instance of `sub` has completions of
        infinitely many values (so a finite set of items seen never exhausts them). Literals
        count: true, false and null are told at their first byte (a forced rest), a number
        with zero digits and an exponent at the exponent, and strings the core counts
        (counted_strings) as their prefixes run out, unless not `counted` (they still have
        only so many values). Objects and arrays do not when whitespace is allowed: "{" and
        some blanks may be left only "}"."""
        sub = self.resolve_shallow(sub, pointer)
        if sub is True:
            return not self.ws
        if not isinstance(sub, dict) or depth > 8:
            return False
        sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
        if not sub:
            return not self.ws
        for union in ("anyOf", "oneOf"):
            if union in sub:
                rest = {k: v for k, v in sub.items() if k != union}
                branches = [_with_siblings(rest, b) for b in sub[union]] \
                    if isinstance(sub[union], list) else []
                return (bool(branches) and None not in branches
                        and all(self.open_ended(b, pointer, depth + 1, counted)
                                for b in branches))
        types = sub.get("type")
        if types is None and set(sub) <= {"enum", "const"}:
            return counted and self.counted_strings(sub, pointer)
        if types is None and set(sub) <= {"minLength", "maxLength", "pattern", "format"}:
            # a value of any type: the keywords bind strings only
            return not self.ws and self.open_ended({**sub, "type": "string"}, pointer,
                                                   depth + 1, counted)
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list) or not types:
            return False
        keys = set(sub) - {"type"}
        for t in types:
            if t == "string":
                ok = keys <= {"minLength"} or (keys <= {"minLength", "format"} and sub.get(
                    "format") in ("uri", "uri-reference", "iri", "iri-reference")) or (
                    keys <= {"minLength", "pattern", "format"} and self.endless_strings(
                        sub, pointer)) or (counted and self.counted_strings(sub, pointer))
            elif t in ("number", "boolean", "null"):
                ok = not keys
            elif t == "object":
                extra = sub.get("additionalProperties", True)
                ok = not self.ws and keys <= {"properties", "required", "minProperties",
                                              "additionalProperties"} and extra in (True, {})
            elif t == "array":
                # items all different: only so many when the items have only so many values
                items = sub.get("items", True)
                ok = (not self.ws and keys <= {"items", "minItems", "uniqueItems"}
                      and (items is True or items == {}
                           or self.open_ended(items, pointer, depth + 1,
                                              counted and sub.get("uniqueItems") is not True))
                      and (sub.get("uniqueItems") is not True
                           or self.unbounded_values(items, pointer, depth + 1)))
            else:
                ok = False
            if not ok:
                return False
        return True

    def endless_strings(self, sub: dict, pointer: str) -> bool:
        """Whether every state of the string contents `sub`'s pattern and format allow can
        reach a loop: then every prefix goes on to infinitely many strings (no final state,
        where the contents would end with nothing left to choose)."""
        sub = _format_length(sub)
        fmt = sub.get("format")
        if fmt in UNSUPPORTED_FORMATS or not isinstance(sub.get("minLength", 0), int) \
                or sub.get("minLength", 0) > MAX_UNROLLED_LENGTH:
            return False
        patterns = [(sub["pattern"], True, f"{pointer}/pattern")] if "pattern" in sub else []
        if fmt in FORMATS:  # an unknown format is an annotation (see string)
            patterns += _format_patterns(fmt, f"{pointer}/format")
        try:
            dfa = self.content_dfa(sub, patterns, pointer)
        except SchemaError:
            return False  # the string itself reports it, where it is compiled
        return _every_state_loops(dfa)

    def counted_strings(self, sub: dict, pointer: str) -> bool:
        """Whether the strings `sub` allows compile to one terminal of whole strings whose
        states count the strings they complete to (json_spelling.string_values): then the
        core refuses a prefix that only items seen before complete. Patterns and formats
        with lengths short enough to unroll, and enums of strings."""
        return self.string_count(sub, pointer) is not None

    def string_count(self, sub: dict, pointer: str) -> int | None:
        """How many strings `sub` allows (MANY_VALUES: infinitely many), where they are
        counted_strings; else None."""
        keys = set(sub) - {"type"}
        if keys and keys <= {"enum", "const"}:
            values = [sub["const"]] if "const" in sub else sub["enum"]
            if isinstance(values, list) and sub.get("type") == "string":
                values = [v for v in values if isinstance(v, str)]  # (as `literals` keeps)
            if not isinstance(values, list) or not values or not all(
                    isinstance(v, str) for v in values):
                return None
            texts = sorted({_dumps(v) for v in values})
            counts = string_values(automaton.trie(texts, [], []))
            return None if counts is None else counts[0]
        if not keys <= {"minLength", "maxLength", "pattern", "format"}:
            return None
        sub = _format_length(sub)
        fmt = sub.get("format")
        lo, hi = sub.get("minLength", 0), sub.get("maxLength")
        if fmt in UNSUPPORTED_FORMATS or not (isinstance(lo, int) and (
                hi is None or isinstance(hi, int))) or not _unrolled_length(lo, hi):
            return None
        patterns = [(sub["pattern"], True, f"{pointer}/pattern")] if "pattern" in sub else []
        if fmt in FORMATS:
            patterns += _format_patterns(fmt, f"{pointer}/format")
        if not patterns:
            return None  # (plain strings with a maxLength are counted, not unrolled)
        try:
            dfa = self.content_dfa(sub, patterns, pointer, count_length=True)
        except SchemaError:
            return None  # the string itself reports it, where it is compiled
        if not dfa.accept[0] and not dfa.trans[0]:
            return 0
        counts = string_values(quoted(dfa))
        return None if counts is None else counts[0]

    def value_count(self, sub: Any, pointer: str, depth: int = 0) -> tuple[int | None, bool]:
        """At least how many values the items `sub` (which passed check_unique) have, None
        for infinitely many, and whether exactly that many: a unique array's minItems needs
        room (the core sees to it that a new item remains, not that enough do)."""
        sub = self.resolve_shallow(sub, pointer)
        if not isinstance(sub, dict) or depth > 8:
            return None, False  # (true: any value; false has no items, counted elsewhere)
        sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
        for union in ("anyOf", "oneOf"):
            if isinstance(sub.get(union), list) and sub[union]:
                rest = {k: v for k, v in sub.items() if k != union}
                branches = [_with_siblings(rest, b) for b in sub[union]]
                counts = [(0, False) if b is None else self.value_count(b, pointer, depth + 1)
                          for b in branches]
                if any(n is None for n, _ in counts):
                    return None, False
                kinds = [b.get("type") if isinstance(b, dict) else None for b in branches]
                if all(isinstance(k, str) for k in kinds) and len(set(kinds)) == len(kinds):
                    return sum(n for n, _ in counts), all(e for _, e in counts)  # apart
                if len(counts) == 1:
                    return counts[0]
                # anyOf: overlapping branches share values, so the largest is a bound from
                # below; oneOf: the values two branches share are left out, so none is
                return (max(n for n, _ in counts) if union == "anyOf" else 0), False
        types = sub.get("type")
        keys = set(sub) - {"type"}
        if (types is None and keys and keys <= {"enum", "const"}) or types == "string":
            n = self.string_count(sub, pointer)
            if n is not None:
                return (None if n >= MANY_VALUES else n), True
        types = [types] if isinstance(types, str) else types
        if isinstance(types, list) and types and set(types) <= {"boolean", "null"} and not keys:
            return sum(2 if t == "boolean" else 1 for t in set(types)), True
        if self.open_ended(sub, pointer, counted=False) and self.unbounded_values(sub, pointer):
            return None, False
        return 0, False

    def unique_room(self, prefix: list, rest: Any, lo: int, contains: bool,
                    pointer: str) -> bool:
        """Whether a unique array's first `lo` items always find new values, so that no
        prefix is a dead end for its minItems; False when they never can (nothing is
        valid). Beside prefixItems or `contains`, with items that can run out, refused in
        strict mode."""
        if contains and any(self.value_count(sub, pointer)[0] is not None
                            for sub in [*prefix, rest]):
            self.fail(f"{pointer}/contains", "contains", "beside uniqueItems over items that "
                      "can run out of new values is not supported: the items it counts "
                      "could run out first, a dead end")
        if lo <= 0:
            return True
        if prefix:
            ahead = prefix[:lo] + ([rest] if lo > len(prefix) else [])
            if any(self.value_count(sub, pointer)[0] is not None for sub in ahead):
                self.fail(f"{pointer}/minItems", "minItems", "beside prefixItems, with items "
                          "that can run out of new values (uniqueItems), is not supported: "
                          "generation could reach a dead end")
            return True
        n, exact = self.value_count(rest, pointer)
        if n is None or lo <= n:
            return True
        if exact:
            return False
        self.fail(f"{pointer}/minItems", "minItems", f"{lo} items all different, of items "
                  "that can run out of new values (uniqueItems) and whose number of values "
                  "is not known, is not supported: generation could reach a dead end")
        return True

    def unbounded_values(self, sub: Any, pointer: str, depth: int = 0) -> bool:
        """Whether `sub` (open-ended) has infinitely many values: not only booleans and null."""
        sub = self.resolve_shallow(sub, pointer)
        if not isinstance(sub, dict) or depth > 8:
            return sub is True
        for union in ("anyOf", "oneOf"):
            if isinstance(sub.get(union), list):
                return any(self.unbounded_values(b, pointer, depth + 1) for b in sub[union])
        types = sub.get("type")
        types = [types] if isinstance(types, str) else types
        return types is None or bool(set(types) & {"string", "number", "object", "array"})

    def unique_literals(self, values: list, lo: int, hi: int | None,
                        pointer: str) -> StateMachine | None:
        """uniqueItems over items drawn from a few literal values (enum, const, boolean,
        null): one key bit per value, guarded like object keys."""
        values = sorted(_distinct(values), key=_dumps)
        if not values:
            return None if lo > 0 else Chain(Phrase("["), *self.wsp(), Phrase("]"))
        hi = len(values) if hi is None else min(hi, len(values))
        if lo > hi:
            return None
        # a number in every spelling of its value (1, 1.0: one item), as `literals` spells it
        # (draft 4 aside, where 1.0 may not be an integer: there as written)
        item = AnyOf(*[Guarded(self.literals([v], pointer) if _json_type(v) in (
            "integer", "number") and not self.draft4 else Phrase(_dumps(v).decode()),
            Guard(forbid=1 << i, set=1 << i)) for i, v in enumerate(values)])
        graph = {j: [(item if j == 0 else Chain(self.sep(","), item), j + 1)] for j in range(hi)}
        body = StateMachine(graph, start_state=0, end_states=range(lo, hi + 1))
        return Scope(self.bracketed(Phrase("["), body, Phrase("]"), empty=0))


@functools.lru_cache(maxsize=16)
def _any_value(ws: int) -> StateMachine:
    """Any JSON value, built once per whitespace setting: machines are immutable once built,
    and this one (recursive, so a reference cycle) would otherwise be garbage the collector
    has to find after every schema that does not use it. Its rules are compiled once too."""
    return share_rules(Json(whitespace=ws).value)


def _with_siblings(siblings: dict, branch: Any) -> Any:
    """A union's branch with the keywords beside the union, which apply too, for
    open_ended and value_count; None where a keyword is in both with different values (the
    two are not merged here), but for an object's properties and required names, which
    those do not read."""
    if not isinstance(branch, dict):
        return branch
    if any(k in siblings and siblings[k] != v and k not in ("properties", "required")
           for k, v in branch.items()):
        return None
    return {**siblings, **branch}


def _literal_values(schema: Any) -> list | None:
    """The values a schema allows when they are a few literals (None: not that kind)."""
    if not isinstance(schema, dict):
        return None
    schema = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    keys = set(schema) - {"type"}
    if "type" in schema and not (isinstance(schema["type"], str) or (
            isinstance(schema["type"], list) and all(isinstance(t, str) for t in schema["type"]))):
        return None  # malformed: the general path says so
    if keys == {"const"} or (keys == {"enum"} and isinstance(schema["enum"], list)):
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if "type" in schema:
            values = _of_types(values, schema["type"])
        return _distinct(values)
    if set(schema) == {"type"} and schema["type"] in ("boolean", "null"):
        return [True, False] if schema["type"] == "boolean" else [None]
    for union in ("anyOf", "oneOf"):
        if keys == {union} and isinstance(schema[union], list) and schema[union]:
            parts = [_literal_values(b) for b in schema[union]]
            if any(p is None for p in parts):
                return None
            # anyOf: the values of any branch; oneOf: those of exactly one
            times = collections.Counter(_json_key(v) for p in parts for v in _distinct(p))
            values = _distinct([v for p in parts for v in p
                                if union == "anyOf" or times[_json_key(v)] == 1])
            return _of_types(values, schema["type"]) if "type" in schema else values
    return None


def _of_types(values: list, types: Any) -> list:
    """The values whose JSON type is one of `types` (a name or a list; 1.0 is an integer)."""
    types = [types] if isinstance(types, str) else list(types)
    return [v for v in values if _json_type(v) in types
            or (_json_type(v) == "integer" and "number" in types)
            or (_json_type(v) == "number" and "integer" in types and float(v).is_integer())]


def _nested_whole_number(v: Any) -> bool:
    """Whether the array or object `v` holds a whole number, at any depth."""
    if isinstance(v, dict):
        v = list(v.values())
    if not isinstance(v, list):
        return False
    return any(_nested_whole_number(x) or (_json_type(x) in ("integer", "number")
                                           and math.isfinite(x) and float(x).is_integer())
               for x in v)


def _subschemas(node: dict) -> Iterator[tuple[str, str | None, Any]]:
    """(keyword, name in its map or None, value) of each place in a schema object that holds
    a schema (or a list of them)."""
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, v in value.items():
                yield key, name, v
        elif key in _SUBSCHEMAS:
            yield key, None, value


def _draft(root: Any) -> int:
    """The draft a schema's `$schema` names: 4 (draft 3 read as 4), 6, 7, 2019; else 2020."""
    dialect = root.get("$schema", "") if isinstance(root, dict) else ""
    dialect = dialect if isinstance(dialect, str) else ""
    for mark, draft in (("draft-03", 4), ("draft-04", 4), ("draft-06", 6), ("draft-07", 7),
                        ("2019-09", 2019)):
        if mark in dialect:
            return draft
    return 2020


def _whole(machine: StateMachine | None) -> StateMachine | None:
    """`machine` matching a whole text (a value checked on its own), or None."""
    return None if machine is None else StateMachine({0: [(machine, "$")]}, 0, ["$"])


def _dumps(v: Any) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


def _spellings(v: Any) -> list[bytes]:
    """`v` as compact JSON, and a whole number also with a fraction part (1 and 1.0), the
    spellings a draft 4 schema may tell apart."""
    dumped = _dumps(v)
    if _json_type(v) in ("integer", "number") and math.isfinite(v) and float(v).is_integer():
        whole = str(int(v)).encode()
        return [whole, whole + b".0"]
    return [dumped]


def _unlike(value: list | dict) -> list:
    """Schemas of which an array or object unlike `value` (not JSON-equal to it) matches
    one at least: a different length or item; a key missing, a different value or more keys."""
    if isinstance(value, list):
        n = len(value)
        return [*([{"maxItems": n - 1}] if n else []), {"minItems": n + 1},
                *({"prefixItems": [True] * i + [{"not": {"const": x}}], "minItems": i + 1}
                  for i, x in enumerate(value))]
    return [*({"properties": {k: False}} for k in value),
            *({"required": [k], "properties": {k: {"not": {"const": x}}}}
              for k, x in value.items()),
            {"minProperties": len(value) + 1}]


def _distinct(values: list) -> list:
    """Values without JSON-equal repeats (1 and 1.0 are one value)."""
    seen: dict = {}
    for v in values:
        seen.setdefault(_json_key(v), v)
    return list(seen.values())


def _json_key(v: Any) -> Any:
    """A hashable key; JSON-equal values (1 and 1.0, objects in any order) share it."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return (type(v).__name__, v)
    if isinstance(v, (int, float)):
        return ("number", Decimal(str(v)).normalize() if math.isfinite(v) else str(v))
    if isinstance(v, list):
        return ("array", tuple(_json_key(x) for x in v))
    if isinstance(v, dict):
        return ("object", frozenset((k, _json_key(x)) for k, x in v.items()))
    return ("other", repr(v))


def _at_least_dfa(lo: int) -> automaton.DFA:
    nfa = automaton.NFA()
    unit = JsonStringContent().unit_dfa()
    parts = [automaton.embed(nfa, unit) for _ in range(lo)]
    parts.append(automaton.star(nfa, automaton.embed(nfa, unit)))
    return automaton.determinize(nfa, automaton.concat(nfa, parts))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _search(pattern: str, text: str, pointer: str) -> bool:
    try:
        return re.search(pattern, text, re.ASCII) is not None
    except re.error as e:
        raise SchemaError(f"{pointer}/patternProperties: {pattern!r} is malformed: {e}") from None


def _every_state_loops(dfa: automaton.DFA) -> bool:
    """Whether every state of `dfa` (trimmed) can reach a cycle: peeling the reversed graph
    lists exactly the states that cannot (none may be)."""
    pred: list[list[int]] = [[] for _ in dfa.trans]
    for s, row in enumerate(dfa.trans):
        for t in {t for _, _, t in row}:
            pred[t].append(s)
    return not automaton.peel_order(pred)


def _nonempty(dfa: automaton.DFA) -> bool:
    return dfa.accept[0] or bool(dfa.trans[0])


def _needed_by(name: str, depends: dict[str, list[str]]) -> list[str]:
    """The names dependentRequired brings with `name`, and those they bring, in turn (in the
    order found: a schema compiles the same in every process)."""
    out: list[str] = []
    todo = [name]
    while todo:
        for b in depends.get(todo.pop(0), ()):
            if b not in out and b != name:
                out.append(b)
                todo.append(b)
    return out


def _bit(i: int) -> int:
    """Key bit i, as a Python int (a shift of C ints, as Cython would make of `1 << len(x)`,
    overflows at bit 31)."""
    return 1 << i


def _union(a: automaton.DFA, b: automaton.DFA) -> automaton.DFA:
    nfa = automaton.NFA()
    return automaton.determinize(nfa, automaton.alternation(nfa, [
        automaton.embed(nfa, a), automaton.embed(nfa, b)]))


def _format_patterns(fmt: str, where: str) -> list[tuple[str, bool | None, str]]:
    """(regex, search, where) for a known format; search None marks a regex to exclude."""
    out: list[tuple[str, bool | None, str]] = [(FORMATS[fmt], False, where)]
    if fmt in FORMAT_EXCLUDED:
        out.append((FORMAT_EXCLUDED[fmt], None, where))
    return out


def _format_opposite(fmt: str) -> Any:
    """The strings a format rejects (None: it cannot be checked; False: an unknown format,
    an annotation, rejects nothing)."""
    if fmt in UNSUPPORTED_FORMATS:
        return None
    if fmt not in FORMATS:
        return False
    # (a pattern finds a match anywhere: anchored, it matches the whole string)
    wrong = [{"type": "string", "not": {"type": "string", "pattern": f"^(?:{FORMATS[fmt]})$"}}]
    if fmt in FORMAT_EXCLUDED:
        wrong.append({"type": "string", "pattern": f"^(?:{FORMAT_EXCLUDED[fmt]})$"})
    if fmt in FORMAT_MAX_LENGTH:
        wrong.append({"type": "string", "minLength": FORMAT_MAX_LENGTH[fmt] + 1})
    return wrong[0] if len(wrong) == 1 else {"anyOf": wrong}


def _format_length(node: dict) -> dict:
    """`node` with the most characters its format allows as its maxLength, where that is
    fewer than its own (a bad maxLength is left for the caller to report)."""
    fmt, hi = node.get("format"), node.get("maxLength")
    most = FORMAT_MAX_LENGTH.get(fmt) if isinstance(fmt, str) else None
    if most is None or (hi is not None and (isinstance(hi, bool) or not isinstance(
            hi, (int, float)) or hi <= most)):
        return node
    return {**node, "maxLength": most}


def _numeric_bounds(node: dict) -> dict:
    """`node` with draft 4's boolean exclusiveMinimum/exclusiveMaximum read into draft 6's
    numbers (which `_bounds` reads in every draft), so that each bound means the same alone
    as beside the others."""
    flags = [k for k in ("exclusiveMinimum", "exclusiveMaximum") if isinstance(node.get(k), bool)]
    if not flags:
        return node
    out = dict(node)
    for flag in flags:
        bound = "minimum" if flag == "exclusiveMinimum" else "maximum"
        if out.pop(flag) and bound in out:
            out[flag] = out.pop(bound)
    return out


def _count(node: dict, key: str, pointer: str, default: int | None = None) -> int | None:
    """A non-negative integer keyword (2.0 counts as 2). An upper bound beyond MAX_COUNT is
    MAX_COUNT (refusing only instances of over two billion characters, items or
    properties); a lower bound beyond it is refused."""
    value = node.get(key, default)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError(f"{pointer}/{key}: must be an integer >= 0, got {value!r}")
    if value > MAX_COUNT:
        if key.startswith("max"):
            return MAX_COUNT
        raise SchemaError(f"{pointer}/{key}: {value} is beyond the largest count kept "
                          f"({MAX_COUNT}, MAX_COUNT)")
    return value


def _few_names(keys: automaton.DFA, limit: int) -> list[str] | None:
    """The key names whose JSON spellings `keys` (key contents) accepts, when they are at
    most `limit` spellings; else None."""
    live = automaton.live_states(keys)
    if not live[0]:
        return []
    ordered = set(automaton.peel_order([
        sorted({t for _, _, t in row if live[t]}) if live[q] else []
        for q, row in enumerate(keys.trans)]))
    if any(live[q] and q not in ordered for q in range(keys.n_states)):
        return None  # a cycle: endless spellings
    spellings: list[bytes] = []
    stack = [(0, b"")]
    while stack:
        q, text = stack.pop()
        if keys.accept[q]:
            spellings.append(text)
        for lo, hi, t in keys.trans[q]:
            if live[t]:
                if len(spellings) + len(stack) + hi - lo + 1 > limit:
                    return None
                stack.extend((t, text + bytes([b])) for b in range(lo, hi + 1))
    names = []
    for text in spellings:
        try:
            name = json.loads(b'"' + text + b'"')
        except ValueError:  # (a spelling is a whole JSON string's content)
            return None
        if name not in names:
            names.append(name)
    return names


def _content(name: str) -> bytes:
    """A key's string content as compact JSON spells it."""
    return json.dumps(name, ensure_ascii=False)[1:-1].encode()


def _reads_evaluation(node: Any) -> bool:
    return isinstance(node, dict) and any(
        node.get(k, True) is not True and node.get(k) != {}
        for k in ("unevaluatedProperties", "unevaluatedItems"))


def _dependent_schemas(node: dict) -> dict[str, Any]:
    """`dependentSchemas`, and draft 4-7 `dependencies` whose values are schemas."""
    out = dict(node.get("dependentSchemas") or {})
    for name, sub in (node.get("dependencies") or {}).items():
        if not isinstance(sub, list):
            out[name] = sub if name not in out else {"allOf": [out[name], sub]}
    return {k: v for k, v in out.items() if v is not True and v != {}}


def _dependent_required(node: dict, pointer: str) -> dict[str, list[str]]:
    """`dependentRequired`, and draft 4-7 `dependencies` whose values are lists."""
    out: dict[str, list[str]] = {}
    for key in ("dependentRequired", "dependencies"):
        for name, needs in (node.get(key) or {}).items():
            if isinstance(needs, list):
                out.setdefault(name, [])
                out[name] += [n for n in needs if n not in out[name]]
            elif key == "dependentRequired":
                raise SchemaError(f"{pointer}/{key}/{_escape(name)}: must be an array")
    return out


def _escape(name: str) -> str:
    return str(name).replace("~", "~0").replace("/", "~1")


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


_OBJECT_SHAPE = ("properties", "patternProperties", "additionalProperties")
_ARRAY_SHAPE = ("prefixItems", "items", "additionalItems")


def _merge(a: dict, b: dict, conflict, same: Callable[[Any, Any], bool] | None = None) -> dict:
    """The schema both `a` and `b` describe (allOf of two). Keywords that read their siblings
    (additionalProperties, items after prefixItems) are merged by what they mean; a union
    both have (the same object, or what `same` says is the same) is kept once."""
    same = same or operator.is_
    a, b = _numeric_bounds(a), _numeric_bounds(b)
    shapes = {}
    for keys, merge in ((_OBJECT_SHAPE, _merge_object_shape), (_ARRAY_SHAPE, _merge_array_shape)):
        if any(k in a for k in keys) and any(k in b for k in keys):
            shapes.update(merge(a, b, conflict))
            a = {k: v for k, v in a.items() if k not in keys}
            b = {k: v for k, v in b.items() if k not in keys}
    # (minContains and maxContains without contains do nothing: not to count another's)
    a, b = ({k: v for k, v in x.items() if k in ("contains", "if") or k not in _CONTAINS}
            if "contains" not in x else x for x in (a, b))
    out = dict(a)
    out.update(shapes)
    for parts in (("if", "then", "else"), _CONTAINS):
        if parts[0] in a and parts[0] in b and not all(_same(a.get(k), b.get(k))
                                                       for k in parts):
            # two conditions, two contains: both hold, kept side by side like unions (see
            # compile_new, and array for contains)
            out["allOf"] = [*out.get("allOf", ()), {k: b[k] for k in parts if k in b}]
            b = {k: v for k, v in b.items() if k not in parts}
    for k, v in b.items():
        if k not in out:
            out[k] = v
        elif k == "required":
            out[k] = list(dict.fromkeys(list(out[k]) + list(v)))
        elif k in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"):
            out[k] = max(out[k], v)
        elif k in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"):
            out[k] = min(out[k], v)
        elif k == "type":
            ta = {out[k]} if isinstance(out[k], str) else set(out[k])
            tb = {v} if isinstance(v, str) else set(v)
            if "number" in ta and "integer" in tb:
                ta.add("integer")
            if "number" in tb and "integer" in ta:
                tb.add("integer")
            out[k] = sorted(ta & tb)
        elif k in ("anyOf", "oneOf", "allOf"):  # both hold: kept side by side
            if not same(out[k], v) and not any(k in x and same(x[k], v)
                                               for x in out.get("allOf", ())):
                out["allOf"] = list(out.get("allOf", [])) + [{k: v}]
        elif k == SOME_PROPERTY:  # each holds
            out[k] = [*out[k], *v]
        elif k in _ANNOTATIONS or _same(out[k], v) or k not in _VALIDATION:
            continue
        elif k == "enum" and isinstance(out[k], list) and isinstance(v, list):
            both = {_json_key(x) for x in v}
            out[k] = [x for x in out[k] if _json_key(x) in both]
            if not out[k]:  # no value is listed by both: nothing is valid
                out["type"] = []
                out[k] = [None]
        elif k == "const":  # two values (1 and 1.0 are one): nothing is valid
            if _json_key(out[k]) != _json_key(v):
                out["type"] = []
        elif k == "propertyNames":  # each name matches both
            out[k] = _all_of([out[k], v])
        elif k == "pattern" and isinstance(out[k], str) and isinstance(v, str) and (
                both := _both_patterns(out[k], v)) is not None:
            out[k] = both
        elif k == "not":  # neither a nor b: not (a or b)
            out[k] = {"anyOf": [*_alternatives(out[k]), *_alternatives(v)]}
        else:
            conflict(k)
    return out


def _both_patterns(a: str, b: str) -> str | None:
    """One pattern found in a text where `a` and `b` both are (lookaheads: see
    `search_for_all`); None where that pattern does not compile (a lookahead or global flag
    that would no longer be at its start)."""
    both = search_for_all([a, b])
    if both is None:
        return None
    try:  # (cached: compiled once more where the string is)
        compile_regex(both, 0, search=True, char_class=json_char_class, ecma=True)
    except GrammarError:
        return None
    return both


def _without_dangling(schema: dict) -> dict:
    """`schema` without `then`/`else` when it has no `if` (they do nothing alone, and merged
    beside another schema's `if` they would wrongly join it)."""
    if "if" in schema or not ("then" in schema or "else" in schema):
        return schema
    return {k: v for k, v in schema.items() if k not in ("then", "else")}


def _is_type(schema: Any, name: str) -> bool:
    """Whether `schema` is {"type": name} (annotations aside)."""
    return isinstance(schema, dict) and {k: v for k, v in schema.items()
                                         if k not in _ANNOTATIONS} == {"type": name}


def _closed_keys(schema: Any) -> frozenset | None:
    """The only property names an object matching `schema` can have (None: any)."""
    if not isinstance(schema, dict) or schema.get("additionalProperties", True) not in (
            False, {"not": {}}) or schema.get("patternProperties"):
        return None
    props = schema.get("properties") or {}
    return frozenset(props) if isinstance(props, dict) else None


def _alternatives(schema: Any) -> list:
    """The branches of a schema that is only an anyOf; else the schema alone."""
    if isinstance(schema, dict) and set(schema) == {"anyOf"} and isinstance(schema["anyOf"], list):
        return schema["anyOf"]
    return [schema]


def _exclusion(sub: Any) -> tuple[list, list[str]] | None:
    """What `"not": sub` leaves out when it is literal values (enum, const), strings a
    pattern finds a match in, or any of those (anyOf): (values, patterns); None when it is
    something else."""
    if not isinstance(sub, dict):
        return None
    sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
    if set(sub) == {"enum"} and isinstance(sub["enum"], list):
        return sub["enum"], []
    if set(sub) == {"const"}:
        return [sub["const"]], []
    if set(sub) == {"type", "pattern"} and sub["type"] == "string" \
            and isinstance(sub["pattern"], str):
        return [], [sub["pattern"]]
    if set(sub) == {"anyOf"} and isinstance(sub["anyOf"], list) and sub["anyOf"]:
        parts = [_exclusion(x) for x in sub["anyOf"]]
        if any(p is None for p in parts):
            return None
        return [v for p in parts for v in p[0]], [x for p in parts for x in p[1]]
    return None


def _left_out_where_typed(sub: Any) -> bool:
    """Whether what `"not": sub` leaves out is literal values, strings a pattern finds a
    match in and integers (any of those): left out where each type is compiled."""
    parts = [p for p in _alternatives(sub) if not _is_type(p, "integer")]
    return not parts or _exclusion(_any_of(parts)) is not None


def _any_of(schemas: list) -> Any:
    """anyOf of `schemas`, with False ones dropped and bare anyOfs among them flattened (each
    level would compile to a union of its own)."""
    flat = []
    for x in schemas:
        if x is True or x == {}:
            return True
        if x is not False:
            flat.extend(_alternatives(x))
    return False if not flat else flat[0] if len(flat) == 1 else {"anyOf": flat}


def _all_of(schemas: list) -> Any:
    """allOf of `schemas`, as flat as it goes: no true schemas, no nested allOf alone, no
    schema object twice (a recursive schema merged with itself stays the same size)."""
    schemas = [x for x in schemas if x is not True and x != {}]
    if len(schemas) > 1:  # (one schema is kept as it is: the same object compiles once)
        flat: list = []
        for x in schemas:
            parts = x["allOf"] if isinstance(x, dict) and len(x) == 1 and "allOf" in x \
                and isinstance(x["allOf"], list) else [x]
            flat += [y for y in parts if not any(y is z for z in flat)]
        schemas = [x for x in flat if x is not True and x != {}]
    if any(x is False for x in schemas):
        return False
    return True if not schemas else schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _merge_object_shape(a: dict, b: dict, conflict) -> dict:
    """properties / patternProperties / additionalProperties of allOf(a, b)."""
    def trivial(x: dict) -> bool:
        return x.get("additionalProperties", True) in (True, {})

    pa, pb = a.get("patternProperties", {}), b.get("patternProperties", {})
    patterns = dict(pa)
    for pat, sub in pb.items():
        patterns[pat] = _all_of([patterns[pat], sub]) if pat in patterns else sub
    if trivial(a) and trivial(b):
        props = dict(a.get("properties", {}))
        for name, sub in b.get("properties", {}).items():
            props[name] = _all_of([props[name], sub]) if name in props else sub
        out: dict = {"properties": props}
        if patterns:
            out["patternProperties"] = patterns
        return out
    if (not trivial(a) and set(pb) - set(pa)) or (not trivial(b) and set(pa) - set(pb)):
        conflict("additionalProperties")  # a name a pattern of one side takes, the other's
        # additionalProperties would take as well: not expressible as one object schema

    def side(x: dict, name: str) -> Any:
        if name in x.get("properties", {}):
            return x["properties"][name]
        if any(_search(p, name, "#") for p in x.get("patternProperties", {})):
            return True  # the merged patternProperties carry it
        return x.get("additionalProperties", True)

    names = list(dict.fromkeys([*a.get("properties", {}), *b.get("properties", {})]))
    out = {"properties": {n: _all_of([side(a, n), side(b, n)]) for n in names},
           "additionalProperties": _all_of([a.get("additionalProperties", True),
                                            b.get("additionalProperties", True)])}
    if patterns:
        out["patternProperties"] = patterns
    return out


def _merge_array_shape(a: dict, b: dict, conflict) -> dict:
    """prefixItems / items (draft 4-7: an items list and additionalItems) of allOf(a, b)."""
    def split(x: dict) -> tuple[list, Any]:
        if isinstance(x.get("items"), list):
            return list(x["items"]), x.get("additionalItems", True)
        return list(x.get("prefixItems", [])), x.get("items", True)

    (fa, ra), (fb, rb) = split(a), split(b)
    n = max(len(fa), len(fb))
    prefix = [_all_of([fa[i] if i < len(fa) else ra, fb[i] if i < len(fb) else rb])
              for i in range(n)]
    out: dict = {"prefixItems": prefix} if prefix else {}
    if any(k in x for x in (a, b) for k in ("items", "additionalItems")) \
            and not (isinstance(a.get("items"), list) and "additionalItems" not in a
                     and isinstance(b.get("items"), list) and "additionalItems" not in b):
        out["items"] = _all_of([ra, rb])  # else items past the prefix stay unevaluated
    return out


# Keywords whose meaning does not depend on their siblings: a schema of only these (and the
# object shape, taken as one) is the conjunction of each alone (its opposite: one of them
# fails). (Draft 4's boolean exclusiveMinimum/Maximum are read into draft 6's numbers first:
# see `_numeric_bounds`.)
_SELF_CONTAINED = frozenset([
    "type", "enum", "const", "pattern", "required", "minLength", "maxLength",
    "minItems", "maxItems", "minProperties", "maxProperties", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "not", "anyOf", "allOf", "oneOf", "items",
    "format", "$ref", "dependentRequired", "dependencies", "uniqueItems", "propertyNames"])
# Keywords that apply subschemas without validating anything themselves.
_APPLICATORS = frozenset(["allOf", "anyOf", "oneOf", "not", "$dynamicRef", "$recursiveRef"])

_ALL_TYPES = frozenset(["object", "array", "string", "number", "boolean", "null"])


def _types(branch: dict) -> frozenset[str]:
    """The JSON types a branch may match ("integer" counted as "number")."""
    if "const" in branch or "enum" in branch:
        values = [branch["const"]] if "const" in branch else list(branch.get("enum") or [])
        return frozenset("number" if _json_type(v) == "integer" else _json_type(v)
                         for v in values)
    t = branch.get("type")
    if t is None:
        return _ALL_TYPES
    names = [t] if isinstance(t, str) else list(t)
    return frozenset("number" if x == "integer" else x for x in names)


def _values(branch: dict) -> set | None:
    """The values a branch lists (by `_json_key`: 1 and 1.0 are one); None: not a list."""
    if "const" in branch:
        return {_json_key(branch["const"])}
    if "enum" in branch and isinstance(branch["enum"], list):
        return {_json_key(v) for v in branch["enum"]}
    return None


def _same(a: Any, b: Any) -> bool:
    """Whether two schemas are the same JSON (true and 1 told apart: `==` alone would not,
    so it only rules out, cheaply, what differs)."""
    return a is b or (a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True))


def _holds_within(key: str, value: Any, within: dict) -> bool:
    """Whether the keyword `key: value` (one that holds alone: see _SELF_CONTAINED) holds
    for every instance of `within`: `within` has the same, or a stricter type or
    required list."""
    if key not in within:
        return False
    if key == "required" and isinstance(value, list) and isinstance(within[key], list):
        return set(value) <= set(within[key])
    if key == "type":
        allowed = {value} if isinstance(value, str) else set(value)
        if "number" in allowed:
            allowed.add("integer")
        held = within[key]
        return ({held} if isinstance(held, str) else set(held)) <= allowed
    return _same(within[key], value)


def _case_test(cond: Any) -> tuple[str, list, bool, bool] | None:
    """An `if` that tests one property against listed values: (its name, the values,
    whether the property must be present, whether the value must be an object); None:
    another kind of condition."""
    if not isinstance(cond, dict):
        return None
    cond = {k: v for k, v in cond.items() if k not in _ANNOTATIONS}
    props = cond.pop("properties", None)
    required = cond.pop("required", [])
    kind = cond.pop("type", None)
    if kind not in (None, "object", ["object"]):
        return None
    is_object = kind is not None
    if cond or not isinstance(props, dict) or len(props) != 1 or not isinstance(required, list):
        return None
    (name, sub), = props.items()
    if not isinstance(sub, dict) or set(required) - {name}:
        return None
    sub = {k: v for k, v in sub.items() if k not in _ANNOTATIONS}
    types = sub.pop("type", None)
    if set(sub) == {"const"}:
        values = [sub["const"]]
    elif set(sub) == {"enum"} and isinstance(sub["enum"], list):
        values = list(sub["enum"])
    else:
        return None
    if types is not None:  # a type beside the values: those of the type (numbers: only
        # under "number", where no spelling of a value may fail "integer")
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list):
            return None
        kinds = {"number" if _json_type(v) == "integer" else _json_type(v) for v in values}
        values = [v for v in values if ("number" if _json_type(v) == "integer"
                                        else _json_type(v)) in types]
        if "number" in kinds and "number" not in types and "integer" in types:
            return None
    return name, values, bool(required), is_object


def _switch(node: dict) -> dict | None:
    """Two or more `if`s side by side (`node`'s own, and those merged beside it into allOf)
    that each test the same property against listed values, as one union with a case per
    value: which conditions hold is known in each case, so it applies their `then` or
    `else` (N cases where expanding each `if` in turn makes 2^N). None: no such `if`s."""
    parts = ("if", "then", "else")
    conditions = [{k: node[k] for k in parts if k in node}]
    conditions += [x for x in node.get("allOf", ()) if isinstance(x, dict) and "if" in x
                   and set(x) <= set(parts)]
    tests = [_case_test(c["if"]) for c in conditions]
    if tests[0] is None:
        return None
    name = tests[0][0]
    chosen = [i for i, t in enumerate(tests) if t is not None and t[0] == name]
    if len(chosen) < 2:
        return None
    values = _distinct([v for i in chosen for v in tests[i][1]])
    rest = {k: v for k, v in node.items() if k not in parts}
    # the cases the rest of the node rules out are left out (their conditions' unions
    # would be multiplied out before the contradiction shows)
    types = rest.get("type")
    types = {types} if isinstance(types, str) else set(types) if isinstance(types, list) \
        else {"object", "other"}
    own = (rest.get("properties") or {}).get(name)
    listed = _values(own) if isinstance(own, dict) else None
    other = {"not": {"enum": values}}  # the property's values no condition lists
    if listed is not None:
        tested = {_json_key(v) for v in values}
        values = [v for v in values if _json_key(v) in listed]
        left = [v for v in ([own["const"]] if "const" in own else own["enum"])
                if _json_key(v) not in tested]
        other = {"enum": left} if left else None
    present = name in (rest.get("required") or ())

    def case(shape: dict, holds) -> Any:  # the case, with what each condition says there
        return _all_of([shape, *(conditions[i].get("then" if holds(tests[i]) else "else", True)
                                 for i in chosen)])

    cases = []
    if types - {"object"}:
        cases.append(case({"type": ["array", "boolean", "null", "number", "string"]},
                          lambda t: not t[3]))
    if "object" in types:
        if not present:
            cases.append(case({"type": "object", "properties": {name: False}},
                              lambda t: not t[2]))
        if other is not None:
            cases.append(case({"type": "object", "required": [name],
                               "properties": {name: other}}, lambda t: False))
        cases += [case({"type": "object", "required": [name],
                        "properties": {name: {"const": v}}},
                       lambda t, v=v: _json_key(v) in {_json_key(x) for x in t[1]})
                  for v in values]
    left = [x for x in node.get("allOf", ()) if not any(x is conditions[i] for i in chosen)]
    rest.pop("allOf", None)
    if left:
        rest["allOf"] = left
    cases = [c for c in cases if c is not False]
    union = {"anyOf": cases} if cases else False
    return _all_of([rest, union]) if rest else union


def _discriminator(branches: list) -> tuple[str, dict[int, list]]:
    """A property that tells object branches apart: its name, and for each branch (two at
    least) that requires it with literal values no other such branch has, those values;
    ("", {}) when there is none."""
    best: tuple[str, dict[int, list]] = ("", {})
    names = dict.fromkeys(n for b in branches if isinstance(b, dict) and _types(b) <= {"object"}
                          and isinstance(b.get("required"), list) for n in b["required"])
    for name in names:
        seen: set = set()
        cases: dict[int, list] = {}
        for i, b in enumerate(branches):
            if not isinstance(b, dict) or not _types(b) <= {"object"} \
                    or name not in (b.get("required") or ()):
                continue
            sub = (b.get("properties") or {}).get(name)
            keys = _values(sub) if isinstance(sub, dict) else None
            if keys is None or keys & seen:
                continue  # (one of the others, then)
            seen |= keys
            cases[i] = [sub["const"]] if "const" in sub else list(sub["enum"])
        if len(cases) > len(best[1]):
            best = (name, cases)
    return best if len(best[1]) >= 2 else ("", {})


def _pair_disjoint(a: Any, b: Any) -> bool:
    """A proof that no value matches both branches (False: maybe one does)."""
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    if not _types(a) & _types(b):
        return True
    va, vb = _values(a), _values(b)
    if va is not None and vb is not None and not va & vb:
        return True
    if _types(a) <= {"object"} or _types(b) <= {"object"}:
        pa, pb = a.get("properties") or {}, b.get("properties") or {}
        ra, rb = set(a.get("required") or []), set(b.get("required") or [])
        # a property one requires, with values that cannot agree (a discriminator): the
        # other's schema for it fails wherever the one holds
        for name in ra | rb:
            if name in pa and name in pb and _pair_disjoint(pa[name], pb[name]):
                return True
        # one requires a property the other forbids
        for x, y, rx in ((a, b, ra), (b, a, rb)):
            py = y.get("properties") or {}
            if y.get("additionalProperties") is False and not y.get("patternProperties"):
                if any(name not in py for name in rx):
                    return True
            if any(py.get(name) is False for name in rx):
                return True
    return False
