"""GPU kernel of ``crop_mirror_normalize``: one ``cmn_<in>_<out>`` launch (``cmn.cu``) per batch.

The host side validates and folds the arguments exactly as the CPU kernel does (windows from
:mod:`runtime.kernels.params.windows`, the folded float32 normalization and the output layout from
:mod:`runtime.kernels.params.normalize`, fill values through the CPU's ``fill_vector``), then
writes one descriptor per sample: window, mirror, strides, output extents in output-layout order,
and a small float32 table ``base[c] ++ inv[c]``. Semantics: ``runtime/kernels/cpu/cmn.py``
(DALI 2.4's ``fn.crop_mirror_normalize``); input layouts HWC, CHW and HW.
"""
from __future__ import annotations

import numbers

import numpy as np

from runtime.kernels.cpu.cast import to_numpy_dtype
from runtime.kernels.cpu.crop import fill_vector
from runtime.kernels.params.layouts import layout_axes, meta_layout
from runtime.kernels.params.normalize import (mirror_flag, next_pow2, normalize_params,
                                              resolve_output_layout)
from runtime.kernels.params.windows import clip_window, crop_args, crop_window
from runtime.kernels.registry import register, sample_args

from .launch import address, family_kernel, launch_batch

__all__ = ["IN_TYPES", "OUT_TYPES", "DESC_WORDS", "sample_desc", "cmn_batch", "cmn_kernel",
           "cmn_out_dtype"]

#: element types the kernel reads / writes (cmn.cu's instantiations)
IN_TYPES = ("uint8", "int8", "uint16", "int16", "float16", "float32")
OUT_TYPES = ("float32", "float16", "uint8", "int8", "int16", "int32")
#: int64 words of one ``CmnDesc``
DESC_WORDS = 26

_ROLE = {"H": 0, "W": 1, "C": 2}


def _arg(a, name, default):
    """Argument ``name`` of one sample; None (not given) means the CPU kernel's default."""
    v = a.get(name)
    return default if v is None else v


def sample_desc(row, shape, strides, in_ptr, a, layout, out_dtype, ctx, keep):
    """Fill the ``CmnDesc`` of one sample (``shape``, element ``strides`` and address
    ``in_ptr`` of its input in ``layout``; ``a`` its arguments) and return its output array;
    uploaded tables are appended to ``keep``."""
    shape = tuple(shape)
    layout, axes = layout_axes(layout, len(shape))
    if layout not in ("HWC", "CHW", "HW"):
        raise NotImplementedError(f"crop_mirror_normalize on the GPU supports HWC, CHW and HW "
                                  f"inputs, not {layout!r}")
    out_layout, _ = resolve_output_layout(layout, _arg(a, "output_layout", "CHW"))
    ah, aw, ac = axes["H"], axes["W"], axes.get("C")
    H, W = shape[ah], shape[aw]
    policy = a.get("out_of_bounds_policy") or "error"
    policy = getattr(policy, "name", policy)
    policy = policy.lower() if isinstance(policy, str) else policy
    window = crop_window((H, W), **crop_args(a))
    y0, x0, h, w = clip_window(window, (H, W), policy, shape, layout)
    pad_output = _arg(a, "pad_output", False)
    if not isinstance(pad_output, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"pad_output={pad_output!r}: expected a bool")
    if pad_output and ac is None:
        raise ValueError(f"pad_output=True needs a channel axis; layout {layout!r} has none")
    c_in = shape[ac] if ac is not None else None
    c_out = next_pow2(c_in) if (pad_output and c_in) else c_in
    base, inv, post = normalize_params(_arg(a, "mean", 0.0), _arg(a, "std", 1.0),
                                       _arg(a, "scale", 1.0), _arg(a, "shift", 0.0), c_in)
    params = ctx.upload(np.concatenate([base, inv]).astype(np.float32))
    keep.append(params)
    fill_ptr, n_fill = 0, 0
    inside = y0 >= 0 and x0 >= 0 and y0 + h <= H and x0 + w <= W
    if policy == "pad" and (not inside or c_out != c_in):
        fill = fill_vector(_arg(a, "fill_values", 0), c_out, out_dtype)
        dev = ctx.upload(np.ascontiguousarray(fill))
        keep.append(dev)
        fill_ptr, n_fill = address(dev), fill.size
    extents = {"H": h, "W": w, "C": c_out if c_out is not None else 1}
    out_shape = tuple(extents[c] for c in out_layout)
    out = ctx.empty(out_shape, out_dtype)
    st = list(strides)
    letters = out_layout if "C" in out_layout else out_layout + "C"
    row[:] = 0
    row[0:4] = (in_ptr, address(out), address(params), fill_ptr)
    row[4:11] = (H, W, y0, x0, h, w, c_in or 1)
    row[11:14] = (st[ah], st[aw], st[ac] if ac is not None else 0)
    row[14:17] = [extents[c] for c in letters]
    row[17:20] = [_ROLE[c] for c in letters]
    post_bits = int(np.float32(post).view(np.uint32))
    row[20:26] = (h * w * extents["C"], int(mirror_flag(_arg(a, "mirror", 0))), base.size,
                  n_fill, int(policy == "pad"), post_bits)
    return out


def cmn_out_dtype(per_sample_args) -> np.dtype:
    """The one output dtype of a batch's ``crop_mirror_normalize`` (default float32).

    Raises
    ------
    ValueError
        The samples ask for different dtypes.
    """
    dtypes = {to_numpy_dtype(_arg(a, "dtype", "float32")) for a in per_sample_args}
    if len(dtypes) != 1:
        raise ValueError("crop_mirror_normalize on the GPU needs one output dtype for the batch")
    return dtypes.pop()


def cmn_batch(ctx, samples, per_sample_args, layout) -> list:
    """``crop_mirror_normalize`` of a batch (one launch); ``per_sample_args[i]`` are sample
    ``i``'s arguments. Returns the per-sample outputs (``ctx.empty`` arrays)."""
    n = len(samples)
    if n == 0:
        return []
    out_dtype = cmn_out_dtype(per_sample_args)
    in_dtype = np.dtype(samples[0].dtype)
    if in_dtype.name not in IN_TYPES or out_dtype.name not in OUT_TYPES:
        raise NotImplementedError(f"crop_mirror_normalize on the GPU: {in_dtype} -> "
                                  f"{out_dtype} is not supported (inputs {IN_TYPES}, outputs "
                                  f"{OUT_TYPES})")
    descs = np.zeros((n, DESC_WORDS), np.int64)
    keep: list = []
    outs = []
    for i, x in enumerate(samples):
        item = np.dtype(x.dtype).itemsize
        outs.append(sample_desc(descs[i], x.shape, [s // item for s in x.strides], address(x),
                                per_sample_args[i], layout, out_dtype, ctx, keep))
    kernel = family_kernel(ctx, "cmn", f"cmn_{in_dtype.name}_{out_dtype.name}")
    launch_batch(ctx, kernel, descs, int(descs[:, 20].max()), reads=[*samples, *keep],
                 writes=outs)
    return outs


@register("crop_mirror_normalize", "gpu")
def cmn_kernel(ctx, inputs, args):
    """``crop_mirror_normalize`` on the GPU: one launch for the batch."""
    n = ctx.batch_size
    samples = [inputs[0][i] if len(inputs[0]) > 1 else inputs[0][0] for i in range(n)]
    per = [sample_args(ctx, args, i) for i in range(n)]
    return [ctx.samples(cmn_batch(ctx, samples, per, meta_layout(ctx.in_metas[0])))]
