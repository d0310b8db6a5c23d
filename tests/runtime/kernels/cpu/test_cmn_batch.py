"""Tests for the batch path of crop_mirror_normalize (runtime.kernels.cpu.cmn_batch).

Bit-exactness against the per-sample path (``cmn_to_window``) and against an independent numpy
float32 reference, on real photos with random windows and mirrors.
"""

import zlib

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.cmn import cmn_to_window
from runtime.kernels.cpu import cmn_batch as cmn_batch_module
from runtime.kernels.cpu.cmn_batch import cmn_batch, cmn_batch_fits, cmn_plan
from runtime.kernels.params.windows import crop_window
from runtime.threadpool import ThreadPool, get_num_threads

MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


def _photos():
    data = pytest.importorskip("skimage.data")
    return [np.ascontiguousarray(f()) for f in (data.astronaut, data.coffee, data.chelsea)]


def _batch(rng, n=7, h=61, w=45, layout="HWC"):
    """n crops of odd sizes (>= h x w) of real photos, with in-bounds windows of size h x w."""
    photos = _photos()
    imgs, windows = [], []
    for i in range(n):
        p = photos[i % len(photos)]
        H, W = int(rng.integers(h, h + 40)), int(rng.integers(w, w + 40))
        y, x = int(rng.integers(0, p.shape[0] - H)), int(rng.integers(0, p.shape[1] - W))
        img = np.ascontiguousarray(p[y:y + H, x:x + W])
        if layout == "CHW":
            img = np.ascontiguousarray(img.transpose(2, 0, 1))
        imgs.append(img)
        windows.append((int(rng.integers(0, H - h + 1)), int(rng.integers(0, W - w + 1)), h, w))
    return imgs, windows


def _numpy_ref(img, window, mirror, layout, mean, std):
    """float32 (x - mean) * (1 / std) on the HWC window, as an HWC array."""
    y0, x0, h, w = window
    hwc = img if layout == "HWC" else img.transpose(1, 2, 0)
    win = hwc[y0:y0 + h, x0:x0 + w].astype(np.float32)
    if mirror:
        win = win[:, ::-1]
    inv = (np.float32(1) / np.asarray(std, np.float32)).astype(np.float32)
    return (win - np.asarray(mean, np.float32)) * inv


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "uint8", "int16"])
@pytest.mark.parametrize("out_layout", ["CHW", "HWC"])
def test_bit_exact_with_per_sample(layout, dtype, out_layout):
    rng = np.random.default_rng(zlib.crc32(repr((layout, dtype, out_layout)).encode()))
    imgs, windows = _batch(rng, layout=layout)
    mirrors = rng.integers(0, 2, len(imgs))
    kw = dict(layout=layout, mean=MEAN, std=STD, output_layout=out_layout, dtype=dtype)
    out = cmn_batch(imgs, windows, mirrors, **kw)
    assert out.shape[0] == len(imgs) and out.dtype == np.dtype(dtype)
    assert out.flags.c_contiguous
    for i, img in enumerate(imgs):
        ref = cmn_to_window(img, windows[i], mirror=int(mirrors[i]), **kw)
        np.testing.assert_array_equal(out[i], ref)
        assert out[i].tobytes() == ref.tobytes()   # bit for bit (signed zeros, NaN payloads)


@pytest.mark.parametrize("scale,shift", [(1.0, 0.0), (64.0, 128.0), (0.0, 3.5)])
def test_float32_matches_numpy_reference(scale, shift):
    rng = np.random.default_rng(3)
    imgs, windows = _batch(rng, n=5)
    mirrors = [1, 0, 1, 1, 0]
    out = cmn_batch(imgs, windows, mirrors, mean=MEAN, std=STD, scale=scale, shift=shift,
                    output_layout="HWC")
    for i, img in enumerate(imgs):
        if scale == 1.0 and shift == 0.0:
            # exactly the float32 arithmetic (x - mean) * (1 / std)
            ref = _numpy_ref(img, windows[i], mirrors[i], "HWC", MEAN, STD)
            np.testing.assert_array_equal(out[i], ref)
        y0, x0, h, w = windows[i]
        win = img[y0:y0 + h, x0:x0 + w].astype(np.float64)
        win = win[:, ::-1] if mirrors[i] else win
        ref64 = (win - MEAN) / np.asarray(STD) * scale + shift
        # float32 (x - base) * inv vs the float64 formula, worst case scale 64, shift 128:
        # base = mean - 2 std rounds 3 times (<= 8.6e-6) and x - base once (<= 1.5e-5),
        # both times inv < 1.12; inv = 64 / std rounds twice (1.2e-7 relative, of |out| < 300:
        # 3.6e-5), the product once (<= 1.5e-5): 7.8e-5 in all; measured max 3.0e-5
        np.testing.assert_allclose(out[i], ref64, rtol=0, atol=8e-5)


