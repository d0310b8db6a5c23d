"""Tests for runtime.kernels.cpu.detection (coord_flip, bbox_paste, box_encoder) and their
ndd functions: independent computations (plain Python loops in float64, or float32 scalar
maths), and DALI 2.4's operators bit for bit under ``@pytest.mark.oracle``."""
import math

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.detection import (bbox_paste, box_encoder, coord_flip, iou_matrix,
                                          prepared_anchors)

F = np.float32


def _ltrb(rng, n):
    xy = rng.random((n, 2)) * 0.8
    wh = rng.random((n, 2)) * 0.4 + 0.02
    return np.concatenate([xy, np.minimum(xy + wh, 1)], 1).astype(np.float32)


# ------------------------------------------------------------------------------ coord_flip
def test_coord_flip_reflects_chosen_axes():
    pts = np.array([[0.1, 0.2, 0.3], [1.0, 0.0, 0.5]], np.float32)
    out = coord_flip(pts, flip=(1, 0, 1), center=(0.5, 0.5, 0.25))
    want = [[2 * 0.5 - 0.1, 0.2, 2 * 0.25 - 0.3], [0.0, 0.0, 0.0]]
    np.testing.assert_allclose(out, want, atol=1e-7)
    assert out.dtype == np.float32
    # layout "yx": column 0 is y
    out = coord_flip(pts[:, :2], layout="yx", flip=(0, 1, 0), center=(0.5, 0.1, 0.5))
    np.testing.assert_allclose(out, [[0.2 - 0.1, 0.2], [0.2 - 1.0, 0.0]], atol=1e-7)
    np.testing.assert_allclose(coord_flip(coord_flip(pts), flip=(1, 0, 0)), pts, atol=1e-7)


def test_coord_flip_errors():
    with pytest.raises(ValueError, match="layout"):
        coord_flip(np.zeros((3, 2), np.float32), layout="xyz")
    with pytest.raises(ValueError, match="shape"):
        coord_flip(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="float32"):
        coord_flip(np.zeros((3, 2), np.float64))


# ------------------------------------------------------------------------------ bbox_paste
def test_bbox_paste_keeps_boxes_on_their_objects():
    # a 100x50 image pasted at (paste_x, paste_y) on a canvas ratio times larger: an object at
    # pixel (x, y) of the image lands at pixel (px * (R*W - W) + x) of the canvas
    rng = np.random.default_rng(1)
    b = rng.random((20, 4)).astype(np.float32) * 0.5
    R, px, py = 2.5, 0.3, 0.8
    out = bbox_paste(b, ratio=R, paste_x=px, paste_y=py, ltrb=False)
    W, H = 100.0, 50.0
    for (x, y, w, h), (x2, y2, w2, h2) in zip(b.astype(float), out.astype(float)):
        assert math.isclose(x2 * R * W, px * (R * W - W) + x * W, abs_tol=1e-4)
        assert math.isclose(y2 * R * H, py * (R * H - H) + y * H, abs_tol=1e-4)
        assert math.isclose(w2 * R * W, w * W, abs_tol=1e-4)
        assert math.isclose(h2 * R * H, h * H, abs_tol=1e-4)
    ltrb = bbox_paste(b, ratio=R, paste_x=px, paste_y=py, ltrb=True)
    np.testing.assert_allclose(ltrb[:, 2], px * (R - 1) / R + b[:, 2] / R, atol=1e-6)
    assert np.array_equal(bbox_paste(b, ratio=1.0), b)


def test_bbox_paste_errors():
    b = np.zeros((2, 4), np.float32)
    with pytest.raises(ValueError, match="at least 1"):
        bbox_paste(b, ratio=0.5)
    with pytest.raises(ValueError, match="paste_x"):
        bbox_paste(b, ratio=2, paste_x=1.5)
    with pytest.raises(ValueError, match="groups of 4"):
        bbox_paste(np.zeros(6, np.float32), ratio=2)


