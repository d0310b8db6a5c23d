"""The colour-chain fusion (``fused.color``): which chains fuse, the refusal reasons, and that
the fused pass is bit-identical with running the ops one by one (eager), on random images with
constant and per-sample arguments, uint8 and float inputs."""
import numpy as np
import pytest

import ndd
from compiler.ir import ValueMeta, stages_of
from compiler.passes.fuse import fuse
from compiler.pipeline import set_options
from tests.compiler._graphs import IMG, graph, leaf, node

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _images(dtype=np.uint8, n=4, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a = rng.integers(0, 256, (27 + 3 * i, 35 - 2 * i, 3))
        out.append(a.astype(dtype) if np.dtype(dtype).kind != "f"
                   else (a / 255 + rng.normal(0, 0.05, a.shape)).astype(dtype))
    return out


def _run(fn, mode, imgs, disable=()):
    ndd.random.set_seed(11)
    set_options(disable=disable)
    try:
        with mode:
            out = fn(ndd.as_batch(imgs, layout="HWC"))
            res = [np.asarray(out.tensors[i]) for i in range(out.batch_size)]
            plan = __import__("ndd._evaluate", fromlist=["x"]).last_plan()
    finally:
        set_options(disable=())
    return res, plan


def _notes(plan, kind):
    return [m for name, m in plan.notes if name == "fuse" and m.startswith(kind)]


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _u(lo, hi, b):
    return ndd.random.uniform(range=(lo, hi), batch_size=b.batch_size)


def ssd(b):
    """hsv -> brightness_contrast -> crop_mirror_normalize (the SSD training chain)."""
    x = ndd.hsv(b, hue=_u(-18, 18, b), saturation=_u(0.5, 1.5, b), value=_u(0.9, 1.1, b))
    x = ndd.brightness_contrast(x, brightness=_u(0.875, 1.125, b), contrast=_u(0.5, 1.5, b))
    return ndd.crop_mirror_normalize(x, crop=(20, 24), crop_pos_x=_u(0, 1, b), mean=MEAN,
                                     std=STD, mirror=ndd.random.coin_flip(batch_size=b.batch_size))


def twist_normalize(b):
    x = ndd.color_twist(b, hue=_u(-30, 30, b), saturation=_u(0.6, 1.4, b),
                        brightness=_u(0.8, 1.2, b), contrast=_u(0.8, 1.2, b))
    return ndd.normalize(x, mean=110.0, stddev=60.0)


def bc_cast(b):
    return ndd.cast(ndd.brightness_contrast(b, brightness=1.4, contrast=0.7,
                                            brightness_shift=0.05), dtype="float32")


def bc_cast_arith(b):
    x = ndd.cast(ndd.brightness(b, brightness=_u(0.5, 2.0, b)), dtype="float32")
    return 2.0 - x / 3


def four_colour_ops(b):
    x = ndd.hue(b, hue=_u(-90, 90, b))
    x = ndd.saturation(x, saturation=0.4)
    x = ndd.brightness(x, brightness=1.3, brightness_shift=-0.1)
    return ndd.contrast(x, contrast=_u(0.2, 3.0, b))


def twist_cmn_hwc_u8(b):
    x = ndd.color_twist(b, hue=25.0, saturation=1.7, contrast=1.3)
    return ndd.crop_mirror_normalize(x, mean=[20, 30, 40], std=[0.5, 2.0, 1.0], dtype="uint8",
                                     output_layout="HWC", mirror=1)


def hsv_cmn_f16(b):
    x = ndd.hsv(b, hue=10.0, saturation=0.8, dtype="float32")
    return ndd.crop_mirror_normalize(x, crop=(16, 16), mean=0.5, std=0.25, scale=0.5,
                                     shift=0.1, dtype="float16")


def int16_chain(b):
    x = ndd.brightness_contrast(b, brightness=1.2, contrast=2.5, dtype="int16")
    x = ndd.hsv(x, hue=40.0, saturation=1.5, dtype="int16")
    return ndd.cast(x, dtype="uint8")


def per_channel_normalize(b):
    x = ndd.hsv(b, hue=_u(-10, 10, b), dtype="float32")
    return ndd.normalize(x, mean=ndd.as_batch([np.array([[[0.4, 0.5, 0.6]]], np.float32)] *
                                              b.batch_size),
                         stddev=[0.2, 0.25, 0.3], axis_names="HW", shift=1.0, scale=2.0)


def saturation_cmn_zero_scale(b):
    x = ndd.saturation(b, saturation=0.0)
    return ndd.crop_mirror_normalize(x, mean=MEAN, std=STD, scale=0.0, shift=3.0,
                                     output_layout="HWC")


CHAINS = [
    (ssd, ["hsv", "brightness_contrast", "crop_mirror_normalize"], np.uint8),
    (ssd, ["hsv", "brightness_contrast", "crop_mirror_normalize"], np.float32),
    (twist_normalize, ["color_twist", "normalize"], np.uint8),
    (twist_normalize, ["color_twist", "normalize"], np.float32),
    (bc_cast, ["brightness_contrast", "cast"], np.uint8),
    (bc_cast, ["brightness_contrast", "cast"], np.int16),
    (bc_cast_arith, ["brightness", "cast", "arithmetic", "arithmetic"], np.uint8),
    (four_colour_ops, ["hue", "saturation", "brightness", "contrast"], np.uint8),
    (four_colour_ops, ["hue", "saturation", "brightness", "contrast"], np.float64),
    (twist_cmn_hwc_u8, ["color_twist", "crop_mirror_normalize"], np.uint8),
    (hsv_cmn_f16, ["hsv", "crop_mirror_normalize"], np.uint8),
    (int16_chain, ["brightness_contrast", "hsv", "cast"], np.uint8),
    (per_channel_normalize, ["hsv", "normalize"], np.uint8),
    (saturation_cmn_zero_scale, ["saturation", "crop_mirror_normalize"], np.uint8),
]


@pytest.mark.parametrize("fn,ops,dtype", CHAINS,
                         ids=[f"{c[0].__name__}-{np.dtype(c[2]).name}" for c in CHAINS])
def test_colour_chain_fuses_into_one_bit_exact_pass(fn, ops, dtype):
    imgs = _images(dtype)
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, imgs)
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    fused = [s.node for s in plan.steps if s.node.op == "fused.color"]
    assert len(fused) == 1 and fused[0].meta["fused_from"] == ops, plan.notes
    assert [st.op for st in stages_of(fused[0])] == ops
    for e, g in zip(eager, got):
        _same(e, g)


