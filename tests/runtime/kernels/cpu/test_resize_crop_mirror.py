"""runtime/kernels/cpu/resize_crop_mirror.py: within 1 of resize, then crop, then flip (the
project's own kernels composed; one resample of the crop's window moves taps by float32
rounding), and the stretched window for crops past the edge."""
import numpy as np
import pytest

from runtime.kernels.cpu.crop import crop
from runtime.kernels.cpu.flip import flip
from runtime.kernels.cpu.resize import resize
from runtime.kernels.cpu.resize_crop_mirror import resize_crop_mirror


def _img(h=57, w=83, dtype=np.uint8):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (h, w, 3)).astype(dtype)


@pytest.mark.parametrize("mirror", [0, 1, 2, 3])
@pytest.mark.parametrize("size,window", [((40, 60), dict(crop=(31, 27))),
                                         ((40, 60), dict(crop=(20, 20), crop_pos_x=0.1,
                                                         crop_pos_y=0.8)),
                                         ((33, 0), dict(crop_h=10, crop_w=12))])
def test_equals_resize_crop_flip(size, window, mirror):
    img = _img()
    out = resize_crop_mirror(img, "HWC", dict(size=size, mirror=mirror, **window))
    ref = crop(resize(img, size=size), **window)
    ref = flip(ref, horizontal=mirror & 1, vertical=(mirror >> 1) & 1)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    diff = np.abs(out.astype(int) - ref.astype(int))
    assert diff.max() <= 1      # (another resampling path for a smaller output: ~20% off by 1)


def test_without_crop_is_resize_and_flip():
    img = _img(dtype=np.float32)
    out = resize_crop_mirror(img, "HWC", dict(resize_shorter=30, mirror=1))
    np.testing.assert_allclose(out, resize(img, resize_shorter=30)[:, ::-1], atol=1e-3)


def test_crop_past_the_edge_repeats_edge_pixels():
    img = np.tile(np.arange(10, dtype=np.float32)[None, :, None], (8, 1, 1)) * 10
    out = resize_crop_mirror(img, "HWC", dict(size=(8, 10), crop=(8, 14), interp_type="nn"))
    assert out.shape == (8, 14, 1)
    np.testing.assert_array_equal(out[0, :, 0], [0, 0] + list(range(0, 100, 10)) + [90, 90])


def test_truncate_rounding_of_the_anchor():
    img = _img()
    a = resize_crop_mirror(img, "HWC", dict(size=(40, 60), crop=(20, 21), crop_pos_x=0.3,
                                            rounding="truncate"))
    full = resize(img, size=(40, 60))
    x0 = int(0.3 * (60 - 21))       # 11.7 -> 11 (round would give 12)
    ref = full[10:30, x0:x0 + 21]
    assert np.abs(a.astype(int) - ref).max() <= 1
    assert np.abs(a.astype(int) - full[10:30, x0 + 1:x0 + 22]).max() > 1   # not the next one
