"""Read-only memory maps of a reader's data files (TFRecord, RecordIO, tar shards), as DALI's
readers use them by default (``dont_use_mmap=False``).

A record is then a slice of the map: no ``pread`` into a fresh buffer per record, no copy
for a parser to look at it, one copy for the output array. A file is mapped when a batch
first needs it and stays mapped while it does not change; at most :data:`MAX_OPEN` files at
a time, the least recently used unmapped first (each map holds a file descriptor).
"""
from __future__ import annotations

import mmap
import os
import threading
from collections import OrderedDict

import numpy as np

__all__ = ["MappedFiles", "MAX_OPEN"]

#: files mapped at once per reader
MAX_OPEN = 64


class MappedFiles:
    """The files of ``paths``, mapped on demand.

    Parameters
    ----------
    paths : sequence of str
    limit : int, default :data:`MAX_OPEN`
        Maps kept at once.
    """

    def __init__(self, paths, limit=MAX_OPEN):
        self.paths = list(paths)
        self._limit = max(1, int(limit))
        self._maps = OrderedDict()      # file number -> (identity, array)
        self._generation = {}
        self._lock = threading.Lock()

    def get(self, i: int) -> np.ndarray:
        """The bytes of file ``i``: uint8, shape (file size,), read-only (a view of its map;
        an empty file: an empty array). A file replaced or resized since it was mapped (its
        inode, size or modification time changed; one ``stat`` a call) is mapped again, so
        a file cut short is read as such (a clear error), not through a stale map (SIGBUS).

        Raises
        ------
        OSError
            The file cannot be opened or mapped (the caller names its reader).
        """
        ident = _identity(os.stat(self.paths[i]))
        with self._lock:
            entry = self._maps.get(i)
            if entry is not None and entry[0] == ident:
                self._maps.move_to_end(i)
                return entry[1]
        fd = os.open(self.paths[i], os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            arr = np.frombuffer(mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ),
                                np.uint8) if st.st_size else np.zeros(0, np.uint8)
        finally:
            os.close(fd)            # the map keeps its own descriptor
        with self._lock:
            self._maps[i] = (_identity(st), arr)
            self._maps.move_to_end(i)
            self._generation[i] = self._generation.get(i, 0) + 1
            while len(self._maps) > self._limit:
                self._maps.popitem(last=False)   # unmapped once no slice of it is alive
        return arr

    def generation(self, i: int) -> int:
        """How many times file ``i`` was mapped (a new map: results cached about its
        contents, such as checked CRCs, are stale)."""
        return self._generation.get(i, 0)

    def clear(self) -> None:
        """Drop every map (each is unmapped once no array viewing it is left)."""
        with self._lock:
            self._maps.clear()


def _identity(st):
    return st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns
