"""Per-interface runtime state: the lane streams, the device pool, the pinned staging.

One :class:`GpuState` exists per device interface (:func:`runtime.device.gpu_api`); switching
the interface (a test installing the fake layer) drops it. Lane ``k`` of a plan on device ``d``
always runs on the same stream, ``lane_stream(d, k)``, made on first use (non-blocking: it never
synchronises with the legacy default stream). Decoders (and a decoding ``fused.image``) run on a
stream of their own, ``decode_stream(d)``, so the decode of batch k+1 overlaps the kernels of
batch k on the lanes (their consumers wait on the decode's event; the pool keeps a decoded
block from reuse until every stream that read it has passed its event).
"""
from __future__ import annotations

import threading

from runtime import device as devices
from runtime.gpu.memory import DevicePool, PinnedStaging

__all__ = ["GpuState", "current", "reset", "DECODE_LANE"]

#: the key of the decode stream among a device's lane streams (schedule lanes are >= 0)
DECODE_LANE = -1

_lock = threading.Lock()
_state: dict = {}


class GpuState:
    """What the GPU runtime keeps for one device interface."""

    def __init__(self, api):
        self.api = api
        self.pool = DevicePool(api)
        self.staging = PinnedStaging(api)
        self._lanes: dict[tuple[int, int], object] = {}
        self._lock = threading.Lock()

    def lane_stream(self, device: int, lane: int):
        """The stream of schedule lane ``lane`` on ``device``."""
        key = (int(device), int(lane))
        s = self._lanes.get(key)
        if s is None:
            with self._lock:
                s = self._lanes.get(key)
                if s is None:
                    s = self._lanes[key] = self.api.new_stream(key[0])
        return s

    def decode_stream(self, device: int):
        """The stream the decoders of ``device`` run on (beside the lanes', made on first use)."""
        return self.lane_stream(device, DECODE_LANE)

    def lane_streams(self) -> dict:
        """Every lane stream made so far, ``{(device, lane): stream}``."""
        return dict(self._lanes)


def current() -> GpuState:
    """The state of the interface in use (made on first need).

    Raises
    ------
    RuntimeError
        Without a GPU (``runtime.device.require_gpu``'s message).
    """
    api = devices.gpu_api()
    st = _state.get("s")
    if st is None or st.api is not api:
        with _lock:
            st = _state.get("s")
            if st is None or st.api is not api:
                st = _state["s"] = GpuState(api)
    return st


def reset() -> None:
    """Forget the state (the interface changed)."""
    _state.pop("s", None)


devices.ON_CHANGE.append(reset)
