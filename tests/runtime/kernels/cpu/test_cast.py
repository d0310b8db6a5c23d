"""Tests for runtime.kernels.cpu.cast."""

import numpy as np
import pytest

from runtime.kernels.cpu.cast import cast, round_half_away, to_numpy_dtype

X = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)


# ---------------------------------------------------------------- cast

F = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 300, -300, np.inf, -np.inf,
              0.49999997, -0.49999997], np.float32)


@pytest.mark.parametrize("dtype, expected", [
    ("uint8", [1, 2, 3, 4, 0, 0, 0, 255, 0, 255, 0, 0, 0]),
    ("int8", [1, 2, 3, 4, -1, -2, -3, 127, -128, 127, -128, 0, 0]),
    ("int32", [1, 2, 3, 4, -1, -2, -3, 300, -300, 2**31 - 1, -2**31, 0, 0]),
    ("uint32", [1, 2, 3, 4, 0, 0, 0, 300, 0, 2**32 - 1, 0, 0, 0]),
    ("int64", [1, 2, 3, 4, -1, -2, -3, 300, -300, 2**63 - 1, -2**63, 0, 0]),
    ("uint64", [1, 2, 3, 4, 0, 0, 0, 300, 0, 2**64 - 1, 0, 0, 0]),
    ("bool", [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0]),
])
def test_cast_float_to_int_round_half_away_and_saturate(dtype, expected):
    out = cast(F, dtype)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.array(expected, dtype=np.dtype(dtype)))


def test_cast_saturation_near_type_limits():
    # float32(2**31 - 1) == 2**31: saturates instead of wrapping
    np.testing.assert_array_equal(cast(np.array([2.1e9, 3e9, 2**31], np.float32), "int32"),
                                  [2100000000, 2**31 - 1, 2**31 - 1])
    np.testing.assert_array_equal(
        cast(np.array([2**31 - 1, 2**31, 2**31 - 100.4], np.float64), "int32"),
        [2**31 - 1, 2**31 - 1, 2**31 - 100])
    np.testing.assert_array_equal(cast(np.array([1e20, -1e20], np.float64), "uint64"),
                                  [2**64 - 1, 0])


@pytest.mark.parametrize("value, dtype, expected", [
    (300.0, "uint8", 255), (-300.0, "int8", -128), (np.inf, "int32", 2**31 - 1), (-3.5, "int8", -4),
    (np.nan, "uint16", 0)])
def test_cast_of_a_0d_sample_saturates(value, dtype, expected):
    # a 0-d sample (a scalar tensor) takes the same path as arrays (it crashed when saturating)
    out = cast(np.array(value, np.float32), dtype)
    assert out.shape == () and out.dtype == np.dtype(dtype) and int(out) == expected


def test_cast_int_to_int_saturates():
    a = np.array([-5, 300, 70000, -70000], np.int32)
    np.testing.assert_array_equal(cast(a, "uint8"), [0, 255, 255, 0])
    np.testing.assert_array_equal(cast(a, "int8"), [-5, 127, 127, -128])
    np.testing.assert_array_equal(cast(a, "uint32"), [0, 300, 70000, 0])
    np.testing.assert_array_equal(cast(np.array([2**63 + 5], np.uint64), "int64"), [2**63 - 1])
    np.testing.assert_array_equal(cast(np.array([-1, 2**40], np.int64), "uint16"), [0, 65535])
    np.testing.assert_array_equal(cast(np.array([2, 0, -1], np.int32), "bool"), [1, 0, 1])


def test_cast_float_float_and_nan():
    out = cast(np.array([3e38, 1e10, 1e300], np.float64), "float16")
    assert np.isinf(out).all()
    nan = np.array([np.nan], np.float32)
    assert cast(nan, "int32")[0] == 0 and cast(nan, "uint8")[0] == 0
    assert cast(nan, "bool")[0]
    assert np.isnan(cast(nan, "float16")[0])


def test_float16_ties_away_from_zero():
    # exact ties between float16 neighbours go away from zero (DALI), not to even
    x = np.array([2049, 2051, 2717, -6938, 4097, 4101, 1.0], np.float32)
    np.testing.assert_array_equal(cast(x, "float16"), [2050, 2052, 2718, -6940, 4096, 4100, 1])
    np.testing.assert_array_equal(cast(x.astype(np.int32), "float16"),
                                  [2050, 2052, 2718, -6940, 4096, 4100, 1])
    assert np.isinf(cast(np.array([70000.0]), "float16")[0])


