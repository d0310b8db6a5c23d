"""Batch storage on the CPU: a list of per-sample numpy arrays, optionally with source info."""
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
