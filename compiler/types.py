"""Element types and devices as the compiler sees them: plain metadata, no array library.

The names and numeric ids follow DALI's ``DALIDataType`` enumeration so that
``ndd.types.FLOAT`` and ``ndd.float32`` denote the same thing.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    """What kind of number a :class:`DType` holds (DALI 2.4's ``DType.Kind``; also reachable
    as ``ndd.DType.Kind``)."""

    signed = "i"
    unsigned = "u"
    float = "f"
    bool = "b"
    enum = "e"


@dataclass(frozen=True)
class DType:
    """An element type (``ndd.DType``; DALI 2.4's ``nvidia.dali.experimental.dynamic.DType``).

    Attributes
    ----------
    ir_name : str
        The compiler's name: numpy-style (``"uint8"``, ``"float32"``, ``"bool"``,
        ``"bfloat16"``); ``ValueMeta.dtype`` and the kernels use it.
    type_id : int
        DALI's ``DALIDataType`` value (``nvidia.dali.types.DALIDataType``); None for bfloat16,
        as in DALI 2.4.
    bytes : int
        Bytes per element (``itemsize`` is the same number).
    kind : DType.Kind
        ``signed``, ``unsigned``, ``float``, ``bool`` or ``enum``.
    dali_name : str
        DALI's enum member name (``"UINT8"``, ``"FLOAT"``...).
    bits : int
        Size in bits (32 for the enum types).
    exponent_bits, significand_bits : int | None
        The floating-point layout (``float32``: 8 and 23); None for other kinds.

    ``name`` is DALI's short name (``"u8"``, ``"i32"``, ``"f32"``, ``"bool"``, ``"bfloat16"``,
    ``"DataType"``); ``str()`` gives ``ir_name`` (docs/semantics.md).
    """

    Kind = Kind

    ir_name: str
    type_id: int | None
    bytes: int
    kind: Kind
    dali_name: str
    bits: int
    exponent_bits: int | None = None
    significand_bits: int | None = None

    @property
    def name(self) -> str:
        """DALI's name of the type (``"u8"``, ``"f32"``, ``"bool"``, ``"bfloat16"``...)."""
        return SHORT_NAMES.get(self.ir_name, self.ir_name)

    @property
    def itemsize(self) -> int:
        """Bytes per element (numpy's spelling of :attr:`bytes`)."""
        return self.bytes

    @property
    def is_float(self) -> bool:
        return self.kind is Kind.float

    @property
    def is_integer(self) -> bool:
        return self.kind in (Kind.signed, Kind.unsigned)

    @property
    def is_signed(self) -> bool:
        return self.kind in (Kind.signed, Kind.float)

    @property
    def is_enum(self) -> bool:
        return self.kind is Kind.enum

    def __repr__(self) -> str:
        return f"ndd.{self.ir_name}"

    def __str__(self) -> str:
        return self.ir_name

    @staticmethod
    def parse(name: str) -> "DType":
        """The DType a name denotes (DALI's ``DType.parse``; see :func:`lookup`)."""
        return lookup(name)

    @staticmethod
    def from_type_id(type_id) -> "DType":
        """The DType of a ``DALIDataType`` id (``9`` or ``ndd.types.FLOAT`` -> float32).

        Raises
        ------
        KeyError
            For an id with no element type (DALI raises KeyError too).
        """
        try:
            return BY_ID[int(type_id)]
        except KeyError:
            raise KeyError(f"no ndd.DType has DALIDataType id {type_id!r}") from None

    @staticmethod
    def from_fw_type(fw_type) -> "DType":
        """The DType of a numpy dtype or scalar type (DALI's ``DType.from_fw_type``), read from
        its name (``numpy.dtype('f4').name``, ``numpy.float32.__name__``)."""
        name = getattr(fw_type, "name", None)
        if not isinstance(name, str):
            name = getattr(fw_type, "__name__", str(fw_type))
        return lookup(name)


def _row(ir_name, type_id, bits, kind, dali_name, exp=None, sig=None):
    return DType(ir_name, type_id, (bits + 7) // 8, kind, dali_name, bits, exp, sig)


_S, _U, _F = Kind.signed, Kind.unsigned, Kind.float
_TABLE = [
    # ir_name, DALIDataType id (DALI 2.4), bits, kind, DALI enum name[, exponent, significand]
    ("uint8", 0, 8, _U, "UINT8"),
    ("uint16", 1, 16, _U, "UINT16"),
    ("uint32", 2, 32, _U, "UINT32"),
    ("uint64", 3, 64, _U, "UINT64"),
    ("int8", 4, 8, _S, "INT8"),
    ("int16", 5, 16, _S, "INT16"),
    ("int32", 6, 32, _S, "INT32"),
    ("int64", 7, 64, _S, "INT64"),
    ("float16", 8, 16, _F, "FLOAT16", 5, 10),
    ("float32", 9, 32, _F, "FLOAT", 8, 23),
    ("float64", 10, 64, _F, "FLOAT64", 11, 52),
    ("bool", 11, 8, Kind.bool, "BOOL"),
    ("bfloat16", None, 16, _F, "BFLOAT16", 8, 7),   # DALI 2.4 gives bfloat16 no type id
]

#: The array element types, by ``ir_name``.
DTYPES: dict[str, DType] = {row[0]: _row(*row) for row in _TABLE}

#: DALI's enum element types (``ndd.DataType``, ``ndd.ImageType``, ``ndd.InterpType``): 32-bit,
#: DALIDataType ids 21, 20, 22 (DALI 2.4). Not array types of ndd's kernels.
ENUM_DTYPES: dict[str, DType] = {
    name: _row(name, tid, 32, Kind.enum, dali)
    for name, tid, dali in (("DataType", 21, "DATA_TYPE"), ("ImageType", 20, "IMAGE_TYPE"),
                            ("InterpType", 22, "INTERP_TYPE"))}

#: DALI's short names of the array types (``DType.name``).
SHORT_NAMES = {"uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
               "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
               "float16": "f16", "float32": "f32", "float64": "f64"}

BY_DALI_NAME: dict[str, DType] = {d.dali_name: d for d in (*DTYPES.values(),
                                                            *ENUM_DTYPES.values())}
BY_ID: dict[int, DType] = {d.type_id: d for d in (*DTYPES.values(), *ENUM_DTYPES.values())
                           if d.type_id is not None}

_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "bool_": "bool",
    **{short: full for full, short in SHORT_NAMES.items()},
}


