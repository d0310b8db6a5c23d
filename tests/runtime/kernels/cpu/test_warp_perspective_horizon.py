"""experimental.warp_perspective where an output pixel's (inverse-mapped) ``w`` is 0 or its
source point is far beyond int32: OpenCV's (DALI 2.4's) INT_MIN indices, saturating casts and
closed-form border indices (no crash, no hang, no read of pixel (0, 0))."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.warp_perspective import warp_perspective
from runtime.kernels.cpu.warp_perspective_jit import helpers

INTERPS = ("nn", "linear", "cubic")
ZERO_W = [[1, 0, 0], [0, 1, 0], [0, 0, 0]]          # w == 0 at every pixel


def _img(h, w, c, dtype):
    return (np.arange(h * w * c) % 251).astype(dtype).reshape(h, w, c)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32])
@pytest.mark.parametrize("interp", INTERPS)
def test_zero_w_everywhere_is_all_fill(dtype, interp):
    if dtype == np.int16 and interp != "cubic":
        pytest.skip("int16 takes OpenCV's classic warp: W ? 1 / W : 0 reads (0, 0)")
    for c in (1, 3):
        out = warp_perspective(_img(16, 16, c, dtype), ZERO_W, interp=interp, fill_value=7)
        np.testing.assert_array_equal(out, np.full((16, 16, c), 7, dtype))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_horizon_through_the_image_nn(dtype):
    """``w = 8 - x`` (pixel centers): columns 0..7 sample ``(x, y) / (8 - x)``, rounded half
    to even; column 8 (``w == 0``) and those right of it (negative ``w``: points left of /
    above the image) take the fill."""
    src = _img(16, 16, 3, dtype)
    m = np.array([[1, 0, 0], [0, 1, 0], [-1, 0, 8]], np.float32)
    out = warp_perspective(src, m, interp="nn", fill_value=5, pixel_origin="center")
    np.testing.assert_array_equal(out[:, 8:], np.full((16, 8, 3), 5, dtype))
    for x in range(8):
        wv = np.float32(8 - x)
        for y in range(16):
            sx = int(np.rint(np.float32(x) / wv))
            sy = int(np.rint(np.float32(y) / wv))
            want = src[sy, sx] if sx < 16 and sy < 16 else np.full(3, 5, dtype)
            np.testing.assert_array_equal(out[y, x], want, err_msg=f"{x} {y}")


def _loop_border(p, n, mode):
    """OpenCV's borderInterpolate loop, literally (moderate ``p`` only)"""
    if 0 <= p < n:
        return p
    if mode == 1:
        return 0 if p < 0 else n - 1
    if mode == 4:
        if p < 0:
            p -= int((p - n + 1) / n) * n
        return p % n if p >= n else p
    if n == 1:
        return 0
    delta = 1 if mode == 3 else 0
    while p < 0 or p >= n:
        p = -p - 1 + delta if p < 0 else n - 1 - (p - n) - delta
    return p


def test_border_index_closed_form_equals_the_loop():
    border_index = helpers()[0]
    for n, mode in itertools.product(range(1, 8), (1, 2, 3, 4)):
        for p in range(-60, 60):
            assert border_index(p, n, mode) == _loop_border(p, n, mode), (p, n, mode)
    # far away: no loop (DALI's reflect steps one period at a time; reflect_101 never ends
    # for INT_MIN); wrap as OpenCV's int32 arithmetic (checked against DALI below)
    for mode in (2, 3, 4):
        for p in (-2 ** 31, 2 ** 31 - 1, -10 ** 9, 10 ** 9):
            assert 0 <= border_index(p, 15, mode) < 15
    assert border_index(-2 ** 31, 15, 4) == 8 and border_index(-2 ** 31, 16, 4) == 0


def test_cubic_far_points_clamp():
    """cubic source points are clamped to ``[-max(n, 16), 2 max(n, 16)]`` per axis (DALI 2.4
    measured): with ``wrap`` a point at x = 100 on a 15-wide image samples x = 32 mod 15."""
    src = (1 + np.arange(15 * 15)).reshape(15, 15, 1).astype(np.float32)
    for sx, want_x in ((100.0, 2), (20.0, 5), (-100.0, 14), (np.inf, 2), (np.nan, 14)):
        m = np.array([[0, 0, sx], [0, 0, 5], [0, 0, 1]], np.float32)
        out = warp_perspective(src, m, size=(1, 1), interp="cubic", border_mode="wrap",
                               pixel_origin="center")
        assert out[0, 0, 0] == src[5, want_x, 0], sx