def test_uint8_output_rounds_and_saturates():
    img = np.array([[[0, 100, 255], [7, 8, 9]]], np.uint8)        # 1x2x3 HWC
    out = cmn_batch([img, img], [(0, 0, 1, 2)] * 2, [0, 1], mean=[0, 50, 0], std=[0.5, 2, 1],
                    shift=-2.5, scale=1.0, output_layout="HWC", dtype="uint8")
    # (x - mean) / std - 2.5, rounded half away from zero, saturated to 0..255
    np.testing.assert_array_equal(out[0, 0], [[0, 23, 253], [12, 0, 7]])
    np.testing.assert_array_equal(out[1, 0], [[12, 0, 7], [0, 23, 253]])


def test_float_input_and_threads():
    rng = np.random.default_rng(5)
    imgs, windows = _batch(rng, n=9)
    imgs = [x.astype(np.float32) / 3 for x in imgs]
    mirrors = rng.integers(0, 2, 9)
    pool = ThreadPool(2)
    try:
        for dtype in ("float32", "float16"):
            serial = cmn_batch(imgs, windows, mirrors, mean=MEAN, std=STD, dtype=dtype)
            par = cmn_batch(imgs, windows, mirrors, mean=MEAN, std=STD, dtype=dtype,
                            map_fn=pool.map, parts=4)
            assert par.tobytes() == serial.tobytes()
            for i in (0, 4, 8):
                ref = cmn_to_window(imgs[i], windows[i], mirror=int(mirrors[i]), mean=MEAN,
                                    std=STD, dtype=dtype)
                assert serial[i].tobytes() == ref.tobytes()
        ref = _numpy_ref(imgs[2], windows[2], mirrors[2], "HWC", MEAN, STD)
        np.testing.assert_array_equal(serial[2].transpose(1, 2, 0).astype(np.float16),
                                      ref.astype(np.float16))
    finally:
        pool.shutdown()


def test_fits_and_errors():
    a = np.zeros((10, 12, 3), np.uint8)
    assert cmn_batch_fits([a, a], [(0, 0, 5, 5), (5, 7, 5, 5)], "HWC")
    assert not cmn_batch_fits([a, a], [(0, 0, 5, 5), (6, 0, 5, 5)], "HWC")       # outside
    assert not cmn_batch_fits([a, a], [(0, 0, 5, 5), (0, 0, 5, 4)], "HWC")       # sizes differ
    assert not cmn_batch_fits([a, a[..., :2]], [(0, 0, 5, 5)] * 2, "HWC")        # channels
    with pytest.raises(ValueError, match="windows of one size"):
        cmn_batch([a, a], [(0, 0, 5, 5), (0, -1, 5, 5)], 0)
    with pytest.raises(ValueError, match="mirrors has 1"):
        cmn_batch([a, a], [(0, 0, 5, 5)] * 2, [1])
    with pytest.raises(ValueError, match="std"):
        cmn_batch([a], [(0, 0, 5, 5)], 0, std=[1, 0, 1])
    with pytest.raises(ValueError, match="output_layout"):
        cmn_plan("HWC", 3, 3, output_layout="HWX")
    with pytest.raises(ValueError, match="out has shape"):
        cmn_batch([a], [(0, 0, 5, 5)], 0, out=np.empty((1, 3, 5, 4), np.float32))


