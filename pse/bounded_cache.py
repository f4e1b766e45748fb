"""A thread-safe cache that keeps only its most recently used entries: for what compiling one
structure builds and later structures reuse (terminal automata, key-name automata), so that
memory stays bounded however many structures a process compiles."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable

from pse._core.frozen import untrack_if_settled

_MISSING = object()


class BoundedCache:
    """At most `size` entries; past that, the least recently used one goes. Values are
    shared by every caller, so they must be immutable (or only fill caches of their own).
    Two threads that miss the same key both build it; the last one stored wins."""

    # (its dict's and lock's methods kept bound: a compile uses the caches some fifty times,
    # and each lookup of a method made an object)
    __slots__ = ("size", "_entries", "_lock", "_find", "_touch", "_acquire", "_release")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.size = size
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._find, self._touch = self._entries.get, self._entries.move_to_end
        self._acquire, self._release = self._lock.acquire, self._lock.release

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value stored under `key` (now the most recently used), else `default`."""
        self._acquire()
        try:
            value = self._find(key, _MISSING)  # (keys are tuples: hashed anew each time)
            if value is _MISSING:
                return default
            self._touch(key)
            return value
        finally:
            self._release()

    def put(self, key: Hashable, value: Any) -> None:
        """Stores `value` under `key`, dropping the least recently used entry past `size`."""
        # (entries of immutable parts need no garbage collection: see untrack_if_settled)
        untrack_if_settled(key)
        untrack_if_settled(value)
        dropped = None
        self._acquire()
        try:
            entries = self._entries
            entries[key] = value
            self._touch(key)
            if len(entries) > self.size:
                dropped = entries.popitem(last=False)
        finally:
            self._release()
        # (the entry dropped is freed once the lock is let go: a finalizer of its objects
        # may use the cache)
        del dropped

    def clear(self) -> None:
        """Drops every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
