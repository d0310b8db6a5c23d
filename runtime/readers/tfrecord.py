"""TFRecord files: the record framing, the masked CRC-32C, index files, and the
``tf.train.Example`` protobuf (decoding and encoding).

Framing (TensorFlow's ``core/lib/io/record_writer``): every record is

    uint64 length (little-endian) | uint32 masked_crc32c(length bytes) |
    data (length bytes)           | uint32 masked_crc32c(data)

with ``masked_crc32c(x) = ((crc >> 15 | crc << 17) + 0xa282ead8) mod 2**32`` of the
Castagnoli CRC (polynomial 0x82F63B78 reflected, init and final xor 0xFFFFFFFF).

Index files (DALI's ``tfrecord2idx``): one line per record, ``"offset size"`` in decimal,
``size`` the whole framed record (``16 + length``).

``tf.train.Example`` in the protobuf wire format (``tensorflow/core/example/*.proto``)::

    Example  { Features features = 1; }
    Features { map<string, Feature> feature = 1; }     // entries: {1: key, 2: value}
    Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
                       Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed]; }    // packed or one fixed32 per value
    Int64List { repeated int64 value = 1 [packed]; }    // varints, negatives in 10 bytes

A field's key is the varint ``number << 3 | wire type`` (0 varint, 1 fixed64, 2 length-
delimited, 5 fixed32); unknown fields are skipped.
"""
from __future__ import annotations

import os
import struct

import numpy as np
from google.protobuf.message import DecodeError as _DecodeError

from runtime.kernels.cpu.jit import compiled
from runtime.readers.tf_example_proto import Example as _Example

try:    # Google's CRC32C (hardware-accelerated, ~25x the numba loop on a 30 kB record)
    import google_crc32c as _google_crc32c
except ImportError:     # pragma: no cover - the numba / numpy fallbacks below
    _google_crc32c = None

__all__ = ["CRC_TABLE", "crc32c", "crc_lanes", "masked_crc32c", "scan_records", "read_index",
           "read_record", "parse_example", "parse_example_by_hand", "encode_example",
           "frame_record", "write_index", "BYTES", "FLOAT", "INT64", "write_tfrecord"]

#: the kinds of a Feature (the field numbers of its oneof)
BYTES, FLOAT, INT64 = 1, 2, 3


def _table():
    t = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t[i] = c
    return t.tolist()


_T = _table()
_TA = np.array(_T, np.uint32)
#: the CRC-32C byte table: uint32, shape (256,), entry ``b`` the CRC step of byte ``b``
CRC_TABLE = _TA
_SEG = 64              # segment length of the parallel lanes
_PARALLEL = 4096       # data of at least this many bytes is checked in lanes (~80 MB/s)
_OPS = []               # byte tables of shift_(_SEG * 2**k), k = 0, 1, ... (built on demand)


def _crc_scalar(crc, data):
    t = _T
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def _tables(cols):
    """Four 256-entry tables applying the GF(2)-linear map with unit-vector images ``cols``
    one byte of the argument at a time."""
    out = []
    for k in range(4):
        tab = np.zeros(1, np.uint32)
        for i in range(8):
            tab = np.concatenate([tab, tab ^ cols[8 * k + i]])
        out.append(tab)
    return out


def _apply(tabs, x):
    return tabs[0][x & 0xFF] ^ tabs[1][(x >> np.uint32(8)) & 0xFF] ^ \
        tabs[2][(x >> np.uint32(16)) & 0xFF] ^ tabs[3][x >> np.uint32(24)]


def _op(k):
    """The tables of shift_(_SEG * 2**k): the effect of that many zero bytes on a state."""
    while len(_OPS) <= k:
        if not _OPS:
            cols = np.left_shift(np.uint32(1), np.arange(32, dtype=np.uint32))
            for _ in range(_SEG):
                cols = _TA[cols & 0xFF] ^ (cols >> np.uint32(8))
        else:   # shift_2s = shift_s after shift_s: the images of the unit vectors
            prev = _OPS[-1]
            unit = np.left_shift(np.uint32(1), np.arange(32, dtype=np.uint32))
            cols = _apply(prev, _apply(prev, unit))
        _OPS.append(_tables(cols))
    return _OPS[k]


