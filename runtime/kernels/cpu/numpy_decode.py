"""CPU kernel of ``decoders.numpy``: serialized ``.npy`` files (1-D uint8 samples) -> arrays.

The header is parsed by :func:`runtime.readers.npy.parse_header` (the readers' parser); DALI
decodes format version 1.0 only, and so does this op.  Big-endian files are rejected
(as DALI 2.4 does).  The data is viewed in place and copied once into a C-order array (Fortran
order converted);
with ``dtype`` the values convert as ``cast`` does (round half away from zero, saturate).
Without ``dtype`` every sample must have the same dtype; every sample must have the same number
of dimensions (DALI's rule: a batch has one ndim).
"""
from __future__ import annotations

import functools

import numpy as np

from runtime.kernels.cpu.cast import cast
from runtime.kernels.registry import register
from runtime.readers.npy import parse_header
from runtime.storage import sample_name

__all__ = ["decode_npy"]


@functools.lru_cache(maxsize=256)
def _parse(head: bytes):
    """:func:`parse_header` of a whole header, cached: a batch of arrays of one shape and dtype
    repeats the same header bytes (parsing its dict literal costs more than copying a small
    array)."""
    return parse_header(head, "<bytes>")


def decode_npy(data) -> np.ndarray:
    """The array serialized in ``data`` (the bytes of an ``.npy`` file, version 1.0).

    Parameters
    ----------
    data : numpy.ndarray
        uint8 (or int8) array of the file's bytes (1-D; other shapes are read flat, as DALI
        does).

    Returns
    -------
    numpy.ndarray
        C-contiguous, native byte order, the file's dtype and shape (a new array).

    Raises
    ------
    ValueError
        Not an ``.npy`` file, a format version other than 1.0, big-endian data, an unsupported
        dtype (structured, complex, strings, objects) or truncated data (DALI 2.4 rejects the
        same files).
    """
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)     # DALI reads any shape
    if raw.size >= 8 and raw[:6].tobytes() == b"\x93NUMPY" and raw[6] != 1:
        raise ValueError(f"unsupported .npy format version {raw[6]}.{raw[7]} (only version 1.0 "
                         f"is supported, as in DALI)")
    if raw.size >= 10 and raw[6] == 1:      # version 1.0: a uint16 header length at byte 8
        head = _parse(raw[:10 + int(raw[8]) + (int(raw[9]) << 8)].tobytes())
    else:
        head = parse_header(raw[:min(raw.size, 65546)].tobytes(), "<bytes>")
    if head.dtype.byteorder == ">" or (head.dtype.byteorder == "=" and not np.little_endian):
        raise ValueError("Big Endian files are not supported (as in DALI 2.4)")
    end = head.data_offset + head.nbytes
    if raw.size < end:
        raise ValueError(f"truncated .npy data: the header (shape {head.shape}, dtype "
                         f"{head.dtype.str}) needs {head.nbytes} bytes from offset "
                         f"{head.data_offset}, the sample has {raw.size - head.data_offset}")
    flat = raw[head.data_offset:end].view(head.dtype)
    arr = flat.reshape(head.shape, order="F" if head.fortran_order else "C")
    native = head.dtype.newbyteorder("=")
    out = np.empty(head.shape, native)
    out[...] = arr              # one copy: C order, native byte order
    return out


@register("decoders.numpy", "cpu")
def numpy_decode_kernel(ctx, inputs, args):
    """``decoders.numpy``: every sample decoded on the pool; one dtype (or ``dtype``) and one
    number of dimensions for the batch."""
    data = inputs[0]
    want = args.get("dtype")

    def one(i):
        try:
            arr = decode_npy(data[i])
        except ValueError as exc:
            raise ValueError(f"{sample_name(data, i)}: {exc}") from None
        return arr if want is None else cast(arr, want)
    out = ctx.pool.map(one, ctx.batch_size)
    for i, arr in enumerate(out[1:], 1):
        if arr.ndim != out[0].ndim:
            raise ValueError(f"All samples must have the same number of dimensions: "
                             f"{sample_name(data, 0)} has {out[0].ndim}, "
                             f"{sample_name(data, i)} has {arr.ndim}")
        if want is None and arr.dtype != out[0].dtype:
            raise ValueError(f"All samples must have the same data type (or give `dtype`): "
                             f"{sample_name(data, 0)} is {out[0].dtype}, "
                             f"{sample_name(data, i)} is {arr.dtype}")
    return [out]
