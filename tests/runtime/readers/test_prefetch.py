"""The reader prefetcher (runtime/readers/prefetch.py): its pause after filling its queue, and
the consumer reading an item itself when nobody has begun it."""
import queue
import threading
import time

import numpy as np
import pytest

from runtime.readers import prefetch
from runtime.readers.prefetch import Prefetcher


def test_pause_ends_when_the_consumer_takes_an_item(monkeypatch):
    monkeypatch.setattr(prefetch, "YIELD_S", 30.0)
    q = queue.Queue(maxsize=1)
    q.put("ready")
    t = threading.Thread(target=prefetch._yield_to_consumer, args=(q,), daemon=True)
    t.start()
    time.sleep(0.05)
    assert t.is_alive()             # full queue: the producer waits
    assert q.get() == "ready"
    t.join(timeout=10)
    assert not t.is_alive()         # the get woke it long before 30 s


def test_pause_is_bounded_and_skipped_when_not_full(monkeypatch):
    monkeypatch.setattr(prefetch, "YIELD_S", 2.0)
    q = queue.Queue(maxsize=2)
    t0 = time.perf_counter()
    prefetch._yield_to_consumer(q)      # empty: no wait
    q.put(1)
    prefetch._yield_to_consumer(q)      # not full: no wait
    assert time.perf_counter() - t0 < 1.0
    q.put(2)
    monkeypatch.setattr(prefetch, "YIELD_S", 0.05)
    t0 = time.perf_counter()
    prefetch._yield_to_consumer(q)      # full, nobody takes: waits about YIELD_S, then goes on
    assert 0.04 <= time.perf_counter() - t0 < 5


def test_items_in_order_with_a_slow_and_a_fast_consumer():
    items = list(range(40))
    got = []
    p = Prefetcher(lambda x: x * 3, items, 1)
    for k in range(40):
        got.append(p.get())
        if k % 7 == 0:
            time.sleep(0.01)        # the queue fills meanwhile: the producer pauses
    assert got == [x * 3 for x in items]
    try:
        p.get()
    except StopIteration:
        pass
    else:
        raise AssertionError("expected StopIteration after the last item")


def _tracking(fn):
    """``produce`` wrapped to record the thread of each call and the most calls at once."""
    lock, state = threading.Lock(), {"now": 0, "most": 0, "threads": []}

    def produce(x):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            state["threads"].append(threading.current_thread().name)
        try:
            time.sleep(0.0005)
            return fn(x)
        finally:
            with lock:
                state["now"] -= 1
    return produce, state


def test_items_from_a_generator_that_blocks_stay_in_order():
    gate = threading.Event()
    produce, state = _tracking(lambda x: -x)

    def items():                    # the thread blocks on the first item until released
        yield 0
        gate.wait(10)
        yield from range(1, 6)

    p = Prefetcher(produce, items(), 1, name="pf-under-test")
    first = p.get()
    gate.set()
    got = [first] + [p.get() for _ in range(5)]
    assert got == [0, -1, -2, -3, -4, -5]
    assert state["most"] == 1           # never two reads at once
    assert len(state["threads"]) == 6   # each item read exactly once
    with pytest.raises(StopIteration):
        p.get()


def test_the_consumer_reads_every_item_when_the_thread_takes_none(monkeypatch):
    # a thread that never gets to take an item (here: one that ends at once)
    monkeypatch.setattr(prefetch, "_produce_all", lambda *args: None)
    produce, state = _tracking(lambda x: x + 100)
    p = Prefetcher(produce, range(4), 2)
    assert [p.get() for _ in range(4)] == [100, 101, 102, 103]
    assert state["threads"] == [threading.current_thread().name] * 4
    with pytest.raises(StopIteration):
        p.get()


@pytest.mark.parametrize("depth", [1, 3])
def test_order_and_exactly_once_with_an_irregular_consumer(depth):
    produce, state = _tracking(lambda x: x * x)
    p = Prefetcher(produce, range(60), depth)
    rng = np.random.default_rng(5)
    got = []
    for _ in range(60):
        got.append(p.get())
        if rng.random() < 0.3:
            time.sleep(float(rng.random()) * 0.004)   # slow now and then: the thread reads
    assert got == [x * x for x in range(60)]
    assert state["most"] == 1 and len(state["threads"]) == 60
    with pytest.raises(StopIteration):
        p.get()


@pytest.mark.parametrize("wait", [False, True])
def test_an_error_comes_at_its_item_and_ends_the_prefetcher(wait):
    calls = []

    def produce(x):
        calls.append(x)
        if x == 3:
            raise KeyError("bad item 3")
        return x

    p = Prefetcher(produce, range(10), 1)
    got = []
    for _ in range(3):
        got.append(p.get())
        if wait:
            time.sleep(0.02)        # the thread reads ahead (and meets the error itself)
    with pytest.raises(KeyError, match="bad item 3"):
        p.get()
    with pytest.raises(StopIteration):
        p.get()
    assert got == [0, 1, 2]
    assert sorted(calls) == [0, 1, 2, 3]     # nothing read after the failing item
