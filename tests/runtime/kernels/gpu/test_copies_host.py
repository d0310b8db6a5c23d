"""crop / flip / transpose / cast on the GPU kernels' host build equal the CPU kernels bit for bit.

The CUDA source ``copy.cu`` is compiled as host C++ (``host_shim.h``) and run through the very
launchers registered as ``(op, "gpu")``, on a :class:`HostContext`; the reference is the CPU kernel
of the same op on the same samples (odd sizes, empty samples, mixed shapes in one batch).
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler.ir import ValueMeta
from runtime.kernels import registry
from runtime.kernels.cpu import cast as cpu_cast  # noqa: F401  (registers the CPU kernels)
from runtime.kernels.cpu import crop as cpu_crop  # noqa: F401
from runtime.kernels.cpu import flip as cpu_flip  # noqa: F401
from runtime.kernels.cpu import layout_ops  # noqa: F401
from runtime.kernels.gpu import copies  # noqa: F401  (registers the GPU kernels)
from runtime.kernels.gpu.hostbuild import HostContext, host_compiler
from runtime.kernels.registry import KernelContext

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++ compiler (g++)")


class SerialPool:
    num_threads = 1

    def map(self, fn, n):
        return [fn(i) for i in range(n)]


def run_both(op, samples, args, layout, out_dtype=None, tensor_args=(), launches=1,
             defines=None):
    """The op's CPU result and its GPU (host-build) result, per sample."""
    nd = samples[0].ndim
    metas_in = [ValueMeta(samples[0].dtype.name, nd, layout)]
    metas_out = [ValueMeta(out_dtype or samples[0].dtype.name, nd, layout)]
    n = len(samples)
    cpu_ctx = KernelContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op)
    gpu_ctx = HostContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op,
                          defines=defines)
    want = registry.lookup(op, "cpu")(cpu_ctx, [list(samples)], dict(args))[0]
    got = registry.lookup(op, "gpu")(gpu_ctx, [list(samples)], dict(args))[0]
    assert len(gpu_ctx.launches) <= launches, gpu_ctx.launches   # one launch per batch
    return want, got


def assert_same(want, got):
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype, g.shape, w.shape)
        assert g.tobytes() == np.ascontiguousarray(w).tobytes(), f"sample {i} differs"


def images(rng, shapes, dtype=np.uint8):
    out = []
    for s in shapes:
        if np.dtype(dtype).kind == "f":
            out.append((rng.standard_normal(s) * 100).astype(dtype))
        else:
            out.append(rng.integers(0, 256, s).astype(dtype))
    return out


SHAPES = [(5, 7, 3), (1, 1, 3), (0, 4, 3), (13, 2, 3), (31, 17, 3)]


@pytest.mark.parametrize("policy", ["pad", "trim_to_shape"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16])
def test_crop_matches_cpu(policy, dtype):
    rng = np.random.default_rng(1)
    samples = images(rng, SHAPES, dtype)
    args = {"crop": (6, 4), "crop_pos_x": 0.3, "crop_pos_y": 0.8,
            "out_of_bounds_policy": policy, "fill_values": (7, 300, -2)}
    assert_same(*run_both("crop", samples, args, "HWC"))


def test_crop_chw_with_dtype_and_single_fill():
    rng = np.random.default_rng(2)
    samples = [rng.integers(0, 256, (3, h, w)).astype(np.uint8) for h, w in
               ((9, 11), (2, 3), (4, 20))]
    args = {"crop_h": 5, "crop_w": 6, "out_of_bounds_policy": "pad", "fill_values": 1.5,
            "dtype": "float16"}
    # converts first (one cast launch), then crops
    assert_same(*run_both("crop", samples, args, "CHW", "float16", launches=2))


def test_crop_per_sample_window():
    rng = np.random.default_rng(3)
    samples = images(rng, [(10, 12, 3), (7, 9, 3), (20, 5, 3)])
    args = {"crop": (4, 4), "crop_pos_x": [np.float32(0), np.float32(1), np.float32(0.5)],
            "crop_pos_y": [np.float32(0.25), np.float32(0), np.float32(1)]}
    assert_same(*run_both("crop", samples, args, "HWC", tensor_args=("crop_pos_x",
                                                                       "crop_pos_y")))


@pytest.mark.parametrize("layout,shapes", [("HWC", SHAPES), ("HW", [(5, 7), (0, 3), (1, 9)]),
                                           ("FHWC", [(2, 3, 5, 3), (1, 1, 1, 3)])])
def test_flip_matches_cpu(layout, shapes):
    rng = np.random.default_rng(4)
    samples = images(rng, shapes)
    args = {"horizontal": [np.int32(1), np.int32(0), np.int32(1)][:len(shapes)] + [np.int32(1)] *
            max(0, len(shapes) - 3), "vertical": 1}
    assert_same(*run_both("flip", samples, args, layout, tensor_args=("horizontal",)))


@pytest.mark.parametrize("perm", [None, (2, 0, 1), (1, 0, 2)])
def test_transpose_matches_cpu(perm):
    rng = np.random.default_rng(5)
    samples = images(rng, SHAPES, np.float32)
    assert_same(*run_both("transpose", samples, {"perm": perm}, "HWC"))


CAST_VALUES = np.array([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, 254.5, 255.5, 256.0,
                        -1.0, -129.5, 1e10, -1e10, np.inf, -np.inf, np.nan, 2049.0, 2051.0,
                        65519.0, 65520.0, 1e-8, 3e-5, -6.1e-5, 32767.5, 4294967295.5,
                        9.3e18, -9.3e18, 1.8e19], np.float64)
TYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "float16", "float32", "float64"]


@pytest.mark.parametrize("src", TYPES)
def test_cast_every_pair_matches_cpu(src):
    rng = np.random.default_rng(6)
    if src in ("float32", "float64", "float16"):
        with np.errstate(all="ignore"):
            base = CAST_VALUES.astype(src)
            base = base[~np.isnan(base)] if src == "float16" else base
            extra = (rng.standard_normal(50) * 3e4).astype(src)
    else:
        info = np.iinfo(src) if src != "bool" else None
        if info is None:
            base = np.array([True, False, True])
            extra = rng.integers(0, 2, 40).astype(bool)
        else:
            vals = [info.min, info.max, 0, 1, -1, 255, 256, 2049, 2051, 65535, 65536, 2 ** 40 + 1]
            base = np.array([min(max(v, int(info.min)), int(info.max)) for v in vals], src)
            extra = rng.integers(info.min, info.max, 40, dtype=src, endpoint=True)
    samples = [base, extra.reshape(5, -1), np.zeros((0, 3), src), extra[:7]]
    for dst in TYPES:
        want, got = run_both("cast", samples, {"dtype": dst}, "", dst)
        assert_same(want, got)


def test_the_64_bit_index_path():
    """Built with NDD_SMALL_INDEX_MAX 0, every sample takes the 64-bit index path."""
    rng = np.random.default_rng(12)
    samples = images(rng, SHAPES, np.float32)
    args = {"crop": (6, 4), "out_of_bounds_policy": "pad", "fill_values": (1, 2, 3)}
    assert_same(*run_both("crop", samples, args, "HWC", defines={"NDD_SMALL_INDEX_MAX": 0}))
    assert_same(*run_both("transpose", samples, {"perm": (2, 0, 1)}, "HWC",
                          defines={"NDD_SMALL_INDEX_MAX": 0}))
