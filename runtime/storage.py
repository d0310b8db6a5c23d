"""Batch storage: per-sample numpy arrays on the CPU (:class:`SampleList` or a plain list),
per-sample device arrays on a GPU (:class:`DeviceSamples`)."""
from __future__ import annotations


class SampleList(list):
    """A list of per-sample arrays that also remembers where each sample came from
    (``source_info[i]``, e.g. the file path), so errors can name the file."""

    __slots__ = ("source_info",)

    def __init__(self, samples, source_info=None):
        super().__init__(samples)
        self.source_info = source_info


def sample_name(samples, i: int) -> str:
    """How messages name sample ``i`` of a batch: ``"sample 3 ('photos/cat/3.jpg')"`` when
    the storage knows where its samples came from (:class:`SampleList`), else ``"sample 3"``."""
    info = getattr(samples, "source_info", None)
    if info is not None:
        return f"sample {i} ({info[i]!r})"
    return f"sample {i}"


class DeviceSamples(list):
    """Batch storage on a GPU: a list of per-sample device arrays (cupy arrays; the fake layer's
    ``FakeArray`` in tests), usually views into one allocation, and where they become valid.

    Attributes
    ----------
    device : int
        The GPU ordinal.
    stream : object | None
        The stream whose work produces the samples (None: already valid everywhere, e.g. a
        user's array wrapped as is).
    ready : object | None
        An event recorded on ``stream`` after that work: a consumer on another stream waits on
        it before reading (the cross-lane edge of the schedule); the host synchronises on it.
    source_info : list | None
        As :class:`SampleList`.
    """

    __slots__ = ("device", "stream", "ready", "source_info")

    def __init__(self, samples, device: int = 0, stream=None, ready=None, source_info=None):
        super().__init__(samples)
        self.device, self.stream, self.ready = device, stream, ready
        self.source_info = source_info


def is_device_storage(samples) -> bool:
    """Whether a batch's storage lives on a GPU (one type check: no per-sample work)."""
    return isinstance(samples, DeviceSamples)
