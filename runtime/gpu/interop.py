"""Handing GPU data to and from other libraries (cupy, torch, any DLPack / CUDA-array-interface
producer or consumer) without copies, in stream order.

* In: :func:`adopt` wraps a foreign device array (``__cuda_array_interface__`` or
  ``__dlpack__``) as a view and records an event on the stream its producer was using (torch's
  or cupy's current stream; the legacy default stream otherwise), so the runtime's streams wait
  for the producer before reading.
* Out: :class:`Export` is what ``__dlpack__`` / ``torch.from_dlpack`` receive: asked with the
  consumer's stream (DLPack's ``stream=`` argument), it makes that stream wait for the event after
  which the data is ready, and notes the consumer stream as a user of the buffer (the pool does
  not reuse it before that stream has passed an event recorded after the consumer dropped it).
"""
from __future__ import annotations

import sys

from runtime.gpu import state as gpu_state

__all__ = ["is_device_array", "adopt", "Export", "consumer_wait", "DLPACK_CUDA"]

#: DLPack device types that are CUDA device memory (kDLCUDA, kDLCUDAManaged)
DLPACK_CUDA = (2, 13)
#: a stream handle of DLPack meaning "the producer must not synchronise"
NO_SYNC = -1


_HOST_TYPES = (list, tuple, int, float, bool, bytes, type(None))


def _torch_cuda(obj) -> bool:
    dev = getattr(obj, "device", None)
    return type(obj).__module__.startswith("torch") and getattr(dev, "type", None) == "cuda"


def is_device_array(obj) -> bool:
    """Whether ``obj`` is data in CUDA device memory: a cupy array, a torch CUDA tensor, any
    object with ``__cuda_array_interface__`` or a DLPack CUDA device (no CUDA call is made)."""
    if type(obj) in _HOST_TYPES or type(obj).__module__ == "numpy":
        return False                    # the common host data, decided at once
    if _torch_cuda(obj):
        return True
    if type(obj).__module__.startswith("torch"):
        return False
    try:
        if hasattr(obj, "__cuda_array_interface__"):
            return True
    except Exception:  # noqa: BLE001 - a property raising for host data (ndd's CPU Tensor)
        return False
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is not None and not hasattr(obj, "__array_interface__"):
        try:
            return dev()[0] in DLPACK_CUDA
        except Exception:  # noqa: BLE001
            return False
    return False


def _device_index(obj) -> int:
    if _torch_cuda(obj):
        return int(obj.device.index or 0)
    dev = getattr(obj, "device_id", None)
    if isinstance(dev, int):
        return dev
    dev = getattr(obj, "device", None)
    idx = getattr(dev, "id", None)
    if isinstance(idx, int):
        return idx
    fn = getattr(obj, "__dlpack_device__", None)
    return int(fn()[1]) if fn is not None else 0


def _producer_stream(api, obj, device: int):
    """The stream a foreign producer was using for ``obj`` (None: the fake layer, no stream)."""
    if api.name == "fake":
        return None
    if _torch_cuda(obj):
        torch = sys.modules["torch"]
        handle = int(torch.cuda.current_stream(obj.device).cuda_stream)
    elif type(obj).__module__.startswith("cupy"):
        handle = int(api.cp.cuda.get_current_stream().ptr)
    else:
        handle = 0          # the legacy default stream: after all blocking streams' work
    return api.external_stream(handle, device)


def adopt(obj):
    """``(device array, device index, stream, ready event)`` for a foreign device array, viewed
    without a copy.

    Raises
    ------
    RuntimeError
        Without a GPU (``runtime.device.require_gpu``).
    """
    st = gpu_state.current()
    api = st.api
    device = _device_index(obj)
    arr = api.wrap(obj)
    stream = _producer_stream(api, obj, device)
    ready = api.record_event(stream) if stream is not None else None
    return arr, device, stream, ready


def consumer_wait(arr, ready, stream_handle, device: int) -> None:
    """Order the consumer's stream ``stream_handle`` (DLPack's value: an int; None: the legacy
    default stream, 1) after ``ready``, and note it as a user of ``arr``'s buffer."""
    if stream_handle == NO_SYNC:
        return
    st = gpu_state.current()
    api = st.api
    consumer = api.external_stream(1 if stream_handle is None else int(stream_handle), device)
    if ready is not None:
        api.wait_event(consumer, ready)
    st.pool.note_use([arr], consumer, None)


class Export:
    """A device array offered through DLPack, ready after ``ready`` (see the module docstring).

    ``torch.from_dlpack(Export(...))`` gives a CUDA tensor ordered after the producing stream."""

    __slots__ = ("arr", "ready", "device")

    def __init__(self, arr, ready, device: int):
        self.arr, self.ready, self.device = arr, ready, device

    def __dlpack__(self, stream=None, **kwargs):
        consumer_wait(self.arr, self.ready, stream, self.device)
        # the consumer is ordered already: the producer library must not order it again after
        # its own current stream (cupy would, given a stream)
        if stream is None:
            return self.arr.__dlpack__(**kwargs)
        try:
            return self.arr.__dlpack__(stream=NO_SYNC, **kwargs)
        except (TypeError, ValueError):     # a producer without DLPack's "no sync" value
            return self.arr.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (2, self.device)

    @property
    def __cuda_array_interface__(self):
        return self.arr.__cuda_array_interface__
