"""Where a pipeline's CPU time goes: per-process counters of thread CPU seconds by category,
for ``ndd bench --breakdown`` (measured, not estimated).

The kernels' heavy calls are marked with :func:`measured` (``"decode"``: the codec call;
``"resample"``: a resize pass; ``"normalize"``: crop-mirror-normalize into its output).  While
counting is off (the default) a marked call costs one flag test.  While on, the thread CPU time
(``time.thread_time``: CPU of the calling thread only, so two threads never count each other's
work, and time spent waiting is not counted) of the outermost marked call of a thread is added
to its category.  Worker processes count too: the pool sends the flag with every request and
the worker loop adds its own categories (``"worker"``: the CPU of whole requests, ``"work"``:
of the called function, ``"idle"``: wall seconds waiting for the next request); see
:mod:`runtime.workers.serve`.  :func:`take` returns this process's counters and zeroes them.
"""
from __future__ import annotations

import functools
import threading
import time

__all__ = ["enable", "active", "measured", "add", "take", "CATEGORIES"]

#: The categories of marked kernel calls.
CATEGORIES = ("decode", "resample", "normalize")

_on = [False]
_lock = threading.Lock()
_totals: dict[str, float] = {}
_local = threading.local()


def enable(flag: bool) -> None:
    """Switch counting on or off in this process (counters are kept; see :func:`take`)."""
    _on[0] = bool(flag)


def active() -> bool:
    """Whether counting is on in this process."""
    return _on[0]


def add(category: str, seconds: float) -> None:
    """Add ``seconds`` to ``category``."""
    with _lock:
        _totals[category] = _totals.get(category, 0.0) + seconds


def take() -> dict:
    """This process's counters ``{category: seconds}``, zeroed afterwards."""
    with _lock:
        out = dict(_totals)
        _totals.clear()
    return out


def measured(category: str):
    """Decorator: count the thread CPU time of calls of the function under ``category``.

    Only the outermost marked call of a thread counts (a resize pass inside a marked fused
    step is not counted twice).
    """
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if not _on[0] or getattr(_local, "inside", False):
                return fn(*args, **kwargs)
            _local.inside = True
            t0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                _local.inside = False
                add(category, time.thread_time() - t0)
        return inner
    return wrap
