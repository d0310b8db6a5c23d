"""A fake GPU: streams, events, memory, copies, launches and graphs in pure numpy, with a checker.

:class:`FakeApi` implements :class:`runtime.gpu.api.GpuApi` deterministically. Work runs at once
on the host (so results are real numbers), while a *vector clock* per stream models what CUDA
would guarantee: an operation on stream ``s`` is ordered after everything earlier on ``s``,
after what the events ``s`` waited on had seen, and after what the host had observed finished
(synchronised, or an event it found done) when it enqueued the operation. Every access to a
memory is checked against the accesses before it:

* a read must be ordered after the last write (no read of a buffer its producer may still be
  writing: a cross-stream read without the producer's event);
* a write must be ordered after the last write and after every read since (no reuse of a buffer
  another stream may still read);
* the host may read a host buffer filled by an async copy only once the copy is known finished,
  and rewrite a pinned buffer only once the copies reading it are;
* nothing is allocated, synchronised or queried while a stream is captured into a graph, every
  stream that joined a capture rejoins its origin before the capture ends.

A violation is appended to :attr:`FakeApi.violations` (and raised at once when ``strict``).
:attr:`FakeApi.log` records every call as ``(stream, what)`` lines, so tests can assert orders.
By default events never complete on their own (``event_done`` is False until the host synchronised
past them): the most pessimistic GPU, under which code must still be correct.
"""
from __future__ import annotations

import functools
import itertools
import threading

import numpy as np

from runtime.gpu.api import CaptureError, GpuApi
from runtime.gpu.fake_parts import (FakeArray, FakeEvent, FakeGraph, FakeMemory, FakeStream,
                                    HostRef, OrderViolation, covers, memory, merge)

__all__ = ["FakeApi", "FakeArray", "FakeMemory", "FakeStream", "FakeEvent", "FakeGraph",
           "OrderViolation"]


def _locked(fn):
    """Run a method under the fake GPU's lock (the eager worker and the user's thread may both
    enqueue work; cupy is thread-safe, so the fake must be too)."""
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        with self._lock:
            return fn(self, *args, **kwargs)
    return method