def test_fused_ssd_chain_matches_a_numpy_reference():
    """brightness_contrast -> cmn (constant arguments) against the formulas written out."""
    imgs = _images()

    def fn(b):
        x = ndd.brightness_contrast(b, brightness=1.25, contrast=0.75)
        return ndd.crop_mirror_normalize(x, mean=MEAN, std=STD, mirror=1)
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    assert [s.node.op for s in plan.steps] == ["fused.color"]
    f = np.float32
    for x, g in zip(imgs, got):
        v = x.astype(f) * (f(1.25) * f(0.75)) + f(1.25) * (f(128) - f(0.75) * f(128))
        t = np.trunc(v)
        u8 = np.clip(t + ((v - t) >= 0.5), 0, 255).astype(f)
        inv = (f(1) / np.array(STD, f)).astype(f)
        want = ((u8 - np.array(MEAN, f)) * inv)[:, ::-1].transpose(2, 0, 1)
        np.testing.assert_allclose(g, want, rtol=2e-6, atol=2e-6)


def _refused(fn, rule, why, imgs=None):
    imgs = _images() if imgs is None else imgs
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, imgs)
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    msgs = _notes(plan, f"refused {rule}")
    assert any(why in m for m in msgs), plan.notes
    for e, g in zip(eager, got):
        _same(e, g)


def test_refused_normalize_computing_its_statistics():
    _refused(lambda b: ndd.normalize(ndd.hsv(b, hue=5.0), stddev=30.0), "color->normalize",
             "computes its mean from the data")
    _refused(lambda b: ndd.normalize(ndd.hsv(b, hue=5.0), mean=1.0, stddev=30.0, batch=True),
             "color->normalize", "batch=True")


def test_refused_for_inexact_intermediates():
    _refused(lambda b: ndd.hsv(ndd.brightness(b, brightness=9.0, dtype="int32"), hue=3.0),
             "color->color", "the intermediate is int32")
    _refused(lambda b: ndd.hsv(ndd.brightness(b, brightness=0.9, dtype="float16"), hue=3.0),
             "color->color", "the intermediate is float16")


def test_refused_arithmetic_that_is_not_float32_with_a_scalar():
    _refused(lambda b: ndd.brightness(b, brightness=0.5) + 3, "color->arithmetic",
             "computed in int32")
    _refused(lambda b: (lambda x: x * x)(ndd.cast(ndd.brightness(b, brightness=0.5),
                                                  dtype="float32")),
             "color->arithmetic", "another tensor operand")


def test_refused_cmn_padding_and_shared_intermediates():
    _refused(lambda b: ndd.crop_mirror_normalize(ndd.hue(b, hue=4.0), pad_output=True),
             "color->crop_mirror_normalize", "pad_output")

    def shared(b):
        x = ndd.hue(b, hue=4.0)
        return ndd.cast(x, dtype="float32") + ndd.cast(ndd.contrast(x, contrast=2.0),
                                                       dtype="float32")
    _refused(shared, "color->cast", "also read by")


def test_error_of_a_fused_stage_is_the_unfused_ops_error():
    imgs = [np.zeros((6, 7, 1), np.uint8)] * 2

    def fn(b):
        return ndd.cast(ndd.hsv(ndd.brightness(b, brightness=2.0), hue=3.0), dtype="float32")
    for mode in (ndd.EvalMode.sync_cpu, ndd.EvalMode.deferred):
        with pytest.raises(ValueError, match="3 channels"):
            _run(fn, mode, imgs)


