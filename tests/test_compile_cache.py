"""The compile cache (pse.compile_cache): off by default, on by set_cache_dir or PSE_CACHE_DIR;
a structure loaded from it masks as a fresh compile does; a corrupt or foreign entry is warned
about and rebuilt; options and files that change the tables change the entry."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import pse
from helpers import errors_in_threads
from pse import (Chain, Grammar, Json, JsonSchema, Phrase, Regex, StructuringEngine,
                 Vocabulary, cache_entry, compile_cache)

PIECES = ['{"', '":', '",', '"}', "true", "null", "12", "ab", "ba", "-1", ".5", "e3", '["',
          '"]', "é", "\\u00e9", " ", "  ", "SELECT", "name"]
EOS = 95 + len(PIECES)
VOCAB = Vocabulary.from_tokens([bytes([b]) for b in range(0x20, 0x7F)]
                               + [p.encode() for p in PIECES] + [b"<eos>"],
                               eos_token_ids=[EOS], special_token_ids=[EOS])

SCHEMA = {
    "type": "object", "required": ["name", "tags"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]{1,8}$"},
        "age": {"type": "integer", "minimum": -5, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["ab", "ba", "x"]}, "uniqueItems": True},
        "ratio": {"type": "number"},
        "flag": {"type": ["boolean", "null"]},
    },
    # keys other than the listed ones (a key automaton less the names: KeyStates)
    "additionalProperties": {"type": "integer"},
}
VALID = [{"name": "ab", "tags": ["ab", "x"]},
         {"name": "abc", "age": 12, "tags": [], "ratio": -1.5e3, "flag": None, "zz": 1}]
INVALID = [{"name": "AB", "tags": []}, {"name": "ab", "tags": ["ab", "ab"]},
           {"name": "ab", "age": 121, "tags": []}, {"tags": []}, {"name": "a", "tags": [],
                                                                 "zz": "s"}]
LARK = r"""
start: "SELECT " NAME ("," NAME)* (" WHERE " NAME "=" NUMBER)?
NAME: /[a-z_]+/
%import common.NUMBER
"""
GBNF = 'root ::= "(" item ("," item)* ")"\nitem ::= [a-z]+ | [0-9]+ "." [0-9]+\n'


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture
def clean(monkeypatch, tmp_path):
    """No cache folder from the environment, the module's state reset before and after."""
    monkeypatch.delenv("PSE_CACHE_DIR", raising=False)
    monkeypatch.delenv("PSE_COMPILE_CACHE", raising=False)
    compile_cache._reset()
    yield tmp_path
    compile_cache._reset()


@pytest.fixture
def cache(clean):
    pse.set_cache_dir(clean)
    return clean / "compiled"


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + compile_cache.SUFFIX)) if folder.is_dir() else []


def hits() -> int:
    return compile_cache.cache_stats()["hits"]


def fresh(make):
    """`make()` compiled without the cache."""
    saved = compile_cache._configured
    compile_cache._configured = None
    try:
        return make()
    finally:
        compile_cache._configured = saved


def masks_along(structure, text: str) -> list[bytes]:
    """The masks at each step of `text`, tokenized greedily, and after it."""
    engine = StructuringEngine(VOCAB, mask_memo=0)
    engine.configure(structure)
    out = [engine.compute_mask().tobytes()]
    for token in VOCAB.encode(text.encode()):
        assert engine.consume_token(token), (text, token)
        out.append(engine.compute_mask().tobytes())
    return out


def assert_same(loaded, reference, valid: list[str], invalid: list[str]) -> None:
    for text in valid:
        assert loaded.matches(text) and reference.matches(text), text
        assert masks_along(loaded, text) == masks_along(reference, text), text
    for text in invalid:
        assert not loaded.matches(text) and not reference.matches(text), text
        assert loaded.matches(text, partial=True) == reference.matches(text, partial=True)


