"""Histogram-based colour ops on the CPU: ``equalize`` and ``clahe`` (uint8).

Both follow DALI 2.4's CPU operators, which are OpenCV's ``equalizeHist`` (per channel) and
``CLAHE`` (measured bit-exactly against them):

``equalize``: per channel, with ``hist`` the 256-bin histogram, ``i0`` the lowest value present
and ``n`` the pixel count: a single-valued channel stays as it is; otherwise value ``v`` maps to
``round(cumsum(hist)[v] - hist[i0]) * (255 / (n - hist[i0])))`` (float32 scale, rounded half to
even) and ``i0`` to 0.

``clahe`` (``tiles_x`` x ``tiles_y`` tiles): an image whose size is not a multiple of the tile
grid is extended by ``tiles_y - H % tiles_y`` rows and ``tiles_x - W % tiles_x`` columns (a
whole tile where an extent divides evenly, as OpenCV) at the bottom / right by mirroring
(``cb|abc``, OpenCV's ``REFLECT_101``) for the histograms; each tile's histogram is clipped at ``max(1, int(clip_limit * tile_area /
256))``, the clipped count spread evenly over the 256 bins (the remainder one each, every
``max(256 // remainder, 1)``-th bin from 0), and turned into a table ``round(cumsum * 255 /
tile_area)``; pixel ``(x, y)`` blends the tables of the four nearest tile centers bilinearly
(float32 weights ``x / tile_w - 0.5``, rounded half to even). 3-channel images with
``luma_only`` are processed on the L channel of CIE Lab (see :func:`rgb_to_lab`; cube roots and
the inverse gamma from interpolated tables of C's functions); otherwise
every channel alone. ``bins`` is accepted and, as in DALI's CPU operator, not used (256).
Registers ``equalize`` and ``clahe``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

from . import libm
from .jit import compiled

__all__ = ["equalize", "equalize_channel", "clahe", "clahe_channel", "rgb_to_lab",
           "lab_to_rgb", "warm_up"]


def _round_u8(v):
    """float -> uint8 as OpenCV's ``saturate_cast`` (round half to even, saturate)."""
    return np.clip(np.rint(v), 0, 255).astype(np.uint8)


def equalize_channel(ch: np.ndarray) -> np.ndarray:
    """Histogram equalization of one uint8 channel (see the module docstring)."""
    hist = np.bincount(ch.reshape(-1), minlength=256).astype(np.int64)
    n = ch.size
    if n == 0:
        return ch.copy()
    i0 = int(np.flatnonzero(hist)[0])
    if hist[i0] == n:
        return np.full_like(ch, i0)
    scale = np.float32(255.0) / np.float32(n - hist[i0])
    csum = np.cumsum(hist) - hist[i0]
    lut = _round_u8(csum.astype(np.float32) * scale)
    lut[:i0 + 1] = 0
    return lut[ch]


def _check_u8(img, op):
    img = np.asarray(img)
    if img.dtype != np.uint8:
        raise TypeError(f"{op} supports only uint8 input, got {img.dtype}")
    return img


def equalize(img) -> np.ndarray:
    """``equalize`` of one ``(H, W)`` or ``(H, W, C)`` uint8 image, each channel alone.

    Raises
    ------
    TypeError
        Not uint8.
    """
    img = _check_u8(img, "equalize")
    src = np.ascontiguousarray(img if img.ndim == 3 else img[:, :, None])
    if src.size == 0:
        return img.copy()
    hists, apply_luts = _hist_kernels()
    hist = hists(src, np.zeros((src.shape[2], 256), np.int64))
    n = src.shape[0] * src.shape[1]
    luts = np.empty((src.shape[2], 256), np.uint8)
    for c in range(src.shape[2]):
        h = hist[c]
        i0 = int(np.flatnonzero(h)[0])
        if h[i0] == n:
            luts[c] = i0
            continue
        scale = np.float32(255.0) / np.float32(n - h[i0])
        lut = _round_u8((np.cumsum(h) - h[i0]).astype(np.float32) * scale)
        lut[:i0 + 1] = 0
        luts[c] = lut
    out = apply_luts(src, luts, np.empty_like(src))
    return out if img.ndim == 3 else out[:, :, 0]


