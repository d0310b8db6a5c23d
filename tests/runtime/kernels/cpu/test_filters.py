"""``laplacian``, ``filter``, ``experimental.median_blur`` / ``dilate`` / ``erode`` kernels against
independent references: float64 scipy.ndimage / numpy computations written differently from the
kernels (padding with ``np.pad``, binomial windows from ``math.comb``, window loops in numpy).
DALI 2.4 itself is the oracle in ``test_filters_oracle.py``."""
from __future__ import annotations

import math

import numpy as np
import pytest

from runtime.kernels.cpu.filters import filter2d, laplacian, laplacian_windows
from runtime.kernels.cpu.filters_conv import border_index, conv_axis, to_integer
from runtime.kernels.cpu.filters_morph import median_blur, morphology

ndimage = pytest.importorskip("scipy.ndimage")

_RNG = np.random.default_rng(7)
_NP_PAD = {"reflect_101": "reflect", "reflect_1001": "symmetric", "wrap": "wrap",
           "clamp": "edge", "constant": "constant"}


def _binomial(n):
    return np.array([math.comb(n - 1, k) for k in range(n)], np.float64)


def _deriv(n):
    return np.convolve(_binomial(n - 2), [1.0, -2.0, 1.0])


# ---------------------------------------------------------------- windows, borders, loops
@pytest.mark.parametrize("size", [1, 3, 5, 7, 9, 15, 23])
def test_laplacian_windows_are_binomials_and_second_differences(size):
    smooth, deriv = laplacian_windows(size)
    np.testing.assert_array_equal(smooth, _binomial(size))
    if size >= 3:
        np.testing.assert_array_equal(deriv, _deriv(size))
        assert deriv.sum() == 0
    else:
        assert deriv is None


def test_laplacian_windows_reject_even_sizes():
    with pytest.raises(ValueError):
        laplacian_windows(4)


@pytest.mark.parametrize("mode", list(_NP_PAD))
@pytest.mark.parametrize("n", [1, 2, 5])
def test_border_index_matches_np_pad(mode, n):
    a = np.arange(n) + 10
    lo, hi = -7, n + 7
    if n == 1 and mode in ("reflect_101",):
        expected = np.full(hi - lo, 10)
    else:
        kwargs = {"constant_values": -1} if mode == "constant" else {}
        expected = np.pad(a, (7, 7), mode=_NP_PAD[mode], **kwargs)
    idx = border_index(n, lo, hi, mode)
    got = np.where(idx >= 0, a[np.clip(idx, 0, n - 1)], -1)
    np.testing.assert_array_equal(got, expected)


def test_border_index_rejects_unknown_modes():
    with pytest.raises(ValueError):
        border_index(3, -1, 4, "mirror")


@pytest.mark.parametrize("axis,channels_last", [(0, True), (1, True), (0, False), (2, False)])
def test_conv_axis_is_a_float32_left_to_right_sum(axis, channels_last):
    x = _RNG.integers(0, 256, (6, 9, 3)).astype(np.uint8)
    w = _RNG.random(5).astype(np.float32)
    got = conv_axis(x, w, axis, channels_last)
    n = x.shape[axis]
    idx = border_index(n, -2, n + 2, "reflect_101")
    acc = np.zeros(x.shape, np.float32)
    for k in range(5):
        taps = np.stack([idx[i + k] for i in range(n)])
        acc = acc + np.take(x, taps, axis=axis).astype(np.float32) * w[k]
    np.testing.assert_array_equal(got, acc)


def test_to_integer_rounds_half_away_or_to_even_and_saturates():
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997, 300.0, -300.0, np.nan, np.inf],
                 np.float32)
    np.testing.assert_array_equal(to_integer(v, np.int16),
                                  [1, 2, 3, -1, -2, 0, 300, -300, 0, 32767])
    np.testing.assert_array_equal(to_integer(v, np.uint8), [1, 2, 3, 0, 0, 0, 255, 0, 0, 255])
    np.testing.assert_array_equal(to_integer(v, np.int16, half_even=True),
                                  [0, 2, 2, 0, -2, 0, 300, -300, 0, 32767])


