"""Row-wise compiled loops of ``experimental.warp_perspective``: nearest and float32-point
linear sampling (the cases DALI's benchmarks hit), written so that LLVM vectorises what can be.

Each output row is processed in passes over row buffers: the source points of the whole row
(the same float32 / float64 operations, in the same order, as the per-pixel kernels of
:mod:`runtime.kernels.cpu.warp_perspective_jit`, so the results are theirs bit for bit), then the
taps of the pixels whose taps all lie inside the image, then (linear) the interpolation as
straight float32 array arithmetic, then the stores. Pixels with a tap outside the image take
the per-pixel border code (the same as the per-pixel kernels'). No fast-math: IEEE operations
give the same bits whether computed in vector or scalar registers, on any CPU.
"""
from __future__ import annotations

import numpy as np

from .jit import compiled
from .warp_perspective_jit import helpers
from .byte_copy import prefetcher, span_copier
from .warp_sample_jit import row_copies

__all__ = ["row_kernels"]


def _build(njit):
    border_index, store, _, _, tap, round_int, _ = helpers()
    _, _, copy_row, pixel_taps, prefetch_row = row_copies()
    span = span_copier()
    prefetch = prefetcher()

    @njit
    def interp_row(tt, tb, fxr, fyr, res, at, ow, cn, is_int, flo, fhi):
        """bilinear of one row from its tap buffers into ``res[at:at + cn * ow]`` (``cn`` a
        constant at each call: the channel loop unrolls and the pixel loop vectorises)"""
        row = res[at:at + cn * ow]
        if is_int:
            for x in range(ow):
                fx, fy = fxr[x], fyr[x]
                for c in range(cn):
                    o = 2 * cn * x + c
                    a0, a1 = np.float32(tt[o]), np.float32(tt[o + cn])
                    a2, a3 = np.float32(tb[o]), np.float32(tb[o + cn])
                    v0 = a0 + fx * (a1 - a0)
                    v1 = a2 + fx * (a3 - a2)
                    row[cn * x + c] = min(max(np.rint(v0 + fy * (v1 - v0)), flo), fhi)
        else:
            for x in range(ow):
                fx, fy = fxr[x], fyr[x]
                for c in range(cn):
                    o = 2 * cn * x + c
                    a0, a1 = np.float32(tt[o]), np.float32(tt[o + cn])
                    a2, a3 = np.float32(tb[o]), np.float32(tb[o + cn])
                    v0 = a0 + fx * (a1 - a0)
                    v1 = a2 + fx * (a3 - a2)
                    row[cn * x + c] = v0 + fy * (v1 - v0)

    @njit
    def gather_row(sflat, ixr, iyr, tt, tb, outer, ow, w, h, cn):
        """the taps of one bilinear row: those of each pixel whose 2 x 2 taps lie inside the
        image into the tap rows (one constant-size copy per tap row: ``cn`` a constant at each
        call), zeros for the others, whose columns go to ``outer``; returns their count"""
        n_outer = 0
        uw, uh = np.uint64(w - 1), np.uint64(h - 1)
        rs = w * cn
        for x in range(ow):
            ix, iy = ixr[x], iyr[x]
            if np.uint64(ix) < uw and np.uint64(iy) < uh:     # (negative: huge unsigned)
                pixel_taps(sflat, (iy * w + ix) * cn, rs, tt, tb, x, cn)
                continue
            outer[n_outer] = x
            n_outer += 1
            for k in range(2 * cn):
                tt[2 * cn * x + k] = 0
                tb[2 * cn * x + k] = 0
        return n_outer

    @njit
    def linear_points(m32, y, ow, sxr, syr, ixr, iyr, fxr, fyr):
        """the float32 source points of output row ``y`` (``np.divide``: no zero-division
        branch per pixel, so the loop vectorises; ``w == 0`` gives infinite or NaN points),
        their floors as OpenCV's ``cvFloor`` (INT_MIN / INT_MAX for those and for points
        beyond int32) and fractions"""
        m0, m1, m2, m3, m4, m5 = m32[0], m32[1], m32[2], m32[3], m32[4], m32[5]
        m6, m7, m8 = m32[6], m32[7], m32[8]
        big = np.float32(2147483648.0)     # (floor_int, as a select)
        yf = np.float32(y)
        bw, bx, by = yf * m7, yf * m1, yf * m4
        for x in range(ow):
            xf = np.float32(x)
            wv = xf * m6 + bw + m8
            sxr[x] = np.divide(xf * m0 + bx + m2, wv)
            syr[x] = np.divide(xf * m3 + by + m5, wv)
        far = 0
        for x in range(ow):
            sx, sy = sxr[x], syr[x]
            ix = np.int64(np.floor(sx)) if sx > -big and sx < big else -2147483648
            iy = np.int64(np.floor(sy)) if sy > -big and sy < big else -2147483648
            far += (ix == -2147483648) | (iy == -2147483648)
            ixr[x], iyr[x] = ix, iy
            fxr[x] = sx - np.float32(ix)
            fyr[x] = sy - np.float32(iy)
        return far

    @njit
    def prefetch_taps(sflat, ixr, iyr, ow, w, h, cn):
        """cache hints for the two tap rows of a bilinear row, one every 16 columns"""
        uw, uh = np.uint64(w - 1), np.uint64(h - 1)
        for x in range(0, ow, 16):
            ix, iy = ixr[x], iyr[x]
            if np.uint64(ix) < uw and np.uint64(iy) < uh:
                b = (iy * w + ix) * cn
                prefetch(sflat, b)
                prefetch(sflat, b + w * cn)

    @njit
    def group_has_inner(ixr, iyr, x, ow, w, h):
        """whether the 16 columns of OpenCV's vector loop (AVX2) holding column ``x`` have a
        tap inside the image: there a pixel with every tap outside and an infinite / NaN
        fraction takes the sum of its (fill) taps, NaN, rather than the fill that a group
        wholly outside (or the scalar tail after the last full group) stores (measured)"""
        g0 = (x // 16) * 16
        if g0 + 16 > ow:
            return False
        for k in range(g0, g0 + 16):
            if -1 <= ixr[k] < w and -1 <= iyr[k] < h:
                return True
        return False

    @njit
    def linear(src, m32, out, mode, cval, is_int, lo, hi):
        """float32-point bilinear (``interp`` 1 of the per-pixel ``warp_float``); ``src`` and
        ``out`` C-contiguous. Per row: the next row's source points (:func:`linear_points`)
        and prefetches of its source lines (see ``nearest``), this row's taps of the inner
        pixels (:func:`gather_row`), the interpolation of the whole row straight into the
        output, then the pixels with a tap outside overwritten by the per-pixel border code.
        A zero ``w`` gives infinite or NaN points, sampled as OpenCV does (see
        :func:`linear_points`)."""
        h, w, cn = src.shape
        oh, ow = out.shape[0], out.shape[1]
        sflat = src.reshape(-1)
        oflat = out.reshape(-1)
        sxr = np.empty(ow, np.float32)
        syr = np.empty(ow, np.float32)
        fa, ga = np.empty(ow, np.float32), np.empty(ow, np.float32)
        fb, gb = np.empty(ow, np.float32), np.empty(ow, np.float32)
        ia, ja = np.empty(ow, np.int64), np.empty(ow, np.int64)
        ib, jb = np.empty(ow, np.int64), np.empty(ow, np.int64)
        tt = np.zeros(2 * cn * ow, src.dtype)
        tb = np.zeros(2 * cn * ow, src.dtype)
        outer = np.empty(ow, np.int64)
        flo, fhi = np.float32(lo), np.float32(hi)
        far = linear_points(m32, 0, ow, sxr, syr, ia, ja, fa, ga) if oh > 0 else 0
        for y in range(oh):
            if y % 2 == 0:
                ixr, iyr, fxr, fyr, nix, niy, nfx, nfy = ia, ja, fa, ga, ib, jb, fb, gb
            else:
                ixr, iyr, fxr, fyr, nix, niy, nfx, nfy = ib, jb, fb, gb, ia, ja, fa, ga
            row_far = far
            if y + 1 < oh:
                far = linear_points(m32, y + 1, ow, sxr, syr, nix, niy, nfx, nfy)
                prefetch_taps(sflat, nix, niy, ow, w, h, cn)
            if cn == 3:                 # taps of the inner pixels, the others listed
                n_outer = gather_row(sflat, ixr, iyr, tt, tb, outer, ow, w, h, 3)
            elif cn == 1:
                n_outer = gather_row(sflat, ixr, iyr, tt, tb, outer, ow, w, h, 1)
            elif cn == 4:
                n_outer = gather_row(sflat, ixr, iyr, tt, tb, outer, ow, w, h, 4)
            else:
                n_outer = gather_row(sflat, ixr, iyr, tt, tb, outer, ow, w, h, cn)
            row = y * ow * cn
            if n_outer < ow:            # the interpolation, into the output row
                if cn == 3:
                    interp_row(tt, tb, fxr, fyr, oflat, row, ow, 3, is_int, flo, fhi)
                elif cn == 1:
                    interp_row(tt, tb, fxr, fyr, oflat, row, ow, 1, is_int, flo, fhi)
                elif cn == 4:
                    interp_row(tt, tb, fxr, fyr, oflat, row, ow, 4, is_int, flo, fhi)
                else:
                    interp_row(tt, tb, fxr, fyr, oflat, row, ow, cn, is_int, flo, fhi)
            for k in range(n_outer):    # the pixels with a tap outside, one by one
                x = outer[k]
                ix, iy = ixr[x], iyr[x]
                fx, fy = fxr[x], fyr[x]
                if mode == 0 and (ix < -1 or ix >= w or iy < -1 or iy >= h):
                    for c in range(cn):
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
            if mode == 0 and row_far:   # (rare) infinite / NaN points: see group_has_inner
                nonfinite_fill(src, out, y, ixr, iyr, fxr, fyr, outer, n_outer, cval, is_int,
                               lo, hi)
        return out

    @njit
    def nonfinite_fill(src, out, y, ixr, iyr, fxr, fyr, outer, n_outer, cval, is_int, lo,
                       hi):
        """the pixels of row ``y`` with every tap outside and an infinite / NaN fraction
        whose vector group has a tap inside (:func:`group_has_inner`): the sum of their fill
        taps (NaN) instead of the fill"""
        h, w, cn = src.shape
        ow = out.shape[1]
        for k in range(n_outer):
            x = outer[k]
            ix, iy, fx, fy = ixr[x], iyr[x], fxr[x], fyr[x]
            if not (ix < -1 or ix >= w or iy < -1 or iy >= h) \
                    or (np.isfinite(fx) and np.isfinite(fy)) \
                    or not group_has_inner(ixr, iyr, x, ow, w, h):
                continue
            for c in range(cn):
                cf = np.float32(cval[c])
                v0 = cf + fx * (cf - cf)
                v0 = v0 + fy * (v0 - v0)
                store(out, y, x, c, v0, is_int, lo, hi)

    @njit
    def nn_points32(m32, y, ow, sxr, syr):
        """the nn source points of output row ``y`` as OpenCV's newer kernels (uint8, uint16,
        float32 with 1, 3 or 4 channels) compute them: the float32 points of
        :func:`linear_points`, rounded half to even to int32 (:func:`round_int`)"""
        m0, m1, m2, m3, m4, m5 = m32[0], m32[1], m32[2], m32[3], m32[4], m32[5]
        m6, m7, m8 = m32[6], m32[7], m32[8]
        yf = np.float32(y)
        bw, bx, by = yf * m7, yf * m1, yf * m4
        lim = np.float32(2147483648.0)
        for x in range(ow):     # (round_int written as selects: the loop vectorises)
            xf = np.float32(x)
            wv = xf * m6 + bw + m8
            rx = np.rint(np.divide(xf * m0 + bx + m2, wv))
            ry = np.rint(np.divide(xf * m3 + by + m5, wv))
            sxr[x] = np.int64(rx) if rx >= -lim and rx < lim else -2147483648
            syr[x] = np.int64(ry) if ry >= -lim and ry < lim else -2147483648

    @njit
    def nn_points(m, y, ow, bw, sxr, syr):
        """the nn source points of output row ``y`` as OpenCV's classic warp (int16, and 2
        channels) computes them: double arithmetic per block of ``bw`` columns (the block
        start computed once), ``W ? 1 / W : 0``, rounded half to even, saturated to int16"""
        m0, m1, m2, m3, m4, m5 = m[0], m[1], m[2], m[3], m[4], m[5]
        m6, m7, m8 = m[6], m[7], m[8]
        for x0 in range(0, ow, bw):
            X0 = m0 * x0 + m1 * y + m2
            Y0 = m3 * x0 + m4 * y + m5
            W0 = m6 * x0 + m7 * y + m8
            ux0 = np.uint64(x0)
            for x1 in range(min(bw, ow - x0)):
                W = W0 + m6 * x1
                W = np.divide(1.0, W) if W != 0 else 0.0    # (no zero-division branch)
                fx = max(-2147483648.0, min(2147483647.0, (X0 + m0 * x1) * W))
                fy = max(-2147483648.0, min(2147483647.0, (Y0 + m3 * x1) * W))
                k = ux0 + np.uint64(x1)     # unsigned: contiguous stores, not a scatter
                sxr[k] = max(-32768, min(32767, np.int64(np.rint(fx))))
                syr[k] = max(-32768, min(32767, np.int64(np.rint(fy))))

    @njit
    def nearest(src, m, out, mode, fill, bw, m32, new_points):
        """nearest from float64 source points per block of ``bw`` columns (``warp_nn``);
        ``src`` and ``out`` C-contiguous. Per row: the source points of the next row and
        prefetches of its source lines (a warp reads its source along lines that cross the
        image rows: short runs the hardware prefetcher does not follow), then this row's
        inner pixels into a row buffer, the outer ones after them (border code), then the
        buffer into the output in one copy."""
        h, w, cn = src.shape
        oh, ow = out.shape[0], out.shape[1]
        sflat = src.reshape(-1)
        oflat = out.reshape(-1)
        ns = sflat.size
        xa, ya = np.empty(ow, np.int64), np.empty(ow, np.int64)
        xb, yb = np.empty(ow, np.int64), np.empty(ow, np.int64)
        outer = np.empty(ow, np.int64)
        rb = np.empty(ow * cn + 1, src.dtype)       # (+1: the fourth byte of the last pixel)
        if oh > 0:
            if new_points:
                nn_points32(m32, 0, ow, xa, ya)
            else:
                nn_points(m, 0, ow, bw, xa, ya)
        for y in range(oh):
            if y % 2 == 0:
                sxr, syr, nxr, nyr = xa, ya, xb, yb
            else:
                sxr, syr, nxr, nyr = xb, yb, xa, ya
            if y + 1 < oh:
                if new_points:
                    nn_points32(m32, y + 1, ow, nxr, nyr)
                else:
                    nn_points(m, y + 1, ow, bw, nxr, nyr)
                prefetch_row(sflat, nxr, nyr, ow, w, h, cn)
            if cn == 3:
                n_out = copy_row(sflat, ns, sxr, syr, rb, ow, w, h, 3, outer)
            elif cn == 1:
                n_out = copy_row(sflat, ns, sxr, syr, rb, ow, w, h, 1, outer)
            elif cn == 4:
                n_out = copy_row(sflat, ns, sxr, syr, rb, ow, w, h, 4, outer)
            else:
                n_out = copy_row(sflat, ns, sxr, syr, rb, ow, w, h, cn, outer)
            for k in range(n_out):
                x = outer[k]
                o = cn * x
                if mode == 0:
                    for c in range(cn):
                        rb[o + c] = fill[c]
                else:
                    bx = border_index(sxr[x], w, mode)
                    by = border_index(syr[x], h, mode)
                    for c in range(cn):
                        rb[o + c] = src[by, bx, c]
            span(rb, 0, oflat, y * ow * cn, ow * cn)
        return out
    return linear, nearest


#: getter of ``(linear, nearest)``, the row-wise warps
row_kernels = compiled(_build)
