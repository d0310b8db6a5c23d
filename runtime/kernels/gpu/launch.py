"""How a GPU kernel module gets its compiled kernel and launches it on a batch.

A kernel module asks :func:`get_kernel` for ``(ctx, key, source, name)``: on the real device
(``ctx.gpu.name == "cupy"``) a cupy ``RawModule`` function (compiled once per source by NVRTC with
:data:`runtime.kernels.gpu.compile.OPTIONS`), anywhere else (the fake GPU, the host tests) the
host-C++ build of the same source (:mod:`runtime.kernels.gpu.hostbuild`). Launches go through
``ctx.launch`` on the lane's stream, one per batch: blockIdx.y is the sample, the x dimension of
the grid strides over the sample's elements; the grid depends on the batch size only
(:func:`batch_grid`), so CUDA-graph replays of equal-size batches match their capture.
"""
from __future__ import annotations

import numpy as np

from .compile import FAMILIES, raw_module, source_of
from .hostbuild import address, host_module

__all__ = ["BLOCK", "get_kernel", "family_kernel", "batch_grid", "launch_batch", "address",
           "device_name"]

#: threads per block of the batch kernels
BLOCK = 256
#: most blocks along x (each thread strides over the rest)
_MAX_BLOCKS_X = 2048
#: blocks of one launch in all (an H200 has 132 SMs: ~16 resident blocks of 256 threads each)
_TARGET_BLOCKS = 8192
#: most samples per launch (CUDA's grid limit along y)
MAX_SAMPLES = 65535


def device_name(ctx) -> str:
    """``"cupy"`` on a real GPU, else the name of the fake/host device layer."""
    gpu = getattr(ctx, "gpu", None)
    return getattr(gpu, "name", "host")


def get_kernel(ctx, key: str, source: str, name: str):
    """Kernel ``name`` of ``source`` (compiled or built once per ``key``) for ``ctx``'s device.

    A context with ``defines`` (a dict, :class:`~runtime.kernels.gpu.hostbuild.HostContext`)
    gets the source built with those macros defined first (tests: the 64-bit index path)."""
    if device_name(ctx) == "cupy":
        return raw_module(key, source).get_function(name)
    defines = getattr(ctx, "defines", None)
    if defines:
        prefix = "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items()))
        key = f"{key}-" + "-".join(f"{k}{v}" for k, v in sorted(defines.items()))
        source = prefix + source
    return host_module(key, source).get_function(name)


def family_kernel(ctx, family: str, name: str):
    """Kernel ``name`` of the hand-written family ``family`` (``"copy"``, ``"cmn"``, ...)."""
    if family not in FAMILIES:
        raise KeyError(f"unknown kernel family {family!r}")
    return get_kernel(ctx, family, source_of(family), name)


def batch_grid(n: int, max_count: int = 0) -> tuple[tuple, tuple]:
    """``(grid, block)`` of a batch launch over ``n`` samples.

    The grid depends on ``n`` only (about :data:`_TARGET_BLOCKS` blocks in all, each thread
    striding over its sample): batches of one size launch identical grids whatever their
    samples' extents, so a captured CUDA graph replays them (``max_count`` is not used for
    the shape).
    """
    if n > MAX_SAMPLES:
        raise ValueError(f"a GPU launch handles at most {MAX_SAMPLES} samples, got {n}")
    blocks = max(1, min(_MAX_BLOCKS_X, -(-_TARGET_BLOCKS // max(1, n))))
    return (blocks, n, 1), (BLOCK, 1, 1)


def launch_batch(ctx, kernel, descs: np.ndarray, max_count: int, extra=(), reads=(),
                 writes=()) -> None:
    """Upload ``descs`` (one row per sample) and launch ``kernel(descs, n, *extra)`` once.

    Nothing is launched for an empty batch or when every sample is empty.
    """
    n = int(descs.shape[0])
    if n == 0 or max_count <= 0:
        return
    dev = ctx.upload(np.ascontiguousarray(descs))
    grid, block = batch_grid(n)
    ctx.launch(kernel, grid, block, (dev, np.int32(n), *extra),
               reads=[dev, *reads], writes=list(writes))
