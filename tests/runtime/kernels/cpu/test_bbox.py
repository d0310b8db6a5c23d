"""Tests for runtime.kernels.cpu.bbox (bb_flip)."""
import numpy as np
import pytest

from runtime.kernels.cpu.bbox import bb_flip


def test_bb_flip_ltrb_mirrors_the_coordinates():
    b = np.array([[0.1, 0.2, 0.5, 0.9]], np.float32)
    np.testing.assert_allclose(bb_flip(b, ltrb=True), [[0.5, 0.2, 0.9, 0.9]], atol=1e-7)
    np.testing.assert_allclose(bb_flip(b, ltrb=True, horizontal=0, vertical=1),
                               [[0.1, 0.1, 0.5, 0.8]], atol=1e-7)


def test_bb_flip_xywh_keeps_the_size():
    b = np.array([[0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 1.0, 1.0]], np.float32)
    out = bb_flip(b, horizontal=1, vertical=1)
    # independent: x' = 1 - x - w, y' = 1 - y - h, sizes unchanged (in double)
    want = np.array([[0.6, 0.4, 0.3, 0.4], [0.0, 0.0, 1.0, 1.0]])
    np.testing.assert_allclose(out, want, atol=1e-6)
    assert out.dtype == np.float32 and out.shape == b.shape
    twice = bb_flip(out, horizontal=1, vertical=1)
    np.testing.assert_allclose(twice, b, atol=1e-6)


def test_bb_flip_flat_boxes_and_errors():
    flat = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.1, 0.1], np.float32)
    out = bb_flip(flat, ltrb=True)
    assert out.shape == (8,)
    np.testing.assert_allclose(out[4:], [0.9, 0.5, 0.5, 0.1], atol=1e-7)
    with pytest.raises(ValueError, match="groups of 4"):
        bb_flip(np.zeros((2, 3), np.float32))
