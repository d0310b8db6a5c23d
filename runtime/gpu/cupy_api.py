"""The real device interface, on cupy (imported when the first GPU work is asked for).

Streams are non-blocking ``cupy.cuda.Stream``s, events ``cupy.cuda.Event(disable_timing=True)``,
device memory raw ``cupy.cuda.Memory`` blocks (pooled by :mod:`runtime.gpu.memory`, not by
cupy's own pool, which does not know which other streams still read a block), pinned host memory
``cupy.cuda.alloc_pinned_memory``, kernels cupy ``RawKernel``s, graphs ``Stream.begin_capture``
in thread-local mode (another thread's allocation does not break this thread's capture).
"""
from __future__ import annotations

import numpy as np

from runtime.gpu.api import GpuApi, GpuUnavailable

__all__ = ["CupyApi", "load"]


def load() -> "CupyApi":
    """A :class:`CupyApi` when cupy is installed and finds a device.

    Raises
    ------
    GpuUnavailable
        cupy missing, no driver, or no device.
    """
    try:
        import cupy
    except Exception as exc:        # noqa: BLE001 - ImportError, a broken CUDA install
        raise GpuUnavailable(f"cupy cannot be imported ({exc})") from None
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:        # noqa: BLE001 - CUDARuntimeError without a driver
        raise GpuUnavailable(f"CUDA is not usable ({exc})") from None
    if count <= 0:
        raise GpuUnavailable("no CUDA device found")
    return CupyApi(cupy, count)


class CupyApi(GpuApi):
    """:class:`runtime.gpu.api.GpuApi` on cupy (see the module docstring)."""

    name = "cupy"

    def __init__(self, cupy, count: int):
        self.cp = cupy
        self.count = count
        rt = cupy.cuda.runtime
        self._capture_mode = getattr(rt, "streamCaptureModeThreadLocal", None)
        self._devices: dict[int, int] = {}          # stream handle -> its device

    def device_count(self) -> int:
        return self.count

    def new_stream(self, device: int = 0):
        with self.cp.cuda.Device(device):
            s = self.cp.cuda.Stream(non_blocking=True)
        self._devices[int(s.ptr)] = int(device)
        return s

    def external_stream(self, handle: int, device: int = 0):
        self._devices.setdefault(int(handle), int(device))
        return self.cp.cuda.ExternalStream(int(handle), int(device))

    def stream_handle(self, stream) -> int:
        return int(stream.ptr)

    def record_event(self, stream):
        ev = self.cp.cuda.Event(disable_timing=True)
        ev.record(stream)
        return ev

    def wait_event(self, stream, event) -> None:
        stream.wait_event(event)

    def event_done(self, event) -> bool:
        return bool(event.done)

    def sync_event(self, event) -> None:
        event.synchronize()

    def sync_stream(self, stream) -> None:
        stream.synchronize()

    def alloc(self, nbytes: int, device: int = 0):
        with self.cp.cuda.Device(device):
            return self.cp.cuda.Memory(max(1, int(nbytes)))

    def array(self, memory, offset: int, shape, dtype):
        ptr = self.cp.cuda.MemoryPointer(memory, int(offset))
        return self.cp.ndarray(tuple(int(s) for s in shape), dtype=np.dtype(dtype), memptr=ptr)

    def memory_of(self, arr):
        data = getattr(arr, "data", None)
        return getattr(data, "mem", None)

    def offset_of(self, arr) -> int:
        return int(arr.data.ptr) - int(arr.data.mem.ptr)

    def pinned_empty(self, nbytes: int):
        mem = self.cp.cuda.alloc_pinned_memory(max(1, int(nbytes)))
        return np.frombuffer(mem, np.uint8, int(nbytes))

    def wrap(self, obj):
        cp = self.cp
        if isinstance(obj, cp.ndarray):
            return obj
        if hasattr(obj, "__dlpack__"):
            # DLPack orders cupy's stream after the producer's with an event; the CUDA array
            # interface would synchronise the host with the producer's stream instead
            try:
                return cp.from_dlpack(obj)
            except (TypeError, RuntimeError, BufferError):     # e.g. a tensor needing grad
                pass
        return cp.asarray(obj)              # __cuda_array_interface__: a view, no copy

    def copy_h2d(self, dst, src, stream) -> None:
        src = np.require(src, requirements="C").reshape(dst.shape)
        dst.set(src, stream=stream)

    def copy_d2h(self, dst, src, stream) -> None:
        if not src.flags.c_contiguous:      # made contiguous on the copy's stream first
            with self._on(stream), stream:
                src = self.cp.ascontiguousarray(src)
        src.get(stream=stream, out=dst.reshape(src.shape), blocking=False)

    def _on(self, stream):
        """The device of ``stream`` as cupy's current one (a launch on another device's
        stream fails)."""
        return self.cp.cuda.Device(self._devices.get(int(stream.ptr)))

    def copy_d2d(self, dst, src, stream) -> None:
        if dst.flags.c_contiguous and src.flags.c_contiguous and dst.nbytes == src.nbytes:
            dst.data.copy_from_device_async(src.data, src.nbytes, stream)
            return
        with self._on(stream), stream:
            dst[...] = src

    def launch(self, kernel, grid, block, args, stream, shared_mem: int = 0, *,
               reads=(), writes=()) -> None:
        with self._on(stream), stream:
            kernel(tuple(grid), tuple(block), tuple(args), shared_mem=int(shared_mem))

    def begin_capture(self, stream) -> None:
        if self._capture_mode is None:
            stream.begin_capture()
        else:
            stream.begin_capture(self._capture_mode)

    def end_capture(self, stream):
        return stream.end_capture()

    def launch_graph(self, graph, stream) -> None:
        graph.launch(stream)
