"""Tests for runtime.kernels.cpu.reductions (fixed_sum, reduce_sample) against independent
computations (math.fsum, torch), and the schemas' axis / dtype / layout rules."""
import math

import numpy as np
import pytest
import torch

from compiler.ir import ValueMeta
from compiler.ops.reductions import check_dtype, reduced_axes, reduced_meta
from runtime.kernels.cpu.reductions import fixed_sum, reduce_sample

_RNG = np.random.default_rng(5)


def test_fixed_sum_close_to_exact_and_order_fixed():
    x = _RNG.normal(0, 1e3, (37, 5, 11)).astype(np.float32)
    for axes in ([0], [1, 2], [0, 2], [0, 1, 2], []):
        got = fixed_sum(x, axes)
        kept = [k for k in range(3) if k not in axes]
        flat = np.transpose(x, axes + kept).reshape(
            (math.prod(x.shape[k] for k in axes), -1)).astype(np.float64)
        exact = np.array([math.fsum(flat[:, j]) for j in range(flat.shape[1])])
        np.testing.assert_allclose(got.ravel(), exact, rtol=1e-12, atol=1e-9)
        assert got.shape == tuple(x.shape[k] for k in kept)
    assert fixed_sum(np.zeros((0, 3)), [0]).tolist() == [0.0, 0.0, 0.0]
    # the documented order, in Python floats: blocks of ceil(sqrt(R)) rows added one after the
    # other into B partial sums, then those one after the other (1e16 + 1 rounds back to 1e16)
    vals = [1e16] + [1.0] * 99
    b = 10
    parts = [0.0] * b
    for start in range(0, len(vals), b):
        for j in range(b):
            parts[j] += vals[start + j]
    total = 0.0
    for p in parts:
        total += p
    assert total == 1e16 + 90
    assert fixed_sum(np.array(vals), [0])[()] == total


def test_reduce_sample_against_torch():
    x = _RNG.normal(2, 3, (6, 7, 3)).astype(np.float32)
    t = torch.from_numpy(x).double()
    for axes in ([0, 1], [2], [0, 1, 2]):
        dims = tuple(axes)
        ref = {"sum": t.sum(dims), "mean": t.mean(dims), "mean_square": (t * t).mean(dims),
               "rms": (t * t).mean(dims).sqrt(), "min": t.amin(dims), "max": t.amax(dims)}
        for op, r in ref.items():
            got = reduce_sample(op, x, axes, "float32")
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, r.numpy(), rtol=1e-6, atol=1e-5)
        mean = t.mean(dims, keepdim=True)
        for ddof in (0, 1):
            var = ((t - mean) ** 2).sum(dims) / (math.prod(x.shape[k] for k in axes) - ddof)
            np.testing.assert_allclose(
                reduce_sample("variance", x, axes, "float32", mean=mean.numpy(), ddof=ddof),
                var.numpy(), rtol=1e-6)
            np.testing.assert_allclose(
                reduce_sample("std_dev", x, axes, "float32", True, mean.squeeze().numpy(), ddof),
                var.sqrt().numpy().reshape(mean.shape), rtol=1e-6)


def test_integer_reductions_exact():
    x = _RNG.integers(-100, 100, (4, 5)).astype(np.int8)
    assert reduce_sample("sum", x, [0, 1], "int64") == int(x.astype(int).sum())
    np.testing.assert_array_equal(reduce_sample("min", x, [1], "int8"), x.min(1))
    assert reduce_sample("sum", np.full((2, 3), 200, np.uint8), [0, 1], "uint8") == 1200 % 256
    assert reduce_sample("mean", np.array([-1, -2], np.int8), [0], "int8") == -1  # truncated
    assert reduce_sample("mean", np.array([1, 2], np.uint8), [0], "uint8") == 1
    assert reduce_sample("max", np.zeros((0, 2), np.int16), [0], "int16").tolist() == [-32768] * 2
    assert math.isnan(reduce_sample("mean", np.zeros(0, np.float32), [0], "float32"))
    assert reduce_sample("variance", np.ones(2, np.float32), [0], "float32", mean=0.0,
                         ddof=2) == np.inf


def test_schema_rules():
    assert reduced_axes(3, "", None, None) == [0, 1, 2]
    assert reduced_axes(3, "HWC", [-1, 0], None) == [0, 2]
    assert reduced_axes(3, "HWC", None, "WH") == [0, 1]
    assert reduced_axes(2, "", [], None) == []
    with pytest.raises(IndexError, match="out of range"):
        reduced_axes(2, "", [2], None)
    with pytest.raises(ValueError, match="Duplicate"):
        reduced_axes(2, "", [0, -2], None)
    with pytest.raises(ValueError, match="not present"):
        reduced_axes(2, "HW", None, "C")
    assert check_dtype("sum", "uint8", None) == "uint64"
    assert check_dtype("sum", "int16", None) == "int64"
    assert check_dtype("mean", "int16", None) == "float32"
    assert check_dtype("max", "int16", None) == "int16"
    with pytest.raises(ValueError, match="Unsupported types"):
        check_dtype("sum", "uint8", "int16")
    m = ValueMeta("float32", 3, "HWC")
    assert reduced_meta("sum", m, {"axes": [0, 2]}).layout == "W"
    assert reduced_meta("sum", m, {"axes": [0, 2], "keep_dims": True}).layout == "HWC"
    assert reduced_meta("sum", m, {}).ndim == 0
    with pytest.raises(ValueError, match="Unsupported input type: double"):
        reduced_meta("sum", ValueMeta("float64", 1, ""), {})
