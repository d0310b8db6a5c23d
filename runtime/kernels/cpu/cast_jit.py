"""float32 / float64 -> integer conversion of ``cast`` as one compiled pass (:mod:`.jit`).

The numpy version of :func:`runtime.kernels.cpu.cast.cast` (round half away from zero, NaN ->
0, saturate) is eight passes over the sample with temporaries of its size; these loops do it in
one, writing into a given array. Same integers for every input (the rounding uses the exact
fraction ``v - trunc(v)`` after saturating, which is the round-then-saturate of the numpy
version: a value above the largest integer of the type stays above it after rounding):

* float32 source, target of up to 16 bits: float32 / int32 arithmetic (bounds exact in
  float32), which the compiler vectorises;
* every other case (float64 source, 32-bit targets): float64 / int64 arithmetic, exact for a
  float32 widened to float64 and for the 32-bit bounds.

64-bit integer targets are not handled here (their bounds are not exact in float64).
"""
from __future__ import annotations

import numpy as np

from .jit import compiled

__all__ = ["handles", "float_to_int_into", "warm_up"]

_TARGETS = {np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "uint32", "int32")}
_SOURCES = {np.dtype(np.float32), np.dtype(np.float64)}


def handles(src, dst) -> bool:
    """Whether :func:`float_to_int_into` converts ``src`` -> ``dst`` (dtypes)."""
    return np.dtype(src) in _SOURCES and np.dtype(dst) in _TARGETS


@compiled
def _kernels(njit):
    """The compiled loops (one build)."""
    half32, zero32 = np.float32(0.5), np.float32(0.0)

    @njit
    def narrow32(src, lo, hi, out):
        # float32 -> an integer type of <= 16 bits, in float32 / int32
        for k in range(src.size):
            v = src[k]
            v = v if v == v else zero32
            v = v if v > lo else lo
            v = v if v < hi else hi
            t = np.int32(v)
            f = v - np.float32(t)
            out[k] = t + np.int32(f >= half32) - np.int32(f <= -half32)

    @njit
    def wide64(src, lo, hi, out):
        # float32 / float64 -> an integer type of <= 32 bits, in float64 / int64
        for k in range(src.size):
            d = np.float64(src[k])
            d = d if d == d else 0.0
            d = d if d > lo else lo
            d = d if d < hi else hi
            t = np.int64(d)
            f = d - np.float64(t)
            out[k] = t + np.int64(f >= 0.5) - np.int64(f <= -0.5)

    return {"narrow32": narrow32, "wide64": wide64}


def float_to_int_into(x: np.ndarray, out: np.ndarray) -> None:
    """``cast(x, out.dtype)`` written into ``out`` (the shape of ``x``; C-contiguous), for
    the dtype pairs of :func:`handles`."""
    src = np.ascontiguousarray(x).reshape(-1)
    dst = out.reshape(-1)
    if dst.size == 0:
        return
    info = np.iinfo(out.dtype)
    k = _kernels()
    if src.dtype == np.float32 and out.dtype.itemsize <= 2:
        k["narrow32"](src, np.float32(info.min), np.float32(info.max), dst)
    else:
        k["wide64"](src, float(info.min), float(info.max), dst)


def warm_up() -> None:
    """Build (or load) the compiled loops."""
    for s in (np.float32, np.float64):
        for d in ("uint8", "int32"):
            float_to_int_into(np.zeros(4, s), np.empty(4, d))
