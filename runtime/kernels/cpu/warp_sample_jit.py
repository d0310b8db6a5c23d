"""The compiled sampler of :func:`runtime.kernels.cpu.warp.sample_points` (``warp_affine``,
``rotate``, ``sphere``, ``water``): one pass over the output instead of numpy's gathers and
temporaries, with the same float32 operations in the same order, so the results are the
numpy path's bit for bit (``tests/runtime/kernels/cpu/test_warp.py`` compares both).

Used for uint8 / int16 / uint16 / int32 / float32 images whose output type is the input's and
whose source points are all finite; everything else takes the numpy path.
"""
from __future__ import annotations

import numpy as np

from .byte_copy import copier, prefetcher, span_copier
from .jit import compiled

__all__ = ["row_copies", "sampler", "source_points", "sphere_points", "affine_nearest",
           "SUPPORTED"]

#: image types the compiled sampler handles (output type = input type)
SUPPORTED = (np.uint8, np.int16, np.uint16, np.int32, np.float32)


def _build_row_copies(njit):
    px1, px3, px4 = copier(1), copier(3), copier(4)
    taps2, taps6, taps8 = copier(2), copier(6), copier(8)
    prefetch = prefetcher()

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

    @njit
    def copy_row(sflat, ns, sxr, syr, rb, ow, w, h, cn, outer):
        """the nn pixels of one row whose source pixel (``sxr``, ``syr``) lies inside into
        the row buffer ``rb`` (``cn`` a constant at each call; a 3-channel pixel moved as 4
        bytes where the source has them: the next pixel's values overwrite the fourth);
        returns how many lie outside, their columns in ``outer``"""
        n_out = 0
        uw, uh = np.uint64(w), np.uint64(h)
        for x in range(ow):
            sx, sy = sxr[x], syr[x]
            if np.uint64(sx) < uw and np.uint64(sy) < uh:     # (negative: huge unsigned)
                b = (sy * w + sx) * cn
                o = cn * x
                if cn == 3:
                    if b + 4 <= ns:
                        px4(sflat, b, rb, o)
                    else:
                        px3(sflat, b, rb, o)
                elif cn == 1:
                    px1(sflat, b, rb, o)
                elif cn == 4:
                    px4(sflat, b, rb, o)
                else:
                    copy_px(sflat, b, rb, o, cn)
            else:
                outer[n_out] = x
                n_out += 1
        return n_out

    @njit
    def pixel_taps(flat, b, rs, tt, tb, x, cn):
        """the two taps from ``b`` (top row) and ``b + rs`` (bottom row) of output column
        ``x`` into the tap rows (``cn`` a constant at each call: constant-size copies)"""
        if cn == 3:
            taps6(flat, b, tt, 6 * x)
            taps6(flat, b + rs, tb, 6 * x)
        elif cn == 1:
            taps2(flat, b, tt, 2 * x)
            taps2(flat, b + rs, tb, 2 * x)
        elif cn == 4:
            taps8(flat, b, tt, 8 * x)
            taps8(flat, b + rs, tb, 8 * x)
        else:
            gather_taps(flat, b, rs, tt, tb, 2 * cn * x, 2 * cn)

    @njit
    def prefetch_row(sflat, sxr, syr, ow, w, h, cn):
        """cache hints for the source pixels of a row, one every 16 columns"""
        uw, uh = np.uint64(w), np.uint64(h)
        for x in range(0, ow, 16):
            sx, sy = sxr[x], syr[x]
            if np.uint64(sx) < uw and np.uint64(sy) < uh:
                prefetch(sflat, (sy * w + sx) * cn)

    return copy_px, gather_taps, copy_row, pixel_taps, prefetch_row


#: getter of ``(copy_px, gather_taps, copy_row, pixel_taps, prefetch_row)``: the row-buffer
#: copies and prefetches of the row-wise samplers (also
#: runtime/kernels/cpu/warp_perspective_rows.py)
row_copies = compiled(_build_row_copies)