# ----------------------------------------------------------------------------- box_encoder
def _iou_py(a, b):
    l, t = max(a[0], b[0]), max(a[1], b[1])
    r, bt = min(a[2], b[2]), min(a[3], b[3])
    inter = max(r - l, 0.0) * max(bt - t, 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _encode_py(boxes, labels, anchors, criteria):
    """SSD matching written as loops in float64: (matched box index or -1) per anchor."""
    n, m = len(boxes), len(anchors)
    ious = [[_iou_py(boxes[i], anchors[j]) for j in range(m)] for i in range(n)]
    best = []
    for j in range(m):
        col = [ious[i][j] for i in range(n)]
        k = max(i for i in range(n) if col[i] == max(col)) if n else -1   # the last best
        best.append([k, col[k] if n else 0.0])
    for i in range(n):
        j = max(j for j in range(m) if ious[i][j] == max(ious[i]))   # the last best anchor
        best[j] = [i, 2.0]
    return [k if v > criteria else -1 for k, v in best]


def test_iou_matrix_matches_loops():
    rng = np.random.default_rng(3)
    b, a = _ltrb(rng, 5), _ltrb(rng, 40)
    want = np.array([[_iou_py(x, y) for y in a.astype(float)] for x in b.astype(float)])
    np.testing.assert_allclose(iou_matrix(b, a), want, atol=1e-6)


def test_box_encoder_matches_an_independent_matching():
    rng = np.random.default_rng(4)
    anchors = _ltrb(rng, 200)
    for _ in range(5):
        boxes = _ltrb(rng, 6)
        labels = rng.integers(1, 9, 6).astype(np.int32)
        enc, lab = box_encoder(boxes, labels, anchors, criteria=0.4)
        match = _encode_py(boxes.astype(float), labels, anchors.astype(float), 0.4)
        want_lab = [labels[k] if k >= 0 else 0 for k in match]
        assert lab.tolist() == want_lab
        src = np.array([boxes[k] if k >= 0 else anchors[j] for j, k in enumerate(match)],
                       np.float64)
        want = np.stack([(src[:, 0] + src[:, 2]) / 2, (src[:, 1] + src[:, 3]) / 2,
                         src[:, 2] - src[:, 0], src[:, 3] - src[:, 1]], 1)
        np.testing.assert_allclose(enc, want, atol=1e-6)
        # offsets: SSD's formula in float64
        S, means, stds = 300.0, [0.1, 0.0, 0.2, 0.0], [0.1, 0.1, 0.2, 0.2]
        off, _ = box_encoder(boxes, labels, anchors, criteria=0.4, offset=True, scale=S,
                             means=means, stds=stds)
        a = anchors.astype(np.float64)
        ac = np.stack([(a[:, 0] + a[:, 2]) / 2, (a[:, 1] + a[:, 3]) / 2, a[:, 2] - a[:, 0],
                       a[:, 3] - a[:, 1]], 1) * S
        bc = want * S
        exp = np.stack([((bc[:, 0] - ac[:, 0]) / ac[:, 2] - means[0]) / stds[0],
                        ((bc[:, 1] - ac[:, 1]) / ac[:, 3] - means[1]) / stds[1],
                        (np.log(bc[:, 2] / ac[:, 2]) - means[2]) / stds[2],
                        (np.log(bc[:, 3] / ac[:, 3]) - means[3]) / stds[3]], 1)
        exp[np.array(match) < 0] = 0
        np.testing.assert_allclose(off, exp, atol=2e-4)


def test_box_encoder_every_box_gets_an_anchor_and_no_boxes():
    anchors = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1], [0, 0.5, 0.5, 1]], np.float32)
    boxes = np.array([[0.0, 0.0, 0.2, 0.2]], np.float32)      # IoU 0.16 < criteria
    enc, lab = box_encoder(boxes, np.array([7], np.int32), anchors, criteria=0.5)
    assert lab.tolist() == [7, 0, 0]
    np.testing.assert_allclose(enc[0], [0.1, 0.1, 0.2, 0.2], atol=1e-7)
    enc, lab = box_encoder(np.zeros((0, 4), np.float32), np.zeros(0, np.int32), anchors)
    assert lab.tolist() == [0, 0, 0]
    np.testing.assert_allclose(enc[1], [0.75, 0.75, 0.5, 0.5])
    with pytest.raises(ValueError, match="2 labels"):
        box_encoder(boxes, np.zeros(2, np.int32), anchors)


def test_ndd_functions_run_per_sample():
    b = ndd.Batch([np.array([[0.1, 0.2, 0.5, 0.6]], np.float32), np.zeros((0, 4), np.float32)])
    lab = ndd.Batch([np.array([3], np.int32), np.zeros((0,), np.int32)])
    enc, el = ndd.box_encoder(b, lab, anchors=[0, 0, .5, .5, .1, .2, .5, .7, .5, .5, 1, 1])
    assert [np.asarray(t).shape for t in enc.tensors] == [(3, 4), (3, 4)]
    assert [np.asarray(t).tolist() for t in el.tensors] == [[0, 3, 0], [0, 0, 0]]
    flipped = ndd.coord_flip(ndd.tensor(np.array([[0.1, 0.2]], np.float32)), flip_y=1)
    np.testing.assert_allclose(np.asarray(flipped), [[0.9, 0.8]], atol=1e-7)
    pasted = ndd.bbox_paste(b, ratio=ndd.Batch([np.float32(2), np.float32(3)]), ltrb=True)
    np.testing.assert_allclose(np.asarray(pasted.tensors[0]), [[0.3, 0.35, 0.5, 0.55]],
                               atol=1e-6)
    with pytest.raises(ValueError, match="criteria"):
        ndd.box_encoder(b, lab, anchors=[0, 0, 1, 1], criteria=1.5)
    with pytest.raises(ValueError, match="multiple of 4"):
        ndd.box_encoder(b, lab, anchors=[0, 0, 1])
    with pytest.raises(ValueError, match="int32 labels"):
        ndd.box_encoder(b, ndd.Batch([np.array([3], np.int64), np.zeros((0,), np.int64)]),
                        anchors=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="float32 input"):
        ndd.coord_flip(ndd.tensor(np.zeros((2, 2), np.float64)))