def _build_hist(njit):
    @njit
    def hists(src, hist):
        h, w, cn = src.shape
        for y in range(h):
            for x in range(w):
                for c in range(cn):
                    hist[c, src[y, x, c]] += 1
        return hist

    @njit
    def apply_luts(src, luts, out):
        h, w, cn = src.shape
        for y in range(h):
            for x in range(w):
                for c in range(cn):
                    out[y, x, c] = luts[c, src[y, x, c]]
        return out
    return hists, apply_luts


_hist_kernels = compiled(_build_hist)


def _build(njit):
    @njit
    def interpolate(src, luts, th, tw, tiles_y, tiles_x, out):
        h, w = src.shape
        inv_tw = np.float32(1.0) / np.float32(tw)
        inv_th = np.float32(1.0) / np.float32(th)
        half = np.float32(0.5)
        one = np.float32(1.0)
        # the column weights are the same on every row: computed once
        x1s = np.empty(w, np.int64)
        x2s = np.empty(w, np.int64)
        xas = np.empty(w, np.float32)
        for x in range(w):
            txf = np.float32(x) * inv_tw - half
            tx1 = np.int64(np.floor(txf))
            xas[x] = txf - np.float32(tx1)
            x2s[x] = min(tx1 + 1, tiles_x - 1)
            x1s[x] = max(tx1, 0)
        for y in range(h):
            tyf = np.float32(y) * inv_th - half
            ty1 = np.int64(np.floor(tyf))
            ya = tyf - np.float32(ty1)
            ya1 = one - ya
            ty2 = min(ty1 + 1, tiles_y - 1)
            ty1 = max(ty1, 0)
            for x in range(w):
                xa = xas[x]
                xa1 = one - xa
                tx1, tx2 = x1s[x], x2s[x]
                v = src[y, x]
                res = (np.float32(luts[ty1, tx1, v]) * xa1 + np.float32(luts[ty1, tx2, v]) * xa) \
                    * ya1 + (np.float32(luts[ty2, tx1, v]) * xa1
                             + np.float32(luts[ty2, tx2, v]) * xa) * ya
                r = np.rint(res)
                out[y, x] = 0 if r < 0 else (255 if r > 255 else np.uint8(r))
        return out
    return interpolate


_interpolate = compiled(_build)