def _build(njit):
    copy_px, _, _, pixel_taps, _ = row_copies()
    span = span_copier()

    @njit
    def index_sel(c, n):
        """``index`` of a finite ``c`` written as selects (loops over a row vectorise)"""
        v = np.float64(np.floor(c))
        v = v if v >= -2.0 else -2.0
        v = v if v <= n + 1.0 else n + 1.0
        return np.int64(v)

    @njit
    def gather_inner(flat, rs, xir, yir, tt, tb, inner, ow, w, h, cn):
        """the taps of the pixels of a row whose four taps lie inside into the tap rows
        (``cn`` a constant at each call), flagged in ``inner``; returns their count"""
        n_inner = 0
        for x in range(ow):
            x0, y0 = xir[x], yir[x]
            ok = 0 <= x0 and x0 + 1 < w and 0 <= y0 and y0 + 1 < h
            inner[x] = ok
            if ok:
                n_inner += 1
                pixel_taps(flat, (y0 * w + x0) * cn, rs, tt, tb, x, cn)
        return n_inner

    @njit
    def to_int_sel(v, lo, hi):
        """``to_type`` of an integer type written as selects (the same value: the fraction
        ``v - trunc(v)`` has the sign of ``v``)"""
        v = v if v == v else np.float32(0.0)
        t = np.trunc(v)
        d = v - t
        r = np.float64(t) + (1.0 if d >= 0.5 else 0.0) - (1.0 if d <= -0.5 else 0.0)
        r = r if r > lo else lo
        return r if r < hi else hi

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
        if is_int:
            for x in range(ow):
                ax, ay = axr[x], ayr[x]
                wx0 = one - ax
                for c in range(cn):
                    o = 2 * cn * x + c
                    top = np.float32(tt[o]) * wx0 + np.float32(tt[o + cn]) * ax
                    bottom = np.float32(tb[o]) * wx0 + np.float32(tb[o + cn]) * ax
                    res[cn * x + c] = to_int_sel(top + (bottom - top) * ay, lo, hi)
            return
        for x in range(ow):
            ax, ay = axr[x], ayr[x]
            wx0 = one - ax
            for c in range(cn):
                o = 2 * cn * x + c
                top = np.float32(tt[o]) * wx0 + np.float32(tt[o + cn]) * ax
                bottom = np.float32(tb[o]) * wx0 + np.float32(tb[o + cn]) * ax
                res[cn * x + c] = top + (bottom - top) * ay

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
        # outer pixels go through the tap rows where their taps can be stored there
        taps_fill = (not has_fill) or np.float32(fill_nn) == fill_lin
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
                xir[x] = index_sel(x0f, w)
                yir[x] = index_sel(y0f, h)
            if cn == 3:
                n_inner = gather_inner(flat, rs, xir, yir, tt, tb, inner, ow, w, h, 3)
            elif cn == 1:
                n_inner = gather_inner(flat, rs, xir, yir, tt, tb, inner, ow, w, h, 1)
            elif cn == 4:
                n_inner = gather_inner(flat, rs, xir, yir, tt, tb, inner, ow, w, h, 4)
            else:
                n_inner = gather_inner(flat, rs, xir, yir, tt, tb, inner, ow, w, h, cn)
            for x in range(ow if n_inner < ow else 0):
                if inner[x]:
                    continue
                x0, y0 = xir[x], yir[x]
                x1, y1 = x0 + 1, y0 + 1
                if taps_fill:
                    # the four taps (clamped, or the fill where its float32 is the fill's
                    # value in the image type) into the tap rows: interp_row then does this
                    # pixel's arithmetic, the same operations as below
                    if not has_fill:
                        x0, x1 = min(max(x0, 0), w - 1), min(max(x1, 0), w - 1)
                        y0, y1 = min(max(y0, 0), h - 1), min(max(y1, 0), h - 1)
                    in00 = 0 <= x0 < w and 0 <= y0 < h
                    in01 = 0 <= x1 < w and 0 <= y0 < h
                    in10 = 0 <= x0 < w and 0 <= y1 < h
                    in11 = 0 <= x1 < w and 0 <= y1 < h
                    o = 2 * cn * x
                    for c in range(cn):
                        tt[o + c] = img[y0, x0, c] if in00 else fill_nn
                        tt[o + cn + c] = img[y0, x1, c] if in01 else fill_nn
                        tb[o + c] = img[y1, x0, c] if in10 else fill_nn
                        tb[o + cn + c] = img[y1, x1, c] if in11 else fill_nn
                    inner[x] = True
                    n_inner += 1
                    continue
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
                span(res, 0, oflat, row, ow * cn)
                continue
            for x in range(ow):
                if inner[x]:
                    for c in range(cn):
                        oflat[row + cn * x + c] = res[cn * x + c]
        return out
    return sample


def _build_points(njit):
    @njit
    def rows4(m0, first, step, s, ow, block, b0, b1, b2, b3):
        """the walk below of four rows whose first points are ``s[0..3]`` into ``b0 .. b3``,
        the rows' chains of additions interleaved (one row's walk is a chain of dependent
        additions: its latency is the cost)"""
        s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
        x = 0
        while x < ow:
            v0, v1, v2, v3 = s0, s1, s2, s3
            end = min(x + block, ow)
            ux = np.uint64(x)
            b0[ux], b1[ux], b2[ux], b3[ux] = v0, v1, v2, v3
            for k in range(x + 1, end):
                v0 = v0 + m0
                v1 = v1 + m0
                v2 = v2 + m0
                v3 = v3 + m0
                uk = np.uint64(k)
                b0[uk], b1[uk], b2[uk], b3[uk] = v0, v1, v2, v3
            s0 = s0 + step
            s1 = s1 + step
            s2 = s2 + step
            s3 = s3 + step
            x += block

    @njit
    def points(mm, oh, ow, block, out_x, out_y):
        half = np.float32(0.5)
        starts = np.empty(4, np.float32)
        for r in range(2):
            out = out_x if r == 0 else out_y
            m0, m1, m2 = mm[r, 0], mm[r, 1], mm[r, 2]
            step = m0 * np.float32(block)
            first = m2 + m0 * half
            n4 = oh // 4 * 4
            for y in range(0, n4, 4):
                for q in range(4):
                    starts[q] = first + m1 * (np.float32(y + q) + half)
                rows4(m0, first, step, starts, ow, block, out[y], out[y + 1], out[y + 2],
                      out[y + 3])
            for y in range(n4, oh):
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
    return points, sphere, rows4


