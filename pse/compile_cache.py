"""The compile cache: compiled structures kept on disk, so a process does not compile again
what it (or another process) compiled before.

Off unless `set_cache_dir(path)` is called or the environment variable `PSE_CACHE_DIR` is set
(and `PSE_COMPILE_CACHE` is not "0"/"off"); entries go to `<dir>/compiled/`, one file each.

Which structures: those with a canonical description (`StateMachine.cache_key`):
`JsonSchema` (the schema as JSON text in its own key order, property_order, whitespace,
strict; not with `retrieve`), `Grammar` (its Lark or GBNF text, start rule, import paths; the
files its `%import`s read are checked by content when an entry is loaded), `Regex` (pattern
and flags) and `Json` (whitespace). Structures built from combinators have none and are not
cached. A JSON Schema or a grammar found in the cache is not even built as a machine tree
(it is built if something asks for it: a drawing, a bigger structure around it).

The key of an entry is the SHA-256 of: the entry format, pse's version and build (the size and
modification time of each of its module files), Python's version and Unicode database, the
compile settings (the upper-case constants of the compile-path modules: `MAX_NODES`,
`MAX_UNROLLED_LENGTH`, `FORMATS`, ...) and the structure's description.

An entry is `MAGIC`, the header's length (4 bytes, little-endian), the header (JSON: format,
pse's version and build, the key, the structure's class, the table layout, what the structure
keeps beside its tables, such as a schema's warnings), the payload (the labels and terminal
keys as a restricted pickle, then the tables as raw arrays) and the SHA-256 of all that. Loading
checks all of it — the checksum, the header's fields against what this process expects, the
pickle's classes (plain containers and two classes of pse's own, nothing else), the types,
dtypes and lengths of the tables and that every index in them is in range — and any mismatch
makes a warning naming the file, then the structure is compiled again and the entry
rewritten. An entry is written to a temporary file then renamed over the old one (atomic), so
two processes writing one entry at once leave one of the two whole.

The folder is bounded by `max_bytes` (default 1 GiB): past it, the entries least recently
used (written or loaded) go. `clear_cache()` removes every entry; so does deleting the folder.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import io
import json
import logging
import os
import pickle
import struct
import sys
import tempfile
import threading
import time
import unicodedata
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from pse._core.structure import _TABLE_FIELDS, CompiledStructure

logger = logging.getLogger("pse")

FORMAT = 1  # the entry format: bump it when the layout or the tables change meaning
MAGIC = b"PSE-COMPILED\r\n\x1a\n"  # (a text transfer or a truncated header breaks it)
SUFFIX = ".psec"
DEFAULT_MAX_BYTES = 1 << 30
# The modules whose upper-case constants are compile settings (see _settings; pse.gbnf's
# are in a GBNF grammar's description: `import pse` does not import it).
_SETTINGS_MODULES = (
    "pse.automaton", "pse.cfg", "pse.compiler", "pse.json_spelling",
    "pse.json_value", "pse.lark_reader", "pse.lark_terminals", "pse.machines", "pse.regex",
    "pse.registers", "pse.schema_types", "pse.json_schema.arrays", "pse.json_schema.common",
    "pse.json_schema.compile", "pse.json_schema.enums", "pse.json_schema.formats",
    "pse.json_schema.logic", "pse.json_schema.merge", "pse.json_schema.names",
    "pse.json_schema.negation", "pse.json_schema.numbers", "pse.json_schema.objects",
    "pse.json_schema.refs", "pse.json_schema.schema", "pse.json_schema.strings",
)
_ARRAY_FIELDS = dict(_TABLE_FIELDS, byte_class=np.uint8)
_ALIGN = 8

_UNSET = object()
_lock = threading.Lock()
_configured: Any = _UNSET  # set_cache_dir's path, None (off), or _UNSET (the environment's)
_max_bytes = DEFAULT_MAX_BYTES
_stats = {"hits": 0, "misses": 0, "stores": 0, "rejected": 0, "stale": 0, "errors": 0}
_build: str | None = None
_settings_names: list | None = None
_dir_total: dict[str, int] = {}  # compiled folder -> its bytes, as last counted plus written
_write_warned: set[str] = set()


# -- configuration ----------------------------------------------------------------------------
def set_cache_dir(path: str | os.PathLike | None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Turn the compile cache on, with its entries in `<path>/compiled/`, or off (None).

    Once called, the environment (`PSE_CACHE_DIR`) is no longer consulted.

    Args:
        path: pse's cache folder (the one `PSE_CACHE_DIR` names), or None: no cache.
        max_bytes: the most bytes of entries to keep; past it, the least recently used go.

    Raises:
        TypeError: `path` is not a str, a path or None.
        ValueError: `max_bytes` is not an int >= 0.
    """
    global _configured, _max_bytes
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"the cache folder is a str or a path, not {type(path).__name__}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
    with _lock:
        _configured = None if path is None else Path(path).expanduser()
        _max_bytes = max_bytes


