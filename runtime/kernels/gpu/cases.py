"""Random exactness cases of the GPU kernels against the CPU kernels, for any device layer.

:func:`cases` draws reproducible cases (op, batch, arguments, metadata) covering every
registered GPU kernel: odd sizes, empty samples, mixed shapes. :func:`run_case` runs one on the
CPU kernel and on the GPU kernel with a given context maker (the host build's
:class:`~runtime.kernels.gpu.hostbuild.HostContext` offline, the real GPU context in
``benchmarks/gpu_check.py``) and :func:`check_case` compares the results: bit for bit, except
where :attr:`Case.tolerance` says why not (the CPU's dense-matmul and uint8 fast paths of
resize; CUDA's math library for transcendentals on a device).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.ir import ValueMeta
from runtime.kernels import registry
from runtime.kernels.registry import KernelContext

from .elementwise import DEVICE_INEXACT

__all__ = ["Case", "cases", "run_case", "check_case", "SerialPool"]


class SerialPool:
    """A pool running per-sample work in the calling thread (the CPU reference)."""

    num_threads = 1

    def map(self, fn, n):
        return [fn(i) for i in range(n)]


@dataclass
class Case:
    """One comparison: ``op`` on ``samples`` (one input, or ``inputs`` for several) with
    ``args``. ``tolerance``: None (bit-exact) or ``(atol, rtol, why)``; ``device_tolerance``
    applies on a real GPU only."""

    name: str
    op: str
    inputs: list
    args: dict
    layout: str
    out_dtype: str
    tensor_args: tuple = ()
    tolerance: tuple | None = None
    device_tolerance: tuple | None = None


def _images(rng, dtype, shapes):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return [(rng.random(s) * 255).astype(dt) for s in shapes]
    return [rng.integers(0, 256, s).astype(dt) for s in shapes]


def _shapes(rng, n, chans=3, lo=1, hi=90):
    out = [(int(rng.integers(lo, hi)), int(rng.integers(lo, hi)), chans) for _ in range(n)]
    if n > 2:
        out[1] = (0, out[1][1], chans)          # an empty sample
    return out


_MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
_STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _draw(rng, k: int) -> Case:
    n = int(rng.integers(1, 6))
    kind = k % 9
    if kind == 0:
        dt = str(rng.choice(["uint8", "float32", "int16"]))
        return Case(f"crop-{k}", "crop", [_images(rng, dt, _shapes(rng, n))],
                    {"crop": (int(rng.integers(1, 40)), int(rng.integers(1, 40))),
                     "crop_pos_x": float(rng.random()), "crop_pos_y": float(rng.random()),
                     "out_of_bounds_policy": "pad", "fill_values": (1, 2, 3)}, "HWC", dt)
    if kind == 1:
        return Case(f"flip-{k}", "flip", [_images(rng, "uint8", _shapes(rng, n))],
                    {"horizontal": int(rng.integers(0, 2)), "vertical": int(rng.integers(0, 2))},
                    "HWC", "uint8")
    if kind == 2:
        return Case(f"transpose-{k}", "transpose", [_images(rng, "float32", _shapes(rng, n))],
                    {"perm": (2, 0, 1)}, "HWC", "float32")
    if kind == 3:
        src, dst = rng.choice(["uint8", "float32", "int32", "float16"], 2)
        with np.errstate(all="ignore"):
            xs = [(rng.standard_normal(s) * 300).astype(src) for s in _shapes(rng, n)]
        return Case(f"cast-{k}", "cast", [xs], {"dtype": str(dst)}, "HWC", str(dst))
    if kind == 4:
        dt = str(rng.choice(["uint8", "float32", "float16"]))
        out = str(rng.choice(["float32", "float16", "uint8"]))
        return Case(f"cmn-{k}", "crop_mirror_normalize", [_images(rng, dt, _shapes(rng, n))],
                    {"crop": (int(rng.integers(1, 50)), int(rng.integers(1, 50))),
                     "mean": _MEAN, "std": _STD, "dtype": out,
                     "mirror": int(rng.integers(0, 2)), "out_of_bounds_policy": "pad",
                     "pad_output": bool(rng.integers(0, 2)),
                     "output_layout": str(rng.choice(["CHW", "HWC"]))}, "HWC", out)
    if kind == 5:
        prog = ((("sub", (("t", 0), ("s", 128.0)), "float32")),
                ("mul", (("r", 0), ("t", 1)), "float32"),
                ("cast", (("r", 1),), "uint8"))
        shapes = _shapes(rng, n)
        xs = _images(rng, "uint8", shapes)
        ys = [np.full((1, 1, 3), rng.random(), np.float32) for _ in shapes]
        return Case(f"elementwise-{k}", "elementwise_fused", [xs, ys], {"program": prog},
                    "HWC", "uint8")
    if kind == 6:
        op = str(rng.choice(["exp", "sqrt", "log"]))
        prog = ((op, (("t", 0),), "float32"),)
        xs = [x / 50 for x in _images(rng, "float32", _shapes(rng, n))]
        tol = (0.0, 2.5e-7, "CUDA's math library") if op in DEVICE_INEXACT else None
        return Case(f"math-{op}-{k}", "elementwise_fused", [xs], {"program": prog}, "HWC",
                    "float32", device_tolerance=tol)
    if kind == 7:
        dt = str(rng.choice(["uint8", "float32"]))
        interp = str(rng.choice(["linear", "cubic", "lanczos3", "nn"]))
        tol = (1.0, 0.0, "the CPU's uint8 fast path") if dt == "uint8" else \
            (1e-3, 1e-5, "the CPU's dense matmul for wide filters")
        return Case(f"resize-{interp}-{k}", "resize",
                    [_images(rng, dt, _shapes(rng, n, lo=2, hi=120))],
                    {"size": (int(rng.integers(1, 60)), int(rng.integers(1, 60))),
                     "interp_type": interp}, "HWC", dt, tolerance=tol)
    op = str(rng.choice(["brightness_contrast", "hsv", "color_twist"]))
    args = {"brightness_contrast": {"brightness": 1.2, "contrast": 0.8, "brightness_shift": 0.1},
            "hsv": {"hue": 20.0, "saturation": 1.3, "value": 0.9},
            "color_twist": {"hue": 5.0, "saturation": 0.9, "brightness": 1.1,
                            "contrast": 1.2}}[op]
    return Case(f"{op}-{k}", op, [_images(rng, "uint8", _shapes(rng, n))], args, "HWC",
                "uint8")


def cases(count: int = 100, seed: int = 0) -> list[Case]:
    """``count`` reproducible cases, every op family in turn."""
    rng = np.random.default_rng(seed)
    return [_draw(rng, k) for k in range(count)]


def _ctx(make, case: Case):
    x = case.inputs[0][0]
    metas_in = [ValueMeta(inp[0].dtype.name, x.ndim, case.layout) for inp in case.inputs]
    metas_out = [ValueMeta(case.out_dtype, x.ndim, case.layout)]
    return make(SerialPool(), metas_in, metas_out, set(case.tensor_args), len(case.inputs[0]),
                case.op)


def run_case(case: Case, make_ctx, to_device=None, to_host=np.asarray):
    """``(cpu result, gpu result)`` of a case, per sample (numpy arrays).

    ``make_ctx(pool, in_metas, out_metas, tensor_arg_names, batch_size, op)`` makes the GPU
    kernel's context (e.g. :class:`~runtime.kernels.gpu.hostbuild.HostContext`);
    ``to_device`` moves one input sample to the device (None: as it is), ``to_host`` brings
    one output back.
    """
    cpu = registry.lookup(case.op, "cpu")(_ctx(KernelContext, case),
                                          [list(i) for i in case.inputs], dict(case.args))[0]
    move = to_device or (lambda x: x)
    inputs = [[move(x) for x in inp] for inp in case.inputs]
    gpu = registry.lookup(case.op, "gpu")(_ctx(make_ctx, case), inputs, dict(case.args))[0]
    return [np.asarray(w) for w in cpu], [to_host(g) for g in gpu]


def check_case(case: Case, want, got, on_device: bool = False) -> str | None:
    """None when the results agree as the case requires, else a message."""
    tol = case.tolerance or (case.device_tolerance if on_device else None)
    if len(want) != len(got):
        return f"{case.name}: {len(got)} samples, expected {len(want)}"
    for i, (w, g) in enumerate(zip(want, got)):
        if w.shape != g.shape or w.dtype != g.dtype:
            return f"{case.name} sample {i}: {g.shape} {g.dtype}, expected {w.shape} {w.dtype}"
        if tol is None:
            if w.tobytes() != np.ascontiguousarray(g).tobytes():
                if w.dtype.kind == "f" and np.array_equal(w, g, equal_nan=True):
                    continue                    # NaN payloads only
                return f"{case.name} sample {i}: not bit-exact"
        elif w.size and not np.allclose(g.astype(np.float64), w.astype(np.float64),
                                        atol=tol[0], rtol=tol[1], equal_nan=True):
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64)).max()
            return f"{case.name} sample {i}: max difference {diff} beyond {tol[:2]} ({tol[2]})"
    return None
