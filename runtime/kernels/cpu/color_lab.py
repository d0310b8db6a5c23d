"""8-bit CIE Lab <-> RGB for ``clahe``'s ``luma_only`` (:mod:`.color_hist`), as DALI 2.4's CPU
operator computes them: OpenCV's 8-bit ``COLOR_RGB2Lab`` / ``COLOR_Lab2RGB``, fixed-point
integer algorithms. :func:`rgb_to_lab` / :func:`lab_to_rgb` call OpenCV (:mod:`.ocv`; its
8-bit Lab code is integer arithmetic compiled for the wheel's baseline, not dispatched per
CPU; it releases the GIL). :func:`rgb_to_lab_integer` / :func:`lab_to_rgb_integer` are ndd's
own statement of the same integer steps (compiled loops), equal to OpenCV on every one of the
2^24 inputs of each direction; they are the tests' independent reference. The steps:

Forward, per pixel: ``R, G, B = gamma[r], gamma[g], gamma[b]`` (:func:`tables`' ``gamma``:
``round(2040 * linear(v / 255))``), ``X = cbrt[d(C0 R + C1 G + C2 B, 12)]`` and likewise ``Y``,
``Z`` with the rows of the RGB -> XYZ matrix divided by the D65 white point, scaled by 4096 and
rounded (``d(v, s) = (v + 2^(s-1)) >> s``); ``cbrt`` is ``round(32768 f(i / 2040))`` with
``f`` the Lab cube root (linear below (6/29)^3); then ``L = d(296 Y - 1336934, 15)``, ``a =
d(500 (X - Y) + 128 * 32768, 15)``, ``b = d(200 (Y - Z) + 128 * 32768, 15)``, saturated.

Inverse, per pixel: from the ``L`` table ``(y, fy)`` (14-bit fixed point), ``a`` and ``b`` as
``fy + a'`` and ``fy - b'`` (``a' = ((5 a 53687 + 128) >> 13) - 4194``, ``b' = ((41943 b + 16)
>> 9) - 10484``), each through the ``f^-1`` table (cube, or the linear part), the XYZ ->
RGB matrix times the white point scaled by 4096 and rounded, ``d(., 14)``, clamped to 0..4095
and through the 4096-entry inverse gamma table (``round(255 gamma^-1(i / 4096))``).

The tables are built once in float32 / float64 with C's ``pow`` and ``cbrt`` (``libm.py``); all
per-pixel work is integer arithmetic, hence the same on every CPU.
"""
from __future__ import annotations

import threading

import numpy as np

from . import libm
from .jit import compiled
from .ocv import opencv

__all__ = ["rgb_to_lab", "lab_to_rgb", "rgb_to_lab_integer", "lab_to_rgb_integer", "tables"]

_F = np.float32
_D65 = np.array([0.950456, 1.0, 1.088754])
_RGB2XYZ = np.array([[0.412453, 0.357580, 0.180423],
                     [0.212671, 0.715160, 0.072169],
                     [0.019334, 0.119193, 0.950227]])
_XYZ2RGB = np.array([[3.240479, -1.53715, -0.498535],
                     [-0.969256, 1.875991, 0.041556],
                     [0.055648, -0.204043, 1.057311]])
_BASE = 1 << 14
_MIN_AB = -8145
_CACHE = {}
_LOCK = threading.Lock()
#: entries of the 32768 * cbrt table where OpenCV's value differs from the rounded cube root
_CBRT_FIXES = {49: -1}


def _pow(x, p):
    return libm.binary("pow", np.asarray(x, np.float64), np.full(np.shape(x), p), np.float64)


def _gamma(x32):
    """sRGB -> linear of float32 values, in float64, rounded to float32."""
    x = x32.astype(np.float64)
    lo = x / (323 / 25)
    hi = _pow((x + 11 / 200) / (1 + 11 / 200), 12 / 5)
    return np.where(x <= 809 / 20000, lo, hi).astype(_F)


def _inv_gamma(x32):
    """linear -> sRGB of float32 values, in float64, rounded to float32."""
    x = x32.astype(np.float64)
    lo = x * (323 / 25)
    hi = _pow(x, 1 / (12 / 5)) * (1 + 11 / 200) - 11 / 200
    return np.where(x <= 7827 / 2500000, lo, hi).astype(_F)