@pytest.mark.parametrize("threads", [1, 2])
def test_eager_kernel_batch_path(threads, monkeypatch):
    """ndd.crop_mirror_normalize on a batch: per-sample mirror, centre crop of odd-size photos;
    equal to the per-sample path (forced by policy "pad", same result for inside windows) and
    the output is one buffer (Batch.torch() needs no copy)."""
    calls = []
    real = cmn_batch_module.cmn_plan_into
    monkeypatch.setattr(cmn_batch_module, "cmn_plan_into",
                        lambda *a: calls.append(1) or real(*a))
    previous = get_num_threads()
    ndd.set_num_threads(threads)
    try:
        _check_eager(threads, calls)
    finally:
        ndd.set_num_threads(previous)


def _check_eager(threads, calls):
    rng = np.random.default_rng(threads)
    imgs, _ = _batch(rng, n=6, h=40, w=33)
    flips = ndd.as_batch([np.array(f, np.int32) for f in rng.integers(0, 2, 6)])
    b = ndd.as_batch(imgs, layout="HWC")
    kw = dict(crop=(40, 33), mean=MEAN, std=STD, mirror=flips)
    out = ndd.crop_mirror_normalize(b, **kw).evaluate()
    assert len(calls) == 6                           # the batch path ran
    ref = ndd.crop_mirror_normalize(b, out_of_bounds_policy="pad", **kw).evaluate()
    assert len(calls) == 6                           # ... and this one did not
    t1, t2 = out.torch(), out.torch()
    assert t1.shape == (6, 3, 40, 33) and t1.data_ptr() == t2.data_ptr()
    assert t1.numpy().tobytes() == ref.torch().numpy().tobytes()
    # per-sample mean (a tensor argument) goes sample by sample, still right
    means = ndd.as_batch([np.array([i, 2 * i, 3 * i], np.float32) for i in range(6)])
    per = ndd.crop_mirror_normalize(b, crop=(40, 33), mean=means).evaluate().torch().numpy()
    y0, x0, _, _ = crop_window(imgs[4].shape[:2], crop=(40, 33))
    # std 1 and integer means: (x - mean) * 1 is exact in float32
    np.testing.assert_array_equal(per[4].transpose(1, 2, 0),
                                  imgs[4][y0:y0 + 40, x0:x0 + 33] - np.array([4, 8, 12]))


@pytest.mark.parametrize("chans", [1, 3, 4])
@pytest.mark.parametrize("scale,shift", [(1.0, 0.0), (0.0, 3.5), (2.0, -1.0)])
def test_compiled_hwc_kernel_equals_torch_arithmetic(chans, scale, shift):
    # uint8 HWC -> float32 CHW runs the compiled kernel; the torch sub/mul/add of the general
    # branch (normalize_into) must give the same bits: strided windows, both mirrors, one
    # or per-channel mean/std, a post shift (scale 0)
    from runtime.kernels.cpu.cmn_batch import cmn_plan_into
    from runtime.kernels.cpu.cmn_pixels import normalize_into
    rng = np.random.default_rng(chans)
    img = rng.integers(0, 256, (23, 31, chans), dtype=np.uint8)
    for mean, std in ((7.5, 3.0), (list(rng.uniform(0, 255, chans)),
                                   list(rng.uniform(1, 90, chans)))):
        plan = cmn_plan("HWC", 3, chans, "CHW", mean, std, scale, shift)
        for window in ((0, 0, 23, 31), (3, 5, 11, 17), (22, 30, 1, 1)):
            y0, x0, h, w = window
            for mirror in (False, True):
                got = np.full((chans, h, w), np.nan, np.float32)
                cmn_plan_into(plan, img, window, mirror, got)
                want = np.full((chans, h, w), np.nan, np.float32)
                normalize_into(img[y0:y0 + h, x0:x0 + w], want.transpose(1, 2, 0), plan.base,
                               plan.inv, plan.post_shift, 2, 1 if mirror else None)
                np.testing.assert_array_equal(got, want)
                # and an independent float32 numpy formula
                win = img[y0:y0 + h, x0:x0 + w].astype(np.float32)
                win = win[:, ::-1] if mirror else win
                ref = (win - plan.base) * plan.inv
                if plan.post_shift != 0:
                    ref = ref + plan.post_shift
                np.testing.assert_array_equal(got, ref.transpose(2, 0, 1))
