"""`pse check` and pse.check: whether a text fits a structure, and where it stops fitting."""

from __future__ import annotations

import json
import random

import pytest

from pse import Grammar, JsonSchema
from pse.check import END, check, describe
from pse.cli import main

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "tags": {"type": "array", "items": {"enum": ["sea", "snow", "city"]}, "maxItems": 3},
        "price": {"type": ["number", "null"]},
    },
    "required": ["days"],
    "additionalProperties": False,
}
VALID = [
    {"days": 3},
    {"name": "Lisbon café", "days": 14, "tags": ["sea", "city"], "price": 1250.5},
    {"tags": [], "price": None, "days": 1},
]


def oracle(text: str) -> bool:
    """json and jsonschema: the text is one JSON value (no NaN, no repeated key) that the
    schema validates."""
    def no_repeats(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("a repeated key")
        return dict(pairs)

    def no_constants(name):
        raise ValueError(name)

    try:
        value = json.loads(text, object_pairs_hook=no_repeats, parse_constant=no_constants)
    except ValueError:
        return False
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(value)


def test_verdicts_agree_with_jsonschema_and_refusals_come_after_the_edit():
    """Valid instances (compact, indented) fit; each text one edit away fits exactly when
    jsonschema says it is valid, and where it does not the engine took at least the bytes
    before the edit (they begin a valid instance) and refused a byte it does not list."""
    structure = JsonSchema(SCHEMA, property_order="any", whitespace="flexible")
    rng = random.Random(0)
    alphabet = '{}[]",:0123456789. -eanrstuly\n'
    n_refused = 0
    for value in VALID:
        for text in (json.dumps(value, ensure_ascii=False), json.dumps(value, indent=2)):
            assert oracle(text) and check(structure, text).fits, text
            for _ in range(60):
                i = rng.randrange(len(text))
                edit = rng.choice(["insert", "delete", "replace"])
                c = rng.choice(alphabet)
                edited = (text[:i] + c + text[i:] if edit == "insert" else
                          text[:i] + text[i + 1:] if edit == "delete" else
                          text[:i] + c + text[i + 1:])
                verdict = check(structure, edited)
                assert verdict.fits == oracle(edited), edited
                if verdict.fits:
                    continue
                data = edited.encode()
                assert verdict.offset >= len(text[:i].encode()), edited
                if verdict.refused is not None:
                    n_refused += 1
                    assert data[verdict.offset] == verdict.refused
                    assert verdict.refused not in verdict.allowed and verdict.allowed
                else:
                    assert verdict.offset == len(data) and verdict.ends_early
                    assert END not in verdict.allowed and verdict.allowed
    assert n_refused > 100


def test_place_and_what_may_come():
    structure = JsonSchema(SCHEMA, property_order="any", whitespace="flexible")
    verdict = check(structure, '{\n  "name": "trip",\n  "days": 30\n}')
    assert (verdict.line, verdict.column, verdict.refused) == (3, 12, ord("0"))
    # 3 may stay (3.0 too, "tags" and "price" may follow), 30 is past the maximum
    assert verdict.expected == "'\\t', '\\n', '\\r', ' ', ',', '.', '}'"
    assert verdict.why == 'at $.days: an integer from 1 to 14; "30" exceeds it'
    verdict = check(structure, '{"days": 3')
    assert verdict.ends_early and verdict.offset == 10 and "'}'" in verdict.expected
    verdict = check(structure, '{"name": "\u00e9\u00e9", "dayz": 1}')  # columns in characters
    assert (verdict.line, verdict.column, verdict.offset) == (1, 20, 21)
    assert verdict.why.startswith("at $: an object with properties ")
    assert check(Grammar("start: \"a\"+"), "aab").expected == "'a', the end of the text"
    # a file's JSON text: blanks around the value are not the schema's
    assert not check(structure, ' {"days": 3}\n').fits
    assert check(structure, ' {"days": 3}\n', blanks_around=True).fits
    verdict = check(structure, '\n {"days": 3\n\n', blanks_around=True)
    assert verdict.ends_early and (verdict.offset, verdict.line, verdict.column) == (12, 2, 12)


def test_describe():
    assert describe({48, 49, 50, 51, 44, 10, 256}) == "'\\n', ',', '0'-'3', the end of the text"
    assert describe(set(range(256)) - {34, 92}) == "any byte but '\"', '\\\\'"
    assert describe({0x80, 0x81, 0xBF, 39}) == "'\\'', 0x80, 0x81, 0xbf"
    assert describe(set()) == "nothing"


def test_command(capsys, tmp_path):
    schema = tmp_path / "trip.schema.json"
    schema.write_text(json.dumps(SCHEMA))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(VALID[1], indent=2) + "\n")
    bad.write_text('{"tags": ["sea"],\n "days": 15}')
    assert main(["check", str(schema), str(good)]) == 0
    assert capsys.readouterr().out == f"{good} fits {schema}\n"
    assert main(["check", str(schema), str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{bad} does not fit {schema}: '5' at line 2, column 11 (byte 28) is refused"
    assert out[1:] == ['     "days": 15}', "              ^",
                       "what may come there: '\\t', '\\n', '\\r', ' ', ',', '.', '0'-'4', '}'",
                       'why: at $.days: an integer from 1 to 14; "15" exceeds it']
    # the schema's order, as pse generates: "days" is listed after "tags"
    good.write_text('{"tags": [], "days": 2}')
    assert main(["check", str(schema), str(good), "--property-order", "schema"]) == 1
    assert "'t' at line 1, column 3" in capsys.readouterr().out
    assert main(["check", str(schema), str(tmp_path / "missing.json")]) == 2
    assert "cannot read instance" in capsys.readouterr().err
    # a line break JSON text may hold inside a string (U+2028) is no line of check's
    bad.write_text('{"name": "a\u2028b",\n "days": 0}', encoding="utf-8")
    assert main(["check", str(schema), str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("'0' at line 2, column 10 (byte 27) is refused")
    assert out[1:3] == ['     "days": 0}', "             ^"]
    schema.write_bytes(b'{"type": "string", "pattern": "\xff"}')
    assert main(["check", str(schema), str(good)]) == 2
    assert "is not UTF-8 text" in capsys.readouterr().err
