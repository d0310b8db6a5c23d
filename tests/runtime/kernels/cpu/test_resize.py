"""Tests of the CPU resize kernel (runtime/kernels/cpu/resize.py; its geometry is tested in
tests/runtime/kernels/params/test_resize_geometry.py).

Hand-computed cases check the geometry and filters independently; ``oracle`` cases compare
against NVIDIA DALI 2.4's CPU ``resize`` (shapes and nearest neighbour exact, other integer
outputs within 1, float32 within 5e-6 of the largest value; see ``_assert_close``).
"""
import numpy as np
import pytest
import torch

from runtime.kernels.cpu.resize import resample, resize
from runtime.kernels.params.resize_geometry import ResizeParams, resize_output_shape

# The runtime runs kernels with one intra-op thread per worker; do the same here.
torch.set_num_threads(1)

INTERPS = ("nn", "linear", "cubic", "lanczos3", "triangular", "gaussian")


# ------------------------------------------------------------------ resampling (by hand)

def _ramp(h, w, c=3, dtype=np.float32):
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([yy * 10 + xx + 100 * k for k in range(c)], -1).astype(dtype)


def test_nn_upscale_2x_replicates():
    img = np.array([[[1], [2]], [[3], [4]]], np.uint8)
    out = resize(img, size=(4, 4), interp_type="nn")
    np.testing.assert_array_equal(out[..., 0], np.kron([[1, 2], [3, 4]], np.ones((2, 2))))


@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("aa", [True, False])
def test_constant_image_stays_constant(interp, aa):
    img = np.full((13, 17, 3), 77, np.uint8)
    for size in [(5, 6), (40, 9), (1, 1)]:
        out = resize(img, size=size, interp_type=interp, antialias=aa)
        assert out.shape == size + (3,) and np.all(out == 77)
    f = resize(img.astype(np.float32) / 7, size=(31, 8), interp_type=interp, antialias=aa)
    # 77 / 7 = 11 exactly; the float32 weights sum to 1 only within rounding and each of up to
    # 13 x 6 taps (lanczos3, antialias) rounds: measured max 4 ulps (3.5e-7); rtol 1e-6 is
    # 11 ulps of 11.0
    np.testing.assert_allclose(f, 11.0, rtol=1e-6)


def test_linear_no_antialias_halving_is_box_average():
    img = _ramp(4, 4)
    out = resize(img, size=(2, 2), antialias=False)
    expected = img.reshape(2, 2, 2, 2, 3).mean(axis=(1, 3))
    # weights 0.5 on integers < 300: every product and sum is exact in float32
    np.testing.assert_array_equal(out, expected)


def test_linear_antialias_halving_is_tent():
    # Tent of half-width 2 (= the scale) centred at 0.5 / 2.5, edge pixels repeated:
    # taps -1, 0, 1, 2 with weights 1, 3, 3, 1 (/8) -> [0.5, 0.375, 0.125, 0] for output 0.
    wts = np.array([[0.5, 0.375, 0.125, 0.0], [0.0, 0.125, 0.375, 0.5]])
    img = np.random.default_rng(1).uniform(0, 255, (4, 4, 2)).astype(np.float32)
    expected = np.einsum("ay,bx,yxc->abc", wts, wts, img)
    out = resize(img, size=(2, 2))
    # dyadic weights (exact in float32) on values >= 0: per pass <= 2 products (x 0.375) and
    # 3 sums round, <= 10 roundings of 6e-8 over both passes -> 6e-7; measured max 5.6e-8
    np.testing.assert_allclose(out, expected, rtol=6e-7)
    np.testing.assert_allclose(resize(img, size=(2, 2), interp_type="triangular"), expected,
                               rtol=6e-7)


def test_linear_upscale_matches_bilinear_formula():
    img = np.random.default_rng(2).uniform(0, 1, (3, 1, 1)).astype(np.float32)
    out = resize(img, size=(6, 1))[:, 0, 0]
    src = (np.arange(6) + 0.5) / 2 - 0.5
    expected = np.interp(src, np.arange(3), img[:, 0, 0])   # clamps at the edges like DALI
    # weights 0.25 / 0.75 (exact) on values > 0: 0.75 x and the sum round, <= 2 x 6e-8 vs the
    # float64 interpolation (the 1 -> 1 width pass has weight 1); measured max 5.5e-8
    np.testing.assert_allclose(out, expected, rtol=2e-7)