# ---------------------------------------------------------------- laplacian
def _laplacian_ref(x, axes, sizes, scales):
    """float64: per partial derivative, scipy's correlate1d along every data axis."""
    x = x.astype(np.float64)
    total = np.zeros_like(x)
    for i, row in enumerate(sizes):
        cur = x
        for j, size in enumerate(row):
            w = _deriv(size) if j == i else _binomial(size)
            cur = ndimage.correlate1d(cur, w, axis=axes[j], mode="mirror")
        total += scales[i] * cur
    return total


@pytest.mark.parametrize("shape,layout,axes", [
    ((23, 31), "HW", (0, 1)), ((17, 20, 3), "HWC", (0, 1)), ((2, 11, 13), "CHW", (1, 2)),
    ((5, 7, 9), "DHW", (0, 1, 2)), ((3, 9, 10, 2), "FHWC", (1, 2)), ((40,), "", (0,)),
])
def test_laplacian_matches_a_float64_separable_reference(shape, layout, axes):
    x = _RNG.random(shape).astype(np.float32) * 10
    got = laplacian(x, layout, window_size=5)
    n = len(axes)
    ref = _laplacian_ref(x, axes, [[5] * n] * n, [1.0] * n)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3 * np.abs(ref).max())


def test_laplacian_smoothing_one_is_scipys_laplace():
    x = _RNG.random((19, 26)).astype(np.float32)
    got = laplacian(x, "HW", smoothing_size=1)
    np.testing.assert_allclose(got, ndimage.laplace(x.astype(np.float64), mode="mirror"),
                               rtol=1e-5, atol=1e-5)


def test_laplacian_per_axis_windows_scales_and_normalization():
    x = _RNG.random((21, 25)).astype(np.float32)
    got = laplacian(x, "HW", window_size=[3, 7], smoothing_size=[5, 1], scale=[0.5, 2.0])
    ref = _laplacian_ref(x, (0, 1), [[3, 1], [5, 7]], [0.5, 2.0])
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    norm = laplacian(x, "HW", window_size=5, normalized_kernel=True)
    ref = _laplacian_ref(x, (0, 1), [[5, 5]] * 2, [2.0 ** (2 + 2 - 10)] * 2)
    np.testing.assert_allclose(norm, ref, rtol=1e-4, atol=1e-5)


def test_laplacian_integer_output_rounds_half_away_and_saturates():
    x = np.zeros((5, 5), np.uint8)
    x[2, 2] = 1
    # center: -2 * 2 (dy, smoothed by [1,2,1] -> weight 2) twice = -8, neighbours +2 / +1
    out = laplacian(x, "HW", scale=0.25)
    ref = _laplacian_ref(x, (0, 1), [[3, 3]] * 2, [0.25] * 2)
    expected = np.clip(np.sign(ref) * np.floor(np.abs(ref) + 0.5), 0, 255)
    np.testing.assert_array_equal(out, expected)
    big = laplacian(np.full((4, 4), 200, np.uint8) * np.eye(4, dtype=np.uint8), "HW")
    assert big.dtype == np.uint8 and big.max() == 255 and big.min() == 0


@pytest.mark.parametrize("kw,match", [
    (dict(window_size=1), "odd integer between 3 and 31"),
    (dict(window_size=33), "odd integer between 3 and 31"),
    (dict(smoothing_size=0), "between 1 and 31"),
    (dict(scale=[1, 2, 3]), "1 or 2 elements"),
    (dict(normalized_kernel=True, scale=2.0), "normalized_kernel"),
    (dict(dtype="int16"), "same as input, FLOAT"),
])
def test_laplacian_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        laplacian(np.zeros((5, 5), np.uint8), "HW", **kw)


def test_laplacian_rejects_types_and_layouts_as_dali():
    with pytest.raises(ValueError, match="double"):
        laplacian(np.zeros((5, 5)), "HW")
    with pytest.raises(ValueError, match="channel-first or channel-last"):
        laplacian(np.zeros((5, 3, 5), np.uint8), "HCW")


