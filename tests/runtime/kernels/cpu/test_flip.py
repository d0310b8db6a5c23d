"""Tests for runtime.kernels.cpu.flip."""

import numpy as np
import pytest

from runtime.kernels.cpu.flip import flip

X = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)


# ---------------------------------------------------------------- flip

def test_flip_2x3():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.int16)
    np.testing.assert_array_equal(flip(a, layout="HW"), [[3, 2, 1], [6, 5, 4]])
    np.testing.assert_array_equal(flip(a, layout="HW", horizontal=0, vertical=1),
                                  [[4, 5, 6], [1, 2, 3]])
    np.testing.assert_array_equal(flip(a, layout="HW", horizontal=2, vertical=-1),
                                  [[6, 5, 4], [3, 2, 1]])


def test_flip_layouts():
    np.testing.assert_array_equal(flip(X), X[:, ::-1])
    chw = np.ascontiguousarray(X.transpose(2, 0, 1))
    np.testing.assert_array_equal(flip(chw, layout="CHW", vertical=1), chw[:, ::-1, ::-1])
    d = X[None].repeat(2, 0)
    d[1] += 1
    np.testing.assert_array_equal(flip(d, layout="DHWC", horizontal=0, depthwise=1), d[::-1])
    # depthwise on a layout without D is ignored (as in DALI)
    np.testing.assert_array_equal(flip(X, horizontal=0, depthwise=1), X)
    out = flip(X)
    assert out.flags.c_contiguous and not np.shares_memory(out, X)


def test_flip_errors():
    with pytest.raises(ValueError, match="layout"):
        flip(X, layout="HW")
    with pytest.raises(TypeError, match="horizontal"):
        flip(X, horizontal=0.5)


@pytest.mark.oracle
@pytest.mark.parametrize("flags", [(1, 0), (0, 1), (1, 1)])
def test_flip_matches_dali(flags):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    skimage_data = pytest.importorskip("skimage.data")
    img = np.ascontiguousarray(skimage_data.astronaut()[:123, :77])
    for layout, arr in (("HWC", img), ("CHW", np.ascontiguousarray(img.transpose(2, 0, 1)))):
        ref = dalidyn.flip(dalidyn.as_tensor(arr, layout=layout), horizontal=flags[0],
                           vertical=flags[1])
        np.testing.assert_array_equal(
            flip(arr, layout=layout, horizontal=flags[0], vertical=flags[1]), np.asarray(ref))
