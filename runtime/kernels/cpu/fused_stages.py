"""The stages of a ``fused.image`` node on a chunk of its samples (:func:`run_chunk`).

A ``fused.image`` node (``compiler/fusion_rules.py``) does: decode (only the region the next
stage reads) -> random_resized_crop / resize -> [flip folded into mirror] ->
crop_mirror_normalize, each stage a ``compiler.ir.Stage`` record in ``args["stages"]``.  Every
stage reproduces the unfused chain bit for bit: the same per-sample functions are called with
the same arguments, random windows are drawn from the same per-sample seeds, and a region
decode feeding a resize covers every source pixel the resize taps touch (:mod:`.fused_roi`).

:func:`run_chunk` runs all stages of a group of samples, stage by stage (all decodes, then all
resizes, then all normalizations: the code of one stage stays hot in the caches); the pool
threads (:mod:`.fused`) and the worker processes (:mod:`.fused_workers`) run the same one.
"""
from __future__ import annotations

import functools

import numpy as np

from compiler.ir import stage_args, stage_names
from runtime.codecs import nvimgcodec_backend as nvb
from runtime.codecs.image import decode, decode_plain, parse_image, plain_decode_args
from runtime.codecs.structure import jpeg_structure_problem
from runtime.kernels.caching import call_cached
from runtime.kernels.params.layouts import default_layout, hw_axes, layout_axes, meta_layout
from runtime.kernels.params.normalize import (cmn_window_from_crop, mirror_flag,
                                              resolve_output_layout)
from runtime.kernels.params.resize_geometry import resize_size_args
from runtime.kernels.params.windows import clip_window, crop_args, crop_window, random_window
from runtime.kernels.registry import given, sample_args
from runtime.storage import sample_name

from .cast import to_numpy_dtype
from .cmn_batch import cmn_plan, cmn_plan_into
from .fused_roi import (DECODE_ARGS, INTERP_ARGS, PlainRRC, PlainTodo, resize_crop_finish,
                        resize_crop_plan, resize_for_crop, roi_finish, rrc_plan)
from .resize import resize_sample

__all__ = ["run_chunk", "batch_plan", "BatchPlan", "chunks", "cmn_shape", "CHUNKS_PER_THREAD", "kernel_tape", "run_tape"]


def _front_decode(ctx, inputs, args, i, consts=None):
    """First phase of one sample: its arguments and the decode stage (if any).

    Returns ``[a, layout, x, k, window, finish]``: ``x`` the decoded image (or input sample;
    for decode -> rrc the pending decode ``todo`` of :func:`.fused_roi.rrc_plan`), ``k`` the
    index of the next stage, ``window`` the cmn window of an ROI decode -> cmn, ``finish`` the
    pending ROI resample of a decode -> rrc (see :func:`.fused_roi.rrc_plan`).  ``consts``:
    the batch's :func:`_batch_consts` (computed here when None).
    """
    if consts is None:
        consts = _batch_consts(args)
    stages, rrc_consts = consts
    a = sample_args(ctx, args, i)
    data = inputs[0]
    x = data[i] if len(data) > 1 else data[0]
    layout = "HWC" if stages[0] == "decode" else meta_layout(ctx.in_metas[0])
    window, finish, k = None, None, 0
    if stages[0] == "decode":
        name = sample_name(data, i)
        nxt = stages[1] if len(stages) > 1 else None
        if nxt == "rrc":
            (x, finish), k = rrc_plan(x, name, a, i, rrc_consts), 2
        elif nxt == "resize" and len(stages) > 2 and stages[2] == "cmn":
            plan = resize_crop_plan(x, name, a)
            if plan is not None:
                (x, finish), k = plan, 2
            else:
                x, k = decode(x, sample=name, **given(stage_args(a, "decode"), DECODE_ARGS)), 1
        elif nxt == "cmn":
            x = parse_image(x, sample=name)    # parsed once: decode reuses the header
            info = x.info()
            y0, x0, h, w = cmn_window_from_crop((info.height, info.width),
                                                **crop_args(stage_args(a, "cmn")))
            x = decode(x, roi=(y0, x0, y0 + h, x0 + w), sample=name,
                       **given(stage_args(a, "decode"), DECODE_ARGS))
            window, k = (0, 0, h, w), 1
        else:
            x, k = decode(x, sample=name, **given(stage_args(a, "decode"), DECODE_ARGS)), 1
    return [a, layout, x, k, window, finish]


