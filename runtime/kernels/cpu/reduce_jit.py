"""Compiled (numba) loops of the reductions and of ``normalize``, on ``(A, R, B)`` views.

A sample whose reduced axes are adjacent is viewed, without a copy, as ``(A, R, B)``: ``A`` the
product of the kept axes before them, ``R`` of the reduced axes, ``B`` of the kept axes after
them (HWC over HW: ``(1, H*W, C)``; over C: ``(H*W, C, 1)``; over all: ``(1, N, 1)``).  numpy
reduces such views slowly (a short inner axis, or a long outer one), and its float sums follow a
SIMD-dependent pairwise order; these loops read the data once, in memory order.

Float sums keep exactly the order of :func:`runtime.kernels.cpu.reductions.fixed_sum` (the
result is bit-identical): the ``R`` reduced elements of each output fall into blocks of
``b = ceil(sqrt(R))`` consecutive elements; element ``j`` of every block is added, block after
block, into partial sum ``j`` (float64), and the ``b`` partial sums are added in order.  Each
IEEE addition is exact-rounded (no fast-math, no contraction), so the results do not depend
on the CPU.  Integer sums are exact (wrapping in the 64-bit accumulator); min / max propagate
NaN as numpy's do.
"""
from __future__ import annotations

import math

import numpy as np

from .jit import compiled

__all__ = ["view3", "block_size", "block_sum", "block_sqdev", "int_sum", "extreme",
           "affine", "warm_up"]


def view3(x: np.ndarray, axes) -> np.ndarray | None:
    """``x`` as ``(A, R, B)`` with the reduced ``axes`` (sorted, non-negative) in the middle,
    or None when they are not adjacent.  A view when ``x`` is C-contiguous (else a copy)."""
    axes = list(axes)
    if not axes:
        return None
    lo, hi = axes[0], axes[-1] + 1
    if axes != list(range(lo, hi)):
        return None
    s = x.shape
    return np.ascontiguousarray(x).reshape(math.prod(s[:lo]), math.prod(s[lo:hi]),
                                           math.prod(s[hi:]))


def block_size(r: int) -> int:
    """``ceil(sqrt(r))`` (1 for ``r == 0``): the block length of the fixed summation order."""
    return math.isqrt(r - 1) + 1 if r else 1


def _build_sums(njit):
    @njit
    def sums(x, b, mean, mode):
        # mode 0: sum x; 1: sum (float64(x) - mean)^2; 2: sum float64(float32(x) - float32
        # mean)^2 (normalize's variance); mean is (A, B) float64.  The partial sums of a block
        # row are one flat run (part[j * B + c]), so the inner loops are contiguous.
        na, nr, nb = x.shape
        out = np.zeros((na, nb), np.float64)
        part = np.empty(b * nb, np.float64)
        for a in range(na):
            xa = x[a].ravel()
            part[:] = 0.0
            for k0 in range(0, nr, b):
                rows = min(b, nr - k0)
                base = k0 * nb
                if mode == 0:
                    for t in range(rows * nb):
                        part[t] += np.float64(xa[base + t])
                elif nb == 1:
                    m64 = mean[a, 0]
                    m32 = np.float32(m64)
                    for t in range(rows):
                        if mode == 1:
                            d = np.float64(xa[base + t]) - m64
                        else:
                            d = np.float64(np.float32(xa[base + t]) - m32)
                        part[t] += d * d
                else:
                    for j in range(rows):
                        for c in range(nb):
                            if mode == 1:
                                d = np.float64(xa[base + j * nb + c]) - mean[a, c]
                            else:
                                d = np.float64(np.float32(xa[base + j * nb + c])
                                               - np.float32(mean[a, c]))
                            part[j * nb + c] += d * d
            for j in range(b):
                for c in range(nb):
                    out[a, c] += part[j * nb + c]
        return out
    return sums


_sums = compiled(_build_sums)

#: rows per accumulator run of the order-free loops (integer sums, min / max)
_RUN = 64
#: reduced lengths up to which whole-array numpy passes (one per reduced row) beat the loops
_FEW_ROWS = 16


def _build_int_sum(njit):
    @njit
    def int_sum(x, out):
        # exact, so any order: _RUN rows of accumulators side by side (contiguous inner loop)
        na, nr, nb = x.shape
        acc = np.empty(_RUN * nb, out.dtype)
        for a in range(na):
            xa = x[a].ravel()
            acc[:] = 0
            for r0 in range(0, nr, _RUN):
                n = min(_RUN, nr - r0) * nb
                base = r0 * nb
                for t in range(n):
                    acc[t] += xa[base + t]
            for k in range(_RUN):
                for c in range(nb):
                    out[a, c] += acc[k * nb + c]
        return out
    return int_sum


_int_sum = compiled(_build_int_sum)


