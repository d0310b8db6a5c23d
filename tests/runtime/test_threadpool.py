"""The shared thread pool's map: order, balance, errors."""
from __future__ import annotations

import threading
import time

import pytest

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
