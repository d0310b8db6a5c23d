"""Stream-ordered device memory and pinned host staging.

:class:`DevicePool` recycles raw device blocks as :class:`runtime.buffers.BufferPool` recycles
host buffers -- a block is free when the pool holds the only reference to its memory (every
array viewing it, a DLPack export, a torch tensor keeps the memory alive) -- with one rule more,
for streams: every use of a block on a stream is noted with an event recorded after it
(:meth:`DevicePool.note_use`). A free block is handed to a new user on stream ``s`` only after
``s`` has passed the event of every *other* stream that used it (the pool makes ``s`` wait on
those not yet done), so a buffer freed while another stream may still read it is never
overwritten early. A block exported to a stream outside the runtime (``.torch()``'s consumer
stream) is noted without an event: at reuse an event is recorded on that stream then (after
everything its owner queued there before dropping the tensor).

For CUDA-graph capture the pool *records* the sizes one eager run asks for
(:meth:`DevicePool.recording`) and hands *reserved* blocks, allocated before the capture, in the
same order while capturing (:meth:`DevicePool.reserved`): nothing is allocated during capture.

:class:`PinnedStaging` holds page-locked host buffers for H2D copies (descriptors, transfers): a
buffer is rewritten only after the copy that read it has finished (its event is done, or the
host waits for it).
"""
from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np

from runtime.gpu.api import CaptureError

__all__ = ["Block", "DevicePool", "PinnedStaging", "CaptureMismatch", "round_up", "bucket"]


class CaptureMismatch(CaptureError):
    """A replayed run asked for other sizes than the captured one (the batch runs eagerly)."""


def round_up(n: int, to: int = 256) -> int:
    """``n`` rounded up to a multiple of ``to`` (CUDA's allocation granularity for alignment)."""
    return (int(n) + to - 1) // to * to