def _run(mod, img, M, **kw):
    try:
        out = mod.experimental.warp_perspective(mod.Batch([img], layout="HWC"), **kw)
        return np.asarray(out.select(0))
    except Exception as e:      # noqa: BLE001 - the outcome compared
        return type(e).__name__


MATS = {"zero_w": ZERO_W, "col0": [[1, 0, 0], [0, 1, 0], [1, 0, -0.5]],
        "numzero": [[0, 0, 0], [0, 0, 0], [1, 0, -0.5]]}


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
def test_zero_w_matches_dali(dtype):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    from nvidia.dali import types
    codes = {"nn": types.INTERP_NN, "linear": types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC}
    rng = np.random.default_rng(3)
    # (reflect / reflect_101 left out: DALI steps through INT_MIN one period at a time or
    # never ends; float32 linear / cubic: last-ulp differences of the points, see
    # docs/semantics.md)
    for c, (name, M), inv, interp, border in itertools.product(
            (1, 3), MATS.items(), (True, False), INTERPS, ("constant", "replicate", "wrap")):
        if interp != "nn" and (dtype == "float32" or name == "col0"):
            continue        # (col0's finite points: 1-off cubic pixels, see above)
        img = rng.integers(0, 250, (16, 16, c)).astype(dtype)
        kw = dict(matrix=np.array(M, np.float32), inverse_map=inv, border_mode=border)
        if border == "constant":
            kw["fill_value"] = 7
        want = _run(dali, img, M, interp_type=codes[interp], **kw)
        got = _run(ndd, img, M, interp_type=interp, **kw)
        np.testing.assert_array_equal(got, want, err_msg=f"{c} {name} {inv} {interp} {border}")


@pytest.mark.oracle
@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "wrap"])
def test_far_points_match_dali(interp, border):
    """one-pixel outputs whose source point is ``(b, d) / g``: infinite, NaN and beyond int32
    (``reflect``: DALI's loop takes ~0.1 s a pixel on INT_MIN; ``reflect_101`` of INT_MIN
    never ends in DALI, so it is left out)"""
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    from nvidia.dali import types
    code = {"nn": types.INTERP_NN, "linear": types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC}
    pts = [(1, 1, 0), (-1, -1, 0), (0, 0, 0), (1, -1, 0), (0, 1, 0), (3e9, 5, 1), (-3e9, 5, 1),
           (5, 3e9, 1), (1e5, 5, 1), (-1e5, 5, 1), (3e4, 5, 1), (-4e4, 5, 1), (7e7, 5, 1),
           (2e9, 5, 1), (-2e9, 5, 1), (40, 5, 1), (-20, 5, 1), (np.inf, 5, 1), (-np.inf, 5, 1),
           (np.nan, 5, 1), (5.3, 4.7, 1)]
    for dtype in ("uint8",) if interp == "cubic" else ("uint8", "int16"):
        # (int16 cubic: DALI's classic cubic reads outside the image there, or crashes)
        img = (1 + np.arange(225)).reshape(15, 15, 1).astype(dtype)
        mats = [np.array([[0, 0, b], [0, 0, d], [0, 0, g]], np.float32) for b, d, g in pts]
        kw = dict(size=[1, 1], pixel_origin="center", border_mode=border)
        if border == "constant":
            kw["fill_value"] = 0
        want = dali.experimental.warp_perspective(dali.Batch([img] * len(mats), layout="HWC"),
                                                  dali.Batch(mats), interp_type=code[interp],
                                                  **kw)
        for i, m in enumerate(mats):
            got = _run(ndd, img, None, matrix=m, interp_type=interp, **kw)
            np.testing.assert_array_equal(got, np.asarray(want.select(i)),
                                          err_msg=f"{dtype} {pts[i]}")