def test_flip_by_negative_size_and_by_roi():
    img = _ramp(5, 7, dtype=np.uint8)
    np.testing.assert_array_equal(resize(img, size=(-5, -7), interp_type="linear"),
                                  img[::-1, ::-1])
    np.testing.assert_array_equal(resize(img, size=(5, 7), roi_start=(0, 7), roi_end=(5, 0)),
                                  img[:, ::-1])


def test_roi_crop_at_scale_one():
    img = _ramp(6, 8, dtype=np.uint8)
    out = resize(img, size=(2, 3), roi_start=(1, 2), roi_end=(3, 5), interp_type="cubic")
    np.testing.assert_array_equal(out, img[1:3, 2:5])


def test_dtype_conversion_rounds_half_away_and_saturates():
    img = np.array([[[0.5], [1.5], [2.5], [-0.5], [300.0]]], np.float32)
    out = resize(img, size=(1, 5), interp_type="nn", dtype=np.uint8)
    np.testing.assert_array_equal(out[0, :, 0], [1, 2, 3, 0, 255])
    out16 = resize(img, size=(1, 5), interp_type="nn", dtype="int16")
    np.testing.assert_array_equal(out16[0, :, 0], [1, 2, 3, -1, 300])


@pytest.mark.parametrize("layout", ["CHW", "HW"])
def test_layouts_match_hwc(layout):
    img = np.random.default_rng(3).integers(0, 256, (9, 11, 3), np.uint8)
    ref = resize(img, size=(5, 17), interp_type="cubic")
    if layout == "CHW":
        out = resize(img.transpose(2, 0, 1).copy(), layout="CHW", size=(5, 17), interp_type="cubic")
        np.testing.assert_array_equal(out, ref.transpose(2, 0, 1))
    else:
        out = resize(img[..., 1].copy(), layout="HW", size=(5, 17), interp_type="cubic")
        np.testing.assert_array_equal(out, ref[..., 1])


def test_resample_equals_resize():
    img = np.random.default_rng(4).integers(0, 256, (20, 30, 3), np.uint8)
    p = resize_output_shape((20, 30), resize_shorter=12)
    assert isinstance(p, ResizeParams)
    np.testing.assert_array_equal(resample(img, p, "lanczos3"),
                                  resize(img, interp_type="lanczos3", resize_shorter=12))


# ------------------------------------------------------------------ errors

def test_resample_errors():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="interp_type"):
        resize(img, size=(2, 2), interp_type="bogus")
    with pytest.raises(ValueError, match="dtype"):
        resize(img, size=(2, 2), dtype=np.float64)
    with pytest.raises(ValueError, match="input dtype"):
        resize(img.astype(np.float64), size=(2, 2))
    with pytest.raises(ValueError, match="layout"):
        resize(img[..., 0], layout="HWC", size=(2, 2))
    with pytest.raises(ValueError, match="computed for"):
        resample(img, resize_output_shape((5, 5), size=(2, 2)))
    with pytest.raises(TypeError, match="numpy"):
        resize([[1, 2]], size=(2, 2))
    with pytest.raises(ValueError, match="in_hw"):
        resize_output_shape((5,), size=(3, 3))


# ------------------------------------------------------------------ DALI oracle

def _dali_resize(img, layout="HWC", **kw):
    dali = pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    types = dali.types
    enums = {"nn": types.INTERP_NN, "linear": types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC,
             "lanczos3": types.INTERP_LANCZOS3, "triangular": types.INTERP_TRIANGULAR,
             "gaussian": types.INTERP_GAUSSIAN}
    kw = dict(kw)
    for key in ("interp_type", "min_filter", "mag_filter"):
        if key in kw:
            kw[key] = enums[kw[key]]
    if kw.get("dtype") == "float32":
        kw["dtype"] = types.FLOAT
    return np.asarray(dalidyn.resize(dalidyn.as_tensor(img, layout=layout), **kw))


