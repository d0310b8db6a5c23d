"""The objects of the fake GPU (:mod:`runtime.gpu.fake`): streams, events, memories, arrays,
captured graphs, and the vector-clock helpers of its order checker."""
from __future__ import annotations

import numpy as np

__all__ = ["OrderViolation", "FakeStream", "FakeEvent", "FakeMemory", "FakeArray", "FakeGraph",
           "HostRef", "merge", "covers", "memory"]


class OrderViolation(AssertionError):
    """An access the stream order does not protect (raised in ``strict`` mode)."""


def merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        if out.get(k, 0) < v:
            out[k] = v
    return out


def covers(clock: dict, stamp) -> bool:
    """Whether the access ``stamp`` = (stream id, time) happened before a party at ``clock``."""
    return stamp is None or clock.get(stamp[0], 0) >= stamp[1]


class FakeStream:
    """A fake stream (``handle`` is a made-up ``cudaStream_t``)."""

    __slots__ = ("id", "device", "handle", "name", "capture")

    def __init__(self, sid: int, device: int, handle: int, name: str):
        self.id, self.device, self.handle, self.name = sid, device, handle, name
        self.capture = None         # the FakeGraph this stream is being captured into

    def __repr__(self):
        return f"FakeStream({self.name})"


class FakeEvent:
    """A recorded event: the clock of its stream when it was recorded."""

    __slots__ = ("id", "stream", "clock", "captured")

    def __init__(self, eid: int, stream: FakeStream, clock: dict, captured: bool):
        self.id, self.stream, self.clock, self.captured = eid, stream, clock, captured


class FakeMemory:
    """Device (or pinned host) bytes with their access history."""

    __slots__ = ("id", "nbytes", "buf", "ptr", "last_write", "reads", "kind", "__weakref__")

    def __init__(self, mid: int, nbytes: int, kind: str):
        self.id, self.nbytes, self.kind = mid, int(nbytes), kind
        # a recognisable fill: a kernel reading memory nobody wrote gives 0xA5 bytes, not zeros
        self.buf = np.full(max(1, self.nbytes), 0xA5, np.uint8)
        self.ptr = 0x7F0000000000 + mid * (1 << 32)
        self.last_write = None      # (stream id, time)
        self.reads: dict[int, int] = {}     # stream id -> time of its last read since

    def __repr__(self):
        return f"FakeMemory(#{self.id}, {self.nbytes} B)"


class FakeArray:
    """A device array of the fake GPU: a numpy view of a :class:`FakeMemory` (``host`` is that
    view; only kernels of the fake layer and tests look at it)."""

    __slots__ = ("mem", "offset", "host", "device_id", "__weakref__")

    def __init__(self, mem: FakeMemory, offset: int, host: np.ndarray, device_id: int = 0):
        self.mem, self.offset, self.host, self.device_id = mem, offset, host, device_id

    shape = property(lambda self: self.host.shape)
    dtype = property(lambda self: self.host.dtype)
    ndim = property(lambda self: self.host.ndim)
    size = property(lambda self: self.host.size)
    nbytes = property(lambda self: self.host.nbytes)
    strides = property(lambda self: self.host.strides)

    def __len__(self):
        return len(self.host)

    def __getitem__(self, index):
        view = self.host[index]
        if not isinstance(view, np.ndarray):
            view = self.host[index, ...] if self.host.ndim else self.host[...]
        off = view.__array_interface__["data"][0] - self.mem.buf.__array_interface__["data"][0]
        return FakeArray(self.mem, off, view, self.device_id)

    def reshape(self, *shape):
        return FakeArray(self.mem, self.offset, self.host.reshape(*shape), self.device_id)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.mem.ptr + self.offset, False),
                "strides": None if self.host.flags.c_contiguous else self.strides}

    def __dlpack__(self, stream=None, **kwargs):
        """The host view's DLPack capsule (the fake layer's stand-in for a device export)."""
        return self.host.__dlpack__()

    def __dlpack_device__(self):
        return (2, self.device_id)

    def get(self) -> np.ndarray:
        """A host copy (no ordering check: tests only)."""
        return self.host.copy()

    def __repr__(self):
        return f"FakeArray(shape={self.shape}, dtype={self.dtype}, mem=#{self.mem.id})"


class FakeGraph:
    """Operations captured from streams, replayed by :meth:`FakeApi.launch_graph`."""

    def __init__(self, origin: FakeStream):
        self.origin = origin
        self.entries: list[tuple] = []      # ("op", stream, kind, reads, writes, fn) | ("rec"...)
        self.streams: set[int] = {origin.id}
        self.ended = False

    @property
    def num_ops(self) -> int:
        return sum(1 for e in self.entries if e[0] == "op")


class HostRef:
    """A pinned host memory in an access list (``memory`` finds its FakeMemory)."""

    __slots__ = ("mem",)

    def __init__(self, mem):
        self.mem = mem


def memory(arr) -> FakeMemory:
    if isinstance(arr, FakeMemory):
        return arr
    return arr.mem
