"""CUDA streams (``ndd.Stream``, ``ndd.stream``, the default and current stream).

The objects, their equality and the getters/setters follow DALI 2.4's dynamic mode
(``nvidia.dali.experimental.dynamic.stream``): a :class:`Stream` wraps a raw handle (an ``int``),
an object with ``__cuda_stream__`` (returns ``(version, handle)``), a torch/cupy stream
(``.cuda_stream`` / ``.ptr``) or another :class:`Stream`; two streams are equal when their handles
and devices are. Creating a *new* stream needs a CUDA device: without one it raises
``RuntimeError`` naming the missing device, as DALI does on a CPU-only machine.

What runs on a stream is the GPU backend's business; on the CPU streams are bookkeeping only.
"""
from __future__ import annotations

import threading

from runtime import device as devices

_CREATE_NEW = object()
_lock = threading.Lock()
_default_streams: dict[int, "Stream | None"] = {}
_local = threading.local()


def cuda_device_count() -> int:
    """Number of usable CUDA devices (0 without a driver or GPU; ``runtime.device``)."""
    return devices.device_count()


def _require_gpu(what: str) -> None:
    devices.require_gpu(what)


def _raw_handle(obj) -> int:
    """The integer CUDA stream handle of a stream-like object; TypeError when it is none."""
    if isinstance(obj, bool):
        raise TypeError(f"a CUDA stream handle must be an integer, got {obj!r}")
    if isinstance(obj, int):
        return obj
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        if isinstance(value, tuple):    # (version, handle), the CUDA stream protocol
            value = value[1]
        return int(value)
    for attr in ("cuda_stream", "ptr", "handle"):   # torch.cuda.Stream, cupy Stream
        value = getattr(obj, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise TypeError(f"{type(obj).__name__} is not a CUDA stream: expected an int handle, an object "
                    f"with __cuda_stream__, or a torch/cupy stream")


def _device_of(obj) -> int | None:
    """The device ordinal a stream-like object names, or None when it names none."""
    dev = getattr(obj, "device_id", None)
    if isinstance(dev, int):
        return dev
    dev = getattr(obj, "device", None)
    if isinstance(dev, int):
        return dev
    for attr in ("index", "id"):
        idx = getattr(dev, attr, None)
        if isinstance(idx, int):
            return idx
    return None


class Stream:
    """A CUDA stream, created by ndd or wrapping a third-party one. Build with :func:`stream`.

    Parameters
    ----------
    stream : stream-like or ``Stream.create_new``
        What to wrap (see the module docstring); ``Stream.create_new`` (default) creates a stream.
    device_id : int, optional
        Device of a new stream (default: the current device, 0); for a wrapped stream only
        checked against the device it names (``ValueError`` when they differ).

    Raises
    ------
    ValueError
        ``stream=None``, or a ``device_id`` that contradicts the wrapped stream.
    TypeError
        ``stream`` is not stream-like.
    RuntimeError
        A new stream was asked for and no CUDA device is available.
    """

    create_new = _CREATE_NEW

    def __init__(self, *, stream=_CREATE_NEW, device_id: int | None = None):
        if stream is None:
            raise ValueError("The stream must not be None. To create a new stream, "
                             "omit the stream parameter.")
        if stream is _CREATE_NEW:
            _require_gpu("Creating a CUDA stream")
            api = devices.gpu_api()
            self._device_id = 0 if device_id is None else int(device_id)
            self._obj = api.new_stream(self._device_id)
            self._handle = api.stream_handle(self._obj)
            return
        if isinstance(stream, Stream):
            self._handle, self._obj, dev = stream._handle, stream._obj, stream._device_id
        else:
            self._handle, self._obj, dev = _raw_handle(stream), stream, _device_of(stream)
        if dev is None:
            dev = 0 if device_id is None else int(device_id)     # a raw handle names no device
        if device_id is not None and device_id != dev:
            raise ValueError(f"The device_id {device_id} doesn't match the id {dev} "
                             f"associated with the stream object {self._handle}.")
        self._device_id = dev

    @property
    def handle(self) -> int:
        """The raw CUDA stream handle (``int``)."""
        return self._handle

    @property
    def device_id(self) -> int:
        """The ordinal of the CUDA device the stream belongs to."""
        return self._device_id

    def __cuda_stream__(self):
        return (0, self._handle)

    def __str__(self):
        return f"CUDA stream {self._handle}, device_id={self._device_id}"

    def __repr__(self):
        return f"Stream(stream={self._obj!r}, device_id={self._device_id})"

    def __eq__(self, other):
        if other is None:
            return False
        if other is self:
            return True
        try:
            other = stream(stream=other)
        except TypeError:
            return NotImplemented
        return self._handle == other._handle and self._device_id == other._device_id

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash((self._handle, self._device_id))

    def synchronize(self) -> None:
        """Wait until the work queued on this stream has finished (needs a CUDA device)."""
        _require_gpu("Stream.synchronize")
        api = devices.gpu_api()
        api.sync_stream(api.external_stream(self._handle, self._device_id))


def stream(*, stream=_CREATE_NEW, device_id: int | None = None) -> Stream | None:
    """Wrap a stream-like object in a :class:`Stream`, or create a new one (default).

    ``stream=None`` returns ``None``; a :class:`Stream` is returned as is (after checking
    ``device_id``). See :class:`Stream` for the arguments and errors.
    """
    if stream is None:
        return None
    if isinstance(stream, Stream):
        if device_id is not None and device_id != stream.device_id:
            raise ValueError(f"The device_id {device_id} doesn't match the id "
                             f"{stream.device_id} found in the stream object.")
        return stream
    return Stream(stream=stream, device_id=device_id)


def set_default_stream(cuda_stream, /, device_id: int | None = None) -> None:
    """Set the stream used by every thread that has not set its own current stream.

    ``device_id`` defaults to the stream's device (else 0); ``None`` clears the default.
    """
    if cuda_stream is not None:
        cuda_stream = stream(stream=cuda_stream, device_id=device_id)
        if device_id is None:
            device_id = cuda_stream.device_id
    with _lock:
        _default_streams[0 if device_id is None else int(device_id)] = cuda_stream


def get_default_stream(device_id: int | None = None) -> Stream | None:
    """The default stream of a device (``None`` when none was set)."""
    with _lock:
        return _default_streams.get(0 if device_id is None else int(device_id))


def set_current_stream(cuda_stream, /) -> None:
    """Set the stream of this thread's default evaluation context; ``None`` resets it."""
    _local.stream = stream(stream=cuda_stream) if cuda_stream is not None else None


def get_current_stream() -> Stream | None:
    """This thread's current stream: the one set here, else the default stream."""
    own = getattr(_local, "stream", None)
    return own if own is not None else get_default_stream()
