"""pse.lazy.Lazy: made once, by the first thread that asks; a failed make is tried again."""

import threading

import pytest

from pse.lazy import Lazy


def test_made_once_for_all_threads():
    """Eight threads ask at once; the first makes the value while the others wait for it."""
    calls, asking = [], []
    all_asking = threading.Event()

    def make():
        calls.append(1)
        all_asking.wait(5)  # (every thread has asked before the value exists)
        return object()

    def ask():
        asking.append(1)
        if len(asking) == 8:
            all_asking.set()
        got.append(lazy.get())

    lazy = Lazy(make)
    got = []
    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(got) == 8 and all(g is got[0] for g in got)


def test_a_failed_make_is_tried_again():
    attempts = []

    def make():
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("not yet")
        return "value"

    lazy = Lazy(make)
    with pytest.raises(OSError, match="not yet"):
        lazy.get()
    assert lazy.get() == "value" and lazy.get() == "value"
    assert len(attempts) == 2
