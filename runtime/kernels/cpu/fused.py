"""CPU kernel of ``fused.image``, the fused image chain the compiler's ``fuse`` pass creates.

decode (only the region the next stage reads) -> random_resized_crop / resize -> [flip folded
into mirror] -> crop_mirror_normalize, written into ONE preallocated ``(N, ...)`` array
(samples are views ``out[i]``, so ``Batch.torch()`` needs no copy).  The stages themselves are
in :mod:`.fused_stages` (bit-exact with the unfused chain), region planning in
:mod:`.fused_roi`, the worker-process side in :mod:`.fused_workers`.

Also registers ``fused.color`` (:mod:`.fused_color`: colour ops, cast, arithmetic, normalize,
crop_mirror_normalize in one pass) and ``fused.window`` (:mod:`.fused_window`: a crop read in
place by resize / rotate / warp_affine).

The batch is cut into one chunk per pool thread; each chunk is ONE pool task running all
stages of its samples, stage by stage (no barrier between stages).
"""
from __future__ import annotations

import threading

from compiler.ir import stage_args, stage_names
from runtime.buffers import batch_array
from runtime.kernels.registry import register
from runtime.storage import sample_name
from runtime.workers.pool import WorkerCrashed, WorkerDied, get_workers

from .cast import to_numpy_dtype
from .fused_color import fused_color
from .fused_window import fused_window
from .fused_stages import batch_plan, chunks, run_chunk
from .fused_workers import hint_key, remember_shape, run_on_workers

__all__ = ["fused_image", "set_recorder"]

# the colour chain's kernel lives in .fused_color, the in-place window's in .fused_window
register("fused.color", "cpu")(fused_color)
register("fused.window", "cpu")(fused_window)


# ``recorder(ctx, inputs, args)``, called with every ``fused.image`` batch (None: off); the
# kernel floor of ``ndd bench --floor`` records one epoch with it (:mod:`.fused_floor`).
_recorder = [None]


def set_recorder(fn) -> None:
    """Call ``fn(ctx, inputs, args)`` with every batch ``fused.image`` runs from now on
    (``None``: stop).  The inputs are those of the call: copy what must outlive it."""
    _recorder[0] = fn


@register("fused.image", "cpu")
def fused_image(ctx, inputs, args):
    """Run the stages of a ``fused.image`` node on the batch (see the module docstring).

    The batch is split into consecutive chunks, one task each, running all stages of its
    samples (no barrier between stages).  With a cmn stage, the first sample to reach it
    allocates the ``(N, ...)`` batch array from its output shape (under a lock); every sample
    of that shape writes its view ``out[i]`` directly, any other shape gets its own array.
    When the node decodes (its input is the encoded files) and worker processes are up
    (:mod:`runtime.workers`), the chunks run in the workers writing into a shared-memory
    batch instead, with exactly the same per-sample code.
    """
    if _recorder[0] is not None:
        _recorder[0](ctx, inputs, args)
    n = ctx.batch_size
    threads = getattr(ctx.pool, "num_threads", 1)
    parts = chunks(n, threads)
    dt = to_numpy_dtype(stage_args(args, "cmn").get("dtype", "float32"))
    if stage_names(args)[0] == "decode" and len(parts) > 1:
        workers = get_workers(threads)
        if workers is not None:
            try:
                res = run_on_workers(ctx, inputs, args, workers, dt)
            except WorkerCrashed as exc:
                raise _crashed_batch(exc, inputs[0], n) from exc
            except WorkerDied:
                res = None      # workers are off (or were replaced); redo this batch on threads
            except Exception:   # noqa: BLE001 - the threads below raise it again
                # A sample failed.  Which failing sample a worker reaches first depends on
                # the claims, so the batch is redone on threads, which report the same
                # error every time (that of NDD_PROCESS_LANES=0).
                res = None
            if res is not None:
                return [res]
    lock = threading.Lock()
    batch = []          # [out array] once allocated

    def target_for(i, shape):
        with lock:
            if not batch:
                batch.append(batch_array((n,) + shape, dt))
        out = batch[0]
        return out[i] if out.shape[1:] == shape else None

    plan = batch_plan(args)     # shared by the threads' chunks

    def task(j):
        return run_chunk(ctx, inputs, args, parts[j], target_for, plan)
    res = [x for part in ctx.pool.map(task, len(parts)) for x in part]
    remember_shape(hint_key(ctx, args), res, args)
    return [res]


def _crashed_batch(exc: WorkerCrashed, data, n: int) -> WorkerCrashed:
    """The error of a batch whose decode crashed a worker process: it names the batch's
    samples (one of them made a native library fail) and is not retried on threads, where
    the same file would crash the calling process."""
    names = [sample_name(data, i) for i in range(min(n, 8))]
    more = f" and {n - len(names)} more" if n > len(names) else ""
    return WorkerCrashed(
        f"a worker process crashed ({exc.signal_name}) while decoding this batch: a native "
        f"library failed on one of its files ({', '.join(names)}{more}). The batch is not "
        f"decoded again in this process, where the same file would crash it; the other "
        f"batches go on, on new worker processes", exc.signal_name)
