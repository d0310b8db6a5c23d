"""Tests for runtime.kernels.cpu.blur (gaussian_blur)."""
import math

import numpy as np
import pytest

from runtime.kernels.cpu.blur import blur_params, gaussian_blur, gaussian_weights

RNG = np.random.default_rng(21)


@pytest.mark.parametrize("sigma", [0.3, 0.8, 1.0, 2.3, 5.1])
def test_weights_are_a_normalized_gaussian(sigma):
    w = gaussian_weights(sigma)
    r = math.ceil(3 * sigma)
    assert len(w) == 2 * r + 1 and w.dtype == np.float32
    x = np.arange(-r, r + 1)
    want = np.exp(-x * x / (2 * sigma * sigma))
    np.testing.assert_allclose(w, want / want.sum(), rtol=2e-6)
    np.testing.assert_array_equal(w, w[::-1])


def test_window_only_and_errors():
    w = gaussian_weights(0.0, 5)
    sigma = (2 - 1) * 0.3 + 0.8                     # DALI's sigma of a window of 5
    x = np.arange(-2, 3)
    want = np.exp(-x * x / (2 * sigma * sigma))
    np.testing.assert_allclose(w, want / want.sum(), rtol=2e-6)
    assert len(gaussian_weights(3.0, 3)) == 3
    with pytest.raises(ValueError, match="both be 0"):
        gaussian_weights(0.0, 0)
    with pytest.raises(ValueError, match="odd"):
        gaussian_weights(1.0, 4)


def _reference(img, sigmas):
    """Independent: a direct 2-D convolution with the outer product kernel, mirrored (101)
    borders through numpy's pad, in double."""
    ks = []
    for s in sigmas:
        r = math.ceil(3 * s)
        x = np.arange(-r, r + 1)
        k = np.exp(-x * x / (2 * s * s))
        ks.append(k / k.sum())
    k2 = np.outer(*ks)
    rh, rw = len(ks[0]) // 2, len(ks[1]) // 2
    p = np.pad(img.astype(np.float64), ((rh, rh), (rw, rw)) + ((0, 0),) * (img.ndim - 2),
               mode="reflect")
    out = np.zeros(img.shape)
    for dy in range(k2.shape[0]):
        for dx in range(k2.shape[1]):
            out += k2[dy, dx] * p[dy:dy + img.shape[0], dx:dx + img.shape[1]]
    return out


def test_blur_matches_a_direct_convolution():
    img = (RNG.random((12, 15, 3)) * 255).astype(np.float32)
    got = gaussian_blur(img, "HWC", sigma=(1.0, 2.0))
    np.testing.assert_allclose(got, _reference(img, (1.0, 2.0)), rtol=1e-5, atol=1e-3)
    u8 = img.astype(np.uint8)
    got8 = gaussian_blur(u8, "HWC", sigma=1.5)
    assert got8.dtype == np.uint8
    assert np.abs(got8.astype(float) - _reference(u8, (1.5, 1.5))).max() <= 0.5 + 1e-3
    chw = np.ascontiguousarray(img.transpose(2, 0, 1))
    np.testing.assert_array_equal(gaussian_blur(chw, "CHW", sigma=(1.0, 2.0)),
                                  got.transpose(2, 0, 1))


def test_per_frame_sigmas():
    seq = (RNG.random((3, 10, 12, 1)) * 255).astype(np.float32)
    out = gaussian_blur(seq, "FHWC", sigma=[1.0, 2.0, 0.5])
    for k, s in enumerate((1.0, 2.0, 0.5)):
        np.testing.assert_array_equal(out[k], gaussian_blur(seq[k], "HWC", sigma=s))
    assert blur_params((1.0, 2.0), None, 2, 3) == ((1.0, 2.0), (0, 0))     # per axis
    with pytest.raises(ValueError, match="sigma"):
        gaussian_blur(seq[0], "HWC", sigma=(1.0, 2.0, 3.0))
