"""The row-wise geometry loops equal what they replaced, bit for bit: warp_perspective's row
kernels (nearest, float32-point linear) against the per-pixel kernels of
``warp_perspective_jit``; the warp sampler's inner / border split against the numpy gathers on
rows wholly inside, partly inside and outside, every channel count (1-5); sphere's compiled
points against numpy; debayer on wide images and extreme values against the reference of
``test_debayer``."""
from __future__ import annotations

import numpy as np
import pytest

import runtime.kernels.cpu.warp as warp
from runtime.kernels.cpu.debayer import debayer
from runtime.kernels.cpu.sphere import numpy_sphere_points, sphere_points
from runtime.kernels.cpu.warp_perspective import BORDERS
from runtime.kernels.cpu.warp_perspective_jit import block_width, kernels
from runtime.kernels.cpu.warp_perspective_rows import row_kernels

RNG = np.random.default_rng(33)


def _image(h, w, c, dtype):
    if np.dtype(dtype) == np.float32:
        return (RNG.standard_normal((h, w, c)) * 100).astype(np.float32)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, (h, w, c)).astype(dtype)


def _fill(values, c, dtype):
    """per-channel fill values as the kernels take them (float64, in the type's range)"""
    v = np.resize(np.asarray(values, np.float64), c)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        v = np.clip(np.rint(v), info.min, info.max)
    return v


def _debayer_reference(img, bp, gray=False):
    """OpenCV's bilinear demosaicing with whole-image numpy slices: the neighbour sums of every
    inner pixel, the site formulas chosen by row / column parity, the edge rule."""
    p = img.astype(np.int64)
    h, w = p.shape
    c = p[1:-1, 1:-1]
    hs = p[1:-1, :-2] + p[1:-1, 2:]
    vs = p[:-2, 1:-1] + p[2:, 1:-1]
    ds = p[:-2, :-2] + p[:-2, 2:] + p[2:, :-2] + p[2:, 2:]
    ys, xs = np.mgrid[1:h - 1, 1:w - 1]
    blue_row = (ys % 2) == (1 + bp[0]) % 2
    site = ((xs % 2) == (1 + bp[1]) % 2) == blue_row
    kc, kd = np.where(blue_row, 1868, 4899), np.where(blue_row, 4899, 1868)
    if gray:
        v = np.where(site, ds * kd + (hs + vs) * 9617 + c * 4 * kc,
                     hs * 2 * kc + vs * 2 * kd + c * 4 * 9617)
        inner = ((v + 32768) >> 16)[..., None]
    else:
        own = np.where(site, c, (hs + 1) >> 1)
        other = np.where(site, (ds + 2) >> 2, (vs + 1) >> 1)
        g = np.where(site, (hs + vs + 2) >> 2, c)
        r = np.where(blue_row, other, own)
        b = np.where(blue_row, own, other)
        inner = np.stack([r, g, b], -1)
    out = np.zeros((h, w, inner.shape[-1]), np.int64)
    out[1:-1, 1:-1] = inner
    out[1:-1, 0], out[1:-1, -1] = out[1:-1, 1], out[1:-1, -2]
    out[0], out[-1] = out[1], out[-2]
    return out.astype(img.dtype)


def _matrix(strength):
    jitter = RNG.standard_normal((3, 3)) * np.array([[.15, .15, 3], [.15, .15, 3],
                                                      [.002, .002, .03]]) * strength
    return np.eye(3) + jitter


SHAPES = ((1, 1), (3, 5), (17, 29), (40, 9))


