"""CPU kernel of ``io.file.read``: the bytes of the file each sample names.

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

__all__ = ["read_file", "path_of"]


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
