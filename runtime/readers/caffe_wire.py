"""The common Caffe / Caffe2 LMDB records read straight from their protobuf wire bytes.

Most records are written by the same few tools in one layout: a Caffe ``Datum`` holding an
encoded image and a label, a Caffe2 ``TensorProtos`` holding a STRING tensor (the encoded
image) and a one-value INT32 or FLOAT tensor (the label). Walking those few bytes here costs
a fraction of building the ``google.protobuf`` message and reading its fields (~1 us against
~3.5 us a record, issue 17). Anything else -- other fields, another order, repeated or
missing fields, default-valued ``data_type``, NaN labels, bytes that do not parse -- returns
None, and the caller parses the record with ``google.protobuf`` (``runtime/readers/caffe.py``),
so the outputs and errors are those of the protobuf path either way (tested against it,
``tests/runtime/readers/test_caffe_wire.py``).

Wire format (protobuf encoding): a field is a varint tag ``number << 3 | wire type`` followed
by a varint (type 0), 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5).
"""
from __future__ import annotations

import struct

import numpy as np

__all__ = ["datum_parts", "tensor_protos_parts", "common_batch"]

_F32 = struct.Struct("<f")


def _varint(raw, p: int):
    """``(value, next position)`` of the varint at ``raw[p]``; IndexError past the end."""
    b = raw[p]
    if b < 0x80:
        return b, p + 1
    value, shift = b & 0x7F, 7
    while True:
        p += 1
        b = raw[p]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, p + 1
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def _int32(value: int) -> int:
    """A varint read as protobuf's ``int32`` (its low 32 bits, two's complement)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


#: what the bytes after the image mean (``_datum_tail`` / ``_protos_tail``), by those bytes: a
#: dataset holds few distinct label tails (one per class), so most records cost one look-up
_TAILS = {}
_TAILS_MAX = 1 << 14


def _tail(kind, tail: bytes, parse):
    key = (kind, tail)
    got = _TAILS.get(key)
    if got is None:
        if len(_TAILS) >= _TAILS_MAX:
            _TAILS.clear()
        got = _TAILS[key] = parse(tail)
    return got


def _length(raw, p: int):
    """The varint at ``raw[p]`` (a length: 1-3 bytes inline, longer ones by :func:`_varint`)."""
    b = raw[p]
    if b < 0x80:
        return b, p + 1
    c = raw[p + 1]
    if c < 0x80:
        return (b & 0x7F) | c << 7, p + 2
    d = raw[p + 2]
    if d < 0x80:
        return (b & 0x7F) | (c & 0x7F) << 7 | d << 14, p + 3
    return _varint(raw, p)


def _datum_tail(tail: bytes):
    """``(label,)`` of a Datum's bytes after ``data``: ``label`` then optionally ``encoded =
    true``; False for anything else."""
    try:
        if tail[0] != 0x28:
            return False
        label, p = _varint(tail, 1)
        if p == len(tail) or tail[p:] == b"\x38\x01":
            return (_int32(label),)
    except IndexError:
        pass
    return False


def datum_parts(raw):
    """``(start, end, label)`` of a Caffe ``Datum`` (``raw``: bytes or a memoryview) that is
    exactly ``data`` (field 4), ``label`` (field 5) and optionally ``encoded = true`` (field
    7), in that order: the image is ``raw[start:end]`` (the record's ``data``), ``label`` its
    int32 label. None for any other record."""
    try:
        if raw[0] != 0x22:
            return None
        n, start = _length(raw, 1)
    except IndexError:
        return None
    end = start + n
    if end >= len(raw):
        return None
    got = _tail(0, bytes(raw[end:]), _datum_tail)
    return (start, end, got[0]) if got else None


def _protos_tail(tail: bytes):
    """``(label, is_float)`` of a TensorProtos' bytes after the image's string: the second
    tensor, ``data_type`` INT32 (FLOAT) then one ``int32_data`` (``float_data``) value,
    packed or not; False for anything else."""
    try:
        if tail[0] != 0x0A:
            return False
        n1, p = _varint(tail, 1)
        if p + n1 != len(tail) or tail[p] != 0x10:
            return False
        kind, tag = tail[p + 1], tail[p + 2]
        if kind == 2:                               # INT32
            if tag == 0x20:                         # int32_data, one unpacked value
                label, q = _varint(tail, p + 3)
            elif tag == 0x22:                       # int32_data, packed
                size, q0 = _varint(tail, p + 3)
                label, q = _varint(tail, q0)
                if q != q0 + size:
                    return False
            else:
                return False
            if q == len(tail):
                return _int32(label), False
        elif kind == 1:                             # FLOAT
            if tag == 0x1D and n1 == 7:             # float_data, one unpacked value
                value = _F32.unpack_from(tail, p + 3)[0]
            elif tag == 0x1A and n1 == 8 and tail[p + 3] == 4:  # packed, 4 bytes
                value = _F32.unpack_from(tail, p + 4)[0]
            else:
                return False
            if value == value:                      # NaN: its bits through protobuf
                return value, True
    except (IndexError, struct.error):
        pass
    return False


def tensor_protos_parts(raw):
    """``(start, end, label, is_float)`` of a Caffe2 ``TensorProtos`` that is exactly two
    tensors: ``data_type = STRING`` then one ``string_data`` (the image, ``raw[start:end]``),
    and ``data_type = INT32`` (FLOAT) then one value in ``int32_data`` (``float_data``),
    packed or not. ``label`` is the int, or the float32 value as a Python float. None for any
    other record."""
    try:
        if raw[0] != 0x0A:
            return None
        n0, p = _length(raw, 1)
        if raw[p:p + 3] != b"\x10\x04\x32":
            return None
        n, start = _length(raw, p + 3)
    except IndexError:
        return None
    end = start + n
    if end != p + n0 or end >= len(raw):
        return None
    got = _tail(1, bytes(raw[end:]), _protos_tail)
    return (start, end) + got if got else None


def common_batch(raws, caffe2: bool):
    """``[images, labels]`` of a batch of records all in the common form (``datum_parts`` /
    ``tensor_protos_parts`` with ``caffe2``), else None (the caller parses record by record).

    Returns
    -------
    list of two lists
        The images, uint8 1-D copies of the records' bytes; the labels, int32 (float32 for
        Caffe2 FLOAT labels) ``(1,)`` views of one ``(batch, 1)`` array -- what the record by
        record parse gives, with one label array a batch.
    """
    parts = tensor_protos_parts if caffe2 else datum_parts
    got = [parts(r) for r in raws]
    if None in got:
        return None
    dtype = np.int32
    if caffe2:
        kinds = {g[3] for g in got}
        if len(kinds) != 1:
            return None
        dtype = np.float32 if True in kinds else np.int32
    images = [np.frombuffer(r, np.uint8, g[1] - g[0], g[0]).copy() for r, g in zip(raws, got)]
    labels = np.array([g[2] for g in got], dtype).reshape(-1, 1)
    return [images, list(labels)]
