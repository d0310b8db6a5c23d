"""multi_paste: a pixel-by-pixel reference (later regions over earlier ones), relative
arguments' rounding, dtype conversion, errors, eager == deferred; DALI 2.4 bit for bit."""
import math

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.multi_paste import multi_paste

A = (np.arange(4 * 5 * 2, dtype=np.uint8).reshape(4, 5, 2) + 1)
B = (np.arange(3 * 6 * 2, dtype=np.uint8).reshape(3, 6, 2) + 100)


def _reference(canvas_hw, regions, channels, dtype=np.uint8):
    """regions: (src, (ay, ax), (h, w), (oy, ox)); each output pixel set one at a time."""
    out = np.zeros(tuple(canvas_hw) + (channels,), dtype)
    for src, (ay, ax), (h, w), (oy, ox) in regions:
        for y in range(h):
            for x in range(w):
                out[oy + y, ox + x] = src[ay + y, ax + x]
    return out


def test_regions_pasted_in_order():
    got = multi_paste([A, B, A], (7, 9), in_anchors=[[0, 0], [1, 1], [2, 3]],
                      shapes=[[3, 4], [2, 5], [2, 2]], out_anchors=[[0, 0], [2, 3], [1, 1]])
    want = _reference((7, 9), [(A, (0, 0), (3, 4), (0, 0)), (B, (1, 1), (2, 5), (2, 3)),
                               (A, (2, 3), (2, 2), (1, 1))], 2)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.uint8


def test_defaults_and_relative_arguments():
    np.testing.assert_array_equal(multi_paste([A], (4, 5)), A)   # whole source at 0, 0
    got = multi_paste([A], (7, 9), in_anchors_rel=[[0.3, 0.3]], shapes_rel=[[0.55, 0.45]],
                      out_anchors_rel=[[0.15, 0.35]])
    ay, ax = math.floor(0.3 * 4), math.floor(0.3 * 5)               # anchors: floor
    h, w = math.ceil(0.55 * 4), math.ceil(0.45 * 5)                  # shapes: ceil
    oy, ox = math.floor(0.15 * 7), math.floor(0.35 * 9)
    np.testing.assert_array_equal(got, _reference((7, 9), [(A, (ay, ax), (h, w), (oy, ox))], 2))
    f = np.array([[[-3.6], [300.4], [2.5], [1.5]]], np.float32)
    assert multi_paste([f], (1, 4), dtype="uint8")[0, :, 0].tolist() == [0, 255, 3, 2]
    seq = np.stack([A, A + 1])                                       # FHWC: every frame
    got = multi_paste([seq], (5, 6), out_anchors=[[1, 1]])
    assert got.shape == (2, 5, 6, 2) and (got[1, 1:, 1:] == A + 1).all()


def test_errors():
    with pytest.raises(ValueError, match="within output bounds"):
        multi_paste([A], (3, 3))
    with pytest.raises(ValueError, match="within input sample"):
        multi_paste([A], (9, 9), in_anchors=[[1, 1]], shapes=[[4, 4]])
    with pytest.raises(ValueError, match="2 values for each"):
        multi_paste([A, A], (9, 9), out_anchors=[[1, 1]])
    imgs = ndd.batch([A, B])
    with pytest.raises(ValueError, match="same shape"):
        ndd.multi_paste(imgs, in_ids=ndd.batch([np.array([0], np.int32)] * 2)).evaluate()
    with pytest.raises(ValueError, match="mutually exclusive"):
        ndd.multi_paste(imgs, in_ids=[0], output_size=[9, 9], shapes=[1, 1], shapes_rel=[1, 1])
    with pytest.raises(ValueError, match="Valid layouts"):
        ndd.multi_paste(ndd.batch([np.zeros((4, 5), np.uint8)]), in_ids=[0])


def test_batches_inputs_and_modes():
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.multi_paste(ndd.batch([A, A[::-1].copy()]),
                                  in_ids=ndd.batch([np.array([1, 0], np.int32),
                                                    np.array([], np.int32)]),
                                  out_anchors=ndd.batch([np.array([[0, 0], [2, 2]], np.int32),
                                                         np.zeros((0, 2), np.int32)]),
                                  output_size=[6, 7], dtype=ndd.float32)
            res.append([np.asarray(t) for t in out.tensors])
    for x, y in zip(*res):
        np.testing.assert_array_equal(x, y)
    want = _reference((6, 7), [(A[::-1], (0, 0), (4, 5), (0, 0)), (A, (0, 0), (4, 5), (2, 2))],
                      2, np.float32)
    np.testing.assert_array_equal(res[0][0], want)
    assert not res[0][1].any() and res[0][1].shape == (6, 7, 2)
    two = ndd.multi_paste(ndd.batch([A]), ndd.batch([A * 0 + 9]),
                          out_anchors=[0, 0, 1, 1], shapes=[4, 5, 3, 4])
    np.testing.assert_array_equal(np.asarray(two.tensors[0]), _reference(
        (4, 5), [(A, (0, 0), (4, 5), (0, 0)), (A * 0 + 9, (0, 0), (3, 4), (1, 1))], 2))


@pytest.mark.oracle
@pytest.mark.parametrize("case", range(4))
def test_matches_dali(case):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    i32, f32 = np.int32, np.float32
    kws = [
        dict(in_ids=[np.array([0, 1], i32), np.array([1], i32)], output_size=[6, 7],
             in_anchors=[np.array([[0, 0], [1, 1]], i32), np.array([[0, 2]], i32)],
             shapes=[np.array([[2, 3], [2, 2]], i32), np.array([[3, 4]], i32)],
             out_anchors=[np.array([[0, 0], [3, 4]], i32), np.array([[1, 1]], i32)]),
        dict(in_ids=[np.array([0], i32)] * 2, output_size=[7, 9],
             in_anchors_rel=[np.array([[0.3, 0.3]], f32)] * 2,
             shapes_rel=[np.array([[0.55, 0.45]], f32)] * 2,
             out_anchors_rel=[np.array([[0.15, 0.35]], f32)] * 2),
        dict(in_ids=[np.array([0, 0], i32)] * 2, output_size=[6, 7], dtype="float32",
             out_anchors=[np.array([[0, 0], [1, 1]], i32)] * 2),
        dict(in_ids=[np.array([1, 0, 1], i32), np.array([0], i32)], output_size=[9, 9],
             out_anchors_rel=[np.array([[0.5, 0.5], [0.1, 0.0], [0.0, 0.3]], f32),
                              np.array([[0.2, 0.2]], f32)]),
    ]
    srcs = [A, np.ascontiguousarray(A[::-1, ::-1])] if case else [A, B]
    outs = []
    for mod in (ndd, dali):
        kw = {k: (mod.batch(v) if isinstance(v, list) and isinstance(v[0], np.ndarray) else
                  (mod.float32 if k == "dtype" else v)) for k, v in kws[case].items()}
        outs.append([np.asarray(t) for t in mod.multi_paste(mod.batch(srcs), **kw).tensors])
    for x, y in zip(*outs):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
