"""The compiled loops of ``experimental.warp_perspective`` (see
:mod:`runtime.kernels.cpu.warp_perspective` for the semantics): OpenCV's classic warp with
source points rounded to 1/32 pixel and its interpolation tables (:func:`interp_tables`), and
its newer float32-point linear / cubic sampling."""
from __future__ import annotations

import numpy as np

from .jit import compiled

__all__ = ["block_width", "helpers", "interp_tables", "kernels"]


def block_width(out_h: int, out_w: int) -> int:
    """Width of the blocks in which OpenCV walks the output (32 x 32 pixels at most, 16 rows
    high): the source point of a pixel is computed from its block's first column."""
    bh = min(16, out_h)
    bw = min(1024 // max(bh, 1), out_w)
    bh = min(1024 // max(bw, 1), out_h)
    return max(bw, 1)


def _cubic_1d(x):
    a = np.float32(-0.75)
    one = np.float32(1)
    x = np.float32(x)
    c0 = ((a * (x + one) - np.float32(5) * a) * (x + one) + np.float32(8) * a) * (x + one) \
        - np.float32(4) * a
    c1 = ((a + np.float32(2)) * x - (a + np.float32(3))) * x * x + one
    c2 = ((a + np.float32(2)) * (one - x) - (a + np.float32(3))) * (one - x) * (one - x) + one
    c3 = one - c0 - c1 - c2
    return [np.float32(c0), np.float32(c1), np.float32(c2), np.float32(c3)]


def _tables(k):
    scale = np.float32(1.0 / 32)
    one_d = []
    for i in range(32):
        x = np.float32(i) * scale
        one_d.append([np.float32(1) - x, x] if k == 2 else _cubic_1d(x))
    ftab = np.zeros((1024, k * k), np.float32)
    itab = np.zeros((1024, k * k), np.int32)
    for i in range(32):
        for j in range(32):
            f = np.array([np.float32(one_d[i][k1] * one_d[j][k2])
                          for k1 in range(k) for k2 in range(k)], np.float32)
            iv = np.rint(f.astype(np.float64) * 32768).astype(np.int32)   # cvRound
            diff = int(iv.sum()) - 32768
            if diff:
                c = k // 2
                lo = hi = (c, c)
                for k1 in range(c, c + 2):
                    for k2 in range(c, c + 2):
                        if iv[k1 * k + k2] < iv[lo[0] * k + lo[1]]:
                            lo = (k1, k2)
                        elif iv[k1 * k + k2] > iv[hi[0] * k + hi[1]]:
                            hi = (k1, k2)
                at = hi if diff < 0 else lo
                iv[at[0] * k + at[1]] -= diff
            ftab[i * 32 + j] = f
            itab[i * 32 + j] = iv
    return ftab, itab


_TABLES = {}


def interp_tables(interp: str):
    """``(float32 weights, int32 weights x 32768)``, each ``(1024, taps)``: the 2-D weights of
    the 32 x 32 sub-pixel positions (row ``32 * fy + fx``) of ``linear`` (4 taps) or ``cubic``
    (16 taps), as OpenCV's remap tables."""
    if interp not in _TABLES:
        _TABLES[interp] = _tables(2 if interp == "linear" else 4)
    return _TABLES[interp]


def _build_helpers(njit):
    @njit
    def int32(v):
        """``v`` (an int64) wrapped to a 32-bit two's-complement int, as C's ``int`` arithmetic
        wraps on x86-64"""
        return ((v + 2147483648) & 4294967295) - 2147483648

    @njit
    def to_int32(v):
        """x86-64's float -> int32 conversion of an integral value: NaN and values outside
        the int32 range give INT_MIN (the "integer indefinite")"""
        if v >= -2147483648.0 and v < 2147483648.0:
            return np.int64(v)
        return np.int64(-2147483648)

    @njit
    def round_int(v):
        """OpenCV's ``cvRound`` on x86-64: round half to even, INT_MIN for NaN and values
        outside the int32 range"""
        return to_int32(np.rint(v))

    @njit
    def floor_int(v):
        """the floor of a float32 as OpenCV's vector loops (AVX2: ``floor`` then the x86
        conversion) give it: INT_MIN for NaN and values outside int32, -inf included
        (measured)"""
        return to_int32(np.floor(v)) if v == v else np.int64(-2147483648)

    @njit
    def border_index(p, n, mode):
        """OpenCV's ``borderInterpolate`` of an int32 index ``p`` (``-1``: outside, for
        ``constant``), in closed form: ``replicate`` clamps; ``wrap`` is OpenCV's formula in
        wrapping int32 arithmetic; ``reflect`` / ``reflect_101`` fold ``p`` with the period
        ``2 n`` / ``2 n - 2`` (what OpenCV's loop of reflections reaches, one period at a
        time; for ``reflect_101`` of INT_MIN that loop never ends)."""
        if 0 <= p < n:
            return p
        if mode == 0:
            return -1
        if mode == 1:
            return 0 if p < 0 else n - 1
        if mode == 4:
            if p < 0:       # C's truncating division, int32 wrap-around
                t = int32(p - n + 1)
                q = -((-t) // n) if t < 0 else t // n
                p = int32(p - int32(q * n))
            if p >= n:
                p = p % n
            if p < 0:       # (OpenCV reads outside the image here; never ndd)
                p = p % n
            return p
        if n == 1:
            return 0
        period = 2 * n - (2 if mode == 3 else 0)
        q = p % period      # (Python's modulo: 0 <= q < period)
        if q < n:
            return q
        return period - q - (0 if mode == 3 else 1)

    @njit
    def store(out, oy, ox, c, v, is_int, lo, hi):
        """``saturate_cast`` of a float32 ``v``: integer types through ``cvRound`` (NaN and
        values outside int32 give INT_MIN, so the type's minimum), float32 as it is"""
        if is_int:
            r = np.float64(round_int(v))
            if r < lo:
                r = lo
            elif r > hi:
                r = hi
            out[oy, ox, c] = r
        else:
            out[oy, ox, c] = v

    @njit
    def float_point(m32, x, y):
        """the float32 source point of output pixel ``(x, y)`` (a zero ``w``: infinite or NaN
        coordinates, as the float32 division gives them)"""
        w = np.float32(x) * m32[6] + np.float32(y) * m32[7] + m32[8]
        sx = np.divide(np.float32(x) * m32[0] + np.float32(y) * m32[1] + m32[2], w)
        sy = np.divide(np.float32(x) * m32[3] + np.float32(y) * m32[4] + m32[5], w)
        return sx, sy

    @njit
    def floor_index(v):
        """the integer part of a float32 source coordinate (:func:`floor_int`)"""
        return floor_int(v)

    @njit
    def tap(src, yy, xx, c, h, w, mode, cf):
        """tap ``(yy, xx)`` (int32 sums: ``INT_MAX + 1`` wraps to INT_MIN, as in C)"""
        if 0 <= xx < w and 0 <= yy < h:
            return np.float32(src[yy, xx, c])
        if mode == 0:
            return cf
        return np.float32(src[border_index(int32(yy), h, mode),
                              border_index(int32(xx), w, mode), c])

    return border_index, store, float_point, floor_index, tap, round_int, int32


#: getter of ``(border_index, store, float_point, floor_index, tap, round_int, int32)``, the
#: per-pixel helpers
#: shared by these warps and the row-wise ones (runtime/kernels/cpu/warp_perspective_rows.py)
helpers = compiled(_build_helpers)


def _build(njit):
    border_index, store, float_point, floor_index, tap, round_int, int32 = helpers()

    @njit
    def cubic_bounds(h, w):
        """the range OpenCV (as bundled with DALI 2.4) clamps float32 cubic source points to,
        per axis: ``[-L, 2 L]`` with ``L = max(n, 16)`` (measured: far-off, infinite and
        NaN points, NaN to the low end, sample the pixel at the bound)"""
        lx, ly = max(w, 16), max(h, 16)
        return (np.float32(-lx), np.float32(2 * lx), np.float32(-ly), np.float32(2 * ly))

    @njit
    def cubic_clamp(v, lo, hi):
        if not v >= lo:     # (NaN too)
            return lo
        return hi if v > hi else v

    @njit
    def warp_float(src, m32, out, interp, mode, cval, is_int, lo, hi):
        """linear / cubic from float32 source points (OpenCV's newer warp kernels)"""
        h, w, cn = src.shape
        oh, ow = out.shape[0], out.shape[1]
        a = np.float32(-0.75)
        one = np.float32(1)
        wx = np.empty(4, np.float32)
        wy = np.empty(4, np.float32)
        xlo, xhi, ylo, yhi = cubic_bounds(h, w)
        for y in range(oh):
            for x in range(ow):
                sx, sy = float_point(m32, x, y)
                if interp == 2:
                    sx, sy = cubic_clamp(sx, xlo, xhi), cubic_clamp(sy, ylo, yhi)
                ix, iy = floor_index(sx), floor_index(sy)
                fx = sx - np.float32(ix)
                fy = sy - np.float32(iy)
                if interp == 1:
                    if 0 <= ix < w - 1 and 0 <= iy < h - 1:     # all four taps inside
                        for c in range(cn):
                            p00 = np.float32(src[iy, ix, c])
                            p01 = np.float32(src[iy, ix + 1, c])
                            p10 = np.float32(src[iy + 1, ix, c])
                            p11 = np.float32(src[iy + 1, ix + 1, c])
                            v0 = p00 + fx * (p01 - p00)
                            v1 = p10 + fx * (p11 - p10)
                            store(out, y, x, c, v0 + fy * (v1 - v0), is_int, lo, hi)
                        continue
                    if mode == 0 and (ix < -1 or ix >= w or iy < -1 or iy >= h) \
                            and np.isfinite(fx) and np.isfinite(fy):
                        for c in range(cn):     # (infinite / NaN fractions: the taps' sum)
                            out[y, x, c] = cval[c]
                        continue
                    for c in range(cn):
                        cf = np.float32(cval[c])
                        p00 = tap(src, iy, ix, c, h, w, mode, cf)
                        p01 = tap(src, iy, ix + 1, c, h, w, mode, cf)
                        p10 = tap(src, iy + 1, ix, c, h, w, mode, cf)
                        p11 = tap(src, iy + 1, ix + 1, c, h, w, mode, cf)
                        v0 = p00 + fx * (p01 - p00)
                        v1 = p10 + fx * (p11 - p10)
                        v0 = v0 + fy * (v1 - v0)
                        store(out, y, x, c, v0, is_int, lo, hi)
                    continue
                if mode == 0 and (ix + 2 < 0 or ix - 1 >= w or iy + 2 < 0 or iy - 1 >= h):
                    for c in range(cn):
                        out[y, x, c] = cval[c]
                    continue
                for k in range(2):
                    t = fx if k == 0 else fy
                    c0 = ((a * (t + one) - np.float32(5) * a) * (t + one) + np.float32(8) * a) \
                        * (t + one) - np.float32(4) * a
                    c1 = ((a + np.float32(2)) * t - (a + np.float32(3))) * t * t + one
                    c2 = ((a + np.float32(2)) * (one - t) - (a + np.float32(3))) * (one - t) \
                        * (one - t) + one
                    c3 = one - c0 - c1 - c2
                    ws = wx if k == 0 else wy
                    ws[0], ws[1], ws[2], ws[3] = c0, c1, c2, c3
                inside = 1 <= ix < w - 2 and 1 <= iy < h - 2
                for c in range(cn):
                    cf = np.float32(cval[c])
                    v = np.float32(0)
                    for r in range(4):
                        row = np.float32(0)
                        for q in range(4):
                            if inside:
                                t = np.float32(src[iy - 1 + r, ix - 1 + q, c])
                            else:
                                t = tap(src, iy - 1 + r, ix - 1 + q, c, h, w, mode, cf)
                            row += t * wx[q]
                        v += row * wy[r]
                    store(out, y, x, c, v, is_int, lo, hi)
        return out

    @njit
    def warp_nn(src, m, out, mode, fill, bw, m32, new_points):
        """nearest: OpenCV's classic double source points, rounded half to even, per block of
        ``bw`` columns (the block start computed once), or (``new_points``) its newer float32
        points (``float_point``) rounded to int32."""
        h, w, cn = src.shape
        oh, ow = out.shape[0], out.shape[1]
        for y in range(oh):
            for x0 in range(0, ow, bw):
                X0 = m[0] * x0 + m[1] * y + m[2]
                Y0 = m[3] * x0 + m[4] * y + m[5]
                W0 = m[6] * x0 + m[7] * y + m[8]
                for x1 in range(min(bw, ow - x0)):
                    x = x0 + x1
                    if new_points:
                        fx, fy = float_point(m32, x, y)
                        sx, sy = round_int(fx), round_int(fy)
                    else:
                        W = W0 + m[6] * x1
                        W = 1.0 / W if W != 0 else 0.0
                        fx = max(-2147483648.0, min(2147483647.0, (X0 + m[0] * x1) * W))
                        fy = max(-2147483648.0, min(2147483647.0, (Y0 + m[3] * x1) * W))
                        sx = max(-32768, min(32767, np.int64(np.rint(fx))))
                        sy = max(-32768, min(32767, np.int64(np.rint(fy))))
                    if 0 <= sx < w and 0 <= sy < h:
                        for c in range(cn):
                            out[y, x, c] = src[sy, sx, c]
                    elif mode == 0:
                        for c in range(cn):
                            out[y, x, c] = fill[c]
                    else:
                        bx = border_index(sx, w, mode)
                        by = border_index(sy, h, mode)
                        for c in range(cn):
                            out[y, x, c] = src[by, bx, c]
        return out

    @njit
    def warp(src, m, out, interp, mode, cval, ftab, itab, fixed, is_int, lo, hi, bw):
        h, w, cn = src.shape
        oh, ow = out.shape[0], out.shape[1]
        tab = 32.0 if interp != 0 else 1.0
        ivals = np.empty(cn, np.int64)
        for c in range(cn):
            ivals[c] = np.int64(cval[c])
        for y in range(oh):
            for x in range(ow):
                x0 = (x // bw) * bw
                x1 = x - x0
                X0 = m[0] * x0 + m[1] * y + m[2]
                Y0 = m[3] * x0 + m[4] * y + m[5]
                W0 = m[6] * x0 + m[7] * y + m[8]
                W = W0 + m[6] * x1
                W = tab / W if W != 0 else 0.0
                fx = max(-2147483648.0, min(2147483647.0, (X0 + m[0] * x1) * W))
                fy = max(-2147483648.0, min(2147483647.0, (Y0 + m[3] * x1) * W))
                X = np.int64(np.rint(fx))
                Y = np.int64(np.rint(fy))
                if interp == 0:
                    sx = max(-32768, min(32767, X))
                    sy = max(-32768, min(32767, Y))
                    if 0 <= sx < w and 0 <= sy < h:
                        for c in range(cn):
                            out[y, x, c] = src[sy, sx, c]
                    elif mode == 0:
                        for c in range(cn):
                            out[y, x, c] = ivals[c] if fixed or is_int else cval[c]
                    else:
                        bx = border_index(sx, w, mode)
                        by = border_index(sy, h, mode)
                        for c in range(cn):
                            out[y, x, c] = src[by, bx, c]
                    continue
                sx = max(-32768, min(32767, X >> 5))
                sy = max(-32768, min(32767, Y >> 5))
                a = (Y & 31) * 32 + (X & 31)
                if interp == 1:
                    if 0 <= sx < w - 1 and 0 <= sy < h - 1:
                        for c in range(cn):
                            if fixed:
                                s = (np.int64(src[sy, sx, c]) * itab[a, 0]
                                     + np.int64(src[sy, sx + 1, c]) * itab[a, 1]
                                     + np.int64(src[sy + 1, sx, c]) * itab[a, 2]
                                     + np.int64(src[sy + 1, sx + 1, c]) * itab[a, 3])
                                out[y, x, c] = min(255, max(0, (s + 16384) >> 15))
                            else:
                                v = (np.float32(src[sy, sx, c]) * ftab[a, 0]
                                     + np.float32(src[sy, sx + 1, c]) * ftab[a, 1]
                                     + np.float32(src[sy + 1, sx, c]) * ftab[a, 2]
                                     + np.float32(src[sy + 1, sx + 1, c]) * ftab[a, 3])
                                store(out, y, x, c, v, is_int, lo, hi)
                        continue
                    if mode == 0 and (sx >= w or sx + 1 < 0 or sy >= h or sy + 1 < 0):
                        for c in range(cn):
                            out[y, x, c] = ivals[c] if fixed or is_int else cval[c]
                        continue
                    if mode == 1:
                        xa, xb = min(max(sx, 0), w - 1), min(max(sx + 1, 0), w - 1)
                        ya, yb = min(max(sy, 0), h - 1), min(max(sy + 1, 0), h - 1)
                    else:
                        xa, xb = border_index(sx, w, mode), border_index(sx + 1, w, mode)
                        ya, yb = border_index(sy, h, mode), border_index(sy + 1, h, mode)
                    for c in range(cn):
                        if fixed:
                            cv = ivals[c]
                            v0 = np.int64(src[ya, xa, c]) if xa >= 0 and ya >= 0 else cv
                            v1 = np.int64(src[ya, xb, c]) if xb >= 0 and ya >= 0 else cv
                            v2 = np.int64(src[yb, xa, c]) if xa >= 0 and yb >= 0 else cv
                            v3 = np.int64(src[yb, xb, c]) if xb >= 0 and yb >= 0 else cv
                            s = v0 * itab[a, 0] + v1 * itab[a, 1] + v2 * itab[a, 2] \
                                + v3 * itab[a, 3]
                            out[y, x, c] = min(255, max(0, (s + 16384) >> 15))
                        else:
                            cf = np.float32(ivals[c]) if is_int else np.float32(cval[c])
                            f0 = np.float32(src[ya, xa, c]) if xa >= 0 and ya >= 0 else cf
                            f1 = np.float32(src[ya, xb, c]) if xb >= 0 and ya >= 0 else cf
                            f2 = np.float32(src[yb, xa, c]) if xa >= 0 and yb >= 0 else cf
                            f3 = np.float32(src[yb, xb, c]) if xb >= 0 and yb >= 0 else cf
                            v = f0 * ftab[a, 0] + f1 * ftab[a, 1] + f2 * ftab[a, 2] \
                                + f3 * ftab[a, 3]
                            store(out, y, x, c, v, is_int, lo, hi)
                    continue
                # cubic: 4 x 4 taps from (sx - 1, sy - 1)
                sx -= 1
                sy -= 1
                if 0 <= sx < w - 3 and 0 <= sy < h - 3:
                    for c in range(cn):
                        if fixed:
                            s = np.int64(0)
                            for r in range(4):
                                for q in range(4):
                                    s += np.int64(src[sy + r, sx + q, c]) * itab[a, 4 * r + q]
                            out[y, x, c] = min(255, max(0, (s + 16384) >> 15))
                        else:
                            v = np.float32(0)
                            for r in range(4):
                                t = (np.float32(src[sy + r, sx, c]) * ftab[a, 4 * r]
                                     + np.float32(src[sy + r, sx + 1, c]) * ftab[a, 4 * r + 1]
                                     + np.float32(src[sy + r, sx + 2, c]) * ftab[a, 4 * r + 2]
                                     + np.float32(src[sy + r, sx + 3, c]) * ftab[a, 4 * r + 3])
                                v = t if r == 0 else v + t
                            store(out, y, x, c, v, is_int, lo, hi)
                    continue
                if mode == 0 and (sx >= w or sx + 4 <= 0 or sy >= h or sy + 4 <= 0):
                    for c in range(cn):
                        out[y, x, c] = ivals[c] if fixed or is_int else cval[c]
                    continue
                for c in range(cn):
                    if fixed:
                        cv = ivals[c]
                        s = cv * 32768
                        for r in range(4):
                            yy = border_index(sy + r, h, mode)
                            if yy < 0:
                                continue
                            for q in range(4):
                                xx = border_index(sx + q, w, mode)
                                if xx >= 0:
                                    s += (np.int64(src[yy, xx, c]) - cv) * itab[a, 4 * r + q]
                        out[y, x, c] = min(255, max(0, (s + 16384) >> 15))
                    else:
                        cf = np.float32(ivals[c]) if is_int else np.float32(cval[c])
                        v = cf
                        for r in range(4):
                            yy = border_index(sy + r, h, mode)
                            if yy < 0:
                                continue
                            for q in range(4):
                                xx = border_index(sx + q, w, mode)
                                if xx >= 0:
                                    v = v + (np.float32(src[yy, xx, c]) - cf) * ftab[a, 4 * r + q]
                        store(out, y, x, c, v, is_int, lo, hi)
        return out
    return warp, warp_float, warp_nn


#: getter of ``(quantized, floating, nearest)``, the compiled per-pixel warps (``floating``
#: runs cubic; its linear and ``nearest`` are the references of the row-wise kernels of
#: :mod:`runtime.kernels.cpu.warp_perspective_rows`, which run those cases)
kernels = compiled(_build)
