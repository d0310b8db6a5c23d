"""Fast paths and caches of the per-sample hot path: each must equal the plain computation.

* ``seeds.sample_rng`` / ``seeds.pcg64_states`` / batch ``coin_flip``: the same streams as
  ``numpy.random.default_rng(seed)``;
* ``codecs.image.parse_image``: decoding a parsed image equals decoding its bytes;
* ``crop_window`` / ``random_crop_window`` fast paths, cached argument validation;
* ``resize_params.crop_resize_params`` equals ``resize_output_shape``;
* ``cmn_batch.cmn_plan`` cache and ``fused_stages.cmn_shape`` cache.
"""
from __future__ import annotations

import io
import random

import numpy as np
import pytest
from PIL import Image

from runtime.kernels.cpu import random as rk
from runtime.kernels.params.seeds import pcg64_states, sample_doubles, sample_rng
from runtime.kernels.registry import KernelContext
from runtime.threadpool import ThreadPool

_EDGE_SEEDS = (0, 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 2, 2 ** 64 - 1, 2 ** 64 + 5,
               2 ** 96 + 7, 2 ** 127 + 3, 2 ** 128 - 1)


def _seeds(n, salt=0):
    g = np.random.default_rng(1234 + salt)
    return tuple(int(s) for s in g.integers(0, 2 ** 63 - 1, n, dtype=np.int64))


# ------------------------------------------------------------------ random
def test_pcg64_states_equal_numpy_seeding():
    seeds = _seeds(40) + _EDGE_SEEDS
    for s, (state, inc) in zip(seeds, pcg64_states(seeds)):
        ref = np.random.PCG64(s).state["state"]
        assert (state, inc) == (ref["state"], ref["inc"]), s


def test_pcg64_states_equal_numpy_seeding_at_the_word_boundaries():
    # seeds of one to four 32-bit words, mixed in one batch (all below 2**64 or not: the
    # vectorised conversion and the word-by-word one)
    edges = [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1]
    for seeds in (tuple(edges), tuple(edges) + (2 ** 64, 2 ** 96 + 7, 2 ** 128 - 1)):
        for s, (state, inc) in zip(seeds, pcg64_states(seeds)):
            got = np.random.PCG64(s).state["state"]
            assert (state, inc) == (got["state"], got["inc"]), s


def test_sample_rng_streams_equal_default_rng():
    seeds = _seeds(20, 1) + _EDGE_SEEDS
    for i, s in enumerate(seeds):
        g = sample_rng(seeds, i)
        ref = np.random.default_rng(s)
        np.testing.assert_array_equal(g.random(23), ref.random(23))
        np.testing.assert_array_equal(g.integers(0, 1000, 7), ref.integers(0, 1000, 7))
        assert g.normal() == ref.normal()


def test_sample_rng_falls_back_for_other_seed_types():
    seeds = [np.int64(5), 7]                      # a list, numpy ints: plain default_rng
    np.testing.assert_array_equal(sample_rng(seeds, 0).random(4),
                                  np.random.default_rng(5).random(4))
    too_big = (2 ** 130 + 1,)
    np.testing.assert_array_equal(sample_rng(too_big, 0).random(4),
                                  np.random.default_rng(2 ** 130 + 1).random(4))


def test_sample_doubles_equal_default_rng_at_any_index():
    seeds = _seeds(12, 2) + _EDGE_SEEDS
    order = random.Random(4)
    for i, s in enumerate(seeds):
        ref = np.random.default_rng(s).random(90)
        u = sample_doubles(seeds, i)
        # in order, then jumps back and forth (a jump from the seeded state each time)
        for j in list(range(25)) + [order.randrange(90) for _ in range(40)] + [89, 0, 1]:
            assert u[j] == ref[j], (s, j)
    assert sample_doubles([5, 7], 0) is None and sample_doubles((2 ** 130,), 0) is None
    assert sample_doubles((np.int64(5),), 0) is None


def test_random_window_from_seeds_equals_default_rng_windows():
    # windows.random_window reads the seed's numbers directly (SampleDoubles) where the
    # seeds allow; the reference draws from default_rng(seed) itself
    from runtime.kernels.params.windows import random_crop_window, random_window
    rnd = random.Random(9)
    for k in range(3000):
        seeds = tuple(rnd.randrange(0, 1 << rnd.choice([16, 63, 128])) for _ in range(3))
        if k % 10 == 0:
            seeds = list(seeds)                 # the generator route
        i = rnd.randrange(3)
        H, W = rnd.randint(0, 700), rnd.randint(0, 700)
        if k % 5 == 0:
            H = rnd.randint(1, 4)               # too wide, and fallback windows
        args = {"random_area": (rnd.uniform(0.01, 1.0), 1.0) if k % 2 else [0.08, 1.0],
                "random_aspect_ratio": (3 / 4, 4 / 3) if k % 3 else
                (rnd.uniform(0.1, 1.0), rnd.uniform(1.0, 9.0)),
                "num_attempts": rnd.randint(1, 12)}
        want = random_crop_window((H, W), np.random.default_rng(seeds[i]),
                                  random_area=args["random_area"],
                                  random_aspect_ratio=args["random_aspect_ratio"],
                                  num_attempts=args["num_attempts"])
        assert random_window((H, W), args, seeds, i) == want
    with pytest.raises(ValueError, match="random_area"):
        random_window((10, 10), {"random_area": (0.5, 2.0), "random_aspect_ratio": (1, 2),
                                 "num_attempts": 3}, (1, 2), 0)


