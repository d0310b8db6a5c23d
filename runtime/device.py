"""Device detection and the device interface in use: decided once, at first need, never at import.

:func:`gpu_api` is the one way into the GPU (a :class:`runtime.gpu.api.GpuApi`): the cupy
implementation when cupy finds a device, or the implementation a test installed with
:func:`use_api` (the fake layer, :mod:`runtime.gpu.fake`). Without either, every GPU path
raises the one error of :func:`require_gpu`.
"""
from __future__ import annotations

import contextlib
import threading

from runtime.gpu import cupy_api
from runtime.gpu.api import GpuUnavailable

_state: dict = {}
_lock = threading.Lock()


def _detect():
    """The cupy interface, or the reason there is none (detected once)."""
    if "api" not in _state:
        with _lock:
            if "api" not in _state:
                try:
                    _state["api"], _state["why"] = cupy_api.load(), None
                except GpuUnavailable as exc:
                    _state["api"], _state["why"] = None, str(exc)
    return _state["api"]


def gpu_available() -> bool:
    """True when a device interface can be used: cupy finds a CUDA device (checked once), or a
    test installed one with :func:`use_api`."""
    return _state.get("override") is not None or _detect() is not None


def gpu_api():
    """The device interface in use (``runtime.gpu.api.GpuApi``).

    Raises
    ------
    RuntimeError
        Without a CUDA device (:func:`require_gpu`'s message).
    """
    api = _state.get("override")
    if api is not None:
        return api
    api = _detect()
    if api is None:
        require_gpu("GPU work")
    return api


def device_count() -> int:
    """Number of usable GPUs (0 without one); never raises."""
    return gpu_api().device_count() if gpu_available() else 0


def require_gpu(what: str) -> None:
    """Raise RuntimeError naming ``what`` when no GPU can be used."""
    if not gpu_available():
        why = _state.get("why") or "cupy missing or no GPU found"
        raise RuntimeError(f"{what} needs a CUDA device (device='gpu'), but no CUDA device is "
                           f"available ({why}); use device='cpu'")


def require_device(what: str, index: int) -> None:
    """:func:`require_gpu`, and ``index`` must be an existing device ordinal (RuntimeError)."""
    require_gpu(what)
    n = gpu_api().device_count()
    if not 0 <= index < n:
        raise RuntimeError(f"{what}: device 'gpu:{index}' does not exist ({n} CUDA device"
                           f"{'s' if n != 1 else ''} available)")


@contextlib.contextmanager
def use_api(api):
    """Run the block with ``api`` as the device interface (tests: the fake GPU); restores the
    previous one after, also on error. Runtime state bound to the old interface (streams of
    :mod:`runtime.gpu.streams`, pools of :mod:`runtime.gpu.memory`) is dropped both ways."""
    old = _state.get("override")
    _state["override"] = api
    _notify()
    try:
        yield api
    finally:
        _state["override"] = old
        _notify()


#: callables run when the interface changes (modules holding per-interface state register here)
ON_CHANGE: list = []


def _notify() -> None:
    for fn in ON_CHANGE:
        fn()