@pytest.mark.parametrize("mode", list(BORDERS))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_perspective_linear_rows_equal_the_per_pixel_kernel(mode, dtype):
    floating = kernels()[1]
    linear = row_kernels()[0]
    is_int = np.dtype(dtype).kind in "iu"
    lo, hi = (float(np.iinfo(dtype).min), float(np.iinfo(dtype).max)) if is_int else (0., 0.)
    for k, (h, w) in enumerate(SHAPES):
        for c in (1, 2, 3, 4):
            src = _image(h, w, c, dtype)
            m = _matrix([0.0, 0.4, 1.0, 3.0][k]).reshape(-1).astype(np.float32)
            cval = _fill([5.5] if c != 2 else [3.0, 250.0], c, dtype)
            oh, ow = h + 3, w + 2
            fast = linear(src, m, np.empty((oh, ow, c), dtype), BORDERS[mode], cval, is_int,
                          lo, hi)
            slow = floating(src, m, np.empty((oh, ow, c), dtype), 1, BORDERS[mode], cval,
                            is_int, lo, hi)
            np.testing.assert_array_equal(fast.view(np.uint8), slow.view(np.uint8))


@pytest.mark.parametrize("mode", list(BORDERS))
def test_perspective_nearest_rows_equal_the_per_pixel_kernel(mode):
    nearest_pixels = kernels()[2]
    nearest = row_kernels()[1]
    for k, (h, w) in enumerate(SHAPES + ((30, 150),)):
        for dtype, c in ((np.uint8, 3), (np.int16, 1), (np.uint16, 4), (np.float32, 2)):
            src = _image(h, w, c, dtype)
            m = _matrix([0.0, 0.4, 1.0, 3.0, 0.2][k]).reshape(-1)
            fill = _fill([7.0], c, dtype).astype(dtype)
            oh, ow = h + 1, w + 70
            bw = block_width(oh, ow)
            m32 = m.astype(np.float32)
            for new in (False, True):   # OpenCV's classic and newer source points
                fast = nearest(src, m, np.empty((oh, ow, c), dtype), BORDERS[mode], fill, bw,
                               m32, new)
                slow = nearest_pixels(src, m, np.empty((oh, ow, c), dtype), BORDERS[mode],
                                      fill, bw, m32, new)
                np.testing.assert_array_equal(fast.view(np.uint8), slow.view(np.uint8))


def _both(monkeypatch, *args, **kw):
    fast = warp.sample_points(*args, **kw)
    with monkeypatch.context() as m:
        m.setattr(warp, "_compiled_sample", lambda *a: None)
        slow = warp.sample_points(*args, **kw)
    return fast, slow


@pytest.mark.parametrize("interp", ["nn", "linear"])
@pytest.mark.parametrize("fill", [None, 9.0])
def test_sampler_inner_and_border_split(monkeypatch, interp, fill):
    for dtype in (np.uint8, np.int16, np.float32):
        for c in (1, 2, 3, 4, 5):
            img = _image(11, 13, c, dtype)
            sx = RNG.uniform(0.6, 12.4, (6, 21)).astype(np.float32)    # rows all inside
            sy = RNG.uniform(0.6, 10.4, (6, 21)).astype(np.float32)
            sx[2] = RNG.uniform(-3, 16, 21)                             # partly inside
            sx[3] = RNG.uniform(20, 30, 21)                             # all outside
            sy[4, ::2] = -1.5
            fast, slow = _both(monkeypatch, img, sx, sy, interp=interp, fill_value=fill)
            np.testing.assert_array_equal(fast, slow)


def test_sphere_points_compiled_equal_numpy():
    for h, w in ((1, 1), (1, 2), (2, 1), (3, 200), (64, 1), (33, 17), (120, 161)):
        for a, b in zip(sphere_points(h, w), numpy_sphere_points(h, w)):
            assert a.shape == b.shape == (h, w)
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("bp", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_debayer_wide_rows_and_extremes(bp):
    for dtype, hi in ((np.uint8, 255), (np.uint16, 65535)):
        img = RNG.integers(0, hi + 1, (10, 66)).astype(dtype)
        img[3:6, 10:30] = hi            # saturated patches: the largest sums
        np.testing.assert_array_equal(debayer(img, blue_position=bp),
                                      _debayer_reference(img, bp))
        np.testing.assert_array_equal(debayer(img, algorithm="gray_ocv", blue_position=bp),
                                      _debayer_reference(img, bp, gray=True))
