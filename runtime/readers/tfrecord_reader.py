"""Runtime core of ``ndd.readers.TFRecord`` (DALI's ``fn.readers.tfrecord``).

A :class:`~runtime.readers.file_reader.FileReaderCore` whose samples are the records of a
list of TFRecord files (in file order, then record order, as the index files list them),
and whose loader reads each record (both CRCs checked), decodes its ``tf.train.Example``
(``runtime/readers/tfrecord.py``) and extracts the described features.

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

from runtime.readers.file_index import FileIndex
from runtime.readers.file_io import path_list
from runtime.readers.file_reader import FileReaderCore
from runtime.readers.tfrecord import BYTES, FLOAT, INT64, parse_example, read_index, \
    read_record

__all__ = ["Feature", "TFRecordReaderCore", "STATE_FORMAT", "extract_feature"]

STATE_FORMAT = "ndd.readers.TFRecord/1"
_TYPES = {0: ("int64", INT64), 1: ("string", BYTES), 2: ("float32", FLOAT)}


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
        if self.dtype not in _TYPES or isinstance(self.dtype, bool):
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
        return (f"{kind}(shape={self.shape}, dtype={_TYPES[self.dtype][0]}, "
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
    type_name, kind = _TYPES[feat.dtype]
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


def _is_dali_feature(f) -> bool:
    """A ``nvidia.dali.tfrecord`` Feature (recognised by its type's name; DALI not
    imported)."""
    t = type(f)
    return t.__name__ == "Feature" and t.__module__.startswith("nvidia.dali")



class TFRecordReaderCore(FileReaderCore):
    """Reads the described features of every record of TFRecord files.

    Parameters
    ----------
    path : str or list of str
        TFRecord files.
    index_path : str or list of str
        One DALI index file (``ndd tfrecord-index``) per TFRecord file.
    features : dict of str -> Feature
    dont_use_mmap, use_o_direct : bool
        Accepted for compatibility (records are read with ``pread``).
    **kwargs
        Sharding, shuffling, padding, prefetching: those of ``FileReaderCore``.
    """

    kind = "TFRecord reader"
    state_format = STATE_FORMAT

    def __init__(self, *, path=None, index_path=None, features=None, dont_use_mmap=False,
                 use_o_direct=False, lazy_init=False, defer_shard_check=False, **kwargs):
        self.paths = path_list(path, "path", "readers.TFRecord")
        self.index_paths = path_list(index_path, "index_path", "readers.TFRecord")
        if len(self.paths) != len(self.index_paths):
            raise ValueError(f"readers.TFRecord: {len(self.paths)} TFRecord file(s) but "
                             f"{len(self.index_paths)} index file(s); expected one index per "
                             f"file")
        if not isinstance(features, dict) or not features:
            raise ValueError(f"readers.TFRecord: `features` must be a non-empty dict of "
                             f"name -> ndd.tfrecord.FixedLenFeature/VarLenFeature; got "
                             f"{features!r:.100}")
        features = {k: Feature.as_stored() if _is_dali_feature(f) else f
                    for k, f in features.items()}
        for k, f in features.items():
            if not isinstance(k, str) or not isinstance(f, Feature):
                raise TypeError(f"readers.TFRecord: `features` maps names to ndd.tfrecord "
                                f"features; got {k!r}: {f!r:.80}")
        #: output names, in DALI's order (that of ``features``)
        self.features = dict(features)
        super().__init__(lazy_init=True, **kwargs)
        self._records = None
        self.list_now(lazy_init, defer_shard_check)

    def build_index(self):
        recs, names = [], []
        for fi, (p, ip) in enumerate(zip(self.paths, self.index_paths)):
            for off, size in read_index(ip, p):
                recs.append((fi, off, size))
                names.append(f"{p}@{off}")
        if not recs:
            raise ValueError(f"readers.TFRecord: the index files {self.index_paths} list no "
                             f"records")
        self._records = recs
        return FileIndex(tuple(names), np.zeros(len(names), np.int32),
                         f"TFRecord files {self.paths}")

    def make_loader(self, index, with_indices):
        records, paths, ipaths, feats = self._records, self.paths, self.index_paths, \
            self.features

        def load(indices):
            outs = {k: [] for k in feats}
            fds = {}
            try:
                for i in indices.tolist():
                    fi, off, size = records[i]
                    if fi not in fds:
                        try:
                            fds[fi] = os.open(paths[fi], os.O_RDONLY)
                        except OSError as e:
                            raise RuntimeError(f"TFRecord reader: cannot read {paths[fi]!r}: "
                                               f"{e.strerror or e}") from e
                    where = f"TFRecord {paths[fi]!r}, record at offset {off}"
                    try:
                        data = read_record(fds[fi], paths[fi], off, size, ipaths[fi])
                        try:
                            parsed = parse_example(data)
                        except (ValueError, UnicodeDecodeError) as e:
                            raise ValueError(f"{where}: not a valid tf.train.Example ({e})") \
                                from None
                        for k, f in feats.items():
                            outs[k].append(extract_feature(k, f, parsed, where))
                    except ValueError as e:   # DALI's readers raise RuntimeError
                        raise RuntimeError(str(e)) from e
            finally:
                for fd in fds.values():
                    os.close(fd)
            res = [outs[k] for k in feats]
            if with_indices:
                return res + [indices.tolist()]
            return tuple(res)

        return load
