"""Tests for runtime.kernels.cpu.warp and runtime.kernels.params.warp (warp_affine, rotate)."""
import math

import numpy as np
import pytest

from runtime.kernels.cpu.warp import warp_image, warp_sample
from runtime.kernels.params.warp import (affine_matrices, affine_matrix, invert_affine,
                                         output_size, rotate_matrix, rotate_output_size)

RNG = np.random.default_rng(11)
IMG = RNG.integers(0, 256, size=(9, 12, 3), dtype=np.uint8)
IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))


def _shift(img, dy, dx, fill=None):
    """Independent: out[y, x] = img[y + dy, x + dx] with clamped or filled borders."""
    h, w = img.shape[:2]
    out = np.empty_like(img)
    for y in range(h):
        for x in range(w):
            sy, sx = y + dy, x + dx
            if fill is not None and not (0 <= sy < h and 0 <= sx < w):
                out[y, x] = fill
            else:
                out[y, x] = img[min(max(sy, 0), h - 1), min(max(sx, 0), w - 1)]
    return out


@pytest.mark.parametrize("interp", ["nn", "linear"])
def test_identity_and_integer_shifts(interp):
    np.testing.assert_array_equal(warp_image(IMG, IDENTITY, (9, 12), interp=interp), IMG)
    for dy, dx in ((2, -3), (-1, 4), (0, 20)):
        m = ((1.0, 0.0, float(dx)), (0.0, 1.0, float(dy)))
        np.testing.assert_array_equal(warp_image(IMG, m, (9, 12), interp=interp),
                                      _shift(IMG, dy, dx))
        np.testing.assert_array_equal(
            warp_image(IMG, m, (9, 12), interp=interp, fill_value=7), _shift(IMG, dy, dx, 7))


def test_half_pixel_shift_averages_and_rounds_half_away():
    img = np.array([[0, 1, 0, 3, 0, 5]], np.uint8)
    m = ((1.0, 0.0, 0.5), (0.0, 1.0, 0.0))
    # out[x] = (img[x] + img[x + 1]) / 2, the last one clamped; .5 rounds up
    np.testing.assert_array_equal(warp_image(img, m, (1, 6)), [[1, 1, 2, 2, 3, 5]])
    f = img.astype(np.float32)
    np.testing.assert_array_equal(warp_image(f, m, (1, 6)), [[0.5, 0.5, 1.5, 1.5, 2.5, 5]])


def test_linear_matches_bilinear_formula_inside():
    img = RNG.random((10, 10)).astype(np.float32)
    m = ((0.8, 0.1, 1.2), (-0.2, 0.9, 2.1))
    out = warp_image(img, m, (4, 4))
    for y in range(4):
        for x in range(4):
            sx = 0.8 * (x + 0.5) + 0.1 * (y + 0.5) + 1.2 - 0.5
            sy = -0.2 * (x + 0.5) + 0.9 * (y + 0.5) + 2.1 - 0.5
            x0, y0 = math.floor(sx), math.floor(sy)
            ax, ay = sx - x0, sy - y0
            want = ((1 - ax) * (1 - ay) * img[y0, x0] + ax * (1 - ay) * img[y0, x0 + 1]
                    + (1 - ax) * ay * img[y0 + 1, x0] + ax * ay * img[y0 + 1, x0 + 1])
            assert out[y, x] == pytest.approx(want, abs=1e-5)


def test_far_outside_points_read_the_fill():
    out = warp_image(IMG, ((1.0, 0.0, -1e9), (0.0, 1.0, 1e9)), (3, 3), fill_value=9)
    assert (out == 9).all()
    out = warp_image(IMG, ((1.0, 0.0, 1e9), (0.0, 1.0, 0.0)), (3, 3), interp="nn")
    np.testing.assert_array_equal(out, np.broadcast_to(IMG[:3, -1:], (3, 3, 3)))


