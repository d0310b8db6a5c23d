"""GPU kernel of ``fused.image``: [decode ->] resize / random_resized_crop -> [flip] ->
crop_mirror_normalize in two launches (``resize.cu``'s first pass, ``resize_cmn.cu``).

The stages are the compiler's ``Stage`` records (``compiler/fusion_rules.py``), read as the CPU
kernel reads them (``runtime/kernels/cpu/fused_stages.py``): the resize's grid (or the random
window, same seeds), the flip folded into ``mirror``, cmn's window placed on the resized extent.
Pass 2 computes only the pixels cmn reads, each rounded to the resize's output type before the
normalization, so the result equals the unfused GPU chain (``resize`` then
``crop_mirror_normalize``) bit for bit, and the resized image is never stored. A ``flip ->
crop_mirror_normalize`` node is cmn with the mirror folded in (one launch).

A chain that decodes (first stage ``decode``: ``decoders.image(device="gpu")`` -> rrc / resize
[-> [flip] -> cmn]) decodes only the source box its resize reads (the tap tables' extent,
:func:`runtime.kernels.gpu.resize.taps_box`, computed on the oriented image size from the file's
header before decoding; the random window drawn as the unfused kernel draws it), through
:func:`runtime.kernels.gpu.decode.decode_regions` (nvImageCodec's region decode on a device, the
CPU's region decode + one H2D copy elsewhere); the taps are re-based onto the region
(:func:`runtime.kernels.gpu.resize.shift_to_region`), so the resize reads the same pixels with
the same weights in the same order as on the whole decoded image. The decode runs ahead of CUDA
graphs (a decoding node is never captured).
"""
from __future__ import annotations

import numpy as np

from compiler.ir import stage_args, stage_names
from runtime.kernels.params.layouts import meta_layout
from runtime.kernels.params.normalize import mirror_flag
from runtime.kernels.registry import register, sample_args

from runtime.codecs.image import parse_image
from runtime.storage import sample_name

from .cmn import DESC_WORDS as CMN_WORDS
from .cmn import cmn_batch, cmn_out_dtype, sample_desc
from .decode import decode_regions
from .launch import family_kernel, launch_batch
from .resize import (DESC_WORDS as RS_WORDS, launch_pass_one, out_dtype_of, params_of_resize,
                     params_of_rrc, plan_sample, prepare_pass_one, resize_batch, sample_taps,
                     shift_to_region, taps_box)

__all__ = ["MID_TYPES", "OUT_TYPES", "fused_image_kernel", "resize_cmn_batch", "decoded_plans"]

#: resize output types and cmn output types resize_cmn.cu is instantiated for
MID_TYPES = ("uint8", "float32")
OUT_TYPES = ("float32", "float16", "uint8")


def _cmn_args(a) -> dict:
    """The cmn stage's arguments of one sample, with a flip stage folded into ``mirror``."""
    c = dict(stage_args(a, "cmn"))
    if "flip" in stage_names(a):
        flip = 1 if stage_args(a, "flip").get("horizontal", 1) else 0
        c["mirror"] = int(mirror_flag(c.get("mirror") or 0) != bool(flip))
    return c


def resize_cmn_batch(ctx, samples, plans, mid_dtype, cmn_per_sample, layout) -> list:
    """Resize (``plans`` from :func:`runtime.kernels.gpu.resize.plan_sample`, output type
    ``mid_dtype``) then crop_mirror_normalize (``cmn_per_sample[i]``: sample ``i``'s cmn
    arguments) in two launches. Returns the per-sample cmn outputs."""
    n = len(samples)
    if n == 0:
        return []
    out_dtype = cmn_out_dtype(cmn_per_sample)
    mid = np.dtype(mid_dtype)
    if mid.name not in MID_TYPES or out_dtype.name not in OUT_TYPES:
        raise NotImplementedError(f"fused resize -> crop_mirror_normalize on the GPU: "
                                  f"{mid} -> {out_dtype} is not supported (resize outputs "
                                  f"{MID_TYPES}, cmn outputs {OUT_TYPES})")
    one = prepare_pass_one(ctx, samples, plans, [0] * n)
    descs = np.zeros((n, RS_WORDS + CMN_WORDS), np.int64)
    descs[:, :RS_WORDS] = one.descs
    keep, outs = [], []
    for i, p in enumerate(plans):
        outs.append(sample_desc(descs[i, RS_WORDS:], p.out_shape, [0] * len(p.out_shape), 0,
                                cmn_per_sample[i], layout, out_dtype, ctx, keep))
    launch_pass_one(ctx, samples, one)
    kernel = family_kernel(ctx, "resize_cmn", f"rcmn_{mid.name}_{out_dtype.name}")
    launch_batch(ctx, kernel, descs, int(descs[:, RS_WORDS + 20].max()),
                 reads=[one.tmp, *one.tables, *keep], writes=outs)
    return outs


