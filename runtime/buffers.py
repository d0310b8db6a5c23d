"""Recycled host buffers for whole-batch outputs.

A fused ``crop_mirror_normalize`` writes a batch of 32 float32 224x224x3 images into one
(N, C, H, W) array: 19 MB per batch.  A fresh ``np.empty`` of that size is a fresh mapping
whose pages the kernel faults in (and the kernel zeroes) on first write; measured on the train
pipeline, replayed from a prefetch thread, this page zeroing was ~9 % of all CPU time.  This
pool hands out arrays carved from buffers that earlier batches used and that nobody holds any
more, so the pages stay mapped and warm.

When is a buffer free?  Every numpy view keeps a reference to the array that owns the memory
(``view.base`` is the owner, also for views of views), ``torch.from_numpy`` and DLPack exports
keep the view alive, so the owner's reference count is exactly "the pool + live users".  A
buffer is reused only when the pool holds the sole reference: a batch the user still holds
(or any tensor viewing it) is never overwritten.
"""
from __future__ import annotations

import atexit
import math
import os
import sys
import threading

import numpy as np

__all__ = ["BufferPool", "SharedBufferPool", "batch_array", "batch_views", "default_pool", "shared_pool",
           "input_pool", "attach_shared", "shared_fd", "sync_mappings", "dropped_since",
           "drop_cursor"]


