"""``ndd.DType`` objects, their aliases and conversions to/from numpy and torch dtypes."""
from __future__ import annotations

import numpy as np

from compiler.types import DTYPES, ENUM_DTYPES, DType, lookup
from ndd.types import DALIDataType, DALIImageType, DALIInterpType

uint8 = DTYPES["uint8"]
uint16 = DTYPES["uint16"]
uint32 = DTYPES["uint32"]
uint64 = DTYPES["uint64"]
int8 = DTYPES["int8"]
int16 = DTYPES["int16"]
int32 = DTYPES["int32"]
int64 = DTYPES["int64"]
float16 = DTYPES["float16"]
float32 = DTYPES["float32"]
float64 = DTYPES["float64"]
bfloat16 = DTYPES["bfloat16"]
bool_ = DTYPES["bool"]
DataType = ENUM_DTYPES["DataType"]
ImageType = ENUM_DTYPES["ImageType"]
InterpType = ENUM_DTYPES["InterpType"]


def by_name(name: str) -> DType:
    """The DType whose ``ir_name`` (``ValueMeta.dtype``) is ``name``."""
    return DTYPES[name] if name in DTYPES else ENUM_DTYPES[name]


def dtype(spec) -> DType:
    """Convert ``spec`` to an ``ndd.DType``.

    Parameters
    ----------
    spec : DType | str | numpy dtype or scalar type | torch.dtype | ndd.types.DALIDataType |
        nvidia.dali.types.DALIDataType (recognised without importing DALI)

    Raises
    ------
    TypeError / ValueError
        For anything that does not name an element type.
    """
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, DALIDataType):
        return by_name(spec.dtype_name)
    ours = from_dali(spec)                         # DALI's own enum (types.FLOAT)
    if isinstance(ours, DALIDataType):
        return by_name(ours.dtype_name)
    if isinstance(spec, str):
        return lookup(spec)
    mod = type(spec).__module__
    if mod.startswith("torch"):
        name = str(spec).removeprefix("torch.")
        if name == "bool":
            return DTYPES["bool"]
        return lookup(name)
    if spec is bool:
        return DTYPES["bool"]
    if spec is float:
        return DTYPES["float32"]
    if spec is int:
        return DTYPES["int32"]
    try:
        npd = np.dtype(spec)
    except TypeError:
        raise TypeError(f"cannot interpret {spec!r} as a dtype; expected e.g. ndd.float32, "
                        f"'uint8', numpy.uint8 or torch.float32") from None
    if npd == np.bool_:
        return DTYPES["bool"]
    return lookup(npd.name)


def type_id(spec) -> DALIDataType | None:
    """DALI's ``DALIDataType`` of a dtype (``ndd.type_id(ndd.float32)`` is
    ``DALIDataType.FLOAT``, equal to its id 9; None for bfloat16, as in DALI 2.4). ``spec`` is
    anything :func:`dtype` accepts."""
    tid = dtype(spec).type_id
    return None if tid is None else DALIDataType(tid)


def from_dali(value):
    """ndd's member for a member of DALI's own enums (``nvidia.dali.types.FLOAT`` ->
    ``ndd.types.DALIDataType.FLOAT``), recognised by the type's name without importing DALI;
    None for anything else.  ValueError for a DALI member ndd does not have."""
    cls = type(value)
    if cls.__module__ != "nvidia.dali.backend_impl.types":
        return None
    ours = {"DALIDataType": DALIDataType, "DALIImageType": DALIImageType,
            "DALIInterpType": DALIInterpType}.get(cls.__name__)
    if ours is None:
        return None
    try:
        return ours[value.name]
    except KeyError:
        raise ValueError(f"nvidia.dali.types.{value.name} is not supported by ndd") from None


def to_numpy(dt) -> np.dtype:
    d = dtype(dt)
    if d.ir_name == "bfloat16":
        raise TypeError("bfloat16 has no numpy equivalent; use .torch() to read bfloat16 data")
    if d.is_enum:
        raise TypeError(f"ndd.{d.name} is an enum type; ndd keeps enum values as int32 "
                        f"arrays")
    return np.dtype(d.ir_name)


_NAME_OF_NUMPY: dict = {}    # np.dtype -> ndd name, filled by from_numpy (every Batch asks)


def from_numpy(npd) -> str:
    """The ndd dtype name of a numpy dtype."""
    try:
        return _NAME_OF_NUMPY[npd]
    except (KeyError, TypeError):
        pass
    given = npd
    npd = np.dtype(npd)
    if npd == np.bool_:
        name = "bool"
    else:
        try:
            name = lookup(npd.name).ir_name
        except ValueError:
            raise TypeError(f"numpy dtype {npd} is not supported by ndd; supported: "
                            f"{', '.join(DTYPES)}") from None
    if isinstance(given, np.dtype) and len(_NAME_OF_NUMPY) < 256:
        try:
            _NAME_OF_NUMPY[given] = name
        except TypeError:       # an unhashable (structured) dtype
            pass
    return name


def to_torch(dt):
    import torch
    name = dtype(dt).ir_name
    return getattr(torch, name)