def test_dtype_and_sequences():
    out = warp_image(IMG, IDENTITY, (9, 12), dtype="float32")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, IMG)
    seq = np.stack([IMG, 255 - IMG])
    m = ((1.0, 0.0, 1.0), (0.0, 1.0, 0.0))
    got = warp_sample(seq, "FHWC", m, (9, 12))
    np.testing.assert_array_equal(got, np.stack([_shift(f, 0, 1) for f in seq]))
    with pytest.raises(ValueError, match="volumetric"):
        warp_sample(seq, "DHWC", m, (9, 12))
    with pytest.raises(ValueError, match="interp_type"):
        warp_image(IMG, IDENTITY, (9, 12), interp="cubic")


def test_matrix_parsing_and_inverse():
    assert affine_matrix(np.arange(6).reshape(2, 3)) == ((0, 1, 2), (3, 4, 5))
    with pytest.raises(ValueError, match="6 numbers"):
        affine_matrix([1, 2, 3])
    m = ((0.9, 0.1, 1.5), (-0.1, 0.9, -2.0))
    inv = np.vstack([np.array(invert_affine(m)), [0, 0, 1]])
    full = np.vstack([np.array(m), [0, 0, 1]])
    np.testing.assert_allclose(inv @ full, np.eye(3), atol=1e-6)
    with pytest.raises(ValueError, match="not invertible"):
        invert_affine(((1, 2, 0), (2, 4, 0)))


def test_output_size():
    assert output_size(None, (5, 6)) == (5, 6)
    assert output_size((), (5, 6)) == (5, 6)
    assert output_size((3.4, 7.6), (5, 6)) == (3, 8)
    with pytest.raises(ValueError, match="2 extents"):
        output_size((1, 2, 3), (5, 6))


@pytest.mark.parametrize("h,w", [(7, 9), (8, 8), (10, 13), (5, 20)])
@pytest.mark.parametrize("angle", [0, 10, 30, 45, 60, 90, 135, 200, -30, 89.9])
def test_rotate_canvas_covers_the_rotated_image_with_the_input_parity(h, w, angle):
    oh, ow = rotate_output_size((h, w), angle)
    r = math.radians(angle)
    c, s = abs(math.cos(r)), abs(math.sin(r))
    assert oh >= h * c + w * s - 0.01 and ow >= w * c + h * s - 0.01
    assert oh <= h * c + w * s + 2 and ow <= w * c + h * s + 2     # least padding
    # parity: the input extent the output extent is closest to (ties at 45 + k * 90 degrees
    # follow DALI's rule, checked by the oracle test)
    if abs(s - c) > 1e-9:
        near_h, near_w = (w, h) if s > c else (h, w)
        assert (oh - near_h) % 2 == 0 and (ow - near_w) % 2 == 0


def test_rotate_by_quarter_turns_is_rot90():
    img = RNG.integers(0, 256, size=(6, 10, 2), dtype=np.uint8)
    for k, angle in ((1, 90), (2, 180), (3, 270), (3, -90)):
        hw = rotate_output_size((6, 10), angle)
        want = np.rot90(img, k)          # numpy: counter-clockwise on the displayed image
        assert hw == want.shape[:2]
        for interp in ("nn", "linear"):
            got = warp_image(img, rotate_matrix(angle, (6, 10), hw), hw, interp=interp)
            np.testing.assert_array_equal(got, want)


def test_per_frame_matrices():
    seq = np.stack([IMG, 255 - IMG, IMG // 2])
    shifts = [((1.0, 0.0, float(k)), (0.0, 1.0, 0.0)) for k in range(3)]
    got = warp_sample(seq, "FHWC", affine_matrices(np.array(shifts), 3), (9, 12))
    for k in range(3):
        np.testing.assert_array_equal(got[k], _shift(seq[k], 0, k))
    assert affine_matrices(np.arange(6), 3) == affine_matrix(np.arange(6))   # shared by frames
    with pytest.raises(ValueError, match="per frame"):
        affine_matrices(np.zeros(12), 3)


def test_empty_images_give_the_fill():
    empty = np.zeros((0, 5, 3), np.uint8)
    out = warp_image(empty, IDENTITY, (2, 3), fill_value=7)
    assert out.shape == (2, 3, 3) and (out == 7).all()
    assert (warp_image(empty, IDENTITY, (2, 3), interp="nn") == 0).all()
