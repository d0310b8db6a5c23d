"""``fused.image`` on the GPU (host build): resize / random_resized_crop -> [flip] ->
crop_mirror_normalize in two launches equals the unfused GPU chain (resize, then
crop_mirror_normalize) bit for bit, and the CPU's unfused chain where the CPU resizes on its
float32 sparse path; a flip -> crop_mirror_normalize node equals cmn with the mirror folded in.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler.ir import Stage, ValueMeta
from runtime.kernels import registry
from runtime.kernels.cpu import cmn as cpu_cmn  # noqa: F401 (registers the CPU kernels)
from runtime.kernels.cpu import resize as cpu_resize  # noqa: F401
from runtime.kernels.gpu import fused  # noqa: F401 (registers the GPU kernel)
from runtime.kernels.gpu import cmn as gpu_cmn  # noqa: F401
from runtime.kernels.gpu import resize as gpu_resize  # noqa: F401
from runtime.kernels.gpu.compile import source_of
from runtime.kernels.gpu.hostbuild import HostContext, host_compiler, host_module
from runtime.kernels.registry import KernelContext

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++ compiler (g++)")

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


class SerialPool:
    num_threads = 1

    def map(self, fn, n):
        return [fn(i) for i in range(n)]


def stage(op, name, **args):
    return Stage(op, name, tuple(sorted(args.items())))


def ctx_for(cls, op, samples, out_dt, layout="HWC", tensor=()):
    nd = samples[0].ndim
    return cls(SerialPool(), [ValueMeta(samples[0].dtype.name, nd, layout)],
               [ValueMeta(out_dt, nd, layout)], set(tensor), len(samples), op)


def unfused(device, samples, first_op, ra, ca, seeds=None):
    """first_op (resize / random_resized_crop) then crop_mirror_normalize on ``device``."""
    cls = HostContext if device == "gpu" else KernelContext
    mid_dt = str(np.dtype(ra.get("dtype") or samples[0].dtype))
    a = dict(ra, _seeds=seeds) if seeds is not None else dict(ra)
    mid = registry.lookup(first_op, device)(ctx_for(cls, first_op, samples, mid_dt),
                                            [samples], a)[0]
    mid = [np.asarray(m) for m in mid]
    out_dt = str(np.dtype(ca.get("dtype", "float32")))
    return registry.lookup("crop_mirror_normalize", device)(
        ctx_for(cls, "crop_mirror_normalize", mid, out_dt), [mid], dict(ca))[0]


def fused_gpu(samples, stages, seeds=None, out_dt="float32"):
    ctx = ctx_for(HostContext, "fused.image", samples, out_dt)
    args = {"stages": tuple(stages)}
    if seeds is not None:
        args["_seeds"] = seeds
    got = registry.lookup("fused.image", "gpu")(ctx, [samples], args)[0]
    return got, ctx.launches


def same(want, got):
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape)
        assert g.tobytes() == np.ascontiguousarray(w).tobytes(), \
            f"sample {i}: max diff {np.abs(g.astype(float) - w.astype(float)).max()}"


@pytest.mark.parametrize("mid,out", [("uint8", "float32"), ("uint8", "float16"),
                                     ("float32", "float32"), ("float32", "uint8")])
def test_resize_cmn_equals_the_unfused_gpu_chain(mid, out):
    rng = np.random.default_rng(1)
    samples = [rng.integers(0, 256, s).astype(np.uint8) for s in ((97, 161, 3), (60, 40, 3),
                                                                  (33, 35, 3))]
    ra = {"resize_shorter": 30.0, "interp_type": "cubic", "dtype": mid}
    ca = {"crop": (24, 26), "mean": MEAN, "std": STD, "dtype": out, "mirror": 1,
          "out_of_bounds_policy": "pad", "pad_output": True, "fill_values": [1, 2, 3, 4]}
    got, launches = fused_gpu(samples, [stage("resize", "resize", **ra),
                                        stage("crop_mirror_normalize", "cmn", **ca)],
                              out_dt=out)
    assert len(launches) == 2
    same(unfused("gpu", samples, "resize", ra, ca), got)


def test_rrc_flip_cmn_equals_the_unfused_chains():
    rng = np.random.default_rng(2)
    samples = [(rng.random(s) * 255).astype(np.float32) for s in ((120, 150, 3), (97, 130, 3))]
    seeds = (5, 6)
    ra = {"size": (44, 44), "random_area": (0.3, 1.0), "random_aspect_ratio": (0.75, 4 / 3),
          "num_attempts": 10, "interp_type": "linear"}
    ca = {"crop": (40, 40), "mean": MEAN, "std": STD, "output_layout": "CHW"}
    stages = [stage("random_resized_crop", "rrc", **ra), stage("flip", "flip", horizontal=1),
              stage("crop_mirror_normalize", "cmn", **ca)]
    got, _ = fused_gpu(samples, stages, seeds)
    want = unfused("gpu", samples, "random_resized_crop", ra, dict(ca, mirror=1), seeds)
    same(want, got)
    # the CPU's unfused chain: exact where its resize takes the sparse float32 path
    cpu = unfused("cpu", samples, "random_resized_crop", ra, dict(ca, mirror=1), seeds)
    for w, g in zip(cpu, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


def test_flip_cmn_folds_the_mirror():
    rng = np.random.default_rng(3)
    samples = [rng.integers(0, 256, s).astype(np.uint8) for s in ((9, 11, 3), (4, 7, 3))]
    ca = {"crop": (4, 5), "mean": 10.0, "std": 3.0, "mirror": 1}
    got, launches = fused_gpu(samples, [stage("flip", "flip", horizontal=1),
                                        stage("crop_mirror_normalize", "cmn", **ca)])
    assert len(launches) == 1
    ctx = ctx_for(KernelContext, "crop_mirror_normalize", samples, "float32")
    want = registry.lookup("crop_mirror_normalize", "cpu")(ctx, [samples], dict(ca, mirror=0))[0]
    same(want, got)


def test_decoding_chains_are_refused():
    samples = [np.zeros(10, np.uint8)]
    with pytest.raises(NotImplementedError, match="after the decode"):
        fused_gpu(samples, [stage("decoders.image", "decode"),
                            stage("crop_mirror_normalize", "cmn")])


def test_descriptor_layout():
    assert host_module("resize_cmn", source_of("resize_cmn")).sizeof("RcDesc") == \
        8 * (gpu_resize.DESC_WORDS + gpu_cmn.DESC_WORDS)
