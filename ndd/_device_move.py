"""Moving handles between devices."""
from __future__ import annotations

from runtime.device import require_gpu


def to_gpu(handle, device_id=None):
    require_gpu(f"{type(handle).__name__}.gpu()")
    raise NotImplementedError("GPU storage is not implemented yet in ndd")


def to_cpu(handle):
    raise NotImplementedError("GPU storage is not implemented yet in ndd")
