"""The batch loader of ``ndd.readers.TFRecord`` on memory maps: the records of a batch
checked and their features located by one compiled call per file
(``tf_example_wire.py``), each feature's arrays then made for the whole batch at once.

Results equal those of the general path (``tfrecord_features.read_one`` per record) by
construction: a batch with a record the compiled call does not answer, a data CRC that does
not match, or a feature that needs :func:`~runtime.readers.tfrecord_features.
extract_feature`'s rules (missing, of another type, a count that does not fit its shape) is
read record by record in order, through ``read_one`` where the compiled call did not answer
(the same arrays, or the error of the first record that has one), through
``extract_feature`` on the located values otherwise.

Each record's data CRC is checked the first time the reader reads it, and again after its
file changed (``verified``; ``mapped.py`` maps a file again when its inode, size or
modification time change); the CRC of its length, its length against the index entry and
the wire format of its Example every time.
"""
from __future__ import annotations

import math
import os

import numpy as np

from runtime.readers.tf_example_wire import EMPTY, MISSING, name_table, parse_records
from runtime.readers.tf_example_wire import warm_up as build_parser
from runtime.readers.tfrecord import BYTES, CRC_TABLE, INT64, crc32c
from runtime.readers.tfrecord_features import TYPES, Feature, extract_feature, read_one

__all__ = ["batch_loader"]

_STORED, _BYTES, _FIXED, _VAR, _OTHER = range(5)


def _plan(j: int, name: str, feat: Feature):
    """How a feature is made for a batch: ``(j, name, feat, mode, kind, shape, values per
    sample)``; :data:`_OTHER`: always by ``extract_feature``."""
    if feat.dtype is None:
        return j, name, feat, _STORED, None, None, 0
    kind = TYPES[feat.dtype][1]
    if kind == BYTES:
        return j, name, feat, (_OTHER if feat.var_len else _BYTES), kind, None, 0
    if feat.var_len:
        m = math.prod(feat.shape) if feat.shape is not None else 1
        return j, name, feat, (_VAR if m else _OTHER), kind, feat.shape, m
    return j, name, feat, _FIXED, kind, feat.shape, math.prod(feat.shape)


def batch_loader(paths, index_paths, features, maps, records, verified, verified_at):
    """``indices -> [list of arrays per feature]`` (in the order of ``features``).

    Parameters
    ----------
    paths, index_paths : list of str
        The TFRecord files and their index files.
    features : dict of str -> Feature
    maps : runtime.readers.mapped.MappedFiles
        Of ``paths``.
    records : tuple of numpy.ndarray
        int64, shape (N,) each: every record's file number, offset and framed size.
    verified : numpy.ndarray
        bool, shape (N,): records whose data CRC was checked (updated here).
    verified_at : dict
        File number -> the map generation (``maps.generation``) ``verified`` holds for it
        (updated here).

    Returns
    -------
    callable or None
        None where numba is not available (the caller reads record by record).
    """
    try:
        build_parser()
    except ImportError:
        return None
    rec_file, rec_off, rec_size = records
    names = name_table(list(features))
    plans = [_plan(j, k, f) for j, (k, f) in enumerate(features.items())]

    def one_file(fi, idx):
        try:
            buf = maps.get(fi)
        except OSError as e:
            raise RuntimeError(f"TFRecord reader: cannot read {paths[fi]!r}: "
                               f"{e.strerror or e}") from e
        offs, sizes = rec_off[idx], rec_size[idx]
        gen = maps.generation(fi)
        if verified_at.get(fi, gen) != gen:     # the file changed: check its CRCs again
            verified[rec_file == fi] = False
        verified_at[fi] = gen
        res = parse_records(buf, offs, sizes, names, CRC_TABLE)
        clean = not res[0].any()
        if clean:
            todo = np.flatnonzero(~verified[idx])
            for o, n, c in zip(offs[todo].tolist(), sizes[todo].tolist(),
                               res[6][todo].tolist()):
                if crc32c(buf[o + 12:o + n - 4]) != c:
                    clean = False
                    break
        return fi, offs, sizes, buf, res, clean

    def load(indices):
        files = rec_file[indices]
        if (files == files[0]).all():
            parts = [(int(files[0]), None)]
        else:       # one compiled call per file of the batch
            parts = [(int(fi), np.flatnonzero(files == fi)) for fi in np.unique(files)]
        done = [(where,) + one_file(fi, indices if where is None else indices[where])
                for fi, where in parts]
        if all(d[-1] for d in done):
            outs = _columns(done, plans, indices.size)
            if outs is not None:
                verified[indices] = True
                return outs
        return _rows(done, indices.size, plans, paths, index_paths, features)

    return load


