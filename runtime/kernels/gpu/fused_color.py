"""GPU kernel of ``fused.color``: a chain of colour ops [-> crop_mirror_normalize] in one
launch per batch (``color_cmn.cu`` for one colour op -> cmn, ``color_chain.cu`` for up to
:data:`CHAIN_MAX` colour ops, with or without a cmn at the end).

The stages are the compiler's ``Stage`` records (``compiler/fusion_rules.py``, the colour chain:
``<op>#k`` with its input / output dtypes ``_in`` / ``_out``, then ``crop_mirror_normalize``).
Each colour op's parameters are the unfused GPU kernel's (:func:`runtime.kernels.gpu.color.
param_row`), cmn's descriptor is the unfused cmn kernel's (:func:`runtime.kernels.gpu.cmn.
sample_desc`) on the input image (colour ops keep the shape); a chain that ends with a colour
op gets an identity cmn (mean 0, std 1, HWC, the last op's type). The kernel computes each
output element from the chain's value of the pixel it reads, every stage rounded to its output
type, so the result equals the unfused GPU chain (and the CPU's) bit for bit.
"""
from __future__ import annotations

import numpy as np

from compiler.ir import stage_args
from runtime.kernels.params.layouts import meta_layout
from runtime.kernels.registry import register, sample_args

from .cmn import DESC_WORDS as CMN_WORDS
from .cmn import cmn_out_dtype, sample_desc
from .color import PARAMS, param_row
from .launch import address, family_kernel, launch_batch

__all__ = ["IN_TYPES", "MID_TYPES", "OUT_TYPES", "CHAIN_MAX", "fused_color_kernel"]

#: colour input, colour output and cmn output types color_cmn.cu is instantiated for
IN_TYPES = ("uint8", "float32")
MID_TYPES = ("uint8", "float32")
OUT_TYPES = ("float32", "float16", "uint8")
#: most colour ops color_chain.cu runs in one pass (``NDD_CHAIN_MAX``)
CHAIN_MAX = 4
#: int64 words of color_chain.cu's ``ChDesc`` after its ``CmnDesc``
_CHAIN_WORDS = 3 + 2 * CHAIN_MAX


def _cmn_args(a: dict) -> dict:
    return {k: v for k, v in a.items() if not k.startswith("_")}


