"""GPU kernel of ``fused.color`` for the two-stage chain a colour op -> crop_mirror_normalize
(``color_cmn.cu``, one launch per batch).

The stages are the compiler's ``Stage`` records (``compiler/fusion_rules.py``, the colour chain:
``<op>#0`` with its input / output dtypes ``_in`` / ``_out``, ``crop_mirror_normalize#1``). The
colour op's parameters are the unfused GPU kernel's (:func:`runtime.kernels.gpu.color.
param_row`), cmn's descriptor is the unfused cmn kernel's (:func:`runtime.kernels.gpu.cmn.
sample_desc`) on the input image (the colour op keeps the shape); the kernel computes each
output element from the colour value of the pixel it reads, rounded to the colour op's output
type, so the result equals the unfused GPU chain (and the CPU's) bit for bit. Longer colour
chains are not fused on the GPU (``compiler/fusion_rules_gpu.py`` refuses them).
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

__all__ = ["IN_TYPES", "MID_TYPES", "OUT_TYPES", "fused_color_kernel"]

#: colour input, colour output and cmn output types color_cmn.cu is instantiated for
IN_TYPES = ("uint8", "float32")
MID_TYPES = ("uint8", "float32")
OUT_TYPES = ("float32", "float16", "uint8")


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
    if len(stages) != 2 or stages[0].op not in PARAMS or \
            stages[1].op != "crop_mirror_normalize":
        raise NotImplementedError(f"fused.color on the GPU runs a colour op -> "
                                  f"crop_mirror_normalize, not "
                                  f"{' -> '.join(s.op for s in stages)}")
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
