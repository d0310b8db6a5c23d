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

__all__ = ["datum_parts", "tensor_protos_parts"]

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


def datum_parts(raw: bytes):
    """``(start, end, label)`` of a Caffe ``Datum`` that is exactly ``data`` (field 4),
    ``label`` (field 5) and optionally ``encoded = true`` (field 7), in that order: the image
    is ``raw[start:end]`` (the record's ``data``), ``label`` its int32 label. None for any
    other record."""
    try:
        if raw[0] != 0x22:
            return None
        n, start = _varint(raw, 1)
        end = start + n
        if end >= len(raw) or raw[end] != 0x28:
            return None
        label, p = _varint(raw, end + 1)
        if p == len(raw) or (p + 2 == len(raw) and raw[p] == 0x38 and raw[p + 1] == 1):
            return start, end, _int32(label)
    except IndexError:
        pass
    return None


def tensor_protos_parts(raw: bytes):
    """``(start, end, label, is_float)`` of a Caffe2 ``TensorProtos`` that is exactly two
    tensors: ``data_type = STRING`` then one ``string_data`` (the image, ``raw[start:end]``),
    and ``data_type = INT32`` (FLOAT) then one value in ``int32_data`` (``float_data``),
    packed or not. ``label`` is the int, or the float32 value as a Python float. None for any
    other record."""
    try:
        if raw[0] != 0x0A:
            return None
        n0, p = _varint(raw, 1)
        end0 = p + n0
        if raw[p] != 0x10 or raw[p + 1] != 4 or raw[p + 2] != 0x32:
            return None
        n, start = _varint(raw, p + 3)
        end = start + n
        if end != end0 or end >= len(raw) or raw[end] != 0x0A:
            return None
        n1, p = _varint(raw, end + 1)
        if p + n1 != len(raw) or raw[p] != 0x10:
            return None
        kind, tag = raw[p + 1], raw[p + 2]
        if kind == 2:                               # INT32
            if tag == 0x20:                         # int32_data, one unpacked value
                label, q = _varint(raw, p + 3)
            elif tag == 0x22:                       # int32_data, packed
                size, q0 = _varint(raw, p + 3)
                label, q = _varint(raw, q0)
                if q != q0 + size:
                    return None
            else:
                return None
            if q == len(raw):
                return start, end, _int32(label), False
        elif kind == 1:                             # FLOAT
            if tag == 0x1D and n1 == 7:             # float_data, one unpacked value
                value = _F32.unpack_from(raw, p + 3)[0]
            elif tag == 0x1A and n1 == 8 and raw[p + 3] == 4:   # packed, 4 bytes
                value = _F32.unpack_from(raw, p + 4)[0]
            else:
                return None
            if value == value:                      # NaN: its bits through protobuf
                return start, end, value, True
    except (IndexError, struct.error):
        pass
    return None