# -- on and off -------------------------------------------------------------------------------
def test_off_by_default(clean, monkeypatch):
    monkeypatch.setenv("HOME", str(clean))
    monkeypatch.setenv("XDG_CACHE_HOME", str(clean / "xdg"))
    assert pse.get_cache_dir() is None
    JsonSchema(SCHEMA).compile()
    Json().compile()
    assert compile_cache.cache_stats() == dict.fromkeys(compile_cache.cache_stats(), 0)
    assert list(clean.iterdir()) == []


def test_on_with_set_cache_dir(cache):
    assert pse.get_cache_dir() == cache.parent
    JsonSchema(SCHEMA).compile()
    assert len(entries(cache)) == 1
    assert compile_cache.cache_stats()["stores"] == 1
    JsonSchema(SCHEMA).compile()
    assert hits() == 1 and len(entries(cache)) == 1
    pse.set_cache_dir(None)
    assert pse.get_cache_dir() is None
    JsonSchema(SCHEMA).compile()
    assert hits() == 1


def test_on_with_the_environment(clean, monkeypatch):
    monkeypatch.setenv("PSE_CACHE_DIR", str(clean / "env"))
    assert pse.get_cache_dir() == clean / "env"
    JsonSchema(SCHEMA).compile()
    JsonSchema(SCHEMA).compile()
    assert hits() == 1 and len(entries(clean / "env" / "compiled")) == 1
    monkeypatch.setenv("PSE_COMPILE_CACHE", "off")
    assert pse.get_cache_dir() is None
    monkeypatch.delenv("PSE_COMPILE_CACHE")
    pse.set_cache_dir(None)  # explicit: the environment no longer counts
    assert pse.get_cache_dir() is None


def test_set_cache_dir_checks_its_arguments(clean):
    with pytest.raises(TypeError):
        pse.set_cache_dir(3)
    with pytest.raises(ValueError):
        pse.set_cache_dir(clean, max_bytes=-1)
    with pytest.raises(ValueError, match="empty"):  # (it would be the current folder)
        pse.set_cache_dir("")
    assert pse.get_cache_dir() is None  # (nothing changed: `clean` left it off)


# -- a hit is the same structure --------------------------------------------------------------
def test_schema_from_the_cache_masks_as_a_fresh_compile(cache):
    JsonSchema(SCHEMA).compile()
    loaded = JsonSchema(SCHEMA)
    assert hits() == 1
    assert loaded._graph is None  # the machine tree was not built
    structure = loaded.compile()
    assert any(s is not None for s in structure.terminal_states)  # KeyStates went through
    reference = fresh(lambda: JsonSchema(SCHEMA))
    assert_same(loaded, reference, [compact(v) for v in VALID], [compact(v) for v in INVALID])
    # values, structured outputs and explanations come out the same
    engine = StructuringEngine(VOCAB)
    engine.configure(loaded)
    engine.consume_tokens(VOCAB.encode(compact(VALID[0]).encode()) + [EOS])
    assert engine.structured_outputs() == [("json", VALID[0])]
    prefix = b'{"name":"ab","age":'
    assert explain_after(loaded, prefix, "x") == explain_after(reference, prefix, "x")
    assert "$.age" in explain_after(loaded, prefix, "x")


def explain_after(structure, prefix: bytes, token: str) -> str:
    engine = StructuringEngine(VOCAB)
    engine.configure(structure)
    engine.consume_tokens(VOCAB.encode(prefix))
    return str(engine.explain(token))


def test_engine_configure_with_a_dict_uses_the_cache(cache):
    engine = StructuringEngine(VOCAB)
    engine.configure(SCHEMA)
    engine.configure(SCHEMA)
    assert hits() == 1


@pytest.mark.parametrize("make, valid, invalid", [
    (lambda: Grammar(LARK), ["SELECT a,b_c WHERE x=12"], ["SELECT A", "SELECT a WHERE x="]),
    (lambda: Grammar.from_gbnf(GBNF), ["(ab,1.5)", "(x)"], ["()", "(1.)"]),
    (lambda: Regex(r"[a-z]+@[a-z]+\.(com|org)"), ["ab@ba.com"], ["ab@ba.net", "@b.com"]),
    (lambda: Json(whitespace=2), ['{"a": [1, true, null]}', "-1.5e3"], ['{"a" 1}', "01"]),
], ids=["lark", "gbnf", "regex", "json"])
def test_other_structures_from_the_cache(cache, make, valid, invalid):
    make().compile()
    loaded = make()
    loaded.compile()
    assert hits() == 1
    assert_same(loaded, fresh(make), valid, invalid)


