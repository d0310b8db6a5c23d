"""The shared thread pool's map: order, balance, errors."""
from __future__ import annotations

import threading
import time

import pytest

from runtime import threadpool
from runtime.threadpool import ThreadPool


def test_map_returns_results_in_order_and_uses_every_worker():
    pool = ThreadPool(3)
    seen = set()

    def fn(i):
        seen.add(threading.get_ident())
        time.sleep(0.002 * (i % 4))          # uneven samples
        return i * i
    try:
        assert pool.map(fn, 40) == [i * i for i in range(40)]
        assert len(seen) == 3
    finally:
        pool.shutdown()


def test_uneven_samples_are_balanced():
    # one slow sample first: the other worker must take all the rest meanwhile
    pool = ThreadPool(2)
    where = {}

    def fn(i):
        where[i] = threading.get_ident()
        time.sleep(0.3 if i == 0 else 0.001)
        return i
    try:
        pool.map(fn, 20)
        assert sum(1 for i in range(1, 20) if where[i] != where[0]) >= 15
    finally:
        pool.shutdown()


def test_the_lowest_failing_sample_is_raised():
    pool = ThreadPool(2)

    def fn(i):
        if i in (7, 3, 12):
            time.sleep(0.01 if i == 3 else 0)
            raise ValueError(f"sample {i}")
        return i
    try:
        with pytest.raises(ValueError, match="sample 3"):
            pool.map(fn, 16)
        assert pool.map(lambda i: i + 1, 5) == [1, 2, 3, 4, 5]     # still usable
    finally:
        pool.shutdown()


def _tiny(seen):
    def fn(i):
        seen.append(threading.get_ident())
        return i * 2
    return fn


def test_tiny_work_runs_in_the_calling_thread(monkeypatch):
    """A map measured cheap (runtime.threadpool.INLINE_MAX_S) runs here, same results."""
    monkeypatch.setattr(threadpool, "INLINE_MAX_S", 1.0)   # whatever the machine's load
    pool = ThreadPool(2)
    try:
        seen = []
        assert pool.map(_tiny(seen), 8) == [i * 2 for i in range(8)]   # measured on the pool
        seen.clear()
        assert pool.map(_tiny(seen), 8) == [i * 2 for i in range(8)]
        assert set(seen) == {threading.get_ident()}
    finally:
        pool.shutdown()


def test_work_grown_expensive_goes_back_to_the_pool(monkeypatch):
    pool = ThreadPool(2)
    slow = {"s": 0.0}
    seen = []

    def fn(i):
        seen.append(threading.get_ident())
        time.sleep(slow["s"])
        return i
    try:
        pool.map(fn, 4)
        pool.map(fn, 4)
        key = next(k for k in threadpool._costs if k[1] is fn.__code__)
        threadpool._costs[key] = threadpool.INLINE_MAX_S / 4 * 0.3    # cheap
        slow["s"] = 0.002
        seen.clear()
        pool.map(fn, 4)          # still estimated cheap: here, and measured slow ...
        assert set(seen) == {threading.get_ident()}
        assert threadpool._costs[key] == pytest.approx(threadpool.INLINE_MAX_S / 4 * 0.6)
        pool.map(fn, 4)          # ... twice: now above the limit
        assert threadpool._costs[key] * 4 > threadpool.INLINE_MAX_S
        seen.clear()
        assert pool.map(fn, 4) == [0, 1, 2, 3]
        assert threading.get_ident() not in seen
    finally:
        pool.shutdown()


def test_an_inline_map_raises_the_first_error_and_stops(monkeypatch):
    monkeypatch.setattr(threadpool, "INLINE_MAX_S", 1.0)
    pool = ThreadPool(2)
    ran = []
    fail = {"on": False}

    def fn(i):
        ran.append(i)
        if fail["on"] and i in (2, 5):
            raise ValueError(f"sample {i}")
        return i
    try:
        pool.map(fn, 8)
        pool.map(fn, 8)              # cheap: runs here from now on
        ran.clear()
        fail["on"] = True
        with pytest.raises(ValueError, match="sample 2"):
            pool.map(fn, 8)
        assert ran == [0, 1, 2]      # in order, nothing started after the failure
    finally:
        pool.shutdown()
