"""The compiled sampler of :func:`runtime.kernels.cpu.warp.sample_points` (``warp_affine``,
``rotate``, ``sphere``, ``water``): one pass over the output instead of numpy's gathers and
temporaries, with the same float32 operations in the same order, so the results are the
numpy path's bit for bit (``tests/runtime/kernels/cpu/test_warp.py`` compares both).

Used for uint8 / int16 / uint16 / int32 / float32 images whose output type is the input's and
whose source points are all finite; everything else takes the numpy path.
"""
from __future__ import annotations

import numpy as np

from .jit import compiled

__all__ = ["row_copies", "sampler", "source_points", "sphere_points", "SUPPORTED"]

#: image types the compiled sampler handles (output type = input type)
SUPPORTED = (np.uint8, np.int16, np.uint16, np.int32, np.float32)


def _build_row_copies(njit):
    @njit
    def copy_px(src, b, dst, o, n):
        """``n`` values from flat index ``b`` to ``o`` (``n`` a constant at each call)"""
        ub, uo = np.uint64(b), np.uint64(o)
        for k in range(n):      # unsigned indices: no negative-index wraparound
            uk = np.uint64(k)
            dst[uo + uk] = src[ub + uk]

    @njit
    def gather_taps(src, b, rs, tt, tb, o, n):
        """the ``n`` values from ``b`` (top row) and ``b + rs`` (bottom row) into the tap
        rows at ``o`` (``n`` a constant at each call)"""
        ub, ubr, uo = np.uint64(b), np.uint64(b + rs), np.uint64(o)
        for k in range(n):
            uk = np.uint64(k)
            tt[uo + uk] = src[ub + uk]
            tb[uo + uk] = src[ubr + uk]

    return copy_px, gather_taps


#: getter of ``(copy_px, gather_taps)``: the row-buffer copies of the row-wise samplers (also
#: runtime/kernels/cpu/warp_perspective_rows.py)
row_copies = compiled(_build_row_copies)