class FakeApi(GpuApi):
    """The fake device interface (see the module docstring).

    Parameters
    ----------
    devices : int
        How many devices it pretends to have.
    strict : bool
        Raise :class:`OrderViolation` at the first violation (else only record it).
    events_complete : bool
        ``event_done`` answers True for any event recorded outside a capture (a fast GPU) instead
        of only for events the host synchronised past (the default, a GPU that never finishes).
    """

    name = "fake"

    def __init__(self, devices: int = 1, strict: bool = False, events_complete: bool = False):
        self.devices = devices
        self.strict = strict
        self.events_complete = events_complete
        self.log: list[tuple[str, str]] = []
        self.violations: list[str] = []
        self.allocations = 0
        self._ids = itertools.count(1)
        self._clock: dict[int, dict] = {}          # stream id -> vector clock
        self._time: dict[int, int] = {}            # stream id -> ops so far
        self._host: dict = {}                       # what the host knows finished
        self._streams_by_handle: dict[int, FakeStream] = {}
        self._pinned: list[FakeMemory] = []
        self._capturing: list[FakeGraph] = []
        self._lock = threading.RLock()

    # ---------------------------------------------------------------- helpers
    def _violate(self, text: str) -> None:
        self.violations.append(text)
        self.log.append(("!", text))
        if self.strict:
            raise OrderViolation(text)

    def _stream(self, device: int, handle: int | None, name: str) -> FakeStream:
        sid = next(self._ids)
        s = FakeStream(sid, device, handle if handle is not None else 0x5000 + sid, name)
        self._clock[sid] = {}
        self._time[sid] = 0
        self._streams_by_handle[s.handle] = s
        return s

    def _tick(self, stream: FakeStream) -> tuple[int, int]:
        clock = merge(self._clock[stream.id], self._host)
        t = self._time[stream.id] = self._time[stream.id] + 1
        clock[stream.id] = t
        self._clock[stream.id] = clock
        return stream.id, t

    def _access(self, stamp, clock, reads, writes, what: str) -> None:
        for arr in reads:
            mem = memory(arr)
            if not covers(clock, mem.last_write):
                self._violate(f"{what} reads {mem!r} before its writer on stream "
                              f"#{mem.last_write[0]} is ordered before it (missing event)")
        for arr in writes:
            mem = memory(arr)
            if not covers(clock, mem.last_write):
                self._violate(f"{what} writes {mem!r} while an earlier write on stream "
                              f"#{mem.last_write[0]} may still run")
            for sid, t in mem.reads.items():
                if not covers(clock, (sid, t)):
                    self._violate(f"{what} writes {mem!r} while stream #{sid} may still read "
                                  f"it (buffer reused without waiting for the reader's event)")
        for arr in reads:
            mem = memory(arr)
            mem.reads[stamp[0]] = max(mem.reads.get(stamp[0], 0), stamp[1])
        for arr in writes:
            mem = memory(arr)
            mem.last_write = stamp
            mem.reads = {}

    def _op(self, stream: FakeStream, kind: str, reads, writes, fn) -> None:
        """Enqueue one operation: captured into a graph, or run (checked) now."""
        graph = stream.capture
        if graph is not None:
            graph.entries.append(("op", stream, kind, tuple(reads), tuple(writes), fn))
            self.log.append((stream.name, f"capture {kind}"))
            return
        stamp = self._tick(stream)
        self._access(stamp, self._clock[stream.id], reads, writes, f"{kind} on {stream.name}")
        self.log.append((stream.name, kind))
        fn()

    def _no_capture(self, what: str) -> None:
        if self._capturing:
            self._violate(f"{what} during graph capture")
            raise CaptureError(f"{what} is not allowed while a stream is being captured into a "
                               f"CUDA graph")

    # ---------------------------------------------------------------- devices and streams
    def device_count(self) -> int:
        return self.devices

    @_locked
    def new_stream(self, device: int = 0):
        s = self._stream(device, None, f"s{len(self._clock) + 1}")
        self.log.append((s.name, "create"))
        return s

    @_locked
    def external_stream(self, handle: int, device: int = 0):
        s = self._streams_by_handle.get(int(handle))
        if s is None:
            s = self._stream(device, int(handle), f"ext{int(handle):#x}")
        return s

    def stream_handle(self, stream) -> int:
        return stream.handle

    @_locked
    def record_event(self, stream):
        graph = stream.capture
        ev = FakeEvent(next(self._ids), stream, dict(self._clock[stream.id]), graph is not None)
        if graph is not None:
            graph.entries.append(("rec", stream, ev))
        self.log.append((stream.name, f"record e{ev.id}"))
        return ev

    @_locked
    def wait_event(self, stream, event) -> None:
        graph = event.stream.capture if event.captured else None
        if graph is not None and stream.capture is None:
            stream.capture = graph          # the stream joins the capture (CUDA's fork)
            graph.streams.add(stream.id)
        if stream.capture is not None:
            stream.capture.entries.append(("wait", stream, event))
        else:
            self._clock[stream.id] = merge(self._clock[stream.id], event.clock)
        self.log.append((stream.name, f"wait e{event.id}"))

    @_locked
    def covers(self, stream, other, tick: int) -> bool:
        """Whether the next operation on ``stream`` is ordered after operation ``tick`` of
        stream ``other`` (tests: what an overlap of two streams may run concurrently)."""
        return merge(self._clock[stream.id], self._host).get(other.id, 0) >= tick

    @_locked
    def tick_of(self, stream) -> int:
        """How many operations ``stream`` has run so far."""
        return self._time[stream.id]

    @_locked
    def event_done(self, event) -> bool:
        if event.captured or event.stream.capture is not None:
            self._no_capture("event query")
        if self.events_complete or merge(self._host, event.clock) == self._host:
            self._host = merge(self._host, event.clock)
            return True
        return False

    @_locked
    def sync_event(self, event) -> None:
        self._no_capture("event synchronize")
        self._host = merge(self._host, event.clock)
        self.log.append(("host", f"sync e{event.id}"))

    @_locked
    def sync_stream(self, stream) -> None:
        self._no_capture("stream synchronize")
        self._host = merge(self._host, self._clock[stream.id])
        self.log.append(("host", f"sync {stream.name}"))

    # ---------------------------------------------------------------- memory
    @_locked
    def alloc(self, nbytes: int, device: int = 0):
        self._no_capture("device allocation")
        self.allocations += 1
        mem = FakeMemory(next(self._ids), nbytes, "device")
        self.log.append(("host", f"alloc #{mem.id} {nbytes} B"))
        return mem

    def array(self, memory, offset: int, shape, dtype):
        dt = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        n = dt.itemsize * int(np.prod(shape, dtype=np.int64))
        view = memory.buf[offset:offset + n].view(dt).reshape(shape)
        return FakeArray(memory, offset, view)

    def memory_of(self, arr):
        return arr.mem if isinstance(arr, FakeArray) else None

    def offset_of(self, arr) -> int:
        return arr.offset

    @_locked
    def pinned_empty(self, nbytes: int):
        self._no_capture("pinned host allocation")
        mem = FakeMemory(next(self._ids), nbytes, "pinned")
        self._pinned.append(mem)
        self.log.append(("host", f"pinned #{mem.id} {nbytes} B"))
        return mem.buf[:int(nbytes)]

    def wrap(self, obj):
        if isinstance(obj, FakeArray):
            return obj
        raise TypeError(f"the fake GPU cannot wrap {type(obj).__name__}")

    def _host_mem(self, arr: np.ndarray):
        """The pinned FakeMemory a host array views (None: pageable memory)."""
        start = arr.__array_interface__["data"][0]
        for mem in self._pinned:
            base = mem.buf.__array_interface__["data"][0]
            if base <= start < base + mem.buf.nbytes:
                return mem
        return None

    # ---------------------------------------------------------------- copies
    @_locked
    def copy_h2d(self, dst, src, stream) -> None:
        src = np.asarray(src)
        host = self._host_mem(src)
        reads = [HostRef(host)] if host is not None else []

        def run():
            dst.host[...] = src.reshape(dst.shape)
        self._op(stream, f"h2d {src.nbytes} B -> #{dst.mem.id}", reads, [dst], run)
        if host is None and stream.capture is None:         # pageable: synchronous
            self._host = merge(self._host, self._clock[stream.id])

    @_locked
    def copy_d2h(self, dst, src, stream) -> None:
        host = self._host_mem(dst)
        writes = [HostRef(host)] if host is not None else []

        def run():
            dst[...] = src.host.reshape(dst.shape)
        self._op(stream, f"d2h #{src.mem.id} -> {dst.nbytes} B", [src], writes, run)
        if host is None and stream.capture is None:
            self._host = merge(self._host, self._clock[stream.id])

    @_locked
    def copy_d2d(self, dst, src, stream) -> None:
        def run():
            dst.host[...] = src.host
        self._op(stream, f"d2d #{src.mem.id} -> #{dst.mem.id}", [src], [dst], run)

    @_locked
    def host_access(self, arr, write: bool = False) -> None:
        mem = self._host_mem(np.asarray(arr))
        if mem is None:
            return
        if not covers(self._host, mem.last_write):
            self._violate(f"host reads pinned {mem!r} before the copy into it is known finished")
        if write:
            for sid, t in mem.reads.items():
                if not covers(self._host, (sid, t)):
                    self._violate(f"host rewrites pinned {mem!r} while a copy on stream #{sid} "
                                  f"may still read it")
            mem.reads = {}
            mem.last_write = None

    # ---------------------------------------------------------------- kernels and graphs
    @_locked
    def launch(self, kernel, grid, block, args, stream, shared_mem: int = 0, *,
               reads=(), writes=()) -> None:
        name = getattr(kernel, "__name__", "kernel")

        def run():
            kernel(tuple(grid), tuple(block), tuple(args))
        self._op(stream, f"launch {name} grid={tuple(grid)} block={tuple(block)}", reads, writes,
                 run)

    @_locked
    def begin_capture(self, stream) -> None:
        if stream.capture is not None:
            raise CaptureError(f"{stream.name} is already being captured")
        graph = FakeGraph(stream)
        stream.capture = graph
        self._capturing.append(graph)
        self.log.append((stream.name, "begin capture"))

    @_locked
    def end_capture(self, stream):
        graph = stream.capture
        if graph is None or graph.origin is not stream:
            raise CaptureError(f"{stream.name} is not the origin of a capture")
        joined = self._joined(graph)
        for sid in graph.streams - joined:
            self._violate(f"stream #{sid} joined the capture but did not rejoin its origin "
                          f"{stream.name} before end_capture")
        for s in list(self._streams_by_handle.values()):
            if s.capture is graph:
                s.capture = None
        self._capturing.remove(graph)
        graph.ended = True
        self.log.append((stream.name, f"end capture ({graph.num_ops} ops)"))
        return graph

    @staticmethod
    def _joined(graph: FakeGraph) -> set:
        """Streams whose last captured work the origin waited on (directly or through others)."""
        last_op: dict[int, int] = {}
        for i, e in enumerate(graph.entries):
            if e[0] == "op":
                last_op[e[1].id] = i
        reach = {graph.origin.id}
        for i in range(len(graph.entries) - 1, -1, -1):
            e = graph.entries[i]
            if e[0] == "wait" and e[1].id in reach:
                ev = e[2]
                rec = next(j for j, x in enumerate(graph.entries)
                           if x[0] == "rec" and x[2] is ev)
                if rec >= last_op.get(ev.stream.id, -1):
                    reach.add(ev.stream.id)
        return reach | {sid for sid in graph.streams if sid not in last_op}

    @_locked
    def launch_graph(self, graph, stream) -> None:
        """Replay ``graph`` on ``stream``: each captured stream becomes a virtual stream forked
        from ``stream``; its events and waits are replayed, so races inside the graph are
        found too; ``stream`` continues after the origin's last operation."""
        self._no_capture("graph launch inside a capture")
        if not graph.ended:
            raise CaptureError("the graph's capture has not ended")
        start = merge(self._clock[stream.id], self._host)
        virt: dict[int, FakeStream] = {}
        events: dict[int, dict] = {}

        def v(s: FakeStream) -> FakeStream:
            if s.id not in virt:
                vs = virt[s.id] = self._stream(stream.device, None, f"{stream.name}/g{s.name}")
                self._clock[vs.id] = dict(start)
            return virt[s.id]
        self.log.append((stream.name, f"launch graph ({graph.num_ops} ops)"))
        for e in graph.entries:
            if e[0] == "op":
                _, s, kind, reads, writes, fn = e
                vs = v(s)
                stamp = self._tick(vs)
                self._access(stamp, self._clock[vs.id], reads, writes, f"graph {kind}")
                fn()
            elif e[0] == "rec":
                events[e[2].id] = dict(self._clock[v(e[1]).id])
            else:
                vs = v(e[1])
                self._clock[vs.id] = merge(self._clock[vs.id], events.get(e[2].id, {}))
        self._tick(stream)
        self._clock[stream.id] = merge(self._clock[stream.id], self._clock[v(graph.origin).id])
