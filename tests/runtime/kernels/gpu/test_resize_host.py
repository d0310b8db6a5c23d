"""resize / random_resized_crop on the GPU kernels' host build against the CPU kernel.

``resize.cu`` compiled as host C++ runs through the launchers registered as ``("resize", "gpu")``
and ``("random_resized_crop", "gpu")``. The CPU kernel computes its float32 result with torch
sparse matrix products, whose sums the GPU kernel reproduces (same banded taps, same order, no
contraction): bit for bit. Two CPU paths are not that product and are checked with a tolerance:
an axis whose filter covers at least a quarter of its source window is a dense torch matmul on
the CPU (MKL's blocked sums; a few float32 ulps) and uint8 -> uint8 linear/triangular resizes use
torch's uint8 antialias kernels (within 1, as the CPU kernel documents against its own float
path).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from compiler.ir import ValueMeta
from runtime.kernels import registry
from runtime.kernels.cpu import resize as cpu_resize  # noqa: F401 (registers the CPU kernels)
from runtime.kernels.cpu.resize_taps import axis_matrix
from runtime.kernels.gpu import resize as gpu_resize
from runtime.kernels.gpu.compile import source_of
from runtime.kernels.gpu.hostbuild import HostContext, host_compiler, host_module
from runtime.kernels.params.resize_geometry import resize_output_shape
from runtime.kernels.registry import KernelContext

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++ compiler (g++)")


class SerialPool:
    num_threads = 1

    def map(self, fn, n):
        return [fn(i) for i in range(n)]


def run_both(op, samples, args, layout, tensor_args=(), defines=None):
    nd = samples[0].ndim
    out_dt = str(np.dtype(args.get("dtype") or samples[0].dtype))
    metas_in = [ValueMeta(samples[0].dtype.name, nd, layout)]
    metas_out = [ValueMeta(out_dt, nd, layout)]
    n = len(samples)
    cpu_ctx = KernelContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op)
    gpu_ctx = HostContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op,
                          defines=defines)
    want = registry.lookup(op, "cpu")(cpu_ctx, [list(samples)], dict(args))[0]
    got = registry.lookup(op, "gpu")(gpu_ctx, [list(samples)], dict(args))[0]
    assert len(gpu_ctx.launches) == 2           # one launch per pass for the whole batch
    return [np.asarray(w) for w in want], got


def cpu_is_dense(shape, layout, args):
    """Whether the CPU kernel resamples an axis of this sample with a dense matmul."""
    ax = {c: k for k, c in enumerate(layout)}
    in_hw = (shape[ax["H"]], shape[ax["W"]])
    p = resize_output_shape(in_hw, **{k: v for k, v in args.items()
                                      if k in ("size", "resize_x", "resize_y", "resize_shorter",
                                               "roi_start", "roi_end", "mode")})
    chans = shape[ax["C"]] if "C" in ax else 1
    kind = args.get("interp_type", "linear")
    aa = args.get("antialias", True)
    dense = False
    for L, O, a0, a1, acc, c in ((in_hw[0], p.out_h, p.y0, p.y1, True, 1),
                                 (in_hw[1], p.out_w, p.x0, p.x1, False, chans)):
        if O and L:
            k = gpu_resize.axis_kind(O, a0, a1, kind, kind)
            m = axis_matrix(L, O, float(a0), float(a1), k, aa, acc, c)[2]
            dense |= m.layout == torch.strided
    return dense


def compare(want, got, exact, tol):
    for i, (w, g) in enumerate(zip(want, got)):
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype, g.shape, w.shape)
        if exact[i]:
            assert g.tobytes() == w.tobytes(), \
                f"sample {i}: max diff {np.abs(g.astype(float) - w).max()}"
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), atol=tol,
                                       rtol=1e-5, err_msg=f"sample {i}")


KINDS = ["linear", "cubic", "lanczos3", "triangular", "gaussian", "nn"]


@pytest.mark.parametrize("kind", KINDS)
def test_float_resize_matches_cpu(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    shapes = [(97, 161, 3), (150, 200, 3), (33, 35, 1), (8, 9, 3), (120, 31, 3)]
    samples = [(rng.random(s) * 255).astype(np.float32) for s in shapes]
    args = {"size": (41, 47), "interp_type": kind, "antialias": True}
    want, got = run_both("resize", samples, args, "HWC")
    exact = [not cpu_is_dense(s, "HWC", args) for s in shapes]
    assert sum(exact) >= 2, exact        # most of these take the CPU's sparse path
    compare(want, got, exact, 1e-3)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "float32"])
@pytest.mark.parametrize("layout", ["HWC", "CHW", "HW"])
def test_types_layouts_and_upscale(dtype, layout):
    rng = np.random.default_rng(11)
    hw = [(71, 45), (15, 90), (3, 2), (40, 40)]
    shape = {"HWC": lambda h, w: (h, w, 3), "CHW": lambda h, w: (3, h, w),
             "HW": lambda h, w: (h, w)}
    samples = [(rng.random(shape[layout](h, w)) * 250 - (50 if dtype != "uint8" else 0))
               .astype("float32") for h, w in hw]
    args = {"resize_shorter": 17.5, "interp_type": "cubic", "dtype": dtype}
    want, got = run_both("resize", samples, args, layout)
    exact = [not cpu_is_dense(s.shape, layout, args) for s in samples]
    compare(want, got, exact, 1.0 if dtype != "float32" else 1e-3)


def test_uint8_fast_path_within_one():
    rng = np.random.default_rng(12)
    samples = [rng.integers(0, 256, s).astype(np.uint8) for s in ((64, 80, 3), (31, 17, 3),
                                                                  (200, 150, 3))]
    want, got = run_both("resize", samples, {"size": (24, 20), "interp_type": "linear"}, "HWC")
    for w, g in zip(want, got):
        assert np.abs(g.astype(int) - w.astype(int)).max() <= 1


def test_flipped_roi_and_empty_samples():
    rng = np.random.default_rng(13)
    samples = [(rng.random(s) * 9).astype(np.float32) for s in ((60, 70, 3), (0, 5, 3),
                                                                (45, 52, 3))]
    args = {"size": (11, 13), "roi_start": (50.5, 3.25), "roi_end": (2.0, 60.0),
            "interp_type": "triangular"}
    want, got = run_both("resize", samples, args, "HWC")
    exact = [s.size == 0 or not cpu_is_dense(s.shape, "HWC", args) for s in samples]
    compare(want, got, exact, 1e-3)


def test_random_resized_crop_same_windows():
    rng = np.random.default_rng(14)
    samples = [(rng.random(s) * 255).astype(np.float32) for s in ((120, 90, 3), (77, 130, 3),
                                                                  (64, 64, 3))]
    args = {"size": (16, 16), "_seeds": (11, 22, 33), "interp_type": "linear",
            "random_area": (0.08, 1.0), "random_aspect_ratio": (0.75, 4 / 3), "num_attempts": 10}
    want, got = run_both("random_resized_crop", samples, args, "HWC")
    compare(want, got, [False] * 3, 1e-3)


def test_descriptor_layout():
    assert host_module("resize", source_of("resize")).sizeof("RsDesc") == \
        8 * gpu_resize.DESC_WORDS


def test_the_64_bit_index_path():
    """Built with NDD_SMALL_INDEX_MAX 0, every sample takes the 64-bit index path."""
    rng = np.random.default_rng(15)
    samples = [(rng.random(s) * 255).astype(np.float32) for s in ((97, 161, 3), (8, 9, 3))]
    args = {"size": (41, 47), "interp_type": "linear"}
    want, got = run_both("resize", samples, args, "HWC", defines={"NDD_SMALL_INDEX_MAX": 0})
    compare(want, got, [not cpu_is_dense(s.shape, "HWC", args) for s in samples], 1e-3)


def test_scratch_size_does_not_depend_on_the_random_window():
    class Recording(HostContext):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.allocs = []

        def empty(self, shape, dtype):
            self.allocs.append((tuple(shape), np.dtype(dtype).name))
            return super().empty(shape, dtype)

    rng = np.random.default_rng(16)
    samples = [(rng.random((90, 120, 3)) * 255).astype(np.float32) for _ in range(3)]
    seen = set()
    for seeds in ((1, 2, 3), (40, 50, 60)):
        args = {"size": (32, 32), "_seeds": seeds, "random_area": (0.08, 1.0),
                "random_aspect_ratio": (0.75, 4 / 3), "num_attempts": 10}
        ctx = Recording(SerialPool(), [ValueMeta("float32", 3, "HWC")],
                        [ValueMeta("float32", 3, "HWC")], set(), 3, "random_resized_crop")
        registry.lookup("random_resized_crop", "gpu")(ctx, [samples], args)
        seen.add(tuple(ctx.allocs))
    assert len(seen) == 1, seen
