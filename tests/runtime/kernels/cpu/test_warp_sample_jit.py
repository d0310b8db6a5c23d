"""The compiled sampler of warp_affine / rotate / sphere / water equals the numpy gathers it
replaces, bit for bit (every supported type, nn / linear, clamped or filled borders, points
outside, half-pixel ties), and leaves the other cases to numpy."""
from __future__ import annotations

import numpy as np
import pytest

import runtime.kernels.cpu.warp as warp

RNG = np.random.default_rng(21)


def _both(monkeypatch, *args, **kw):
    fast = warp.sample_points(*args, **kw)
    with monkeypatch.context() as m:
        m.setattr(warp, "_compiled_sample", lambda *a: None)
        slow = warp.sample_points(*args, **kw)
    return fast, slow


def _image(h, w, c, dtype):
    if np.dtype(dtype) == np.float32:
        return (RNG.standard_normal((h, w, c)) * 300).astype(np.float32)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -2 ** 20), min(int(info.max), 2 ** 20)
    return RNG.integers(lo, hi + 1, (h, w, c)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.int32, np.float32])
@pytest.mark.parametrize("interp", ["nn", "linear"])
@pytest.mark.parametrize("fill", [None, 300.7, -2.5, 0.0])
def test_compiled_equals_numpy(monkeypatch, dtype, interp, fill):
    for h, w, c in ((17, 23, 3), (1, 1, 1), (5, 40, 4), (9, 2, 1)):
        img = _image(h, w, c, dtype)
        sx = RNG.uniform(-5, w + 5, (19, 27)).astype(np.float32)
        sy = RNG.uniform(-5, h + 5, (19, 27)).astype(np.float32)
        for pts in ((sx, sy), ((np.round(sx * 2) / 2).astype(np.float32),
                               (np.round(sy * 2) / 2).astype(np.float32))):
            fast, slow = _both(monkeypatch, img, *pts, interp=interp, fill_value=fill)
            assert fast.dtype == slow.dtype and fast.shape == slow.shape
            np.testing.assert_array_equal(fast, slow)
            fast, slow = _both(monkeypatch, img[:, :, 0], *pts, interp=interp, fill_value=fill)
            np.testing.assert_array_equal(fast, slow)


def test_other_cases_take_the_numpy_path(monkeypatch):
    img = _image(6, 7, 3, np.uint8)
    sx = np.full((4, 4), np.nan, np.float32)
    sy = np.zeros((4, 4), np.float32)
    fast, slow = _both(monkeypatch, img, sx, sy, interp="linear", fill_value=5.0)
    np.testing.assert_array_equal(fast, slow)
    assert warp._compiled_sample(img, sx, sy, "linear", 5.0, np.uint8) is None
    ok = np.zeros((4, 4), np.float32)
    assert warp._compiled_sample(img, ok, ok, "linear", None, np.float32) is None
    assert warp._compiled_sample(img.astype(np.float64), ok, ok, "nn", None, np.float64) is None


def test_compiled_source_points_equal_numpy():
    from runtime.kernels.params.warp import rotate_matrix
    rng = np.random.default_rng(4)
    for t in range(60):
        m = (rng.standard_normal((2, 3)) * rng.choice([0.01, 1.0, 100.0])).astype(np.float32)
        if t % 3 == 0:
            m = np.asarray(rotate_matrix(float(rng.uniform(-180, 180)), (37, 53), (59, 65)),
                           np.float32)
        out_hw = (int(rng.integers(0, 90)), int(rng.integers(0, 700)))
        for a, b in zip(warp._source_points(m, out_hw), warp.numpy_source_points(m, out_hw)):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.int32, np.float32])
@pytest.mark.parametrize("fill", [None, 300.7, -2.5])
def test_row_wise_nearest_equals_numpy(dtype, fill):
    # warp_image's nn path (points computed four rows at a time inside the compiled loop)
    # against numpy's point walk and gathers: rotations, random matrices, half-pixel
    # shifts, 1..5 channels, outputs wider than a walk block, row counts not a multiple of 4
    from runtime.kernels.params.warp import rotate_matrix
    for k in range(24):
        c = (1, 2, 3, 4, 5)[k % 5]
        h, w = int(RNG.integers(1, 30)), int(RNG.integers(1, 30))
        oh, ow = int(RNG.integers(1, 23)), int(RNG.integers(1, 600))
        img = _image(h, w, c, dtype)
        if k % 3 == 0:
            m = rotate_matrix(float(RNG.uniform(-360, 360)), (h, w), (oh, ow))
        elif k % 3 == 1:
            m = RNG.standard_normal((2, 3)) * 2 + [[0, 0, w / 2], [0, 0, h / 2]]
        else:
            m = np.array([[0.5, 0, RNG.integers(-9, 9) + 0.5], [0, 1.5, -0.5]])
        for im in (img, img[:, :, 0]):
            fast = warp.warp_image(im, m, (oh, ow), interp="nn", fill_value=fill)
            sx, sy = warp.numpy_source_points(np.asarray(m, np.float32), (oh, ow))
            f = None if fill is None else warp.fill_in_type(fill, im.dtype)
            slow = warp._gather(im, warp._index(sy, h), warp._index(sx, w), f)
            assert fast.dtype == slow.dtype and fast.shape == slow.shape
            np.testing.assert_array_equal(fast, slow)


def test_row_wise_nearest_leaves_unbounded_matrices_to_the_point_arrays():
    img = _image(6, 7, 3, np.uint8)
    assert warp._compiled_nearest(img, [[1e38, 0, 0], [0, 1, 0]], (4, 4), None, None) is None
    assert warp._compiled_nearest(img, [[np.nan, 0, 0], [0, 1, 0]], (4, 4), None, None) is None
    assert warp._compiled_nearest(img.astype(np.float64), np.eye(2, 3), (4, 4), None,
                                  None) is None
    assert warp._compiled_nearest(img, np.eye(2, 3), (4, 4), None, None) is not None