def decoded_plans(ctx, data, per, resize: str):
    """Decode the host batch ``data`` for a fused ``decode -> resize`` chain (``resize``: the
    stage, ``"rrc"`` or ``"resize"``; ``per[i]``: sample ``i``'s fused arguments): only the box
    each sample's resize reads. Returns ``(samples, plans, mid dtype)``: the decoded regions
    (device, HWC) and their re-based :class:`~runtime.kernels.gpu.resize.SamplePlan` s."""
    parsed, hws, params, taps, regions = [], [], [], [], []
    for i, a in enumerate(per):
        x = parse_image(data[i], sample=sample_name(data, i))
        info = x.info()
        hw = (info.height, info.width)
        ra = stage_args(a, resize)
        p = params_of_rrc(hw, ra, a["_seeds"], i) if resize == "rrc" else params_of_resize(hw, ra)
        t = sample_taps(hw, p, ra) if p.out_h and p.out_w and hw[0] and hw[1] else None
        box = taps_box(t) if t is not None else None
        parsed.append(x)
        hws.append(hw)
        params.append(p)
        taps.append(t)
        regions.append(None if box is None or box == (0, 0) + hw else box)
    dec = [stage_args(a, "decode") for a in per]
    samples = decode_regions(ctx, data, dec, parsed, regions)
    plans, mids = [], set()
    for i, x in enumerate(samples):
        ra = stage_args(per[i], resize)
        item = np.dtype(x.dtype).itemsize
        full = (*hws[i], x.shape[2])
        plan = plan_sample(full, [s // item for s in x.strides], "HWC", params[i], ra,
                           taps=taps[i])
        plans.append(plan if regions[i] is None else shift_to_region(plan, regions[i]))
        mids.add(out_dtype_of(ra.get("dtype"), x.dtype))
    if len(mids) > 1:
        raise ValueError("resize on the GPU needs one output dtype for the batch")
    return samples, plans, mids.pop() if mids else np.dtype(np.uint8)


def _decoding(ctx, inputs, names, per):
    """``fused.image`` of a chain that decodes (see the module docstring)."""
    tail = names[1:]
    if tail[:1] not in (("rrc",), ("resize",)) or (len(tail) > 1 and (
            tail[-1] != "cmn" or not set(tail[1:-1]) <= {"flip"})):
        raise NotImplementedError(f"fused.image on the GPU runs after the decode only resize/"
                                  f"random_resized_crop [-> [flip] -> crop_mirror_normalize], "
                                  f"not {' -> '.join(names)}")
    if not per:
        return [ctx.samples([])]
    samples, plans, mid = decoded_plans(ctx, inputs[0], per, tail[0])
    if len(tail) == 1:
        return [ctx.samples(resize_batch(ctx, samples, plans, mid))]
    return [ctx.samples(resize_cmn_batch(ctx, samples, plans, mid,
                                         [_cmn_args(a) for a in per], "HWC"))]


@register("fused.image", "gpu")
def fused_image_kernel(ctx, inputs, args):
    """``fused.image`` on the GPU (see the module docstring).

    Raises
    ------
    NotImplementedError
        Stages other than [decode ->] resize / random_resized_crop [-> [flip] ->
        crop_mirror_normalize], and flip -> crop_mirror_normalize.
    """
    names = stage_names(args)
    n = ctx.batch_size
    per = [sample_args(ctx, args, i) for i in range(n)]
    if names and names[0] == "decode":
        return _decoding(ctx, inputs, names, per)
    samples = [inputs[0][i] if len(inputs[0]) > 1 else inputs[0][0] for i in range(n)]
    layout = meta_layout(ctx.in_metas[0])
    if tuple(names) == ("flip", "cmn"):
        return [ctx.samples(cmn_batch(ctx, samples, [_cmn_args(a) for a in per], layout))]
    if len(names) < 2 or names[0] not in ("rrc", "resize") or names[-1] != "cmn" or \
            not set(names[1:-1]) <= {"flip"}:
        raise NotImplementedError(f"fused.image on the GPU runs resize/random_resized_crop -> "
                                  f"[flip] -> crop_mirror_normalize, not {' -> '.join(names)}")
    plans, mids = [], set()
    for i, (x, a) in enumerate(zip(samples, per)):
        ra = stage_args(a, names[0])
        ax = {c: k for k, c in enumerate(layout)}
        in_hw = (x.shape[ax["H"]], x.shape[ax["W"]])
        params = (params_of_rrc(in_hw, ra, a["_seeds"], i) if names[0] == "rrc"
                  else params_of_resize(in_hw, ra))
        item = np.dtype(x.dtype).itemsize
        plans.append(plan_sample(tuple(x.shape), [s // item for s in x.strides], layout,
                                 params, ra))
        mids.add(out_dtype_of(ra.get("dtype"), x.dtype))
    if len(mids) > 1:
        raise ValueError("resize on the GPU needs one output dtype for the batch")
    mid = mids.pop()
    cmn_args = [_cmn_args(a) for a in per]
    return [ctx.samples(resize_cmn_batch(ctx, samples, plans, mid, cmn_args, layout))]
