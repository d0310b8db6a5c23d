"""The eager-mode background worker: runs dispatched ops in order on one thread."""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor


class AsyncWorker:
    def __init__(self):
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="ndd-eager")
        self._last: Future | None = None

    def submit(self, fn, *args) -> Future:
        fut = self._executor.submit(fn, *args)
        self._last = fut
        return fut

    def drain(self) -> None:
        last = self._last
        if last is not None:
            try:
                last.result()
            except BaseException:  # noqa: BLE001 - errors surface at the consuming call
                pass


_worker: AsyncWorker | None = None
_lock = threading.Lock()


def get_worker() -> AsyncWorker:
    global _worker
    if _worker is None:
        with _lock:
            if _worker is None:
                _worker = AsyncWorker()
    return _worker


def _after_fork_in_child() -> None:
    # Its thread does not exist in a forked child: start a new worker there on demand.
    global _worker, _lock
    _worker = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
