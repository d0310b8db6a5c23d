"""Errors of the worker pool, and a worker's exception rebuilt in the parent."""
from __future__ import annotations

import builtins
import importlib

__all__ = ["RemoteError", "WorkerDied", "rebuild_error"]


class RemoteError(RuntimeError):
    """A worker failed in a way that cannot be re-raised as the original exception type."""


class WorkerDied(RuntimeError):
    """A worker process went away mid-call; callers redo the work on threads."""


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