def _build_extreme(njit):
    @njit
    def extreme(x, out, is_max):
        # order-free: _RUN rows of running extremes side by side; NaN sticks (as in numpy)
        na, nr, nb = x.shape
        acc = np.empty(_RUN * nb, out.dtype)
        for a in range(na):
            xa = x[a].ravel()
            acc[:] = out[a, 0]
            for r0 in range(0, nr, _RUN):
                n = min(_RUN, nr - r0) * nb
                base = r0 * nb
                for t in range(n):
                    v = xa[base + t]
                    cur = acc[t]
                    if is_max:
                        acc[t] = v if (v > cur or v != v) else cur
                    else:
                        acc[t] = v if (v < cur or v != v) else cur
            for k in range(_RUN):
                for c in range(nb):
                    v = acc[k * nb + c]
                    cur = out[a, c]
                    if is_max:
                        out[a, c] = v if (v > cur or v != v) else cur
                    else:
                        out[a, c] = v if (v < cur or v != v) else cur
        return out
    return extreme


_extreme = compiled(_build_extreme)


def _build_affine(njit):
    @njit
    def affine(x, mean, factor, shift, out):
        # out = (float32(x) - mean) * factor + shift in float32; the (A, B) parameters are
        # tiled over _RUN rows so the inner loop is one contiguous run
        na, nr, nb = x.shape
        mrow = np.empty(_RUN * nb, np.float32)
        frow = np.empty(_RUN * nb, np.float32)
        for a in range(na):
            xa = x[a].ravel()
            oa = out[a].ravel()
            for k in range(_RUN):
                for c in range(nb):
                    mrow[k * nb + c] = mean[a, c]
                    frow[k * nb + c] = factor[a, c]
            for r0 in range(0, nr, _RUN):
                n = min(_RUN, nr - r0) * nb
                base = r0 * nb
                for t in range(n):
                    oa[base + t] = (np.float32(xa[base + t]) - mrow[t]) * frow[t] + shift
        return out
    return affine


_affine = compiled(_build_affine)

_NO_MEAN = np.zeros((1, 1), np.float64)


def block_sum(x3: np.ndarray) -> np.ndarray:
    """Sum over axis 1 of ``(A, R, B)`` in float64, in the fixed order: ``(A, B)``."""
    return _sums()(x3, block_size(x3.shape[1]), _NO_MEAN, 0)


def block_sqdev(x3: np.ndarray, mean: np.ndarray, float32_diff: bool = False) -> np.ndarray:
    """Sum over axis 1 of ``(x - mean) ** 2`` in float64, in the fixed order: ``(A, B)``.

    ``mean`` broadcasts to ``(A, B)``; the difference is taken in float64, or in float32 when
    ``float32_diff`` (``normalize``'s variance) and then squared in float64.
    """
    m = np.ascontiguousarray(np.broadcast_to(np.asarray(mean, np.float64),
                                             (x3.shape[0], x3.shape[2])))
    return _sums()(x3, block_size(x3.shape[1]), m, 2 if float32_diff else 1)


def int_sum(x3: np.ndarray) -> np.ndarray:
    """Exact integer sum over axis 1 of ``(A, R, B)``: int64 (uint64 for unsigned input),
    wrapping."""
    acc = np.uint64 if x3.dtype.kind == "u" else np.int64
    out = np.zeros((x3.shape[0], x3.shape[2]), acc)
    if x3.shape[1] <= _FEW_ROWS:
        for r in range(x3.shape[1]):
            np.add(out, x3[:, r, :], out=out, casting="unsafe")
        return out
    return _int_sum()(x3, out)


def extreme(x3: np.ndarray, is_max: bool) -> np.ndarray:
    """min / max over axis 1 of ``(A, R, B)`` (``x3``'s dtype; an empty range gives the
    type's largest / lowest finite value, NaN propagates)."""
    info = np.finfo(x3.dtype) if x3.dtype.kind == "f" else np.iinfo(x3.dtype)
    init = info.min if is_max else info.max
    out = np.full((x3.shape[0], x3.shape[2]), init, x3.dtype)
    if x3.shape[1] <= _FEW_ROWS:
        fn = np.maximum if is_max else np.minimum       # both propagate NaN
        for r in range(x3.shape[1]):
            fn(out, x3[:, r, :], out=out)
        return out
    return _extreme()(x3, out, bool(is_max))


def affine(x3: np.ndarray, mean, factor, shift) -> np.ndarray:
    """``(float32(x) - mean) * factor + shift`` in float32 of ``(A, R, B)``; ``mean`` and
    ``factor`` broadcast to ``(A, B)`` (the same float32 operations as numpy's, in one
    pass)."""
    shape = (x3.shape[0], x3.shape[2])
    m = np.ascontiguousarray(np.broadcast_to(np.asarray(mean, np.float32), shape))
    f = np.ascontiguousarray(np.broadcast_to(np.asarray(factor, np.float32), shape))
    out = np.empty(x3.shape, np.float32)
    return _affine()(x3, m, f, np.float32(shift), out)


def warm_up() -> None:
    """Compile (or load from numba's cache) the loops for float32 and uint8 input."""
    for dt in (np.float32, np.uint8):
        x = np.zeros((1, _FEW_ROWS + 1, 1), dt)
        block_sum(x)
        block_sqdev(x, 0.0)
        block_sqdev(x, 0.0, True)
        extreme(x, True)
        affine(x, 0.0, 1.0, 0.0)
    int_sum(np.zeros((1, _FEW_ROWS + 1, 1), np.uint8))