# ---------------------------------------------------------------- filter
def _filter_ref(x, k, border, anchor=(-1, -1), fill=0):
    """float64 correlation over an np.pad-ed plane, one window position at a time per tap."""
    kh, kw = k.shape
    ay = kh // 2 if anchor[0] < 0 else anchor[0]
    ax = kw // 2 if anchor[1] < 0 else anchor[1]
    pads = [(ay, kh - 1 - ay), (ax, kw - 1 - ax)] + [(0, 0)] * (x.ndim - 2)
    kwargs = {"constant_values": fill} if border == "constant" else {}
    p = np.pad(x.astype(np.float64), pads, mode=_NP_PAD[border], **kwargs)
    h, w = x.shape[:2]
    out = np.zeros(x.shape, np.float64)
    for i in range(kh):
        for j in range(kw):
            out += float(k[i, j]) * p[i:i + h, j:j + w]
    return out


@pytest.mark.parametrize("border", list(_NP_PAD))
@pytest.mark.parametrize("kshape", [(3, 3), (1, 5), (4, 2), (7, 7)])
def test_filter_matches_a_float64_reference(border, kshape):
    x = _RNG.random((13, 17, 3)).astype(np.float32)
    k = _RNG.standard_normal(kshape).astype(np.float32)
    got = filter2d(x, k, "HWC", border=border, fill_value=np.float32(0.25))
    ref = _filter_ref(x, k, border, fill=0.25)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_filter_anchor_valid_mode_and_layouts():
    x = _RNG.random((11, 14)).astype(np.float32)
    k = _RNG.standard_normal((3, 4)).astype(np.float32)
    got = filter2d(x, k, "HW", anchor=[0, 3], border="clamp")
    np.testing.assert_allclose(got, _filter_ref(x, k, "clamp", (0, 3)), rtol=1e-4, atol=1e-5)
    valid = filter2d(x, k, "HW", mode="valid")
    assert valid.shape == (9, 11)
    np.testing.assert_allclose(valid, ndimage.correlate(x.astype(np.float64), k,
                                                        mode="constant")[1:10, 2:13],
                               rtol=1e-4, atol=1e-5)
    chw = _RNG.random((2, 9, 10)).astype(np.float32)
    got = filter2d(chw, k, "CHW")
    for c in range(2):
        np.testing.assert_allclose(got[c], _filter_ref(chw[c], k, "reflect_101"), rtol=1e-4,
                                   atol=1e-5)
    seq = _RNG.random((3, 8, 9, 2)).astype(np.float32)
    got = filter2d(seq, k, "FHWC")
    for f in range(3):
        np.testing.assert_allclose(got[f], _filter_ref(seq[f], k, "reflect_101"), rtol=1e-4,
                                   atol=1e-5)


def test_filter_integer_output_rounds_half_to_even():
    x = np.arange(40, dtype=np.uint8).reshape(5, 8)
    got = filter2d(x, np.array([[0.5]], np.float32), "HW")
    np.testing.assert_array_equal(got, np.rint(x / 2))
    i16 = filter2d((np.arange(-20, 20, dtype=np.int16)).reshape(5, 8),
                   np.array([[0.5]], np.float32), "HW")
    np.testing.assert_array_equal(i16, np.rint(np.arange(-20, 20).reshape(5, 8) / 2))
    sat = filter2d(np.full((3, 3), 200, np.uint8), np.full((1, 2), 1.0, np.float32), "HW")
    np.testing.assert_array_equal(sat, 255)


def test_filter_dtype_float32_output():
    x = _RNG.integers(0, 256, (9, 10, 3)).astype(np.uint8)
    k = _RNG.standard_normal((3, 3)).astype(np.float32)
    got = filter2d(x, k, "HWC", dtype="float32")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _filter_ref(x, k, "reflect_101"), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("kw,match", [
    (dict(border="mirror"), "Unknown ``border_type``"),
    (dict(mode="full"), "Unknown ``mode``"),
    (dict(anchor=[3, 0]), "Anchor must lie within the filter"),
    (dict(anchor=[-2, 0]), "Anchor must lie within the filter"),
    (dict(dtype="int16"), "same as input, FLOAT"),
])
def test_filter_argument_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        filter2d(np.zeros((5, 6, 3), np.uint8), np.ones((3, 3), np.float32), "HWC", **kw)


