"""One entry of the compile cache (pse.compile_cache) as bytes, and back, checked.

An entry is `MAGIC`, the header's length (4 bytes, little-endian), the header (JSON: format,
pse's version and build, the key, the structure's class, the table layout, what the structure
keeps beside its tables, such as a schema's warnings), the payload (the labels and terminal
keys as a restricted pickle, then the tables as raw arrays) and the SHA-256 of all that.
`decode` checks all of it: the checksum, the header's fields against what this process
expects, the pickle's classes (plain containers and two classes of pse's own, nothing else),
the types, dtypes and lengths of the tables and that every index in them is in range.
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import pickle
import struct
import time
from typing import Any

import numpy as np

from pse._core.structure import _TABLE_FIELDS, CompiledStructure

FORMAT = 4  # the entry format: bump it when the layout or the tables change meaning
MAGIC = b"PSE-COMPILED\r\n\x1a\n"  # (a text transfer or a truncated header breaks it)
_ARRAY_FIELDS = dict(_TABLE_FIELDS, byte_class=np.uint8)
_ALIGN = 8


class Stale(Exception):
    """A well-formed entry that no longer applies (a grammar's imported file changed)."""


class _Unpickler(pickle.Unpickler):
    """Plain containers and scalars, and only these two classes: a terminal key and the key
    states of an object's keys (both plain data inside)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("pse.automaton", "ContentKey"):
            from pse.automaton import ContentKey

            return ContentKey
        if (module, name) == ("pse.json_spelling", "KeyStates"):
            from pse.json_spelling import KeyStates

            return KeyStates
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in an entry")


class _Pickler(pickle.Pickler):
    """Refuses what `_Unpickler` would (called for every object but plain scalars and
    containers, so it costs next to nothing): an entry that is written loads."""

    def reducer_override(self, obj: Any) -> Any:
        from pse.automaton import ContentKey
        from pse.json_spelling import KeyStates

        if obj in (ContentKey, KeyStates) or type(obj) in (ContentKey, KeyStates):
            return NotImplemented  # (pickled as usual)
        raise pickle.PicklingError(f"a {type(obj).__name__} cannot go into an entry")


def decode(data: bytes, key: str, kind: str, machine: Any, build: str
           ) -> tuple[CompiledStructure, dict]:
    """The compiled structure and what `machine` keeps beside it from an entry's bytes, all
    of it checked (see the module's docstring).

    Raises:
        Stale: a well-formed entry that no longer applies.
        Exception: anything else wrong with it (ValueError mostly).
    """
    if len(data) < len(MAGIC) + 4 + 32 or not data.startswith(MAGIC):
        raise ValueError("not a pse compile cache entry")
    body, checksum = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != checksum:
        raise ValueError("its checksum does not match: corrupt or truncated")
    at = len(MAGIC)
    (n_header,) = struct.unpack_from("<I", body, at)
    at += 4
    header = json.loads(body[at:at + n_header].decode("utf-8"))
    at += n_header
    if not isinstance(header, dict):
        raise ValueError("its header is not an object")
    import pse

    for field, want in (("format", FORMAT), ("pse", str(getattr(pse, "__version__", ""))),
                        ("build", build), ("key", key), ("kind", kind)):
        if header.get(field) != want:
            raise ValueError(f"its {field} is {header.get(field)!r}, not {want!r}")
    n_rules, n_classes, root = (header.get(k) for k in ("n_rules", "n_classes", "root_node"))
    extra, layout, n_meta = header.get("extra"), header.get("arrays"), header.get("meta_bytes")
    if not (all(type(x) is int for x in (n_rules, n_classes, root, n_meta))
            and isinstance(extra, dict) and isinstance(layout, list)):
        raise ValueError("its header lacks a field")
    if not machine._cache_valid(extra):
        raise Stale("what it was compiled from changed")
    paused = gc.isenabled()
    if paused:  # (its many tuples would set off collections that scan the whole process)
        gc.disable()
    try:
        meta = _Unpickler(io.BytesIO(body[at:at + n_meta])).load()
    finally:
        if paused:
            gc.enable()
    at += n_meta
    tables = _meta_tables(meta)
    arrays: dict[str, np.ndarray] = {}
    for item in layout:
        name, dtype, count = item
        if name not in _ARRAY_FIELDS or name in arrays or type(count) is not int or count < 0:
            raise ValueError(f"its table {name!r} is not one pse has")
        want = np.dtype(_ARRAY_FIELDS[name])
        if dtype != want.str:
            raise ValueError(f"its table {name} has dtype {dtype}, not {want.str}")
        at += -at % _ALIGN
        end = at + count * want.itemsize
        if end > len(body):
            raise ValueError("its tables run past its end")
        arrays[name] = np.frombuffer(body, dtype=want, count=count, offset=at)
        at = end
    if at != len(body) or set(arrays) != set(_ARRAY_FIELDS):
        raise ValueError("its tables are not the ones pse has")
    _check_tables(arrays, tables, n_classes, root)
    tables.update(arrays, n_classes=n_classes, root_node=root)
    return CompiledStructure(machine.value_parser(), tables, n_rules), extra


def _meta_tables(meta: Any) -> dict:
    """The tables kept beside the arrays, type-checked."""
    if not isinstance(meta, dict) or set(meta) != {"node_labels", "edge_labels",
                                                   "terminal_keys", "terminal_states",
                                                   "special_tokens"}:
        raise ValueError("its labels and keys are not the ones pse has")
    from pse.json_spelling import KeyStates

    if type(meta["node_labels"]) is not list or type(meta["edge_labels"]) is not dict:
        raise ValueError("its labels are malformed")  # (read by Python code only: explain)
    if type(meta["terminal_keys"]) is not list or type(meta["terminal_states"]) is not list \
            or not all(s is None or type(s) is KeyStates for s in meta["terminal_states"]):
        raise ValueError("its terminal keys are malformed")
    special = meta["special_tokens"]
    if not (type(special) is dict and all(
            type(t) is int and type(v) is tuple and len(v) == 2
            and type(v[0]) in (int, str) and type(v[1]) is bool for t, v in special.items())):
        raise ValueError("its special tokens are malformed")
    return dict(meta)


def _check_tables(a: dict[str, np.ndarray], meta: dict, n_classes: int, root: int) -> None:
    """Every index the core follows is within its table (an entry is never trusted: a
    checksum shows it is what was written, not that a writer was pse)."""
    def bounded(name: str, lo: int, hi: int) -> None:
        x = a[name]
        if len(x) and (int(x.min()) < lo or int(x.max()) >= hi):
            raise ValueError(f"its table {name} points out of range")

    def sized(names: tuple[str, ...], n: int) -> None:
        for name in names:
            if len(a[name]) != n:
                raise ValueError(f"its table {name} has {len(a[name])} rows, not {n}")

    def offsets(name: str, n: int, total: int) -> None:
        x = a[name]
        if len(x) != n + 1 or x[0] != 0 or x[-1] != total or (n and np.any(np.diff(x) < 0)):
            raise ValueError(f"its table {name} is not a list of offsets")

    if not 1 <= n_classes <= 256:
        raise ValueError("its byte classes are out of range")
    sized(("byte_class",), 256)
    bounded("byte_class", 0, n_classes)
    n_dfa = len(a["dfa_accept"])
    sized(("dfa_final",), n_dfa)
    sized(("dfa_trans",), n_dfa * n_classes)
    bounded("dfa_trans", -1, n_dfa)
    for name in ("dfa_boundary", "dfa_lens", "dfa_lens_tail", "dfa_values"):
        if len(a[name]) not in (0, n_dfa):
            raise ValueError(f"its table {name} has the wrong length")
    n_terms = len(a["term_start"])
    sized(("term_counted", "term_min", "term_max", "term_special"), n_terms)
    sized(("term_first",), 8 * n_terms)
    if n_terms and not n_dfa:
        raise ValueError("its terminals have no automata")
    bounded("term_start", 0, n_dfa)
    bounded("term_counted", 0, 3)
    if np.any(a["term_counted"] == 2) and any(len(a[name]) != n_dfa for name in (
            "dfa_boundary", "dfa_lens", "dfa_lens_tail")):
        raise ValueError("its counted terminals lack their lengths")
    if np.any(a["guard_item"]) and len(a["dfa_values"]) != n_dfa:
        raise ValueError("its unique arrays lack their strings' counts")
    n_nodes = len(a["node_end"])
    n_entries = len(a["entry_term"])
    n_guards = len(a["guard_min"])
    sized(("node_guarded", "node_collapse", "node_tail", "node_runs"), n_nodes)
    sized(("entry_target", "entry_guard"), n_entries)
    offsets("node_entry_off", n_nodes, n_entries)
    offsets("entry_push_off", n_entries, len(a["pushes"]))
    bounded("entry_term", 0, n_terms)
    bounded("entry_target", 0, n_nodes)
    bounded("pushes", 0, n_nodes)
    bounded("entry_guard", 0, n_guards)
    if n_guards < 1:
        raise ValueError("its guard tables are empty")
    sized(("guard_forbid", "guard_need", "guard_set", "guard_inc", "guard_max",
           "guard_reserve", "guard_cap", "guard_item"), n_guards)
    sized(("clause_then",), len(a["clause_if"]))
    offsets("guard_clause_off", n_guards, len(a["clause_if"]))
    if not 0 <= root < n_nodes:
        raise ValueError("its root node is out of range")
    starts = a["term_start"]
    if n_terms and (starts[0] != 0 or np.any(np.diff(starts) < 0)):
        raise ValueError("its terminals' automata overlap")
    checked = set()
    for k, states in enumerate(meta["terminal_states"]):
        if states is not None:
            n = (int(starts[k + 1]) if k + 1 < n_terms else n_dfa) - int(starts[k])
            if (id(states), n) not in checked:
                _check_key_states(states, n)
                checked.add((id(states), n))
    for key in meta["terminal_keys"]:
        hash(key)  # (a TypeError: an unhashable key)
    if len(meta["node_labels"]) not in (0, n_nodes) or len(meta["terminal_keys"]) != n_terms \
            or len(meta["terminal_states"]) != n_terms \
            or not all(0 <= t < n_terms for t in meta["special_tokens"]):
        raise ValueError("its labels or keys do not match its tables")


def _check_key_states(states: Any, n: int) -> None:
    """A KeyStates of a terminal with `n` DFA states: its containers of the right types, its
    twins in range (the mask cache looks up a twin's state in the core's tables; the rest
    is read by Python code, which raises on what it cannot read)."""
    if not (type(states.trie) is list and type(states.is_name) is list
            and type(states.residual) is dict and type(states.derived) is dict):
        raise ValueError("its key states are malformed")
    if not all(0 <= how[0] < n for how in states.derived.values()):
        raise ValueError("its key states are out of range")
    states._ends = {}  # (a cache of what they derive: filled again)



def encode(machine: Any, key: str, tables: dict, n_rules: int, build: str) -> bytes:
    """The entry of `machine`, compiled into `tables` (`n_rules` rules), as bytes."""
    meta = {name: tables.get(name) for name in ("node_labels", "edge_labels",
                                                 "terminal_keys", "terminal_states",
                                                 "special_tokens")}
    meta["node_labels"] = list(meta["node_labels"] or [])
    meta["edge_labels"] = dict(meta["edge_labels"] or {})
    meta["special_tokens"] = dict(meta["special_tokens"] or {})
    meta["terminal_keys"] = list(meta["terminal_keys"])
    meta["terminal_states"] = list(meta["terminal_states"] or
                                   [None] * len(meta["terminal_keys"]))
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(meta)
    blob = buffer.getvalue()
    layout, parts = [], []
    for name, dtype in _ARRAY_FIELDS.items():
        arr = np.ascontiguousarray(tables[name], dtype=dtype)
        layout.append([name, arr.dtype.str, int(arr.size)])
        parts.append(arr)
    extra = machine._cache_extra()
    import pse

    header = json.dumps({
        "format": FORMAT, "pse": str(getattr(pse, "__version__", "")), "build": build,
        "key": key, "kind": type(machine).__qualname__, "written": time.time(),
        "n_rules": int(n_rules), "n_classes": int(tables["n_classes"]),
        "root_node": int(tables["root_node"]), "meta_bytes": len(blob), "arrays": layout,
        "extra": extra,
    }, ensure_ascii=True).encode()
    out = bytearray(MAGIC)
    out += struct.pack("<I", len(header))
    out += header
    out += blob
    for arr in parts:
        out += bytes(-len(out) % _ALIGN)
        out += arr.tobytes()
    out += hashlib.sha256(out).digest()
    return bytes(out)
