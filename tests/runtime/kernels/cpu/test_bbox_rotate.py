"""bbox_rotate: a float64 reference (corners as complex numbers turned about the image
center), the removal rule, labels, errors; DALI 2.4's operator bit for bit (oracle)."""
import math

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.bbox import bbox_rotate

BOXES = np.array([[0.1, 0.2, 0.4, 0.5], [0.6, 0.05, 0.95, 0.3], [0.0, 0.7, 0.2, 1.0],
                  [0.45, 0.45, 0.55, 0.55]], np.float32)


def _reference(boxes, angle, in_wh, canvas_wh, mode="expand", threshold=0.1):
    """Relative ltrb boxes rotated counter-clockwise (y down) by ``angle`` degrees about the
    image center onto a canvas of ``canvas_wh``; float64."""
    w, h = in_wh
    cw, ch = canvas_wh
    turn = complex(math.cos(math.radians(angle)), -math.sin(math.radians(angle)))
    out, keep = [], []
    for k, (l, t, r, b) in enumerate(boxes.astype(np.float64)):
        pts = [complex((x - 0.5) * w, (y - 0.5) * h) * turn + complex(cw / 2, ch / 2)
               for x, y in ((l, t), (r, t), (l, b), (r, b))]
        xs, ys = [p.real for p in pts], [p.imag for p in pts]
        x0, y0, x1, y1 = min(xs), min(ys), max(xs), max(ys)
        if mode != "expand":
            ow, oh = (r - l) * w, (b - t) * h
            nw, nh = x1 - x0, y1 - y0
            if (ow < oh) != (nw < nh):
                ow, oh = oh, ow
            dw, dh = (nw - ow) / 2, (nh - oh) / 2
            if mode == "halfway":
                dw, dh = dw / 2, dh / 2
            x0, y0, x1, y1 = x0 + dw, y0 + dh, x1 - dw, y1 - dh
        area = (x1 - x0) * (y1 - y0)
        cx0, cy0 = min(max(x0, 0), cw), min(max(y0, 0), ch)
        cx1, cy1 = min(max(x1, 0), cw), min(max(y1, 0), ch)
        if area > 0 and (cx1 - cx0) * (cy1 - cy0) / area >= threshold:
            out.append([cx0 / cw, cy0 / ch, cx1 / cw, cy1 / ch])
            keep.append(k)
    return np.asarray(out).reshape(-1, 4), keep


@pytest.mark.parametrize("angle", [0.0, 17.0, 90.0, -63.0, 135.0, 200.0])
@pytest.mark.parametrize("mode", ["expand", "fixed", "halfway"])
def test_matches_the_float64_reference_on_the_input_canvas(angle, mode):
    labels = np.arange(4, dtype=np.int32) + 7
    out, lab = bbox_rotate(BOXES, labels, angle=angle, input_shape=(300, 400), keep_size=True,
                           mode=mode)
    want, keep = _reference(BOXES, angle, (400, 300), (400, 300), mode)
    assert lab.tolist() == (labels[keep]).tolist()
    np.testing.assert_allclose(out, want, atol=2e-5)
    assert out.dtype == np.float32


def test_explicit_canvas_pixels_and_xywh():
    out = bbox_rotate(BOXES, angle=30.0, input_shape=(300, 400), size=(500.9, 600.2))
    want, _ = _reference(BOXES, 30.0, (400, 300), (600, 500))        # size floored, (H, W)
    np.testing.assert_allclose(out, want, atol=2e-5)
    px = BOXES * np.array([400, 300, 400, 300], np.float32)
    xywh = np.concatenate([px[:, :2], px[:, 2:] - px[:, :2]], 1)
    got = bbox_rotate(xywh, angle=30.0, input_shape=(300, 400, 3), keep_size=True, ltrb=False,
                      normalized=False)
    want, _ = _reference(BOXES, 30.0, (400, 300), (400, 300))
    want = want * [400, 300, 400, 300]
    want[:, 2:] -= want[:, :2]
    np.testing.assert_allclose(got, want, atol=2e-3)
    wh = bbox_rotate(BOXES, angle=90.0, input_shape=(400, 300), shape_layout="WH",
                     keep_size=True)          # W first
    np.testing.assert_allclose(wh, _reference(BOXES, 90.0, (400, 300), (400, 300))[0],
                               atol=2e-5)