def test_filter_input_errors():
    k = np.ones((3, 3), np.float32)
    with pytest.raises(ValueError, match="does not support input type int8"):
        filter2d(np.zeros((5, 5), np.int8), k, "HW")
    with pytest.raises(ValueError, match="Unsupported filter type: double"):
        filter2d(np.zeros((5, 5), np.uint8), k.astype(np.float64), "HW")
    with pytest.raises(ValueError, match="Filter dimensionality must match"):
        filter2d(np.zeros((5, 5, 3), np.uint8), k, "")
    with pytest.raises(ValueError, match="supports only 2-dimensional"):
        filter2d(np.zeros((4, 5, 5), np.uint8), np.ones((3, 3, 3), np.float32), "DHW")
    with pytest.raises(ValueError, match="bigger than the sample"):
        filter2d(np.zeros((5, 5), np.uint8), np.ones((7, 3), np.float32), "HW", mode="valid")
    with pytest.raises(ValueError, match="unsupported layout: `HCW`"):
        filter2d(np.zeros((5, 3, 5), np.uint8), k, "HCW")
    with pytest.raises(ValueError, match="frames must be an outermost"):
        filter2d(np.zeros((1, 2, 5, 5), np.uint8), k, "CFHW")


# ---------------------------------------------------------------- median, dilate, erode
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("size", [3, 5, (3, 5), (1, 3), (5, 1), 1])
def test_median_blur_is_scipys_median_filter_with_replicated_edges(dtype, size):
    x = _RNG.integers(0, 256, (12, 15, 3)).astype(dtype)
    got = median_blur(x, "HWC", window_size=size)
    kw, kh = (size, size) if isinstance(size, int) else size
    for c in range(3):
        ref = ndimage.median_filter(x[..., c], size=(kh, kw), mode="nearest")
        np.testing.assert_array_equal(got[..., c], ref)


def test_median_blur_errors():
    with pytest.raises(ValueError, match="Supported types are: UINT8, UINT16 and FLOAT"):
        median_blur(np.zeros((5, 5, 3), np.int16), "HWC")
    with pytest.raises(ValueError, match="number of channels: 1, 3, 4"):
        median_blur(np.zeros((5, 5, 2), np.uint8), "HWC")
    with pytest.raises(ValueError, match="single-channel images of type uint16"):
        median_blur(np.zeros((5, 5, 3), np.uint16), "HWC")
    with pytest.raises(ValueError, match="odd"):
        median_blur(np.zeros((5, 5, 3), np.uint8), "HWC", window_size=4)
    with pytest.raises(ValueError, match="layout"):
        median_blur(np.zeros((5, 5), np.uint8), "HW")


def _morph_ref(x, mw, mh, ax, ay, dilate, border):
    """Plain numpy: the extreme over every mask offset of an np.pad-ed plane."""
    ax = mw // 2 if ax < 0 else ax
    ay = mh // 2 if ay < 0 else ay
    info = np.iinfo(x.dtype) if x.dtype.kind in "iu" else None
    neutral = (info.min if dilate else info.max) if info else (-np.inf if dilate else np.inf)
    mode = {"constant": "constant", "replicate": "edge", "reflect": "symmetric",
            "reflect_101": "reflect", "wrap": "wrap"}[border]
    kwargs = {"constant_values": neutral} if mode == "constant" else {}
    p = np.pad(x, [(ay, mh - 1 - ay), (ax, mw - 1 - ax)] + [(0, 0)] * (x.ndim - 2), mode=mode,
               **kwargs)
    h, w = x.shape[:2]
    views = [p[i:i + h, j:j + w] for i in range(mh) for j in range(mw)]
    return (np.max if dilate else np.min)(np.stack(views), axis=0)


