"""8-bit CIE Lab <-> RGB for ``clahe``'s ``luma_only`` (:mod:`.color_hist`).

The conversions follow the formula of OpenCV's ``COLOR_RGB2Lab`` / ``COLOR_Lab2RGB`` (D65,
sRGB gamma; 8-bit Lab is ``L * 255 / 100``, ``a + 128``, ``b + 128``) in float64, rounded half
to even. OpenCV computes the 8-bit conversions with fixed-point tables, so single values may
differ by one level (docs/semantics.md). Cube roots and the inverse gamma come from tables of
C's functions (``libm.py``) interpolated linearly (:data:`TABLE_SIZE` intervals), so results do
not depend on the CPU.

Each pixel is one pass of scalar code: the nine products ``linear(v) * M[k, j]`` of the
forward matrix are tables over the 256 levels (the same float64 products, looked up instead
of multiplied), and so are ``a / 500`` and ``b / 200`` of the inverse.
"""
from __future__ import annotations

import numpy as np

from . import libm
from .jit import compiled

__all__ = ["rgb_to_lab", "lab_to_rgb", "TABLE_SIZE"]

_D65 = np.array([0.950456, 1.0, 1.088754])
_RGB2XYZ = np.array([[0.412453, 0.357580, 0.180423],
                     [0.212671, 0.715160, 0.072169],
                     [0.019334, 0.119193, 0.950227]])
_XYZ2RGB = np.linalg.inv(_RGB2XYZ)

_CACHE = {}
#: entries of the cube-root and inverse-gamma tables (interpolated linearly between them)
TABLE_SIZE = 8192


def _table(name):
    """``(table, upper end)`` of ``cbrt`` on [0, 1.25] or ``1.055 x^(1/2.4) - 0.055`` on [0,
    1], sampled by C's functions (libm.py) at ``TABLE_SIZE + 1`` points."""
    if name not in _CACHE:
        top = 1.25 if name == "cbrt" else 1.0
        x = np.linspace(0.0, top, TABLE_SIZE + 1)
        if name == "cbrt":
            v = libm.unary("cbrt", x, np.float64)
        else:
            v = 1.055 * libm.binary("pow", x, np.full(x.shape, 1 / 2.4), np.float64) - 0.055
        _CACHE[name] = (v, top)
    return _CACHE[name]


