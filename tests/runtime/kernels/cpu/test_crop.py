"""Tests for runtime.kernels.cpu.crop."""

import numpy as np
import pytest

from runtime.kernels.cpu.crop import crop, crop_to_window

IMG = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)


def _astronaut(h=301, w=257):
    skimage_data = pytest.importorskip("skimage.data")
    return np.ascontiguousarray(skimage_data.astronaut()[:h, :w])


def test_center_crop_hand_computed():
    out = crop(IMG, crop=(2, 2))
    # anchor (2, 3): rows 2..3, cols 3..4
    np.testing.assert_array_equal(out, IMG[2:4, 3:5])
    assert out.flags.c_contiguous and not np.shares_memory(out, IMG)


@pytest.mark.parametrize("pos, y0, x0", [(0.0, 0, 0), (1.0, 3, 5), (0.25, 1, 1)])
def test_crop_positions(pos, y0, x0):
    np.testing.assert_array_equal(crop(IMG, crop=(2, 2), crop_pos_x=pos, crop_pos_y=pos),
                                  IMG[y0:y0 + 2, x0:x0 + 2])


def test_crop_layouts_chw_and_hw():
    chw = np.ascontiguousarray(IMG.transpose(2, 0, 1))
    np.testing.assert_array_equal(crop(chw, layout="CHW", crop=(3, 2)), chw[:, 1:4, 3:5])  # x0 = round(2.5) = 3
    hw = np.ascontiguousarray(IMG[..., 0])
    np.testing.assert_array_equal(crop(hw, layout="HW", crop=(3, 2)), hw[1:4, 3:5])
    np.testing.assert_array_equal(crop(hw, layout=None, crop=(3, 2)), hw[1:4, 3:5])


def test_pad_policy_per_channel_fill():
    out = crop(IMG, crop=(8, 10), out_of_bounds_policy="pad", fill_values=[1, 2, 3])
    assert out.shape == (8, 10, 3)
    # anchor (-2, -2): image lands at rows 2..6, cols 2..8
    expected = np.empty((8, 10, 3), np.uint8)
    expected[...] = [1, 2, 3]
    expected[2:7, 2:9] = IMG
    np.testing.assert_array_equal(out, expected)


def test_pad_policy_scalar_fill_chw():
    chw = np.ascontiguousarray(IMG.transpose(2, 0, 1))
    out = crop(chw, layout="CHW", crop=(6, 8), crop_pos_x=0, crop_pos_y=1,
               out_of_bounds_policy="pad", fill_values=9)
    # anchor y = round(1 * -1) = -1, x = 0; window cols 0..7 (col 7 padded)
    expected = np.full((3, 6, 8), 9, np.uint8)
    expected[:, 1:6, 0:7] = chw
    np.testing.assert_array_equal(out, expected)


def test_pad_fill_saturates_to_dtype():
    out = crop(IMG, crop=(6, 7), crop_pos_y=0, out_of_bounds_policy="pad",
               fill_values=[1.7, 300, -3])
    np.testing.assert_array_equal(out[5, 0], [2, 255, 0])


def test_trim_to_shape():
    out = crop(IMG, crop=(8, 4), crop_pos_x=0.0, out_of_bounds_policy="trim_to_shape")
    np.testing.assert_array_equal(out, IMG[:, 0:4])
    out = crop(IMG, crop=(8, 10), out_of_bounds_policy="trim_to_shape")
    np.testing.assert_array_equal(out, IMG)


def test_error_policy_message_names_window_and_shape():
    with pytest.raises(ValueError, match=r"y0=-2, x0=-2, h=8, w=10.*\(5, 7, 3\)"):
        crop(IMG, crop=(8, 10))


def test_dtype_conversion_rounds_and_saturates():
    f = np.array([[0.5, 1.5, -0.5, 300.0, 2.4999]], np.float32)[..., None]
    out = crop(f, crop=(1, 5), dtype="uint8")
    np.testing.assert_array_equal(out[0, :, 0], [1, 2, 0, 255, 2])
    assert crop(IMG, crop=(2, 2), dtype=np.float32).dtype == np.float32


def test_crop_to_window_direct():
    out = crop_to_window(IMG, (-1, 5, 3, 3), out_of_bounds_policy="pad", fill_values=0)
    expected = np.zeros((3, 3, 3), np.uint8)
    expected[1:3, 0:2] = IMG[0:2, 5:7]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(crop=(2, 2), layout="HWCX"), ValueError, "layout"),
    (dict(crop=(2, 2), layout="CWC"), ValueError, "layout"),
    (dict(crop=(2, 2), layout="XYZ"), ValueError, "'H'"),
    (dict(crop=(2, 2), out_of_bounds_policy="bogus"), ValueError, "out_of_bounds_policy"),
    (dict(crop=(8, 10), out_of_bounds_policy="pad", fill_values=[1, 2]), ValueError,
     "fill_values"),
    (dict(crop=(2, 2), dtype="complex64"), TypeError, "dtype"),
])
def test_crop_errors(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        crop(IMG, **kwargs)


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [
    dict(crop=(224, 224)),
    dict(crop=(101, 57), crop_pos_x=0.13, crop_pos_y=0.91),
    dict(crop_h=33.7, crop_w=250.2, crop_pos_x=1.0, crop_pos_y=0.0),
    dict(crop=(400, 300), crop_pos_x=0.3, crop_pos_y=0.77, out_of_bounds_policy="pad",
         fill_values=[10, 20, 30]),
    dict(crop=(400, 100), crop_pos_y=0.2, out_of_bounds_policy="trim_to_shape"),
    dict(crop=(99, 98), dtype="float32"),
])
@pytest.mark.parametrize("layout", ["HWC", "CHW"])
def test_crop_matches_dali(kwargs, layout):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    img = _astronaut()
    if layout == "CHW":
        img = np.ascontiguousarray(img.transpose(2, 0, 1))
    dkw = dict(kwargs)
    if "dtype" in dkw:
        dkw["dtype"] = dalidyn.float32
    ref = np.asarray(dalidyn.crop(dalidyn.as_tensor(img, layout=layout), **dkw))
    out = crop(img, layout=layout, **kwargs)
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)