class BufferPool:
    """A bounded set of recycled byte buffers, grouped by size.

    Parameters
    ----------
    max_per_size : int
        Buffers kept per distinct byte size (more may be in use; those are not kept).
    max_sizes : int
        Distinct sizes kept; the least recently used size is dropped first.
    min_bytes : int
        Requests smaller than this get a plain ``np.empty`` (small arrays come from the
        allocator's warm free lists anyway).
    """

    def __init__(self, max_per_size: int = 6, max_sizes: int = 4, min_bytes: int = 1 << 20):
        self.max_per_size = int(max_per_size)
        self.max_sizes = int(max_sizes)
        self.min_bytes = int(min_bytes)
        self._buffers: dict[int, list[np.ndarray]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def empty(self, shape, dtype) -> np.ndarray:
        """An uninitialised C-contiguous array of ``shape`` and ``dtype``, maybe recycled."""
        dt = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = dt.itemsize * int(np.prod(shape, dtype=np.int64))
        if nbytes < self.min_bytes:
            return np.empty(shape, dt)
        base = self._acquire(nbytes)
        if base is None:            # every kept buffer of this size is in use
            return np.empty(shape, dt)
        return base[:nbytes].view(dt).reshape(shape)

    def _acquire(self, nbytes: int):
        """A free kept buffer of ``nbytes`` (or a new one, kept while there is room); None when
        all kept buffers of that size are in use and no more may be kept."""
        with self._lock:
            group = self._buffers.pop(nbytes, None)
            if group is None:
                group = []
            self._buffers[nbytes] = group            # most recently used size goes last
            while len(self._buffers) > self.max_sizes:
                self._forget(self._buffers.pop(next(iter(self._buffers))))
            for buf in group:
                # References: the list, the loop variable and getrefcount's argument.
                if sys.getrefcount(buf) <= 3:
                    self.hits += 1
                    return buf
            self.misses += 1
            if len(group) >= self.max_per_size:
                return None
            base = self._new(nbytes)
            if base is not None:
                group.append(base)
            return base

    def _new(self, nbytes: int):
        return np.empty(nbytes, np.uint8)

    def _forget(self, group) -> None:
        """Called for the buffers of a size the pool stops keeping."""

    def clear(self) -> None:
        """Forget every kept buffer (arrays handed out stay valid)."""
        with self._lock:
            self._buffers.clear()


default_pool = BufferPool()


def batch_array(shape, dtype) -> np.ndarray:
    """:meth:`BufferPool.empty` of the process-wide pool."""
    return default_pool.empty(shape, dtype)


def batch_views(shapes, dtype) -> list[np.ndarray]:
    """One C-contiguous array of each shape in ``shapes`` (a list of tuples), all views of one
    recycled flat :func:`batch_array` of ``dtype``, in order: a batch's outputs written in
    place without a fresh allocation (and its page faults) per sample."""
    sizes = [math.prod(s) for s in shapes]
    flat = batch_array((sum(sizes),), dtype)
    views, at = [], 0
    for shape, size in zip(shapes, sizes):
        views.append(flat[at:at + size].reshape(shape))
        at += size
    return views


# ------------------------------------------------------------------ shared memory
_SHM_DIR = "/dev/shm"


class SharedBufferPool(BufferPool):
    """A :class:`BufferPool` whose buffers are POSIX shared memory (``/dev/shm`` files), so a
    worker process (:mod:`runtime.workers`) can write a batch in place.

    Only kept buffers are shared: when every kept buffer of a size is in use, :meth:`empty`
    returns ``(array, None)`` with a private array.  A segment's file is unlinked as soon as
    every worker has mapped it (:meth:`mark_attached`), and at exit; the memory itself lives
    as long as any array views it.  Space is reserved with ``posix_fallocate`` so a small
    ``/dev/shm`` (e.g. Docker's 64 MB default) gives a private array instead of a SIGBUS.
    """

    def __init__(self, max_per_size: int = 6, max_sizes: int = 4):
        super().__init__(max_per_size=max_per_size, max_sizes=max_sizes, min_bytes=0)
        self._names: dict[int, str] = {}          # id(base) -> segment name
        self._attached: dict[str, set] = {}
        self._linked: set[str] = set()
        self._disabled = not os.path.isdir(_SHM_DIR)

    def shared_empty(self, shape, dtype):
        """``(array, name)``: an uninitialised C-contiguous array and the segment name of its
        buffer (None when it is private)."""
        dt = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        used = dt.itemsize * int(np.prod(shape, dtype=np.int64))
        base = None if self._disabled else self._acquire(max(1, used))
        if base is None:
            return np.empty(shape, dt), None
        return base[:used].view(dt).reshape(shape), self._names[id(base)]

    def _new(self, nbytes):
        return self._create(nbytes)

    def _create(self, nbytes):
        import mmap
        import secrets
        name = f"ndd-{os.getpid()}-{secrets.token_hex(6)}"
        path = os.path.join(_SHM_DIR, name)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        except OSError:
            self._disabled = True
            return None
        try:
            os.posix_fallocate(fd, 0, nbytes)
            m = mmap.mmap(fd, nbytes)
        except OSError:
            os.close(fd)
            os.unlink(path)
            return None
        os.close(fd)
        base = np.frombuffer(m, np.uint8)
        self._names[id(base)] = name
        self._linked.add(name)
        return base

    def mark_attached(self, name: str, worker: int, workers: int) -> None:
        """Worker ``worker`` (of ``workers``) has mapped segment ``name``: once all have, the
        file is unlinked (the mappings stay valid)."""
        with self._lock:
            seen = self._attached.setdefault(name, set())
            seen.add(worker)
            if len(seen) >= workers:
                self._unlink(name)

    def _unlink(self, name):
        if name in self._linked:
            self._linked.discard(name)
            try:
                os.unlink(os.path.join(_SHM_DIR, name))
            except OSError:
                pass

    def _forget(self, group):
        for base in group:
            name = self._names.pop(id(base), None)
            if name is not None:
                self._unlink(name)
                self._attached.pop(name, None)
                _log_dropped(name)

    def live_names(self) -> set:
        """Names of the segments this pool may still hand out."""
        with self._lock:
            return set(self._names.values())

    def clear(self) -> None:
        with self._lock:
            for group in self._buffers.values():
                self._forget(group)
            self._buffers.clear()


    def _after_fork_in_child(self) -> None:
        """A forked child shares these mappings with its parent: forget them (the parent
        owns the names) so the child never writes into the parent's batches."""
        self._lock = threading.Lock()
        self._buffers = {}
        self._names = {}
        self._attached = {}
        self._linked = set()


shared_pool = SharedBufferPool()
# Encoded inputs shipped to the worker processes (sizes rounded up to a power of two by the
# caller, so a few segments serve every batch).
input_pool = SharedBufferPool(max_per_size=4, max_sizes=3)
for _pool in (shared_pool, input_pool):
    atexit.register(_pool.clear)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_pool._after_fork_in_child)
