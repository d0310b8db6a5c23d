"""Tests for runtime.kernels.cpu.cmn (crop_mirror_normalize)."""

import time

import numpy as np
import pytest
import torch

from runtime.kernels.cpu.cmn import crop_mirror_normalize
from runtime.kernels.params.normalize import cmn_window_from_crop

IMG = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


def _astronaut(h=301, w=257):
    skimage_data = pytest.importorskip("skimage.data")
    return np.ascontiguousarray(skimage_data.astronaut()[:h, :w])


def _reference(img, y0, x0, h, w, mirror, mean, std, scale=1.0, shift=0.0):
    """Independent float64 reference on an in-bounds HWC window, output HWC."""
    win = img[y0:y0 + h, x0:x0 + w].astype(np.float64)
    if mirror:
        win = win[:, ::-1]
    return (win - np.asarray(mean, np.float64)) / np.asarray(std, np.float64) * scale + shift


def test_defaults_are_float32_chw():
    out = crop_mirror_normalize(IMG)
    assert out.dtype == np.float32 and out.shape == (3, 5, 7)
    np.testing.assert_array_equal(out, IMG.transpose(2, 0, 1).astype(np.float32))
    assert out.flags.c_contiguous


def test_mirror_2x3():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.uint8)[..., None]
    out = crop_mirror_normalize(a, mirror=1, output_layout="HWC")
    np.testing.assert_array_equal(out[..., 0], [[3, 2, 1], [6, 5, 4]])


def test_crop_mirror_normalize_values():
    out = crop_mirror_normalize(IMG, crop=(3, 4), crop_pos_x=0.0, mirror=1, mean=[1, 2, 3],
                                std=[2, 4, 8], scale=3, shift=0.5, output_layout="HWC")
    ref = _reference(IMG, 1, 0, 3, 4, True, [1, 2, 3], [2, 4, 8], 3, 0.5)
    # float32 (x - base) * inv, inv = 3 / std exact, base = mean - 0.5 std / 3 rounded twice
    # (<= 1.2e-7, and |x - base| >= 1/3 for integer x: 3.6e-7 relative), x - base and the
    # product once each (1.2e-7): <= 4.8e-7 relative vs float64; measured max 0
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_output_layouts():
    base = crop_mirror_normalize(IMG, crop=(3, 4), output_layout="HWC")
    np.testing.assert_array_equal(crop_mirror_normalize(IMG, crop=(3, 4)),
                                  base.transpose(2, 0, 1))
    np.testing.assert_array_equal(crop_mirror_normalize(IMG, crop=(3, 4), output_layout="WCH"),
                                  base.transpose(1, 2, 0))
    chw = np.ascontiguousarray(IMG.transpose(2, 0, 1))
    np.testing.assert_array_equal(
        crop_mirror_normalize(chw, layout="CHW", crop=(3, 4), output_layout="HWC"), base)
    hw = np.ascontiguousarray(IMG[..., 1])
    np.testing.assert_array_equal(crop_mirror_normalize(hw, layout="HW", crop=(3, 4), mean=1),
                                  base[..., 1] - 1)


def test_pad_output_to_power_of_two():
    out = crop_mirror_normalize(IMG, pad_output=True, output_layout="HWC")
    assert out.shape == (5, 7, 4)
    np.testing.assert_array_equal(out[..., 3], 0)
    five = np.ones((2, 2, 5), np.uint8)
    assert crop_mirror_normalize(five, pad_output=True).shape == (8, 2, 2)
    one = np.ones((2, 2, 1), np.uint8)
    assert crop_mirror_normalize(one, pad_output=True).shape == (1, 2, 2)


def test_pad_policy_fill_not_normalized_and_mirrored():
    out = crop_mirror_normalize(IMG, crop=(8, 10), crop_pos_x=0.3, mirror=1, mean=[10, 20, 30],
                                std=2, out_of_bounds_policy="pad", fill_values=[1, 2, 3],
                                output_layout="HWC")
    # anchor (-2, -1): image rows 2..6, window cols 1..7 before the flip, 2..8 after
    expected = np.empty((8, 10, 3), np.float64)
    expected[...] = [1, 2, 3]
    expected[2:7, 2:9] = ((IMG.astype(np.float64) - [10, 20, 30]) / 2)[:, ::-1]
    # integer means, std 2: (x - mean) * 0.5 is exact in float32, the fill values too
    np.testing.assert_array_equal(out, expected)


def test_pad_output_channel_uses_fill_with_pad_policy():
    out = crop_mirror_normalize(IMG, crop=(3, 3), pad_output=True, fill_values=[1, 2, 3, 4],
                                out_of_bounds_policy="pad", output_layout="HWC")
    np.testing.assert_array_equal(out[..., 3], 4)
    out = crop_mirror_normalize(IMG, crop=(3, 3), pad_output=True, fill_values=[1, 2, 3, 4],
                                output_layout="HWC")
    np.testing.assert_array_equal(out[..., 3], 0)