def bucket(n: int) -> int:
    """The block size that serves a request of ``n`` bytes: ``n`` rounded up to the next of
    2^k, 1.25 * 2^k, 1.5 * 2^k, 1.75 * 2^k (at most 25 % more), a multiple of 256. Batches of
    slightly different sizes (decoded photos) then share blocks, and a captured graph's blocks
    fit later batches a little larger than the one it was captured with."""
    n = round_up(max(1, n))
    if n <= 1024:
        return n
    top = 1 << (n.bit_length() - 1)
    step = top // 4
    return round_up(-(-n // step) * step)


class Block:
    """One device allocation: its memory object and the streams that used it since."""

    __slots__ = ("mem", "nbytes", "device", "last_use")

    def __init__(self, mem, nbytes: int, device: int):
        self.mem, self.nbytes, self.device = mem, nbytes, device
        self.last_use: dict[int, tuple] = {}    # id(stream) -> (stream, event | None)


class DevicePool:
    """Recycled device blocks, reused in stream order (see the module docstring).

    Parameters
    ----------
    api : runtime.gpu.api.GpuApi
    max_per_size : int
        Blocks kept per byte size (more may be in use; those are not kept).
    max_sizes : int
        Distinct sizes kept (least recently used dropped first).
    """

    def __init__(self, api, max_per_size: int = 8, max_sizes: int = 16):
        self.api = api
        self.max_per_size, self.max_sizes = int(max_per_size), int(max_sizes)
        self._groups: dict[tuple, list[Block]] = {}
        self._by_mem: dict[int, Block] = {}
        self._lock = threading.RLock()
        self._record: list | None = None
        self._reserved = None
        self.hits = self.misses = self.waits = 0

    # ---------------------------------------------------------------- allocation
    def empty(self, shape, dtype, stream, device: int = 0):
        """An uninitialised C-contiguous device array, ready for writing on ``stream``."""
        dt = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = dt.itemsize * int(np.prod(shape, dtype=np.int64))
        blk = self.block(nbytes, stream, device)
        return self.api.array(blk.mem, 0, shape, dt)

    def block(self, nbytes: int, stream, device: int = 0) -> Block:
        """A block of at least ``nbytes`` that ``stream`` may write now."""
        size = bucket(nbytes)
        with self._lock:
            if self._reserved is not None:
                return self._next_reserved(size)
            blk = self._free_block(size, device, stream)
            if blk is None:
                blk = self._new_block(size, device)
            if self._record is not None:
                self._record.append(size)
            return blk

    def _free_block(self, size: int, device: int, stream):
        key = (device, size)
        group = self._groups.pop(key, None)
        if group is None:
            group = []
        self._groups[key] = group                       # most recently used size goes last
        while len(self._groups) > self.max_sizes:
            for old in self._groups.pop(next(iter(self._groups))):
                self._by_mem.pop(id(old.mem), None)
        for blk in group:
            # references: the Block's slot and getrefcount's argument
            if sys.getrefcount(blk.mem) <= 2:
                self.hits += 1
                self._order_after_uses(blk, stream)
                return blk
        self.misses += 1
        return None

    def _new_block(self, size: int, device: int) -> Block:
        blk = Block(self.api.alloc(size, device), size, device)
        group = self._groups.setdefault((device, size), [])
        if len(group) < self.max_per_size:
            group.append(blk)
            self._by_mem[id(blk.mem)] = blk
        return blk

    def _order_after_uses(self, blk: Block, stream) -> None:
        """Make ``stream`` pass the events of the other streams that used ``blk``."""
        api = self.api
        for s, ev in blk.last_use.values():
            if s is stream:
                continue
            if ev is None:          # exported: everything queued there before it was dropped
                ev = api.record_event(s)
            if not api.event_done(ev):
                api.wait_event(stream, ev)
                self.waits += 1
        blk.last_use = {}

    # ---------------------------------------------------------------- uses
    def note_use(self, arrays, stream, event) -> None:
        """The device arrays in ``arrays`` were used (read or written) on ``stream`` by work that
        ``event`` (recorded on ``stream`` after it; None: unknown, an outside stream) follows."""
        with self._lock:
            for arr in arrays:
                blk = self._by_mem.get(id(self.api.memory_of(arr)))
                if blk is not None:
                    blk.last_use[id(stream)] = (stream, event)

    def block_of(self, arr):
        """The pool's :class:`Block` behind a device array (None: not from this pool)."""
        return self._by_mem.get(id(self.api.memory_of(arr)))

    # ---------------------------------------------------------------- capture support
    @contextlib.contextmanager
    def recording(self):
        """Record the sizes of the blocks asked for in the block; yields the list."""
        with self._lock:
            self._record = sizes = []
        try:
            yield sizes
        finally:
            with self._lock:
                self._record = None

    def reserve(self, sizes, device: int = 0) -> list[Block]:
        """Allocate dedicated blocks of ``sizes`` (not kept by the pool: their owner keeps
        them, e.g. a captured graph whose kernels use their addresses)."""
        return [Block(self.api.alloc(s, device), s, device) for s in sizes]

    @contextlib.contextmanager
    def reserved(self, blocks: list[Block]):
        """While in the block, :meth:`block` hands out ``blocks`` in order, allocating nothing.

        Raises
        ------
        CaptureMismatch
            A request larger than the next reserved block, or more requests.
        """
        with self._lock:
            self._reserved = [iter(blocks), 0]
        try:
            yield
        finally:
            with self._lock:
                self._reserved = None

    def _next_reserved(self, size: int) -> Block:
        it = self._reserved
        blk = next(it[0], None)
        it[1] += 1
        if blk is None or blk.nbytes < size:
            raise CaptureMismatch(f"request {it[1]} asks for {size} bytes, the captured run "
                                  f"reserved {'none' if blk is None else blk.nbytes}")
        return blk

    def clear(self) -> None:
        """Forget every kept block (arrays handed out stay valid)."""
        with self._lock:
            self._groups.clear()
            self._by_mem.clear()


class PinnedStaging:
    """Page-locked host buffers for H2D copies, each rewritten only after its last copy ran.

    Parameters
    ----------
    api : runtime.gpu.api.GpuApi
    max_buffers : int
        Buffers kept; when all that fit are busy the host waits for the oldest copy.
    max_bytes : int
        Page-locked bytes kept (pinned memory is scarce): past it, idle buffers are released
        first, then the host waits for a busy one that fits.
    """

    def __init__(self, api, max_buffers: int = 16, max_bytes: int = 1 << 30):
        self.api = api
        self.max_buffers, self.max_bytes = int(max_buffers), int(max_bytes)
        self._bufs: list[list] = []         # [pinned uint8 array, event | None | "busy"]
        self._lock = threading.Lock()

    def _idle(self, b) -> bool:
        return b[1] is None or b[1] != "busy" and self.api.event_done(b[1])

    def take(self, nbytes: int) -> tuple[np.ndarray, list]:
        """``(host array of nbytes, slot)``: a pinned buffer the host may write now. Call
        :meth:`sent` with the slot and the event after the copy that reads it."""
        api = self.api
        size = max(4096, bucket(nbytes))
        with self._lock:
            fits = [b for b in self._bufs if b[0].nbytes >= size and b[1] != "busy"]
            slot = next((b for b in fits if self._idle(b)), None)
            if slot is None:
                held = sum(b[0].nbytes for b in self._bufs)
                if fits and (len(self._bufs) >= self.max_buffers
                             or held + size > self.max_bytes):
                    slot = fits[0]                  # the oldest that fits: wait for its copy
                    api.sync_event(slot[1])
                else:
                    for b in [b for b in self._bufs if self._idle(b)]:
                        if len(self._bufs) < self.max_buffers and held + size <= self.max_bytes:
                            break
                        self._bufs.remove(b)        # released when nothing views it
                        held -= b[0].nbytes
                    slot = [api.pinned_empty(size), None]
                    self._bufs.append(slot)
            slot[1] = "busy"
        api.host_access(slot[0], write=True)
        return slot[0][:int(nbytes)], slot

    def sent(self, slot: list, event) -> None:
        """The copy reading ``slot`` was queued; ``event`` follows it."""
        slot[1] = event

    def fill(self, write, nbytes: int, dst, stream) -> None:
        """Copy ``nbytes`` into device array ``dst`` (uint8, at least ``nbytes``) on ``stream``
        through a pinned buffer that ``write(buf)`` fills (the host call returns at once)."""
        buf, slot = self.take(nbytes)
        write(buf)
        self.api.copy_h2d(dst, buf, stream)
        self.sent(slot, self.api.record_event(stream))

    def upload(self, host: np.ndarray, dst, stream) -> None:
        """Copy host array ``host`` into device array ``dst`` on ``stream`` through a pinned
        buffer (the host call returns at once)."""
        host = np.require(host, requirements="C")
        buf, slot = self.take(host.nbytes)
        buf[...] = host.reshape(-1).view(np.uint8)
        self.api.copy_h2d(dst, buf.view(host.dtype).reshape(host.shape), stream)
        self.sent(slot, self.api.record_event(stream))
