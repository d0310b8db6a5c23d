"""ndd vs NVIDIA DALI 2.4 dynamic mode for the constant, geometry and noise ops added for API
parity (``ones`` ... ``full_like``, ``rotate``, ``warp_affine``, ``sphere``, ``noise.*``).

Deterministic ops must match exactly (values, dtype, shape, layout) unless a test says why not;
random ops are compared on what is deterministic (shape, dtype, layout, the identity cases).
"""
import numpy as np
import pytest

import ndd

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def dyn():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


def _np(x):
    """Per-sample arrays of a Batch (DALI's or ours), or the array of a Tensor."""
    if hasattr(x, "tensors") and hasattr(x, "batch_size"):
        return [np.asarray(x.tensors[i].cpu()) for i in range(x.batch_size)]
    return np.asarray(x.cpu())


def _same(ours, ref):
    a, b = _np(ours), _np(ref)
    if isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert (ours.layout or None) == (ref.layout or None)


# ---------------------------------------------------------------- constants
_CONST_CASES = [
    ("ones", {}), ("zeros", {}), ("ones", {"shape": 3}), ("zeros", {"shape": (2, 0)}),
    ("ones", {"shape": (2, 3), "dtype": "float32", "layout": "HW"}),
    ("zeros", {"shape": (4, 4, 3), "dtype": "uint8", "layout": "HWC"}),
    ("ones", {"shape": (2,), "dtype": "bool"}), ("zeros", {"shape": (2, 2), "dtype": "float16"}),
    ("ones", {"shape": (2,), "batch_size": 3}),
]


@pytest.mark.parametrize("name,kw", _CONST_CASES)
def test_ones_zeros_match_dali(dyn, name, kw):
    def call(mod):
        k = dict(kw)
        if "dtype" in k:
            k["dtype"] = getattr(mod, k["dtype"])
        return getattr(mod, name)(**k)
    _same(call(ndd), call(dyn))


_FILLS = [np.float32(2.5), np.int8(-3), np.array([1.5, -2.5, 300.0], np.float32),
          np.array([[1], [2]], np.int16), np.array([0.5, -0.5, 1.5], np.float64)]


@pytest.mark.parametrize("k", range(len(_FILLS)))
def test_full_and_full_like_match_dali(dyn, k):
    fill = _FILLS[k]
    _same(ndd.full(fill, shape=(2, 3)), dyn.full(fill, shape=(2, 3)))
    for dt in (np.uint8, np.int16, np.float32):
        like = np.zeros((2, 3), dt)
        _same(ndd.full_like(ndd.tensor(like, layout="HW"), fill),
              dyn.full_like(dyn.tensor(like, layout="HW"), fill))


def test_like_ops_match_dali(dyn):
    samples = [np.zeros((2, 3), np.int8), np.zeros((1, 4), np.int8)]
    for name in ("ones_like", "zeros_like"):
        for kw in ({}, {"dtype": "float32"}):
            k = {key: (getattr(ndd, v), getattr(dyn, v)) for key, v in kw.items()}
            ours = getattr(ndd, name)(ndd.batch(samples, layout="HW"),
                                      **{key: v[0] for key, v in k.items()})
            ref = getattr(dyn, name)(dyn.batch(samples, layout="HW"),
                                     **{key: v[1] for key, v in k.items()})
            _same(ours, ref)


def test_full_per_sample_fill_and_shape_match_dali(dyn):
    fills = [np.int8(1), np.int8(-2)]
    shapes = [np.array([1, 2]), np.array([2, 2])]
    _same(ndd.full(ndd.batch(fills), shape=ndd.batch(shapes)),
          dyn.full(dyn.batch(fills), shape=dyn.batch(shapes)))
