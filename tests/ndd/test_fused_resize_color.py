"""A resize at the head of the colour pass (rule ``resize->color``): the fused node resamples
each image with the resize kernel's own code, then runs the colour stages (and cmn) on it.
Deferred (fused) results are compared bit for bit with eager (each op alone), on odd shapes,
uint8 / float32 / int16 inputs, several filters, per-sample colour and size arguments, crops
inside the resized image (only the window is resampled) and mirroring; one chain is checked
against numpy formulas written out."""
import numpy as np
import pytest

import ndd
from compiler.ir import stages_of
from compiler.pipeline import set_options
from ndd._evaluate import last_plan

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _images(dtype=np.uint8, n=3, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a = rng.integers(0, 256, (23 + 4 * i, 31 - 3 * i, 3))
        if np.dtype(dtype).kind == "f":
            out.append((a / 255 + rng.normal(0, 0.05, a.shape)).astype(dtype))
        else:
            out.append((a * (1 if np.dtype(dtype).itemsize == 1 else 97)).astype(dtype))
    return out


def _run(fn, mode, imgs, disable=()):
    ndd.random.set_seed(7)
    set_options(disable=disable)
    try:
        with mode:
            out = fn(ndd.as_batch(imgs, layout="HWC"))
            res = [np.asarray(out.tensors[i]) for i in range(out.batch_size)]
            plan = last_plan()
    finally:
        set_options(disable=())
    return res, plan


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _u(lo, hi, b):
    return ndd.random.uniform(range=(lo, hi), batch_size=b.batch_size)


def _flip(b):
    return ndd.random.coin_flip(batch_size=b.batch_size)


def ssd(b):
    """The SSD300 chain: resize (triangular) -> hsv -> brightness_contrast -> cmn (mirror)."""
    x = ndd.resize(b, resize_x=19, resize_y=17, min_filter=ndd.types.INTERP_TRIANGULAR)
    x = ndd.hsv(x, hue=_u(-18, 18, b), saturation=_u(0.5, 1.5, b))
    x = ndd.brightness_contrast(x, brightness=_u(0.875, 1.125, b), contrast=_u(0.5, 1.5, b))
    return ndd.crop_mirror_normalize(x, crop=(17, 19), mean=MEAN, std=STD, mirror=_flip(b),
                                     dtype="float32", output_layout="CHW")


def shorter_crop(b):
    """resize_shorter (fractional window) -> colour -> a centre-ish crop inside the result."""
    x = ndd.resize(b, resize_shorter=21)
    x = ndd.color_twist(x, hue=_u(-30, 30, b), saturation=0.7, contrast=_u(0.8, 1.2, b))
    return ndd.crop_mirror_normalize(x, crop=(13, 15), crop_pos_x=_u(0, 1, b),
                                     crop_pos_y=0.3, mean=MEAN, std=STD, mirror=_flip(b))


def cubic_float_out(b):
    """A cubic upscale to float32, float colour stages, HWC uint8 cmn output."""
    x = ndd.resize(b, size=(37, 41), interp_type=ndd.types.INTERP_CUBIC, dtype="float32")
    x = ndd.brightness(x, brightness=_u(0.6, 1.4, b))
    x = ndd.hsv(x, hue=12.0, saturation=_u(0.3, 1.7, b), dtype="float32")
    return ndd.crop_mirror_normalize(x, mean=0.2, std=0.5, scale=40.0, shift=100.0,
                                     dtype="uint8", output_layout="HWC", mirror=1)


def per_sample_sizes(b):
    """Per-sample resize sizes (ragged outputs) -> saturation -> contrast, no cmn."""
    x = ndd.resize(b, resize_x=_u(9, 26, b), resize_y=_u(11, 20, b),
                   interp_type=ndd.types.INTERP_LANCZOS3)
    x = ndd.saturation(x, saturation=_u(0.0, 2.0, b))
    return ndd.contrast(x, contrast=1.7, contrast_center=90.0)


def nn_roi_arith(b):
    """A nearest-neighbour resize of an ROI -> brightness -> cast -> scalar arithmetic (the
    compiled per-pixel loop rather than the stage-wise path)."""
    x = ndd.resize(b, size=(15, 18), roi_start=(2, 3), roi_end=(19, 22),
                   interp_type=ndd.types.INTERP_NN)
    x = ndd.cast(ndd.brightness(x, brightness=_u(0.5, 1.5, b), brightness_shift=0.03),
                 dtype="float32")
    return (x - 7.5) / 3


def int16_out_normalize(b):
    """resize to int16 -> hue -> normalize with a given mean and stddev."""
    x = ndd.resize(b, resize_x=26, dtype="int16", antialias=False)
    x = ndd.hue(x, hue=_u(-90, 90, b))
    return ndd.normalize(x, mean=60.0, stddev=25.0)


CASES = [
    (ssd, np.uint8, 4), (ssd, np.float32, 4),
    (shorter_crop, np.uint8, 3), (shorter_crop, np.float32, 3),
    (cubic_float_out, np.uint8, 4), (per_sample_sizes, np.uint8, 3),
    (per_sample_sizes, np.int16, 3), (nn_roi_arith, np.uint8, 5), (nn_roi_arith, np.float32, 5),
    (int16_out_normalize, np.uint8, 3),
]


@pytest.mark.parametrize("fn,dtype,nstages", CASES,
                         ids=[f"{c[0].__name__}-{np.dtype(c[1]).name}" for c in CASES])
def test_resize_runs_in_the_colour_pass_bit_exact(fn, dtype, nstages):
    imgs = _images(dtype)
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, imgs)
    unfused, plan0 = _run(fn, ndd.EvalMode.deferred, imgs, disable={"fuse"})
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    ops = [s.node.op for s in plan.steps]
    assert "resize" not in ops and ops.count("fused.color") == 1, plan.notes
    (fused,) = [s.node for s in plan.steps if s.node.op == "fused.color"]
    stages = stages_of(fused)
    assert stages[0].op == "resize" and stages[0].name == "resize#0" and len(stages) == nstages
    assert any(m.startswith("applied resize->color") for _, m in plan.notes)
    assert "resize" in [s.node.op for s in plan0.steps]
    assert len(got) == len(eager) == len(unfused) == len(imgs)
    for e, u, g in zip(eager, unfused, got):
        _same(e, g)
        _same(u, g)


