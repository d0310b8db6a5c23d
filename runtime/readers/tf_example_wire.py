"""A batch of TFRecord records checked and their ``tf.train.Example`` features located in
one compiled pass: the fast path of ``ndd.readers.TFRecord`` (``tfrecord_reader.py``).

:func:`parse_records` walks, for each record of a batch (all in one buffer: a memory map of
one TFRecord file), the framing (the length against the index entry, the masked CRC-32C of
the length) and the wire format of its Example (``tfrecord.py`` describes both), and gives,
for each requested feature name, its kind, where its values lie in the buffer, how many
there are, and the numeric values decoded (int64 varints, float32 bits).

It accepts only the form every protobuf writer produces -- one ``features`` field, map
entries of a key then a value, each Feature holding at most one value list, only the fields
of ``feature.proto``, one-byte tags, ASCII keys, a requested name at most once -- and
validates all of it, requested or not (lengths inside their message, packed runs ending on
a value, varints of at most 10 bytes). Anything else marks the record for the general path
(``google.protobuf``, then the hand-written parser for the error), so both paths give the
same result wherever the fast one answers. The CRC of the data is left to the caller
(Google's ``google_crc32c``, hardware-accelerated).
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.cpu.jit import compiled

__all__ = ["parse_records", "name_table", "MISSING", "EMPTY", "FALLBACK", "warm_up"]

#: ``kind`` of a requested feature the record does not have
MISSING = -1
#: ``kind`` of a feature whose Feature message holds no value list
EMPTY = 0
#: ``status`` of a record the fast path does not answer (the general path reads it)
FALLBACK = 1


def _varint(buf, p, end):
    """``(value as uint64, next position)``; position -1: truncated, over 10 bytes, or a
    10th byte over 1 (bits past the 64th)."""
    result = np.uint64(0)
    shift = np.uint64(0)
    while True:
        if p >= end:
            return np.uint64(0), -1
        b = buf[p]
        p += 1
        if shift == np.uint64(63) and b > 1:
            return np.uint64(0), -1
        result |= np.uint64(b & 0x7F) << shift
        if b < 0x80:
            return result, p
        shift += np.uint64(7)


def _length(buf, p, end):
    """A length prefix at ``p``: ``(n, start of the payload)`` with the payload inside
    ``end``, else ``(0, -1)``."""
    v, q = _varint(buf, p, end)
    if q < 0 or (v >> np.uint64(40)) != np.uint64(0):
        return 0, -1
    n = np.int64(v)
    if n > end - q:
        return 0, -1
    return n, q


def _value_list(buf, fk, ls, le):
    """Check the value list of kind ``fk`` in ``[ls, le)``: ``(count, start and length
    of the first bytes value)``; count -1: malformed or another field."""
    q, cnt, b0, bl = ls, 0, 0, 0
    while q < le:
        t = buf[q]
        if fk == 1 and t == 0x0A:                   # BytesList.value
            n, q = _length(buf, q + 1, le)
            if q < 0:
                return -1, 0, 0
            if cnt == 0:
                b0, bl = q, n
            q += n
            cnt += 1
        elif fk == 2 and t == 0x0A:                 # FloatList, packed
            n, q = _length(buf, q + 1, le)
            if q < 0 or n % 4:
                return -1, 0, 0
            cnt += n // 4
            q += n
        elif fk == 2 and t == 0x0D:                 # FloatList, one fixed32
            if q + 5 > le:
                return -1, 0, 0
            cnt += 1
            q += 5
        elif fk == 3 and t == 0x0A:                 # Int64List, packed
            n, q = _length(buf, q + 1, le)
            if q < 0:
                return -1, 0, 0
            pe = q + n
            while q < pe:
                v, q = _varint(buf, q, pe)
                if q < 0:
                    return -1, 0, 0
                cnt += 1
        elif fk == 3 and t == 0x08:                 # Int64List, one varint
            v, q = _varint(buf, q + 1, le)
            if q < 0:
                return -1, 0, 0
            cnt += 1
        else:
            return -1, 0, 0
    return cnt, b0, bl


def _example(buf, p, end, names, name_ends, kind, first, last, count):
    """Walk one Example in ``[p, end)``, filling the rows of the requested features;
    False where the fast path does not answer."""
    nf = name_ends.size - 1
    seen = 0
    while p < end:
        if buf[p] != 0x0A:                          # Example.features
            return False
        n, p = _length(buf, p + 1, end)
        if p < 0:
            return False
        seen += 1
        if seen > 1:
            return False
        fend = p + n
        while p < fend:
            if buf[p] != 0x0A:                      # Features.feature (map entry)
                return False
            n, p = _length(buf, p + 1, fend)
            if p < 0:
                return False
            eend = p + n
            if p >= eend or buf[p] != 0x0A:         # entry.key
                return False
            kl, p = _length(buf, p + 1, eend)
            if p < 0:
                return False
            ks = p
            p += kl
            for q in range(ks, p):
                if buf[q] >= 0x80:                  # UTF-8 checks: the general path
                    return False
            if p >= eend or buf[p] != 0x12:         # entry.value (a Feature)
                return False
            vl, p = _length(buf, p + 1, eend)
            if p < 0:
                return False
            vs = p
            p += vl
            if p != eend:
                return False
            fk, ls, le, cnt, b0, bl = 0, 0, 0, 0, 0, 0
            if vl > 0:
                t = buf[vs]
                if t == 0x0A:
                    fk = 1
                elif t == 0x12:
                    fk = 2
                elif t == 0x1A:
                    fk = 3
                else:
                    return False
                n, ls = _length(buf, vs + 1, p)
                if ls < 0:
                    return False
                le = ls + n
                if le != p:                         # a second field in the Feature
                    return False
                cnt, b0, bl = _value_list(buf, fk, ls, le)
                if cnt < 0:
                    return False
            for j in range(nf):
                ns, ne = name_ends[j], name_ends[j + 1]
                if ne - ns != kl:
                    continue
                same = True
                for q in range(kl):
                    if names[ns + q] != buf[ks + q]:
                        same = False
                        break
                if not same:
                    continue
                if kind[j] != -1:                   # the name twice
                    return False
                kind[j] = fk
                count[j] = cnt
                if fk == 1:
                    first[j], last[j] = b0, b0 + bl
                else:
                    first[j], last[j] = ls, le
                break
    return True


def _decode(buf, fk, ls, le, ivals, fbits, at):
    """The numbers of the (checked) value list in ``[ls, le)`` into ``ivals`` (kind 3) or
    ``fbits`` (kind 2, the float32 bits) from ``at``."""
    q = ls
    while q < le:
        t = buf[q]
        q += 1
        if t == 0x0D:
            pe = q + 4
        elif t == 0x08:
            v, q = _varint(buf, q, le)
            ivals[at] = np.int64(v)
            at += 1
            continue
        else:
            n, q = _length(buf, q, le)
            pe = q + n
        if fk == 3:
            while q < pe:
                v, q = _varint(buf, q, pe)
                ivals[at] = np.int64(v)
                at += 1
        else:
            while q < pe:
                fbits[at] = (np.uint32(buf[q]) | (np.uint32(buf[q + 1]) << 8) |
                             (np.uint32(buf[q + 2]) << 16) | (np.uint32(buf[q + 3]) << 24))
                at += 1
                q += 4
    return at


def _parse_batch(buf, offs, sizes, names, name_ends, table):
    """:func:`parse_records` compiled: the framing and Example of every record, then the
    numbers of the requested numeric features (two passes: count, then decode)."""
    nrec, nf, size = offs.size, name_ends.size - 1, buf.size
    status = np.zeros(nrec, np.int32)
    kind = np.full((nrec, nf), -1, np.int8)
    first = np.zeros((nrec, nf), np.int64)
    last = np.zeros((nrec, nf), np.int64)
    count = np.zeros((nrec, nf), np.int64)
    crc = np.zeros(nrec, np.int64)
    n_int, n_float = 0, 0
    for r in range(nrec):
        o, s = offs[r], sizes[r]
        if o < 0 or s < 16 or o > size - s:
            status[r] = 1
            continue
        n = np.int64(0)
        for k in range(8):
            n |= np.int64(buf[o + k]) << (8 * k)
        c = np.int64(0xFFFFFFFF)                    # the masked CRC-32C of the length
        for k in range(8):
            c = np.int64(table[(c ^ np.int64(buf[o + k])) & 0xFF]) ^ (c >> 8)
        c ^= 0xFFFFFFFF
        c = ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
        stored = np.int64(0)
        for k in range(4):
            stored |= np.int64(buf[o + 8 + k]) << (8 * k)
        if n != s - 16 or c != stored:
            status[r] = 1
            continue
        m = np.int64(0)                             # the data's CRC, unmasked
        for k in range(4):
            m |= np.int64(buf[o + 12 + n + k]) << (8 * k)
        m = (m - 0xA282EAD8) & 0xFFFFFFFF
        crc[r] = ((m << 15) | (m >> 17)) & 0xFFFFFFFF
        if not _example(buf, o + 12, o + 12 + n, names, name_ends, kind[r], first[r],
                       last[r], count[r]):
            status[r] = 1
            kind[r, :] = -1
            continue
        for j in range(nf):
            if kind[r, j] == 3:
                n_int += count[r, j]
            elif kind[r, j] == 2:
                n_float += count[r, j]
    ivals = np.empty(n_int, np.int64)
    fbits = np.empty(n_float, np.uint32)
    at = np.zeros((nrec, nf), np.int64)
    ai, af = 0, 0
    for r in range(nrec):
        for j in range(nf):
            fk = kind[r, j]
            if fk == 3:
                at[r, j] = ai
                ai = _decode(buf, 3, first[r, j], last[r, j], ivals, fbits, ai)
            elif fk == 2:
                at[r, j] = af
                af = _decode(buf, 2, first[r, j], last[r, j], ivals, fbits, af)
    return status, kind, first, last, count, at, crc, ivals, fbits


#: the functions above, compiled by :func:`_build` in this order (each calls the earlier
#: ones by their module-level name, so numba's cache keys stay those of their code: helpers
#: held in a closure would be pickled into the key, a new key in every process)
_KERNELS = ("_varint", "_length", "_value_list", "_example", "_decode", "_parse_batch")
_PYTHON = {name: globals()[name] for name in _KERNELS}


def _build(njit):
    """Compile :data:`_KERNELS` (each replaces its Python function in this module)."""
    g = globals()
    for name in _KERNELS:
        g[name] = njit(_PYTHON[name])
    return g["_parse_batch"]


_parse = compiled(_build)


def warm_up() -> None:
    """Set up the compiled parser (numba compiles it, or loads it from its cache, at the first
    call). Raises ImportError where numba is not installed."""
    _parse()


def name_table(names):
    """The requested feature names (str) for :func:`parse_records`: ``(bytes, ends)``, their
    UTF-8 bytes one after the other (uint8) and where each ends (int64, F + 1 entries)."""
    enc = [n.encode("utf-8") for n in names]
    ends = np.zeros(len(enc) + 1, np.int64)
    ends[1:] = np.cumsum([len(n) for n in enc])
    return np.frombuffer(b"".join(enc) or b"\0", np.uint8).copy(), ends


def parse_records(buf, offsets, sizes, names, table):
    """Check and locate the requested features of records of one buffer.

    Parameters
    ----------
    buf : numpy.ndarray
        uint8, 1-D: the bytes of a TFRecord file (a memory map).
    offsets, sizes : numpy.ndarray
        int64, shape (B,): each record's offset in ``buf`` and framed size (the index entry).
    names : tuple
        The F requested feature names, from :func:`name_table`.
    table : numpy.ndarray
        uint32, shape (256,): the CRC-32C byte table (``tfrecord.CRC_TABLE``).

    Returns
    -------
    status : numpy.ndarray
        int32 (B,): 0 answered, :data:`FALLBACK` for the general path (a record past the end
        of ``buf``, a length other than the index's, a bad CRC of the length, or a message
        outside the accepted form).
    kind : numpy.ndarray
        int8 (B, F): :data:`MISSING`, :data:`EMPTY`, or 1 bytes, 2 float, 3 int64
        (``tfrecord.BYTES``, ``FLOAT``, ``INT64``).
    first, last : numpy.ndarray
        int64 (B, F): bytes: the span of the first value in ``buf``; numbers: that of the
        value list.
    count : numpy.ndarray
        int64 (B, F): the number of values.
    at : numpy.ndarray
        int64 (B, F): where a numeric feature's values start in ``ivals`` / ``fvals``.
    crc : numpy.ndarray
        int64 (B,): the data's CRC-32C as the record states it (unmasked), for the caller to
        compare.
    ivals : numpy.ndarray
        int64: the values of the int64 features, record by record.
    fvals : numpy.ndarray
        float32: the values of the float features (their bits as stored).
    """
    status, kind, first, last, count, at, crc, ivals, fbits = _parse()(
        buf, offsets, sizes, names[0], names[1], table)
    return status, kind, first, last, count, at, crc, ivals, fbits.view(np.float32)
