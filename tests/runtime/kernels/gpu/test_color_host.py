"""Colour ops on the GPU kernels' host build (``color.cu``) equal the CPU kernels bit for bit:
brightness_contrast / brightness / contrast (both CPU paths: the compiled loop and the uint8
table of larger images) and hsv / hue / saturation / color_twist, per-sample arguments, mixed
shapes, an empty sample, every supported type pair.
"""
from __future__ import annotations

import numpy as np
import pytest

from compiler.ir import ValueMeta
from runtime.kernels import registry
from runtime.kernels.cpu import color as cpu_color  # noqa: F401 (registers the CPU kernels)
from runtime.kernels.gpu import color as gpu_color
from runtime.kernels.gpu.compile import source_of
from runtime.kernels.gpu.hostbuild import HostContext, host_compiler, host_module
from runtime.kernels.registry import KernelContext

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++ compiler (g++)")


class SerialPool:
    num_threads = 1

    def map(self, fn, n):
        return [fn(i) for i in range(n)]


def run_both(op, samples, args, out_dt, tensor_args=()):
    metas_in = [ValueMeta(samples[0].dtype.name, 3, "HWC")]
    metas_out = [ValueMeta(out_dt, 3, "HWC")]
    n = len(samples)
    cpu = KernelContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op)
    gpu = HostContext(SerialPool(), metas_in, metas_out, set(tensor_args), n, op)
    want = registry.lookup(op, "cpu")(cpu, [list(samples)], dict(args))[0]
    got = registry.lookup(op, "gpu")(gpu, [list(samples)], dict(args))[0]
    assert len(gpu.launches) == 1
    for i, (w, g) in enumerate(zip(want, got)):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype)
        assert g.tobytes() == w.tobytes(), \
            f"sample {i}: max diff {np.abs(g.astype(float) - w.astype(float)).max()}"


def batch(rng, dtype, shapes=((5, 7, 3), (40, 60, 3), (0, 4, 3), (1, 1, 3))):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return [(rng.standard_normal(s) * 0.6 + 0.4).astype(dt) for s in shapes]
    info = np.iinfo(dt)
    return [rng.integers(max(info.min, -1000), min(info.max, 1000), s, endpoint=True)
            .astype(dt) for s in shapes]


@pytest.mark.parametrize("src", gpu_color.TYPES)
def test_brightness_contrast_every_type_pair(src):
    rng = np.random.default_rng(gpu_color.TYPES.index(src))
    samples = batch(rng, src)
    args = {"brightness": [np.float32(v) for v in (1.3, 0.7, 1.0, 2.0)],
            "brightness_shift": 0.1, "contrast": 1.7, "contrast_center": None}
    for dst in gpu_color.TYPES:
        run_both("brightness_contrast", samples, args, dst, tensor_args=("brightness",))


@pytest.mark.parametrize("op,args", [("brightness", {"brightness": 1.6, "brightness_shift": -0.2}),
                                     ("contrast", {"contrast": 0.4, "contrast_center": 100.0}),
                                     ("hsv", {"hue": 33.0, "saturation": 1.4, "value": 0.9}),
                                     ("hue", {"hue": -120.0}), ("saturation", {"saturation": 0.2}),
                                     ("color_twist", {"hue": 10.0, "saturation": 1.2,
                                                      "brightness": 0.8, "contrast": 1.5})])
@pytest.mark.parametrize("dtypes", [("uint8", "uint8"), ("uint8", "float32"),
                                    ("float32", "float16"), ("int16", "int32")])
def test_single_purpose_and_matrix_ops(op, args, dtypes):
    rng = np.random.default_rng(7)
    samples = batch(rng, dtypes[0], ((5, 7, 3), (80, 70, 3), (0, 2, 3)))  # 80x70: uint8 tables
    run_both(op, samples, args, dtypes[1])


def test_matrix_ops_need_three_channels():
    samples = [np.zeros((4, 4, 2), np.uint8)]
    ctx = HostContext(SerialPool(), [ValueMeta("uint8", 3, "HWC")],
                      [ValueMeta("uint8", 3, "HWC")], set(), 1, "hsv")
    with pytest.raises(ValueError, match="3 channels"):
        registry.lookup("hsv", "gpu")(ctx, [samples], {"hue": 1.0})


def test_descriptor_layout():
    assert host_module("color", source_of("color")).sizeof("ColorDesc") == 8 * 5
