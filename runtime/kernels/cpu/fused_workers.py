"""``fused.image`` on the worker processes (:mod:`runtime.workers`): the batch's encoded
files go into one shared input segment after a claim byte per sample; every worker runs
:func:`remote_claims`, taking groups of unclaimed samples until none are left, and writes its
cmn outputs into the shared batch (:func:`run_on_workers` is the caller's side)."""
from __future__ import annotations

import fcntl

import numpy as np

from compiler.ir import stage_names
from runtime.buffers import attach_shared, input_pool, shared_fd, shared_pool
from runtime.kernels.registry import KernelContext
from runtime.storage import SampleList

from .fused_stages import batch_plan, run_chunk

__all__ = ["WORKER_ENTRY", "remote_claims", "claim", "pack_inputs", "run_on_workers",
           "hint_key", "remember_shape", "Stacked", "compact_args", "cost_order"]

#: The worker-side entry point, as "module:function" for ``WorkerPool.broadcast``.
WORKER_ENTRY = "runtime.kernels.cpu.fused_workers:remote_claims"


def remote_claims(ctx_fields, in_spec, offsets, source_info, args, order, out_spec,
                  workers):
    """Worker-side entry point: run samples of the batch, claimed group by group.

    The encoded samples and the claim flags live in the shared input segment ``in_spec =
    (name, shape, dtype)`` (see :func:`pack_inputs`): flag ``i`` (byte ``i``) is set once a
    worker took sample ``i``; sample ``k``'s bytes are ``[offsets[k], offsets[k + 1])``.
    Every worker of the batch gets this same call and takes the next unclaimed samples of
    ``order`` (costliest first) until none are left (:func:`claim`, under an ``flock`` of the
    input segment's file, which each worker opened itself), so no worker idles while another
    still has a queue.  A sample is never run twice: its cmn output is written in several
    in-place steps, which two workers racing on the same target would compound.

    cmn outputs of the expected shape are written into the shared batch ``out_spec``;
    returns ``{i: array}`` for every other result of the samples run here.  On an error the
    claim flags are all set (the other workers stop) and the error is raised.
    """
    ctx = KernelContext(None, *ctx_fields)
    args = {k: v.samples() if v.__class__ is Stacked else v for k, v in args.items()}
    buf = attach_shared(*in_spec)
    lock = shared_fd(in_spec[0])
    claims = buf[:ctx.batch_size]
    data = SampleList([buf[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)],
                      source_info)
    out = attach_shared(*out_spec) if out_spec is not None else None
    written = set()

    def target_for(i, shape):
        if out is not None and out.shape[1:] == shape:
            written.add(i)
            return out[i]
        return None
    results = {}
    plan = batch_plan(args)         # shared by the groups this worker claims
    try:
        while True:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                group = claim(claims, order, workers)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
            if not group:
                return results
            for i, r in zip(group, run_chunk(ctx, [data], args, group, target_for, plan)):
                if i not in written:
                    results[i] = r
    except BaseException:
        claims[:] = 1           # the batch failed: the other workers stop taking samples
        raise


