"""Tests for runtime.kernels.cpu.slicing and runtime.kernels.params.nd_slice (``slice``)."""
import numpy as np
import pytest

from runtime.kernels.cpu.slicing import slice_data
from runtime.kernels.params.nd_slice import slice_axes, slice_window

X = np.arange(4 * 5 * 3, dtype=np.int16).reshape(4, 5, 3)


def test_axes_resolution():
    assert slice_axes({}, "HWC", 3) == [1, 0]                     # 'WH'
    assert slice_axes({}, "", 3) == [1, 0]
    assert slice_axes({"axes": (0, -1)}, "HWC", 3) == [0, 2]
    assert slice_axes({"axis_names": "C", "axes": (0,)}, "HWC", 3) == [2]   # names win
    with pytest.raises(ValueError, match="layout"):
        slice_axes({"axis_names": "D"}, "HWC", 3)
    with pytest.raises(ValueError, match="out of range"):
        slice_axes({"axes": (3,)}, "HWC", 3)


def test_windows_and_rounding():
    assert slice_window(X.shape, "HWC", {"start": (1, 2)}) == ([2, 1, 0], [4, 5, 3])
    assert slice_window(X.shape, "", {"end": (1,), "axes": (0,)}) == ([0, 0, 0], [1, 5, 3])
    # relative coordinates round half up; the end is round(start + extent)
    assert slice_window(X.shape, "", {"rel_start": (0.1,), "rel_shape": (0.5,), "axes": (1,)}) \
        == ([0, 1, 0], [4, 3, 3])
    assert slice_window(X.shape, "", {"rel_start": (0.5,), "rel_shape": (0.3,), "axes": (1,)}) \
        == ([0, 3, 0], [4, 4, 3])
    # float anchor/shape inputs are relative, integer ones absolute
    assert slice_window(X.shape, "HWC", {}, np.array([0.2, 0.25]), np.array([0.6, 0.5])) \
        == ([1, 1, 0], [3, 4, 3])
    assert slice_window(X.shape, "HWC", {}, np.array([1, 1]), np.array([2, 2])) \
        == ([1, 1, 0], [3, 3, 3])
    with pytest.raises(ValueError, match="twice"):
        slice_window(X.shape, "", {"start": (1,), "rel_start": (0.1,), "axes": (0,)})
    with pytest.raises(ValueError, match="coordinates"):
        slice_window(X.shape, "HWC", {"start": (1, 2, 0)})


def test_in_bounds_slices_are_numpy_slices():
    a = {"start": (1, 1), "end": (3, 4), "axes": (0, 1)}
    np.testing.assert_array_equal(slice_data(X, "HWC", a), X[1:3, 1:4])
    out = slice_data(X.astype(np.uint8), "HWC", {"start": (1,), "axes": (0,)}, dtype="float32")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, X[1:].astype(np.float32))


@pytest.mark.parametrize("policy,mode", [("edge", "edge"), ("clamp", "edge"),
                                         ("reflect", "symmetric"), ("reflect_1001", "symmetric"),
                                         ("reflect_101", "reflect"), ("wrap", "wrap")])
def test_out_of_bounds_policies_follow_numpy_pad(policy, mode):
    a = {"start": (-2,), "end": (7,), "axes": (0,), "out_of_bounds_policy": policy}
    want = np.pad(X, ((2, 3), (0, 0), (0, 0)), mode=mode)
    np.testing.assert_array_equal(slice_data(X, "HWC", a), want)


def test_pad_trim_and_error():
    a = {"start": (-1,), "end": (6,), "axes": (0,), "out_of_bounds_policy": "pad",
         "fill_values": (7.0,)}
    np.testing.assert_array_equal(slice_data(X, "HWC", a),
                                  np.pad(X, ((1, 2), (0, 0), (0, 0)), constant_values=7))
    a["fill_values"] = (7.0, 8.0, 9.0)
    out = slice_data(X, "HWC", a)
    np.testing.assert_array_equal(out[0], np.broadcast_to([7, 8, 9], (5, 3)))
    np.testing.assert_array_equal(out[1:5], X)
    a = {"start": (-1,), "end": (6,), "axes": (0,), "out_of_bounds_policy": "trim_to_shape"}
    np.testing.assert_array_equal(slice_data(X, "HWC", a), X)
    with pytest.raises(ValueError, match="out of the bounds"):
        slice_data(X, "HWC", {"start": (-1,), "end": (3,), "axes": (0,)})
    far = {"start": (10,), "end": (12,), "axes": (0,), "out_of_bounds_policy": "pad"}
    assert (slice_data(X, "HWC", far) == 0).all()
