"""CPU kernels of ``io.file.read`` (the bytes of the file each sample names) and ``dump_image``
(images written as ASCII PGM / PPM files).

A sample is a 1-D uint8 (or int8) array holding an encoded path (e.g.
``np.frombuffer(path.encode("utf-8"), np.uint8)``); the path ends at the first NUL byte, as
DALI's C string does, and a relative path is relative to the working directory.  Files are read
on the thread pool with plain ``read`` calls (DALI's ``dont_use_mmap`` / ``use_o_direct`` knobs
are accepted and ignored).  An empty file gives an empty sample (DALI 2.4 fails to map it).
"""
from __future__ import annotations

import os

import numpy as np

from runtime.kernels.registry import register
from runtime.storage import sample_name

__all__ = ["read_file", "path_of", "write_ppm"]


def path_of(sample) -> bytes:
    """The path bytes of one sample: its bytes up to the first NUL.

    Raises
    ------
    ValueError
        The sample is not 1-D, or the path is empty.
    """
    a = np.asarray(sample)
    if a.ndim != 1:
        raise ValueError(f"a file path must be a 1-D uint8 sample, got shape {a.shape}")
    raw = a.view(np.uint8).tobytes()
    raw = raw.split(b"\0", 1)[0]
    if not raw:
        raise ValueError("empty file path")
    return raw


def read_file(path: bytes) -> np.ndarray:
    """The whole file at ``path`` as a 1-D uint8 array.

    Raises
    ------
    RuntimeError
        The file cannot be opened or read (missing, a directory, no permission); the message
        names the path and the operating system's reason.
    """
    try:
        with open(path, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            out = np.empty(size, np.uint8)
            got = f.readinto(memoryview(out)) if size else 0
            if got != size:         # the file shrank while read: keep what was there
                out = out[:got].copy()
            return out
    except OSError as exc:
        raise RuntimeError(f"cannot read file {os.fsdecode(path)!r}: "
                           f"{exc.strerror or exc}") from None


@register("io.file.read", "cpu")
def file_read_kernel(ctx, inputs, args):
    """``io.file.read``: every sample's file, read on the pool."""
    paths = inputs[0]

    def one(i):
        try:
            return read_file(path_of(paths[i]))
        except (RuntimeError, ValueError) as exc:
            raise type(exc)(f"{sample_name(paths, i)}: {exc}") from None
    return [ctx.pool.map(one, ctx.batch_size)]


def write_ppm(path: str, image: np.ndarray) -> None:
    """Write an ``(H, W, 1)`` / ``(H, W, 3)`` uint8 image as DALI's ``dump_image`` does: ASCII
    ``P2`` / ``P3``, a ``W H`` line, ``255``, then one line per image row, every value followed
    by a space.

    Raises
    ------
    ValueError
        Another number of dimensions or channels.
    """
    if image.ndim != 3 or image.shape[2] not in (1, 3):
        raise ValueError(f"dump_image writes HWC images with 1 or 3 channels, got shape "
                         f"{image.shape}")
    h, w, c = image.shape
    with open(path, "w", encoding="ascii") as f:
        f.write(f"{'P3' if c == 3 else 'P2'}\n{w} {h}\n255\n")
        if h and w:
            np.savetxt(f, image.reshape(h, w * c), fmt="%d", delimiter=" ", newline=" \n")


@register("dump_image", "cpu")
def dump_image_kernel(ctx, inputs, args):
    """``dump_image``: ``<i>-<suffix>-0.ppm`` per sample (on the pool); the batch passes."""
    images = inputs[0]
    suffix = args.get("suffix") or ""

    def one(i):
        x = np.asarray(images[i])
        try:
            write_ppm(f"{i}-{suffix}-0.ppm", x)
        except ValueError as exc:
            raise ValueError(f"{sample_name(images, i)}: {exc}") from None
        return x
    return [ctx.pool.map(one, ctx.batch_size)]
