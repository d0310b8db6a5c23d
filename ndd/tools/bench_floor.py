"""The kernel floor of a pipeline for ``ndd bench --floor`` and ``benchmarks/tight_loop.py``:
the same kernels compile mode runs, on the same images, windows and number of processes, as a
tight loop (no graph, no per-sample Python, no messages between samples).

:class:`FloorRunner` records the ``fused.image`` batches of one compile-mode epoch (the same
reader, batch size and generator seed as ``ndd bench``'s compile runner, so the same random
windows and flips: its second epoch, after a first one that traced the graph), sends them once
to a worker pool of its own (``threads`` processes) where each worker prepares their kernel
tape (:func:`runtime.kernels.cpu.fused_floor.load`), and then times epochs of that tape
(:func:`runtime.kernels.cpu.fused_floor.epoch`): the workers take chunks of samples from a
shared counter, as compile mode's workers claim samples.
"""
from __future__ import annotations

import os
import tempfile
import time

import ndd
from compiler.ir import stage_args
from runtime.kernels.cpu import fused as fused_kernel
from runtime.kernels.cpu import fused_floor
from runtime.kernels.cpu.cast import to_numpy_dtype
from runtime.kernels.cpu.fused_workers import compact_args
from runtime.workers.pool import WorkerPool

__all__ = ["FloorRunner", "RECORD_EPOCHS"]

#: Compile-mode epochs run to record; the last one is kept (the first traces the graph).
RECORD_EPOCHS = 2


def _record(fn, data, batch_size, seed, with_rng) -> list:
    """The ``fused.image`` calls of the last of :data:`RECORD_EPOCHS` compile-mode epochs of
    ``fn``: ``(ctx fields, encoded arrays, source_info, args)`` each."""
    reader = ndd.readers.File(file_root=data, random_shuffle=False)
    rng = ndd.random.RNG(seed=seed)
    calls: list = []

    def keep(ctx, inputs, args):
        src = inputs[0]
        fields = (ctx.in_metas, ctx.out_metas, set(ctx.tensor_arg_names), ctx.batch_size,
                  ctx.op)
        calls.append((fields, [bytes(memoryview(x)) for x in src],
                      getattr(src, "source_info", None),
                      compact_args(args, ctx.tensor_arg_names)))
    fused_kernel.set_recorder(keep)
    try:
        for _ in range(RECORD_EPOCHS):
            calls.clear()
            for jpegs, _labels in reader.next_epoch(batch_size=batch_size, compile=True):
                (fn(ndd, jpegs, rng=rng) if with_rng else fn(ndd, jpegs)).evaluate()
    finally:
        fused_kernel.set_recorder(None)
    return calls


class FloorRunner:
    """``epoch()`` -> ``(images, seconds)`` of the kernel tape of ``fn`` over ``data`` on
    ``threads`` worker processes (see the module docstring).

    Parameters
    ----------
    fn : callable
        The pipeline ``fn(ndd, jpegs[, rng=...]) -> Batch`` (``ndd bench``'s).
    data : str
        The image folder (``readers.File(file_root=data)``, not shuffled).
    batch_size, threads : int
        As the compile runner's; ``threads`` worker processes replay the tape.
    seed : int
        Seed of the pipeline's ``ndd.random.RNG`` (passed as ``rng=`` when ``with_rng``).

    Raises
    ------
    ValueError
        ``fn`` compiles to no ``fused.image`` node with a planned decode (see
        :func:`runtime.kernels.cpu.fused_stages.kernel_tape`).
    RuntimeError
        The worker processes could not be started.
    """

    name = "floor"

    def __init__(self, fn, data, batch_size, threads, seed, with_rng=True):
        calls = _record(fn, data, batch_size, seed, with_rng)
        if not calls:
            raise ValueError("the pipeline compiles to no fused.image node (the floor times "
                             "its kernels)")
        stages = calls[0][3]
        dt = to_numpy_dtype(stage_args(stages, "cmn").get("dtype", "float32"))
        self.images = sum(c[0][3] for c in calls)
        self.epochs: list[tuple[int, float]] = []     # (images, worker CPU seconds) each
        self.pool = WorkerPool(max(1, threads), setup=["runtime.kernels.cpu.fused_floor:warm_up"])
        self.pool.wait_started()
        if not self.pool.ready.is_set():
            raise RuntimeError(f"the floor's worker processes did not start: {self.pool.error}")
        fd, self.counter = tempfile.mkstemp(prefix="ndd-floor-", dir="/dev/shm"
                                            if os.path.isdir("/dev/shm") else None)
        os.close(fd)
        # ValueError (an unsupported chain) comes back from the workers as is
        self.pool.broadcast("runtime.kernels.cpu.fused_floor:load", calls, dt.str, queue=True)

    def epoch(self) -> tuple[int, float]:
        """One pass over the tape on every worker: ``(images, wall seconds)``."""
        fused_floor.reset_counter(self.counter)
        t0 = time.perf_counter()
        done = self.pool.broadcast("runtime.kernels.cpu.fused_floor:epoch", self.counter,
                                   queue=True)
        secs = time.perf_counter() - t0
        n = sum(d[0] for d in done)
        self.epochs.append((n, sum(d[1] for d in done)))
        return n, secs

    def cpu_per_image(self, last: int) -> float:
        """Seconds of worker CPU per image over the ``last`` epochs run."""
        runs = self.epochs[-last:] if last > 0 else []
        return sum(c for _, c in runs) / max(1, sum(n for n, _ in runs))

    def close(self) -> None:
        """Stop the workers and remove the counter file."""
        self.pool.close()
        try:
            os.unlink(self.counter)
        except OSError:
            pass
