"""What every handle (``Tensor``, ``Batch``) knows without computing: its Value's metadata.

The handle modules hold data and metadata only and import nothing of the call path; their
operators (``+``, ``==``, ``-x``...) and indexing (``tensor[...]``, ``batch.slice[...]``) are
attached by :mod:`ndd._handle_operators`, the one module that imports both the handles and
the call path.
"""
from __future__ import annotations

import operator

from compiler.types import DTYPES, ENUM_DTYPES, Device, parse_device
from ndd._device_move import to_cpu, to_gpu


class Handle:
    """Base of ``Tensor`` and ``Batch``: a ``_value`` (``compiler.ir.Value``) and its metadata."""

    __slots__ = ()

    @property
    def dtype(self):
        """Element type (``ndd.DType``)."""
        name = self._value.meta.dtype
        if name is None:    # known only from the data (e.g. decoders.numpy): evaluates
            data = self._samples() if hasattr(self, "_samples") else [self._array()]
            name = data[0].dtype.name if len(data) else "uint8"
        return DTYPES[name] if name in DTYPES else ENUM_DTYPES[name]

    @property
    def layout(self) -> str | None:
        """Layout string (e.g. ``"HWC"``) or None when the data has none."""
        return self._value.meta.layout or None

    @property
    def device(self):
        """The ``ndd.Device`` holding the data."""
        return self._value.meta.device

    def cpu(self):
        """This tensor/batch in host memory (itself when already on the CPU)."""
        return self.to_device("cpu")

    def gpu(self, index: int | None = None):
        """This tensor/batch in GPU memory (device ``index``; None: the current one).

        Raises
        ------
        RuntimeError
            When no CUDA device is available.
        """
        return self.to_device(Device("gpu", 0 if index is None else operator.index(index)))

    def to_device(self, device, force_copy: bool = False):
        """This tensor/batch on ``device`` (``"cpu"``, ``"gpu[:N]"`` or an ``ndd.Device``):
        itself when already there, unless ``force_copy`` (then a copy of the data).

        Raises
        ------
        RuntimeError
            For a GPU when no CUDA device is available.
        """
        dev = parse_device(device)
        if dev == self.device:
            return self._copy() if force_copy else self
        if dev.kind == "gpu":
            return to_gpu(self, dev.index)
        return to_cpu(self)

    def _with_value(self, value):
        """A handle of this kind over ``value`` (a computed Value, e.g. after a device move)."""
        raise NotImplementedError

    # ``==`` records an element-wise comparison, yet handles stay usable as dict keys and in
    # sets: they hash by identity
    __hash__ = object.__hash__
