"""crop_mirror_normalize on the GPU kernel's host build equals the CPU kernel bit for bit.

``cmn.cu`` compiled as host C++ runs through the launcher registered as
``("crop_mirror_normalize", "gpu")``; the reference is the CPU kernel (its batch path and its
per-sample path) on the same batch: odd sizes, an empty window, mixed shapes, windows leaving
the image, mirror per sample, pad_output, every supported input/output type pair.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from compiler.ir import ValueMeta
from runtime.kernels import registry
from runtime.kernels.cpu import cmn as cpu_cmn  # noqa: F401  (registers the CPU kernel)
from runtime.kernels.gpu import cmn as gpu_cmn
from runtime.kernels.gpu.hostbuild import HostContext, host_compiler
from runtime.kernels.registry import KernelContext

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++ compiler (g++)")


class SerialPool:
    num_threads = 1

    def map(self, fn, n):
        return [fn(i) for i in range(n)]


def run_both(samples, args, layout, tensor_args=(), defines=None):
    nd = samples[0].ndim
    out_dt = str(np.dtype(args.get("dtype", "float32")))
    metas_in = [ValueMeta(samples[0].dtype.name, nd, layout)]
    metas_out = [ValueMeta(out_dt, nd, args.get("output_layout", "CHW"))]
    n = len(samples)
    op = "crop_mirror_normalize"
    cpu_ctx = KernelContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op)
    gpu_ctx = HostContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op,
                          defines=defines)
    want = registry.lookup(op, "cpu")(cpu_ctx, [list(samples)], dict(args))[0]
    got = registry.lookup(op, "gpu")(gpu_ctx, [list(samples)], dict(args))[0]
    assert len(gpu_ctx.launches) == 1
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype, g.shape, w.shape)
        assert g.tobytes() == np.ascontiguousarray(w).tobytes(), f"sample {i} differs"


def batch(rng, shapes, dtype):
    if np.dtype(dtype).kind == "f":
        return [(rng.standard_normal(s) * 90 + 100).astype(dtype) for s in shapes]
    info = np.iinfo(dtype)
    return [rng.integers(max(info.min, -300), min(info.max, 300), s, endpoint=True).astype(dtype)
            for s in shapes]


MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.mark.parametrize("src", gpu_cmn.IN_TYPES)
@pytest.mark.parametrize("dst", gpu_cmn.OUT_TYPES)
def test_every_type_pair(src, dst):
    rng = np.random.default_rng(zlib.crc32(repr((src, dst)).encode()))
    samples = batch(rng, [(9, 11, 3), (7, 7, 3), (16, 5, 3)], src)
    args = {"crop": (5, 4), "mean": MEAN, "std": STD, "dtype": dst, "scale": 1.5,
            "mirror": [np.int32(1), np.int32(0), np.int32(1)]}
    run_both(samples, args, "HWC", tensor_args=("mirror",))


@pytest.mark.parametrize("out_layout", ["CHW", "HWC"])
def test_pad_policy_pad_output_and_shift(out_layout):
    rng = np.random.default_rng(7)
    samples = batch(rng, [(5, 7, 3), (1, 1, 3), (13, 2, 3), (31, 17, 3)], np.uint8)
    args = {"crop": (8, 6), "crop_pos_x": 0.2, "crop_pos_y": 0.9, "mean": MEAN, "std": STD,
            "out_of_bounds_policy": "pad", "pad_output": True, "fill_values": [1, 2, 3, 4],
            "shift": 0.25, "scale": 2.0, "output_layout": out_layout, "mirror": 1}
    run_both(samples, args, "HWC")


def test_chw_input_trim_and_float16_output():
    rng = np.random.default_rng(8)
    samples = batch(rng, [(3, 9, 11), (3, 2, 3), (3, 40, 4)], np.float32)
    args = {"crop_h": 6, "crop_w": 5, "out_of_bounds_policy": "trim_to_shape", "mean": 3.0,
            "std": 7.0, "dtype": "float16", "output_layout": "HWC"}
    run_both(samples, args, "CHW")


def test_grayscale_and_empty_window():
    rng = np.random.default_rng(9)
    samples = batch(rng, [(6, 9), (0, 5), (3, 3)], np.uint8)
    args = {"mean": 10.0, "std": 3.0, "out_of_bounds_policy": "pad", "crop": (4, 4),
            "fill_values": 0.5, "dtype": "uint8"}
    run_both(samples, args, "HW")


def test_zero_scale_uses_the_shift():
    rng = np.random.default_rng(10)
    samples = batch(rng, [(4, 5, 3), (4, 5, 3)], np.uint8)
    run_both(samples, {"scale": 0.0, "shift": 3.5, "mean": MEAN, "std": STD}, "HWC")


def test_the_64_bit_index_path():
    """Built with NDD_SMALL_INDEX_MAX 0, every sample takes the 64-bit index path."""
    rng = np.random.default_rng(11)
    samples = batch(rng, [(5, 7, 3), (13, 2, 3), (31, 17, 3)], np.uint8)
    args = {"crop": (8, 6), "mean": MEAN, "std": STD, "out_of_bounds_policy": "pad",
            "pad_output": True, "mirror": 1, "dtype": "float16"}
    run_both(samples, args, "HWC", defines={"NDD_SMALL_INDEX_MAX": 0})