def test_removal_threshold_and_empty_inputs():
    box = np.array([[0.8, 0.8, 1.0, 1.0]], np.float32)     # a corner box leaves the canvas
    assert len(bbox_rotate(box, angle=45.0, input_shape=(100, 100), keep_size=True,
                           remove_threshold=0.9)) == 0
    assert len(bbox_rotate(box, angle=45.0, input_shape=(100, 100), keep_size=True,
                           remove_threshold=0.0)) == 1
    out, lab = bbox_rotate(np.zeros((0, 4), np.float32), np.zeros(0, np.int32), angle=10.0,
                           input_shape=(10, 10))
    assert out.shape == (0, 4) and lab.shape == (0,)
    col = bbox_rotate(BOXES, np.arange(4, dtype=np.int32).reshape(4, 1), angle=0.0,
                      input_shape=(10, 10), keep_size=True)[1]
    assert col.shape == (4, 1)


def test_errors_and_the_ndd_function():
    with pytest.raises(ValueError, match="float32"):
        bbox_rotate(BOXES.astype(np.float64), angle=1.0, input_shape=(10, 10))
    with pytest.raises(ValueError, match="fewer dimensions"):
        bbox_rotate(BOXES, angle=1.0, input_shape=(10,))
    with pytest.raises(ValueError, match="mutually exclusive"):
        ndd.bbox_rotate(ndd.tensor(BOXES), angle=1.0, input_shape=[10, 10], keep_size=True,
                        size=[5, 5])
    angles = ndd.batch([np.float32(0.0), np.float32(90.0)])
    b = ndd.batch([BOXES, BOXES])
    res = {}
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out, lab = ndd.bbox_rotate(b, ndd.batch([np.arange(4, dtype=np.int32)] * 2),
                                       angle=angles, input_shape=[200, 200], keep_size=True)
            res[mode] = [np.asarray(t) for t in out.tensors] + [np.asarray(t) for t in lab.tensors]
    for x, y in zip(*res.values()):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(res[ndd.EvalMode.eager][0], BOXES, atol=1e-6)  # 0 degrees
    np.testing.assert_allclose(res[ndd.EvalMode.eager][1],
                               _reference(BOXES, 90.0, (200, 200), (200, 200))[0], atol=2e-5)


# ----------------------------------------------------------------------------- DALI oracle
CASES = [dict(angle=30.0), dict(angle=-73.5, mode="fixed"), dict(angle=120.0, mode="halfway"),
         dict(angle=45.0, keep_size=True), dict(angle=10.0, size=[500.7, 300.2]),
         dict(angle=200.0, keep_size=True, remove_threshold=0.5), dict(angle=90.0),
         dict(angle=37.0, bbox_layout="xyWH"),
         dict(angle=33.0, bbox_normalized=False, keep_size=True)]


@pytest.mark.oracle
@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("shape", [[480, 640], [333, 517, 3]])
def test_matches_dali(kw, shape):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(len(str(kw)) + shape[0])
    lt = rng.uniform(0, 0.7, (8, 2))
    b = np.concatenate([lt, lt + rng.uniform(0.02, 0.3, (8, 2))], 1).astype(np.float32)
    if kw.get("bbox_layout") == "xyWH":
        b[:, 2:] -= b[:, :2]
    if kw.get("bbox_normalized") is False:
        b = b * np.float32(300)
    lab = np.arange(8, dtype=np.int32)
    o1, l1 = ndd.bbox_rotate(ndd.tensor(b), ndd.tensor(lab), input_shape=shape, **kw)
    o2, l2 = dali.bbox_rotate(dali.tensor(b), dali.tensor(lab), input_shape=shape, **kw)
    np.testing.assert_array_equal(np.asarray(o1), np.asarray(o2))
    np.testing.assert_array_equal(np.asarray(l1), np.asarray(l2))
