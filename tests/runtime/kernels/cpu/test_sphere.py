"""Tests for runtime.kernels.cpu.sphere."""
import math

import numpy as np
import pytest

from runtime.kernels.cpu.sphere import sphere

RNG = np.random.default_rng(8)


def _reference_nn(img, fill):
    """Independent: per pixel in double precision, away from rounding ties."""
    h, w = img.shape[:2]
    cx, cy, d = w / 2, h / 2, max(w // 2, h // 2)
    out = np.empty_like(img)
    for y in range(h):
        for x in range(w):
            tx, ty = x + 0.5 - cx, y + 0.5 - cy
            r = math.hypot(tx, ty) / d
            sx, sy = cx + tx * r, cy + ty * r
            if 0 <= sx < w and 0 <= sy < h:
                out[y, x] = img[int(sy), int(sx)]
            else:
                out[y, x] = fill
    return out


@pytest.mark.parametrize("hw", [(9, 12), (12, 9), (10, 10), (15, 8), (11, 13), (40, 57)])
def test_sphere_nn_matches_the_radial_map(hw):
    img = RNG.integers(0, 256, size=(*hw, 3), dtype=np.uint8)
    np.testing.assert_array_equal(sphere(img, fill_value=9), _reference_nn(img, 9))


def test_sphere_center_is_magnified_and_corners_filled():
    img = np.arange(20 * 20, dtype=np.float32).reshape(20, 20)
    out = sphere(img, fill_value=-1)
    assert out[0, 0] == -1 and out[-1, -1] == -1            # corners map outside
    assert out[10, 10] == img[10, 10]                        # the center stays
    # along the middle row the source moves slowly near the center: repeated pixels there
    row = out[10]
    assert len(set(row[8:12].tolist())) < 4 and len(set(row[:4].tolist())) == 4


def test_sphere_linear_is_bounded_by_neighbours_and_mask():
    img = RNG.random((16, 16, 1)).astype(np.float32)
    out = sphere(img, interp="linear", fill_value=0.5)
    assert out.dtype == np.float32 and out.shape == img.shape
    assert out.min() >= min(img.min(), 0.5) and out.max() <= max(img.max(), 0.5)
    np.testing.assert_array_equal(sphere(img, mask=0), img)
    with pytest.raises(ValueError, match="interp_type"):
        sphere(img, interp="cubic")


def test_sphere_fill_rounds_and_saturates():
    """Unlike DALI (which truncates and wraps: 300 -> 44), the fill converts like ``cast``."""
    img = np.zeros((20, 20, 1), np.uint8)
    for fill, want in ((7.6, 8), (300.0, 255), (-3.0, 0)):
        assert sphere(img + 1, fill_value=fill)[0, 0, 0] == want
    assert sphere(img.astype(np.float32), fill_value=2.25)[0, 0, 0] == np.float32(2.25)
