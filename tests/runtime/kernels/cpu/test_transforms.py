"""Tests for runtime.kernels.cpu.transforms: the matrices checked by what they do to points
(independent numpy geometry), and the composition order."""
import math

import numpy as np
import pytest

from runtime.kernels.cpu.transforms import (compose, coord_transform, crop_transform, rotation,
                                            scaling, shear, translation)


def _apply(m, p):
    m = np.asarray(m, np.float64)
    return m[:, :-1] @ np.asarray(p, np.float64) + m[:, -1]


def test_matrices_move_points():
    np.testing.assert_allclose(_apply(translation([1.5, -2]), [3, 4]), [4.5, 2])
    np.testing.assert_allclose(_apply(scaling([2, 3], center=[1, 1]), [1, 1]), [1, 1])
    np.testing.assert_allclose(_apply(scaling([2, 3], center=[1, 1]), [2, 3]), [3, 7])
    assert scaling(2.0, ndim=3).shape == (3, 4)
    r = rotation(90.0)
    np.testing.assert_allclose(_apply(r, [1, 0]), [0, 1], atol=1e-7)
    rc = rotation(30.0, center=[10, 20])
    np.testing.assert_allclose(_apply(rc, [10, 20]), [10, 20], atol=1e-5)
    ang = math.radians(30)
    np.testing.assert_allclose(_apply(rc, [11, 20]), [10 + math.cos(ang), 20 + math.sin(ang)],
                               atol=1e-5)
    r3 = rotation(17.0, axis=[1, 2, 3])
    axis = np.array([1, 2, 3]) / math.sqrt(14)
    np.testing.assert_allclose(_apply(r3, axis), axis, atol=1e-6)       # the axis is fixed
    np.testing.assert_allclose(np.asarray(r3)[:, :3] @ np.asarray(r3)[:, :3].T, np.eye(3),
                               atol=1e-6)
    np.testing.assert_allclose(_apply(shear([0.5, 0.25]), [0, 2]), [1, 2])
    np.testing.assert_allclose(np.asarray(shear(angles=[30, 0]))[0, 1], math.tan(ang),
                               rtol=1e-6)
    c = crop_transform([10, 20], [110, 220], [0, 0], [1, 1])
    np.testing.assert_allclose(_apply(c, [10, 20]), [0, 0], atol=1e-6)
    np.testing.assert_allclose(_apply(c, [110, 220]), [1, 1], atol=1e-6)
    np.testing.assert_array_equal(crop_transform([110, 20], [10, 220], absolute=True), c)
    for m in (translation([1, 2]), rotation(10.0), crop_transform()):
        assert m.dtype == np.float32


def test_compose_order_and_errors():
    t, s = translation([1, 2]), scaling([2, 3])
    p = np.array([5.0, 7.0])
    np.testing.assert_allclose(_apply(compose(s, t), p), _apply(s, _apply(t, p)))
    np.testing.assert_allclose(_apply(compose(t, s), p), _apply(t, _apply(s, p)))
    with pytest.raises(ValueError, match="2D transform"):
        compose(translation([1, 2, 3]), t)
    with pytest.raises(ValueError, match="non-zero length"):
        rotation(10.0, axis=[0, 0, 0])
    with pytest.raises(ValueError, match="2 .2-D. or 6"):
        shear([1, 2, 3])


def test_coord_transform_against_numpy():
    rng = np.random.default_rng(3)
    pts = rng.normal(0, 10, (50, 3)).astype(np.float32)
    m = rng.normal(0, 1, (2, 3)).astype(np.float32)
    t = np.array([1.5, -2.0], np.float32)
    got = coord_transform(pts, M=m.ravel(), T=t)
    np.testing.assert_allclose(got, pts.astype(np.float64) @ m.T.astype(np.float64) + t,
                               rtol=1e-5, atol=1e-4)
    assert got.dtype == np.float32 and got.shape == (50, 2)
    np.testing.assert_array_equal(coord_transform(pts, MT=np.hstack([m, t[:, None]])), got)
    np.testing.assert_array_equal(coord_transform(pts[:, :2], M=2.0), pts[:, :2] * 2)
    np.testing.assert_array_equal(coord_transform(pts[:, :2], T=3.0), pts[:, :2] + 3)
    ints = coord_transform(np.array([[7, -3]], np.int32), M=[0.5, 0, 0, 0.5], dtype="int32")
    assert ints.tolist() == [[4, -2]]                   # 3.5 and -1.5 round half away from 0
    with pytest.raises(ValueError, match="Cannot form a matrix"):
        coord_transform(pts, M=[1, 2])
    with pytest.raises(ValueError, match="'T' has 3"):
        coord_transform(pts, M=m.ravel(), T=[1, 2, 3])