def _ctx(n, pool):
    return KernelContext(pool, [], [None], set(), n, "random.coin_flip")


@pytest.mark.parametrize("p, dtype", [(0.5, None), (0.3, "uint8"), (0.0, None), (1.0, "float32")])
def test_coin_flip_batch_equals_default_rng(p, dtype):
    seeds = _seeds(33, 2) + _EDGE_SEEDS
    args = {"probability": p, "_seeds": seeds}
    if dtype is not None:
        args["dtype"] = dtype
    (out,) = rk.coin_flip(_ctx(len(seeds), ThreadPool(2)), [], args)
    want = [int(np.random.default_rng(s).random() < p) for s in seeds]
    assert [int(x) for x in out] == want
    assert all(x.shape == () and x.dtype == np.dtype(dtype or "int32") for x in out)


def test_coin_flip_shaped_samples_use_the_per_sample_path():
    seeds = _seeds(4, 3)
    pool = ThreadPool(2)
    (out,) = rk.coin_flip(_ctx(4, pool), [], {"probability": 0.5, "_seeds": seeds,
                                              "shape": (3, 2)})
    for s, x in zip(seeds, out):
        np.testing.assert_array_equal(
            x, (np.random.default_rng(s).random((3, 2)) < 0.5).astype(np.int32))
    with pytest.raises(ValueError, match="probability"):
        rk.coin_flip(_ctx(4, pool), [], {"probability": 1.5, "_seeds": seeds})


# ------------------------------------------------------------------ parse once
def _jpeg(h, w, seed=0, exif_orientation=None):
    g = np.random.default_rng(seed)
    img = Image.fromarray(g.integers(0, 256, (h, w, 3), dtype=np.uint8))
    buf = io.BytesIO()
    if exif_orientation is not None:
        ex = Image.Exif()
        ex[0x0112] = exif_orientation
        img.save(buf, "JPEG", quality=90, exif=ex)
    else:
        img.save(buf, "JPEG", quality=90)
    return np.frombuffer(buf.getvalue(), np.uint8)


@pytest.mark.parametrize("orientation", [None, 6])
def test_parsed_image_decodes_like_its_bytes(orientation):
    from runtime.codecs.image import decode, image_info, parse_image, peek_shape
    data = _jpeg(48, 64, 1, orientation)
    parsed = parse_image(data, sample="s")
    assert parsed.info() is parsed.info()          # read once
    assert image_info(parsed) == image_info(data)
    assert peek_shape(parsed) == peek_shape(data)
    np.testing.assert_array_equal(decode(parsed), decode(data))
    roi = (3, 5, 40, 30)
    np.testing.assert_array_equal(decode(parse_image(data), roi=roi), decode(data, roi=roi))
    np.testing.assert_array_equal(decode(parsed, output_type="GRAY"),
                                  decode(data, output_type="GRAY"))


# ------------------------------------------------------------------ windows
def test_crop_window_fast_paths_match_plain_formula():
    from runtime.kernels.params.windows import crop_window
    for (H, W), (h, w), (px, py) in [((224, 224), (224, 224), (0.5, 0.5)),
                                     ((300, 401), (224, 224), (0.5, 0.7)),
                                     ((300, 401), (300, 10), (1.0, 0.0))]:
        def anchor(pos, n, m):      # round(double(float32(pos)) * (n - m)), halves away
            v = float(np.float32(pos)) * (n - m)
            return int(np.sign(v) * np.floor(abs(v) + 0.5))
        assert crop_window((H, W), crop=(h, w), crop_pos_x=px, crop_pos_y=py) == \
            (anchor(py, H, h), anchor(px, W, w), h, w)
    with pytest.raises(TypeError):
        crop_window(("a", 4))
    with pytest.raises(ValueError):
        crop_window((2.5, 4))
    with pytest.raises(ValueError):
        crop_window((-1, 4))
    with pytest.raises(ValueError):
        crop_window((10, 10), crop_pos_x=1.5)


def test_random_crop_window_position_equals_vectorised_draw():
    from runtime.kernels.params.windows import random_crop_window
    for s in range(30):
        H, W = 300 + 7 * s, 500 - 5 * s
        y0, x0, h, w = random_crop_window((H, W), np.random.default_rng(s))
        ref = np.random.default_rng(s)
        ref.random(20)                              # the 10 attempts, drawn at once
        want = (ref.random(2) * (W - w + 1, H - h + 1)).astype(np.int64)
        assert (x0, y0) == tuple(int(v) for v in want)