def test_lazy_machine_tree_gives_no_warning_again_and_nests(cache):
    schema = {"type": "string", "format": "no-such-format"}
    with pytest.warns(UserWarning, match="no-such-format"):
        JsonSchema(schema).compile()
    with pytest.warns(UserWarning, match="no-such-format"):
        loaded = JsonSchema(schema)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bigger = Chain(Phrase("x="), loaded)  # builds the tree: no warning a second time
        assert bigger.matches('x="ab"') and not bigger.matches("x=1")
    with pytest.warns(UserWarning, match="no-such-format"):
        assert loaded.warnings == fresh(lambda: JsonSchema(schema)).warnings != []


def test_a_schema_changed_after_use_does_not_change_a_cached_one(cache):
    """Without the cache, the machine is built from the schema as it was when made; from the
    cache, its tree is built later: from a copy, not from the caller's dict as it is then."""
    JsonSchema({"type": "object", "properties": {"a": {"type": "integer"}}}).compile()
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    loaded = JsonSchema(schema)
    assert hits() == 1
    schema["properties"]["a"]["type"] = "string"
    bigger = Chain(loaded, Phrase("!"))  # builds the tree
    assert bigger.matches('{"a":1}!') and not bigger.matches('{"a":"x"}!')
    assert loaded.matches('{"a":1}')


# -- warnings ---------------------------------------------------------------------------------
@pytest.mark.parametrize("schema, strict, match", [
    ({"type": "string", "format": "no-such-format"}, True, "unknown format"),
    ({"type": "string", "format": "regex"}, False, "approximated, strict=False"),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "const": 1}, True,
     "not a keyword of draft 4"),
])
def test_warnings_are_given_again_on_a_hit(cache, schema, strict, match):
    with pytest.warns(UserWarning, match=match) as first:
        compiled = JsonSchema(schema, strict=strict)
        compiled.compile()
    with pytest.warns(UserWarning, match=match) as again:
        loaded = JsonSchema(schema, strict=strict)
    assert hits() == 1
    assert loaded.warnings == compiled.warnings and loaded.warnings
    assert [str(w.message) for w in again] == [str(w.message) for w in first]


def test_a_schema_taken_with_one_of_as_any_of_is_built_so_again(cache, monkeypatch):
    # without strict, a schema past MAX_SCHEMA_NODES compiles again with oneOf as anyOf: a
    # hit gives that warning again, and its lazy machine tree is built so at once
    import pse.json_schema.schema as schema_module

    monkeypatch.setattr(pse.json_schema.compile, "MAX_SCHEMA_NODES", 300)
    kinds = [{"type": "object", "properties": {"kind": {"const": i}, "options": {
        "type": "object", "properties": {"a": {"type": "string"}, f"o{i}": {"type": "integer"}},
        "additionalProperties": False}}} for i in range(5)]
    schema = {"oneOf": kinds}
    with pytest.warns(UserWarning, match="every oneOf is taken as anyOf") as first:
        JsonSchema(schema, strict=False).compile()
    compilers = []
    made = schema_module._Compiler
    monkeypatch.setattr(schema_module, "_Compiler",
                        lambda *args: compilers.append(1) or made(*args))
    with pytest.warns(UserWarning, match="every oneOf is taken as anyOf") as again:
        loaded = JsonSchema(schema, strict=False)
    assert hits() == 1 and not compilers
    assert [str(w.message) for w in again] == [str(w.message) for w in first]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bigger = Chain(Phrase("x="), loaded)  # builds the tree: once, oneOf as anyOf
        assert bigger.matches('x={}') and bigger.matches('x={"options":{"a":"s"}}')
        assert not bigger.matches('x={"options":{"b":1}}')
    assert len(compilers) == 1


