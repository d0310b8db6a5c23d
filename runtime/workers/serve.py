"""The loop a worker process runs (started by :class:`runtime.workers.pool.WorkerPool`).

A worker receives ``(target, args, sync, settings, counting)`` messages: it applies the
caller's process-wide settings and its :mod:`runtime.profile` switch (``counting``: then it also
counts its idle wall time, the CPU of each request and of the called function), unmaps the shared segments the caller's pools dropped, runs
``target(*args)`` (``"module:qualname"``, imported on first use) and sends back ``(True,
result)`` or ``(False, (type name, module, message, traceback))``.  ``None`` (or a closed
connection) ends it.
"""
from __future__ import annotations

import ctypes
import importlib
import pickle
import signal
import time
import traceback
from multiprocessing.connection import Connection

from runtime import profile
from runtime.buffers import sync_mappings
from runtime.codecs.limits import apply_process_settings
from runtime.threadpool import configure_torch

__all__ = ["serve", "resolve"]


def resolve(target: str):
    """The object ``"module:qualname"`` names (the module imported if needed)."""
    module, _, name = target.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


# A worker decodes images of every size; glibc keeps the freed blocks in its heaps, so the
# worker's memory crept up batch after batch (~1-2 MB an epoch of the sample photos).  Every
# so many calls the free pages go back to the kernel (``malloc_trim``, ~1 ms).
_TRIM_EVERY = 16


def _malloc_trim():
    """glibc's ``malloc_trim`` (None elsewhere)."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def serve(fd: int, setup=()) -> None:
    """Serve calls on the connection ``fd`` until the parent closes it.

    Parameters
    ----------
    fd : int
        The worker's end of its socketpair.
    setup : sequence of str
        Work items (``"module:qualname"``) run once before the worker reports ready.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    try:
        configure_torch()
        for target in setup:
            resolve(target)()           # e.g. kernels imported and compiled before "ready"
        hello = "ready"
    except BaseException as exc:  # noqa: BLE001
        hello = f"import failed: {exc!r}"
    try:
        conn.send(hello)
    except (EOFError, OSError):         # the parent is gone already (a short script)
        return
    if hello != "ready":
        return
    trim, calls = _malloc_trim(), 0
    while True:
        waited = time.perf_counter()
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        target, args, sync, settings, counting = msg
        profile.enable(counting)
        if counting:        # wall time waiting for this request; CPU of the request below
            profile.add("idle", time.perf_counter() - waited)
            cpu0 = time.thread_time()
        try:
            apply_process_settings(settings)
            if sync is not None:
                sync_mappings(sync)
            if args.__class__ is bytes:     # pickled once for all workers (broadcast)
                args = pickle.loads(args)
            fn = resolve(target)
            work0 = time.thread_time()
            result = (True, fn(*args))
            if counting:
                profile.add("work", time.thread_time() - work0)
        except BaseException as exc:  # noqa: BLE001 - sent back to the caller
            result = (False, (type(exc).__name__, type(exc).__module__, str(exc),
                              traceback.format_exc()))
        try:
            conn.send(result)
        except (EOFError, OSError):
            return
        if counting:
            profile.add("worker", time.thread_time() - cpu0)
        calls += 1
        if trim is not None and calls % _TRIM_EVERY == 0:
            trim(0)