def test_random_crop_window_cached_validation_still_rejects():
    from runtime.kernels.params.windows import random_crop_window
    rng = np.random.default_rng(0)
    random_crop_window((50, 50), rng, num_attempts=1)
    with pytest.raises(ValueError, match="num_attempts"):
        random_crop_window((50, 50), rng, num_attempts=True)
    with pytest.raises(ValueError, match="random_area"):
        random_crop_window((50, 50), rng, random_area=(0.5, 2.0))
    # unhashable (list) arguments are validated without the cache
    assert random_crop_window((50, 50), np.random.default_rng(3), random_area=[0.1, 1.0]) == \
        random_crop_window((50, 50), np.random.default_rng(3), random_area=(0.1, 1.0))


def test_crop_resize_params_equals_resize_output_shape():
    from runtime.kernels.params.resize_geometry import crop_resize_params, resize_output_shape
    rnd = random.Random(7)
    for _ in range(3000):
        H, W = rnd.randint(1, 1500), rnd.randint(1, 1500)
        y0 = rnd.randint(0, H - 1)
        y1 = rnd.randint(y0 + 1, H)
        x0 = rnd.randint(0, W - 1)
        x1 = rnd.randint(x0 + 1, W)
        size = rnd.choice([(224.0, 224.0), (224, 224), [7.5, 3.25],
                           (rnd.uniform(0.1, 600), rnd.uniform(0.1, 600))])
        assert crop_resize_params((H, W), size, y0, x0, y1, x1) == resize_output_shape(
            (H, W), size=size, roi_start=(y0, x0), roi_end=(y1, x1))
    # outside the fast case: flipped window, zero size -> the general function
    for args in [((10, 10), (5.0, 5.0), 8, 2, 3, 9), ((10, 10), (0.0, 5.0), 1, 2, 3, 9)]:
        assert crop_resize_params(*args) == resize_output_shape(
            args[0], size=args[1], roi_start=args[2:4], roi_end=args[4:6])
    # the cached float32 sizes: sizes equal to a cached one (bools, numpy floats) and a list
    # changed in place are not taken for it
    cached = (1.0, 3.0)
    crop_resize_params((10, 10), cached, 1, 2, 5, 9)
    for size in [(True, 3.0), (np.float64(1.0), 3.0), (1, 3), (1.0, np.float32(3.0))]:
        try:
            want = resize_output_shape((10, 10), size=size, roi_start=(1, 2), roi_end=(5, 9))
        except (TypeError, ValueError) as exc:
            with pytest.raises(type(exc)):
                crop_resize_params((10, 10), size, 1, 2, 5, 9)
        else:
            assert crop_resize_params((10, 10), size, 1, 2, 5, 9) == want
    lst = [4.0, 6.0]
    crop_resize_params((10, 10), lst, 1, 2, 5, 9)
    lst[0] = 8.0
    assert crop_resize_params((10, 10), lst, 1, 2, 5, 9) == resize_output_shape(
        (10, 10), size=[8.0, 6.0], roi_start=(1, 2), roi_end=(5, 9))


# ------------------------------------------------------------------ cmn caches
def test_cmn_plan_cache_equals_uncached():
    from runtime.kernels.cpu.cmn_batch import cmn_plan, make_plan
    mean, std = (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)
    a = cmn_plan("HWC", 3, 3, "CHW", mean, std, 1.0, 0.0)
    b = make_plan("HWC", 3, 3, "CHW", mean, std, 1.0, 0.0)
    assert cmn_plan("HWC", 3, 3, "CHW", mean, std, 1.0, 0.0) is a
    for f in ("layout", "output_layout", "perm", "to_input", "h_axis", "w_axis", "c_axis",
              "key"):
        assert getattr(a, f) == getattr(b, f)
    np.testing.assert_array_equal(a.base, b.base)
    np.testing.assert_array_equal(a.inv, b.inv)
    assert a.post_shift == b.post_shift
    lst = cmn_plan("HWC", 3, 3, "CHW", list(mean), list(std), 1.0, 0.0)
    np.testing.assert_array_equal(lst.inv, a.inv)
    with pytest.raises(TypeError):
        cmn_plan("HWC", 3, 3, "CHW", mean, std, True, 0.0)
    with pytest.raises(ValueError):
        cmn_plan("HWC", 3, 3, "CHWX", mean, std, 1.0, 0.0)


def test_cmn_shape_cache():
    from compiler.ir import make_stage
    from runtime.kernels.cpu.fused_stages import cmn_shape

    def cmn(layout):    # the kernel arguments of a fused node ending with cmn
        return {"stages": (make_stage("crop_mirror_normalize", "cmn", {"output_layout": layout}),)}
    img = np.zeros((30, 40, 3), np.uint8)
    assert cmn_shape(img, "HWC", (0, 0, 20, 10), cmn("CHW")) == (3, 20, 10)
    assert cmn_shape(img, "HWC", (0, 0, 20, 10), cmn("HWC")) == (20, 10, 3)
    chw = np.zeros((3, 30, 40), np.uint8)
    assert cmn_shape(chw, "CHW", (0, 0, 5, 6), {}) == (3, 5, 6)
    with pytest.raises(ValueError):
        cmn_shape(img, "HWC", (0, 0, 5, 6), cmn("CHWX"))
