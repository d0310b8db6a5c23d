"""Runtime core of ``ndd.readers.TFRecord`` (DALI's ``fn.readers.tfrecord``).

A :class:`~runtime.readers.file_reader.FileReaderCore` whose samples are the records of a
list of TFRecord files (in file order, then record order, as the index files list them).
Its loader reads a batch from memory maps of the files (``tfrecord_fast.py``: one compiled
pass per file checks the framing and locates the features), or with
``dont_use_mmap=True`` record by record with ``pread`` (``tfrecord_features.read_one``:
both CRCs, ``google.protobuf``); both give the same arrays and the same errors. The feature
descriptions and their semantics: ``tfrecord_features.py``.
"""
from __future__ import annotations

import os

import numpy as np

from runtime.readers.file_index import FileIndex
from runtime.readers.file_io import path_list
from runtime.readers.file_reader import FileReaderCore
from runtime.readers.mapped import MappedFiles
from runtime.readers.tfrecord import read_index
from runtime.readers.tfrecord_fast import batch_loader
from runtime.readers.tfrecord_features import Feature, extract_feature, read_one

__all__ = ["Feature", "TFRecordReaderCore", "STATE_FORMAT", "extract_feature"]

STATE_FORMAT = "ndd.readers.TFRecord/1"


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
    dont_use_mmap : bool, default False
        Read records with ``pread`` one by one instead of from memory maps of the files (as
        DALI; the same results).
    use_o_direct : bool
        Accepted for compatibility.
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
        #: records are read with ``pread`` (the per-record path) instead of from memory maps
        self.dont_use_mmap = bool(dont_use_mmap)
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
        table = np.array(recs, np.int64).reshape(-1, 3)
        #: (file number, offset, framed size) of every record, int64 arrays
        self._record_table = (table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy())
        self._maps = MappedFiles(self.paths)
        self._verified = np.zeros(len(recs), bool)     # data CRC checked (tfrecord_fast)
        self._verified_at = {}
        return FileIndex(tuple(names), np.zeros(len(names), np.int32),
                         f"TFRecord files {self.paths}")

    def make_loader(self, index, with_indices):
        records, paths, ipaths, feats = self._records, self.paths, self.index_paths, \
            self.features
        fast = None if self.dont_use_mmap else batch_loader(
            paths, ipaths, feats, self._maps, self._record_table, self._verified,
            self._verified_at)

        def load(indices):
            if fast is not None:
                res = fast(indices)
            else:
                outs = [[] for _ in feats]
                fds = {}
                try:
                    for i in indices.tolist():
                        fi, off, size = records[i]
                        for k, a in enumerate(read_one(fds, paths[fi], off, size, ipaths[fi],
                                                       feats, fi)):
                            outs[k].append(a)
                finally:
                    for fd in fds.values():
                        os.close(fd)
                res = outs
            if with_indices:
                return res + [indices.tolist()]
            return tuple(res)

        return load
