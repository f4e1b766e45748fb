"""The string formats JSON Schema names (date, time, email, uri, ...) as patterns, with the lengths
and exclusions that go with them.
"""

from __future__ import annotations

from typing import Any

# A calendar date, month lengths and leap years included (2024-02-29 yes, 2023-02-29 no).
_DATE = (r"(\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)"
         r"|02-(0[1-9]|1\d|2[0-8]))"
         r"|(\d\d(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)")
# a leap second only at 23:59 UTC; with a non-zero offset it is refused (conservative)
_TIME = (r"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)"
         r"|23:59:60(\.\d+)?([Zz]|[+-]00:00))")

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
