"""Device detection: done once, at first need, never at import."""
from __future__ import annotations

_state: dict = {}


def gpu_available() -> bool:
    """True when cupy is installed and finds a CUDA device (checked once)."""
    if "gpu" not in _state:
        ok = False
        try:
            import cupy
            ok = cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:  # noqa: BLE001 - ImportError, CUDARuntimeError...
            ok = False
        _state["gpu"] = ok
    return _state["gpu"]


def require_gpu(what: str) -> None:
    """Raise RuntimeError naming ``what`` when no GPU can be used."""
    if not gpu_available():
        raise RuntimeError(f"{what}: device='gpu' was requested but no CUDA device is available "
                           f"(cupy missing or no GPU found); use device='cpu'")
