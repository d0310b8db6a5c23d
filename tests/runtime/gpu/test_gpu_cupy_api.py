"""The real device interface (``runtime/gpu/cupy_api.py``) without a device: every cupy name it
calls exists in the installed cupy (a renamed API fails here, not first on a lent GPU), and
loading it without a device gives ``GpuUnavailable`` with cupy's reason."""
from __future__ import annotations

import functools

import pytest

from runtime import device as devices
from runtime.gpu import cupy_api
from runtime.gpu.api import GpuUnavailable

cupy = pytest.importorskip("cupy")

USED = ("cuda.Stream", "cuda.ExternalStream", "cuda.Event", "cuda.Memory", "cuda.MemoryPointer",
        "cuda.alloc_pinned_memory", "cuda.runtime.streamCaptureModeThreadLocal",
        "cuda.runtime.getDeviceCount", "cuda.Device", "cuda.get_current_stream",
        "ndarray.set", "ndarray.get", "ndarray.__dlpack__",
        "cuda.MemoryPointer.copy_from_device_async", "from_dlpack", "asarray",
        "ascontiguousarray", "RawKernel", "RawModule.compile", "cuda.Stream.begin_capture",
        "cuda.Stream.end_capture", "cuda.Stream.wait_event", "cuda.Stream.synchronize",
        "cuda.Event.record", "cuda.Event.synchronize", "cuda.Event.done",
        "cuda.graph.Graph.launch", "cuda.function.Function.ptr")


@pytest.mark.parametrize("name", USED)
def test_the_cupy_names_used_exist(name):
    functools.reduce(getattr, name.split("."), cupy)


@pytest.mark.skipif(devices.gpu_available(), reason="checks the no-device path")
def test_loading_without_a_device_names_the_reason():
    with pytest.raises(GpuUnavailable) as info:
        cupy_api.load()
    assert str(info.value)
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        devices.gpu_api()
    assert devices.device_count() == 0
