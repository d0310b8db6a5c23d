"""The reader prefetcher's pause after filling its queue (runtime/readers/prefetch.py)."""
import queue
import threading
import time

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
