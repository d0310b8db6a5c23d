"""Kernels compiled with numba, built on first use.

A few per-pixel loops (the exact edge lines of the uint8 resize fast path, uint8 HWC ->
float32 CHW normalisation) cost more as chains of numpy/torch calls than as one compiled loop.
They are written as plain Python loops and compiled by numba (``nogil=True``: pool threads run
them in parallel; ``cache=True``: the machine code is kept next to the source, so later
processes load it instead of compiling, ~0.1 s).

numba is imported only when a kernel is first needed, never at ``import ndd``.
"""
from __future__ import annotations

import threading
from typing import Callable

__all__ = ["compiled"]


def compiled(build: Callable[[Callable], Callable]) -> Callable[[], Callable]:
    """``build(njit)`` -> kernel, run once; returns a getter of that kernel.

    ``njit`` is numba's decorator with this project's options (GIL released, on-disk cache,
    no bounds checks: callers pass consistent shapes).  The arithmetic is IEEE float32 as
    written (no fast-math: results equal those of the same operations in numpy/torch).
    """
    kernel = None
    lock = threading.Lock()

    def get():
        nonlocal kernel
        if kernel is None:
            with lock:
                if kernel is None:
                    import numba
                    kernel = build(numba.njit(nogil=True, cache=True, boundscheck=False))
        return kernel

    get.__doc__ = build.__doc__
    return get
