"""The training run of pse's profile-guided build (see setup.py): compiles structures of the
kinds users compile, so that the compiler places the code they run together and apart from
the code they do not.

A first compile in a server's process meets cold caches: the instructions it runs are fetched
from memory, and in code that Cython generates most of each cache line is error handling
that never runs. Laid out by a profile, the code a compile runs takes fewer lines.

setup.py runs this file with a build of pse whose compile path is instrumented; it needs only
pse and its build requirements (numpy; lark, for the grammar). The schemas are written here,
seeded: none come from a benchmark's data. Run by hand: python tools/pgo_workload.py
"""

from __future__ import annotations

import random
import warnings

import pse
from pse.errors import PSEError

STRING_FORMATS = ["date-time", "date", "time", "email", "uri", "uuid", "ipv4", "hostname",
                  "duration"]
WORDS = ["id", "name", "title", "description", "status", "type", "value", "count", "items",
         "created_at", "url", "email", "tags", "price", "enabled", "owner", "version", "kind",
         "metadata", "labels", "priority", "score", "notes", "path", "size"]


def scalar(rng: random.Random) -> dict:
    """A leaf schema: strings (formats, patterns, lengths, enums), numbers, booleans, null."""
    kind = rng.randrange(12)
    if kind == 0:
        return {"type": "string"}
    if kind == 1:
        return {"type": "string", "format": rng.choice(STRING_FORMATS)}
    if kind == 2:
        return {"type": "string", "minLength": rng.randrange(3),
                "maxLength": rng.choice([8, 40, 255])}
    if kind == 3:
        return {"type": "string", "pattern": rng.choice(
            ["^[a-z][a-z0-9_-]*$", "^[A-Z]{2,3}-[0-9]{1,6}$", "^\\d{3}-\\d{4}$",
             "^(https?)://[^ ]+$", "^#[0-9a-fA-F]{6}$"])}
    if kind == 4:
        return {"enum": rng.sample(["red", "green", "blue", "open", "closed", "pending",
                                    "low", "high", 1, 2, None, True], rng.randrange(2, 6))}
    if kind == 5:
        return {"type": "integer", "minimum": rng.randrange(-5, 5),
                "maximum": rng.choice([10, 100, 65535, 2 ** 31])}
    if kind == 6:
        return {"type": "number", "exclusiveMinimum": 0, "multipleOf": rng.choice([0.5, 0.01])}
    if kind == 7:
        return {"type": ["string", "null"]}
    if kind == 8:
        return {"const": rng.choice(["v1", 42, "fixed"])}
    if kind == 9:
        return {"type": "boolean"}
    if kind == 10:
        return {"type": "integer"}
    return {"type": "number"}


def annotated(rng: random.Random, s: dict) -> dict:
    """`s` with the annotations real schemas carry (a title, a description, a default)."""
    if rng.random() < 0.6:
        s["description"] = f"The {rng.choice(WORDS)} of the {rng.choice(WORDS)}."
    if rng.random() < 0.2:
        s["title"] = rng.choice(WORDS).title()
    if rng.random() < 0.1 and s.get("type") == "string":
        s["default"] = ""
    return s


def schema(rng: random.Random, depth: int, defs: list[str]) -> dict:
    """An object, array, reference or combination around smaller schemas."""
    if depth >= 3:
        return annotated(rng, scalar(rng))
    kind = rng.randrange(14)
    if kind <= 5:
        names = rng.sample(WORDS, rng.randrange(1, 10))
        properties = {n: schema(rng, depth + 1, defs) if rng.random() < 0.3
                      else annotated(rng, scalar(rng)) for n in names}
        out = {"type": "object", "properties": properties,
               "required": [n for n in names if rng.random() < 0.6]}
        if rng.random() < 0.5:
            out["additionalProperties"] = rng.choice([False, False, True, {"type": "string"}])
        if rng.random() < 0.05:
            out["patternProperties"] = {"^x-": {"type": "string"}}
        if rng.random() < 0.05:
            out["minProperties"] = 1
        return annotated(rng, out)
    if kind <= 7:
        out = {"type": "array", "items": schema(rng, depth + 1, defs)}
        if rng.random() < 0.4:
            out.update(minItems=rng.randrange(2), maxItems=rng.choice([3, 10]))
        if rng.random() < 0.1:
            out = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
        if rng.random() < 0.05:
            out = {"type": "array", "prefixItems": [scalar(rng), scalar(rng)], "items": False}
        return annotated(rng, out)
    if kind == 8 and defs:
        return {"$ref": f"#/$defs/{rng.choice(defs)}"}
    if kind == 9:
        return {"anyOf": [schema(rng, depth + 1, defs), {"type": "null"}]}
    if kind == 10:
        return {"oneOf": [{"type": "object", "properties": {"kind": {"const": k}, "x": scalar(rng)},
                           "required": ["kind"]} for k in ("a", "b")]}
    if kind == 11:
        return {"allOf": [schema(rng, depth + 1, defs), {"required": []}]}
    if kind == 12:
        return {"type": "string", "enum": rng.sample(WORDS, rng.randrange(3, 20))}
    return annotated(rng, scalar(rng))


