"""runtime.kernels.caching: the byte-bounded LRU behind the resize tap caches, and cached
calls with unhashable arguments."""
import functools

import numpy as np
import pytest

from runtime.kernels.caching import ByteLRU, byte_lru_cache, call_cached


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


def test_call_cached_computes_unhashable_arguments_without_the_cache():
    calls = []

    @functools.lru_cache(maxsize=4)
    def total(values):
        calls.append(values)
        return sum(values)
    assert call_cached(total, (1, 2)) == 3 and call_cached(total, (1, 2)) == 3
    assert calls == [(1, 2)]                             # a tuple: cached
    assert call_cached(total, [1, 2]) == 3 and call_cached(total, [1, 2]) == 3
    assert calls == [(1, 2), [1, 2], [1, 2]]             # a list: computed every time
    assert total.cache_info().currsize == 1

    @functools.lru_cache(maxsize=4)
    def broken(value):
        raise TypeError("not a number")
    with pytest.raises(TypeError, match="not a number"):      # other errors pass through
        call_cached(broken, 1)
