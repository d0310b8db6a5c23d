"""The byte-bounded cache of ``resize_frac.bag_taps``: cached tables equal fresh ones."""
import numpy as np
import pytest
import torch

from runtime.kernels.caching import ByteLRU
from runtime.kernels.cpu import resize_frac as RF


def _fresh(*key):
    return RF.bag_taps_uncached(*key)


@pytest.mark.parametrize("key", [
    (500, 341, 0.0, 500.25, "linear", True, False),
    (375, 256, 0.0, 374.6, "linear", True, True),
    (120, 300, 3.5, 117.0, "triangular", False, True),
])
def test_cached_equals_uncached(key):
    RF.BAG_CACHE.clear()
    first = RF.bag_taps(*key)
    again = RF.bag_taps(*key)
    assert again is first                       # second call is a hit
    assert RF.BAG_CACHE.hits == 1 and RF.BAG_CACHE.misses == 1
    lo, n, bags = _fresh(*key)
    assert (first[0], first[1]) == (lo, n)
    for name in ("idx", "w", "offsets"):
        assert torch.equal(getattr(first[2], name), getattr(bags, name))
    # independent check of the bags: every tap inside [0, n), weights sum to 1 (+ bias 1)
    k1 = int(bags.offsets[1]) if bags.offsets.shape[0] > 1 else bags.idx.shape[0]
    w = bags.w.numpy().reshape(-1, k1)
    # K <= 4 float32 taps: their total rounds <= 3 times, each w / total once, this float32
    # sum <= 3 times -> <= 7 x 6e-8 = 4.2e-7; measured max 1.2e-7
    np.testing.assert_allclose(w[:, :-1].sum(1), 1.0, rtol=0, atol=5e-7)
    assert np.all(w[:, -1] == 1.0)
    idx = bags.idx.numpy().reshape(-1, k1)
    assert idx[:, :-1].min() >= 0 and idx[:, :-1].max() < n and np.all(idx[:, -1] == n)


def test_byte_budget_evicts_least_recent():
    c = ByteLRU(100)
    c.put("a", 1, 40)
    c.put("b", 2, 40)
    assert c.get("a") == 1                      # "a" now most recent
    c.put("c", 3, 40)                           # over budget: evicts "b"
    assert c.get("b") is None and c.get("a") == 1 and c.get("c") == 3
    assert c.used == 80
    c.put("c", 4, 10)                           # replacing an entry updates the byte count
    assert c.used == 50 and c.get("c") == 4


def test_resize_shorter_same_result_cold_and_warm():
    """A frac_uint8 resize gives the same pixels with an empty and a filled cache."""
    from runtime.kernels.cpu.resize import resize
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (375, 500, 3), dtype=np.uint8)
    RF.BAG_CACHE.clear()
    cold = resize(img, resize_shorter=256, subpixel_scale=True)
    warm = resize(img, resize_shorter=256, subpixel_scale=True)
    assert RF.BAG_CACHE.hits >= 1
    np.testing.assert_array_equal(cold, warm)
