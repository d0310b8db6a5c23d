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
        # row are one flat run (part[j * B + c]); the loops run over slices (no index
        # arithmetic in the inner loop, so LLVM vectorises them)
        na, nr, nb = x.shape
        out = np.zeros((na, nb), np.float64)
        part = np.empty(b * nb, np.float64)
        m64 = np.empty(b * nb, np.float64)
        m32 = np.empty(b * nb, np.float32)
        for a in range(na):
            xa = x[a].ravel()
            part[:] = 0.0
            for k in range(b):
                for c in range(nb):
                    m64[k * nb + c] = mean[a % mean.shape[0], c % mean.shape[1]]
                    m32[k * nb + c] = np.float32(m64[k * nb + c])
            for k0 in range(0, nr, b):
                n = min(b, nr - k0) * nb
                seg = xa[k0 * nb:k0 * nb + n]
                p = part[:n]
                if mode == 0:
                    for t in range(n):
                        p[t] += np.float64(seg[t])
                elif mode == 1:
                    mm = m64[:n]
                    for t in range(n):
                        d = np.float64(seg[t]) - mm[t]
                        p[t] += d * d
                else:
                    mm32 = m32[:n]
                    for t in range(n):
                        d = np.float64(np.float32(seg[t]) - mm32[t])
                        p[t] += d * d
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
                seg = xa[r0 * nb:r0 * nb + n]
                p = acc[:n]
                for t in range(n):
                    p[t] += seg[t]
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
                seg = xa[r0 * nb:r0 * nb + n]
                p = acc[:n]
                if is_max:
                    for t in range(n):
                        v = seg[t]
                        cur = p[t]
                        p[t] = v if (v > cur or v != v) else cur
                else:
                    for t in range(n):
                        v = seg[t]
                        cur = p[t]
                        p[t] = v if (v < cur or v != v) else cur
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
        # tiled over _RUN rows so the inner loop runs over one contiguous slice
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
                seg = xa[r0 * nb:r0 * nb + n]
                dst = oa[r0 * nb:r0 * nb + n]
                mm = mrow[:n]
                ff = frow[:n]
                for t in range(n):
                    dst[t] = (np.float32(seg[t]) - mm[t]) * ff[t] + shift
        return out
    return affine


_affine = compiled(_build_affine)


def _build_affine_scalar(njit):
    @njit
    def affine_scalar(x, mean, factor, shift, out):
        # one mean and factor for the whole sample: a single flat loop
        xa = x.ravel()
        oa = out.ravel()
        for t in range(xa.size):
            oa[t] = (np.float32(xa[t]) - mean) * factor + shift
        return out
    return affine_scalar


_affine_scalar = compiled(_build_affine_scalar)

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


def affine(x3: np.ndarray, mean, factor, shift, out=None) -> np.ndarray:
    """``(float32(x) - mean) * factor + shift`` in float32 of ``(A, R, B)``; ``mean`` and
    ``factor`` broadcast to ``(A, B)`` (the same float32 operations as numpy's, in one pass),
    into ``out`` (float32, C-contiguous, ``x3``'s size) or a new array."""
    out = np.empty(x3.shape, np.float32) if out is None else out.reshape(x3.shape)
    m, f = np.asarray(mean, np.float32), np.asarray(factor, np.float32)
    if m.size == 1 and f.size == 1:
        return _affine_scalar()(x3, np.float32(m.reshape(())), np.float32(f.reshape(())),
                                np.float32(shift), out)
    shape = (x3.shape[0], x3.shape[2])
    m = np.ascontiguousarray(np.broadcast_to(m, shape))
    f = np.ascontiguousarray(np.broadcast_to(f, shape))
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
