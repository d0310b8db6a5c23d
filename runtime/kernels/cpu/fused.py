"""Kernels of the fused ops created by the compiler's ``fuse`` pass (``compiler/fusion_rules``).

* ``fused.image``: decode (only the region the next stage reads) -> random_resized_crop / resize
  -> [flip folded into mirror] -> crop_mirror_normalize written into ONE preallocated
  ``(N, ...)`` array (samples are views ``out[i]``, so ``Batch.torch()`` needs no copy).
* ``elementwise_fused``: a chain of arithmetic/cast steps evaluated per sample.

Every kernel reproduces the unfused chain bit for bit: the same per-sample functions are called
with the same arguments, random windows are drawn from the same per-sample seeds, and an ROI
decode feeding a resize covers every source pixel the resize taps touch (the window widened by
the filter support, see :func:`source_region`) and is placed into a zero full-size canvas on
which the public ``resample`` runs unchanged, so taps, weights and summation order are those of
the unfused kernel.  The batch is cut into one chunk per pool thread; each chunk is ONE pool
task running all stages of its samples, stage by stage (no barrier between stages).

Region planning lives in :mod:`.fused_roi`, the process-lane side in :mod:`.fused_lanes`.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from compiler.ir import stage_args, stage_names
from runtime.kernels.registry import per_sample, register, sample_args

from .fused_lanes import _hint_key, _remember_shape, _remote
from .fused_roi import (_CROP, _canvas, _resize_crop_finish, _resize_for_crop,  # noqa: F401
                        _roi_finish, _stage, resize_crop_plan, roi_resample, rrc_plan,
                        source_region)

def _layout(meta) -> str:
    return meta.layout or {3: "HWC", 2: "HW"}.get(meta.ndim, "")


# ------------------------------------------------------------------ fused.image
def _front_decode(ctx, inputs, args, i):
    """First phase of one sample: its arguments and the decode stage (if any).

    Returns ``[a, layout, x, k, window, finish]``: ``x`` the decoded image (or input sample;
    for decode -> rrc the pending decode ``todo`` of :func:`rrc_plan`), ``k`` the index of
    the next stage, ``window`` the cmn window of an ROI decode -> cmn, ``finish`` the pending
    ROI resample of a decode -> rrc (see :func:`rrc_plan`).
    """
    from runtime.kernels.cpu.bindings import _sample_name
    a = sample_args(ctx, args, i)
    stages = stage_names(a)
    data = inputs[0]
    x = data[i] if len(data) > 1 else data[0]
    layout = "HWC" if stages[0] == "decode" else _layout(ctx.in_metas[0])
    window, finish, k = None, None, 0
    if stages[0] == "decode":
        from runtime.codecs.image import decode, parse_image
        from runtime.kernels.cpu.cmn import cmn_window_from_crop
        name = _sample_name(data, i)
        dec = _stage(a, "decode", ("output_type", "dtype", "adjust_orientation"))
        nxt = stages[1] if len(stages) > 1 else None
        if nxt == "rrc":
            (x, finish), k = rrc_plan(x, name, a, i), 2
        elif nxt == "resize" and len(stages) > 2 and stages[2] == "cmn":
            plan = resize_crop_plan(x, name, a)
            if plan is not None:
                (x, finish), k = plan, 2
            else:
                x, k = decode(x, sample=name, **dec), 1
        elif nxt == "cmn":
            x = parse_image(x, sample=name)    # parsed once: decode reuses the header
            info = x.info()
            y0, x0, h, w = cmn_window_from_crop((info.height, info.width),
                                                **_stage(a, "cmn", _CROP))
            x = decode(x, roi=(y0, x0, y0 + h, x0 + w), sample=name, **dec)
            window, k = (0, 0, h, w), 1
        else:
            x, k = decode(x, sample=name, **dec), 1
    return [a, layout, x, k, window, finish]


def _front_rest(state, i):
    """Second phase: the stages before cmn -> (image, layout, cmn window or None, flip, a)."""
    from runtime.kernels.cpu.bindings import _resize_sample, resize_size_args
    a, layout, x, k, window, finish = state
    if finish is not None and finish[0] == "resize":
        x, window = _resize_crop_finish(x, *finish[1:])
    elif finish is not None:
        x = _roi_finish(x, *finish)
    flip = 0
    stages = stage_names(a)
    for j, st in enumerate(stages[k:], k):
        if st == "rrc":
            from runtime.kernels.cpu.crop_window import random_crop_window
            from runtime.kernels.cpu.random import sample_rng
            in_hw = x.shape[:2] if layout in ("HWC", "HW") else x.shape[1:3]
            rng = sample_rng(a["_seeds"], i)
            ra = stage_args(a, "rrc")
            y0, x0, h, w = random_crop_window(in_hw, rng, random_area=ra["random_area"],
                                              random_aspect_ratio=ra["random_aspect_ratio"],
                                              num_attempts=ra["num_attempts"])
            x = _resize_sample(x, layout, ra, {"size": ra["size"], "roi_start": (y0, x0),
                                               "roi_end": (y0 + h, x0 + w)})
        elif st == "resize":
            ra = stage_args(a, "resize")
            size_args = resize_size_args(ra)
            if window is None and j + 1 < len(stages) and stages[j + 1] == "cmn":
                x, window = _resize_for_crop(x, layout, ra, size_args, a)
            else:
                x = _resize_sample(x, layout, ra, size_args)
        elif st == "flip":
            flip = 1 if stage_args(a, "flip").get("horizontal", 1) else 0
        elif st == "cmn":
            break
    return x, layout, window, flip, a


def _cmn_into(image, layout, window, a, flip, target):
    """crop_mirror_normalize of one sample written into ``target`` (its output array).

    The arguments are folded by the cached :func:`runtime.kernels.cpu.cmn_batch.cmn_plan`, so
    per sample only the GIL-free torch work of :func:`cmn_plan_into` remains (the arithmetic
    of the unfused kernel, bit for bit)."""
    from runtime.kernels.cpu.cmn import _mirror_flag
    from runtime.kernels.cpu.cmn_batch import cmn_plan, cmn_plan_into
    lay = layout or {3: "HWC", 2: "HW"}.get(image.ndim)
    c_axis = lay.find("C") if isinstance(lay, str) else -1
    c = stage_args(a, "cmn")
    plan = cmn_plan(lay, image.ndim, image.shape[c_axis] if c_axis >= 0 else None,
                    c.get("output_layout", "CHW"), c.get("mean", 0.0),
                    c.get("std", 1.0), c.get("scale", 1.0), c.get("shift", 0.0))
    mirror = _mirror_flag(c.get("mirror", 0)) != bool(flip)
    cmn_plan_into(plan, image, window, mirror, target)


def _cmn_shape(image, layout, window, a):
    """Output shape of the cmn stage: ``image``'s shape with the window's H and W, permuted
    to ``cmn.output_layout``."""
    out_layout = stage_args(a, "cmn").get("output_layout", "CHW")
    try:
        ah, aw, perm = _cmn_axes(layout, image.ndim, out_layout)
    except TypeError as exc:    # an unhashable layout argument: no caching
        if "unhashable" not in str(exc):
            raise
        ah, aw, perm = _cmn_axes.__wrapped__(layout, image.ndim, out_layout)
    shape = list(image.shape)
    shape[ah], shape[aw] = window[2], window[3]
    return tuple(shape[p] for p in perm)


@functools.lru_cache(maxsize=64)
def _cmn_axes(layout, ndim, out_layout):
    """``(H axis, W axis, output permutation)`` of a cmn stage (validated; cached)."""
    from runtime.kernels.cpu.cmn import resolve_output_layout
    from runtime.kernels.cpu.crop import layout_axes
    lay, axes = layout_axes(layout, ndim)
    _, perm = resolve_output_layout(lay, out_layout)
    return axes["H"], axes["W"], perm


# Samples per pool task: each task runs its samples stage by stage (all decodes, then all
# resizes, then all normalizations).  Running one stage's code on several samples in a row keeps
# it hot in the caches: measured ~10% less CPU than finishing each sample before the next (train
# chain, 2 cores); no barrier separates the stages of different tasks.
_CHUNKS_PER_THREAD = 1


def _chunks(n: int, threads: int) -> list[range]:
    """``range(n)`` split into about ``_CHUNKS_PER_THREAD * threads`` consecutive pieces."""
    parts = max(1, min(n, _CHUNKS_PER_THREAD * max(1, threads)))
    bounds = [n * j // parts for j in range(parts + 1)]
    return [range(bounds[j], bounds[j + 1]) for j in range(parts)]


def run_chunk(ctx, inputs, args, idx, target_for=None) -> list:
    """All stages of the samples ``idx`` of a ``fused.image`` node, stage by stage.

    ``target_for(i, shape)`` may return the array sample ``i``'s cmn output of ``shape`` is
    written into (a view of the batch array); None gives the sample its own array.  Used by
    the pool threads and, unchanged, by the process lanes (:func:`remote_claims`).
    """
    from runtime.codecs.image import decode
    from runtime.kernels.cpu.cast import to_numpy_dtype
    from runtime.kernels.cpu.crop import clip_window, layout_axes
    from runtime.kernels.cpu.crop_window import crop_window
    states = [_front_decode(ctx, inputs, args, i) for i in idx]
    for st in states:   # the planned ROI decodes, one after the other
        if st[5] is not None:
            todo = st[2]
            st[2] = decode(todo[0], roi=todo[1], sample=todo[2], **todo[3])
    fronts = [_front_rest(st, i) for st, i in zip(states, idx)]
    del states
    if stage_names(args)[-1] != "cmn":
        return [f[0] for f in fronts]
    dt = to_numpy_dtype(stage_args(args, "cmn").get("dtype", "float32"))
    out = []
    for i, (x, layout, window, flip, a) in zip(idx, fronts):
        if window is None:
            _, axes = layout_axes(layout, x.ndim)
            in_hw = (x.shape[axes["H"]], x.shape[axes["W"]])
            window = clip_window(crop_window(in_hw, **_stage(a, "cmn", _CROP)), in_hw, "error")
        shape = _cmn_shape(x, layout, window, a)
        target = target_for(i, shape) if target_for is not None else None
        if target is None:
            target = np.empty(shape, dt)
        _cmn_into(x, layout, window, a, flip, target)
        out.append(target)
    return out


@register("fused.image")
def fused_image(ctx, inputs, args):
    """Run the stages of a ``fused.image`` node on the batch (see the module docstring).

    The batch is split into consecutive chunks, one task each, running all stages of its
    samples (no barrier between stages).  With a cmn stage, the first sample to reach it
    allocates the ``(N, ...)`` batch array from its output shape (under a lock); every sample
    of that shape writes its view ``out[i]`` directly, any other shape gets its own array.
    When the node decodes (its input is the encoded files) and process lanes are up
    (:mod:`runtime.proclanes`), the chunks run in worker processes writing into a
    shared-memory batch instead, with exactly the same per-sample code.
    """
    from runtime.buffers import batch_array
    from runtime.kernels.cpu.cast import to_numpy_dtype
    from runtime.proclanes import LaneDied, get_lanes
    n = ctx.batch_size
    threads = getattr(ctx.pool, "num_threads", 1)
    chunks = _chunks(n, threads)
    dt = to_numpy_dtype(stage_args(args, "cmn").get("dtype", "float32"))
    if stage_names(args)[0] == "decode" and len(chunks) > 1:
        lanes = get_lanes(threads)
        if lanes is not None:
            try:
                res = _remote(ctx, inputs, args, lanes, dt)
            except LaneDied:
                res = None      # lanes are off (or were replaced); redo this batch on threads
            except Exception:   # noqa: BLE001 - the threads below raise it again
                # A sample failed.  Which failing sample a lane reaches first depends on
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

    def task(j):
        return run_chunk(ctx, inputs, args, chunks[j], target_for)
    res = [x for part in ctx.pool.map(task, len(chunks)) for x in part]
    _remember_shape(_hint_key(ctx, args), res, args)
    return [res]


# ------------------------------------------------------------------ elementwise_fused
@register("elementwise_fused")
@per_sample
def elementwise_fused(ctx, ins, a, i):
    """Evaluate the fused arithmetic/cast program on one sample (no handles, no batches)."""
    from runtime.kernels.cpu.arithmetic import apply
    from runtime.kernels.cpu.cast import cast
    results = []
    for op, operands, dt in a["program"]:
        vals = [ins[o[1]] if o[0] == "t" else results[o[1]] if o[0] == "r" else o[1]
                for o in operands]
        if op == "cast":
            results.append(cast(vals[0], dt))
        else:
            results.append(apply(op, *vals, out_dtype=dt))
    return results[-1]