def test_mirror_and_window_against_numpy():
    """NN 2x downscale (source pixel 2i + 1), brightness_contrast, then cmn cropping a
    window of the resized image and mirroring it: the formulas written out in numpy."""
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (18, 26, 3), dtype=np.uint8) for _ in range(2)]

    def fn(b):
        x = ndd.resize(b, size=(9, 13), interp_type=ndd.types.INTERP_NN)
        x = ndd.brightness_contrast(x, brightness=1.25, contrast=0.75)
        return ndd.crop_mirror_normalize(x, crop=(5, 7), crop_pos_x=1.0, crop_pos_y=0.0,
                                         mean=MEAN, std=STD, mirror=1)
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    assert [s.node.op for s in plan.steps] == ["fused.color"]
    f = np.float32
    for img, g in zip(imgs, got):
        small = img[1::2, 1::2].astype(f)                    # (9, 13, 3)
        v = small * (f(1.25) * f(0.75)) + f(1.25) * (f(128) - f(0.75) * f(128))
        t = np.trunc(v)
        u8 = np.clip(t + ((v - t) >= 0.5), 0, 255).astype(f)
        win = u8[0:5, 6:13]                                   # crop_pos_x=1: the last 7 columns
        inv = (f(1) / np.array(STD, f)).astype(f)
        want = ((win - np.array(MEAN, f)) * inv)[:, ::-1].transpose(2, 0, 1)
        assert g.shape == (3, 5, 7)
        np.testing.assert_allclose(g, want, rtol=2e-6, atol=2e-6)


def test_errors_are_those_of_the_unfused_ops():
    """A 1-channel image: the resize succeeds, hsv raises its own error in both modes; a crop
    larger than the resized image: cmn's error in both modes."""
    gray = [np.zeros((10, 12, 1), np.uint8)] * 2

    def fn(b):
        return ndd.hsv(ndd.resize(b, size=(6, 6)), hue=3.0)
    for mode in (ndd.EvalMode.sync_cpu, ndd.EvalMode.deferred):
        with pytest.raises(ValueError, match="3 channels"):
            _run(fn, mode, gray)

    def too_big(b):
        x = ndd.brightness(ndd.resize(b, size=(6, 6)), brightness=1.1)
        return ndd.crop_mirror_normalize(x, crop=(8, 8))
    errors = []
    for mode in (ndd.EvalMode.sync_cpu, ndd.EvalMode.deferred):
        with pytest.raises(ValueError) as info:
            _run(too_big, mode, _images())
        errors.append(type(info.value))
    assert errors[0] is errors[1]