def _build(njit):
    copy_px, gather_taps = row_copies()

    @njit
    def index(c, n):
        v = np.floor(c)
        if v < -2.0:
            return -2
        if v > n + 1.0:
            return n + 1
        return np.int64(v)

    @njit
    def to_type(v, is_int, lo, hi):
        if not is_int:
            return v
        if v != v:
            return 0.0
        t = np.trunc(v)
        if abs(v - t) >= 0.5:
            t += 1.0 if v > 0 else -1.0
        if t < lo:
            return lo
        if t > hi:
            return hi
        return t

    @njit
    def interp_row(tt, tb, axr, ayr, res, ow, cn, is_int, lo, hi):
        """``top + (bottom - top) ay`` of one row from its tap rows (``cn`` a constant at each
        call: unrolled, the pixel loop vectorised)"""
        one = np.float32(1.0)
        for x in range(ow):
            ax, ay = axr[x], ayr[x]
            wx0 = one - ax
            for c in range(cn):
                o = 2 * cn * x + c
                top = np.float32(tt[o]) * wx0 + np.float32(tt[o + cn]) * ax
                bottom = np.float32(tb[o]) * wx0 + np.float32(tb[o + cn]) * ax
                res[cn * x + c] = to_type(top + (bottom - top) * ay, is_int, lo, hi)

    @njit
    def sample(img, sx, sy, out, linear, has_fill, fill_nn, fill_lin, is_int, lo, hi):
        """Row by row: the indices (and weights) of the whole row, then the pixels whose taps
        are all inside copied / interpolated through row buffers, the others one by one."""
        h, w, cn = img.shape
        oh, ow = sx.shape
        flat = img.reshape(-1)
        oflat = out.reshape(-1)
        rs = w * cn
        half = np.float32(0.5)
        one = np.float32(1.0)
        xir = np.empty(ow, np.int64)
        yir = np.empty(ow, np.int64)
        axr = np.zeros(ow, np.float32)
        ayr = np.zeros(ow, np.float32)
        tt = np.zeros(2 * cn * ow, img.dtype)
        tb = np.zeros(2 * cn * ow, img.dtype)
        res = np.zeros(cn * ow, img.dtype)
        inner = np.zeros(ow, np.bool_)
        for y in range(oh):
            sxy, syy = sx[y], sy[y]
            row = y * ow * cn
            if not linear:
                for x in range(ow):
                    xir[x] = index(sxy[x], w)
                    yir[x] = index(syy[x], h)
                for x in range(ow):
                    xi, yi = xir[x], yir[x]
                    o = row + cn * x
                    if 0 <= xi < w and 0 <= yi < h:
                        b = (yi * w + xi) * cn
                        if cn == 3:
                            copy_px(flat, b, oflat, o, 3)
                        elif cn == 1:
                            copy_px(flat, b, oflat, o, 1)
                        elif cn == 4:
                            copy_px(flat, b, oflat, o, 4)
                        else:
                            copy_px(flat, b, oflat, o, cn)
                    elif has_fill:
                        for c in range(cn):
                            out[y, x, c] = fill_nn
                    else:
                        xi, yi = min(max(xi, 0), w - 1), min(max(yi, 0), h - 1)
                        for c in range(cn):
                            out[y, x, c] = img[yi, xi, c]
                continue
            for x in range(ow):
                fx = sxy[x] - half
                fy = syy[x] - half
                x0f = np.floor(fx)
                y0f = np.floor(fy)
                axr[x] = fx - x0f
                ayr[x] = fy - y0f
                xir[x] = index(x0f, w)
                yir[x] = index(y0f, h)
            n_inner = 0
            for x in range(ow):
                x0, y0 = xir[x], yir[x]
                x1, y1 = x0 + 1, y0 + 1
                if 0 <= x0 and x1 < w and 0 <= y0 and y1 < h:
                    inner[x] = True
                    n_inner += 1
                    b = (y0 * w + x0) * cn
                    if cn == 3:
                        gather_taps(flat, b, rs, tt, tb, 6 * x, 6)
                    elif cn == 1:
                        gather_taps(flat, b, rs, tt, tb, 2 * x, 2)
                    elif cn == 4:
                        gather_taps(flat, b, rs, tt, tb, 8 * x, 8)
                    else:
                        gather_taps(flat, b, rs, tt, tb, 2 * cn * x, 2 * cn)
                    continue
                inner[x] = False
                for k in range(2 * cn):
                    tt[2 * cn * x + k] = 0
                    tb[2 * cn * x + k] = 0
                ax, ay = axr[x], ayr[x]
                inside = False
                if not has_fill:
                    x0, x1 = min(max(x0, 0), w - 1), min(max(x1, 0), w - 1)
                    y0, y1 = min(max(y0, 0), h - 1), min(max(y1, 0), h - 1)
                    inside = True
                in00 = inside or (0 <= x0 < w and 0 <= y0 < h)
                in01 = inside or (0 <= x1 < w and 0 <= y0 < h)
                in10 = inside or (0 <= x0 < w and 0 <= y1 < h)
                in11 = inside or (0 <= x1 < w and 0 <= y1 < h)
                wx0 = one - ax
                for c in range(cn):
                    a = np.float32(img[y0, x0, c]) if in00 else fill_lin
                    bb = np.float32(img[y0, x1, c]) if in01 else fill_lin
                    cc = np.float32(img[y1, x0, c]) if in10 else fill_lin
                    d = np.float32(img[y1, x1, c]) if in11 else fill_lin
                    top = a * wx0 + bb * ax
                    bottom = cc * wx0 + d * ax
                    out[y, x, c] = to_type(top + (bottom - top) * ay, is_int, lo, hi)
            if n_inner == 0:
                continue
            if cn == 3:
                interp_row(tt, tb, axr, ayr, res, ow, 3, is_int, lo, hi)
            elif cn == 1:
                interp_row(tt, tb, axr, ayr, res, ow, 1, is_int, lo, hi)
            elif cn == 4:
                interp_row(tt, tb, axr, ayr, res, ow, 4, is_int, lo, hi)
            else:
                interp_row(tt, tb, axr, ayr, res, ow, cn, is_int, lo, hi)
            if n_inner == ow:
                oflat[row:row + ow * cn] = res
                continue
            for x in range(ow):
                if inner[x]:
                    for c in range(cn):
                        oflat[row + cn * x + c] = res[cn * x + c]
        return out
    return sample


def _build_points(njit):
    @njit
    def points(mm, oh, ow, block, out_x, out_y):
        half = np.float32(0.5)
        for r in range(2):
            out = out_x if r == 0 else out_y
            m0, m1, m2 = mm[r, 0], mm[r, 1], mm[r, 2]
            step = m0 * np.float32(block)
            first = m2 + m0 * half
            for y in range(oh):
                start = first + m1 * (np.float32(y) + half)
                x = 0
                while x < ow:
                    v = start
                    end = min(x + block, ow)
                    out[y, x] = v
                    for k in range(x + 1, end):
                        v = v + m0
                        out[y, k] = v
                    start = start + step
                    x += block
        return out_x, out_y

    @njit
    def sphere(h, w, cx, cy, d, out_x, out_y):
        """the sphere remap's points (:func:`runtime.kernels.cpu.sphere.sphere_points`, the
        same float32 operations; ``d`` non-zero)"""
        half = np.float32(0.5)
        for y in range(h):
            ty = (np.float32(y) + half) - cy
            ty2 = ty * ty
            for x in range(w):
                tx = (np.float32(x) + half) - cx
                r = np.sqrt(tx * tx + ty2) / d
                out_x[y, x] = cx + tx * r
                out_y[y, x] = cy + ty * r
        return out_x, out_y
    return points, sphere


#: getter of the compiled sampler
sampler = compiled(_build)
_points = compiled(_build_points)


def source_points():
    """The compiled source-point walk of the affine warps."""
    return _points()[0]


def sphere_points():
    """The compiled source points of ``sphere``."""
    return _points()[1]