def crc_lanes(crc, data):
    """The CRC state after ``data``: segments of ``_SEG`` bytes run side by side (one table
    step per byte for all of them at once), then joined pairwise: the state after ``A + B``
    is ``shift_len(B)(state after A) ^ (state of B from 0)``, ``shift_k`` being the linear
    effect of ``k`` zero bytes (zero lanes in front pad the count to a power of two: they
    contribute nothing); the rest of ``data`` goes byte by byte."""
    n = len(data) // _SEG
    d = np.frombuffer(data, np.uint8, _SEG * n).reshape(n, _SEG)
    lanes = 1 << (n - 1).bit_length()
    c = np.zeros(lanes, np.uint32)
    c[lanes - n] = crc
    c_real = c[lanes - n:]
    for j in range(_SEG):
        c_real = _TA[(c_real ^ d[:, j]) & 0xFF] ^ (c_real >> np.uint32(8))
    c[lanes - n:] = c_real
    k = 0
    while len(c) > 1:
        c = _apply(_op(k), c[0::2]) ^ c[1::2]
        k += 1
    return _crc_scalar(int(c[0]), data[_SEG * n:])


def _build_crc(njit):
    @njit
    def crc_update(crc, data, tables):
        # slicing-by-8: tables[k][b] is the CRC step of byte b followed by k zero bytes, so
        # 8 bytes take 8 independent look-ups
        t0, t1, t2, t3 = tables[0], tables[1], tables[2], tables[3]
        t4, t5, t6, t7 = tables[4], tables[5], tables[6], tables[7]
        n = data.size
        k = 0
        while k + 8 <= n:
            lo = crc ^ (np.uint32(data[k]) | (np.uint32(data[k + 1]) << 8) |
                        (np.uint32(data[k + 2]) << 16) | (np.uint32(data[k + 3]) << 24))
            crc = (t7[lo & 0xFF] ^ t6[(lo >> 8) & 0xFF] ^ t5[(lo >> 16) & 0xFF] ^
                   t4[lo >> 24] ^ t3[data[k + 4]] ^ t2[data[k + 5]] ^ t1[data[k + 6]] ^
                   t0[data[k + 7]])
            k += 8
        while k < n:
            crc = t0[(crc ^ data[k]) & 0xFF] ^ (crc >> 8)
            k += 1
        return crc

    return crc_update


def _slice_tables():
    t = [_TA]
    for _ in range(7):
        prev = t[-1]
        t.append((prev >> np.uint32(8)) ^ _TA[prev & 0xFF])
    return np.stack(t)


_TA8 = _slice_tables()


#: the slicing-by-8 loop compiled by numba (~1.5 GB/s; ``runtime/kernels/cpu/jit.py``)
_crc_kernel = compiled(_build_crc)
_jit_state = []     # [kernel] once built, [None] where numba is unavailable


def _jit():
    if not _jit_state:
        try:
            _jit_state.append(_crc_kernel())
        except ImportError:
            _jit_state.append(None)
    return _jit_state[0]


def crc32c(data) -> int:
    """CRC-32C (Castagnoli) of ``data`` (bytes-like): Google's ``google_crc32c`` when it is
    installed, else a numba-compiled loop when numba is available (for 64 bytes or more),
    else numpy lanes (:func:`crc_lanes`) for data over 4 KiB and a Python loop for less. A
    contiguous uint8 array (a slice of a memory map) is read in place, not copied."""
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1
            and data.flags.c_contiguous):
        data = bytes(data)
    if _google_crc32c is not None:
        return _google_crc32c.value(data)
    data = bytes(data)
    kernel = _jit() if len(data) >= 64 else None
    if kernel is not None:
        return int(kernel(np.uint32(0xFFFFFFFF), np.frombuffer(data, np.uint8),
                          _TA8)) ^ 0xFFFFFFFF
    if len(data) >= _PARALLEL:
        return crc_lanes(0xFFFFFFFF, data) ^ 0xFFFFFFFF
    return _crc_scalar(0xFFFFFFFF, data) ^ 0xFFFFFFFF


def masked_crc32c(data) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    """One framed record holding ``data``."""
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked_crc32c(n)) + data + \
        struct.pack("<I", masked_crc32c(data))


