"""The per-pixel arithmetic of ``crop_mirror_normalize`` on the CPU (torch/numpy).

``(region - base) * inv + post_shift`` in float32, written into the output (the constants from
:func:`runtime.kernels.params.normalize.normalize_params`), with the cast DALI applies for
other output types; uint8 input with a non-float32 output goes through per-channel 256-entry
tables holding exactly those values.  Used by the per-sample kernel (:mod:`.cmn`) and the
batch path (:mod:`.cmn_batch`), so both compute the same bits.
"""
from __future__ import annotations

import numpy as np
import torch

from .cast import cast

__all__ = ["TORCH_OK", "lut_table", "lut_apply", "normalize_into"]

#: input dtypes torch can subtract from directly (others go through float32 first)
TORCH_OK = {np.dtype(t) for t in ("uint8", "int8", "int16", "int32", "int64",
                                  "float16", "float32", "float64")}


def lut_table(base, inv, post_shift, dtype):
    """Per-channel 256-entry tables ``cast((v - base[c]) * inv[c] + post_shift, dtype)``."""
    lut = (np.arange(256, dtype=np.float32)[None, :] - base[:, None]) * inv[:, None]
    if post_shift != 0:
        lut = lut + post_shift
    return cast(lut, dtype)


def lut_apply(region, target, lut, c_axis, flip_axis):
    """Gather ``lut`` (from :func:`lut_table`) at the uint8 ``region`` into ``target``."""
    if flip_axis is not None:
        flipper = [slice(None)] * region.ndim
        flipper[flip_axis] = slice(None, None, -1)
        region = region[tuple(flipper)]
    if c_axis is None or lut.shape[0] == 1:
        target[...] = np.take(lut[0], region)
        return
    for c in range(lut.shape[0]):
        sel = [slice(None)] * region.ndim
        sel[c_axis] = c
        sel = tuple(sel)
        target[sel] = np.take(lut[c], region[sel])


def _lut_into(region, target, base, inv, post_shift, c_axis, flip_axis):
    """uint8 input, non-float32 output: per-channel 256-entry tables.

    The table holds exactly what the direct path computes (same float32
    operations, then :func:`cast`), so results are identical, in one gather.
    """
    lut_apply(region, target, lut_table(base, inv, post_shift, target.dtype), c_axis,
              flip_axis)


def normalize_into(region, target, base, inv, post_shift, c_axis, flip_axis):
    """Write ``(region - base) * inv + post_shift`` into ``target`` (same axis order).

    Parameters
    ----------
    region : numpy.ndarray
        The input pixels, any numeric dtype.
    target : numpy.ndarray
        Same shape; its dtype is the output's (float32 computed directly, others cast).
    base, inv : numpy.ndarray
        float32 vectors of one value or one per channel; ``post_shift`` a float32.
    c_axis : int or None
        The channel axis of both arrays; ``flip_axis``: the axis to mirror, or None.
    """
    if region.dtype == np.uint8 and target.dtype != np.float32:
        _lut_into(region, target, base, inv, post_shift, c_axis, flip_axis)
        return
    if region.dtype not in TORCH_OK:
        region = region.astype(np.float32)  # bool / uint16 / uint32 / uint64
    src = torch.from_numpy(region)
    if flip_axis is not None:
        src = src.flip(flip_axis)
    bshape = [1] * region.ndim
    if c_axis is not None and base.size > 1:
        bshape[c_axis] = base.size
    base_t = torch.from_numpy(base.reshape(bshape))
    inv_t = torch.from_numpy(inv.reshape(bshape))
    if target.dtype == np.float32:
        dst = torch.from_numpy(target)
        torch.sub(src, base_t, out=dst)
        dst.mul_(inv_t)
        if post_shift != 0:
            dst.add_(float(post_shift))
        return
    res = torch.sub(src, base_t).to(torch.float32).mul_(inv_t)
    if post_shift != 0:
        res.add_(float(post_shift))
    target[...] = cast(res.numpy(), target.dtype)