# -- keys -------------------------------------------------------------------------------------
def test_options_make_other_entries(cache):
    variants = [dict(), dict(property_order="any"), dict(whitespace=2),
                dict(whitespace="flexible"), dict(strict=False)]
    for options in variants:
        JsonSchema(SCHEMA, **options).compile()
    assert len(entries(cache)) == len(variants) and hits() == 0
    # the properties' order is part of the schema (generation order): another entry
    reordered = dict(SCHEMA, properties=dict(reversed(list(SCHEMA["properties"].items()))))
    JsonSchema(reordered).compile()
    assert len(entries(cache)) == len(variants) + 1 and hits() == 0
    loaded = JsonSchema(reordered)
    assert hits() == 1
    text = '{"flag":true,"tags":[],"name":"ab"}'
    assert loaded.matches(text) and not JsonSchema(SCHEMA).matches(text)
    # the JSON text of a schema and its dict are one entry
    JsonSchema(json.dumps(SCHEMA)).compile()
    assert hits() == 3


def test_shared_subschemas_are_described_once(cache):
    schema: dict = {"type": "integer"}
    for _ in range(40):  # 2^40 copies, spelled out
        schema = {"anyOf": [schema, {"type": "array", "items": schema}]}
    description = compile_cache.json_description(schema)
    assert description.startswith("shared:") and len(description) < 5_000
    JsonSchema(schema).compile()
    loaded = JsonSchema(schema)
    assert hits() == 1 and loaded.matches("[[1],2]") and not loaded.matches('["x"]')
    # the same schema without sharing (copies) is another description, both exact
    inner = {"type": "integer"}
    copied = {"anyOf": [inner, {"type": "array", "items": json.loads(json.dumps(inner))}]}
    twice = {"anyOf": [inner, {"type": "array", "items": inner}]}
    assert compile_cache.json_description(copied).startswith("json:")
    assert compile_cache.json_description(twice) != compile_cache.json_description(copied)
    assert compile_cache.json_description({"a": (1,)}) is None
    assert compile_cache.json_description({"a": float("nan")}) is None
    assert compile_cache.json_description({1: "a"}) is None


def test_a_changed_limit_makes_another_entry(cache, monkeypatch):
    from pse.json_schema import common

    schema = {"type": "string", "pattern": "^a+$", "maxLength": 80}
    JsonSchema(schema).compile()
    monkeypatch.setattr(common, "MAX_UNROLLED_LENGTH", 100)
    JsonSchema(schema).compile()
    assert hits() == 0 and len(entries(cache)) == 2