def get_cache_dir() -> Path | None:
    """The folder whose `compiled/` holds the compile cache.

    Returns:
        `set_cache_dir`'s folder once it was called (None: off); before that, the folder
        `PSE_CACHE_DIR` names (read at each compile), unless `PSE_COMPILE_CACHE` is "0",
        "off", "false" or "no"; None when the cache is off.
    """
    configured = _configured
    if configured is not _UNSET:
        return configured
    folder = os.environ.get("PSE_CACHE_DIR")
    if not folder or os.environ.get("PSE_COMPILE_CACHE", "").lower() in ("0", "off", "false",
                                                                         "no"):
        return None
    return Path(folder).expanduser()


def cache_stats() -> dict[str, int]:
    """What the compile cache did in this process.

    Returns:
        Counts: `hits` (structures loaded), `misses` (looked up, not there), `stores`
        (entries written), `rejected` (corrupt or foreign entries, warned about), `stale`
        (a grammar's imported files changed), `errors` (entries that could not be written).
    """
    with _lock:
        return dict(_stats)


def clear_cache() -> int:
    """Remove every entry of the compile cache (and unfinished temporary files).

    Returns:
        How many files were removed (0 when the cache is off).
    """
    folder = _folder()
    if folder is None or not folder.is_dir():
        return 0
    n = 0
    for entry in os.scandir(folder):
        if entry.name.endswith(SUFFIX) or entry.name.startswith(".tmp-"):
            try:
                os.unlink(entry.path)
                n += 1
            except OSError:
                pass
    with _lock:
        _dir_total.pop(str(folder), None)
    return n


def _reset() -> None:
    """Back to the state at import (for tests): the environment decides, counts at zero."""
    global _configured, _max_bytes
    with _lock:
        _configured = _UNSET
        _max_bytes = DEFAULT_MAX_BYTES
        for name in _stats:
            _stats[name] = 0
        _dir_total.clear()
        _write_warned.clear()


def _count(name: str) -> None:
    with _lock:
        _stats[name] += 1


def _folder() -> Path | None:
    base = get_cache_dir()
    return None if base is None else base / "compiled"


# -- keys -------------------------------------------------------------------------------------
def _build_id() -> str:
    """pse's version and build: the name, size and modification time of each of its module
    files (a rebuild or another install is another build). Computed once per process."""
    global _build
    if _build is None:
        import pse

        package = Path(__file__).resolve().parent
        h = hashlib.sha256(str(getattr(pse, "__version__", "")).encode())
        for path in sorted(package.rglob("*")):
            if path.suffix in (".py", ".pyx", ".pxd", ".so", ".pyd") and \
                    "__pycache__" not in path.parts:
                st = path.stat()
                h.update(f"{path.relative_to(package)}\0{st.st_size}\0{st.st_mtime_ns}\n"
                         .encode())
        _build = h.hexdigest()[:32]
    return _build


_SCALARS = (bool, int, float, str, type(None))
_settings_cache: tuple | None = None  # (the values, their JSON)


def _settings() -> str:
    """The compile settings as JSON: each upper-case constant of the compile-path modules that
    is a number, a str or None (a limit, as `MAX_NODES`), with its value now (a user may
    change a limit before compiling)."""
    global _settings_names, _settings_cache
    if _settings_names is None:
        names = []
        for module_name in _SETTINGS_MODULES:
            module = importlib.import_module(module_name)
            for name, value in sorted(vars(module).items()):
                if name.isupper() and not name.startswith("_") and type(value) in _SCALARS:
                    names.append((module_name, module, name))
        _settings_names = names
    values = tuple(getattr(module, name, None) for _, module, name in _settings_names)
    cached = _settings_cache
    if cached is not None and cached[0] == values and \
            all(type(a) is type(b) for a, b in zip(cached[0], values)):
        return cached[1]
    text = json.dumps([[m, n, v if type(v) in _SCALARS else repr(v)]
                       for (m, _, n), v in zip(_settings_names, values)],
                      separators=(",", ":"))
    _settings_cache = (values, text)
    return text


