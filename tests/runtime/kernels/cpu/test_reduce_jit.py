"""runtime/kernels/cpu/reduce_jit.py: the compiled reduction loops equal a plain-Python
reference of the fixed summation order bit for bit, and numpy's exact reductions."""
import itertools
import math

import numpy as np
import pytest

from runtime.kernels.cpu.reduce_jit import (affine, block_size, block_sqdev, block_sum,
                                            extreme, int_sum, view3)


def _ordered_sum(values) -> float:
    """Blocks of b = ceil(sqrt(R)) elements; partial j = sum of element j of every block, in
    block order; the result = the partials added in order (Python floats are IEEE doubles)."""
    r = len(values)
    b = math.isqrt(r - 1) + 1 if r else 1
    parts = [0.0] * b
    for k, v in enumerate(values):
        parts[k % b] += float(v)
    total = 0.0
    for p in parts:
        total += p
    return total


@pytest.mark.parametrize("shape,axes", [((5, 7, 3), (0, 1)), ((5, 7, 3), (2,)),
                                        ((4, 3, 2, 5), (1, 2)), ((37,), (0,)),
                                        ((2, 17, 1), (1,)), ((3, 0, 2), (1,))])
def test_block_sum_is_the_fixed_order(shape, axes):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 8, shape)).astype(np.float32)
    x3 = view3(x, axes)
    assert x3.shape[1] == math.prod(shape[k] for k in axes)
    got = block_sum(x3)
    for a, c in itertools.product(range(x3.shape[0]), range(x3.shape[2])):
        assert got[a, c] == _ordered_sum(x3[a, :, c].tolist())
    mean = rng.standard_normal((x3.shape[0], x3.shape[2]))
    sq = block_sqdev(x3, mean)
    sq32 = block_sqdev(x3, mean.astype(np.float32), float32_diff=True)
    for a, c in itertools.product(range(x3.shape[0]), range(x3.shape[2])):
        col = x3[a, :, c]
        assert sq[a, c] == _ordered_sum(((col.astype(np.float64) - mean[a, c]) ** 2).tolist())
        d32 = (col - np.float32(mean[a, c])).astype(np.float64)
        assert sq32[a, c] == _ordered_sum((d32 * d32).tolist())


def test_view3_needs_adjacent_axes():
    x = np.zeros((2, 3, 4, 5))
    assert view3(x, [1, 2]).shape == (2, 12, 5)
    assert view3(x, [0, 2]) is None
    assert view3(x, []) is None
    assert block_size(0) == 1 and block_size(16) == 4 and block_size(17) == 5


@pytest.mark.parametrize("dt", [np.uint8, np.int8, np.uint16, np.int32, np.uint32, np.int64,
                                np.uint64])
def test_int_sum_and_extremes_match_numpy(dt):
    rng = np.random.default_rng(1)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, size=(6, 50, 3), dtype=dt, endpoint=True)
    s = int_sum(x)
    acc = np.uint64 if np.dtype(dt).kind == "u" else np.int64
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(s, x.astype(acc).sum(axis=1, dtype=acc))
    assert s.dtype == acc
    np.testing.assert_array_equal(extreme(x, True), x.max(axis=1))
    np.testing.assert_array_equal(extreme(x, False), x.min(axis=1))
    empty = np.zeros((2, 0, 3), dt)
    assert (extreme(empty, True) == info.min).all() and (extreme(empty, False) == info.max).all()


def test_extremes_propagate_nan():
    x = np.arange(12, dtype=np.float32).reshape(1, 4, 3)
    x[0, 2, 1] = np.nan
    for is_max in (True, False):
        out = extreme(x, is_max)
        ref = np.max(x, axis=1) if is_max else np.min(x, axis=1)
        np.testing.assert_array_equal(out, ref)
        assert np.isnan(out[0, 1])


def test_affine_is_float32_arithmetic():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, size=(4, 9, 3)).astype(np.uint8)
    m = rng.standard_normal((4, 3)).astype(np.float32)
    f = rng.standard_normal((4, 3)).astype(np.float32)
    out = affine(x, m, f, 0.25)
    ref = (x.astype(np.float32) - m[:, None, :]) * f[:, None, :] + np.float32(0.25)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, ref)
