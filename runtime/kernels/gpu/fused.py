"""GPU kernel of ``fused.image`` after the decode: resize / random_resized_crop -> [flip] ->
crop_mirror_normalize in two launches (``resize.cu``'s first pass, ``resize_cmn.cu``).

The stages are the compiler's ``Stage`` records (``compiler/fusion_rules.py``), read as the CPU
kernel reads them (``runtime/kernels/cpu/fused_stages.py``): the resize's grid (or the random
window, same seeds), the flip folded into ``mirror``, cmn's window placed on the resized extent.
Pass 2 computes only the pixels cmn reads, each rounded to the resize's output type before the
normalization, so the result equals the unfused GPU chain (``resize`` then
``crop_mirror_normalize``) bit for bit, and the resized image is never stored. A ``flip ->
crop_mirror_normalize`` node is cmn with the mirror folded in (one launch).

A node that decodes (its first stage ``decode``) is not run here: GPU decoding belongs to the
GPU runtime's codec layer.
"""
from __future__ import annotations

import numpy as np

from compiler.ir import stage_args, stage_names
from runtime.kernels.params.layouts import meta_layout
from runtime.kernels.params.normalize import mirror_flag
from runtime.kernels.registry import register, sample_args

from .cmn import DESC_WORDS as CMN_WORDS
from .cmn import cmn_batch, cmn_out_dtype, sample_desc
from .launch import family_kernel, launch_batch
from .resize import (DESC_WORDS as RS_WORDS, launch_pass_one, out_dtype_of, params_of_resize,
                     params_of_rrc, plan_sample, prepare_pass_one)

__all__ = ["MID_TYPES", "OUT_TYPES", "fused_image_kernel", "resize_cmn_batch"]

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


@register("fused.image", "gpu")
def fused_image_kernel(ctx, inputs, args):
    """``fused.image`` on the GPU for the chains after a decode (see the module docstring).

    Raises
    ------
    NotImplementedError
        A chain that decodes, or stages other than resize / random_resized_crop, flip and
        crop_mirror_normalize.
    """
    names = stage_names(args)
    if names and names[0] == "decode":
        raise NotImplementedError("fused.image on the GPU starts after the decode; a decoding "
                                  "chain runs in the GPU runtime's codec layer")
    n = ctx.batch_size
    samples = [inputs[0][i] if len(inputs[0]) > 1 else inputs[0][0] for i in range(n)]
    layout = meta_layout(ctx.in_metas[0])
    per = [sample_args(ctx, args, i) for i in range(n)]
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