def _build_tile_hist(njit):
    @njit
    def tile_hist(ch, ry, rx, th, tw, hist):
        for y in range(len(ry)):
            row = ry[y]
            ty = y // th
            for x in range(len(rx)):
                hist[ty, x // tw, ch[row, rx[x]]] += 1
        return hist
    return tile_hist


_tile_hist = compiled(_build_tile_hist)


def _mirror_101(n: int, extra: int) -> np.ndarray:
    """Row / column indices of an extent ``n`` grown by ``extra`` at the end (``cb|abc``)."""
    idx = np.arange(n + extra)
    if n == 1:
        return np.zeros(n + extra, np.int64)
    period = 2 * n - 2
    idx = idx % period
    return np.where(idx < n, idx, period - idx)


def clahe_channel(ch: np.ndarray, tiles_x: int, tiles_y: int, clip_limit: float) -> np.ndarray:
    """CLAHE of one uint8 ``(H, W)`` channel (see the module docstring)."""
    h, w = ch.shape
    if h == 0 or w == 0:
        return ch.copy()
    ry, rx = np.arange(h), np.arange(w)
    if h % tiles_y or w % tiles_x:
        # as OpenCV: both extents grow (a whole tile row / column where one divides evenly)
        ry = _mirror_101(h, tiles_y - h % tiles_y)
        rx = _mirror_101(w, tiles_x - w % tiles_x)
    th, tw = len(ry) // tiles_y, len(rx) // tiles_x
    area = th * tw
    hist = _tile_hist()(ch, ry, rx, th, tw, np.zeros((tiles_y, tiles_x, 256), np.int64))
    hist = hist.reshape(tiles_y * tiles_x, 256)
    if clip_limit > 0.0:
        limit = max(int(float(np.float32(clip_limit)) * area / 256), 1)
        clipped = np.maximum(hist - limit, 0).sum(axis=1)
        hist = np.minimum(hist, limit) + (clipped // 256)[:, None]
        residual = clipped % 256
        for t in np.flatnonzero(residual):
            r = int(residual[t])
            step = max(256 // r, 1)
            hist[t, np.arange(0, 256, step)[:r]] += 1
    scale = np.float32(255.0) / np.float32(area)
    luts = _round_u8(np.cumsum(hist, axis=1).astype(np.float32) * scale)
    luts = np.ascontiguousarray(luts.reshape(tiles_y, tiles_x, 256))
    out = np.empty(ch.shape, np.uint8)
    return _interpolate()(ch, luts, th, tw, tiles_y, tiles_x, out)


# ------------------------------------------------------------------ CIE Lab (luma_only)
_D65 = np.array([0.950456, 1.0, 1.088754])
_RGB2XYZ = np.array([[0.412453, 0.357580, 0.180423],
                     [0.212671, 0.715160, 0.072169],
                     [0.019334, 0.119193, 0.950227]])


_GAMMA = []
_TABLES = {}
#: entries of the cube-root and inverse-gamma tables (interpolated linearly between them)
TABLE_SIZE = 8192


def _table(name):
    """``(table, upper end)`` of ``cbrt`` on [0, 1.25] or ``1.055 x^(1/2.4) - 0.055`` on [0,
    1], sampled by C's functions (libm.py) at ``TABLE_SIZE + 1`` points."""
    if name not in _TABLES:
        top = 1.25 if name == "cbrt" else 1.0
        x = np.linspace(0.0, top, TABLE_SIZE + 1)
        if name == "cbrt":
            v = libm.unary("cbrt", x, np.float64)
        else:
            v = 1.055 * libm.binary("pow", x, np.full(x.shape, 1 / 2.4), np.float64) - 0.055
        _TABLES[name] = (v, top)
    return _TABLES[name]


def _srgb_lut():
    """sRGB -> linear of the 256 uint8 levels (C's ``pow``, see ``libm.py``)."""
    if not _GAMMA:
        x = np.arange(256, dtype=np.float64) / 255.0
        p = libm.binary("pow", (x + 0.055) / 1.055, np.full(256, 2.4), np.float64)
        _GAMMA.append(np.where(x <= 0.04045, x / 12.92, p))
    return _GAMMA[0]


def _build_lab(njit):
    @njit
    def lookup(tab, top, n, x):
        pos = min(max(x, 0.0), top) * (n / top)
        i = min(np.int64(pos), n - 1)
        return tab[i] + (tab[i + 1] - tab[i]) * (pos - i)

    @njit
    def to_u8(v):
        r = np.rint(v)
        return 0 if r < 0 else (255 if r > 255 else np.uint8(r))

    @njit
    def rgb_to_lab(rgb, gamma, m, d65, cbrt_tab, top, n, out):
        h, w, _ = rgb.shape
        f = np.empty(3)
        xyz = np.empty(3)
        for y in range(h):
            for x in range(w):
                c0, c1, c2 = gamma[rgb[y, x, 0]], gamma[rgb[y, x, 1]], gamma[rgb[y, x, 2]]
                for k in range(3):
                    t = (c0 * m[k, 0] + c1 * m[k, 1] + c2 * m[k, 2]) / d65[k]
                    xyz[k] = t
                    f[k] = lookup(cbrt_tab, top, n, t) if t > 0.008856 \
                        else 7.787 * t + 16.0 / 116.0
                lum = 116.0 * f[1] - 16.0 if xyz[1] > 0.008856 else 903.3 * xyz[1]
                out[y, x, 0] = to_u8(lum * 255.0 / 100.0)
                out[y, x, 1] = to_u8(500.0 * (f[0] - f[1]) + 128.0)
                out[y, x, 2] = to_u8(200.0 * (f[1] - f[2]) + 128.0)
        return out

    @njit
    def lab_to_rgb(lab, minv, d65, gamma_tab, top, n, out):
        h, w, _ = lab.shape
        xyz = np.empty(3)
        for y in range(h):
            for x in range(w):
                lum = np.float64(lab[y, x, 0]) * 100.0 / 255.0
                a = np.float64(lab[y, x, 1]) - 128.0
                b = np.float64(lab[y, x, 2]) - 128.0
                fy = (lum + 16.0) / 116.0
                if lum <= 8.0:
                    yy = lum / 903.3
                    fy = 7.787 * yy + 16.0 / 116.0
                else:
                    yy = fy * fy * fy
                fx, fz = fy + a / 500.0, fy - b / 200.0
                xyz[0] = (fx * fx * fx if fx > 0.206893 else (fx - 16.0 / 116.0) / 7.787) \
                    * d65[0]
                xyz[1] = yy * d65[1]
                xyz[2] = (fz * fz * fz if fz > 0.206893 else (fz - 16.0 / 116.0) / 7.787) \
                    * d65[2]
                for k in range(3):
                    v = xyz[0] * minv[k, 0] + xyz[1] * minv[k, 1] + xyz[2] * minv[k, 2]
                    v = min(max(v, 0.0), 1.0)
                    s = v * 12.92 if v <= 0.0031308 else lookup(gamma_tab, top, n, v)
                    out[y, x, k] = to_u8(s * 255.0)
        return out
    return rgb_to_lab, lab_to_rgb


_lab_kernels = compiled(_build_lab)


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """uint8 RGB ``(H, W, 3)`` -> 8-bit CIE Lab (D65, sRGB gamma; ``L * 255 / 100``, ``a +
    128``, ``b + 128``) in float64, rounded half to even: OpenCV's ``COLOR_RGB2Lab`` formula
    (OpenCV computes it with fixed-point tables, so single values may differ by one). The cube
    root comes from a table of C's ``cbrt`` interpolated linearly (:data:`TABLE_SIZE` intervals)."""
    tab, top = _table("cbrt")
    out = np.empty(rgb.shape, np.uint8)
    return _lab_kernels()[0](np.ascontiguousarray(rgb), _srgb_lut(), _RGB2XYZ, _D65, tab, top,
                             TABLE_SIZE, out)


_XYZ2RGB = np.linalg.inv(_RGB2XYZ)


def lab_to_rgb(lab: np.ndarray) -> np.ndarray:
    """The inverse of :func:`rgb_to_lab` (OpenCV's ``COLOR_Lab2RGB`` formula, float64; the
    inverse gamma from an interpolated table of C's ``pow``)."""
    tab, top = _table("gamma")
    out = np.empty(lab.shape, np.uint8)
    return _lab_kernels()[1](np.ascontiguousarray(lab), _XYZ2RGB, _D65, tab, top, TABLE_SIZE,
                             out)


def clahe(img, *, tiles_x: int, tiles_y: int, clip_limit: float, luma_only: bool = True):
    """``clahe`` of one ``(H, W)`` or ``(H, W, C)`` uint8 image (``C`` 1 or 3).

    Raises
    ------
    TypeError
        Not uint8.
    ValueError
        Tiles not positive, or a channel count other than 1 and 3.
    """
    img = _check_u8(img, "clahe")
    if tiles_x <= 0 or tiles_y <= 0:
        raise ValueError(f"clahe: tiles_x and tiles_y must be positive, got {tiles_x} and "
                         f"{tiles_y}")
    if img.ndim not in (2, 3):
        raise ValueError("clahe expects HW (grayscale) or HWC (color) input layout.")
    c = 1 if img.ndim == 2 else img.shape[2]
    if c not in (1, 3):
        raise ValueError(f"clahe supports 1 or 3 channels, got {c}")
    args = (int(tiles_x), int(tiles_y), float(clip_limit))
    if img.ndim == 2:
        return clahe_channel(img, *args)
    if c == 1:
        return clahe_channel(img[..., 0], *args)[..., None]
    if luma_only:
        lab = rgb_to_lab(img)
        lab[..., 0] = clahe_channel(np.ascontiguousarray(lab[..., 0]), *args)
        return lab_to_rgb(lab)
    out = np.empty_like(img)
    for k in range(3):
        out[..., k] = clahe_channel(img[..., k], *args)
    return out


def warm_up() -> None:
    """Compile (or load from numba's cache) the CLAHE and equalize loops."""
    clahe_channel(np.zeros((2, 2), np.uint8), 1, 1, 2.0)
    equalize(np.zeros((2, 2, 1), np.uint8))


def _frames(ctx):
    lay = ctx.in_metas[0].layout or ""
    return lay.startswith("F")


@register("equalize", "cpu")
@per_sample
def equalize_kernel(ctx, ins, a, i):
    """``equalize`` of sample ``i`` (every frame of a sequence alone)."""
    x = np.asarray(ins[0])
    if _frames(ctx):
        return np.stack([equalize(f) for f in x]) if len(x) else x.copy()
    return equalize(x)


@register("clahe", "cpu")
@per_sample
def clahe_kernel(ctx, ins, a, i):
    """``clahe`` of sample ``i``."""
    return clahe(ins[0], tiles_x=a["tiles_x"], tiles_y=a["tiles_y"],
                 clip_limit=a["clip_limit"], luma_only=a.get("luma_only", True))
