"""Tests for runtime.kernels.cpu.color."""
import numpy as np
import pytest

from runtime.kernels.cpu.color import brightness_contrast, default_center, output_range

RNG = np.random.default_rng(3)


def test_brightness_contrast_formula():
    x = RNG.integers(0, 256, size=(5, 6, 3), dtype=np.uint8)
    b, s, c, cc = 1.2, 0.05, 0.7, 100.0
    got = brightness_contrast(x, brightness=b, brightness_shift=s, contrast=c,
                              contrast_center=cc, dtype="float32")
    # independent: the documented formula in double; the float output range is 1
    want = s * 1.0 + b * (cc + c * (x.astype(np.float64) - cc))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    u8 = brightness_contrast(x, brightness=b, brightness_shift=s, contrast=c, contrast_center=cc)
    want8 = np.clip(np.floor(s * 255 + b * (cc + c * (x.astype(np.float64) - cc)) + 0.5), 0, 255)
    assert np.abs(u8.astype(int) - want8).max() <= 1 and u8.dtype == np.uint8


def test_defaults():
    x = RNG.integers(0, 256, size=(4, 4, 3), dtype=np.uint8)
    np.testing.assert_array_equal(brightness_contrast(x), x)
    assert (brightness_contrast(x, contrast=0.0) == 128).all()
    f = RNG.random((4, 4, 3)).astype(np.float32)
    assert (brightness_contrast(f, contrast=0.0) == 0.5).all()
    assert default_center(np.int16) == 16384 and default_center(np.uint8) == 128
    assert output_range(np.int16) == 32767 and output_range(np.float32) == 1.0
    assert (brightness_contrast(x, brightness=10.0) >= x).all()
    assert brightness_contrast(x, brightness=10.0).max() == 255      # saturates
