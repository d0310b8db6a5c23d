"""What every handle (``Tensor``, ``Batch``) knows without computing: its Value's metadata.

The handle modules hold data and metadata only and import nothing of the call path; their
operators (``+``, ``==``, ``-x``...) and indexing (``tensor[...]``, ``batch.slice[...]``) are
attached by :mod:`ndd._handle_operators`, the one module that imports both the handles and
the call path.
"""
from __future__ import annotations

from compiler.types import DTYPES, ENUM_DTYPES


class Handle:
    """Base of ``Tensor`` and ``Batch``: a ``_value`` (``compiler.ir.Value``) and its metadata."""

    __slots__ = ()

    @property
    def dtype(self):
        """Element type (``ndd.DType``)."""
        name = self._value.meta.dtype
        return DTYPES[name] if name in DTYPES else ENUM_DTYPES[name]

    @property
    def layout(self) -> str | None:
        """Layout string (e.g. ``"HWC"``) or None when the data has none."""
        return self._value.meta.layout or None

    @property
    def device(self):
        """The ``ndd.Device`` holding the data."""
        return self._value.meta.device

    # ``==`` records an element-wise comparison, yet handles stay usable as dict keys and in
    # sets: they hash by identity
    __hash__ = object.__hash__
