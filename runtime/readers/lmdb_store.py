"""Read-only access to the records of LMDB databases (the ``lmdb`` binding), for
``readers.Caffe`` and ``readers.Caffe2``.

Samples are the records of every database of ``paths``, one database after another, each in
its key order (LMDB keeps keys sorted bytewise; a cursor walks them in that order), as DALI's
LMDB loader reads them. A sample's name is ``"<path> at key <key>"`` (DALI's source info).
"""
from __future__ import annotations

import os
import threading
import weakref

import lmdb

__all__ = ["LMDBStore", "key_text"]

# The ``lmdb`` binding opens an environment once per process: readers over the same database
# share it (counted; closed when the last of them goes).
_SHARED = {}
_SHARED_LOCK = threading.Lock()


def _acquire(path, who):
    real = os.path.realpath(path)
    with _SHARED_LOCK:
        entry = _SHARED.get(real)
        if entry is None:
            if not os.path.exists(path):
                raise ValueError(f"{who}: LMDB database {path!r} does not exist")
            try:
                env = lmdb.open(path, readonly=True, lock=False, readahead=False,
                                subdir=os.path.isdir(path), max_readers=512)
            except lmdb.Error as e:
                raise ValueError(f"{who}: {path!r} cannot be opened as an LMDB database: "
                                 f"{e}") from None
            entry = _SHARED[real] = [env, 0]
        entry[1] += 1
        return real, entry[0]


def _release(txns, reals, read_lock):
    with read_lock:             # not while a read looks at the transactions' buffers
        for txn in txns:
            txn.abort()
        txns.clear()
    with _SHARED_LOCK:
        for real in reals:
            entry = _SHARED.get(real)
            if entry is None:
                continue
            entry[1] -= 1
            if entry[1] <= 0:
                del _SHARED[real]
                entry[0].close()


def key_text(key: bytes) -> str:
    """A record key as text for names and messages (UTF-8, undecodable bytes escaped)."""
    return bytes(key).decode("utf-8", "backslashreplace")


class LMDBStore:
    """The records of LMDB databases, listed once and read by position.

    Parameters
    ----------
    paths : list of str
        LMDB environments: folders holding ``data.mdb`` (DALI's form), or ``.mdb`` files
        themselves (opened with ``subdir=False``; an ndd extension).
    who : str
        The reader's name in messages (``"readers.Caffe"``).

    Raises
    ------
    ValueError
        A path that does not exist or is not an LMDB database, or databases holding no
        record at all (naming the paths).
    """

    def __init__(self, paths, who: str):
        self.paths = list(paths)
        self.who = who
        self._envs, reals = [], []
        # one read transaction per database, kept open: beginning one costs ~0.4 ms here
        # (13 us a record in batches of 32, against 4 us for the read itself), and it reads
        # the snapshot the keys were listed from
        self._txns = []
        self._read_lock = threading.Lock()
        self._release = weakref.finalize(self, _release, self._txns, reals, self._read_lock)
        self.keys = []          # per database: list of bytes keys, sorted
        for p in self.paths:
            real, env = _acquire(p, who)
            reals.append(real)
            self._envs.append(env)
            try:
                # buffers: values are views of the map (no copy), valid while the transaction
                # is; they never leave read_with, under the read lock
                txn = env.begin(buffers=True)
            except lmdb.Error as e:
                self.close()
                raise ValueError(f"{who}: {p!r} cannot be read as an LMDB database: "
                                 f"{e}") from None
            self._txns.append(txn)
            self.keys.append([bytes(k) for k in txn.cursor().iternext(keys=True,
                                                                        values=False)])
        if not any(self.keys):
            self.close()
            raise ValueError(f"{who}: the LMDB database(s) {self.paths} hold no records")

    def records(self):
        """``[(database index, key)]`` of every record, in reading order."""
        return [(i, k) for i, keys in enumerate(self.keys) for k in keys]

    def name(self, db: int, key: bytes) -> str:
        """DALI's source info of a record: ``"<path> at key <key>"``."""
        return f"{self.paths[db]} at key {key_text(key)}"

    def read(self, wanted):
        """The values (bytes) of records ``[(database index, key)]``, in that order.

        Raises
        ------
        RuntimeError
            A key that is no longer in its database (the database changed since it was
            listed), or an LMDB error, naming the database and the key.
        """
        return self.read_with(wanted, lambda values: [bytes(v) for v in values])

    def read_with(self, wanted, use):
        """``use(values)`` of the values of records ``[(database index, key)]``, in that
        order, as read-only memoryviews of the databases' maps: valid only during the call
        (``use`` copies what it keeps), which holds the store's read lock.

        Raises
        ------
        RuntimeError
            As :meth:`read`.
        """
        with self._read_lock:       # a transaction serves one thread at a time
            if not self._txns:
                raise RuntimeError(f"{self.who}: the LMDB databases {self.paths} were closed")
            return use(self._values(wanted))

    def _values(self, wanted):
        if len(self._txns) == 1:        # one database: one list of look-ups
            get = self._txns[0].get
            try:
                out = [get(key) for _, key in wanted]
            except lmdb.Error as e:
                raise RuntimeError(f"{self.who}: reading LMDB database "
                                   f"{self.paths[0]!r} failed: {e}") from None
            if None not in out:
                return out
            j = out.index(None)
            raise RuntimeError(f"{self.who}: record {self.name(0, wanted[j][1])} is "
                               f"missing from the database")
        out = [None] * len(wanted)
        by_db = {}
        for j, (db, key) in enumerate(wanted):
            by_db.setdefault(db, []).append((j, key))
        for db, items in by_db.items():
            txn = self._txns[db]
            try:
                for j, key in items:
                    value = txn.get(key)
                    if value is None:
                        raise RuntimeError(
                            f"{self.who}: record {self.name(db, key)} is missing from "
                            f"the database")
                    out[j] = value
            except lmdb.Error as e:
                raise RuntimeError(f"{self.who}: reading LMDB database "
                                   f"{self.paths[db]!r} failed: {e}") from None
        return out

    def close(self):
        """Let go of the environments (closed once no other reader uses them); no read
        afterwards."""
        self._release()
