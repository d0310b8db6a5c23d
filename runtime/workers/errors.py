"""Errors of the worker pool, and a worker's exception rebuilt in the parent."""
from __future__ import annotations

import builtins
import importlib
import signal
import subprocess

__all__ = ["CRASH_SIGNALS", "RemoteError", "WorkerCrashed", "WorkerDied", "crash_signal",
           "rebuild_error"]

#: Signals that end a process when native code fails (a codec on a corrupt file, say).
CRASH_SIGNALS = frozenset(getattr(signal, n) for n in (
    "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT") if hasattr(signal, n))


class RemoteError(RuntimeError):
    """A worker failed in a way that cannot be re-raised as the original exception type."""


class WorkerDied(RuntimeError):
    """A worker process went away mid-call; callers redo the work on threads."""


class WorkerCrashed(WorkerDied):
    """A worker process was ended by a crash signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT)
    while it ran a call: a native library failed on that call's input. The work is not redone
    in the calling process, where the same input would crash it; the caller reports the
    call's inputs instead. ``signal_name`` is e.g. ``"SIGSEGV"``."""

    def __init__(self, message: str, signal_name: str = ""):
        super().__init__(message)
        self.signal_name = signal_name


def crash_signal(proc: subprocess.Popen) -> str | None:
    """The name of the crash signal that ended the worker process ``proc`` (its socket has
    closed: it is gone or going), or None for any other end (killed, exited, still running)."""
    try:
        code = proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        return None
    if code is not None and code < 0 and -code in CRASH_SIGNALS:
        return signal.Signals(-code).name
    return None


def rebuild_error(type_name: str, module: str, message: str, tb: str) -> BaseException:
    """The worker's exception as the same builtin type when possible (message kept)."""
    cls = getattr(builtins, type_name, None) if module == "builtins" else None
    if cls is None and module and type_name:
        try:        # e.g. runtime.codecs.errors.DecodeError, not imported here yet
            cls = getattr(importlib.import_module(module), type_name, None)
        except Exception:  # noqa: BLE001 - fall back to RemoteError
            cls = None
    exc = None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            exc = cls(message)
        except Exception:  # noqa: BLE001
            exc = None
    if exc is None:
        exc = RemoteError(f"{type_name}: {message}")
    exc.__notes__ = [f"raised in a worker process:\n{tb}"]
    return exc
