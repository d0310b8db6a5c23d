"""``tf.train.Example`` features as ``ndd.readers.TFRecord`` outputs them: the feature
descriptions (:class:`Feature`, behind ``ndd.tfrecord``), one feature's array from a decoded
Example (:func:`extract_feature`), and one record read, checked and decoded by the general
path (:func:`read_one`: ``pread``, both CRCs, ``google.protobuf``).

Feature semantics (DALI 2.4, observed): ``int64`` -> int64, ``float32`` -> float32,
``string`` -> uint8 (the bytes of the first value). A FixedLenFeature has its ``shape``
(``[]``: a scalar); a VarLenFeature is 1-D, or ``(n // prod(p),) + p`` with a
``partial_shape`` ``p``. Differences (``docs/semantics.md``): where DALI returns
uninitialized memory (a missing feature, a FixedLenFeature with too few values, a value
type other than the declared one), ndd uses ``default_value`` (a missing FixedLenFeature),
returns an empty array (a missing VarLenFeature) or raises naming the file and offset.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from runtime.readers.tfrecord import BYTES, FLOAT, INT64, parse_example, read_record

__all__ = ["Feature", "TYPES", "extract_feature", "read_one"]

#: ``ndd.tfrecord`` dtype constant -> (output dtype name, the Feature kind that holds it)
TYPES = {0: ("int64", INT64), 1: ("string", BYTES), 2: ("float32", FLOAT)}


@dataclass(frozen=True)
class Feature:
    """One feature description (``ndd.tfrecord.FixedLenFeature`` / ``VarLenFeature``).

    Attributes
    ----------
    var_len : bool
    shape : tuple of int or None
        FixedLen: the output shape; VarLen: the partial shape (None: 1-D).
    dtype : int or None
        0 int64, 1 string, 2 float32 (``ndd.tfrecord``'s constants); None: read as the record
        holds it (:meth:`as_stored`).
    default_value : scalar or None
    """

    var_len: bool
    shape: tuple | None
    dtype: int
    default_value: object = None

    @classmethod
    def as_stored(cls):
        """A feature read as the record holds it: int64 or float32 values as a 1-D array,
        strings as the first value's bytes (missing: an empty uint8 array). For feature
        descriptions whose fields cannot be read (DALI's own ``Feature`` objects are opaque
        outside DALI's C++ code)."""
        return cls(True, None, None, None)

    def __post_init__(self):
        if self.dtype is None and self.var_len and self.shape is None:
            return
        if self.dtype not in TYPES or isinstance(self.dtype, bool):
            raise TypeError(f"tfrecord feature dtype must be ndd.tfrecord.int64, string or "
                            f"float32 (0, 1, 2); got {self.dtype!r}")
        if self.shape is not None:
            try:
                shape = tuple(int(s) for s in self.shape)
            except TypeError:
                raise TypeError(f"tfrecord feature shape must be a sequence of ints; got "
                                f"{self.shape!r}") from None
            if any(s < 0 for s in shape):
                raise ValueError(f"tfrecord feature shape {list(shape)} has a negative extent")
            object.__setattr__(self, "shape", shape)

    def __repr__(self):
        if self.dtype is None:
            return "Feature.as_stored()"
        kind = "VarLenFeature" if self.var_len else "FixedLenFeature"
        return (f"{kind}(shape={self.shape}, dtype={TYPES[self.dtype][0]}, "
                f"default_value={self.default_value!r})")


def extract_feature(name, feat: Feature, parsed: dict, where: str):
    """The array of feature ``name`` of a decoded Example (see the module docstring).

    Raises
    ------
    ValueError
        A value type other than the declared one, or a value count that does not fit the
        shape (naming ``where``: the file and offset).
    """
    got_kind, values = parsed.get(name, (None, []))
    if feat.dtype is None:      # as stored
        if got_kind is None:
            return np.zeros(0, np.uint8)
        if got_kind == BYTES:
            return np.frombuffer(values[0] if values else b"", np.uint8).copy()
        return np.asarray(values, np.float32 if got_kind == FLOAT else np.int64)
    type_name, kind = TYPES[feat.dtype]
    if name not in parsed or got_kind is None:
        if feat.var_len:
            return np.zeros((0,) + (feat.shape or ()), np.uint8 if kind == BYTES else type_name)
        if kind == BYTES:
            d = feat.default_value if feat.default_value is not None else b""
            return np.frombuffer(d.encode() if isinstance(d, str) else bytes(d),
                                 np.uint8).copy()
        if feat.default_value is None:
            raise ValueError(f"{where}: the record has no feature {name!r} and its "
                             f"FixedLenFeature has no default_value")
        return np.full(feat.shape, feat.default_value, type_name)
    if got_kind != kind:
        names = {BYTES: "bytes_list (string)", FLOAT: "float_list (float32)",
                 INT64: "int64_list (int64)"}
        raise ValueError(f"{where}: feature {name!r} holds a {names[got_kind]}, but is "
                         f"described as {type_name}")
    if kind == BYTES:
        if feat.var_len:
            raise ValueError(f"{where}: VarLenFeature of strings (feature {name!r}) is not "
                             f"supported (DALI: 'Tensors of strings are not supported')")
        return np.frombuffer(values[0] if values else b"", np.uint8).copy()
    arr = np.asarray(values, dtype=type_name)
    if feat.var_len:
        if feat.shape is None:
            return arr
        m = math.prod(feat.shape)
        if m == 0 or arr.size % m:
            raise ValueError(f"{where}: feature {name!r} has {arr.size} values, not a "
                             f"multiple of the partial shape {list(feat.shape)}")
        return arr.reshape((arr.size // m,) + feat.shape)
    need = math.prod(feat.shape)   # math.prod: np.prod costs ~9 us a call
    if arr.size != need:
        raise ValueError(f"{where}: feature {name!r} has {arr.size} value(s), its "
                         f"FixedLenFeature shape {list(feat.shape)} needs {need}")
    return arr.reshape(feat.shape)


def read_one(fds, path, off, size, index_path, feats, key):
    """The features of one record read with ``pread`` (``fds``: open descriptors by
    ``key``): both CRCs checked, the Example parsed by ``google.protobuf`` (the hand parser
    for the error of a malformed one).

    Raises
    ------
    RuntimeError
        Naming the file and the record's offset: a corrupt record, an index entry that does
        not match the file, a malformed Example, a feature that does not fit its description.
    """
    if key not in fds:
        try:
            fds[key] = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise RuntimeError(f"TFRecord reader: cannot read {path!r}: "
                               f"{e.strerror or e}") from e
    where = f"TFRecord {path!r}, record at offset {off}"
    try:
        data = read_record(fds[key], path, off, size, index_path)
        try:
            parsed = parse_example(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"{where}: not a valid tf.train.Example ({e})") from None
        return [extract_feature(k, f, parsed, where) for k, f in feats.items()]
    except ValueError as e:   # DALI's readers raise RuntimeError
        raise RuntimeError(str(e)) from e
