"""Tests for runtime.kernels.cpu.bbox (bb_flip, random_bbox_crop)."""
import numpy as np
import pytest

from runtime.kernels.cpu.bbox import bb_flip, random_bbox_crop


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


# ---------------------------------------------------------------- random_bbox_crop
BOXES = np.array([[0.1, 0.1, 0.5, 0.5], [0.6, 0.6, 0.9, 0.95], [0.2, 0.5, 0.3, 0.7]],
                 np.float32)


def _iou(b, w):
    ix = max(0.0, min(b[2], w[2]) - max(b[0], w[0]))
    iy = max(0.0, min(b[3], w[3]) - max(b[1], w[1]))
    inter = ix * iy
    union = (b[2] - b[0]) * (b[3] - b[1]) + (w[2] - w[0]) * (w[3] - w[1]) - inter
    return inter / union


def test_defaults_keep_the_whole_image():
    anchor, shape, boxes = random_bbox_crop(BOXES, None, np.random.default_rng(0), {})
    np.testing.assert_array_equal(anchor, [0, 0])
    np.testing.assert_array_equal(shape, [1, 1])
    np.testing.assert_array_equal(boxes, BOXES)


@pytest.mark.parametrize("seed", range(20))
def test_windows_meet_the_drawn_constraints(seed):
    a = {"scaling": (0.3, 0.8), "aspect_ratio": (0.5, 2.0), "thresholds": (0.1, 0.2),
         "allow_no_crop": False, "num_attempts": 50, "threshold_type": "iou",
         "all_boxes_above_threshold": False, "output_bbox_indices": True}
    labels = np.array([5, 6, 7], np.int32)
    anchor, shape, boxes, lab, idx = random_bbox_crop(BOXES, labels,
                                                      np.random.default_rng(seed), a)
    x0, y0 = anchor
    w, h = shape
    assert 0.3 <= w <= 0.8 and 0.3 <= h <= 0.8 and 0.5 <= w / h <= 2.0
    assert 0 <= x0 <= 1 - w + 1e-6 and 0 <= y0 <= 1 - h + 1e-6
    win = (x0, y0, x0 + w, y0 + h)
    assert max(_iou(b, win) for b in BOXES) >= 0.1 - 1e-6
    # kept: the boxes whose centre lies in the window, mapped into it
    centre_in = [bool(win[0] <= (b[0] + b[2]) / 2 <= win[2] and win[1] <= (b[1] + b[3]) / 2
                      <= win[3]) for b in BOXES.astype(np.float64)]
    assert idx.tolist() == [i for i, c in enumerate(centre_in) if c]
    np.testing.assert_array_equal(lab, labels[idx])
    for k, i in enumerate(idx):
        b = BOXES[i].astype(np.float64)
        want = np.clip([(b[0] - x0) / w, (b[1] - y0) / h, (b[2] - x0) / w, (b[3] - y0) / h],
                       0, 1)
        np.testing.assert_allclose(boxes[k], want, atol=1e-6)


def test_fixed_window_and_prune_threshold():
    a = {"crop_shape": (100, 80), "input_shape": (400, 300), "bbox_prune_threshold": 0.0}
    for seed in range(10):
        anchor, shape, boxes = random_bbox_crop(BOXES, None, np.random.default_rng(seed), a)
        np.testing.assert_array_equal(shape, [100, 80])
        assert anchor[0] == int(anchor[0]) and 0 <= anchor[0] <= 300 and 0 <= anchor[1] <= 220
        assert ((boxes >= 0) & (boxes <= 1)).all()
    with pytest.raises(ValueError, match="input_shape"):
        random_bbox_crop(BOXES, None, np.random.default_rng(0), {"crop_shape": (10, 10)})


def test_xywh_layout_and_errors():
    xywh = BOXES.copy()
    xywh[:, 2:] -= xywh[:, :2]
    _, _, out = random_bbox_crop(xywh, None, np.random.default_rng(0), {"ltrb": False})
    np.testing.assert_allclose(out, xywh, atol=1e-7)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        random_bbox_crop(BOXES * 2, None, np.random.default_rng(0), {})
    with pytest.raises(ValueError, match="no window"):
        random_bbox_crop(BOXES, None, np.random.default_rng(0),
                         {"thresholds": (1.1,), "allow_no_crop": False})
