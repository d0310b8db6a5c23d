"""The compiled 2-D correlation of ``filter`` (DALI 2.4's CPU ``filter`` is OpenCV's direct
``filter2D``).

:func:`correlate2d` correlates one plane, padded through index tables
(:func:`runtime.kernels.cpu.filters_conv.border_index`), with a float32 window: ``acc = 0``
then ``acc += w[i, j] * x[y + i, x + j]`` over the non-zero weights in row-major order (zero
weights skipped, as OpenCV does), rounded half to even into integer outputs. OpenCV's
float32 -> float32 path fuses the multiply-adds of its 8-lane blocks and its 16-bit -> 16-bit
path fuses every position: ndd computes those with LLVM's ``llvm.fma`` (a hardware FMA or the C
library's ``fmaf``: one correctly rounded result on every CPU). Several taps go through one
pass over a row without changing any element's order of operations.
"""
from __future__ import annotations

import numpy as np

from .jit import compiled, pin_identity

__all__ = ["correlate2d", "warm_up"]

_F = np.float32


def _fma_intrinsic():
    """``fma(a, b, c)`` for float32 in compiled code: LLVM's ``llvm.fma.f32`` (a hardware FMA,
    or the C library's ``fmaf`` where there is none; the same correctly rounded result)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    def fma(typingctx, a, b, c):
        sig = types.float32(types.float32, types.float32, types.float32)

        def codegen(context, builder, signature, args):
            f32 = ir.FloatType()
            fn = builder.module.declare_intrinsic("llvm.fma", [f32],
                                                  ir.FunctionType(f32, [f32, f32, f32]))
            return builder.call(fn, args)
        return sig, codegen
    return pin_identity(intrinsic(fma), fma)      # a stable cache key for its users


def _build_corr(njit):
    @njit
    def corr2d(src, chans, rows, cols, c0, c1, fill, kh, ti, tj, tw, fout, out, is_int, lo, hi,
               n_fma):
        # src (H, W * C); rows / cols: source row / pixel of each padded position (-1: fill);
        # padded pixels c0 .. c1 - 1 are source pixels cols[c0] ... in order (copied as one
        # run). fout (H', W' * C) float32 is the output, or with is_int a (1, W' * C) buffer
        # for the integer output out. The kh padded rows a window needs live in a ring of
        # float32 lines, each built once from its source row.
        n_y = rows.shape[0] - kh + 1
        flat = fout.shape[1]
        n_taps = tw.shape[0]
        n_cols = cols.shape[0]
        lines = np.empty((kh, n_cols * chans), np.float32)
        for p in range(kh - 1):
            _load(src, chans, rows[p], cols, c0, c1, fill, lines[p % kh])
        for y in range(n_y):
            _load(src, chans, rows[y + kh - 1], cols, c0, c1, fill, lines[(y + kh - 1) % kh])
            # the non-zero taps in row-major order, up to five at a time through one pass
            # over the row: the same additions, in the same order, as one tap at a time;
            # float32 outputs are summed in place
            if n_fma == 0 and 0 < n_taps <= 5:
                # one pass from 0, written straight to the output (rounded for integers)
                s0 = _seg(lines, y, ti, tj, chans, flat, 0)
                s1 = _seg(lines, y, ti, tj, chans, flat, min(1, n_taps - 1))
                s2 = _seg(lines, y, ti, tj, chans, flat, min(2, n_taps - 1))
                s3 = _seg(lines, y, ti, tj, chans, flat, min(3, n_taps - 1))
                s4 = _seg(lines, y, ti, tj, chans, flat, n_taps - 1)
                if is_int:
                    _direct_int(out[y], s0, s1, s2, s3, s4, tw, n_taps, lo, hi)
                else:
                    _direct(fout[y], s0, s1, s2, s3, s4, tw, n_taps)
                continue
            acc = fout[0] if is_int else fout[y]
            acc[:] = np.float32(0)
            t = 0
            while t < n_taps:
                g = min(5, n_taps - t)
                last = t + g - 1
                s0 = _seg(lines, y, ti, tj, chans, flat, t)
                s1 = _seg(lines, y, ti, tj, chans, flat, min(t + 1, last))
                s2 = _seg(lines, y, ti, tj, chans, flat, min(t + 2, last))
                s3 = _seg(lines, y, ti, tj, chans, flat, min(t + 3, last))
                s4 = _seg(lines, y, ti, tj, chans, flat, last)
                ws = tw[t:t + g]
                if n_fma:
                    _accum_fma(acc, s0, s1, s2, s3, s4, ws, g, n_fma)
                else:
                    _accum(acc, s0, s1, s2, s3, s4, ws, g)
                t += g
            if is_int:
                orow = out[y]
                for f in range(flat):
                    v = acc[f]
                    v = v if v == v else np.float32(0)
                    orow[f] = np.rint(min(max(v, lo), hi))

    @njit
    def _seg(lines, y, ti, tj, chans, flat, v):
        o = tj[v] * chans
        return lines[(y + ti[v]) % lines.shape[0]][o:o + flat]

    @njit
    def _sum(f, s0, s1, s2, s3, s4, ws, g):
        zero = np.float32(0)
        if g == 5:
            return ((((zero + ws[0] * s0[f]) + ws[1] * s1[f]) + ws[2] * s2[f])
                    + ws[3] * s3[f]) + ws[4] * s4[f]
        if g == 4:
            return (((zero + ws[0] * s0[f]) + ws[1] * s1[f]) + ws[2] * s2[f]) + ws[3] * s3[f]
        if g == 3:
            return ((zero + ws[0] * s0[f]) + ws[1] * s1[f]) + ws[2] * s2[f]
        if g == 2:
            return (zero + ws[0] * s0[f]) + ws[1] * s1[f]
        return zero + ws[0] * s0[f]

    @njit
    def _direct(orow, s0, s1, s2, s3, s4, ws, g):
        n = orow.shape[0]
        if g == 5:
            for f in range(n):
                orow[f] = _sum(f, s0, s1, s2, s3, s4, ws, 5)
        elif g == 4:
            for f in range(n):
                orow[f] = _sum(f, s0, s1, s2, s3, s4, ws, 4)
        elif g == 3:
            for f in range(n):
                orow[f] = _sum(f, s0, s1, s2, s3, s4, ws, 3)
        elif g == 2:
            for f in range(n):
                orow[f] = _sum(f, s0, s1, s2, s3, s4, ws, 2)
        else:
            for f in range(n):
                orow[f] = _sum(f, s0, s1, s2, s3, s4, ws, 1)

    @njit
    def _round(v, lo, hi):
        v = v if v == v else np.float32(0)
        return np.rint(min(max(v, lo), hi))

    @njit
    def _direct_int(orow, s0, s1, s2, s3, s4, ws, g, lo, hi):
        n = orow.shape[0]
        if g == 5:
            for f in range(n):
                orow[f] = _round(_sum(f, s0, s1, s2, s3, s4, ws, 5), lo, hi)
        elif g == 4:
            for f in range(n):
                orow[f] = _round(_sum(f, s0, s1, s2, s3, s4, ws, 4), lo, hi)
        elif g == 3:
            for f in range(n):
                orow[f] = _round(_sum(f, s0, s1, s2, s3, s4, ws, 3), lo, hi)
        elif g == 2:
            for f in range(n):
                orow[f] = _round(_sum(f, s0, s1, s2, s3, s4, ws, 2), lo, hi)
        else:
            for f in range(n):
                orow[f] = _round(_sum(f, s0, s1, s2, s3, s4, ws, 1), lo, hi)

    @njit
    def _accum(acc, s0, s1, s2, s3, s4, ws, g):
        # acc[f] += ws[0] * s0[f], then += ws[1] * s1[f] ... (g taps), in float32
        n = acc.shape[0]
        w0 = ws[0]
        if g == 5:
            w1, w2, w3, w4 = ws[1], ws[2], ws[3], ws[4]
            for f in range(n):
                acc[f] = ((((acc[f] + w0 * s0[f]) + w1 * s1[f]) + w2 * s2[f]) + w3 * s3[f]) \
                    + w4 * s4[f]
        elif g == 4:
            w1, w2, w3 = ws[1], ws[2], ws[3]
            for f in range(n):
                acc[f] = (((acc[f] + w0 * s0[f]) + w1 * s1[f]) + w2 * s2[f]) + w3 * s3[f]
        elif g == 3:
            w1, w2 = ws[1], ws[2]
            for f in range(n):
                acc[f] = ((acc[f] + w0 * s0[f]) + w1 * s1[f]) + w2 * s2[f]
        elif g == 2:
            w1 = ws[1]
            for f in range(n):
                acc[f] = (acc[f] + w0 * s0[f]) + w1 * s1[f]
        else:
            for f in range(n):
                acc[f] = acc[f] + w0 * s0[f]

    fma = _fma_intrinsic()

    @njit
    def _accum_fma(acc, s0, s1, s2, s3, s4, ws, g, n_fma):
        # as _accum, the first n_fma positions as fused multiply-adds (LLVM's llvm.fma: one
        # rounding of the exact product plus acc, on every CPU)
        w0 = ws[0]
        if g == 5:
            w1, w2, w3, w4 = ws[1], ws[2], ws[3], ws[4]
            for f in range(n_fma):
                acc[f] = fma(w4, s4[f], fma(w3, s3[f], fma(w2, s2[f], fma(w1, s1[f],
                                                                          fma(w0, s0[f],
                                                                              acc[f])))))
        elif g == 4:
            w1, w2, w3 = ws[1], ws[2], ws[3]
            for f in range(n_fma):
                acc[f] = fma(w3, s3[f], fma(w2, s2[f], fma(w1, s1[f], fma(w0, s0[f], acc[f]))))
        elif g == 3:
            w1, w2 = ws[1], ws[2]
            for f in range(n_fma):
                acc[f] = fma(w2, s2[f], fma(w1, s1[f], fma(w0, s0[f], acc[f])))
        elif g == 2:
            w1 = ws[1]
            for f in range(n_fma):
                acc[f] = fma(w1, s1[f], fma(w0, s0[f], acc[f]))
        else:
            for f in range(n_fma):
                acc[f] = fma(w0, s0[f], acc[f])
        _accum(acc[n_fma:], s0[n_fma:], s1[n_fma:], s2[n_fma:], s3[n_fma:], s4[n_fma:], ws, g)

    @njit
    def _load(src, chans, row, cols, c0, c1, fill, line):
        if row < 0:
            line[:] = fill
            return
        srow = src[row]
        if c1 > c0:
            run = line[c0 * chans:c1 * chans]
            first = cols[c0] * chans
            part = srow[first:first + (c1 - c0) * chans]
            for f in range(run.shape[0]):
                run[f] = np.float32(part[f])
        for p in range(c0):
            _pixel(srow, chans, cols[p], fill, line, p)
        for p in range(c1, cols.shape[0]):
            _pixel(srow, chans, cols[p], fill, line, p)

    @njit
    def _pixel(srow, chans, q, fill, line, p):
        if q < 0:
            for c in range(chans):
                line[p * chans + c] = fill
        else:
            for c in range(chans):
                line[p * chans + c] = np.float32(srow[q * chans + c])
    return corr2d


_corr = compiled(_build_corr)


def correlate2d(src: np.ndarray, w: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                out_dtype, fill=0.0, first: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """Correlate one ``(H, W[, C])`` plane with the float32 ``(KH, KW)`` window.

    ``rows`` / ``cols`` give the source row / column of each padded position (``-1``: the
    ``fill`` constant): ``H' + KH - 1`` and ``W' + KW - 1`` entries for an ``(H', W')`` output;
    ``cols[first + t] == t`` for every pixel ``t`` of the row (the run copied at once).
    Integer outputs are rounded half to even and saturated, NaN -> 0.
    Returns the ``(H', W'[, C])`` result as ``out_dtype``, written into ``out`` when given
    (C-contiguous, that shape and dtype).
    """
    chans = src.shape[2] if src.ndim == 3 else 1
    kh, kw = w.shape
    oh, ow = len(rows) - kh + 1, len(cols) - kw + 1
    dt = np.dtype(out_dtype)
    is_int = dt.kind in "iu"
    out = np.empty((oh, ow * chans), dt) if out is None else out.reshape(oh, ow * chans)
    fout = np.empty((1, ow * chans), _F) if is_int else out
    iout = out if is_int else np.empty((1, 1), np.uint8)
    if is_int and dt.itemsize > 2:
        raise ValueError(f"correlate2d: integer outputs up to 16 bits, got {dt}")
    lo, hi = (_F(np.iinfo(dt).min), _F(np.iinfo(dt).max)) if is_int else (_F(0), _F(0))
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    c0, c1 = first, first + src.shape[1]
    w = np.asarray(w, dtype=_F)
    ti, tj = np.nonzero(w)                  # row-major; OpenCV skips zero weights too
    # OpenCV's float32 -> float32 path sums 8 lanes at a time with fused multiply-adds (AVX2
    # with FMA, as on the machine DALI 2.4 was measured on) and the row's tail one by one; its
    # 16-bit -> 16-bit path fuses every position; uint8, and integers -> float32: plain sums
    if src.dtype == _F and dt == _F:
        n_fma = (ow * chans) // 8 * 8
    elif src.dtype.itemsize == 2 and dt == src.dtype:
        n_fma = ow * chans
    else:
        n_fma = 0
    tw = np.ascontiguousarray(w[ti, tj])
    if oh > 0 and ow > 0:
        _corr()(np.ascontiguousarray(src).reshape(src.shape[0], -1), chans,
                np.ascontiguousarray(rows, dtype=np.int64), cols, c0, c1, _F(fill), kh,
                ti.astype(np.int64), tj.astype(np.int64), tw, fout, iout, is_int, lo, hi, n_fma)
    return out.reshape((oh, ow, chans) if src.ndim == 3 else (oh, ow))


def warm_up() -> None:
    """Compile (or load) the correlation for uint8 and float32 planes."""
    idx = np.arange(-1, 6)
    for dt in (np.uint8, np.float32):
        correlate2d(np.zeros((5, 5, 3), dt), np.ones((3, 3), _F), idx, idx, dt)