@pytest.mark.parametrize("dilate", [True, False])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_dilate_erode_match_a_window_reference(dilate, border):
    x = _RNG.integers(0, 256, (10, 13, 3)).astype(np.uint8)
    got = morphology(x, "HWC", dilate=dilate, mask_size=(5, 3), border_mode=border)
    np.testing.assert_array_equal(got, _morph_ref(x, 5, 3, -1, -1, dilate, border))


def test_dilate_anchor_iterations_and_scipy():
    x = _RNG.random((9, 11)).astype(np.float32)
    got = morphology(x, "HW", dilate=True, mask_size=(3, 2), anchor=(0, 1))
    np.testing.assert_array_equal(got, _morph_ref(x, 3, 2, 0, 1, True, "constant"))
    twice = morphology(x, "HW", dilate=False, iterations=2)
    np.testing.assert_array_equal(twice, ndimage.grey_erosion(x, size=(5, 5), mode="nearest"))
    seq = _RNG.integers(0, 9, (2, 3, 6, 7)).astype(np.int16)
    got = morphology(seq, "FCHW", dilate=True)
    for f in range(2):
        for c in range(3):
            np.testing.assert_array_equal(got[f, c], ndimage.grey_dilation(seq[f, c], size=3,
                                                                          mode="nearest"))


def test_morphology_errors():
    x = np.zeros((5, 5), np.uint8)
    with pytest.raises(ValueError, match="Unknown border mode: mirror"):
        morphology(x, "HW", border_mode="mirror")
    with pytest.raises(ValueError, match="anchor"):
        morphology(x, "HW", anchor=(3, 0))
    with pytest.raises(ValueError, match="iterations"):
        morphology(x, "HW", iterations=0)
    with pytest.raises(ValueError, match="layout"):
        morphology(np.zeros((5, 5, 5), np.uint8), "DHW")


def test_filter_batch_kernel_writes_each_sample_like_filter2d():
    """The batch kernel writes ``same``-mode results into one shared buffer (on the pool);
    samples of different sizes, a CHW sample, per-sample filters, uint8 and float32 outputs,
    and ``valid`` mode (fresh arrays) each equal filter2d of the sample alone."""
    import ndd
    imgs = [_RNG.integers(0, 256, s, dtype=np.uint8) for s in ((9, 13, 3), (1, 1, 3),
                                                                (20, 7, 3))]
    ks = [_RNG.standard_normal(s).astype(np.float32) for s in ((3, 3), (1, 4), (5, 2))]
    with ndd.EvalMode.sync_cpu:
        same = ndd.filter(ndd.as_batch(imgs, layout="HWC"), ndd.as_batch(ks), border="wrap")
        f32 = ndd.filter(ndd.as_batch(imgs, layout="HWC"), ndd.as_tensor(ks[0]),
                         dtype=ndd.float32)
        valid = ndd.filter(ndd.as_batch([imgs[0], imgs[2]], layout="HWC"),
                           ndd.as_tensor(ks[2]), mode="valid")
        chw = [np.ascontiguousarray(im.transpose(2, 0, 1)) for im in imgs]
        c = ndd.filter(ndd.as_batch(chw, layout="CHW"), ndd.as_tensor(ks[1]))
    for i, im in enumerate(imgs):
        np.testing.assert_array_equal(np.asarray(same.select(i)),
                                      filter2d(im, ks[i], "HWC", border="wrap"))
        np.testing.assert_array_equal(np.asarray(f32.select(i)),
                                      filter2d(im, ks[0], "HWC", dtype="float32"))
        np.testing.assert_array_equal(np.asarray(c.select(i)), filter2d(chw[i], ks[1], "CHW"))
        ref = np.rint(np.clip(_filter_ref(im, ks[i], "wrap"), 0, 255))
        assert np.abs(np.asarray(same.select(i)).astype(np.float64) - ref).max() <= 1
    for j, im in enumerate((imgs[0], imgs[2])):
        np.testing.assert_array_equal(np.asarray(valid.select(j)),
                                      filter2d(im, ks[2], "HWC", mode="valid"))