def _digest(description: str) -> str:
    import pse

    h = hashlib.sha256()
    for part in (f"pse compile cache {FORMAT}", str(getattr(pse, "__version__", "")),
                 _build_id(), sys.version, unicodedata.unidata_version, _settings(),
                 description):
        data = part.encode("utf-8", "surrogatepass")
        h.update(struct.pack("<Q", len(data)))
        h.update(data)
    return h.hexdigest()


def _key_of(machine: Any) -> str | None:
    """The entry's key (hex) for `machine`, None when it has no description; kept on the
    machine (a compile after a lookup reuses it)."""
    state = machine.__dict__.get("_cache_state")
    if state is not None:
        return state[0]
    description = machine.cache_key()
    if description is None:
        return None
    key = _digest(description)
    machine.__dict__["_cache_state"] = (key, False)
    return key


# -- lookup -----------------------------------------------------------------------------------
def lookup(machine: Any) -> tuple[CompiledStructure, dict] | None:
    """The compiled structure of `machine` and what it keeps beside (`extra`) from the cache,
    or None: the cache is off, the machine has no description, it was looked up already, or
    there is no usable entry (a bad one is warned about).

    Args:
        machine: a StateMachine whose `cache_key()` fields are set.
    """
    folder = _folder()
    if folder is None:
        return None
    try:
        key = _key_of(machine)
    except Exception as e:  # (the cache never stops a compile)
        logger.debug("pse: compile cache: no key for %r: %s", machine, e)
        return None
    if key is None or machine.__dict__["_cache_state"][1]:
        return None
    machine.__dict__["_cache_state"] = (key, True)
    path = folder / (key + SUFFIX)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        _count("misses")
        return None
    except OSError as e:
        logger.debug("pse: compile cache: cannot read %s: %s", path, e)
        _count("misses")
        return None
    try:
        structure, extra = _decode(data, key, type(machine).__qualname__, machine)
    except _Stale as e:
        logger.debug("pse: compile cache: %s is stale (%s): compiled again", path, e)
        _count("stale")
        return None
    except Exception as e:  # anything at all: the entry is not trusted
        warnings.warn(f"pse: the compile cache entry {path} is unusable ({e}): compiled "
                      "again and rewritten", stacklevel=3)
        _count("rejected")
        return None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    _count("hits")
    return structure, extra


class _Stale(Exception):
    """A well-formed entry that no longer applies (a grammar's imported file changed)."""