def claim(claims, order, workers: int) -> list[int]:
    """Take the next group of unclaimed samples of ``order`` (sorted; call it under the
    claims lock): about a ``2 * workers``-th of what is left (guided self-scheduling: big
    groups while much is left keep the stage-by-stage cache reuse of
    :func:`.fused_stages.run_chunk`, single samples at the end even out the workers)."""
    flags = claims.tobytes()        # one copy: indexing numpy scalars cost ~0.2 us a flag
    free = [i for i in order if not flags[i]]
    if not free:
        return []
    group = free[:max(1, -(-len(free) // (2 * workers)))]
    claims[group] = 1
    return sorted(group)


def pack_inputs(data, n: int):
    """The encoded samples copied into one shared segment after ``n`` zeroed claim flags.

    Returns ``(array, name, offsets)`` (keep ``array`` alive while the workers use it), or
    None when a sample is not a byte buffer or no shared memory is available.  Segment sizes
    are rounded up to a power of two (at least 1 MB) so a few recycled segments serve every
    batch (:data:`runtime.buffers.input_pool`)."""
    parts = []
    for x in data:
        if x.__class__ is not np.ndarray:
            try:
                x = np.frombuffer(memoryview(x), np.uint8)
            except TypeError:
                return None
        if x.dtype != np.uint8 or x.ndim != 1 or not x.flags.c_contiguous:
            return None
        parts.append(x)
    start = -(-n // 64) * 64
    offsets = [start]
    for x in parts:
        offsets.append(offsets[-1] + x.size)
    size = max(1 << 20, 1 << (offsets[-1] - 1).bit_length())
    buf, name = input_pool.shared_empty((size,), np.uint8)
    if name is None:
        return None
    buf[:n] = 0
    for x, o in zip(parts, offsets):
        buf[o:o + x.size] = x
    return buf, name, offsets


# Per fused node (its constant arguments and batch size): the per-sample output shape seen last
# time, so the next batch's shared output can be allocated before any sample is computed.
_shape_hints: dict = {}


def hint_key(ctx, args):
    """The node's constant arguments (hashable values, see ``compiler.ir.Node``) and batch
    size; None when some argument is not hashable (no hint then)."""
    try:
        return hash((ctx.batch_size, tuple(sorted(
            (k, v) for k, v in args.items()
            if k != "_seeds" and k not in ctx.tensor_arg_names))))
    except TypeError:
        return None


def run_on_workers(ctx, inputs, args, workers, dt):
    """Run the batch on the worker pool ``workers``: one :func:`remote_claims` call per worker
    (``WorkerPool.broadcast``), all sharing the packed inputs and the claim flags.  None when
    the inputs cannot be shared (the caller runs the batch on threads)."""
    n = ctx.batch_size
    data = inputs[0]
    packed = pack_inputs(data, n)
    if packed is None:
        return None
    in_buf, in_name, offsets = packed
    key = hint_key(ctx, args)
    shape = _shape_hints.get(key) if stage_names(args)[-1] == "cmn" else None
    out, name = (shared_pool.shared_empty((n,) + shape, dt) if shape is not None
                 else (None, None))
    spec = (name, out.shape, out.dtype.str) if name is not None else None
    info = getattr(data, "source_info", None)
    fields = (ctx.in_metas, ctx.out_metas, set(ctx.tensor_arg_names), n, ctx.op)
    order = cost_order(data, n)
    shared = [(input_pool, in_name)] + ([(shared_pool, name)] if name else [])
    in_spec = (in_name, in_buf.shape, in_buf.dtype.str)

    # every worker gets the same call: the idle ones at once from here, the others (busy with
    # another batch in flight) through a pool thread when they free up
    found = {}
    sent = compact_args(args, ctx.tensor_arg_names)
    for part in workers.broadcast(WORKER_ENTRY, fields, in_spec, offsets, info, sent, order,
                                  spec, workers.n, shared=shared,
                                  helper=getattr(ctx.pool, "submit", None)):
        found.update(part)
    del in_buf
    res = [found[i] if i in found else out[i] for i in range(n)]
    remember_shape(key, res, args)
    return res


class Stacked:
    """A per-sample tensor argument sent to the workers as one array: pickling a list of 32
    0-d arrays (a coin flip per sample) cost ~0.4 ms to dump and as much to load in every
    worker, between two batches; one stacked array ~10 us."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getstate__(self):
        return self.array

    def __setstate__(self, array):
        self.array = array

    def samples(self) -> list:
        """The per-sample list again: ``array[i, ...]``, arrays of the original shape."""
        return [self.array[i, ...] for i in range(self.array.shape[0])]


def compact_args(args: dict, names) -> dict:
    """``args`` with each per-sample list of same-shaped, same-dtype arrays in ``names``
    replaced by a :class:`Stacked` (others unchanged)."""
    out = None
    for k in names:
        v = args.get(k)
        if v.__class__ is not list or not v or any(x.__class__ is not np.ndarray for x in v):
            continue
        first = v[0]
        if first.dtype.hasobject or any(x.shape != first.shape or x.dtype != first.dtype
                                        for x in v):
            continue
        if out is None:
            out = dict(args)
        out[k] = Stacked(np.array(v, dtype=first.dtype))
    return args if out is None else out


# Per-sample cost model of a fused decode chain for balancing the workers: decoding is roughly
# proportional to the encoded size, plus a fixed part (resample, normalize) worth about this
# many encoded bytes.
_FIXED_COST_BYTES = 20_000


def cost_order(data, n: int) -> list[int]:
    """The batch's sample indices, estimated costliest first (a broadcast single sample: in
    order).  Handing out the big samples first leaves the small ones to even out the workers
    at the end (longest-processing-time-first list scheduling)."""
    if len(data) != n:
        return list(range(n))
    cost = [getattr(x, "nbytes", 0) + _FIXED_COST_BYTES for x in data]
    return sorted(range(n), key=cost.__getitem__, reverse=True)


def remember_shape(key, res, args):
    """Keep the per-sample output shape of a batch whose cmn outputs all have one (the hint
    :func:`run_on_workers` allocates the next batch's shared output from)."""
    if key is not None and stage_names(args)[-1] == "cmn" and res:
        first = res[0].shape
        if all(r.shape == first for r in res):
            _shape_hints[key] = first
            while len(_shape_hints) > 256:
                _shape_hints.pop(next(iter(_shape_hints)))