def _images():
    skd = pytest.importorskip("skimage.data")
    rng = np.random.default_rng(0)
    return {
        "astronaut": skd.astronaut()[100:260:2, 150:350:2].copy(),   # 80 x 100
        "chelsea": skd.chelsea()[50:150, 100:220].copy(),            # 100 x 120
        "coffee": skd.coffee()[::8, ::8].copy(),                     # 50 x 75
        "1x1": rng.integers(0, 256, (1, 1, 3), dtype=np.uint8),
        "3x517": rng.integers(0, 256, (3, 517, 3), dtype=np.uint8),
        "517x3": rng.integers(0, 256, (517, 3, 1), dtype=np.uint8),
        "223x225": rng.integers(0, 256, (223, 225, 3), dtype=np.uint8),
    }


_IMAGES = {}


def _img(name):
    if not _IMAGES:
        _IMAGES.update(_images())
    return _IMAGES[name]


def _assert_close(ref, out, exact=False):
    assert out.shape == ref.shape
    assert out.dtype == ref.dtype
    if ref.size == 0:
        return
    if exact:
        # nearest neighbour only picks source pixels: no arithmetic on values
        np.testing.assert_array_equal(out, ref)
    elif ref.dtype == np.float32:
        # both float32, DALI's weights and sums in another order: per pass about 2 K u sum|w|
        # of the largest |value| (K <= 13 taps, sum|w| < 1.4, u = 6e-8), two passes: 4.4e-6;
        # measured max 3.6e-7 of it (6 ulps, lanczos3 on astronaut)
        np.testing.assert_allclose(out, ref, rtol=0, atol=5e-6 * max(1.0, np.abs(ref).max()))
    else:
        # integers within 1: uint8 linear / triangular mostly take the fast paths (torch's
        # antialiased bilinear, within 1 of the float32 path by design, see resize.py); the
        # other cases round float32 sums that differ from DALI's in the last bits, flipping
        # values near .5; measured max 1 (in up to 20% of the pixels for linear, else <= 27)
        assert np.max(np.abs(out.astype(np.int64) - ref.astype(np.int64))) <= 1


_SIZES = {"astronaut": [(37, 150)], "chelsea": [(41, 33)], "coffee": [(100, 24)],
          "1x1": [(5, 7)], "3x517": [(20, 101)], "517x3": [(64, 9)], "223x225": [(112, 112)]}
_FILTER_CASES = [(name, size, interp, aa) for name, sizes in _SIZES.items() for size in sizes
                 for interp in INTERPS for aa in (True, False)]


@pytest.mark.oracle
@pytest.mark.parametrize("name, size, interp, aa", _FILTER_CASES)
def test_oracle_filters(name, size, interp, aa):
    img = _img(name)
    kw = dict(size=size, interp_type=interp, antialias=aa)
    _assert_close(_dali_resize(img, **kw), resize(img, **kw), exact=interp == "nn")


_ARG_CASES = [
    ("chelsea", dict(resize_x=50)),
    ("chelsea", dict(resize_y=37, interp_type="cubic")),
    ("chelsea", dict(resize_y=37, mode="stretch")),
    ("astronaut", dict(resize_shorter=45, interp_type="lanczos3")),
    ("astronaut", dict(resize_shorter=-45, interp_type="nn")),
    ("astronaut", dict(resize_longer=67.3)),
    ("astronaut", dict(resize_shorter=60, max_size=70)),
    ("coffee", dict(size=(100, 100), mode="not_larger")),
    ("coffee", dict(size=(30, 30), mode="not_smaller", max_size=(0, 40))),
    ("coffee", dict(size=(0, 131), max_size=90, interp_type="gaussian")),
    ("coffee", dict(size=(-33, 47), interp_type="cubic")),
    ("coffee", dict(size=(33.4, 47.6))),
    ("coffee", dict(size=(33.4, 47.6), subpixel_scale=False, interp_type="cubic")),
    ("chelsea", dict(size=(40, 40), roi_start=(10.5, 20), roi_end=(70, 95.2))),
    ("chelsea", dict(size=(40, 40), roi_start=(70, 20), roi_end=(10, 95), interp_type="nn")),
    ("chelsea", dict(size=(25, 90), roi_start=(0.1, 0.9), roi_end=(0.6, 0.2), roi_relative=True,
                     interp_type="lanczos3")),
    ("chelsea", dict(size=(20, 20), roi_start=(-5, 100), roi_end=(110, 130))),
    ("chelsea", dict(size=(20, 20), roi_start=(0.5, 0.5), roi_end=(0.5, 0.5),
                     roi_relative=True)),
    ("chelsea", dict(size=(30, 300), min_filter="cubic", mag_filter="nn")),
    ("chelsea", dict(size=(300, 30), min_filter="nn", mag_filter="lanczos3")),
    ("chelsea", dict(size=(30, 300), min_filter="gaussian", mag_filter="triangular")),
    ("astronaut", dict(size=(50, 50), dtype="float32", interp_type="lanczos3")),
    ("223x225", dict(size=(224, 224), interp_type="cubic")),
]


