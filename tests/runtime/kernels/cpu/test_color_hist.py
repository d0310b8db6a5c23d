"""equalize and clahe: per-pixel references of OpenCV's algorithms (plain Python loops over
tiles and pixels, unlike the kernels' numpy / numba), DALI 2.4 oracle cases, front end, errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.color_hist import clahe, equalize

RNG = np.random.default_rng(11)


def _photo(h, w, c, rng=RNG):
    mean, spread = rng.uniform(40, 200), rng.uniform(5, 60)
    return rng.normal(mean, spread, (h, w, c)).clip(0, 255).astype(np.uint8)


def _ref_equalize_channel(ch):
    hist = [0] * 256
    for v in ch.reshape(-1).tolist():
        hist[v] += 1
    total = ch.size
    lo = next(i for i in range(256) if hist[i])
    if hist[lo] == total:
        return np.full_like(ch, lo)
    scale = np.float32(255.0) / np.float32(total - hist[lo])
    lut, acc = [0] * 256, 0
    for i in range(lo + 1, 256):
        acc += hist[i]
        lut[i] = int(min(max(np.rint(np.float32(acc) * scale), 0), 255))
    return np.array(lut, np.uint8)[ch]


def _ref_clahe_channel(ch, tx, ty, clip):
    h, w = ch.shape
    src = ch
    if h % ty or w % tx:
        def mirror(i, n):
            period = 2 * n - 2 if n > 1 else 1
            i %= period
            return i if i < n else period - i
        eh, ew = h + ty - h % ty, w + tx - w % tx
        src = np.array([[ch[mirror(y, h), mirror(x, w)] for x in range(ew)]
                        for y in range(eh)], np.uint8)
    th, tw = src.shape[0] // ty, src.shape[1] // tx
    area = th * tw
    limit = max(int(float(np.float32(clip)) * area / 256), 1) if clip > 0 else 0
    luts = np.zeros((ty, tx, 256), np.float32)
    for j in range(ty):
        for i in range(tx):
            hist = np.bincount(src[j * th:(j + 1) * th, i * tw:(i + 1) * tw].ravel(),
                               minlength=256).tolist()
            if limit:
                extra = 0
                for k in range(256):
                    if hist[k] > limit:
                        extra += hist[k] - limit
                        hist[k] = limit
                each, rest = divmod(extra, 256)
                hist = [v + each for v in hist]
                if rest:
                    step, k = max(256 // rest, 1), 0
                    while k < 256 and rest > 0:
                        hist[k] += 1
                        k += step
                        rest -= 1
            acc = 0
            for k in range(256):
                acc += hist[k]
                luts[j, i, k] = min(max(np.rint(np.float32(acc) * (np.float32(255) /
                                                                    np.float32(area))), 0), 255)
    out = np.empty_like(ch)
    f = np.float32
    for y in range(h):
        tyf = f(y) * (f(1) / f(th)) - f(0.5)
        y1 = math.floor(tyf)
        ya = tyf - f(y1)
        y2, y1 = min(y1 + 1, ty - 1), max(y1, 0)
        for x in range(w):
            txf = f(x) * (f(1) / f(tw)) - f(0.5)
            x1 = math.floor(txf)
            xa = txf - f(x1)
            x2, x1 = min(x1 + 1, tx - 1), max(x1, 0)
            v = ch[y, x]
            r = ((luts[y1, x1, v] * (f(1) - xa) + luts[y1, x2, v] * xa) * (f(1) - ya)
                 + (luts[y2, x1, v] * (f(1) - xa) + luts[y2, x2, v] * xa) * ya)
            out[y, x] = min(max(np.rint(r), 0), 255)
    return out


@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 3), (33, 20, 1), (16, 16, 4)])
def test_equalize_matches_the_reference(shape):
    img = _photo(*shape)
    want = np.stack([_ref_equalize_channel(img[..., c]) for c in range(shape[2])], -1)
    np.testing.assert_array_equal(equalize(img), want)
    np.testing.assert_array_equal(equalize(img[..., 0]), want[..., 0])


def test_equalize_constant_channel_and_full_range():
    flat = np.full((4, 6), 77, np.uint8)
    np.testing.assert_array_equal(equalize(flat), flat)
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16)
    out = equalize(ramp)
    assert out[0, 0] == 0 and out[-1, -1] == 255


@pytest.mark.parametrize("h,w,tx,ty,clip", [(16, 16, 2, 2, 2.0), (17, 23, 3, 4, 2.0),
                                             (9, 31, 4, 1, 0.0), (40, 12, 2, 5, 40.0),
                                             (5, 5, 1, 1, 1.0), (21, 14, 7, 3, 3.5)])
def test_clahe_matches_the_reference(h, w, tx, ty, clip):
    img = _photo(h, w, 3)
    want = np.stack([_ref_clahe_channel(img[..., c], tx, ty, clip) for c in range(3)], -1)
    np.testing.assert_array_equal(clahe(img, tiles_x=tx, tiles_y=ty, clip_limit=clip,
                                        luma_only=False), want)
    gray = np.ascontiguousarray(img[..., :1])
    np.testing.assert_array_equal(clahe(gray, tiles_x=tx, tiles_y=ty, clip_limit=clip),
                                  want[..., :1])


def test_clahe_luma_only_keeps_gray_pixels_gray():
    g = _photo(20, 24, 1)
    rgb = np.repeat(g, 3, axis=-1)
    out = clahe(rgb, tiles_x=2, tiles_y=2, clip_limit=2.0, luma_only=True)
    assert np.abs(out.astype(int) - out[..., :1]).max() <= 1      # hue kept
    assert out.std() > 0


def test_errors():
    with pytest.raises(TypeError, match="uint8"):
        equalize(np.zeros((3, 3), np.float32))
    with pytest.raises(TypeError, match="uint8"):
        clahe(np.zeros((3, 3, 3), np.float32), tiles_x=1, tiles_y=1, clip_limit=1.0)
    with pytest.raises(ValueError, match="1 or 3 channels"):
        clahe(np.zeros((4, 4, 4), np.uint8), tiles_x=1, tiles_y=1, clip_limit=1.0)
    with pytest.raises(ValueError, match="positive"):
        clahe(np.zeros((4, 4, 3), np.uint8), tiles_x=0, tiles_y=1, clip_limit=1.0)


def test_front_end():
    imgs = [_photo(12, 15, 3), _photo(9, 7, 3)]
    b = ndd.as_batch(imgs, layout="HWC")
    with ndd.EvalMode.sync_cpu:
        eq = ndd.equalize(b)
        cl = ndd.clahe(b, tiles_x=2, tiles_y=3, clip_limit=2.0, luma_only=False)
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(np.asarray(eq.select(i)), equalize(img))
        np.testing.assert_array_equal(np.asarray(cl.select(i)),
                                      clahe(img, tiles_x=2, tiles_y=3, clip_limit=2.0,
                                            luma_only=False))
    seq = np.stack(imgs[:1] * 2)
    s = ndd.equalize(ndd.as_batch([seq], layout="FHWC"))
    np.testing.assert_array_equal(np.asarray(s.select(0))[1], equalize(imgs[0]))
    with pytest.raises(Exception, match="uint8"):
        ndd.equalize(ndd.as_batch([imgs[0].astype(np.float32)], layout="HWC")).evaluate()
    with pytest.raises(Exception, match="power of 2"):
        ndd.clahe(b, tiles_x=2, tiles_y=2, clip_limit=1.0, bins=100).evaluate()


# ------------------------------------------------------------------------ DALI 2.4
def _dali_out(fn, arrays, layout, **kw):
    out = fn(__import__("nvidia.dali.experimental.dynamic", fromlist=["x"]).as_batch(
        arrays, layout=layout), **kw).evaluate()
    return [np.asarray(out.select(i)) for i in range(len(arrays))]


@pytest.mark.oracle
@pytest.mark.parametrize("layout,shapes", [
    ("HWC", [(37, 53, 3), (1, 1, 3), (8, 300, 1), (64, 48, 4)]),
    ("HW", [(20, 21), (3, 2)]),
    ("FHWC", [(2, 10, 12, 3)]),
])
def test_equalize_matches_dali(layout, shapes):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(len(shapes))
    arrays = [rng.normal(rng.uniform(50, 200), 30, s).clip(0, 255).astype(np.uint8)
              for s in shapes]
    want = _dali_out(dali.equalize, arrays, layout)
    got = ndd.equalize(ndd.as_batch(arrays, layout=layout))
    for i in range(len(arrays)):
        np.testing.assert_array_equal(np.asarray(got.select(i)), want[i])


CLAHE_CASES = [(4, 3, 2.0, False), (8, 8, 3.5, False), (1, 1, 0.0, False), (3, 7, 1.0, False),
               (5, 2, 40.0, False)]


@pytest.mark.oracle
@pytest.mark.parametrize("tx,ty,clip,luma", CLAHE_CASES)
def test_clahe_matches_dali(tx, ty, clip, luma):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(tx * 31 + ty)
    arrays = [rng.normal(rng.uniform(50, 200), 35, s).clip(0, 255).astype(np.uint8)
              for s in ((37, 53, 3), (24, 24, 1), (61, 17, 3), (9, 40, 3))]
    want = _dali_out(dali.clahe, arrays, "HWC", tiles_x=tx, tiles_y=ty, clip_limit=clip,
                     luma_only=luma)
    got = ndd.clahe(ndd.as_batch(arrays, layout="HWC"), tiles_x=tx, tiles_y=ty,
                    clip_limit=clip, luma_only=luma)
    for i in range(len(arrays)):
        np.testing.assert_array_equal(np.asarray(got.select(i)), want[i])


@pytest.mark.oracle
def test_clahe_luma_only_close_to_dali():
    """luma_only on RGB goes through CIE Lab (the bound from when ndd used float64 Lab
    formulas; exact now, see test_clahe_luma_only_matches_dali)."""
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(5)
    gray = np.repeat(rng.normal(120, 40, (30, 34, 1)).clip(0, 255).astype(np.uint8), 3, -1)
    colour = rng.normal(120, 40, (30, 34, 3)).clip(0, 255).astype(np.uint8)
    for img, bound in ((gray, 48), (colour, 48)):
        want = _dali_out(dali.clahe, [img], "HWC", tiles_x=3, tiles_y=3, clip_limit=2.0)[0]
        got = clahe(img, tiles_x=3, tiles_y=3, clip_limit=2.0, luma_only=True)
        assert np.abs(got.astype(int) - want).max() <= bound
        assert np.abs(got.astype(int) - want).mean() <= 5.0


def test_lab_round_trip_and_gray_axis():
    """Properties of the 8-bit Lab conversions: a round trip of unsaturated colours (8-bit a and
    b clip the saturated ones) stays within a few levels, greys
    have a = b = 128 and an increasing L from 0 to 255, a pure red has a > 128 and b > 128."""
    from runtime.kernels.cpu.color_lab import lab_to_rgb, rgb_to_lab
    rgb = RNG.integers(64, 193, (40, 50, 3), dtype=np.uint8)
    back = lab_to_rgb(rgb_to_lab(rgb))
    assert np.abs(back.astype(int) - rgb).max() <= 4
    grey = np.repeat(np.arange(256, dtype=np.uint8)[:, None, None], 3, -1)
    lab = rgb_to_lab(grey)[:, 0].astype(int)
    assert lab[0, 0] == 0 and lab[-1, 0] == 255 and np.all(np.diff(lab[:, 0]) >= 0)
    assert np.abs(lab[:, 1:] - 128).max() <= 1
    red = rgb_to_lab(np.array([[[255, 0, 0]]], np.uint8))[0, 0]
    assert red[1] > 170 and red[2] > 160


@pytest.mark.oracle
@pytest.mark.parametrize("tx,ty,clip", [(3, 3, 2.0), (8, 8, 2.0), (1, 1, 0.0), (4, 7, 40.0)])
def test_clahe_luma_only_matches_dali(tx, ty, clip):
    """luma_only on RGB: DALI's Lab <-> RGB are OpenCV's 8-bit integer algorithms, which ndd
    computes the same way: bit-exact, odd sizes, noise and smooth images."""
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(tx * 7 + ty)
    arrays = [rng.normal(rng.uniform(40, 200), rng.uniform(10, 60), s).clip(0, 255)
              .astype(np.uint8) for s in ((30, 34, 3), (1, 1, 3), (64, 17, 3), (9, 40, 3))]
    arrays.append(rng.integers(0, 256, (33, 47, 3), dtype=np.uint8))
    want = _dali_out(dali.clahe, arrays, "HWC", tiles_x=tx, tiles_y=ty, clip_limit=clip)
    got = ndd.clahe(ndd.as_batch(arrays, layout="HWC"), tiles_x=tx, tiles_y=ty,
                    clip_limit=clip)
    for i in range(len(arrays)):
        np.testing.assert_array_equal(np.asarray(got.select(i)), want[i])


@pytest.mark.oracle
def test_errors_like_dali():
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    f32 = [np.zeros((4, 4, 3), np.float32)]
    with pytest.raises(Exception, match="uint8"):
        _dali_out(dali.clahe, f32, "HWC", tiles_x=1, tiles_y=1, clip_limit=1.0)
    with pytest.raises(Exception, match="uint8"):
        ndd.clahe(ndd.as_batch(f32, layout="HWC"), tiles_x=1, tiles_y=1,
                  clip_limit=1.0).evaluate()
    four = [np.zeros((4, 4, 4), np.uint8)]
    with pytest.raises(Exception, match="1 or 3 channels"):
        _dali_out(dali.clahe, four, "HWC", tiles_x=1, tiles_y=1, clip_limit=1.0)
    with pytest.raises(Exception, match="1 or 3 channels"):
        ndd.clahe(ndd.as_batch(four, layout="HWC"), tiles_x=1, tiles_y=1,
                  clip_limit=1.0).evaluate()


@pytest.mark.parametrize("shape", [(7, 5, 1), (3, 1, 2), (1, 9, 3), (11, 13, 5)])
def test_equalize_odd_pixel_counts_and_channel_counts(shape):
    """The compiled histogram's paths: one channel (two half histograms, an odd pixel left
    over), three channels, any other count."""
    img = _photo(*shape)
    want = np.stack([_ref_equalize_channel(img[..., c]) for c in range(shape[2])], -1)
    np.testing.assert_array_equal(equalize(img), want)


def test_batch_kernels_write_each_sample_like_the_single_image_functions():
    """The batch kernels write every sample into one shared buffer on the pool: samples of
    different sizes and every clahe path (per channel, luma, one channel) stay separate."""
    rgb = [_photo(13, 17, 3), _photo(1, 1, 3), _photo(30, 9, 3), _photo(8, 8, 3)]
    gray = [_photo(19, 6, 1), _photo(5, 40, 1)]
    with ndd.EvalMode.sync_cpu:
        eq = ndd.equalize(ndd.as_batch(rgb, layout="HWC"))
        cl = ndd.clahe(ndd.as_batch(rgb, layout="HWC"), tiles_x=3, tiles_y=2, clip_limit=2.5)
        pc = ndd.clahe(ndd.as_batch(rgb, layout="HWC"), tiles_x=2, tiles_y=5, clip_limit=1.0,
                       luma_only=False)
        g = ndd.clahe(ndd.as_batch(gray, layout="HWC"), tiles_x=2, tiles_y=2, clip_limit=3.0)
    for i, img in enumerate(rgb):
        np.testing.assert_array_equal(np.asarray(eq.select(i)), equalize(img))
        np.testing.assert_array_equal(np.asarray(cl.select(i)),
                                      clahe(img, tiles_x=3, tiles_y=2, clip_limit=2.5))
        want = np.stack([_ref_clahe_channel(img[..., c], 2, 5, 1.0) for c in range(3)], -1)
        np.testing.assert_array_equal(np.asarray(pc.select(i)), want)
    for i, img in enumerate(gray):
        np.testing.assert_array_equal(np.asarray(g.select(i))[..., 0],
                                      _ref_clahe_channel(img[..., 0], 2, 2, 3.0))


def test_opencv_lab_equals_the_integer_loops_on_every_colour():
    """The Lab conversions ndd runs (OpenCV's 8-bit ``cvtColor``) against ndd's own statement
    of the fixed-point steps (``*_integer``), on every 61st of the 2^24 byte triples (all of
    them were checked once, ~4 s) in each direction."""
    from runtime.kernels.cpu.color_lab import (lab_to_rgb, lab_to_rgb_integer, rgb_to_lab,
                                               rgb_to_lab_integer)
    v = np.arange(0, 61 * 512 * 537, 61, dtype=np.uint32)
    every = np.stack([v >> 16, (v >> 8) & 255, v & 255], -1).astype(np.uint8)
    every = every.reshape(512, 537, 3)
    np.testing.assert_array_equal(rgb_to_lab(every), rgb_to_lab_integer(every))
    np.testing.assert_array_equal(lab_to_rgb(every), lab_to_rgb_integer(every))
    # into a strided view (the channels of a wider array) as well
    wide = np.zeros((7, 5, 4), np.uint8)
    lab_to_rgb(every[:7, :5], wide[..., 1:])
    np.testing.assert_array_equal(wide[..., 1:], lab_to_rgb_integer(every[:7, :5]))
