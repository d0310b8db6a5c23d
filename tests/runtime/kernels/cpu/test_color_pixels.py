"""The compiled colour loops (runtime/kernels/cpu/color_pixels.py) give the bits of the plain
numpy formulas (float32 products and sums in the documented order, then ``cast``) for every
input and output type, including NaN, infinities, -0.0, exact .5 ties and saturation."""
import numpy as np
import pytest

from runtime.kernels.cpu.cast import cast
from runtime.kernels.cpu.color_pixels import apply_mat3, apply_scale, gray_into

F = np.float32
TYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "uint64", "float16",
         "float32", "float64", "bool"]
OUT_TYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "float16",
             "float32", "float64"]


def _sample(dtype, shape=(23, 17, 3), seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -70000), min(info.max, 70000)
        x = rng.integers(lo, hi, shape, dtype=np.int64).astype(dt)
        x.flat[:4] = [info.min, info.max, 0, 1]
        return x
    x = rng.normal(0, 300, shape).astype(dt)
    edge = [np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5, 2.5, -2.5, 254.5, 255.5, 1e30, -1e30,
            0.49999997, 3e9, -3e9]
    with np.errstate(over="ignore"):
        x.flat[:len(edge)] = np.array(edge, np.float64).astype(dt)
    return x


def _ref_scale(x, mul, add, dtype):
    with np.errstate(all="ignore"):
        return cast(x.astype(F) * F(mul) + F(add), dtype)


def _ref_mat3(x, m, off, dtype):
    p = x.astype(F)
    m = np.asarray(m, F)
    with np.errstate(all="ignore"):
        chans = []
        for i in range(3):
            v = m[i, 0] * p[..., 0] + m[i, 1] * p[..., 1] + m[i, 2] * p[..., 2]
            if off is not None:
                v = v + F(off[i])
            chans.append(v)
        return cast(np.stack(chans, axis=-1), dtype)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("src", TYPES)
@pytest.mark.parametrize("dst", OUT_TYPES)
def test_scale_is_the_numpy_formula(src, dst):
    x = _sample(src)
    for mul, add in ((1.3, -7.25), (0.5, 0.0), (-2.0, 100.5), (F(1) / F(3), F(0.1))):
        _same(apply_scale(x, F(mul), F(add), dst), _ref_scale(x, mul, add, dst))


def test_scale_uint8_table_path_is_the_numpy_formula():
    x = _sample("uint8", (300, 200, 3))      # large enough for the 256-entry table
    for dst in OUT_TYPES:
        _same(apply_scale(x, F(1.7), F(-40.5), dst), _ref_scale(x, 1.7, -40.5, dst))


@pytest.mark.parametrize("src", TYPES)
@pytest.mark.parametrize("dst", OUT_TYPES)
def test_mat3_is_the_numpy_formula(src, dst):
    x = _sample(src, seed=1)
    m = np.random.default_rng(2).normal(0, 1, (3, 3)).astype(F)
    _same(apply_mat3(x, m, None, dst), _ref_mat3(x, m, None, dst))
    off = np.array([0.5, -3.25, 128.0], F)
    _same(apply_mat3(x, m, off, dst), _ref_mat3(x, m, off, dst))


def test_mat3_without_offset_keeps_negative_zero():
    x = np.zeros((2, 2, 3), np.float32)
    x[0, 0] = -0.0
    m = -np.eye(3, dtype=F)
    got = apply_mat3(x, m, None, "float32")
    assert np.signbit(got[1, 1]).all()       # -1 * 0 = -0.0, kept as no addition is made
    assert not np.signbit(apply_mat3(x, m, np.zeros(3, F), "float32")[1, 1]).any()


def test_mat3_bgr_reads_channels_reversed():
    x = _sample("uint8", seed=3)
    m = np.random.default_rng(4).normal(0, 1, (3, 3)).astype(F)
    _same(apply_mat3(x, m, np.ones(3, F), "uint8", bgr=True),
          _ref_mat3(x[..., ::-1], m, np.ones(3, F), "uint8"))


def test_non_contiguous_input():
    x = _sample("uint8", (40, 30, 3))[::2, ::-1]
    _same(apply_scale(x, F(1.1), F(3.0), "uint8"), _ref_scale(x, 1.1, 3.0, "uint8"))
    m = np.eye(3, dtype=F) * F(0.7)
    _same(apply_mat3(x, m, None, "int16"), _ref_mat3(x, m, None, "int16"))


def _ref_gray(x):
    """``(9798 r + 19235 g + 3735 b + 2^14) >> 15`` in int64 numpy (the DALI formula)."""
    x = x.astype(np.int64)
    return ((x[..., 0] * 9798 + x[..., 1] * 19235 + x[..., 2] * 3735 + 16384) >> 15).astype(
        np.uint8)[..., None]


@pytest.mark.parametrize("bgr", [False, True])
def test_gray_every_colour(bgr):
    """All 2^24 colours (the four-pixel word loop), BGR reading the channels reversed."""
    c = np.arange(1 << 24, dtype=np.uint32)
    x = np.stack([c >> 16, (c >> 8) & 255, c & 255], -1).astype(np.uint8).reshape(4096, 4096, 3)
    out = np.empty((4096, 4096, 1), np.uint8)
    gray_into(x, out, bgr=bgr)
    np.testing.assert_array_equal(out, _ref_gray(x[..., ::-1] if bgr else x))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 13, 1001])
@pytest.mark.parametrize("start", [0, 1, 3, 5])
def test_gray_unaligned_views_and_tails(n, start):
    """Pixel counts that are not a multiple of four (the byte loop's tail) and views that start
    at any byte (unaligned words), writing exactly the output's pixels."""
    rng = np.random.default_rng(n * 7 + start)
    buf = rng.integers(0, 256, 3 * n + start, dtype=np.uint8)
    x = buf[start:].reshape(n, 1, 3)
    obuf = np.full(n + 3, 77, np.uint8)
    out = obuf[start % 3:start % 3 + n].reshape(n, 1, 1)
    for bgr in (False, True):
        gray_into(x, out, bgr=bgr)
        np.testing.assert_array_equal(out, _ref_gray(x[..., ::-1] if bgr else x))
    assert (obuf[:start % 3] == 77).all() and (obuf[start % 3 + n:] == 77).all()
