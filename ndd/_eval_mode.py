"""Evaluation modes (``ndd.EvalMode``) and the evaluation context (``ndd.EvalContext``).

``EvalMode`` members are context managers pushing onto a thread-local stack::

    with ndd.EvalMode.sync_cpu:
        ...
Modes, in increasing synchronicity: ``deferred`` < ``eager`` < ``sync_cpu`` < ``sync_full``.
``default`` is ``eager``.
"""
from __future__ import annotations

import enum
import threading

from runtime.async_worker import get_worker
from runtime.threadpool import get_num_threads, set_num_threads

_local = threading.local()


def _stack() -> list:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


class EvalMode(enum.IntEnum):
    """When op calls are executed.

    * ``deferred``: calls record nodes; the compiler optimizes and runs them on consumption.
    * ``eager`` (``default``): each call is dispatched at once to a background worker.
    * ``sync_cpu``: each call finishes (CPU work) before returning; errors surface at the call.
    * ``sync_full``: like ``sync_cpu`` and also waits for GPU work.
    """

    default = 0
    deferred = 1
    eager = 2
    sync_cpu = 3
    sync_full = 4

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False

    @staticmethod
    def current() -> "EvalMode":
        """The innermost active mode (``eager`` when none was entered)."""
        s = _stack()
        mode = s[-1] if s else EvalMode.eager
        return EvalMode.eager if mode is EvalMode.default else mode


class EvalContext:
    """Execution resources for ndd calls on this thread: device and thread count.

    Parameters
    ----------
    num_threads : int, optional
        Worker threads for CPU operators (``ndd.set_num_threads`` sets the global default).
    device_id : int, optional
        GPU ordinal used for ``device="gpu"`` (0 by default).
    """

    def __init__(self, num_threads: int | None = None, device_id: int | None = None):
        if num_threads is not None and (not isinstance(num_threads, int) or num_threads < 1):
            raise ValueError(f"EvalContext: num_threads must be a positive integer, "
                             f"got {num_threads!r}")
        self.num_threads = num_threads
        self.device_id = device_id or 0
        self._checkpoint = None

    def __enter__(self):
        s = getattr(_local, "contexts", None)
        if s is None:
            s = _local.contexts = []
        s.append(self)
        if self.num_threads is not None:
            self._saved_threads = get_num_threads()
            set_num_threads(self.num_threads)
        return self

    def __exit__(self, *exc):
        _local.contexts.pop()
        if self.num_threads is not None:
            set_num_threads(self._saved_threads)
        return False

    @staticmethod
    def current() -> "EvalContext":
        s = getattr(_local, "contexts", None)
        if s:
            return s[-1]
        ctx = getattr(_local, "default_ctx", None)
        if ctx is None:
            ctx = _local.default_ctx = EvalContext()
        return ctx

    def evaluate_all(self) -> None:
        """Wait for all eager work dispatched so far."""
        get_worker().drain()