def _cbrt_table():
    """``round(32768 f(x))`` at ``x = i / 2040`` (float32), ``i < 3072``: ``f`` the cube root,
    or ``x 841 / 108 + 16 / 116`` (one rounding) below ``216 / 24389``."""
    x = (_F(1) / (_F(255) * _F(8))) * np.arange(256 * 3 // 2 * 8, dtype=_F)
    lthresh = _F(216) / _F(24389)
    line = (x.astype(np.float64) * np.float64(_F(841) / _F(108))
            + np.float64(_F(16) / _F(116))).astype(_F)
    cube = libm.unary("cbrt", x.astype(np.float64), np.float64)
    # the cube root's float64 value rounded straight to the table's integer; OpenCV's own
    # float32 cube root is an ulp off at a few entries whose product is a half: of those an
    # RGB value can reach, entry 49 is one lower (measured on all 2^24 colours)
    tab = np.where(x < lthresh, np.rint(_F(32768) * line), np.rint(32768.0 * cube)) \
        .astype(np.int64)
    for i, d in _CBRT_FIXES.items():
        tab[i] += d
    return tab


def _yf_table():
    """``(256, 2)``: for each 8-bit ``L``, ``y`` and ``fy`` in 14-bit fixed point (float32
    arithmetic as written, rounded half to even)."""
    out = np.empty((256, 2), np.int64)
    for i in range(256):
        if i <= 20:
            y = np.rint(_F(i * _BASE * 20 * 9) / _F(17 * 29 * 29 * 29))
            fy = np.rint(_F(_BASE) * (_F(16) / _F(116) + _F(i * 5) / _F(3 * 17 * 29)))
        else:
            f = _F(i * 100 * _BASE) / _F(255 * 116) + _F(16 * _BASE) / _F(116)
            fy = np.rint(f)
            y = np.rint(f * f * f / _F(_BASE * _BASE))
        out[i] = int(y), int(fy)
    return out


def _xz_table():
    """``f^-1`` of the 14-bit fixed-point values ``MIN_AB .. MIN_AB + 36863`` (C's integer
    division, toward zero)."""
    i = np.arange(_MIN_AB, _MIN_AB + _BASE * 9 // 4, dtype=np.int64)
    lin = np.trunc(i * 108 / 841).astype(np.int64) - (_BASE * 16 // 116 * 108 // 841)
    cube = (i * i // _BASE) * i // _BASE
    return np.where(i <= 3390, lin, cube)


def tables() -> dict:
    """The integer tables and coefficients of both directions (built once; thread-safe)."""
    if not _CACHE:
        with _LOCK:
            if not _CACHE:
                _CACHE.update(_build_tables())
    return _CACHE


def _build_tables() -> dict:
    t = {}
    v = np.arange(256, dtype=_F) / _F(255)
    # small integer types: the tables stay in the first cache levels
    t["gamma"] = np.rint(_F(255 * 8) * _gamma(v)).astype(np.int32)
    t["cbrt"] = _cbrt_table().astype(np.int32)
    t["fwd"] = np.rint(4096 * _RGB2XYZ / _D65[:, None]).astype(np.int64)
    t["inv"] = np.rint(4096 * _XYZ2RGB * _D65[None, :]).astype(np.int64)
    t["yf"] = _yf_table().astype(np.int32).reshape(-1)
    t["xz"] = _xz_table().astype(np.int32)
    g = (_F(1) / _F(4096)) * np.arange(4096, dtype=_F)
    t["inv_gamma"] = np.clip(np.rint(_F(255) * _inv_gamma(g)), 0, 255).astype(np.uint8)
    return t


def _build_lab(njit):
    @njit
    def sat(v):
        return 0 if v < 0 else (255 if v > 255 else v)

    @njit
    def rgb_to_lab(rgb, gamma, cbrt, c, out):
        # rgb, out: flat interleaved uint8 (3 per pixel)
        h12, h15 = 1 << 11, 1 << 14
        c00, c01, c02 = c[0, 0], c[0, 1], c[0, 2]
        c10, c11, c12 = c[1, 0], c[1, 1], c[1, 2]
        c20, c21, c22 = c[2, 0], c[2, 1], c[2, 2]
        for q in range(rgb.shape[0] // 3):
            r = np.int64(gamma[rgb[3 * q]])
            g = np.int64(gamma[rgb[3 * q + 1]])
            b = np.int64(gamma[rgb[3 * q + 2]])
            # indices are never negative: unsigned, so no wrap-around test per look-up
            fx = np.int64(cbrt[np.uint64((r * c00 + g * c01 + b * c02 + h12) >> 12)])
            fy = np.int64(cbrt[np.uint64((r * c10 + g * c11 + b * c12 + h12) >> 12)])
            fz = np.int64(cbrt[np.uint64((r * c20 + g * c21 + b * c22 + h12) >> 12)])
            out[3 * q] = sat((296 * fy - 1336934 + h15) >> 15)
            out[3 * q + 1] = sat((500 * (fx - fy) + (128 << 15) + h15) >> 15)
            out[3 * q + 2] = sat((200 * (fy - fz) + (128 << 15) + h15) >> 15)
        return out

    @njit
    def lab_to_rgb(lab, yf, xz, c, inv_gamma, out):
        h14 = 1 << 13
        c00, c01, c02 = c[0, 0], c[0, 1], c[0, 2]
        c10, c11, c12 = c[1, 0], c[1, 1], c[1, 2]
        c20, c21, c22 = c[2, 0], c[2, 1], c[2, 2]
        for q in range(lab.shape[0] // 3):
            li, ai, bi = np.int64(lab[3 * q]), np.int64(lab[3 * q + 1]), np.int64(lab[3 * q + 2])
            y, fy = np.int64(yf[2 * li]), np.int64(yf[2 * li + 1])
            adiv = ((5 * ai * 53687 + 128) >> 13) - 4194
            bdiv = ((bi * 41943 + 16) >> 9) - 10484
            # indices are never negative: unsigned, so no wrap-around test per look-up
            x = np.int64(xz[np.uint64(fy + adiv + 8145)])
            z = np.int64(xz[np.uint64(fy - bdiv + 8145)])
            r = min(max((c00 * x + c01 * y + c02 * z + h14) >> 14, 0), 4095)
            g = min(max((c10 * x + c11 * y + c12 * z + h14) >> 14, 0), 4095)
            b = min(max((c20 * x + c21 * y + c22 * z + h14) >> 14, 0), 4095)
            out[3 * q] = inv_gamma[np.uint64(r)]
            out[3 * q + 1] = inv_gamma[np.uint64(g)]
            out[3 * q + 2] = inv_gamma[np.uint64(b)]
        return out
    return rgb_to_lab, lab_to_rgb


_lab_kernels = compiled(_build_lab)


def _as_image(a: np.ndarray) -> np.ndarray:
    """``(..., 3)`` uint8 as a C-contiguous ``(N, M, 3)`` view for OpenCV."""
    a = np.ascontiguousarray(a, np.uint8)
    return a.reshape(-1, a.shape[-2] if a.ndim >= 2 else 1, 3)


def _convert(src: np.ndarray, out: np.ndarray | None, code_name: str) -> np.ndarray:
    src = np.ascontiguousarray(src, np.uint8)
    if src.shape[-1] != 3:
        raise ValueError(f"8-bit Lab conversions take 3 channels last, got shape {src.shape}")
    if out is None:
        out = np.empty(src.shape, np.uint8)
    if not src.size:
        return out
    cv = opencv()
    if out.flags.c_contiguous and out.dtype == np.uint8 and out.shape == src.shape:
        cv.cvtColor(_as_image(src), getattr(cv, code_name), dst=_as_image(out))
    else:
        out[...] = cv.cvtColor(_as_image(src), getattr(cv, code_name)).reshape(src.shape)
    return out


def rgb_to_lab(rgb: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """uint8 RGB ``(..., 3)`` -> 8-bit CIE Lab by OpenCV's ``COLOR_RGB2Lab``, into ``out`` when
    given (uint8, same shape, C-contiguous). Returns the Lab array."""
    return _convert(rgb, out, "COLOR_RGB2Lab")


def lab_to_rgb(lab: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """8-bit CIE Lab ``(..., 3)`` -> uint8 RGB by OpenCV's ``COLOR_Lab2RGB``, into ``out`` when
    given (uint8, same shape, C-contiguous). Returns the RGB array."""
    return _convert(lab, out, "COLOR_Lab2RGB")


def rgb_to_lab_integer(rgb: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """uint8 RGB ``(..., 3)`` -> 8-bit CIE Lab by ndd's own integer loop (see the module
    docstring), into ``out`` when given. Returns the Lab array."""
    rgb = np.ascontiguousarray(rgb)
    out = np.empty(rgb.shape, np.uint8) if out is None else out
    t = tables()
    _lab_kernels()[0](rgb.reshape(-1), t["gamma"], t["cbrt"], t["fwd"], out.reshape(-1))
    return out


def lab_to_rgb_integer(lab: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """8-bit CIE Lab ``(..., 3)`` -> uint8 RGB by ndd's own integer loop (see the module
    docstring), into ``out`` when given. Returns the RGB array."""
    lab = np.ascontiguousarray(lab)
    out = np.empty(lab.shape, np.uint8) if out is None else out
    t = tables()
    _lab_kernels()[1](lab.reshape(-1), t["yf"], t["xz"], t["inv"], t["inv_gamma"],
                      out.reshape(-1))
    return out
