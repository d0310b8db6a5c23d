"""Tests for runtime.kernels.cpu.color."""
import numpy as np
import pytest

from runtime.kernels.cpu.color import brightness_contrast, default_center, hsv, output_range

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


def _hsv_reference(x, hue, sat, val):
    """Independent: per pixel via YIQ written out (Y = luma; I, Q rotated by -hue)."""
    out = np.empty(x.shape, np.float64)
    h = np.deg2rad(hue)
    for idx in np.ndindex(*x.shape[:-1]):
        r, g, b = x[idx].astype(np.float64)
        y = 0.299 * r + 0.587 * g + 0.114 * b
        i = 0.596 * r - 0.274 * g - 0.321 * b
        q = 0.211 * r - 0.523 * g + 0.311 * b
        i, q = sat * (i * np.cos(h) + q * np.sin(h)), sat * (q * np.cos(h) - i * np.sin(h))
        yiq = val * np.array([y, i, q])
        out[idx] = np.linalg.solve(np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                                             [0.211, -0.523, 0.311]]), yiq)
    return out


def test_hsv_matches_the_yiq_construction():
    x = RNG.random((3, 4, 3)).astype(np.float32)
    for hue, sat, val in ((0, 1, 1), (30, 0.5, 1.5), (-200, 1.3, 0.7)):
        got = hsv(x, hue=hue, saturation=sat, value=val, dtype="float32")
        np.testing.assert_allclose(got, _hsv_reference(x, hue, sat, val), atol=2e-6)
    np.testing.assert_array_equal(hsv(x, hue=360.0, dtype="float32"),
                                  hsv(x, dtype="float32"))       # hue wraps
    gray = np.full((2, 2, 3), 77, np.uint8)
    np.testing.assert_array_equal(hsv(gray, hue=123.0), gray)    # no chroma: unchanged
    with pytest.raises(ValueError, match="3 channels"):
        hsv(np.zeros((2, 2, 4), np.uint8))


# ------------------------------------------- brightness, contrast, hue, saturation, color_twist
def test_brightness_and_contrast_kernels_are_the_documented_formulas():
    import ndd
    x = RNG.integers(0, 256, size=(6, 7, 3), dtype=np.uint8)
    t = ndd.tensor(x, layout="HWC")
    got = np.asarray(ndd.brightness(t, brightness=1.4, brightness_shift=-0.05,
                                    dtype=ndd.float32))
    np.testing.assert_allclose(got, -0.05 + 1.4 * x.astype(np.float64), rtol=1e-6, atol=1e-4)
    got = np.asarray(ndd.contrast(t, contrast=0.3))
    want = np.clip(np.floor(128 + 0.3 * (x.astype(np.float64) - 128) + 0.5), 0, 255)
    assert got.dtype == np.uint8 and np.abs(got.astype(int) - want).max() <= 1
    got = np.asarray(ndd.contrast(t, contrast=2.0, contrast_center=10.0, dtype=ndd.float32))
    np.testing.assert_allclose(got, 10 + 2 * (x.astype(np.float64) - 10), rtol=1e-6)


def test_hue_and_saturation_kernels_keep_the_input_type():
    import ndd
    f = RNG.random((3, 4, 3)).astype(np.float32)
    got = np.asarray(ndd.hue(ndd.tensor(f, layout="HWC"), hue=50.0))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _hsv_reference(f, 50.0, 1.0, 1.0), atol=2e-6)
    got = np.asarray(ndd.saturation(ndd.tensor(f, layout="HWC"), saturation=0.0))
    np.testing.assert_allclose(got, _hsv_reference(f, 0.0, 0.0, 1.0), atol=2e-6)
    # ~ the luma in every channel (the NTSC I / Q rows miss summing to 0 by 0.001)
    luma = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    np.testing.assert_allclose(got, np.repeat(luma[..., None], 3, -1), atol=4e-3)


