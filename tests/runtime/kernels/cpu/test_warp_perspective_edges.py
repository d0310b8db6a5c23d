"""experimental.warp_perspective at its edges: samples without a layout (read by their number
of dimensions, as DALI 2.4's CPU operator does) and matrices for which some output pixel has
``w == 0`` exactly (DALI 2.4 = OpenCV 5's warpPerspective returns an image; never a crash)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.warp_perspective import warp_perspective

M = np.array([[1, 0.1, 0], [0.05, 1, 0], [0.001, 0.002, 1]], np.float32)
LAYOUT_SHAPES = [(16, 16), (16, 16, 3), (16, 16, 1), (2, 16, 16, 3), (16, 16, 5), (3, 16, 16),
                 (1, 2, 16, 16, 3), (16,)]


def _img(shape, dtype=np.uint8):
    return (np.arange(int(np.prod(shape))) % 251).astype(dtype).reshape(shape)


def _select(out):
    return np.asarray(out.select(0))


def test_no_layout_is_read_by_the_number_of_dimensions():
    for shape, lay in (((16, 16), "HW"), ((16, 16, 3), "HWC"), ((2, 16, 16, 3), "FHWC")):
        x = _img(shape)
        out = ndd.experimental.warp_perspective(ndd.Batch([x]), matrix=M)
        want = ndd.experimental.warp_perspective(ndd.Batch([x], layout=lay), matrix=M)
        np.testing.assert_array_equal(_select(out), _select(want))
        assert out.layout == lay
    seq = _img((2, 16, 16, 3))
    got = _select(ndd.experimental.warp_perspective(ndd.Batch([seq]), matrix=M))
    np.testing.assert_array_equal(got[1], warp_perspective(seq[1], M))


def test_no_layout_errors():
    with pytest.raises(Exception, match="more than 4 channels"):    # (3, 16, 16): 16 channels
        ndd.experimental.warp_perspective(ndd.Batch([_img((3, 16, 16))]), matrix=M).evaluate()
    for shape in ((1, 2, 16, 16, 3), (16,)):
        with pytest.raises(ValueError, match=f"number of dimensions {len(shape)} does not "
                                             f"match any of the allowed layouts"):
            ndd.experimental.warp_perspective(ndd.Batch([_img(shape)]), matrix=M).evaluate()
    with pytest.raises(ValueError, match='layout "FHW" does not match'):
        ndd.experimental.warp_perspective(ndd.Batch([_img((2, 16, 16))], layout="FHW"),
                                          matrix=M).evaluate()


def _outcome(mod, x, layout=None, **kw):
    try:
        return _select(mod.experimental.warp_perspective(mod.Batch([x], layout=layout), **kw))
    except Exception as e:     # noqa: BLE001 - the outcome compared is the message
        return str(e).split(": ", 1)[-1] if mod is ndd else str(e)


@pytest.mark.oracle
def test_no_layout_matches_dali():
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    for shape in LAYOUT_SHAPES:
        x = _img(shape)
        want, got = _outcome(dali, x, matrix=M), _outcome(ndd, x, matrix=M)
        if isinstance(want, str):
            assert isinstance(got, str) and got.strip() == want.strip(), shape
        else:
            np.testing.assert_array_equal(got, want)
    want = _outcome(dali, _img((2, 16, 16)), "FHW", matrix=M)
    assert _outcome(ndd, _img((2, 16, 16)), "FHW", matrix=M).strip() == want.strip()