def lookup(name: str) -> DType:
    """Return the DType for a name: ndd's (``"uint8"``, ``"float32"``), DALI's short names
    (``"u8"``, ``"i32"``, ``"f32"``, ``"bool"``, ``"bfloat16"``, ``"DataType"``), DALI's enum
    names (``"UINT8"``, ``"FLOAT"``) and ``"float"`` / ``"double"`` / ``"half"``.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.
    """
    key = name.strip()
    if key in DTYPES:
        return DTYPES[key]
    if key in ENUM_DTYPES:
        return ENUM_DTYPES[key]
    if key in _ALIASES:
        return DTYPES[_ALIASES[key]]
    if key.upper() in BY_DALI_NAME:
        return BY_DALI_NAME[key.upper()]
    low = key.lower()
    if low in DTYPES:
        return DTYPES[low]
    if low in _ALIASES:
        return DTYPES[_ALIASES[low]]
    raise ValueError(
        f"unknown dtype {name!r}; expected one of {', '.join(DTYPES)} (or DALI's names "
        f"{', '.join(SHORT_NAMES.values())}, DataType, ImageType, InterpType)")


@dataclass(frozen=True, init=False)
class Device:
    """A device (``ndd.Device``; DALI 2.4's ``Device(name, device_id=None)``).

    ``Device("cpu")``, ``Device("gpu")`` (ordinal 0), ``Device("gpu:1")``, ``Device("gpu", 1)``,
    ``Device("cuda:0")``. ``kind`` is ``"cpu"`` or ``"gpu"``; ``index`` the GPU ordinal (0 for
    the CPU). DALI's spellings: ``device_type`` and ``device_id`` (None for the CPU).

    Raises
    ------
    ValueError
        An unknown device type, a bad or negative ordinal, an ordinal for the CPU, or one given
        both in the name and as ``device_id``.
    """

    kind: str
    index: int

    def __init__(self, name: str, device_id: int | None = None):
        if not isinstance(name, str):
            raise TypeError(f"device must be a string such as 'cpu' or 'gpu:0', got {name!r}")
        text = name.strip().lower()
        kind, sep, idx = text.partition(":")
        if kind == "cuda":
            kind = "gpu"
        if kind == "mixed":
            raise ValueError("device='mixed' is a pipeline-mode concept; dynamic mode uses "
                             "device='gpu'")
        if kind not in ("cpu", "gpu"):
            raise ValueError(f"unknown device {name!r} (Invalid device type: {kind!r}); "
                             f"expected 'cpu', 'gpu' or 'gpu:<index>'")
        if sep:
            if not idx.isdigit():
                raise ValueError(f"Invalid device name: {name!r}; expected e.g. 'gpu:0'")
            if device_id is not None:
                raise ValueError(f"Invalid device name: {name!r}: the ordinal should not appear "
                                 f"in the name when device_id is given")
            device_id = int(idx)
        if device_id is not None:
            if isinstance(device_id, bool) or not isinstance(device_id, int):
                raise TypeError(f"device_id must be an int, got {device_id!r}")
            if device_id < 0:
                raise ValueError(f"Invalid device id: {device_id}")
            if kind == "cpu" and device_id != 0:
                raise ValueError(f"Invalid device id: {device_id} for device type: cpu; the CPU "
                                 f"has no ordinal")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "index", 0 if device_id is None else device_id)

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"gpu:{self.index}"

    def __repr__(self) -> str:
        return f"ndd.Device('{self}')"

    @property
    def device_type(self) -> str:
        """``"cpu"`` or ``"gpu"`` (DALI's name of :attr:`kind`)."""
        return self.kind

    @property
    def device_id(self) -> int | None:
        """The GPU ordinal; None for the CPU (as DALI)."""
        return None if self.kind == "cpu" else self.index


def parse_device(spec, device_id: int | None = None) -> Device:
    """A :class:`Device` from ``"cpu"``, ``"gpu"``, ``"gpu:1"``, ``"cuda:0"``, a Device, or a
    ``torch.device`` (recognised by its type's name); ``device_id`` as in :class:`Device`.

    Raises
    ------
    ValueError
        For anything else (``"mixed"`` gets a hint: dynamic mode uses ``"gpu"``), or a
        ``device_id`` together with a Device / torch.device.
    TypeError
        For a spec that is not a string, Device or torch.device.
    """
    if isinstance(spec, Device):
        if device_id is not None:
            raise ValueError("Cannot specify id when passing a Device instance")
        return spec
    cls = type(spec)
    if cls.__module__ == "torch" and cls.__name__ == "device":
        if device_id is not None:
            raise ValueError("Cannot specify id when passing a torch.device")
        return Device("gpu" if spec.type == "cuda" else spec.type, spec.index)
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'gpu:0', got {spec!r}")
    return Device(spec, device_id)


CPU = Device("cpu")
Device.CPU = CPU