def scan_records(path):
    """``[(offset, size)]`` of every record of a TFRecord file (walking the lengths; the
    CRCs are checked when a record is read).

    Raises
    ------
    ValueError
        A record that runs past the end of the file (naming the file and its offset).
    """
    out, off = [], 0
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        while off < size:
            head = f.read(12)
            if len(head) < 12:
                raise ValueError(f"TFRecord {path!r}: truncated record header at offset {off} "
                                 f"({len(head)} of 12 bytes)")
            (n,) = struct.unpack_from("<Q", head)
            if off + 16 + n > size:
                raise ValueError(f"TFRecord {path!r}: the record at offset {off} announces "
                                 f"{n} bytes, past the end of the file ({size} bytes)")
            out.append((off, 16 + n))
            off += 16 + n
            f.seek(off)
    return out


def write_index(path, index_path) -> int:
    """Write DALI's index file of a TFRecord file; returns the number of records."""
    recs = scan_records(path)
    with open(index_path, "w") as f:
        f.writelines(f"{o} {s}\n" for o, s in recs)
    return len(recs)


def read_index(index_path, data_path):
    """``[(offset, size)]`` of an index file, checked against the data file's size.

    Raises
    ------
    ValueError
        A malformed line, or an entry past the end of ``data_path`` (naming both files).
    """
    try:
        with open(index_path) as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise ValueError(f"TFRecord index {index_path!r} cannot be read: "
                         f"{e.strerror or e}") from None
    try:
        size = os.path.getsize(data_path)
    except OSError as e:
        raise ValueError(f"TFRecord file {data_path!r} cannot be read: {e.strerror or e}") \
            from None
    out = []
    for i, line in enumerate(lines):
        parts = line.split()
        if not parts:
            continue
        try:
            off, n = (int(p) for p in parts[:2])
            if len(parts) != 2 or off < 0 or n < 16:
                raise ValueError
        except ValueError:
            raise ValueError(f"TFRecord index {index_path!r} line {i + 1}: expected "
                             f"'offset size' (decimal, size >= 16), got {line!r}") from None
        if off + n > size:
            raise ValueError(f"TFRecord index {index_path!r} line {i + 1} ({off} {n}) does "
                             f"not match {data_path!r}: the record ends past the end of the "
                             f"file ({size} bytes)")
        out.append((off, n))
    return out


def read_record(fd, path, offset, size, index_path=None):
    """The data of the record at ``offset`` (``size`` bytes framed), both CRCs checked.

    Raises
    ------
    ValueError
        A length that disagrees with the index entry, a record cut short by the end of the
        file, or a CRC mismatch (naming the file, the offset, and the index file when
        given).
    """
    buf = os.pread(fd, size, offset)
    where = f"TFRecord {path!r}, record at offset {offset}"
    idx = f" (index {index_path!r})" if index_path else ""
    if len(buf) < 16:
        raise ValueError(f"{where}: truncated ({len(buf)} bytes){idx}")
    (n,) = struct.unpack_from("<Q", buf)
    if n + 16 != size:
        raise ValueError(f"{where}: the record holds {n} bytes but the index entry says "
                         f"{size - 16}{idx}: the index does not match the file")
    if len(buf) < size:
        raise ValueError(f"{where}: truncated: the file ends {len(buf)} bytes into the "
                         f"{size}-byte record{idx}")
    if struct.unpack_from("<I", buf, 8)[0] != masked_crc32c(buf[:8]):
        raise ValueError(f"{where}: corrupt record: the CRC of the length does not match"
                         f"{idx}")
    data = buf[12:12 + n]
    if struct.unpack_from("<I", buf, 12 + n)[0] != masked_crc32c(data):
        raise ValueError(f"{where}: corrupt record: the CRC of the data does not match")
    return data


# ------------------------------------------------------------------ protobuf wire format
def _varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _fields(buf):
    """``(field number, wire type, value)`` of a message: an int for varints and fixed
    types, a memoryview for length-delimited fields."""
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = _varint(buf, pos)
        elif wt == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            ln, pos = _varint(buf, pos)
            v, pos = buf[pos:pos + ln], pos + ln
        elif wt == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
        if pos > n:
            raise ValueError("a field runs past the end of its message")
        yield num, wt, v


