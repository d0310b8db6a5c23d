"""Floating-point math through the C library's own functions, so results do not depend on the CPU.

numpy picks one of several SIMD implementations of ``exp``, ``log``, ``sin``, ``power``, ...
per CPU (baseline, AVX2, AVX-512, AVX512-FP16), each rounding its own way: the same float32
input gave outputs 1 ulp apart on AMD and Intel machines (``pow`` in 9 of 256 elements, ``exp``
in a third of all elements). The C library's functions are one implementation: glibc picks the
same variant (its FMA build) on every x86-64 CPU with FMA, i.e. every Intel CPU since Haswell and
every AMD CPU since Zen. They are also exactly what DALI's CPU operators compute:
``std::exp(float)`` is ``expf``, ``std::pow(double, double)`` is ``pow``.

So every transcendental here is a compiled loop (numba, see ``jit.py``) that calls the C
function of the element's own precision: ``expf`` for float32, ``exp`` for float64. numba's
``math`` functions lower to exactly those calls (a test compares every function with the C
library called through ctypes, bit for bit), except ``cbrt``, which numba does not provide and
which is declared here as an external C function. float16 is computed in float32 and rounded
once to float16, as DALI's ``float16`` converts to ``float`` for math functions.

This module imports numba at the top: import it only when a kernel is needed (``import ndd``
never imports numba).
"""
from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload

from .jit import compiled

__all__ = ["UNARY", "BINARY", "unary", "binary"]

#: Unary functions: our op name -> index into the compiled kernel's branches.
UNARY = {name: i for i, name in enumerate((
    "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt"))}
#: Binary functions: ``pow`` (``x ** y`` on floats) and ``atan2``.
BINARY = {"pow": 0, "atan2": 1}

_CBRTF = types.ExternalFunction("cbrtf", types.float32(types.float32))
_CBRT = types.ExternalFunction("cbrt", types.float64(types.float64))


def c_cbrt(x):
    """The C library's cbrtf/cbrt (numba has no math.cbrt); callable from compiled code only."""
    raise NotImplementedError("c_cbrt is only callable from numba-compiled code")


@overload(c_cbrt)
def _c_cbrt_typed(x):
    if x == types.float32:
        return lambda x: _CBRTF(x)
    if x == types.float64:
        return lambda x: _CBRT(x)
    return None


@compiled
def _unary_kernel(njit):
    """``kernel(code, x, out)``: ``out[i] = f(x[i])`` over 1-D contiguous arrays of one float
    dtype, ``f`` the C function ``UNARY`` numbers ``code``."""
    @njit
    def kernel(code, x, out):
        for i in range(x.size):
            v = x[i]
            if code == 0:
                r = math.exp(v)
            elif code == 1:
                r = math.log(v)
            elif code == 2:
                r = math.log2(v)
            elif code == 3:
                r = math.log10(v)
            elif code == 4:
                r = math.sin(v)
            elif code == 5:
                r = math.cos(v)
            elif code == 6:
                r = math.tan(v)
            elif code == 7:
                r = math.asin(v)
            elif code == 8:
                r = math.acos(v)
            elif code == 9:
                r = math.atan(v)
            elif code == 10:
                r = math.sinh(v)
            elif code == 11:
                r = math.cosh(v)
            elif code == 12:
                r = math.tanh(v)
            elif code == 13:
                r = math.asinh(v)
            elif code == 14:
                r = math.acosh(v)
            elif code == 15:
                r = math.atanh(v)
            else:
                r = c_cbrt(v)
            out[i] = r
    return kernel


@compiled
def _binary_kernel(njit):
    """``kernel(code, a, b, out)``: ``out[i] = f(a[i], b[i])`` (``pow`` or ``atan2``)."""
    @njit
    def kernel(code, a, b, out):
        for i in range(a.size):
            if code == 0:
                out[i] = math.pow(a[i], b[i])
            else:
                out[i] = math.atan2(a[i], b[i])
    return kernel


_NATIVE = (np.dtype(np.float32), np.dtype(np.float64))


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    if dtype in _NATIVE:
        return dtype
    if dtype == np.float16:
        return np.dtype(np.float32)
    raise TypeError(f"libm: expected a float16, float32 or float64 result dtype, got {dtype}")


def _round_to(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):   # float32 beyond float16's range becomes +-inf, as in C
        return x.astype(dtype)


def unary(name: str, x: np.ndarray, dtype) -> np.ndarray:
    """``name`` (a key of :data:`UNARY`) of every element of ``x``, computed in ``dtype``.

    Parameters
    ----------
    name : str
        ``"exp"``, ``"log"``, ..., ``"cbrt"``.
    x : numpy.ndarray
        Any shape and real dtype; converted to ``dtype`` first (as DALI converts the operand).
    dtype : numpy.dtype
        float16, float32 or float64: the result dtype. float16 is computed in float32.

    Returns
    -------
    numpy.ndarray
        A new array of ``x``'s shape and dtype ``dtype``.
    """
    dtype = np.dtype(dtype)
    work = _compute_dtype(dtype)
    src = np.asarray(x, dtype=work, order="C")   # (ascontiguousarray would make 0-d 1-d)
    out = np.empty(src.shape, work)
    _unary_kernel()(UNARY[name], src.reshape(-1), out.reshape(-1))
    return out if work == dtype else _round_to(out, dtype)


def binary(name: str, a: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """``pow(a, b)`` or ``atan2(a, b)`` elementwise (numpy broadcasting), computed in ``dtype``.

    Parameters
    ----------
    name : str
        ``"pow"`` or ``"atan2"``.
    a, b : numpy.ndarray
        Shapes that broadcast together; any real dtypes, converted to ``dtype`` first.
    dtype : numpy.dtype
        float16, float32 or float64: the result dtype. float16 is computed in float32.

    Returns
    -------
    numpy.ndarray
        A new array of the broadcast shape and dtype ``dtype``.
    """
    dtype = np.dtype(dtype)
    work = _compute_dtype(dtype)
    a, b = np.broadcast_arrays(np.asarray(a, dtype=work), np.asarray(b, dtype=work))
    a = np.asarray(a, order="C")
    b = np.asarray(b, order="C")
    out = np.empty(a.shape, work)
    _binary_kernel()(BINARY[name], a.reshape(-1), b.reshape(-1), out.reshape(-1))
    return out if work == dtype else _round_to(out, dtype)