def test_round_half_away_exact():
    x = np.array([0.49999997, 0.5, -0.5, 2.5, -2.5, 1e20, np.nan], np.float32)
    out = round_half_away(x)
    np.testing.assert_array_equal(out[:6], np.float32([0, 1, -1, 3, -3, 1e20]))
    assert np.isnan(out[6])


def test_dtype_names():
    assert to_numpy_dtype("FLOAT") == np.float32
    assert to_numpy_dtype("float16") == np.float16
    assert to_numpy_dtype(np.uint8) == np.uint8
    assert to_numpy_dtype(np.dtype("int16")) == np.int16
    import torch
    assert to_numpy_dtype(torch.float32) == np.float32
    with pytest.raises(TypeError, match="dtype"):
        to_numpy_dtype("complex64")
    with pytest.raises(TypeError, match="dtype"):
        cast(X, "str")


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint16", "int32", "uint32",
                                   "int64", "bool", "float16", "float32", "float64"])
@pytest.mark.parametrize("src", ["float32", "float64", "int32", "int64", "uint8", "int16"])
def test_cast_matches_dali(src, dtype):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    rng = np.random.default_rng(0)
    if src.startswith("float"):
        x = np.concatenate([rng.uniform(-1e5, 1e5, 300), rng.uniform(-300, 300, 300),
                            np.arange(-10, 10.5, 0.5), [np.inf, -np.inf, 1e30, -1e30]])
        x = x.astype(src)
    else:
        info = np.iinfo(src)
        x = np.concatenate([rng.integers(info.min, info.max, 300, dtype=src, endpoint=True),
                            np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2],
                                     dtype=src)])
    ref = np.asarray(dalidyn.cast(dalidyn.as_tensor(x), dtype=getattr(dalidyn, dtype)))
    out = cast(x, dtype)
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)


# ---------------------------------------------------------------- cast_like

def test_cast_like_takes_the_dtype_of_its_second_input():
    """Each sample of the first input gets cast's rules (round half away, saturate) to the
    second input's dtype; only that dtype is read (shapes may differ)."""
    import ndd
    values = ndd.batch([np.array([0.5, 2.5, -300.0], np.float32), np.array([-0.5], np.float32)])
    like = ndd.batch([np.zeros(7, np.int8), np.zeros(2, np.int8)])
    out = ndd.cast_like(values, like)
    assert isinstance(out, ndd.Batch) and out.dtype == ndd.int8
    np.testing.assert_array_equal(np.asarray(out.tensors[0]), np.array([1, 3, -128], np.int8))
    np.testing.assert_array_equal(np.asarray(out.tensors[1]), np.array([-1], np.int8))
    t = ndd.cast_like(ndd.as_tensor(np.array([255.5, -1.0])), ndd.as_tensor(np.uint8(0)))
    assert isinstance(t, ndd.Tensor) and np.asarray(t).tolist() == [255, 0]
    with ndd.EvalMode.deferred:         # the compiler infers the dtype from the second input
        lazy = ndd.cast_like(values * 2, like)
        assert lazy.dtype == ndd.int8
    np.testing.assert_array_equal(np.asarray(lazy.tensors[0]), np.array([1, 5, -128], np.int8))


@pytest.mark.oracle
@pytest.mark.parametrize("like", ["uint8", "int16", "float16", "bool"])
def test_cast_like_matches_dali(like):
    pytest.importorskip("nvidia.dali")
    import ndd
    import nvidia.dali.experimental.dynamic as dalidyn
    x = np.random.default_rng(1).uniform(-400, 400, 500).astype(np.float32)
    x[:6] = [0.5, 1.5, -0.5, -2.5, np.inf, -np.inf]
    other = np.zeros(3, like)
    ref = np.asarray(dalidyn.cast_like(dalidyn.as_tensor(x), dalidyn.as_tensor(other)))
    out = np.asarray(ndd.cast_like(ndd.as_tensor(x), ndd.as_tensor(other)))
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)


def test_zero_d_integer_narrowing_stays_an_array():
    """A 0-d int -> int cast that saturates is a 0-d array (numpy's clip returns a scalar),
    so later kernels (arithmetic) accept it."""
    got = cast(np.array(300, np.int32), "uint8")
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.uint8
    assert int(got) == 255
    import ndd
    x = ndd.cast(ndd.as_batch([np.array(300, np.int32), np.array(-5, np.int32)]),
                 dtype=ndd.uint8)
    y = (x * ndd.as_tensor(np.uint8(1))).evaluate()      # the arithmetic kernel takes them
    assert [int(np.asarray(t)) for t in y.tensors] == [255, 0]  # saturated both ways
