"""DALI's enumerations, under DALI's names (``ndd.types.RGB``, ``ndd.types.INTERP_CUBIC``...).

Every argument that takes one of these also accepts the plain string (``"RGB"``, ``"cubic"``,
``"float32"``); DALI itself rejects strings (docs/semantics.md).
"""
from __future__ import annotations

import enum

from compiler.types import BY_DALI_NAME


class _DaliEnum(enum.IntEnum):
    """An integer enum that prints as DALI's do: ``str(DALIDataType.FLOAT)`` and ``f"{...}"``
    give ``"DALIDataType.FLOAT"`` (Python's IntEnum would give ``"9"``); it still compares and
    converts as its integer id."""

    __str__ = enum.Enum.__str__
    __format__ = enum.Enum.__format__


class DALIDataType(_DaliEnum):
    """Element types, with DALI 2.4's numeric ids (``nvidia.dali.types.DALIDataType``)."""

    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11
    STRING = 12
    IMAGE_TYPE = 20
    DATA_TYPE = 21
    INTERP_TYPE = 22
    BFLOAT16 = 25

    @property
    def dtype_name(self) -> str:
        """The ``ir_name`` of the matching ``ndd.DType`` (``"float32"`` for FLOAT,
        ``"DataType"`` for DATA_TYPE)."""
        d = BY_DALI_NAME.get(self.name)
        if d is None:
            raise ValueError(f"{self.name} has no element type in ndd")
        return d.ir_name


class DALIImageType(_DaliEnum):
    """Colour spaces of decoded images (``output_type``)."""

    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4

    @property
    def canonical(self) -> str:
        return self.name


class DALIInterpType(_DaliEnum):
    """Resampling filters (``interp_type``, ``min_filter``, ``mag_filter``)."""

    INTERP_NN = 0
    INTERP_LINEAR = 1
    INTERP_CUBIC = 2
    INTERP_LANCZOS3 = 3
    INTERP_TRIANGULAR = 4
    INTERP_GAUSSIAN = 5

    @property
    def canonical(self) -> str:
        return self.name.removeprefix("INTERP_").lower()


class DALIRNGType(_DaliEnum):
    """Kind of random-number generator (only the default is implemented)."""

    DEFAULT = 0


globals().update({m.name: m for m in DALIDataType})
globals().update({m.name: m for m in DALIImageType})
globals().update({m.name: m for m in DALIInterpType})

__all__ = ["DALIDataType", "DALIImageType", "DALIInterpType", "DALIRNGType"] + \
    [m.name for m in DALIDataType] + [m.name for m in DALIImageType] + \
    [m.name for m in DALIInterpType]