def _build_nearest(njit):
    _, _, copy_row, _, prefetch_row = row_copies()
    span = span_copier()
    rows4 = _points()[2]

    @njit
    def index_row(buf, n, ow, idx):
        """``index`` of ``sample`` (floor, kept within -2 .. n + 1) of a row of finite
        coordinates, written as selects (the loop vectorises)"""
        lo, hi = -2.0, n + 1.0
        for x in range(ow):
            v = np.float64(np.floor(buf[x]))
            v = v if v >= lo else lo
            v = v if v <= hi else hi
            idx[x] = np.int64(v)

    @njit
    def group_indices(mm, block, y0, ow, w, h, fx, fy, xi, yi):
        """the indices of output rows ``y0 .. y0 + 3`` into rows 0..3 of ``xi`` / ``yi``
        (``fx`` / ``fy``: (4, ow) float32 scratch): ``points``' walk, four rows at once"""
        half = np.float32(0.5)
        starts = np.empty(4, np.float32)
        for r, buf in enumerate((fx, fy)):
            m0, m1, m2 = mm[r, 0], mm[r, 1], mm[r, 2]
            first = m2 + m0 * half
            for q in range(4):
                starts[q] = first + m1 * (np.float32(y0 + q) + half)
            rows4(m0, first, m0 * np.float32(block), starts, ow, block, buf[0], buf[1],
                  buf[2], buf[3])
        for r in range(4):
            index_row(fx[r], w, ow, xi[r])
            index_row(fy[r], h, ow, yi[r])

    @njit
    def nearest(img, mm, block, out, has_fill, fill_nn):
        """``sample``'s nn branch of the affine walk's points, computed four rows at a time
        (the point arrays are never stored): per group of rows the points and indices of the
        next group and prefetches of its source pixels, then per row the inside pixels into
        a row buffer, the others after them (fill, or the clamped pixel), the buffer into
        the output in one copy"""
        h, w, cn = img.shape
        oh, ow = out.shape[0], out.shape[1]
        sflat = img.reshape(-1)
        oflat = out.reshape(-1)
        ns = sflat.size
        fx, fy = np.empty((4, ow), np.float32), np.empty((4, ow), np.float32)
        xa, ya = np.empty((4, ow), np.int64), np.empty((4, ow), np.int64)
        xb, yb = np.empty((4, ow), np.int64), np.empty((4, ow), np.int64)
        outer = np.empty(ow, np.int64)
        rb = np.empty(ow * cn + 1, img.dtype)       # (+1: the fourth byte of the last pixel)
        group_indices(mm, block, 0, ow, w, h, fx, fy, xa, ya)
        for y0 in range(0, oh, 4):
            if (y0 // 4) % 2 == 0:
                gx, gy, nx, ny = xa, ya, xb, yb
            else:
                gx, gy, nx, ny = xb, yb, xa, ya
            if y0 + 4 < oh:
                group_indices(mm, block, y0 + 4, ow, w, h, fx, fy, nx, ny)
                for r in range(min(4, oh - y0 - 4)):
                    prefetch_row(sflat, nx[r], ny[r], ow, w, h, cn)
            for r in range(min(4, oh - y0)):
                xi, yi = gx[r], gy[r]
                if cn == 3:
                    n_out = copy_row(sflat, ns, xi, yi, rb, ow, w, h, 3, outer)
                elif cn == 1:
                    n_out = copy_row(sflat, ns, xi, yi, rb, ow, w, h, 1, outer)
                elif cn == 4:
                    n_out = copy_row(sflat, ns, xi, yi, rb, ow, w, h, 4, outer)
                else:
                    n_out = copy_row(sflat, ns, xi, yi, rb, ow, w, h, cn, outer)
                for k in range(n_out):
                    x = outer[k]
                    o = cn * x
                    if has_fill:
                        for c in range(cn):
                            rb[o + c] = fill_nn
                    else:
                        sx, sy = min(max(xi[x], 0), w - 1), min(max(yi[x], 0), h - 1)
                        for c in range(cn):
                            rb[o + c] = img[sy, sx, c]
                span(rb, 0, oflat, (y0 + r) * ow * cn, ow * cn)
        return out
    return nearest


#: getter of the compiled sampler
sampler = compiled(_build)
#: getter of the row-wise nearest sampler of the affine walk (``warp_affine`` / ``rotate``)
affine_nearest = compiled(_build_nearest)
_points = compiled(_build_points)


def source_points():
    """The compiled source-point walk of the affine warps."""
    return _points()[0]


def sphere_points():
    """The compiled source points of ``sphere``."""
    return _points()[1]