def document(rng: random.Random) -> dict:
    """A schema as files have them: definitions at the root, referred to from below."""
    names = rng.sample(WORDS, rng.randrange(3)) if rng.random() < 0.4 else []
    defs = {}
    for i, name in enumerate(names):  # (each refers only to those before it: no cycle)
        defs[name] = schema(rng, 1, names[:i])
    out = schema(rng, 0, names)
    if rng.random() < 0.05:  # a recursive definition
        defs["node"] = {"type": "object", "properties": {
            "value": scalar(rng), "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
        out = {"$ref": "#/$defs/node"}
    if defs:
        out = {**out, "$defs": defs}
    if rng.random() < 0.3:
        out = {"$schema": "http://json-schema.org/draft-07/schema#", **out}
    return out


GBNF = r"""
root   ::= (expr "=" ws term "\n")+
expr   ::= term ([-+*/] term)*
term   ::= ident | num | "(" ws expr ")" ws
ident  ::= [a-z] [a-z0-9_]* ws
num    ::= [0-9]{1,12} ws
ws     ::= [ \t\n]*
"""

LARK = r"""
start: statement+
statement: "let" NAME "=" expr ";" | "print" "(" [expr ("," expr)*] ")" ";"
?expr: expr ("+" | "-") term | term
?term: term ("*" | "/") atom | atom
?atom: NUMBER | NAME | ESCAPED_STRING | "(" expr ")" | NAME "(" [expr ("," expr)*] ")"
%import common.CNAME -> NAME
%import common (NUMBER, ESCAPED_STRING, WS)
%ignore WS
"""

LARK_NO_IMPORT = r"""
start: item*
item: key "=" value
key: /[a-z_][a-z0-9_]*/
value: /-?[0-9]+/ | /"[^"]*"/ | "[" [value ("," value)*] "]" | "{" [item ("," item)*] "}"
%ignore /[ \t\n]+/
"""


def main() -> None:
    warnings.simplefilter("ignore")  # (schemas' approximations)
    rng = random.Random(0)
    schemas = [document(rng) for _ in range(400)] + [scalar(rng) for _ in range(20)]
    tokens = [bytes([b]) for b in range(256)] + [w.encode() for w in WORDS] + [
        b'{"', b'":', b'",', b"<eos>"]
    vocab = pse.Vocabulary.from_tokens(tokens, eos_token_ids=[len(tokens) - 1])
    failed = 0
    for s in schemas:
        try:
            engine = pse.StructuringEngine(vocab)
            engine.configure(pse.JsonSchema(s))
            engine.compute_mask()
        except PSEError:
            failed += 1
    for pattern in [r"[a-z]+@[a-z]+\.(com|org)", r"(?i)select \w+", r"\d{4}-\d{2}-\d{2}"]:
        pse.Regex(pattern).compile()
    pse.Grammar.from_gbnf(GBNF).compile()
    for _ in range(3):  # (Lark's reading is most of a grammar's compile)
        pse.Grammar.from_lark(LARK).compile()
        pse.Grammar.from_lark(LARK_NO_IMPORT).compile()
    print(f"pgo workload: {len(schemas)} schemas ({failed} refused)")


if __name__ == "__main__":
    main()