def test_what_has_no_description_is_not_cached(cache):
    Chain(Phrase("a"), Regex("[0-9]+")).compile()
    JsonSchema(SCHEMA, retrieve=lambda uri: {}).compile()  # remote documents may change

    class MySchema(JsonSchema):
        pass

    MySchema(SCHEMA).compile()
    # ToolCalls has none, nor is the JsonSchema of its calls compiled alone
    pse.ToolCalls([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object"}}}]).compile()
    assert entries(cache) == []
    assert compile_cache.cache_stats()["stores"] == 0
    assert JsonSchema({"type": "object"}).cache_key() is not None
    assert JsonSchema({"enum": [1]}).cache_key() is not None
    tupled = JsonSchema({"type": "array"})
    tupled.schema = {"type": "array", "items": ({"type": "integer"},)}  # not plain JSON
    assert tupled.cache_key() is None
    assert Chain(Phrase("a")).cache_key() is None


def test_a_changed_import_is_compiled_again(cache, tmp_path):
    folder = tmp_path / "grammars"
    folder.mkdir()
    (folder / "words.lark").write_text('WORD: "ab" | "ba"\n')
    main = folder / "main.lark"
    main.write_text('start: WORD ("," WORD)*\n%import .words.WORD\n')
    Grammar.from_file(main).compile()
    assert Grammar.from_file(main).matches("ab,ba") and hits() == 1
    (folder / "words.lark").write_text('WORD: "xy"\n')
    changed = Grammar.from_file(main)
    assert compile_cache.cache_stats()["stale"] == 1 and hits() == 1
    assert changed.matches("xy,xy") and not changed.matches("ab")
    assert Grammar.from_file(main).matches("xy") and hits() == 2


# -- bad entries ------------------------------------------------------------------------------
def split_entry(data: bytes) -> tuple[dict, bytes, dict]:
    """An entry's header, pickled part and arrays."""
    at = len(cache_entry.MAGIC)
    (n,) = struct.unpack_from("<I", data, at)
    header = json.loads(data[at + 4:at + 4 + n])
    at += 4 + n
    meta = data[at:at + header["meta_bytes"]]
    at += header["meta_bytes"]
    arrays = {}
    for name, dtype, count in header["arrays"]:
        at += -at % cache_entry._ALIGN
        arrays[name] = np.frombuffer(data, dtype=dtype, count=count, offset=at).copy()
        at += arrays[name].nbytes
    return header, meta, arrays


def join_entry(header: dict, meta: bytes, arrays: dict) -> bytes:
    header = dict(header, meta_bytes=len(meta))
    text = json.dumps(header).encode()
    out = bytearray(cache_entry.MAGIC) + struct.pack("<I", len(text)) + text + meta
    for name, _, _ in header["arrays"]:
        out += bytes(-len(out) % cache_entry._ALIGN)
        out += arrays[name].tobytes()
    return bytes(out + hashlib.sha256(out).digest())


def rewrite(path: Path, header=None, meta=None, arrays=None) -> None:
    h, m, a = split_entry(path.read_bytes())
    if header:
        h.update(header)
    if arrays:
        for name, change in arrays.items():
            change(a[name])
    path.write_bytes(join_entry(h, m if meta is None else meta, a))


class Boom:
    def __reduce__(self):
        return (os.getcwd, ())


def set_first(value):
    def change(arr):
        arr[0] = value
    return change


BAD = {
    "flipped": lambda p, other: p.write_bytes(
        (lambda d: d[:len(d) // 2] + bytes([d[len(d) // 2] ^ 0x40]) + d[len(d) // 2 + 1:])(
            p.read_bytes())),
    "truncated": lambda p, other: p.write_bytes(p.read_bytes()[:-100]),
    "empty": lambda p, other: p.write_bytes(b""),
    "not an entry": lambda p, other: p.write_text("hello"),
    "another format": lambda p, other: rewrite(p, header={"format": cache_entry.FORMAT + 1}),
    "another pse": lambda p, other: rewrite(p, header={"pse": "0.0.1"}),
    "another build": lambda p, other: rewrite(p, header={"build": "0" * 32}),
    "another structure": lambda p, other: p.write_bytes(other.read_bytes()),
    "foreign class": lambda p, other: rewrite(p, meta=pickle.dumps({"x": Boom()})),
    "index out of range": lambda p, other: rewrite(
        p, arrays={"entry_target": set_first(10**6)}),
    "dfa out of range": lambda p, other: rewrite(p, arrays={"dfa_trans": set_first(-7)}),
    "bad warnings": lambda p, other: rewrite(p, header={"extra": {"warnings": [1]}}),
}


@pytest.mark.parametrize("damage", list(BAD), ids=list(BAD))
def test_a_bad_entry_is_warned_about_and_rebuilt(cache, damage):
    JsonSchema({"type": "integer"}).compile()
    JsonSchema(SCHEMA).compile()
    path = cache / (compile_cache._key_of(fresh(lambda: JsonSchema(SCHEMA)))
                    + compile_cache.SUFFIX)
    (other,) = [p for p in entries(cache) if p != path]
    BAD[damage](path, other)
    with pytest.warns(UserWarning, match="compile cache entry .* is unusable"):
        rebuilt = JsonSchema(SCHEMA)
    assert compile_cache.cache_stats()["rejected"] == 1
    assert rebuilt.matches(compact(VALID[1])) and not rebuilt.matches(compact(INVALID[1]))
    with warnings.catch_warnings():  # rewritten by the compile above
        warnings.simplefilter("error")
        again = JsonSchema(SCHEMA)
    assert again._graph is None and again.matches(compact(VALID[0]))


def test_what_the_unpickler_would_refuse_is_not_written(cache):
    machine = fresh(lambda: JsonSchema(SCHEMA))
    tables, n_rules = _tables_of(machine)
    for odd in (object(), len, Boom(), JsonSchema):
        tables["terminal_keys"][0] = ("odd", odd)
        compile_cache.store(machine, tables, n_rules)
    assert entries(cache) == [] and compile_cache.cache_stats()["stores"] == 0


def test_the_restricted_unpickler_refuses_globals():
    blob = pickle.dumps({"x": Boom()})
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        cache_entry._Unpickler(io.BytesIO(blob)).load()


# -- writing ----------------------------------------------------------------------------------
def test_concurrent_writers_leave_a_whole_entry(cache):
    machine = fresh(lambda: JsonSchema(SCHEMA))
    tables, n_rules = _tables_of(machine)

    def work():
        for _ in range(10):
            compile_cache.store(machine, tables, n_rules)

    assert not errors_in_threads(work, 4) and compile_cache.cache_stats()["stores"] == 40
    assert len(entries(cache)) == 1 and not list(cache.glob(".tmp-*"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = JsonSchema(SCHEMA)
        assert loaded.matches(compact(VALID[0]))
    assert hits() == 1


def _tables_of(machine) -> tuple[dict, int]:
    """The tables the compiler makes of `machine` (as compile_machine hands them to store)."""
    from pse import compiler

    c = compiler._Compiler()
    root = c.rule_for(machine)
    c.build_rules()
    return c.tables(root), len(c.rules)


def test_the_folder_is_bounded(clean):
    pse.set_cache_dir(clean)
    JsonSchema(SCHEMA).compile()
    size = entries(clean / "compiled")[0].stat().st_size
    compile_cache._reset()
    pse.set_cache_dir(clean, max_bytes=int(size * 2.5))
    for n in range(6):
        JsonSchema(dict(SCHEMA, maxProperties=10 + n)).compile()
    kept = entries(clean / "compiled")
    assert sum(p.stat().st_size for p in kept) <= size * 2.5
    assert 1 <= len(kept) <= 2
    last = JsonSchema(dict(SCHEMA, maxProperties=15))
    assert last._graph is None  # the newest stays


def test_clear_cache(cache):
    JsonSchema(SCHEMA).compile()
    Json().compile()
    assert compile_cache.clear_cache() == 2
    assert entries(cache) == []
    JsonSchema(SCHEMA).compile()
    assert hits() == 0


def test_an_unwritable_folder_warns_once_and_compiles(clean):
    blocker = clean / "file"
    blocker.write_text("")
    pse.set_cache_dir(blocker)  # compiled/ cannot be made under a file
    with pytest.warns(UserWarning, match="cannot write"):
        JsonSchema(SCHEMA).compile()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Json().matches("[1]")
    assert compile_cache.cache_stats()["errors"] == 2


@pytest.mark.parametrize("schema, drop", [
    ({"type": "array", "uniqueItems": True, "items": {"type": "string"}}, ("dfa_values",)),
    ({"type": "string", "maxLength": 300, "pattern": "^[a-zé]*$"}, ("dfa_lens",)),
    ({"type": "string", "maxLength": 300, "pattern": "^[a-zé]*$"}, ("dfa_lens_tail",)),
], ids=["unique arrays' counts", "counted lengths", "counted tails"])
def test_an_entry_without_a_table_the_core_reads_is_refused(monkeypatch, schema, drop):
    got = {}
    monkeypatch.setattr(compile_cache, "store", lambda m, t, n: got.update(m=m, t=dict(t), n=n))
    fresh(lambda: JsonSchema(schema)).compile()
    machine, tables = got["m"], got["t"]
    key, build = compile_cache._key_of(machine), compile_cache._build_id()
    whole = cache_entry.encode(machine, key, tables, got["n"], build)
    cache_entry.decode(whole, key, "JsonSchema", machine, build)  # (whole: taken)
    for name in drop:
        tables[name] = np.zeros(0, dtype=np.asarray(tables[name]).dtype)
    with pytest.raises(ValueError, match="lack"):
        cache_entry.decode(cache_entry.encode(machine, key, tables, got["n"], build), key,
                           "JsonSchema", machine, build)
