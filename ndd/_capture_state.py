"""The thread-local compile-mode capture/replay context (set by ``ndd.compile``)."""
from __future__ import annotations

import threading

_local = threading.local()


def current_capture():
    """The active compile-mode context on this thread, if any."""
    return getattr(_local, "capture", None)


def set_capture(ctx) -> None:
    _local.capture = ctx
