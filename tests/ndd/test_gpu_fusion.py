"""The fuse pass on GPU chains (``compiler/fusion_rules_gpu.py``), run on the fake GPU with the
real GPU kernels built as host C++: the fusions the GPU kernels support are applied and equal
the unfused chain bit for bit (colour -> cmn also the CPU's); the others are refused with their
reason; a chain across devices
is never fused; integer ``//`` is refused on the GPU."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import ndd
from compiler.fusion_rules_gpu import (CMN_IN_TYPES, CMN_OUT_TYPES, COLOR_CMN_TYPES,
                                       RESIZE_CMN_OUT_TYPES, RESIZE_MID_TYPES)
from compiler.ir import Graph
from compiler.pipeline import compile_graph, set_options
from ndd._evaluate import last_plan

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="host build needs g++")

MEAN, STD = [120.0, 110.0, 100.0], [60.0, 61.0, 62.0]


def _images(seed, dtype=np.uint8):
    rng = np.random.default_rng(seed)
    shapes = [(37, 29, 3), (20, 44, 3), (31, 31, 3)]
    if dtype == np.uint8:
        return [rng.integers(0, 256, s, dtype=np.uint8) for s in shapes]
    return [(rng.standard_normal(s) * 50 + 100).astype(dtype) for s in shapes]


def _deferred(fn, b, fuse=True):
    """(host arrays, plan) of ``fn(b)`` run in deferred mode (fusion on or off)."""
    set_options(disable=() if fuse else ("fuse",))
    try:
        with ndd.EvalMode.deferred:
            out = fn(b)
            host = out.cpu() if out.device.kind == "gpu" else out
            res = [np.asarray(t) for t in host.tensors]
            plan = last_plan()
    finally:
        set_options(disable=())
    return res, plan


def _ops(plan):
    return [(s.node.op, s.node.device.kind) for s in plan.steps]


def _fuse_notes(plan, kind):
    return [m for name, m in plan.notes if name == "fuse" and m.startswith(kind)]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_rrc_to_cmn_fuses_on_the_gpu_and_equals_the_unfused_chain(gpu):
    b = ndd.batch(_images(0), layout="HWC").gpu()
    mirror = ndd.batch([np.int32(v) for v in (1, 0, 1)])

    def train(x):
        y = ndd.random_resized_crop(x, size=(24, 20), rng=ndd.random.RNG(11))
        return ndd.crop_mirror_normalize(y, mirror=mirror, mean=MEAN, std=STD)
    fused, plan = _deferred(train, b)
    assert ("fused.image", "gpu") in _ops(plan)
    assert not any(op in ("random_resized_crop", "crop_mirror_normalize")
                   for op, _ in _ops(plan))
    assert _fuse_notes(plan, "applied resize->crop_mirror_normalize")
    unfused, plan2 = _deferred(train, b, fuse=False)
    assert ("random_resized_crop", "gpu") in _ops(plan2)
    _same(fused, unfused)


def test_resize_to_cmn_with_crop_fuses_on_float32_and_equals_the_cpu(gpu):
    imgs = _images(1, np.float32)

    def val(x):
        y = ndd.resize(x, resize_shorter=18, interp_type=ndd.types.INTERP_LINEAR)
        return ndd.crop_mirror_normalize(y, crop=(16, 14), mean=MEAN, std=STD)
    fused, plan = _deferred(val, ndd.batch(imgs, layout="HWC").gpu())
    assert ("fused.image", "gpu") in _ops(plan)
    unfused, _ = _deferred(val, ndd.batch(imgs, layout="HWC").gpu(), fuse=False)
    _same(fused, unfused)
    cpu, _ = _deferred(val, ndd.batch(imgs, layout="HWC"), fuse=False)
    for g, c in zip(fused, cpu):      # the CPU's dense matmul path: a few float32 ulps
        np.testing.assert_allclose(g, c, rtol=0, atol=1e-5)


def test_flip_to_cmn_fuses_on_the_gpu_and_equals_the_cpu(gpu):
    imgs = _images(2)

    def fn(x):
        return ndd.crop_mirror_normalize(ndd.flip(x, horizontal=1), mean=MEAN, std=STD,
                                         mirror=1, dtype=ndd.float16)
    got, plan = _deferred(fn, ndd.batch(imgs, layout="HWC").gpu())
    assert _ops(plan).count(("fused.image", "gpu")) == 1 and len(_ops(plan)) == 1
    want, _ = _deferred(fn, ndd.batch(imgs, layout="HWC"), fuse=False)
    _same(got, want)


def test_elementwise_chain_fuses_into_one_gpu_kernel(gpu):
    imgs = _images(3)

    def fn(x):
        return ndd.cast(x * 0.5 + 3, dtype=ndd.uint8) - 7
    got, plan = _deferred(fn, ndd.batch(imgs, layout="HWC").gpu())
    assert _ops(plan) == [("elementwise_fused", "gpu")]
    want, _ = _deferred(fn, ndd.batch(imgs, layout="HWC"), fuse=False)
    _same(got, want)


def test_integer_floordiv_is_not_fused_on_the_gpu(gpu):
    with ndd.EvalMode.deferred:
        x = ndd.batch(_images(4), layout="HWC").gpu()
        y = ndd.cast(x, dtype=ndd.int32) // 3
        plan = compile_graph(Graph.from_outputs([y._value]), dry_run=True)
    notes = _fuse_notes(plan, "refused elementwise")
    assert notes and "integer floordiv is not generated for the GPU" in notes[0]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_colour_to_cmn_fuses_on_the_gpu_and_equals_the_cpu(gpu, dtype):
    imgs = _images(5, dtype)
    mirror = ndd.batch([np.int32(v) for v in (0, 1, 1)])

    def fn(x):
        y = ndd.brightness_contrast(x, brightness=1.2, contrast=0.9, contrast_center=100.0)
        return ndd.crop_mirror_normalize(y, crop=(15, 12), mean=MEAN, std=STD, mirror=mirror)

    def fn2(x):
        y = ndd.hsv(x, hue=20.0, saturation=1.3, dtype=ndd.float32)
        return ndd.crop_mirror_normalize(y, mean=MEAN, std=STD, dtype=ndd.float16)
    for f in (fn, fn2):
        got, plan = _deferred(f, ndd.batch(imgs, layout="HWC").gpu())
        assert _ops(plan) == [("fused.color", "gpu")]
        want, _ = _deferred(f, ndd.batch(imgs, layout="HWC"), fuse=False)
        _same(got, want)


def test_longer_colour_chains_fuse_into_one_gpu_kernel(gpu):
    imgs = _images(5)

    def fn(x):
        y = ndd.brightness_contrast(ndd.hsv(x, saturation=0.7), brightness=1.1)
        return ndd.crop_mirror_normalize(y, mean=MEAN, std=STD)
    got, plan = _deferred(fn, ndd.batch(imgs, layout="HWC").gpu())
    assert _ops(plan) == [("fused.color", "gpu")]      # hsv -> bc -> cmn: color_chain.cu
    assert any("applied color->color" in m for m in _fuse_notes(plan, "applied"))
    want, _ = _deferred(fn, ndd.batch(imgs, layout="HWC"))
    _same(got, want)
    want, _ = _deferred(fn, ndd.batch(imgs, layout="HWC"), fuse=False)
    _same(got, want)


def test_a_chain_across_devices_is_not_fused(gpu):
    imgs = _images(6)

    def fn(x):
        y = ndd.flip(x, horizontal=1)                                   # on the CPU
        return ndd.crop_mirror_normalize(y, mean=MEAN, std=STD, device="gpu")
    got, plan = _deferred(fn, ndd.batch(imgs, layout="HWC"))
    assert ("flip", "cpu") in _ops(plan) and ("crop_mirror_normalize", "gpu") in _ops(plan)
    assert any("flip runs on cpu and crop_mirror_normalize on gpu:0" in m
               for m in _fuse_notes(plan, "refused flip->"))
    want, _ = _deferred(fn, ndd.batch(imgs, layout="HWC"), fuse=False)
    _same(got, want)


def test_cpu_chains_fuse_as_before():
    imgs = _images(7)

    def fn(x):
        return ndd.crop_mirror_normalize(ndd.flip(x, horizontal=1), mean=MEAN, std=STD)
    _, plan = _deferred(fn, ndd.batch(imgs, layout="HWC"))
    assert _ops(plan) == [("fused.image", "cpu")]


def test_the_compiler_type_tables_are_the_kernels():
    from compiler.fusion_rules_gpu import RESIZE_TYPES
    from compiler.fusion_rules import COLOR_OPS
    from compiler.fusion_rules_gpu import COLOR_CHAIN_MAX
    from runtime.kernels.gpu import cmn, color, fused, fused_color, resize
    assert RESIZE_TYPES == resize.TYPES
    assert COLOR_CHAIN_MAX == fused_color.CHAIN_MAX and set(COLOR_OPS) == set(color.PARAMS)
    assert RESIZE_MID_TYPES == fused.MID_TYPES and RESIZE_CMN_OUT_TYPES == fused.OUT_TYPES
    assert CMN_IN_TYPES == cmn.IN_TYPES and CMN_OUT_TYPES == cmn.OUT_TYPES
    assert COLOR_CMN_TYPES == (fused_color.IN_TYPES, fused_color.MID_TYPES,
                               fused_color.OUT_TYPES)


def test_fused_rrc_to_cmn_is_captured_and_replayed_as_a_cuda_graph(gpu):
    from runtime.gpu import capture
    rng = np.random.default_rng(8)
    capture.set_enabled(True)
    try:
        for i in range(5):
            imgs = [rng.integers(0, 256, (30, 26, 3), dtype=np.uint8) for _ in range(3)]
            b = ndd.batch(imgs, layout="HWC")

            def train(x):
                y = ndd.random_resized_crop(x, size=(16, 12), rng=ndd.random.RNG(i))
                return ndd.crop_mirror_normalize(y, mean=MEAN, std=STD)
            got, plan = _deferred(train, b.gpu())
            assert ("fused.image", "gpu") in _ops(plan)
            want = [np.asarray(t) for t in train(b.gpu()).cpu().tensors]    # eager, unfused
            _same(got, want)
        stats = capture.cache().stats
    finally:
        capture.set_enabled(False)
    assert stats["capture"] >= 1 and stats["replay"] >= 2, stats
