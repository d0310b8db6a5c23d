"""CPU kernel of ``fused.window``: a ``crop`` or ``slice`` read by ``resize`` / ``rotate`` /
``warp_affine`` in place (the compiler's ``fuse`` pass creates it, rule ``crop->window``).

The window of every sample is placed exactly as the ``crop`` kernel places it
(:func:`runtime.kernels.params.windows.crop_window`, ``out_of_bounds_policy="error"``) or the
``slice`` kernel (:func:`runtime.kernels.params.nd_slice.slice_window`, ``error`` or
``trim_to_shape``), and the
consumer's own kernel runs on views of those windows instead of on copies: the same pixels, so
the same result, without writing the cropped batch.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.params.layouts import layout_axes
from runtime.kernels.params.nd_slice import slice_window
from runtime.kernels.params.windows import clip_window, crop_args, crop_window
from runtime.kernels.registry import KernelContext, lookup, sample_arg

from .slicing import slice_data

__all__ = ["fused_window"]


def _stage_args(stage, kernel_args):
    """(arguments, names of the per-sample ones) of a stage, under the op's own names."""
    a = dict(stage.args)
    tensor = set()
    for arg, key in stage.tensor_args:
        a[arg] = kernel_args[key]
        tensor.add(arg)
    return a, tensor


def _slice_view(image, layout, a, tensor, i, extra):
    """The window of ``slice`` (its ``anchor`` / ``shape`` inputs in ``extra``) as a view;
    ``trim_to_shape`` trims it as the slice kernel does."""
    image = np.asarray(image)
    per = {k: (sample_arg(v[i] if len(v) > 1 else v[0]) if k in tensor else v)
           for k, v in a.items()}
    ins = [np.asarray(e[i] if len(e) > 1 else e[0]) for e in extra]
    starts, ends = slice_window(image.shape, layout or "", per, *ins)
    if any(s < 0 or e > n for s, e, n in zip(starts, ends, image.shape)):
        if per.get("out_of_bounds_policy", "error") != "trim_to_shape":
            slice_data(image, layout, per, *ins)        # raises the slice's own error
        starts = [min(max(s, 0), n) for s, n in zip(starts, image.shape)]
        ends = [min(max(e, 0), n) for e, n in zip(ends, image.shape)]
    return image[tuple(slice(s, e) for s, e in zip(starts, ends))]


def _window_view(image, layout, a, tensor, i):
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    ah, aw = axes["H"], axes["W"]
    hw = (image.shape[ah], image.shape[aw])
    per = {k: (sample_arg(v[i] if len(v) > 1 else v[0]) if k in tensor else v)
           for k, v in a.items()}
    y0, x0, h, w = clip_window(crop_window(hw, **crop_args(per)), hw, "error", image.shape,
                               layout)
    sel = [slice(None)] * image.ndim
    sel[ah], sel[aw] = slice(y0, y0 + h), slice(x0, x0 + w)
    return image[tuple(sel)]


def fused_window(ctx, inputs, args):
    """The consumer's kernel on views of the crop windows (registered by :mod:`.fused`)."""
    crop, op = args["stages"]
    ca, ct = _stage_args(crop, args)
    meta, n_in = ca.pop("_meta"), ca.pop("_inputs", 1)
    images = inputs[0]
    layout = ctx.in_metas[0].layout or meta.layout
    n = ctx.batch_size
    if crop.op == "slice":
        views = [_slice_view(images[i] if len(images) > 1 else images[0], layout, ca, ct, i,
                             inputs[1:n_in]) for i in range(n)]
    else:
        views = [_window_view(images[i] if len(images) > 1 else images[0], layout, ca, ct, i)
                 for i in range(n)]
    oa, ot = _stage_args(op, args)
    sub = KernelContext(pool=ctx.pool, in_metas=[meta] + list(ctx.in_metas[n_in:]),
                        out_metas=ctx.out_metas, tensor_arg_names=ot, batch_size=n, op=op.op)
    return lookup(op.op, "cpu")(sub, [views] + list(inputs[n_in:]), oa)