def _products():
    """``(3, 3, 256)`` float64: ``linear(v) * M[k, j]`` for the sRGB -> linear value of each
    uint8 level ``v`` (C's ``pow``) and the RGB -> XYZ matrix ``M``."""
    if "products" not in _CACHE:
        x = np.arange(256, dtype=np.float64) / 255.0
        p = libm.binary("pow", (x + 0.055) / 1.055, np.full(256, 2.4), np.float64)
        lin = np.where(x <= 0.04045, x / 12.92, p)
        _CACHE["products"] = np.ascontiguousarray(lin[None, None, :] * _RGB2XYZ[:, :, None])
    return _CACHE["products"]


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
    def f_of(t, cbrt_tab, top, n):
        # both sides computed (the table index is clamped): a select, not a branch, so the
        # pixel loop vectorises
        cube = lookup(cbrt_tab, top, n, t)
        line = 7.787 * t + 16.0 / 116.0
        return cube if t > 0.008856 else line

    @njit
    def rgb_to_lab(rgb, prod, d65, cbrt_tab, top, n, out):
        # rgb, out: flat interleaved uint8 (3 per pixel)
        p0, p1, p2 = prod[0], prod[1], prod[2]
        for q in range(rgb.shape[0] // 3):
            r, g, b = rgb[3 * q], rgb[3 * q + 1], rgb[3 * q + 2]
            tx = (p0[0, r] + p0[1, g] + p0[2, b]) / d65[0]
            ty = (p1[0, r] + p1[1, g] + p1[2, b]) / d65[1]
            tz = (p2[0, r] + p2[1, g] + p2[2, b]) / d65[2]
            fx = f_of(tx, cbrt_tab, top, n)
            fy = f_of(ty, cbrt_tab, top, n)
            fz = f_of(tz, cbrt_tab, top, n)
            lum_c = 116.0 * fy - 16.0
            lum_l = 903.3 * ty
            lum = lum_c if ty > 0.008856 else lum_l
            out[3 * q] = to_u8(lum * 255.0 / 100.0)
            out[3 * q + 1] = to_u8(500.0 * (fx - fy) + 128.0)
            out[3 * q + 2] = to_u8(200.0 * (fy - fz) + 128.0)
        return out

    @njit
    def inv_f(f):
        cube = f * f * f
        line = (f - 16.0 / 116.0) / 7.787
        return cube if f > 0.206893 else line

    @njit
    def gamma(v, gamma_tab, top, n):
        v = min(max(v, 0.0), 1.0)
        curve = lookup(gamma_tab, top, n, v)
        line = v * 12.92
        return to_u8((line if v <= 0.0031308 else curve) * 255.0)

    @njit
    def lab_to_rgb(lab, minv, d65, gamma_tab, top, n, out):
        # per-level tables of L (fy, Y) and of a / 500, b / 200
        fys = np.empty(256)
        yys = np.empty(256)
        a5 = np.empty(256)
        b2 = np.empty(256)
        for v in range(256):
            lum = np.float64(v) * 100.0 / 255.0
            fy = (lum + 16.0) / 116.0
            if lum <= 8.0:
                yy = lum / 903.3
                fy = 7.787 * yy + 16.0 / 116.0
            else:
                yy = fy * fy * fy
            fys[v], yys[v] = fy, yy
            a5[v] = (np.float64(v) - 128.0) / 500.0
            b2[v] = (np.float64(v) - 128.0) / 200.0
        m00, m01, m02 = minv[0, 0], minv[0, 1], minv[0, 2]
        m10, m11, m12 = minv[1, 0], minv[1, 1], minv[1, 2]
        m20, m21, m22 = minv[2, 0], minv[2, 1], minv[2, 2]
        for q in range(lab.shape[0] // 3):
            li = lab[3 * q]
            fy = fys[li]
            x0 = inv_f(fy + a5[lab[3 * q + 1]]) * d65[0]
            x1 = yys[li] * d65[1]
            x2 = inv_f(fy - b2[lab[3 * q + 2]]) * d65[2]
            out[3 * q] = gamma(x0 * m00 + x1 * m01 + x2 * m02, gamma_tab, top, n)
            out[3 * q + 1] = gamma(x0 * m10 + x1 * m11 + x2 * m12, gamma_tab, top, n)
            out[3 * q + 2] = gamma(x0 * m20 + x1 * m21 + x2 * m22, gamma_tab, top, n)
        return out
    return rgb_to_lab, lab_to_rgb


_lab_kernels = compiled(_build_lab)


def rgb_to_lab(rgb: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """uint8 RGB ``(..., 3)`` -> 8-bit CIE Lab (see the module docstring), into ``out`` when
    given (uint8, same shape, C-contiguous). Returns the Lab array."""
    rgb = np.ascontiguousarray(rgb)
    out = np.empty(rgb.shape, np.uint8) if out is None else out
    tab, top = _table("cbrt")
    _lab_kernels()[0](rgb.reshape(-1), _products(), _D65, tab, top, TABLE_SIZE,
                      out.reshape(-1))
    return out


def lab_to_rgb(lab: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The inverse of :func:`rgb_to_lab` (OpenCV's ``COLOR_Lab2RGB`` formula, float64), into
    ``out`` when given. Returns the RGB array."""
    lab = np.ascontiguousarray(lab)
    out = np.empty(lab.shape, np.uint8) if out is None else out
    tab, top = _table("gamma")
    _lab_kernels()[1](lab.reshape(-1), _XYZ2RGB, _D65, tab, top, TABLE_SIZE, out.reshape(-1))
    return out
