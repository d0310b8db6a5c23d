"""The byte-bounded LRU behind the resize tap caches."""
import numpy as np

from runtime.kernels.cpu.bytecache import ByteLRU, byte_lru_cache


def test_byte_lru_cache_memoises_within_its_budget():
    calls = []

    @byte_lru_cache(1000, lambda v: v.nbytes)
    def table(n):
        calls.append(n)
        return np.zeros(n, np.uint8)
    a = table(400)
    assert table(400) is a and calls == [400]            # hit
    table(500)
    assert table.cache.used == 900
    table(300)                                           # 1200 > 1000: drop the oldest (400)
    assert table.cache.used == 800 and calls == [400, 500, 300]
    table(400)
    assert calls == [400, 500, 300, 400]                 # it was evicted, so recomputed
    assert table.__wrapped__(7).size == 7


def test_none_results_are_cached_too():
    calls = []

    @byte_lru_cache(100, lambda v: 1)
    def maybe(n):
        calls.append(n)
        return None
    assert maybe(1) is None and maybe(1) is None and calls == [1]


def test_get_default_and_recency():
    c = ByteLRU(10)
    c.put("a", 1, 5)
    c.put("b", 2, 5)
    assert c.get("a") == 1                               # "a" is now the most recent
    c.put("c", 3, 5)                                     # evicts "b", not "a"
    assert c.get("b", "gone") == "gone" and c.get("a") == 1 and c.get("c") == 3