def test_hand_built_chain_carries_stage_records():
    x = leaf(IMG)
    hue = leaf(ValueMeta("float32", 0, "", batch_size=2))
    h = node("hsv", [x], {"dtype": "uint8"}, tensor_args={"hue": hue})
    b = node("brightness_contrast", [h.outputs[0]], {"contrast": 1.5})
    c = node("cast", [b.outputs[0]], {"dtype": "float32"}, meta=IMG.with_(dtype="float32"))
    res = fuse(graph([c.outputs[0]]))
    (f,) = res.graph.nodes
    assert f.op == "fused.color" and f.outputs == c.outputs and f.inputs == (x,)
    assert [s.name for s in stages_of(f)] == ["hsv#0", "brightness_contrast#1", "cast#2"]
    s0, s1, s2 = stages_of(f)
    assert s0.tensor_arg("hue") == "hsv#0.hue" and f.tensor_args["hsv#0.hue"] is hue
    assert (s0.arg("_in"), s0.arg("_out"), s2.arg("_out")) == ("uint8", "uint8", "float32")
    assert s1.arg("contrast") == 1.5 and s0.arg("_layout") == "HWC"
    assert [d.rule for d in res.decisions] == ["color->color", "color->cast"]
    assert hash(f.key())


def test_normalize_varying_along_rows_is_fused_and_exact():
    """A mean / stddev that are not one value per channel: normalized after the fused loop."""
    rng = np.random.default_rng(5)
    imgs = [rng.integers(0, 256, (9, 13, 3), dtype=np.uint8) for _ in range(3)]
    mean = rng.uniform(50, 150, 9).astype(np.float32)
    std = rng.uniform(20, 60, 9).astype(np.float32)

    def fn(b):
        x = ndd.contrast(b, contrast=_u(0.5, 1.5, b))
        return ndd.normalize(x, mean=mean.tolist(), stddev=std.tolist(), axis_names="WC")
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, imgs)
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    assert [s.node.op for s in plan.steps][-1] == "fused.color"
    for e, g in zip(eager, got):
        _same(e, g)


def _random_chain(rng):
    """A random chain of 2-4 colour / cast / arithmetic steps, maybe ending with normalize or
    crop_mirror_normalize, with constant and per-sample arguments."""
    steps = []
    for _ in range(rng.integers(2, 5)):
        kind = rng.choice(["bc", "brightness", "contrast", "hsv", "hue", "saturation", "twist",
                           "cast", "arith"])
        per_sample = bool(rng.integers(0, 2))
        lo, hi = sorted(rng.uniform(0.3, 1.8, 2))
        steps.append((kind, per_sample, float(lo), float(hi + 0.01),
                      str(rng.choice(["uint8", "int16", "float32"]))))
    tail = str(rng.choice(["none", "normalize", "cmn"]))

    def fn(b):
        x = b
        for kind, ps, lo, hi, dt in steps:
            f = _u(lo, hi, b) if ps else (lo + hi) / 2
            if kind == "bc":
                x = ndd.brightness_contrast(x, brightness=f, contrast=hi, dtype=dt)
            elif kind == "brightness":
                x = ndd.brightness(x, brightness=f, brightness_shift=0.02)
            elif kind == "contrast":
                x = ndd.contrast(x, contrast=f, contrast_center=100.0)
            elif kind == "hsv":
                x = ndd.hsv(x, hue=f * 20, saturation=f, value=lo, dtype=dt)
            elif kind == "hue":
                x = ndd.hue(x, hue=f * 50)
            elif kind == "saturation":
                x = ndd.saturation(x, saturation=f)
            elif kind == "twist":
                x = ndd.color_twist(x, hue=f * 10, saturation=lo, brightness=f, contrast=hi)
            elif kind == "cast":
                x = ndd.cast(x, dtype=dt)
            else:
                x = ndd.cast(x, dtype="float32") * (lo + 0.5) - hi
        if tail == "normalize":
            x = ndd.normalize(x, mean=_u(0, 100, b), stddev=30.0)
        elif tail == "cmn":
            x = ndd.crop_mirror_normalize(x, crop=(14, 15), crop_pos_x=_u(0, 1, b), mean=MEAN,
                                          std=STD, mirror=ndd.random.coin_flip(
                                              batch_size=b.batch_size))
        return x
    return fn


@pytest.mark.parametrize("seed", range(12))
def test_random_chains_are_bit_exact(seed):
    rng = np.random.default_rng(seed)
    fn = _random_chain(rng)
    imgs = _images(np.uint8 if seed % 3 else np.float32, seed=seed)
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, imgs)
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    assert any(s.node.op == "fused.color" for s in plan.steps) or \
        any(m.startswith("refused color") for k, m in plan.notes), plan.notes
    for e, g in zip(eager, got):
        _same(e, g)
