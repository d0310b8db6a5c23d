"""Tests for runtime.kernels.cpu.shaping (squeeze, cat, pad, one_hot, c_convert) against
independent numpy/torch computations, and the schemas' axis and layout rules."""
import numpy as np
import pytest
import torch

from compiler.ir import ValueMeta
from compiler.ops.shaping import _one_hot_infer, _squeeze_infer, axes_of, cat_axis
from runtime.kernels.cpu.shaping import c_convert, cat, one_hot, pad_batch, squeeze


def test_c_convert_truncates_and_wraps_like_cpp():
    # independent: torch's float->int casts truncate; wrap by modular arithmetic
    for v in (2.7, -2.7, 0.5, -0.5, 300.0, -1.0, -1.5, 200.0):
        t = int(torch.tensor(v, dtype=torch.float32).to(torch.int32))
        assert c_convert(v, "int32") == t
        assert c_convert(v, "uint8") == t % 256
        assert c_convert(v, "int8") == (t + 128) % 256 - 128
        assert c_convert(v, "uint16") == t % 65536
    assert c_convert(1e10, "int32") == -2 ** 31          # x86 "integer indefinite"
    assert c_convert(1e10, "uint8") == 0                  # INT32_MIN's low byte
    assert c_convert(float("nan"), "int64") == -2 ** 63
    assert c_convert(-1.0, "uint32") == 2 ** 32 - 1
    assert c_convert(2.0 ** 63, "uint64") == 2 ** 63
    assert c_convert(0.1, "float16") == np.float16(0.1)
    assert c_convert(0.1, "float64") == float(np.float32(0.1))
    assert c_convert(2, "bool") and not c_convert(0.0, "bool")


def test_squeeze_removes_unit_axes():
    x = np.arange(6).reshape(1, 2, 1, 3)
    np.testing.assert_array_equal(squeeze(x, [0, 2]), x[0, :, 0, :])
    np.testing.assert_array_equal(squeeze(np.ones((1, 1)), [0, 1]), np.float64(1.0))
    assert squeeze(np.zeros((0, 1, 0)), [0]).shape == (1, 0)       # volume 0 both ways
    with pytest.raises(ValueError, match="volume of the new shape"):
        squeeze(x, [1])
    with pytest.raises(ValueError, match="volume of the new shape"):
        squeeze(np.zeros((1, 0, 3)), [1])


def test_squeeze_schema_axes_and_layout():
    m = ValueMeta("int16", 4, "FHWC")
    assert _squeeze_infer([m], {"axes": [0, 2]})[0].layout == "HC"
    assert _squeeze_infer([m], {"axis_names": "FW"})[0].ndim == 2
    for bad, match in (({}, "Missing argument"), ({"axes": [0], "axis_names": "F"}, "both"),
                       ({"axes": [0, 0]}, "twice"), ({"axis_names": "Z"}, "not present"),
                       ({"axes": [4]}, "out of range")):
        with pytest.raises(ValueError, match=match):
            _squeeze_infer([m], bad)


def test_cat_axes():
    a, b = np.arange(6).reshape(2, 3), np.arange(4).reshape(2, 2) + 10
    got = cat([a, b], 1)
    assert got.tolist() == [[0, 1, 2, 10, 11], [3, 4, 5, 12, 13]]
    assert torch.equal(torch.from_numpy(cat([a, a, a], 0)), torch.cat([torch.from_numpy(a)] * 3))
    with pytest.raises(ValueError, match="Mismatch in axis 1"):
        cat([a, b], 0)
    assert cat_axis(2, ["", "HW"], -1, None) == 1
    assert cat_axis(2, ["HW"], None, "H") == 0 and cat_axis(3, [""], None, None) == 0
    with pytest.raises(ValueError, match="Invalid axis"):
        cat_axis(2, [""], 2, None)
    with pytest.raises(ValueError, match="undefined axis"):
        cat_axis(2, ["HW"], None, "C")
    with pytest.raises(ValueError, match="cannot be used together"):
        cat_axis(2, ["HW"], 1, "W")


def _ref_pad(x, target, fill):
    out = np.full(target, fill, x.dtype)
    out[tuple(slice(0, e) for e in x.shape)] = x
    return out


def test_pad_extents():
    s = [np.array([3, 4, 2, 5, 4]), np.array([2, 2]), np.array([3, 199, 5])]
    assert [len(y) for y in pad_batch(s, None)] == [5, 5, 5]
    assert [len(y) for y in pad_batch(s, [0], [[7]] * 3)] == [7, 7, 7]
    assert [len(y) for y in pad_batch(s, [0], None, [[4]] * 3)] == [8, 8, 8]
    got = pad_batch(s, [0], [[1]] * 3, [[2]] * 3, [-1.0] * 3)
    assert [y.tolist() for y in got] == [[3, 4, 2, 5, 4, -1], [2, 2], [3, 199, 5, -1]]
    two = [np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)]
    got = pad_batch(two, [0, 1], [[4, -1]] * 2, [[1, 2]] * 2)
    for x, y in zip(two, got):
        np.testing.assert_array_equal(y, _ref_pad(x, (4, 4), 0))
    got = pad_batch(two, [1], None, None, [42.0, 7.0])
    np.testing.assert_array_equal(got[0], _ref_pad(two[0], (2, 3), 42.0))
    np.testing.assert_array_equal(got[1], _ref_pad(two[1], (3, 3), 7.0))
    assert pad_batch([np.array([1], np.uint8), np.array([1, 2], np.uint8)], None,
                     fills=[-1.0, 0.0])[0].tolist() == [1, 255]
    with pytest.raises(ValueError, match="positive"):
        pad_batch(two, None, aligns=[[0]] * 2)
    with pytest.raises(ValueError, match='"shape" expected shape 1'):
        pad_batch(two, [0], [[4, 4]] * 2)


def test_one_hot_against_torch():
    labels = np.array([[0, 2], [1, 3]], np.int64)
    ref = torch.nn.functional.one_hot(torch.from_numpy(labels), 4).numpy()
    np.testing.assert_array_equal(one_hot(labels, 4, 2), ref.astype(np.float32))
    np.testing.assert_array_equal(one_hot(labels, 4, 0, dtype="int32"),
                                  np.moveaxis(ref, -1, 0).astype(np.int32))
    np.testing.assert_array_equal(one_hot(np.array([[1]]), 3, None), [0, 1, 0])
    got = one_hot(np.array([1.7, -0.5, 5.0, -1.0], np.float32), 3, 1, 7.6, -1.5, "int32")
    assert got.tolist() == [[-1, 7, -1], [7, -1, -1], [-1, -1, -1], [-1, -1, -1]]


def test_one_hot_schema():
    m = ValueMeta("int32", 1, "")
    assert _one_hot_infer([m], {"axis": 0})[0].ndim == 2
    assert _one_hot_infer([m], {})[0].ndim is None             # DALI's legacy scalar rule
    assert _one_hot_infer([ValueMeta("int32", 2, "AB")], {"axis": 1, "axis_name": "C"})[
        0].layout == "ACB"
    for bad, match in (({"axis": 2}, "outside of allowed range"),
                       ({"axis": -2}, "outside of allowed range"),
                       ({"axis_name": "KL"}, "single character"),
                       ({"dtype": "float16"}, "unsupported output type"),
                       ({"axis": 0, "axis_name": "K"}, "layout mismatch")):
        with pytest.raises(ValueError, match=match):
            _one_hot_infer([m], bad)
    assert axes_of(2, "HW", [-1], None, negative=True) == [1]
