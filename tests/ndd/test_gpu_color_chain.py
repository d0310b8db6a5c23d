"""Colour chains fused on the GPU (``color->color`` [-> cmn] as one ``fused.color`` GPU node,
``runtime/kernels/gpu/color_chain.cu``), on the fake GPU with the .cu built as host C++: equal
bit for bit to the unfused chain and to the CPU (colour ops, then cmn, one by one), with and
without a cmn at the end, uint8 and float32 between the stages, per-sample arguments, crop and
mirror; what the kernel does not run is refused with its reason."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ndd
from compiler.pipeline import set_options
from ndd._evaluate import last_plan
from runtime.kernels.gpu import cmn, compile as cc, fused_color
from runtime.kernels.gpu.hostbuild import host_module

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="host build needs g++")

MEAN, STD = [120.0, 110.0, 100.0], [60.0, 61.0, 62.0]


def _images(seed, dtype=np.uint8, c=3):
    rng = np.random.default_rng(seed)
    shapes = [(23, 31, c), (9, 40, c), (1, 1, c), (17, 17, c)]
    if dtype == np.uint8:
        return [rng.integers(0, 256, s, dtype=np.uint8) for s in shapes]
    return [(rng.standard_normal(s) * 60 + 120).astype(dtype) for s in shapes]


def _deferred(fn, b, fuse=True):
    set_options(disable=() if fuse else ("fuse",))
    try:
        with ndd.EvalMode.deferred:
            out = fn(b)
            res = [np.asarray(t) for t in (out.cpu() if out.device.kind == "gpu"
                                            else out).tensors]
            plan = last_plan()
    finally:
        set_options(disable=())
    return res, plan


def _ops(plan):
    return [(s.node.op, s.node.device.kind) for s in plan.steps]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def _check(fn, imgs, nodes):
    """fn fused on the GPU == unfused on the GPU == the CPU unfused; returns the plan."""
    got, plan = _deferred(fn, ndd.batch(imgs, layout="HWC").gpu())
    assert _ops(plan) == nodes
    _same(got, _deferred(fn, ndd.batch(imgs, layout="HWC").gpu(), fuse=False)[0])
    _same(got, _deferred(fn, ndd.batch(imgs, layout="HWC"), fuse=False)[0])
    return plan


def test_descriptor_layout():
    words = cmn.DESC_WORDS + 3 + 2 * fused_color.CHAIN_MAX
    assert host_module("color_chain", cc.source_of("color_chain")).sizeof("ChDesc") == 8 * words


def test_hsv_brightness_contrast_cmn_with_per_sample_arguments(gpu):
    imgs = [x for x in _images(1) if x.shape[0] >= 9 and x.shape[1] >= 7]     # the crop fits
    mirror = ndd.batch([np.int32(v) for v in (1, 0, 1)])
    sat = ndd.batch([np.float32(v) for v in (0.5, 1.4, 2.0)])

    def fn(x):
        y = ndd.hsv(x, hue=25.0, saturation=sat)
        y = ndd.brightness_contrast(y, brightness=1.2, contrast=0.8, contrast_center=90.0)
        return ndd.crop_mirror_normalize(y, crop=(9, 7), mirror=mirror, mean=MEAN, std=STD,
                                         dtype=ndd.float16)
    _check(fn, imgs, [("fused.color", "gpu")])


def test_float32_between_the_stages_and_four_ops(gpu):
    imgs = _images(2, np.float32)

    def fn(x):
        y = ndd.hue(x, hue=-40.0)
        y = ndd.saturation(y, saturation=1.3)
        y = ndd.contrast(y, contrast=1.1, contrast_center=128.0)
        y = ndd.color_twist(y, brightness=0.9, contrast=1.05, saturation=0.8, hue=10.0)
        return ndd.crop_mirror_normalize(y, mean=MEAN, std=STD)
    _check(fn, imgs, [("fused.color", "gpu")])


def test_a_colour_chain_without_cmn_and_mixed_intermediate_types(gpu):
    imgs = _images(3)

    def fn(x):
        y = ndd.brightness(x, brightness=1.7)                   # uint8 (saturates)
        y = ndd.hsv(y, saturation=0.6, dtype=ndd.float32)       # uint8 -> float32
        return ndd.contrast(y, contrast=1.4, contrast_center=100.0)   # float32
    _check(fn, imgs, [("fused.color", "gpu")])


def test_a_scale_only_chain_on_one_channel_images(gpu):
    imgs = _images(4, c=1)

    def fn(x):
        y = ndd.brightness_contrast(x, brightness=0.8, contrast=1.3)
        return ndd.crop_mirror_normalize(ndd.brightness(y, brightness=1.1), mean=[100.0],
                                         std=[50.0], mirror=1)
    _check(fn, imgs, [("fused.color", "gpu")])


def test_a_fifth_colour_op_starts_a_new_chain(gpu):
    imgs = _images(5)

    def fn(x):
        for k in range(5):
            x = ndd.brightness(x, brightness=1.0 + 0.05 * k)
        return ndd.crop_mirror_normalize(x, mean=MEAN, std=STD)
    plan = _check(fn, imgs, [("fused.color", "gpu"), ("fused.color", "gpu")])
    notes = [m for name, m in plan.notes if name == "fuse"]
    assert any("at most 4 colour ops" in m for m in notes), notes


def test_an_int16_intermediate_is_not_fused_on_the_gpu(gpu):
    imgs = _images(6)

    def fn(x):
        y = ndd.brightness(x, brightness=1.5, dtype=ndd.int16)
        return ndd.contrast(y, contrast=0.5)
    got, plan = _deferred(fn, ndd.batch(imgs, layout="HWC").gpu())
    assert ("fused.color", "gpu") not in _ops(plan)
    assert any("no int16 colour output" in m for name, m in plan.notes if name == "fuse")
    _same(got, _deferred(fn, ndd.batch(imgs, layout="HWC"), fuse=False)[0])