def _plain_front(ctx, inputs, args, i, plain):
    """:func:`_front_decode` of a decode -> rrc sample that is a plain JPEG (``plain`` the
    batch's :class:`.fused_roi.PlainRRC`: the same plan, without the generic parsing), or
    None (any other file)."""
    data = inputs[0]
    got = plain.plan(data[i] if len(data) > 1 else data[0], i)
    return None if got is None else [sample_args(ctx, args, i), "HWC", got[0], 2, None, got[1]]


def _batch_consts(args):
    """What every sample of a batch shares: ``(stage names, rrc constants)``, the latter
    ``(rrc arguments, decoder arguments, filter arguments)`` of a decode -> rrc chain whose
    two stages take no per-sample argument (None otherwise; see :func:`.fused_roi.rrc_plan`).
    Computed once per chunk instead of once per sample."""
    stages = args.get("stages", ())
    names = tuple(s.name for s in stages)
    if names[:2] != ("decode", "rrc") or stages[0].tensor_args or stages[1].tensor_args:
        return names, None
    ra = dict(stages[1].args)
    return names, (ra, given(dict(stages[0].args), DECODE_ARGS), given(ra, INTERP_ARGS))


def _front_rest(state, i, stages=None):
    """Second phase: the stages before cmn -> (image, layout, cmn window or None, flip, a).
    ``stages``: the stage names (the batch's, or read from the sample's arguments)."""
    a, layout, x, k, window, finish = state
    if finish is not None and finish[0] == "resize":
        x, window = resize_crop_finish(x, *finish[1:])
    elif finish is not None:
        x = roi_finish(x, *finish)
    flip = 0
    if stages is None:
        stages = stage_names(a)
    if k >= len(stages) or stages[k] == "cmn":
        return x, layout, window, flip, a       # nothing between the planned part and cmn
    for j, st in enumerate(stages[k:], k):
        if st == "rrc":
            h_axis, w_axis = hw_axes(layout)
            in_hw = (x.shape[h_axis], x.shape[w_axis])
            ra = stage_args(a, "rrc")
            y0, x0, h, w = random_window(in_hw, ra, a["_seeds"], i)
            x = resize_sample(x, layout, ra, {"size": ra["size"], "roi_start": (y0, x0),
                                              "roi_end": (y0 + h, x0 + w)})
        elif st == "resize":
            ra = stage_args(a, "resize")
            size_args = resize_size_args(ra)
            if window is None and j + 1 < len(stages) and stages[j + 1] == "cmn":
                x, window = resize_for_crop(x, layout, ra, size_args, a)
            else:
                x = resize_sample(x, layout, ra, size_args)
        elif st == "flip":
            flip = 1 if stage_args(a, "flip").get("horizontal", 1) else 0
        elif st == "cmn":
            break
    return x, layout, window, flip, a


def _cmn_step(image, layout, a, flip):
    """``(plan, mirror)`` of the cmn stage of one sample: the arguments folded by the cached
    :func:`.cmn_batch.cmn_plan`, so per sample only the GIL-free work of
    :func:`.cmn_batch.cmn_plan_into` remains (the arithmetic of the unfused kernel, bit for
    bit)."""
    lay = layout or default_layout(image.ndim) or None
    c_axis = lay.find("C") if isinstance(lay, str) else -1
    c = stage_args(a, "cmn")
    plan = cmn_plan(lay, image.ndim, image.shape[c_axis] if c_axis >= 0 else None,
                    c.get("output_layout", "CHW"), c.get("mean", 0.0),
                    c.get("std", 1.0), c.get("scale", 1.0), c.get("shift", 0.0))
    return plan, mirror_flag(c.get("mirror", 0)) != bool(flip)


def cmn_shape(image, layout, window, a) -> tuple:
    """Output shape of the cmn stage: ``image``'s shape with the window's H and W, permuted
    to ``cmn.output_layout``."""
    out_layout = stage_args(a, "cmn").get("output_layout", "CHW")
    ah, aw, perm = call_cached(_cmn_axes, layout, image.ndim, out_layout)
    shape = list(image.shape)
    shape[ah], shape[aw] = window[2], window[3]
    return tuple(shape[p] for p in perm)


@functools.lru_cache(maxsize=64)
def _cmn_axes(layout, ndim, out_layout):
    """``(H axis, W axis, output permutation)`` of a cmn stage (validated; cached)."""
    lay, axes = layout_axes(layout, ndim)
    _, perm = resolve_output_layout(lay, out_layout)
    return axes["H"], axes["W"], perm


#: Samples per pool task: each task runs its samples stage by stage (all decodes, then all
#: resizes, then all normalizations).  Running one stage's code on several samples in a row
#: keeps it hot in the caches: measured ~10% less CPU than finishing each sample before the
#: next (train chain, 2 cores); no barrier separates the stages of different tasks.
CHUNKS_PER_THREAD = 1


