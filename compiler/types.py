"""Element types and devices as the compiler sees them: plain metadata, no array library.

The names and numeric ids follow DALI's ``DALIDataType`` enumeration so that
``ndd.types.FLOAT`` and ``ndd.float32`` denote the same thing.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    """An element type.

    Attributes
    ----------
    name : str
        The numpy-style name (``"uint8"``, ``"float32"``, ``"bool"``...).
    type_id : int
        DALI's ``DALIDataType`` value.
    itemsize : int
        Bytes per element.
    kind : str
        ``"b"`` (bool), ``"i"`` (signed int), ``"u"`` (unsigned int), ``"f"`` (float).
    dali_name : str
        DALI's enum name (``"UINT8"``, ``"FLOAT"``...).
    """

    name: str
    type_id: int
    itemsize: int
    kind: str
    dali_name: str

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("i", "u")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("i", "f")

    def __repr__(self) -> str:
        return f"ndd.{self.name}"

    def __str__(self) -> str:
        return self.name


_TABLE = [
    # name, DALIDataType id (DALI 2.4), itemsize, kind, DALI enum name
    ("uint8", 0, 1, "u", "UINT8"),
    ("uint16", 1, 2, "u", "UINT16"),
    ("uint32", 2, 4, "u", "UINT32"),
    ("uint64", 3, 8, "u", "UINT64"),
    ("int8", 4, 1, "i", "INT8"),
    ("int16", 5, 2, "i", "INT16"),
    ("int32", 6, 4, "i", "INT32"),
    ("int64", 7, 8, "i", "INT64"),
    ("float16", 8, 2, "f", "FLOAT16"),
    ("float32", 9, 4, "f", "FLOAT"),
    ("float64", 10, 8, "f", "FLOAT64"),
    ("bool", 11, 1, "b", "BOOL"),
    ("bfloat16", 25, 2, "f", "BFLOAT16"),   # not in DALI 2.4's enum; id chosen by ndd
]

DTYPES: dict[str, DType] = {row[0]: DType(*row) for row in _TABLE}
BY_DALI_NAME: dict[str, DType] = {d.dali_name: d for d in DTYPES.values()}
BY_ID: dict[int, DType] = {d.type_id: d for d in DTYPES.values()}

_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16",
    "f4": "float32", "f8": "float64", "f2": "float16", "u1": "uint8", "i4": "int32",
    "i8": "int64", "u2": "uint16", "i2": "int16", "i1": "int8", "u4": "uint32", "u8": "uint64",
    "b1": "bool", "bool_": "bool",
}


def lookup(name: str) -> DType:
    """Return the DType for a name (``"uint8"``, ``"UINT8"``, ``"FLOAT"``, ``"float"``).

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.
    """
    key = name.strip()
    if key in DTYPES:
        return DTYPES[key]
    if key.upper() in BY_DALI_NAME:
        return BY_DALI_NAME[key.upper()]
    low = key.lower()
    if low in DTYPES:
        return DTYPES[low]
    if low in _ALIASES:
        return DTYPES[_ALIASES[low]]
    raise ValueError(
        f"unknown dtype {name!r}; expected one of {', '.join(DTYPES)}")


@dataclass(frozen=True)
class Device:
    """A device: ``kind`` is ``"cpu"`` or ``"gpu"``; ``index`` is the GPU ordinal (0 for cpu)."""

    kind: str
    index: int = 0

    def __str__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"gpu:{self.index}"

    def __repr__(self) -> str:
        return f"ndd.Device('{self}')"

    @property
    def device_type(self) -> str:
        return self.kind

    @property
    def device_id(self) -> int:
        return self.index


def parse_device(spec) -> Device:
    """Parse ``"cpu"``, ``"gpu"``, ``"gpu:1"``, ``"cuda:0"`` or a Device.

    Raises
    ------
    ValueError
        For anything else (``"mixed"`` gets a hint: dynamic mode uses ``"gpu"``).
    """
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'gpu:0', got {spec!r}")
    text = spec.strip().lower()
    if text == "mixed":
        raise ValueError("device='mixed' is a pipeline-mode concept; dynamic mode uses device='gpu'")
    kind, _, idx = text.partition(":")
    if kind == "cuda":
        kind = "gpu"
    if kind not in ("cpu", "gpu"):
        raise ValueError(f"unknown device {spec!r}; expected 'cpu', 'gpu' or 'gpu:<index>'")
    if idx:
        if not idx.isdigit():
            raise ValueError(f"bad device index in {spec!r}; expected e.g. 'gpu:0'")
        index = int(idx)
    else:
        index = 0
    if kind == "cpu" and index != 0:
        raise ValueError(f"bad device {spec!r}: the CPU has no index other than 0")
    return Device(kind, index)


CPU = Device("cpu")