def _columns(done, plans, size):
    """The feature arrays of a batch made feature by feature, or None."""
    outs = []
    for plan in plans:
        if len(done) == 1:
            col = _column(plan, done[0][4], done[0][5])
        else:
            col = [None] * size
            for where, _, _, _, buf, res, _ in done:
                part = _column(plan, buf, res)
                if part is None:
                    return None
                for b, a in zip(where.tolist(), part):
                    col[b] = a
        if col is None:
            return None
        outs.append(col)
    return outs


def _column(plan, buf, res):
    """One feature's arrays for the records of one compiled call; None where one of them
    needs ``extract_feature``'s rules on the row path (another type, a count that does not
    fit, a missing FixedLenFeature without a default: its error)."""
    k = res[1][:, plan[0]]
    gone = (k == MISSING) | (k == EMPTY)
    if not gone.any():
        return _present(plan, buf, res, None)
    name, feat, mode = plan[1:4]
    if mode == _OTHER or not (mode == _STORED or feat.var_len or plan[4] == BYTES or
                              feat.default_value is not None):
        return None                 # the missing feature's error, on the row path
    have = np.flatnonzero(~gone)
    part = _present(plan, buf, res, have) if have.size else []
    if part is None:
        return None
    # a missing feature: extract_feature's default (a fresh array each), no error possible
    out = [extract_feature(name, feat, {}, "") for _ in range(k.size)] if mode != _STORED \
        else [np.zeros(0, np.uint8) for _ in range(k.size)]
    for b, arr in zip(have.tolist(), part):
        out[b] = arr
    return out


def _present(plan, buf, res, rows):
    """:func:`_column` for the records ``rows`` (None: all), which hold the feature."""
    j, _, _, mode, want, shape, m = plan
    _, kind, first, last, count, at, _, ivals, fvals = res
    sel = slice(None) if rows is None else rows
    k = kind[sel, j]
    if mode == _STORED:
        k0 = int(k[0])
        if not (k == k0).all():
            return None
        mode, want = (_BYTES, BYTES) if k0 == BYTES else (_VAR, k0)
    if mode == _OTHER or not (k == want).all():
        return None
    if mode == _BYTES:      # the first value (none: empty)
        return [buf[a:b].copy() for a, b in zip(first[sel, j].tolist(), last[sel, j].tolist())]
    vals = ivals if want == INT64 else fvals
    c, a = count[sel, j], at[sel, j]
    if mode == _FIXED:
        if not (c == m).all():
            return None
        g = vals[a[:, None] + np.arange(m)].reshape((k.size,) + shape)
        return list(g) if shape else [g[b, ...] for b in range(k.size)]
    if shape is None:
        return [vals[s:s + n] for s, n in zip(a.tolist(), c.tolist())]
    if (c % m).any():
        return None
    return [vals[s:s + n].reshape((n // m,) + shape) for s, n in zip(a.tolist(), c.tolist())]


def _rows(done, size, plans, paths, index_paths, features):
    """The feature arrays of a batch made record by record, in batch order (the errors of
    the first record that has one)."""
    slots = [None] * size
    for where, fi, offs, sizes, buf, res, _ in done:
        rows = range(offs.size) if where is None else where.tolist()
        for row, b in enumerate(rows):
            slots[b] = (fi, int(offs[row]), int(sizes[row]), buf, res, row)
    outs = [[] for _ in plans]
    fds = {}
    try:
        for fi, off, size, buf, res, row in slots:
            if res[0][row] or crc32c(buf[off + 12:off + size - 4]) != res[6][row]:
                arrays = read_one(fds, paths[fi], off, size, index_paths[fi], features, fi)
            else:
                arrays = [_cell(plan, buf, res, row, f"TFRecord {paths[fi]!r}, record at "
                                f"offset {off}") for plan in plans]
            for col, a in zip(outs, arrays):
                col.append(a)
    finally:
        for fd in fds.values():
            os.close(fd)
    return outs


def _cell(plan, buf, res, row, where):
    """One feature of one located record, by ``extract_feature``."""
    j, name, feat = plan[:3]
    _, kind, first, last, count, at, _, ivals, fvals = res
    k, c = int(kind[row, j]), int(count[row, j])
    if k == MISSING:
        parsed = {}
    elif k == EMPTY:
        parsed = {name: (None, [])}
    elif k == BYTES:
        parsed = {name: (BYTES, [bytes(buf[first[row, j]:last[row, j]])] if c else [])}
    else:
        a = int(at[row, j])
        parsed = {name: (k, (ivals if k == INT64 else fvals)[a:a + c])}
    try:
        return extract_feature(name, feat, parsed, where)
    except ValueError as e:     # DALI's readers raise RuntimeError
        raise RuntimeError(str(e)) from e

