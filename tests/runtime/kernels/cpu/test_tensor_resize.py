"""runtime/kernels/cpu/tensor_resize.py and params/tensor_resize.py: N-D geometry (DALI 2.4's
rules, worked by hand) and resampling against independent numpy interpolation."""
import numpy as np
import pytest

from runtime.kernels.cpu.tensor_resize import resample_axis, tensor_resize
from runtime.kernels.params.tensor_resize import resized_axes, tensor_resize_geometry as geo


def _shape(in_shape, axes, **kw):
    return tuple(w.out_len for w in geo(in_shape, axes, **kw))


def test_geometry_extents():
    assert _shape((37, 53, 3), [0, 1], sizes=(20, 30)) == (20, 30, 3)
    assert _shape((37, 53, 3), [0, 1], scales=(0.5, 0.5)) == (19, 27, 3)      # 18.5 -> 19
    assert _shape((37, 53, 3), [0, 1], scales=0.33, size_rounding="truncate") == (12, 17, 3)
    assert _shape((37, 53, 3), [0, 1], scales=0.33, size_rounding="ceil") == (13, 18, 3)
    # a missing extent: the geometric mean of the given scales, the unnamed C counting as 1
    w = round(53 * (20 / 37 * 1.0) ** 0.5)
    assert _shape((37, 53, 3), [0, 1], sizes=(20, 0)) == (20, w, 3)
    # not_larger: one scale for every axis, the unnamed ones too
    assert _shape((37, 53, 3), [0, 1], sizes=(20, 30), mode="not_larger") == (20, 29, 2)
    assert _shape((6, 8, 10), [0, 1, 2], sizes=(3, 4, 0), mode="stretch") == (3, 4, 10)
    assert _shape((6, 8, 10), [0, 1], sizes=(3, 4), max_size=(100, 2)) == (3, 2, 10)


def test_geometry_windows():
    (n, a, b), = geo((10,), [0], sizes=(4,))
    assert (n, a, b) == (4, 0.0, 10.0)
    (n, a, b), = geo((10,), [0], scales=(0.33,), alignment=0.0)    # 3.3 -> 3, start kept
    assert n == 3 and a == 0.0 and b == pytest.approx(10 * 3 / 3.3, rel=1e-6)
    (n, a, b), = geo((10,), [0], scales=(0.33,), alignment=1.0)    # end kept
    assert b == 10.0 and a == pytest.approx(10 - 10 * 3 / 3.3, rel=1e-6)
    (n, a, b), = geo((10,), [0], sizes=(7,), roi_start=(0.8,), roi_end=(0.2,), roi_relative=True)
    assert n == 7 and a == pytest.approx(8.0) and b == pytest.approx(2.0)      # flipped


def test_geometry_errors():
    with pytest.raises(ValueError, match="Need one of"):
        geo((4, 4), [0, 1])
    with pytest.raises(ValueError, match="Need one of"):
        geo((4, 4), [0, 1], sizes=(2, 2), scales=(1, 1))
    with pytest.raises(ValueError, match="expects either a single value or a list of 2"):
        geo((4, 4), [0, 1], sizes=(2, 2, 2))
    with pytest.raises(ValueError, match="incompatible"):
        geo((4, 4), [0, 1], scales=(2, 2), mode="not_larger")
    with pytest.raises(ValueError, match="mutually exclusive"):
        resized_axes(2, "HW", axes=(0,), axis_names="H")
    assert resized_axes(3, "HWC", axis_names="WH") == [1, 0]
    assert resized_axes(3, "", axes=(-1,)) == [2]


def _tent(x, out_len):
    """Linear interpolation at the pixel centres, edges clamped (no antialiasing)."""
    n = len(x)
    c = (np.arange(out_len) + 0.5) * n / out_len - 0.5
    return np.interp(c, np.arange(n), x)


def test_linear_upscale_is_tent_interpolation():
    x = np.arange(10, dtype=np.float32) ** 1.5
    out = resample_axis(x[None, :, None], 1, 25, 0.0, 10.0, "linear", True, False)
    np.testing.assert_allclose(out[0, :, 0], _tent(x, 25), rtol=1e-5, atol=1e-5)


def test_volume_axes_are_independent_1d_resizes():
    rng = np.random.default_rng(0)
    v = rng.standard_normal((5, 6, 7)).astype(np.float32)
    wins = geo(v.shape, [0, 1, 2], sizes=(9, 6, 13))
    out = tensor_resize(v, wins, antialias=False)
    ref = np.apply_along_axis(_tent, 0, v, 9)
    ref = np.apply_along_axis(_tent, 2, ref, 13)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_nearest_neighbour_picks_samples():
    x = np.arange(12, dtype=np.uint16).reshape(3, 4) * 100
    wins = geo(x.shape, [0, 1], sizes=(6, 2))
    out = tensor_resize(x, wins, interp_type="nn")
    rows = np.floor((np.arange(6) + 0.5) * 3 / 6).astype(int)
    cols = np.floor((np.arange(2) + 0.5) * 4 / 2).astype(int)
    np.testing.assert_array_equal(out, x[rows][:, cols])
    assert out.dtype == np.uint16


def test_image_path_and_dtypes():
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (20, 30, 3)).astype(np.uint8)
    wins = geo(img.shape, [0, 1], sizes=(40, 60))
    out = tensor_resize(img, wins, antialias=False, dtype=np.float32)
    assert out.dtype == np.float32 and out.shape == (40, 60, 3)
    ref = np.apply_along_axis(_tent, 0, img.astype(np.float64), 40)
    ref = np.apply_along_axis(_tent, 1, ref, 60)
    np.testing.assert_allclose(out, ref, atol=1e-3)
    same = tensor_resize(img, geo(img.shape, [0, 1], sizes=(20, 30)))
    np.testing.assert_array_equal(same, img)


def test_kernel_errors():
    with pytest.raises(TypeError, match="Unsupported type: int32"):
        tensor_resize(np.zeros((4, 4), np.int32), geo((4, 4), [0], sizes=(2,)))
    with pytest.raises(ValueError, match="original type or float"):
        tensor_resize(np.zeros((4, 4), np.uint8), geo((4, 4), [0], sizes=(2,)), dtype=np.int16)
    with pytest.raises(ValueError, match="more than 3"):
        tensor_resize(np.zeros((4, 4, 4, 4), np.float32),
                      geo((4, 4, 4, 4), [0, 1, 2, 3], sizes=(2, 2, 2, 2)))
