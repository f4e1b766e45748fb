"""A value made on first use, once: the first thread to ask makes it, others wait for it."""

from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """`make()`'s value, made by the first `get()` (a failed make is tried again next time)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        """The value, made by the first call (others wait for it)."""
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._make()
        return self._value
