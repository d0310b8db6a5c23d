"""CPU kernel of ``decoders.inflate``: compressed chunks -> tensors of a given shape and dtype.

``LZ4`` chunks are raw LZ4 blocks (no frame, no stored size: what nvCOMP's batched LZ4, which
DALI's GPU operator calls, reads), decompressed by the ``lz4`` library; ``DEFLATE`` (an ndd
extension) chunks are raw deflate streams (RFC 1951) decompressed by ``zlib``.  A sample is one
chunk, or -- with ``chunk_offsets`` and/or ``chunk_sizes`` -- several chunks that each inflate
to ``shape`` and are stacked along a new outer axis.  Every chunk must inflate to exactly
``prod(shape) * itemsize`` bytes (DALI leaves a short chunk's tail undefined; ndd raises).
Chunks are decompressed on the thread pool (both libraries release the GIL).
"""
from __future__ import annotations

import zlib

import lz4.block
import numpy as np

from runtime.kernels.cpu.cast import to_numpy_dtype
from runtime.kernels.registry import register, sample_args
from runtime.storage import sample_name

__all__ = ["inflate_chunk", "chunk_ranges", "inflate_sample"]


def inflate_chunk(data, nbytes: int, algorithm: str = "LZ4") -> bytes:
    """Decompress one chunk to exactly ``nbytes`` bytes.

    Raises
    ------
    ValueError
        Corrupt data, or data that inflates to more or fewer bytes than ``nbytes``.
    """
    buf = memoryview(np.ascontiguousarray(data).view(np.uint8))
    algo = algorithm.upper()
    try:
        if algo == "LZ4":
            # one byte of spare room tells "too long" from "exactly right"
            out = lz4.block.decompress(buf, uncompressed_size=nbytes + 1) if len(buf) else b""
        else:
            d = zlib.decompressobj(-15)
            out = d.decompress(buf, nbytes + 1)
            if len(out) <= nbytes and not d.eof:
                raise ValueError("the deflate stream is truncated")
    except lz4.block.LZ4BlockError as exc:    # LZ4 cannot tell the two apart
        raise ValueError(f"corrupt LZ4 data, or data inflating to more than the {nbytes} "
                         f"bytes `shape` and `dtype` need ({exc})") from None
    except zlib.error as exc:
        raise ValueError(f"corrupt DEFLATE data: {exc}") from None
    if len(out) != nbytes:
        got = f"more than {nbytes}" if len(out) > nbytes else str(len(out))
        raise ValueError(f"the chunk inflates to {got} bytes, but `shape` and `dtype` need "
                         f"{nbytes}")
    return out


def chunk_ranges(size: int, offsets=None, sizes=None) -> list[tuple[int, int]]:
    """``(start, end)`` of each chunk of a sample of ``size`` bytes (DALI's rules: offsets
    alone run to the next offset / the sample's end; sizes alone are packed from 0).

    Raises
    ------
    ValueError
        Different numbers of offsets and sizes, or a chunk outside the sample.
    """
    if offsets is not None:
        offsets = [int(v) for v in np.asarray(offsets).ravel().tolist()]
    if sizes is not None:
        sizes = [int(v) for v in np.asarray(sizes).ravel().tolist()]
    if offsets is not None and sizes is not None:
        if len(offsets) != len(sizes):
            raise ValueError(f"chunk_offsets and chunk_sizes must have the same length, got "
                             f"{len(offsets)} and {len(sizes)}")
        ranges = [(o, o + s) for o, s in zip(offsets, sizes)]
    elif offsets is not None:
        ranges = list(zip(offsets, offsets[1:] + [size]))
    else:
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        ranges = list(zip(starts[:-1], starts[1:]))
    for k, (a, b) in enumerate(ranges):
        if a < 0 or b < a or b > size:
            raise ValueError(f"chunk {k} spans bytes [{a}, {b}), outside the sample of {size} "
                             f"bytes (or of negative size)")
    return ranges


def inflate_sample(data, shape, dtype, algorithm="LZ4", offsets=None, sizes=None):
    """One sample of ``decoders.inflate``: ``shape`` (or ``(chunks,) + shape``) ``dtype``."""
    dt = to_numpy_dtype(dtype)
    shape = tuple(int(s) for s in np.asarray(shape).ravel().tolist())
    if any(s < 0 for s in shape):
        raise ValueError(f"`shape` must not be negative, got {shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    data = np.asarray(data)
    if offsets is None and sizes is None:
        raw = inflate_chunk(data, nbytes, algorithm)
        return np.frombuffer(raw, dt).reshape(shape).copy()
    ranges = chunk_ranges(data.size, offsets, sizes)
    out = np.empty((len(ranges),) + shape, dt)
    flat = out.reshape(len(ranges), -1).view(np.uint8)
    for k, (a, b) in enumerate(ranges):
        try:
            flat[k] = np.frombuffer(inflate_chunk(data[a:b], nbytes, algorithm), np.uint8)
        except ValueError as exc:
            raise ValueError(f"chunk {k}: {exc}") from None
    return out


@register("decoders.inflate", "cpu")
def inflate_kernel(ctx, inputs, args):
    """``decoders.inflate``: every sample on the pool."""
    data = inputs[0]

    def one(i):
        a = sample_args(ctx, args, i)
        try:
            return inflate_sample(data[i], a["shape"], a.get("dtype") or "uint8",
                                  a.get("algorithm", "LZ4"), a.get("chunk_offsets"),
                                  a.get("chunk_sizes"))
        except ValueError as exc:
            raise ValueError(f"{sample_name(data, i)}: {exc}") from None
    return [ctx.pool.map(one, ctx.batch_size)]