@pytest.mark.parametrize("dtype, expected", [
    # (x - 100) / 0.4 for x = 48, 49, 50, 51, 52, 53 -> -130, -127.5, -125, ...
    ("uint8", [0, 0, 0, 0, 0, 0]),
    ("int8", [-128, -128, -125, -123, -120, -118]),  # halves away from zero
    ("float16", [-130, -127.5, -125, -122.5, -120, -117.5]),
])
def test_output_dtypes(dtype, expected):
    out = crop_mirror_normalize(IMG, mean=100, std=0.4, dtype=dtype, output_layout="HWC")
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out[2, 2:4].ravel(), expected)


def test_uint8_output_positive_rounding():
    a = np.array([[10, 11, 12, 13]], np.uint8)[..., None]
    out = crop_mirror_normalize(a, std=2, dtype="uint8", output_layout="HWC")
    np.testing.assert_array_equal(out.ravel(), [5, 6, 6, 7])  # 5.5 -> 6, 6.5 -> 7


def test_window_helper():
    assert cmn_window_from_crop((5, 7), crop=(8, 10), out_of_bounds_policy="pad") == \
        (-2, -2, 8, 10)
    assert cmn_window_from_crop((5, 7), crop=(8, 4), crop_pos_x=0,
                                out_of_bounds_policy="trim_to_shape") == (0, 0, 5, 4)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(mean=[1, 2]), ValueError, "mean"),
    (dict(std=[1, 0, 1]), ValueError, "std"),
    (dict(output_layout="HW"), ValueError, "output_layout"),
    (dict(output_layout="XYZ"), ValueError, "output_layout"),
    (dict(crop=(8, 10)), ValueError, "out_of_bounds_policy"),
    (dict(crop=(8, 10), out_of_bounds_policy="pad", fill_values=[1, 2]), ValueError,
     "fill_values"),
    (dict(dtype="complex64"), TypeError, "dtype"),
    (dict(mirror=0.5), TypeError, "mirror"),
    (dict(scale="x"), TypeError, "scale"),
])
def test_errors(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        crop_mirror_normalize(IMG, **kwargs)


def test_pad_output_without_channels_errors():
    with pytest.raises(ValueError, match="pad_output"):
        crop_mirror_normalize(IMG[..., 0].copy(), layout="HW", pad_output=True)


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [
    dict(crop=(224, 224)),
    dict(crop=(224, 200), mirror=1, mean=MEAN, std=STD),
    dict(crop=(400, 300), out_of_bounds_policy="pad", fill_values=[1, 2, 3, 4], pad_output=True,
         mirror=1, crop_pos_x=0.3, crop_pos_y=0.8, mean=MEAN, std=STD, scale=1 / 64, shift=128),
    dict(crop=(100, 120), dtype="uint8", mean=100, std=0.5, output_layout="HWC"),
    dict(crop=(101, 121), dtype="int8", mean=MEAN, std=STD, scale=50, output_layout="WCH"),
    dict(crop=(99, 119), dtype="float16", mean=MEAN, std=STD, scale=50, pad_output=True),
    dict(crop=(400, 300), out_of_bounds_policy="trim_to_shape", crop_pos_x=0.1, mirror=1),
    dict(crop_h=77.9, crop_w=31.2, crop_pos_x=0.71, crop_pos_y=0.29, mean=3.5, std=[1, 2, 3],
         shift=-4, scale=0.25),
])
def test_cmn_matches_dali(kwargs):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    img = _astronaut()
    dkw = dict(kwargs)
    if "dtype" in dkw:
        dkw["dtype"] = getattr(dalidyn, dkw["dtype"])
    ref = np.asarray(dalidyn.crop_mirror_normalize(dalidyn.as_tensor(img, layout="HWC"), **dkw))
    out = crop_mirror_normalize(img, **kwargs)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    # DALI's own float32 formula is reproduced: exact equality, floats included
    np.testing.assert_array_equal(out, ref)


@pytest.mark.oracle
def test_cmn_float_input_chw_matches_dali():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    rng = np.random.default_rng(0)
    img = rng.uniform(-10, 300, (3, 37, 53)).astype(np.float32)
    kw = dict(crop=(20, 31), mirror=1, mean=MEAN, std=STD, output_layout="HWC", scale=2.0,
              shift=0.25, crop_pos_x=0.9)
    ref = np.asarray(dalidyn.crop_mirror_normalize(dalidyn.as_tensor(img, layout="CHW"), **kw))
    out = crop_mirror_normalize(img, layout="CHW", **kw)
    # DALI's float32 formula on float input too: measured max difference 0, so exact
    np.testing.assert_array_equal(out, ref)


@pytest.mark.benchmark
def test_cmn_speed_224():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)
    kw = dict(crop=(224, 224), mirror=1, mean=MEAN, std=STD)
    crop_mirror_normalize(img, **kw)
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(50):
            crop_mirror_normalize(img, **kw)
        best = min(best, (time.perf_counter() - t0) / 50)
    print(f"crop_mirror_normalize 256x256x3 u8 -> 3x224x224 f32: {best * 1e6:.0f} us")
    assert best < 0.01