def test_long_anchor_lists_are_prepared_once():
    """8732 SSD-sized anchors: the front end converts an equal list to the same tuple, whose
    prepared anchors the kernel keeps; results equal a fresh preparation."""
    rng = np.random.default_rng(3)
    lt = rng.uniform(0, 0.7, (8732, 2))
    anchors = np.concatenate([lt, lt + rng.uniform(0.05, 0.3, (8732, 2))], 1).astype(np.float32)
    flat = anchors.reshape(-1).tolist()
    boxes = ndd.Batch([np.array([[0.1, 0.2, 0.5, 0.6]], np.float32)] * 2)
    labels = ndd.Batch([np.array([4], np.int32)] * 2)
    first = ndd.box_encoder(boxes, labels, anchors=flat)
    again = ndd.box_encoder(boxes, labels, anchors=list(flat))   # equal content, new list
    a1 = first[0]._value.producer.args["anchors"]
    a2 = again[0]._value.producer.args["anchors"]
    assert a1 is a2
    assert prepared_anchors(a1) is prepared_anchors(a2)
    want_b, want_l = box_encoder(np.array([[0.1, 0.2, 0.5, 0.6]], np.float32),
                                 np.array([4], np.int32), anchors)
    for out in (first, again):
        for t in out[0].tensors:
            np.testing.assert_array_equal(np.asarray(t), want_b)
        for t in out[1].tensors:
            np.testing.assert_array_equal(np.asarray(t), want_l)
    assert (want_l == 4).sum() >= 1


# ----------------------------------------------------------------------------- DALI oracle
def _dali():
    return pytest.importorskip("nvidia.dali.experimental.dynamic")


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(flip_y=1, center_x=0.3, center_y=0.71),
                                dict(layout="yx", flip_x=0, flip_y=1, center_y=0.2),
                                dict(flip_z=1, flip_x=0, center_z=0.9)])
def test_coord_flip_matches_dali(kw):
    dd = _dali()
    d = 3 if "center_z" in kw else 2
    pts = np.random.default_rng(0).random((64, d)).astype(np.float32) * 2 - 0.5
    want = np.asarray(dd.coord_flip(dd.tensor(pts), **kw).evaluate())
    got = np.asarray(ndd.coord_flip(ndd.tensor(pts), **kw))
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(ratio=2.0), dict(ratio=3.7, paste_x=0.13, paste_y=0.9),
                                dict(ratio=1.3, paste_x=0.7, ltrb=True), dict(ratio=1.0)])
def test_bbox_paste_matches_dali(kw):
    dd = _dali()
    b = np.random.default_rng(1).random((300, 4)).astype(np.float32) * 0.5
    want = np.asarray(dd.bbox_paste(dd.tensor(b), **kw).evaluate())
    got = np.asarray(ndd.bbox_paste(ndd.tensor(b), **kw))
    assert got.dtype == want.dtype and np.array_equal(got, want)


ENC_CASES = [dict(criteria=0.5), dict(criteria=0.3, offset=True),
             dict(criteria=0.3, offset=True, scale=300.0, means=[0.1, 0.2, 0.0, 0.0],
                  stds=[0.1, 0.1, 0.2, 0.2]), dict(criteria=0.0), dict(criteria=1.0)]


@pytest.mark.oracle
def test_box_encoder_column_labels_match_dali():
    dd = _dali()
    rng = np.random.default_rng(5)
    boxes, anchors = _ltrb(rng, 4), _ltrb(rng, 50).reshape(-1).tolist()
    col = np.arange(1, 5, dtype=np.int32).reshape(4, 1)
    want = dd.box_encoder(dd.tensor(boxes), dd.tensor(col), anchors=anchors)
    got = ndd.box_encoder(ndd.tensor(boxes), ndd.tensor(col), anchors=anchors)
    for w, g in zip(want, got):
        w, g = np.asarray(w.evaluate()), np.asarray(g)
        assert w.shape == g.shape and w.dtype == g.dtype and np.array_equal(w, g)