class _Unpickler(pickle.Unpickler):
    """Plain containers and scalars, and only these two classes: a terminal key and the key
    states of an object's keys (both plain data inside)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("pse.machines", "_HashedKey"):
            from pse.machines import _HashedKey

            return _HashedKey
        if (module, name) == ("pse.json_spelling", "KeyStates"):
            from pse.json_spelling import KeyStates

            return KeyStates
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in an entry")


class _Pickler(pickle.Pickler):
    """Refuses what `_Unpickler` would (called for every object but plain scalars and
    containers, so it costs next to nothing): an entry that is written loads."""

    def reducer_override(self, obj: Any) -> Any:
        from pse.json_spelling import KeyStates
        from pse.machines import _HashedKey

        if obj in (_HashedKey, KeyStates) or type(obj) in (_HashedKey, KeyStates):
            return NotImplemented  # (pickled as usual)
        raise pickle.PicklingError(f"a {type(obj).__name__} cannot go into an entry")


def _decode(data: bytes, key: str, kind: str, machine: Any) -> tuple[CompiledStructure, dict]:
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
                        ("build", _build_id()), ("key", key), ("kind", kind)):
        if header.get(field) != want:
            raise ValueError(f"its {field} is {header.get(field)!r}, not {want!r}")
    n_rules, n_classes, root = (header.get(k) for k in ("n_rules", "n_classes", "root_node"))
    extra, layout, n_meta = header.get("extra"), header.get("arrays"), header.get("meta_bytes")
    if not (all(type(x) is int for x in (n_rules, n_classes, root, n_meta))
            and isinstance(extra, dict) and isinstance(layout, list)):
        raise ValueError("its header lacks a field")
    if not machine._cache_valid(extra):
        raise _Stale("what it was compiled from changed")
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
    bounded("term_start", 0, max(n_dfa, 1))
    bounded("term_counted", 0, 3)
    if np.any(a["term_counted"] == 2) and len(a["dfa_boundary"]) != n_dfa:
        raise ValueError("its counted terminals lack their lengths")
    n_nodes = len(a["node_end"])
    n_entries = len(a["entry_term"])
    n_guards = len(a["guard_min"])
    sized(("node_guarded",), n_nodes)
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


# -- store ------------------------------------------------------------------------------------
def store(machine: Any, tables: dict, n_rules: int) -> None:
    """Write the entry of `machine` (compiled into `tables`, `n_rules` rules) when the cache
    is on and the machine has a description. Never raises: a failure is logged (and warned
    about once per folder)."""
    folder = _folder()
    if folder is None:
        return
    try:
        key = _key_of(machine)
        if key is None:
            return
        data = _encode(machine, key, tables, n_rules)
    except Exception as e:  # (a terminal key of a kind the entry cannot hold)
        logger.debug("pse: compile cache: %r not stored: %s", machine, e)
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)  # (mkstemp's 0600 would hide it from another user's process)
            os.replace(tmp, folder / (key + SUFFIX))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as e:
        _count("errors")
        with _lock:
            first = str(folder) not in _write_warned
            _write_warned.add(str(folder))
        if first:
            warnings.warn(f"pse: the compile cache cannot write to {folder} ({e}); "
                          "structures are compiled as usual", stacklevel=3)
        return
    _count("stores")
    _bound(folder, len(data))


def _encode(machine: Any, key: str, tables: dict, n_rules: int) -> bytes:
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
        "format": FORMAT, "pse": str(getattr(pse, "__version__", "")), "build": _build_id(),
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


def _bound(folder: Path, written: int) -> None:
    """Keep the folder under max_bytes: past it, remove the entries least recently used
    (by modification time: a load touches its entry) down to 90% of it, and temporary files
    a crashed writer left over an hour ago."""
    name = str(folder)
    with _lock:
        total = _dir_total.get(name)
        if total is not None:
            total = _dir_total[name] = total + written
        limit = _max_bytes
    if total is not None and total <= limit:
        return
    entries = []
    total = 0
    now = time.time()
    try:
        for entry in os.scandir(folder):
            try:
                st = entry.stat()
            except OSError:
                continue
            if entry.name.startswith(".tmp-"):
                if now - st.st_mtime > 3600:
                    _unlink(entry.path)
                continue
            if entry.name.endswith(SUFFIX):
                entries.append((st.st_mtime, st.st_size, entry.path))
                total += st.st_size
    except OSError:
        return
    if total > limit:
        entries.sort()
        for _, size, path in entries:
            if total <= limit * 0.9:
                break
            if _unlink(path):
                total -= size
    with _lock:
        _dir_total[name] = total


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


def json_description(value: Any) -> str | None:
    """A canonical description of `value`, a JSON document as Python data (dicts with str
    keys, lists, str, int, float, bool, None): its compact JSON text in its own key order (a
    schema's property order is part of its meaning), tagged "json:"; or, where a dict or list
    is met in several places (a subschema shared, which the schema compiler compiles once),
    each container spelled once and met again as a reference to its first place, tagged
    "shared:" (the JSON text would repeat it, exponentially when sharing nests). None when
    `value` holds anything else (a tuple, NaN, a custom class), which a fresh compile might
    read otherwise, or nests too deeply."""
    seen: set[int] = set()
    shared = False
    todo = [value]
    while todo:
        x = todo.pop()
        t = type(x)
        if t is dict or t is list:
            if id(x) in seen:
                shared = True
                continue
            seen.add(id(x))
            if t is dict:
                for k, v in x.items():
                    if type(k) is not str:
                        return None
                    todo.append(v)
            else:
                todo.extend(x)
        elif not (x is None or t is str or t is int or t is float or t is bool):
            return None
    try:
        if not shared:
            return "json:" + json.dumps(value, ensure_ascii=False, allow_nan=False,
                                        separators=(",", ":"))
        return "shared:" + json.dumps(_with_references(value, {}), ensure_ascii=False,
                                      allow_nan=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return None


def _with_references(x: Any, numbers: dict[int, int]) -> Any:
    """`x` with each container tagged ("obj", "arr") the first time, ("ref", its number) after:
    scalars stay as they are, so the result spells one graph only."""
    if type(x) is dict or type(x) is list:
        n = numbers.get(id(x))
        if n is not None:
            return ["ref", n]
        numbers[id(x)] = len(numbers)
        if type(x) is dict:
            return ["obj", [[k, _with_references(v, numbers)] for k, v in x.items()]]
        return ["arr", [_with_references(v, numbers) for v in x]]
    return x