@pytest.mark.oracle
@pytest.mark.parametrize("name, kwargs", _ARG_CASES)
def test_oracle_arguments(name, kwargs):
    img = _img(name)
    _assert_close(_dali_resize(img, **kwargs), resize(img, **kwargs),
                  exact=kwargs.get("interp_type") == "nn")


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.float32])
@pytest.mark.parametrize("interp", ["linear", "cubic", "nn"])
def test_oracle_input_types(dtype, interp):
    rng = np.random.default_rng(5)
    if dtype == np.float32:
        img = rng.normal(0, 100, (31, 47, 2)).astype(np.float32)
    else:
        info = np.iinfo(dtype)
        img = rng.integers(info.min, info.max, (31, 47, 2), dtype=dtype, endpoint=True)
    kw = dict(size=(17, 90), interp_type=interp)
    _assert_close(_dali_resize(img, **kw), resize(img, **kw), exact=interp == "nn")


@pytest.mark.oracle
def test_oracle_chw_layout():
    img = _img("coffee").transpose(2, 0, 1).copy()
    kw = dict(size=(20, 31), interp_type="cubic")
    _assert_close(_dali_resize(img, layout="CHW", **kw), resize(img, layout="CHW", **kw))


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [dict(size=(2, 2), resize_shorter=3),
                                    dict(resize_shorter=3, mode="stretch"),
                                    dict(size=(2, 2), roi_end=(1, 1)), dict()])
def test_oracle_errors_agree(kwargs):
    img = _img("coffee")
    with pytest.raises(RuntimeError):
        _dali_resize(img, **kwargs)
    with pytest.raises(ValueError):
        resize(img, **kwargs)


def test_out_window_equals_slicing_the_full_output():
    """``out_window`` computes only part of the output: it must be exactly that slice, for
    every path (integer / fractional windows, portrait / landscape, resize_shorter)."""
    from runtime.kernels.cpu.resize import resample
    rng = np.random.default_rng(11)
    for trial in range(60):
        H, W = (int(v) for v in rng.integers(12, 160, 2))
        img = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
        if trial % 3 == 0:
            p = resize_output_shape((H, W), resize_shorter=int(rng.integers(6, 120)))
        elif trial % 3 == 1:
            y0, x0 = rng.uniform(0, H / 3), rng.uniform(0, W / 3)
            p = resize_output_shape((H, W), size=tuple(int(v) for v in rng.integers(4, 120, 2)),
                                    roi_start=(y0, x0),
                                    roi_end=(rng.uniform(y0 + 2, H), rng.uniform(x0 + 2, W)))
        else:
            p = resize_output_shape((H, W), size=tuple(int(v) for v in rng.integers(4, 120, 2)))
        full = resample(img, p)
        oh, ow = full.shape[:2]
        for _ in range(3):
            ch, cw = int(rng.integers(1, oh + 1)), int(rng.integers(1, ow + 1))
            wy, wx = int(rng.integers(0, oh - ch + 1)), int(rng.integers(0, ow - cw + 1))
            part = resample(img, p, out_window=(wy, wx, ch, cw))
            assert part.flags.c_contiguous and part.shape == (ch, cw, 3)
            np.testing.assert_array_equal(part, full[wy:wy + ch, wx:wx + cw])
    with pytest.raises(ValueError, match="out_window"):
        resample(img, p, out_window=(0, 0, oh + 1, 1))