@pytest.mark.oracle
@pytest.mark.parametrize("kw", ENC_CASES)
def test_box_encoder_matches_dali(kw):
    dd = _dali()
    rng = np.random.default_rng(2)
    anchors = _ltrb(rng, 500)
    anchors[7] = anchors[3]                  # duplicate anchors: ties between anchors
    for n in (0, 1, 7, 30):
        boxes = _ltrb(rng, n)
        if n > 7:
            boxes[5] = boxes[2]              # duplicate boxes: ties between boxes
            boxes[6] = anchors[3]            # IoU exactly 1 with two anchors
        labels = rng.integers(1, 80, n).astype(np.int32)
        eb, el = dd.box_encoder(dd.tensor(boxes.reshape(n, 4)), dd.tensor(labels),
                                anchors=anchors.reshape(-1).tolist(), **kw)
        gb, gl = ndd.box_encoder(ndd.tensor(boxes.reshape(n, 4)), ndd.tensor(labels),
                                 anchors=anchors.reshape(-1).tolist(), **kw)
        eb, el = np.asarray(eb.evaluate()), np.asarray(el.evaluate())
        gb, gl = np.asarray(gb), np.asarray(gl)
        assert gl.dtype == el.dtype and gl.shape == el.shape and np.array_equal(gl, el)
        assert gb.dtype == eb.dtype and gb.shape == eb.shape and np.array_equal(gb, eb)


@pytest.mark.oracle
def test_per_sample_arguments_match_dali():
    dd = _dali()
    rng = np.random.default_rng(6)
    boxes = [rng.random((5, 4)).astype(np.float32) * 0.5 for _ in range(3)]
    ratio = [np.float32(1.5), np.float32(2.0), np.float32(3.3)]
    px = [np.float32(0.1), np.float32(0.9), np.float32(0.5)]
    flip = [np.int32(1), np.int32(0), np.int32(1)]
    center = [np.float32(0.2), np.float32(0.5), np.float32(0.75)]
    pts = [b[:, :2].copy() for b in boxes]
    pairs = [(dd.bbox_paste(dd.batch(boxes), ratio=dd.batch(ratio), paste_x=dd.batch(px)),
              ndd.bbox_paste(ndd.Batch(boxes), ratio=ndd.Batch(ratio), paste_x=ndd.Batch(px))),
             (dd.coord_flip(dd.batch(pts), flip_y=dd.batch(flip), center_y=dd.batch(center)),
              ndd.coord_flip(ndd.Batch(pts), flip_y=ndd.Batch(flip),
                             center_y=ndd.Batch(center)))]
    for want, got in pairs:
        for w, g in zip(want.evaluate(), got.tensors):
            w, g = np.asarray(w), np.asarray(g)
            assert w.dtype == g.dtype and np.array_equal(w, g)


@pytest.mark.oracle
def test_box_encoder_edge_cases_match_dali():
    """IoU exactly at ``criteria``, zero-area boxes and anchors, boxes outside [0, 1]."""
    dd = _dali()
    anchors = np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 1], [0.25, 0.25, 0.25, 0.75],
                        [0, 0, 1, 1], [-0.2, -0.2, 0.3, 0.3], [0.4, 0.4, 0.6, 0.6]],
                       np.float32)
    cases = [np.array([[0, 0, 1, 1]], np.float32),              # IoU 0.5 with two anchors
             np.array([[0.3, 0.3, 0.3, 0.9], [0, 0, 1, 1]], np.float32),   # zero width
             np.array([[-0.5, -0.5, 0.2, 0.2], [0.8, 0.8, 1.4, 1.3]], np.float32),
             np.array([[0.4, 0.4, 0.6, 0.6], [0.4, 0.4, 0.6, 0.6]], np.float32)]
    for boxes in cases:
        labels = np.arange(1, len(boxes) + 1, dtype=np.int32)
        for kw in (dict(criteria=0.5), dict(criteria=0.5, offset=True), dict(criteria=0.25)):
            want = dd.box_encoder(dd.tensor(boxes), dd.tensor(labels),
                                  anchors=anchors.reshape(-1).tolist(), **kw)
            got = ndd.box_encoder(ndd.tensor(boxes), ndd.tensor(labels),
                                  anchors=anchors.reshape(-1).tolist(), **kw)
            for w, g in zip(want, got):
                w, g = np.asarray(w.evaluate()), np.asarray(g)
                assert w.dtype == g.dtype and np.array_equal(w, g, equal_nan=True), \
                    (boxes.tolist(), kw, w.tolist(), g.tolist())
