"""runtime/kernels/cpu/libm.py: every function equals the C library's own function of the same
precision (called through ctypes, one element at a time), bit for bit, in float32 and float64;
float16 is the float32 result rounded once; rsqrt is within 1.5 ulp of the exact value."""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from runtime.kernels.cpu import libm
from runtime.kernels.cpu.arithmetic import apply

_C = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


def _c_function(name: str, dtype, arity: int):
    ct = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    fn = getattr(_C, name + ("f" if dtype == np.float32 else ""))
    fn.restype, fn.argtypes = ct, [ct] * arity
    return fn


def _domain(name: str, rng, dtype, n=4000) -> np.ndarray:
    x = rng.normal(0, 6, n)
    if name in ("asin", "acos", "atanh"):
        x = np.clip(x / 8, -1, 1)
    elif name == "acosh":
        x = np.abs(x) + 1
    elif name.startswith("log"):
        x = np.abs(x) * np.exp(rng.uniform(-30, 30, n))
    x = x.astype(dtype)
    x[:6] = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0]
    return x


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a.view(np.uint8) == b.view(np.uint8)) | np.repeat(
        np.isnan(a) & np.isnan(b), a.itemsize)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(libm.UNARY))
def test_unary_is_the_c_function(name, dtype):
    x = _domain(name, np.random.default_rng(len(name)), dtype)
    ref = np.array([_c_function(name, dtype, 1)(float(v)) for v in x], dtype)
    out = libm.unary(name, x.reshape(40, 100), dtype)
    assert out.dtype == dtype and out.shape == (40, 100)
    assert _same(out.reshape(-1), ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(libm.BINARY))
def test_binary_is_the_c_function(name, dtype):
    rng = np.random.default_rng(3)
    a = rng.normal(0, 8, 3000).astype(dtype)
    b = rng.normal(0, 3, 3000).astype(dtype)
    a[::2] = np.abs(a[::2])
    fn = _c_function(name, dtype, 2)
    ref = np.array([fn(float(u), float(v)) for u, v in zip(a, b)], dtype)
    assert _same(libm.binary(name, a, b, dtype), ref)


def test_broadcast_and_conversion():
    a = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    b = np.array([0.5], np.float32)
    out = libm.binary("pow", a, b, np.float32)
    fn = _c_function("pow", np.float32, 2)
    assert out.shape == (2, 3)
    assert _same(out.reshape(-1), np.array([fn(float(v), 0.5) for v in range(1, 7)], np.float32))


def test_zero_dimensional_and_strided_inputs_keep_their_shape():
    assert libm.unary("exp", np.array(0.0, np.float32), np.float32).shape == ()
    out = libm.binary("atan2", np.array(1.0), np.array(1.0), np.float32)
    assert out.shape == () and out.dtype == np.float32
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]        # not contiguous
    np.testing.assert_array_equal(libm.unary("exp", x, np.float32),
                                  libm.unary("exp", x.copy(), np.float32))


def test_float16_is_float32_rounded_once():
    x = np.random.default_rng(1).normal(0, 4, 2000).astype(np.float16)
    out = libm.unary("exp", x, np.float16)
    fn = _c_function("exp", np.float32, 1)
    with np.errstate(over="ignore"):
        ref = np.array([fn(float(v)) for v in x], np.float32).astype(np.float16)
    assert out.dtype == np.float16 and _same(out, ref)
    assert np.isinf(out[x > 12]).all()       # beyond float16's range, as the C cast


def test_rejects_non_float_result_dtype():
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        libm.unary("exp", np.ones(3, np.float32), np.int32)


def test_rsqrt_within_one_and_a_half_ulp_of_exact():
    """1 / sqrt(x) in float32: two correctly rounded operations, so within 1.5 ulp of the exact
    value on every CPU (DALI's approximation is compared in test_arithmetic's oracle test)."""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(1e-30, 1e30, 20000),
                        2.0 ** np.arange(-126, 128)]).astype(np.float32)
    exact = 1.0 / np.sqrt(x.astype(np.float64))
    ours = apply("rsqrt", x)
    err_ulp = np.abs(ours.astype(np.float64) - exact) / np.spacing(exact.astype(np.float32))
    assert err_ulp.max() <= 1.5   # 0.5 for the division + 1 for sqrt's relative 2^-24
