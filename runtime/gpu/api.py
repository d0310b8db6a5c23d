"""The device interface: every CUDA-facing call of the runtime goes through one :class:`GpuApi`.

Two implementations sit side by side, as tinygrad's device backends do:

* :class:`runtime.gpu.cupy_api.CupyApi` -- the real one, on cupy (streams, events, raw device
  memory, pinned host memory, async copies, RawKernel launches, CUDA graphs);
* :class:`runtime.gpu.fake.FakeApi` -- pure numpy, deterministic, recording an event log and
  checking every access against the stream order (the offline tests run on it).

The runtime above (memory pool, plan runner, graph capture, moves) is written once against this
interface. The calls are the small set CUDA itself offers; no method here allocates behind the
caller's back, so "nothing is allocated during graph capture" can be checked at this boundary.
"""
from __future__ import annotations


class GpuUnavailable(RuntimeError):
    """No CUDA device can be used (cupy missing, no driver, no GPU)."""


class CaptureError(RuntimeError):
    """An operation that CUDA forbids while a stream is being captured into a graph."""


class GpuApi:
    """The operations the GPU runtime needs. Streams, events and memories are opaque objects of
    the implementation; a *device array* is a cupy ``ndarray`` (or :class:`~runtime.gpu.fake.
    FakeArray`) with ``shape``, ``dtype``, ``nbytes`` and ``__cuda_array_interface__``.

    Every method that enqueues work takes the stream it goes on; nothing uses the legacy default
    stream.
    """

    name = "abstract"

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        """Number of usable devices."""
        raise NotImplementedError

    # ---------------------------------------------------------------- streams and events
    def new_stream(self, device: int = 0):
        """A new non-blocking stream on ``device``."""
        raise NotImplementedError

    def external_stream(self, handle: int, device: int = 0):
        """A stream object for a raw handle made elsewhere (torch, the user)."""
        raise NotImplementedError

    def stream_handle(self, stream) -> int:
        """The raw ``cudaStream_t`` of ``stream`` as an int."""
        raise NotImplementedError

    def record_event(self, stream):
        """Record a new event on ``stream`` and return it."""
        raise NotImplementedError

    def wait_event(self, stream, event) -> None:
        """Make ``stream`` wait (on the device) until ``event`` has passed."""
        raise NotImplementedError

    def event_done(self, event) -> bool:
        """Whether ``event`` has passed (never blocks)."""
        raise NotImplementedError

    def sync_event(self, event) -> None:
        """Block the host until ``event`` has passed."""
        raise NotImplementedError

    def sync_stream(self, stream) -> None:
        """Block the host until everything queued on ``stream`` has run."""
        raise NotImplementedError

    # ---------------------------------------------------------------- memory
    def alloc(self, nbytes: int, device: int = 0):
        """Raw device memory of ``nbytes`` (a memory object with ``.nbytes``; never pooled here).

        Raises
        ------
        CaptureError
            While a stream is being captured.
        """
        raise NotImplementedError

    def array(self, memory, offset: int, shape, dtype):
        """A device array of ``shape`` / ``dtype`` viewing ``memory`` from byte ``offset``; the
        array keeps ``memory`` alive."""
        raise NotImplementedError

    def memory_of(self, arr):
        """The memory object a device array made by :meth:`array` views (None for foreign
        arrays)."""
        raise NotImplementedError

    def offset_of(self, arr) -> int:
        """The byte offset of device array ``arr``'s first element in :meth:`memory_of`."""
        raise NotImplementedError

    def pinned_empty(self, nbytes: int):
        """A page-locked host ``numpy`` uint8 array of ``nbytes`` (for async H2D/D2H copies)."""
        raise NotImplementedError

    def wrap(self, obj):
        """A device array viewing a foreign object with ``__cuda_array_interface__`` or
        ``__dlpack__`` (cupy array, torch CUDA tensor), without a copy."""
        raise NotImplementedError

    # ---------------------------------------------------------------- copies
    def copy_h2d(self, dst, src, stream) -> None:
        """Copy host array ``src`` into device array ``dst`` on ``stream`` (async when ``src`` is
        pinned)."""
        raise NotImplementedError

    def copy_d2h(self, dst, src, stream) -> None:
        """Copy device array ``src`` into host array ``dst`` on ``stream`` (async into pinned
        ``dst``: the host may read it only after an event / stream sync)."""
        raise NotImplementedError

    def copy_d2d(self, dst, src, stream) -> None:
        """Copy device array ``src`` into ``dst`` (same shape and dtype) on ``stream``."""
        raise NotImplementedError

    # ---------------------------------------------------------------- kernels and graphs
    def launch(self, kernel, grid, block, args, stream, shared_mem: int = 0, *,
               reads=(), writes=()) -> None:
        """Launch ``kernel`` on ``stream``. ``reads`` / ``writes`` name the device arrays it
        touches (the fake layer checks them against the stream order; cupy ignores them)."""
        raise NotImplementedError

    def begin_capture(self, stream) -> None:
        """Start capturing the work queued on ``stream`` (and on streams that join it through
        events) into a graph instead of running it."""
        raise NotImplementedError

    def end_capture(self, stream):
        """Stop capturing and return the graph (ready to launch)."""
        raise NotImplementedError

    def launch_graph(self, graph, stream) -> None:
        """Run a captured graph on ``stream``."""
        raise NotImplementedError

    # ---------------------------------------------------------------- checks
    def host_access(self, arr) -> None:
        """The host is about to read host array ``arr`` filled by :meth:`copy_d2h` (the fake
        layer checks that the copy is known to have finished; cupy does nothing)."""