def _signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _feature(buf):
    for num, wt, v in _fields(buf):
        if wt != 2 or num not in (BYTES, FLOAT, INT64):
            continue
        if num == BYTES:
            return BYTES, [bytes(x) for n2, w2, x in _fields(v) if n2 == 1 and w2 == 2]
        vals = []
        for n2, w2, x in _fields(v):
            if n2 != 1:
                continue
            if num == FLOAT:
                if w2 == 2:         # packed
                    vals.extend(np.frombuffer(bytes(x), "<f4").tolist())
                elif w2 == 5:
                    vals.append(struct.unpack("<f", bytes(x))[0])
            else:
                if w2 == 2:
                    p, xb = 0, bytes(x)
                    while p < len(xb):
                        iv, p = _varint(xb, p)
                        vals.append(_signed64(iv))
                elif w2 == 0:
                    vals.append(_signed64(x))
        return num, vals
    return None, []


def parse_example(data) -> dict:
    """The features of a serialized ``tf.train.Example``: ``name -> (kind, values)`` with
    ``kind`` :data:`BYTES` (a list of bytes), :data:`FLOAT` or :data:`INT64` (a list of
    numbers), or None for a feature without a value list.

    The message is parsed by ``google.protobuf`` (``runtime/readers/tf_example_proto.py``,
    ~3x faster); one it rejects goes through the hand-written parser below, which gives the
    detailed error. (A Feature holding several value lists -- no TensorFlow writer makes
    one -- keeps its last one there, protobuf's oneof rule.)

    Raises
    ------
    ValueError
        Malformed protobuf (the caller adds the file and offset).
    """
    try:
        msg = _Example.FromString(bytes(data))
    except _DecodeError:
        return parse_example_by_hand(data)
    out = {}
    for key, feat in msg.features.feature.items():
        kind = feat.WhichOneof("kind")
        out[key] = (None, []) if kind is None else (_KINDS[kind],
                                                      getattr(feat, kind).value[:])  # a list
    return out


_KINDS = {"bytes_list": BYTES, "float_list": FLOAT, "int64_list": INT64}


def parse_example_by_hand(data) -> dict:
    """:func:`parse_example` with the wire format walked in Python (detailed errors)."""
    out = {}
    mv = memoryview(bytes(data))
    for num, wt, feats in _fields(mv):
        if num != 1 or wt != 2:
            continue
        for n2, w2, entry in _fields(feats):
            if n2 != 1 or w2 != 2:
                continue
            key, value = None, b""
            for n3, w3, x in _fields(entry):
                if n3 == 1 and w3 == 2:
                    key = bytes(x).decode("utf-8")
                elif n3 == 2 and w3 == 2:
                    value = x
            if key is not None:
                out[key] = _feature(value)
    return out


def _enc_varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(num, payload):
    return _enc_varint(num << 3 | 2) + _enc_varint(len(payload)) + payload


def encode_example(features: dict) -> bytes:
    """Serialize a ``tf.train.Example``: ``name -> bytes | str | list of bytes`` (a
    BytesList), ``list/array of float`` (FloatList, packed) or ``list/array of int``
    (Int64List, packed); numpy arrays by dtype kind (floats: FloatList)."""
    entries = b""
    for name, value in features.items():
        if isinstance(value, (bytes, str)):
            value = [value]
        arr = None if isinstance(value, list) and value and isinstance(
            value[0], (bytes, str)) else np.asarray(value)
        if arr is None:
            body = b"".join(_ld(1, v.encode() if isinstance(v, str) else v) for v in value)
            feat = _ld(BYTES, body)
        elif arr.dtype.kind == "f":
            feat = _ld(FLOAT, _ld(1, arr.astype("<f4").tobytes()))
        else:
            feat = _ld(INT64, _ld(1, b"".join(_enc_varint(int(v)) for v in arr.ravel())))
        entries += _ld(1, _ld(1, name.encode()) + _ld(2, feat))
    return _ld(1, entries)


def write_tfrecord(path, examples, index_path=None) -> int:
    """Write ``examples`` (dicts for :func:`encode_example`) as a TFRecord file, and its DALI
    index file when ``index_path`` is given; returns the number of records."""
    lines, off = [], 0
    with open(path, "wb") as f:
        for ex in examples:
            rec = frame_record(encode_example(ex))
            f.write(rec)
            lines.append(f"{off} {len(rec)}\n")
            off += len(rec)
    if index_path is not None:
        with open(index_path, "w") as f:
            f.writelines(lines)
    return len(lines)
