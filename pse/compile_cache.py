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
compile settings (the upper-case number and string constants of the compile-path modules:
`MAX_NODES`, `MAX_UNROLLED_LENGTH`, ...; not the tables of formats, which a process should
not change once it compiles) and the structure's description.

An entry's format, and the checks of everything in it when it is loaded, are
`pse.cache_entry`'s. Any mismatch makes a warning naming the file, then the structure is
compiled again and the entry rewritten. An entry is written to a temporary file then renamed over the old one (atomic), so
two processes writing one entry at once leave one of the two whole.

The folder is bounded by `max_bytes` (default 1 GiB): past it, the entries least recently
used (written or loaded) go. `clear_cache()` removes every entry; so does deleting the folder.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import struct
import sys
import tempfile
import threading
import time
import unicodedata
import warnings
from pathlib import Path
from typing import Any


from pse._core.structure import CompiledStructure
from pse.cache_entry import FORMAT, Stale, decode, encode

logger = logging.getLogger("pse")

SUFFIX = ".psec"
DEFAULT_MAX_BYTES = 1 << 30
# The modules whose upper-case constants are compile settings (see _settings; pse.gbnf's
# are in a GBNF grammar's description: `import pse` does not import it).
_SETTINGS_MODULES = (
    "pse.automaton", "pse.bnf", "pse.cfg", "pse.compiler", "pse.json_spelling",
    "pse.json_value", "pse.lark_reader", "pse.lark_terminals", "pse.machines", "pse.regex",
    "pse.registers", "pse.schema_types", "pse.json_schema.arrays", "pse.json_schema.common",
    "pse.json_schema.compile", "pse.json_schema.enums", "pse.json_schema.formats",
    "pse.json_schema.logic", "pse.json_schema.merge", "pse.json_schema.names",
    "pse.json_schema.negation", "pse.json_schema.numbers", "pse.json_schema.objects",
    "pse.json_schema.refs", "pse.json_schema.schema", "pse.json_schema.strings",
)

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
        ValueError: `path` is empty (None turns the cache off), or `max_bytes` is not an
            int >= 0.
    """
    global _configured, _max_bytes
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"the cache folder is a str or a path, not {type(path).__name__}")
    if path is not None and not os.fspath(path):
        raise ValueError("the cache folder is an empty path: give a folder, or None to turn "
                         "the cache off")
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
        structure, extra = decode(data, key, type(machine).__qualname__, machine,
                                  _build_id())
    except Stale as e:
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
        data = encode(machine, key, tables, n_rules, _build_id())
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