@register("fused.color", "gpu")
def fused_color_kernel(ctx, inputs, args):
    """``fused.color`` of a colour op -> crop_mirror_normalize on the GPU (see the module
    docstring).

    Raises
    ------
    NotImplementedError
        Another chain, or types outside :data:`IN_TYPES` / :data:`MID_TYPES` /
        :data:`OUT_TYPES`.
    ValueError
        A 3 x 3 colour op on images without 3 channels.
    """
    stages = tuple(args.get("stages", ()))
    cols = stages[:-1] if stages and stages[-1].op == "crop_mirror_normalize" else stages
    if not 1 <= len(cols) <= CHAIN_MAX or any(s.op not in PARAMS for s in cols):
        raise NotImplementedError(f"fused.color on the GPU runs 1 to {CHAIN_MAX} colour ops "
                                  f"[-> crop_mirror_normalize], not "
                                  f"{' -> '.join(s.op for s in stages)}")
    if len(cols) != 1 or len(stages) != 2:
        return _chain(ctx, inputs, args, cols, stages[len(cols):])
    col, cmn = stages
    n = ctx.batch_size
    samples = [inputs[0][i] if len(inputs[0]) > 1 else inputs[0][0] for i in range(n)]
    layout = meta_layout(ctx.in_metas[0])
    per = [sample_args(ctx, args, i) for i in range(n)]
    col_args = [stage_args(a, col.name) for a in per]
    cmn_args = [_cmn_args(stage_args(a, cmn.name)) for a in per]
    outs = []
    if n == 0:
        return [ctx.samples(outs)]
    in_dt = np.dtype(samples[0].dtype)
    mid = np.dtype(col_args[0]["_out"])
    out_dt = cmn_out_dtype(cmn_args)
    if in_dt.name not in IN_TYPES or mid.name not in MID_TYPES or out_dt.name not in OUT_TYPES:
        raise NotImplementedError(f"fused colour -> crop_mirror_normalize on the GPU: "
                                  f"{in_dt} -> {mid} -> {out_dt} is not supported (inputs "
                                  f"{IN_TYPES}, colour outputs {MID_TYPES}, outputs "
                                  f"{OUT_TYPES})")
    rows, kinds = np.zeros((n, 12), np.float32), []
    for i, (x, a) in enumerate(zip(samples, col_args)):
        kind, rows[i] = param_row(col.op, a, x.dtype, mid)
        kinds.append(kind)
        if kind == 1 and x.shape[-1] != 3:
            raise ValueError(f"{col.op} expects RGB images (3 channels), got {x.shape[-1]} "
                             f"channels")
    table = ctx.upload(rows)
    descs = np.zeros((n, CMN_WORDS + 2), np.int64)
    keep: list = []
    for i, x in enumerate(samples):
        item = np.dtype(x.dtype).itemsize
        outs.append(sample_desc(descs[i, :CMN_WORDS], x.shape, [s // item for s in x.strides],
                                address(x), cmn_args[i], layout, out_dt, ctx, keep))
        descs[i, CMN_WORDS] = address(table) + i * 12 * 4
        descs[i, CMN_WORDS + 1] = kinds[i]
    kernel = family_kernel(ctx, "color_cmn", f"ccmn_{in_dt.name}_{mid.name}_{out_dt.name}")
    launch_batch(ctx, kernel, descs, int(descs[:, 20].max()), reads=[*samples, table, *keep],
                 writes=outs)
    return [ctx.samples(outs)]


def _chain(ctx, inputs, args, cols, tail):
    """``fused.color`` of the colour ops ``cols`` then ``tail`` (cmn, or nothing) through
    ``color_chain.cu`` (see the module docstring)."""
    n = ctx.batch_size
    samples = [inputs[0][i] if len(inputs[0]) > 1 else inputs[0][0] for i in range(n)]
    if n == 0:
        return [ctx.samples([])]
    layout = meta_layout(ctx.in_metas[0])
    per = [sample_args(ctx, args, i) for i in range(n)]
    mids = [np.dtype(stage_args(per[0], s.name)["_out"]) for s in cols]
    if tail:
        cmn_args = [_cmn_args(stage_args(a, tail[0].name)) for a in per]
    else:
        if layout != "HWC":
            raise NotImplementedError(f"a fused colour chain on the GPU reads HWC images, not "
                                      f"{layout!r}")
        cmn_args = [{"output_layout": "HWC", "dtype": mids[-1].name}] * n
    in_dt = np.dtype(samples[0].dtype)
    out_dt = cmn_out_dtype(cmn_args)
    if in_dt.name not in IN_TYPES or any(m.name not in MID_TYPES for m in mids) or \
            out_dt.name not in OUT_TYPES:
        raise NotImplementedError(f"fused colour chain on the GPU: {in_dt} -> "
                                  f"{' -> '.join(m.name for m in mids)} -> {out_dt} is not "
                                  f"supported (inputs {IN_TYPES}, colour outputs {MID_TYPES}, "
                                  f"outputs {OUT_TYPES})")
    k = len(cols)
    rows = np.zeros((n, k, 12), np.float32)
    kinds = np.zeros((n, k), np.int64)
    for i, (x, a) in enumerate(zip(samples, per)):
        for j, s in enumerate(cols):
            sa = stage_args(a, s.name)
            kinds[i, j], rows[i, j] = param_row(s.op, sa, np.dtype(sa["_in"]), mids[j])
        if kinds[i].any() and x.shape[-1] != 3:
            bad = cols[int(np.argmax(kinds[i]))].op
            raise ValueError(f"{bad} expects RGB images (3 channels), got {x.shape[-1]} "
                             f"channels")
    table = ctx.upload(rows)
    descs = np.zeros((n, CMN_WORDS + _CHAIN_WORDS), np.int64)
    keep: list = []
    outs = []
    for i, x in enumerate(samples):
        item = np.dtype(x.dtype).itemsize
        outs.append(sample_desc(descs[i, :CMN_WORDS], x.shape, [s // item for s in x.strides],
                                address(x), cmn_args[i], layout, out_dt, ctx, keep))
        extra = descs[i, CMN_WORDS:]
        extra[0] = address(table) + i * k * 12 * 4
        extra[1], extra[2] = k, int(kinds[i].any())
        extra[3:3 + k] = kinds[i]
        extra[3 + CHAIN_MAX:3 + CHAIN_MAX + k] = [int(m == np.uint8) for m in mids]
    kernel = family_kernel(ctx, "color_chain", f"cchain_{in_dt.name}_{out_dt.name}")
    launch_batch(ctx, kernel, descs, int(descs[:, 20].max()), reads=[*samples, table, *keep],
                 writes=outs)
    return [ctx.samples(outs)]
