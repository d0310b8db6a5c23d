"""Tests for runtime.kernels.cpu.layout_ops (transpose, reshape)."""

import numpy as np
import pytest

from runtime.kernels.cpu.layout_ops import reshape, transpose

X = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)


# ---------------------------------------------------------------- transpose

def test_transpose():
    out, lay = transpose(X, [2, 0, 1], layout="HWC")
    np.testing.assert_array_equal(out, X.transpose(2, 0, 1))
    assert lay == "CHW" and out.flags.c_contiguous
    out, lay = transpose(X, layout="HWC")  # reversed by default
    assert out.shape == (3, 6, 4) and lay == "CWH"
    assert transpose(X, [2, 0, 1], layout="HWC", transpose_layout=False)[1] == "HWC"
    assert transpose(X, [2, 0, 1], layout="HWC", output_layout="ABC")[1] == "ABC"
    assert transpose(X, [2, 0, 1])[1] is None


@pytest.mark.parametrize("perm", [[2, 0], [2, 0, 0], [3, 0, 1], [-1, 0, 1]])
def test_transpose_bad_perm(perm):
    with pytest.raises(ValueError, match="perm"):
        transpose(X, perm)


def test_transpose_bad_layouts():
    with pytest.raises(ValueError, match="output_layout"):
        transpose(X, [2, 0, 1], output_layout="AB")
    with pytest.raises(TypeError, match="perm"):
        transpose(X, [2.0, 0, 1])


# ---------------------------------------------------------------- reshape

def test_reshape_shape_and_layout():
    out, lay = reshape(X, shape=[24, 3], src_layout="HWC")
    assert out.shape == (24, 3) and lay is None
    assert np.shares_memory(out, X)
    assert reshape(X, shape=[-1, 3])[0].shape == (24, 3)
    assert reshape(X, shape=[6, 4, 3], src_layout="HWC")[1] == "HWC"
    assert reshape(X, shape=[4, 18], layout="AB")[1] == "AB"
    assert reshape(X, layout="XYZ")[1] == "XYZ"
    assert reshape(X, shape=72)[0].shape == (72,)
    assert reshape(np.zeros((0, 3), np.uint8), shape=[-1, 3])[0].shape == (0, 3)
    np.testing.assert_array_equal(reshape(X, shape=[4, 18])[0], X.reshape(4, 18))


def test_reshape_rel_shape():
    assert reshape(X, rel_shape=[0.5, 2, 1], src_layout="HWC") [0].shape == (2, 12, 3)
    assert reshape(X, rel_shape=[0.5, 2, 1], src_layout="HWC")[1] == "HWC"
    assert reshape(X, rel_shape=[0.5, -1])[0].shape == (2, 36)
    assert reshape(X, rel_shape=[1, 1, 1, -1])[0].shape == (4, 6, 3, 1)
    # rounding to nearest: 8 * 0.1875 = 1.5 -> 2
    assert reshape(np.zeros((8, 16)), rel_shape=[0.1875, -1])[0].shape == (2, 64)


def test_reshape_src_dims():
    a = np.zeros((300, 200, 1), np.uint8)
    assert reshape(a, src_dims=[-1, 1, 0])[0].shape == (1, 200, 300)
    assert reshape(a, src_dims=[-1, 1, 0], rel_shape=[-1, 0.5, 2])[0].shape == (1, 100, 600)


@pytest.mark.parametrize("kwargs, words", [
    (dict(), "none of"),
    (dict(shape=[0, -1]), "negative"),
    (dict(shape=[-1, -1]), "one dimension"),
    (dict(shape=[5, -1]), "cannot reshape"),
    (dict(shape=[7, 3]), "cannot reshape"),
    (dict(shape=[4, 18], layout="ABC"), "layout"),
    (dict(shape=[4, 18], rel_shape=[1, 1]), "mutually exclusive"),
    (dict(rel_shape=[1, 1, 1, 1]), "rel_shape"),
    (dict(src_dims=[3, 0]), "src_dims"),
])
def test_reshape_errors(kwargs, words):
    with pytest.raises(ValueError, match=words):
        reshape(X, **kwargs)
    with pytest.raises(TypeError, match="shape"):
        reshape(X, shape=[2.5, 4])


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [
    dict(shape=[24, 3]), dict(shape=[-1, 3]), dict(shape=[6, 4, 3]), dict(rel_shape=[0.5, 2, 1]),
    dict(rel_shape=[0.5, -1]), dict(rel_shape=[1, 1, 1, -1]), dict(shape=[4, 18], layout="AB"),
])
def test_reshape_and_transpose_match_dali(kwargs):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    t = dalidyn.as_tensor(X, layout="HWC")
    ref = dalidyn.reshape(t, **kwargs)
    out, lay = reshape(X, src_layout="HWC", **kwargs)
    np.testing.assert_array_equal(out, np.asarray(ref))
    assert lay == (ref.layout or None)
    ref = dalidyn.transpose(t, perm=[1, 2, 0])
    out, lay = transpose(X, [1, 2, 0], layout="HWC")
    np.testing.assert_array_equal(out, np.asarray(ref))
    assert lay == ref.layout