def chunks(n: int, threads: int) -> list[range]:
    """``range(n)`` split into about ``CHUNKS_PER_THREAD * threads`` consecutive pieces."""
    parts = max(1, min(n, CHUNKS_PER_THREAD * max(1, threads)))
    bounds = [n * j // parts for j in range(parts + 1)]
    return [range(bounds[j], bounds[j + 1]) for j in range(parts)]


def _cmn_window(x, layout, a):
    """The cmn crop window ``(y0, x0, h, w)`` of a sample whose earlier stages gave none."""
    _, axes = layout_axes(layout, x.ndim)
    in_hw = (x.shape[axes["H"]], x.shape[axes["W"]])
    return clip_window(crop_window(in_hw, **crop_args(stage_args(a, "cmn"))), in_hw, "error")


class BatchPlan:
    """What every sample of one ``fused.image`` batch shares, made once per batch
    (:func:`batch_plan`) and handed to each :func:`run_chunk` call of the batch: a worker
    claims its samples in several small groups, and re-deriving this per group cost ~35 us
    each (a quarter of the per-sample Python at the group sizes of two workers).

    ``consts`` is :func:`_batch_consts`; ``plain`` a :class:`.fused_roi.PlainRRC` of its rrc
    constants when the decoder arguments take the plain-JPEG route
    (``codecs.image.plain_decode_args``: the samples that are plain JPEGs are planned by
    it), else None; ``cmn`` the cmn :class:`compiler.ir.Stage` (None when
    the chain does not end in one), ``dtype`` its output dtype, ``mirror_key`` the key of its
    per-sample ``mirror``; ``memo`` maps ``(shape, dtype, layout, window)`` of a cmn input to
    ``[window, output shape, plan]`` (None: a cmn argument other than ``mirror`` is per sample,
    so those differ between samples).  Shared by the threads of a batch: entries are only
    added, and an entry's plan filled in once (the same value whoever computes it).
    """

    __slots__ = ("consts", "plain", "cmn", "dtype", "mirror_key", "memo")

    def __init__(self, args):
        self.consts = _batch_consts(args)
        rrc = self.consts[1]
        self.plain = (PlainRRC(rrc, args["_seeds"]) if rrc is not None and "_seeds" in args
                      and plain_decode_args(**rrc[1]) else None)
        stages = args.get("stages", ())
        self.cmn = cmn = stages[-1] if stages and stages[-1].name == "cmn" else None
        self.dtype = self.mirror_key = self.memo = None
        if cmn is not None:
            self.dtype = to_numpy_dtype(stage_args(args, "cmn").get("dtype", "float32"))
            self.mirror_key = cmn.tensor_arg("mirror")
            # the window, output shape and plan depend on the image's shape and layout and on
            # the constant cmn arguments only (mirror, which they ignore, is read per sample)
            self.memo = {} if {k for k, _ in cmn.tensor_args} <= {"mirror"} else None


def batch_plan(args) -> BatchPlan:
    """The :class:`BatchPlan` of a batch's kernel arguments ``args``."""
    return BatchPlan(args)


def run_chunk(ctx, inputs, args, idx, target_for=None, plan=None) -> list:
    """All stages of the samples ``idx`` of a ``fused.image`` node, stage by stage.

    ``target_for(i, shape)`` may return the array sample ``i``'s cmn output of ``shape`` is
    written into (a view of the batch array); None gives the sample its own array.  ``plan``:
    the batch's :func:`batch_plan` (made here when None), for calls that run parts of one
    batch.  Used by the pool threads and, unchanged, by the worker processes
    (:func:`.fused_workers.remote_claims`).
    """
    if plan is None:
        plan = BatchPlan(args)
    consts, plain = plan.consts, plan.plain
    states = []
    for i in idx:
        st = _plain_front(ctx, inputs, args, i, plain) if plain is not None else None
        states.append(st if st is not None else _front_decode(ctx, inputs, args, i, consts))
    for st, i in zip(states, idx):     # the planned ROI decodes, one after the other
        if st[5] is not None:
            todo = st[2]
            if todo.__class__ is PlainTodo:
                part = decode_plain(todo.stream, todo.region, todo.hw)
                if part is not None:
                    st[2] = part
                    continue
                st[:] = _front_decode(ctx, inputs, args, i, consts)     # decode decides
                todo = st[2]
            st[2] = decode(todo[0], roi=todo[1], sample=todo[2], **todo[3])
    names = consts[0]
    fronts = [_front_rest(st, i, names) for st, i in zip(states, idx)]
    del states
    cmn = plan.cmn
    if cmn is None:
        return [f[0] for f in fronts]
    dt, memo, mirror_key = plan.dtype, plan.memo, plan.mirror_key
    out = []
    for i, (x, layout, window, flip, a) in zip(idx, fronts):
        key = (x.shape, x.dtype, layout, window)
        got = memo.get(key) if memo is not None else None
        if got is None:
            w = window if window is not None else _cmn_window(x, layout, a)
            got = [w, cmn_shape(x, layout, w, a), None]
            if memo is not None:
                memo[key] = got
        w, shape, cmn_plan_ = got
        target = target_for(i, shape) if target_for is not None else None
        if target is None:
            target = np.empty(shape, dt)
        if cmn_plan_ is None:
            cmn_plan_ = got[2] = _cmn_step(x, layout, a, flip)[0]
        mirror = a[mirror_key] if mirror_key is not None else cmn.arg("mirror", 0)
        cmn_plan_into(cmn_plan_, x, w, mirror_flag(mirror) != bool(flip), target)
        out.append(target)
    return out


# ------------------------------------------------------------------ the kernels alone
# ``ndd bench --floor`` / ``benchmarks/tight_loop.py``: the kernel calls of a batch recorded
# once (every argument, header, window and region computed beforehand), then replayed as a
# tight loop: what the pipeline's pixels cost without any per-sample Python around them.


def kernel_tape(ctx, inputs, args, idx) -> list:
    """The kernel calls :func:`run_chunk` makes for the samples ``idx``, for :func:`run_tape`.

    Only chains whose decode is planned (decode -> random_resized_crop, decode -> resize ->
    cmn with a crop inside the resize) and end in ``[flip ->] cmn`` are supported.  Each entry
    is ``(decode function, its arguments, finish, cmn plan, window, mirror, output shape)``;
    a plain JPEG (no EXIF rotation, CMYK, or damaged structure; RGB uint8) is decoded by the
    codec call itself (:func:`runtime.codecs.nvimgcodec_backend.decode_stream`), checked here
    to give the pixels :func:`runtime.codecs.image.decode` gives.

    Raises
    ------
    ValueError
        The chain is not one of those.
    """
    names = stage_names(args)
    consts = _batch_consts(args)
    tape = []
    for i in idx:
        st = _front_decode(ctx, inputs, args, i, consts)
        todo, finish, k = st[2], st[5], st[3]
        if finish is None or names[-1] != "cmn" or any(s not in ("flip", "cmn")
                                                        for s in names[k:]):
            raise ValueError(f"kernel_tape: the chain {'->'.join(names)} has no planned "
                             f"decode ending in crop_mirror_normalize")
        full = decode(todo[0], roi=todo[1], sample=todo[2], **todo[3])
        call = (decode, (todo[0],), {"roi": todo[1], "sample": todo[2], **todo[3]})
        fast = _plain_jpeg(todo)
        if fast is not None and np.array_equal(fast[0](*fast[1]), full):
            call = (fast[0], fast[1], {})
        st[2] = full
        x, layout, window, flip, a = _front_rest(st, i)
        if window is None:
            window = _cmn_window(x, layout, a)
        plan, mirror = _cmn_step(x, layout, a, flip)
        tape.append((call, finish, plan, window, mirror, cmn_shape(x, layout, window, a)))
    return tape


def _plain_jpeg(todo):
    """``(decode_stream, args)`` for a planned decode of a plain JPEG, or None."""
    src, roi, _name, dec = todo
    stream = getattr(src, "stream", None)
    if stream is None or src.fmt != "jpeg" or dec.get("output_type", "RGB") != "RGB" or \
            dec.get("dtype", "uint8") not in ("uint8", None) or nvb.is_cmyk(stream):
        return None
    if dec.get("adjust_orientation", True) and src.info().orientation != 1:
        return None
    if jpeg_structure_problem(src.buf) is not None:
        return None
    return nvb.decode_stream, (stream, "RGB", roi, False, False)


def run_tape(tape, out) -> None:
    """Replay a :func:`kernel_tape`: decode, resample and normalize every sample, writing
    sample ``j`` into ``out[j % len(out)]`` (an ``(M,) + shape`` array of the cmn dtype; a
    sample of another shape into an array of its own)."""
    for j, ((fn, fargs, kw), finish, plan, window, mirror, _shape) in enumerate(tape):
        part = fn(*fargs, **kw)
        if finish[0] == "resize":
            x = resize_crop_finish(part, *finish[1:])[0]
        else:
            x = roi_finish(part, *finish)
        target = out[j % len(out)]
        if target.shape != _shape:
            target = np.empty(_shape, out.dtype)
        cmn_plan_into(plan, x, window, mirror, target)