del _pool


# Segments the pools stopped keeping, in order, for the workers to unmap (see
# :func:`dropped_since`); only the last _DROP_LOG_KEEP names are kept.
_DROP_LOG_KEEP = 1024
_drop_log: list = []
_drop_state = {"base": 0}       # position (in all names ever logged) of _drop_log[0]
_drop_lock = threading.Lock()


def _log_dropped(name: str) -> None:
    with _drop_lock:
        _drop_log.append(name)
        if len(_drop_log) > 2 * _DROP_LOG_KEEP:
            k = len(_drop_log) - _DROP_LOG_KEEP
            del _drop_log[:k]
            _drop_state["base"] += k


def dropped_since(cursor: int):
    """What a worker that has seen the drop log up to ``cursor`` must unmap.

    Returns ``(sync, new_cursor)``: ``sync`` is ``("drop", names)`` (the names dropped since),
    or ``("keep", names)`` (the live segments of every pool: unmap all others) when the
    worker fell further behind than the log keeps; None when nothing changed."""
    with _drop_lock:
        base, end = _drop_state["base"], _drop_state["base"] + len(_drop_log)
        if cursor >= end:
            return None, end
        if cursor >= base:
            return ("drop", tuple(_drop_log[cursor - base:])), end
    live = set()
    for pool in (shared_pool, input_pool):
        live |= pool.live_names()
    return ("keep", tuple(live)), end


def drop_cursor() -> int:
    """The current end of the drop log (a new worker has seen nothing to drop)."""
    with _drop_lock:
        return _drop_state["base"] + len(_drop_log)


_mapped: dict = {}      # worker side: segment name -> (uint8 array over its mapping, fd)


def attach_shared(name: str, shape, dtype) -> np.ndarray:
    """In a worker process: the array of segment ``name``.

    Mapped once and kept (with an open descriptor, see :func:`shared_fd`) until the parent
    reports the segment dropped (:func:`sync_mappings`): the parent unlinks a segment's file
    once every worker mapped it, so a mapping dropped early could not be made again."""
    import mmap
    dt = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    nbytes = max(1, dt.itemsize * int(np.prod(shape, dtype=np.int64)))
    entry = _mapped.get(name)
    if entry is None:
        fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDWR)
        try:
            m = mmap.mmap(fd, 0)
        except BaseException:
            os.close(fd)
            raise
        entry = _mapped[name] = (np.frombuffer(m, np.uint8), fd)
    return entry[0][:nbytes].view(dt).reshape(shape)


def shared_fd(name: str) -> int:
    """In a worker: the open descriptor of mapped segment ``name`` (e.g. for ``flock``:
    each worker opened the file itself, so their locks exclude each other)."""
    return _mapped[name][1]


def sync_mappings(sync) -> None:
    """In a worker: apply a :func:`dropped_since` message (close dropped mappings)."""
    if sync is None:
        return
    kind, names = sync
    names = set(names)
    gone = [n for n in _mapped if (n in names) == (kind == "drop")]
    for n in gone:
        _, fd = _mapped.pop(n)
        os.close(fd)        # the mapping itself goes when the last array viewing it does


def mapped_count() -> int:
    """In a worker: how many shared segments it keeps mapped (the pools' live ones)."""
    return len(_mapped)
