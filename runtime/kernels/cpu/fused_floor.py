"""The kernel floor of a ``fused.image`` pipeline on the worker processes (``ndd bench
--floor``, ``benchmarks/tight_loop.py``).

The parent records the ``fused.image`` calls of one epoch (:func:`.fused.set_recorder`) and
sends them to every worker of a pool of its own once (:func:`load`): each worker turns them into
a kernel tape (:func:`.fused_stages.kernel_tape`: headers, windows, regions and cmn plans
computed there, untimed).  An epoch (:func:`epoch`) then replays the tape, the workers taking
chunks of :data:`CHUNK` samples from a shared counter until none are left: the codec's region
decodes, the resamples and the normalizations of exactly those samples, with no per-sample
Python, no graph and no messages between two samples.
"""
from __future__ import annotations

import fcntl
import os
import time

import numpy as np

from runtime.kernels.registry import KernelContext
from runtime.storage import SampleList

from . import cmn_batch, resize_edges
from .fused_stages import kernel_tape, run_tape
from .fused_workers import Stacked

__all__ = ["load", "epoch", "CHUNK", "reset_counter", "warm_up"]

#: Samples a worker takes from the counter at a time.
CHUNK = 4

_state: dict = {}


def load(batches, dtype: str) -> int:
    """Worker side: build the tape of the recorded ``batches``; returns its sample count.

    Parameters
    ----------
    batches : list of tuple
        ``(ctx fields, encoded arrays, source_info, args)`` per recorded ``fused.image`` call
        (``ctx fields`` as :func:`.fused_workers.run_on_workers` sends them).
    dtype : str
        The cmn output dtype (numpy name).
    """
    tape = []
    for fields, arrays, info, args in batches:
        ctx = KernelContext(None, *fields)
        args = {k: v.samples() if v.__class__ is Stacked else v for k, v in args.items()}
        data = SampleList([np.frombuffer(a, np.uint8) for a in arrays], info)
        tape += kernel_tape(ctx, [data], args, range(ctx.batch_size))
    _state["tape"] = tape
    _state["out"] = {}
    _state["dtype"] = np.dtype(dtype)
    return len(tape)


def warm_up() -> None:
    """Worker setup: load the compiled kernels the tape calls (not the whole catalogue's)."""
    resize_edges.warm_up()
    cmn_batch.warm_up()


def reset_counter(path: str) -> None:
    """Parent side: set the shared sample counter in the file ``path`` to 0."""
    with open(path, "wb") as f:
        f.write(bytes(8))


def epoch(path: str) -> tuple[int, float]:
    """Worker side: replay chunks of the tape claimed from the counter file ``path``
    (``flock``) until the tape is done; returns ``(samples run here, thread CPU seconds)``."""
    tape, dt = _state["tape"], _state["dtype"]
    bufs = _state["out"]
    fd = os.open(path, os.O_RDWR)
    cpu0 = time.thread_time()
    done = 0
    try:
        while True:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                start = int.from_bytes(os.pread(fd, 8, 0), "little")
                os.pwrite(fd, (start + CHUNK).to_bytes(8, "little"), 0)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            part = tape[start:start + CHUNK]
            if not part:
                return done, time.thread_time() - cpu0
            shape = part[0][5]
            out = bufs.get(shape)
            if out is None:
                out = bufs[shape] = np.empty((CHUNK,) + shape, dt)
            run_tape(part, out)
            done += len(part)
    finally:
        os.close(fd)
