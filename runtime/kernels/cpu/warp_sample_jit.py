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

__all__ = ["sampler", "source_points", "SUPPORTED"]

#: image types the compiled sampler handles (output type = input type)
SUPPORTED = (np.uint8, np.int16, np.uint16, np.int32, np.float32)


def _build(njit):
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
    def sample(img, sx, sy, out, linear, has_fill, fill_nn, fill_lin, is_int, lo, hi):
        h, w, cn = img.shape
        oh, ow = sx.shape
        half = np.float32(0.5)
        one = np.float32(1.0)
        for y in range(oh):
            for x in range(ow):
                px, py = sx[y, x], sy[y, x]
                if not linear:
                    xi, yi = index(px, w), index(py, h)
                    if 0 <= xi < w and 0 <= yi < h:
                        for c in range(cn):
                            out[y, x, c] = img[yi, xi, c]
                    elif has_fill:
                        for c in range(cn):
                            out[y, x, c] = fill_nn
                    else:
                        xi, yi = min(max(xi, 0), w - 1), min(max(yi, 0), h - 1)
                        for c in range(cn):
                            out[y, x, c] = img[yi, xi, c]
                    continue
                fx = px - half
                fy = py - half
                x0f = np.floor(fx)
                y0f = np.floor(fy)
                ax = fx - x0f
                ay = fy - y0f
                x0, y0 = index(x0f, w), index(y0f, h)
                x1, y1 = x0 + 1, y0 + 1
                inside = 0 <= x0 and x1 < w and 0 <= y0 and y1 < h
                if not inside and not has_fill:
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
                    b = np.float32(img[y0, x1, c]) if in01 else fill_lin
                    cc = np.float32(img[y1, x0, c]) if in10 else fill_lin
                    d = np.float32(img[y1, x1, c]) if in11 else fill_lin
                    top = a * wx0 + b * ax
                    bottom = cc * wx0 + d * ax
                    out[y, x, c] = to_type(top + (bottom - top) * ay, is_int, lo, hi)
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
    return points


#: getter of the compiled sampler
sampler = compiled(_build)
#: getter of the compiled source-point walk of the affine warps
source_points = compiled(_build_points)
