"""Keep freed heap pages in the process for the next batch (glibc's ``M_TOP_PAD``).

A reader allocates a batch of samples (tens of kB each: encoded files, records), hands it
out, and the batch is freed when the next one arrives. glibc returns the top of a heap to the
system as soon as more than 128 kB of it is free, so every batch gets fresh pages from the
kernel: a page fault and the zeroing of each 4 kB page, ~10 us per 30 kB sample here -- more
than reading it (a Caffe LMDB record: 14 us a record in batches of 32 with the default, 2.7
us with a pad). ``mallopt(M_TOP_PAD, 16 MiB)`` keeps up to 16 MiB free at the top of each
heap (the main one and the threads' arenas), and asks the system for that much more at once
when a heap grows.

Process-wide and done once, when the first reader is built; a no-op outside glibc, and off
with the environment variable ``NDD_MALLOC_TOP_PAD=0`` (or another size in bytes).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

__all__ = ["keep_heap_pages", "TOP_PAD"]

#: bytes kept free at the top of each heap (unless ``NDD_MALLOC_TOP_PAD`` says otherwise)
TOP_PAD = 16 << 20
_M_TOP_PAD = -2         # glibc's malloc.h
_done = []
_lock = threading.Lock()


def keep_heap_pages() -> bool:
    """Set glibc's ``M_TOP_PAD`` (once per process); True when it was set."""
    with _lock:
        if _done:
            return _done[0]
        ok = False
        try:
            pad = int(os.environ.get("NDD_MALLOC_TOP_PAD", TOP_PAD))
        except ValueError:
            pad = TOP_PAD
        if pad > 0:
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                mallopt = libc.mallopt
            except (OSError, AttributeError):       # not glibc (musl, macOS...)
                mallopt = None
            if mallopt is not None:
                mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
                ok = mallopt(_M_TOP_PAD, min(pad, 1 << 30)) == 1
        _done.append(ok)
        return ok
