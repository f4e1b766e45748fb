"""pse.lazy.Lazy: made once, by the first thread that asks; a failed make is tried again."""

import threading

import pytest

from pse.lazy import Lazy


def test_made_once_for_all_threads():
    calls = []
    started = threading.Event()

    def make():
        calls.append(1)
        started.wait(5)  # (the other threads ask meanwhile)
        return object()

    lazy = Lazy(make)
    got = []
    threads = [threading.Thread(target=lambda: got.append(lazy.get())) for _ in range(8)]
    for t in threads:
        t.start()
    started.set()
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