def test_color_twist_is_hsv_then_contrast_then_brightness():
    from runtime.kernels.cpu.color import color_twist
    f = RNG.random((3, 4, 3)).astype(np.float32)
    for hue, sat, b, c in ((0, 1, 1, 1), (30, 0.5, 1.2, 0.8), (-120, 1.3, 0.6, 1.5)):
        got = color_twist(f, hue=hue, saturation=sat, brightness=b, contrast=c)
        want = b * (0.5 + c * (_hsv_reference(f, hue, sat, 1.0) - 0.5))
        np.testing.assert_allclose(got, want, atol=3e-6)
    x = RNG.integers(0, 256, size=(5, 5, 3), dtype=np.uint8)
    assert (color_twist(x, contrast=0.0) == 128).all()
    assert (color_twist(x, brightness=0.0) == 0).all()
    got = color_twist(x, hue=40.0, saturation=0.7, brightness=1.1, contrast=0.9)
    want = 1.1 * (128 + 0.9 * (_hsv_reference(x, 40.0, 0.7, 1.0) - 128))
    want = np.clip(np.floor(want + 0.5), 0, 255)
    assert got.dtype == np.uint8 and np.abs(got.astype(int) - want).max() <= 1
    with pytest.raises(ValueError, match="3 channels"):
        color_twist(np.zeros((2, 2, 1), np.uint8))


def test_color_twist_centers_contrast_at_128_for_every_integer_type():
    from runtime.kernels.cpu.color import color_twist
    z = np.zeros((2, 2, 3), np.int16)
    assert (color_twist(z, contrast=0.0) == 128).all()
    assert (color_twist(z.astype(np.int32), contrast=0.5, brightness=2.0) == 128).all()
    assert (color_twist(z.astype(np.float32), contrast=0.0) == 0.5).all()


# ------------------------------------------------------------------ color_space_conversion
def test_color_space_conversion_is_bt601_within_rounding():
    from runtime.kernels.cpu.color import color_space_conversion as csc
    x = RNG.integers(0, 256, size=(9, 11, 3), dtype=np.uint8)
    r, g, b = (x[..., k].astype(np.float64) for k in range(3))
    # independent: BT.601 written from the standard's studio-range constants, in double
    y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
    cb = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
    cr = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
    ycc = csc(x, "RGB", "YCbCr")
    assert ycc.dtype == np.uint8 and ycc.shape == x.shape
    assert np.abs(ycc.astype(float) - np.stack([y, cb, cr], -1)).max() <= 0.5 + 1e-3
    np.testing.assert_array_equal(csc(x[..., ::-1].copy(), "BGR", "YCbCr"), ycc)
    gray = csc(x, "RGB", "GRAY")
    assert gray.shape == (9, 11, 1)
    assert np.abs(gray[..., 0] - (0.299 * r + 0.587 * g + 0.114 * b)).max() <= 0.5 + 1e-3
    back = csc(ycc, "YCbCr", "RGB")                   # round trip: within a few codes
    assert np.abs(back.astype(int) - x).max() <= 3
    np.testing.assert_array_equal(csc(ycc, "YCbCr", "BGR"), back[..., ::-1])
    np.testing.assert_array_equal(csc(x, "RGB", "BGR"), x[..., ::-1])
    g1 = x[..., :1].copy()
    np.testing.assert_array_equal(csc(g1, "GRAY", "RGB"), np.repeat(g1, 3, -1))
    gy = csc(g1, "GRAY", "YCbCr")
    assert (gy[..., 1:] == 128).all()
    assert np.abs(gy[..., 0] - (16 + g1[..., 0].astype(float) * 219 / 255)).max() <= 0.5 + 1e-3
    assert np.abs(csc(gy[..., :1].repeat(3, -1), "YCbCr", "GRAY").astype(int) - g1).max() <= 1
    seq = np.stack([x, x[::-1]])                       # F x H x W x C
    np.testing.assert_array_equal(csc(seq, "RGB", "GRAY")[1], csc(x[::-1], "RGB", "GRAY"))
    with pytest.raises(ValueError, match="Expected 3. Got 1"):
        csc(g1, "RGB", "BGR")
    with pytest.raises(ValueError, match="conversion not supported"):
        csc(x, "RGB", "RGB")
