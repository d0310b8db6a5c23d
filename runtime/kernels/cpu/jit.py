"""Kernels compiled with numba, built on first use.

A few per-pixel loops (the exact edge lines of the uint8 resize fast path, uint8 HWC ->
float32 CHW normalisation) cost more as chains of numpy/torch calls than as one compiled loop.
They are written as plain Python loops and compiled by numba (``nogil=True``: pool threads run
them in parallel; ``cache=True``: the machine code is kept next to the source, so later
processes load it instead of compiling: ~0.3 s to import numba, then ~0.05 s a kernel; where no
cache location is writable they are compiled in memory, with one warning).

numba is imported only when a kernel is first needed, never at ``import ndd``.  Each module
with compiled kernels has a ``warm_up()`` that builds (or loads) them;
:func:`runtime.kernels.cpu.catalog.warm_up` runs them all.
"""
from __future__ import annotations

import hashlib
import threading
import uuid
import warnings
from typing import Callable

__all__ = ["compiled", "pin_identity"]


def _build(build):
    import numba
    try:
        return build(_stable(numba.njit(nogil=True, cache=True, boundscheck=False)))
    except RuntimeError as exc:
        # no writable cache location (read-only install and home): compile in memory
        if "cannot cache" not in str(exc):
            raise
        _warn_no_cache(exc)
        return build(_stable(numba.njit(nogil=True, cache=False, boundscheck=False)))


_ids: dict[str, int] = {}
_ids_lock = threading.Lock()


def _stable(njit):
    """``njit`` whose dispatchers carry a stable identity (:func:`pin_identity`)."""
    def decorate(func):
        return pin_identity(njit(func), func)
    return decorate


def pin_identity(obj, func):
    """Give numba's ``obj`` (a dispatcher or an ``@intrinsic``) an identity derived from
    ``func``'s code, the same in every process running that code; returns ``obj``.

    numba keys a cached closure by a pickle of its cell contents; a kernel built inside a
    ``build`` function captures other kernels' dispatchers (or intrinsics), and those pickle
    with a random per-process UUID, so such a kernel never found its cache entry: it was
    compiled again in every process (tens of seconds for the warp and histogram loops, which
    made worker processes miss their start deadline) and the cache index grew at each run.
    The identity is the function's module, name, first line and bytecode, numbered in order
    of creation within the process (builds run in a fixed order).
    """
    code = func.__code__
    key = hashlib.sha256(b"%s|%s|%d|" % (func.__module__.encode(), func.__qualname__.encode(),
                                          code.co_firstlineno) + code.co_code).hexdigest()
    with _ids_lock:
        n = _ids.get(key, 0)
        _ids[key] = n + 1
    obj._set_uuid(f"{uuid.UUID(key[:32])}-{n}")
    return obj


_warned = []


def _warn_no_cache(exc) -> None:
    if not _warned:
        _warned.append(True)
        warnings.warn(f"ndd: numba cannot cache its compiled kernels here ({exc}); they are "
                      f"compiled again in every process (~1-2 s each). Set NUMBA_CACHE_DIR to a "
                      f"writable folder to keep them", RuntimeWarning, stacklevel=4)


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
                    kernel = _build(build)
        return kernel

    get.__doc__ = build.__doc__
    return get
