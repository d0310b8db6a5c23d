"""CPU kernel of ``resize_crop_mirror`` (DALI 2.4): ``resize``, then ``crop``, then ``flip``.

The resized grid comes from ``resize``'s geometry
(:func:`runtime.kernels.params.resize_geometry.resize_output_shape`), the crop window from
``crop``'s (:func:`runtime.kernels.params.windows.crop_window`, placed on the resized extent).
A window inside the resized image is cut from the whole resized grid, or, when it is under a
quarter of it, resampled alone with :func:`.resize.resample`'s ``out_window`` (bit-exact with
resizing the whole image and cropping, the fast uint8 paths included); a window reaching past it is resampled on the stretched source window, whose taps
repeat the edge pixels, as DALI's operator does.  ``mirror`` bits: 1 flips horizontally, 2
vertically.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.params.layouts import hw_axes, meta_layout
from runtime.kernels.params.resize_geometry import (ResizeParams, resize_output_shape,
                                                    resize_size_args)
from runtime.kernels.params.windows import crop_args, crop_size, crop_window
from runtime.kernels.registry import per_sample, register

from .resize import resample

__all__ = ["resize_crop_mirror"]

_f32 = np.float32


def _window(out_hw, a: dict):
    """``(y0, x0, h, w)`` of the crop on the resized ``out_hw`` (``rounding`` of DALI)."""
    if (a.get("rounding") or "round") == "round":
        return crop_window(out_hw, **crop_args(a))
    h, w = crop_size(out_hw, **{k: v for k, v in crop_args(a).items()
                                if k in ("crop", "crop_h", "crop_w")})
    py = float(_f32(a.get("crop_pos_y", 0.5)))
    px = float(_f32(a.get("crop_pos_x", 0.5)))
    return (math.trunc(py * (out_hw[0] - h)), math.trunc(px * (out_hw[1] - w)), h, w)


def _crop2d(x, layout, y0, x0, h, w):
    h_axis, w_axis = hw_axes(layout)
    index = [slice(None)] * x.ndim
    index[h_axis] = slice(y0, y0 + h)
    index[w_axis] = slice(x0, x0 + w)
    return x[tuple(index)]


def resize_crop_mirror(image: np.ndarray, layout: str, a: dict) -> np.ndarray:
    """One sample: resized by the size arguments of ``a``, cropped, mirrored.

    Parameters
    ----------
    image : numpy.ndarray
        ``HWC``, ``CHW`` or ``HW``.
    layout : str
    a : dict
        The op's arguments for this sample.
    """
    h_axis, w_axis = hw_axes(layout)
    in_hw = (image.shape[h_axis], image.shape[w_axis])
    p = resize_output_shape(in_hw, **resize_size_args(a))
    y0, x0, ch, cw = _window((p.out_h, p.out_w), a)
    filters = dict(interp_type=a.get("interp_type") or "linear",
                   antialias=a.get("antialias", True), dtype=a.get("dtype"),
                   min_filter=a.get("min_filter"), mag_filter=a.get("mag_filter"),
                   layout=layout)
    inside = 0 <= y0 and 0 <= x0 and y0 + ch <= p.out_h and x0 + cw <= p.out_w
    if inside and ch > 0 and cw > 0:
        if ch * cw * 4 <= p.out_h * p.out_w:      # a small part: only its lines
            out = resample(image, p, out_window=(y0, x0, ch, cw), **filters)
        else:       # most of it: the whole grid is faster here, and the same bits
            full = resample(image, p, **filters)
            out = np.ascontiguousarray(_crop2d(full, layout, y0, x0, ch, cw))
    else:       # the stretched source window of the crop (edge pixels repeat)
        sy = (p.y1 - p.y0) / p.out_h if p.out_h else 0.0
        sx = (p.x1 - p.x0) / p.out_w if p.out_w else 0.0
        q = ResizeParams(out_h=ch, out_w=cw, y0=float(_f32(p.y0 + y0 * sy)),
                         x0=float(_f32(p.x0 + x0 * sx)), y1=float(_f32(p.y0 + (y0 + ch) * sy)),
                         x1=float(_f32(p.x0 + (x0 + cw) * sx)), in_h=in_hw[0], in_w=in_hw[1])
        out = resample(image, q, **filters)
    mirror = int(a.get("mirror") or 0)
    index = [slice(None)] * out.ndim
    if mirror & 1:
        index[w_axis] = slice(None, None, -1)
    if mirror & 2:
        index[h_axis] = slice(None, None, -1)
    return np.ascontiguousarray(out[tuple(index)]) if mirror & 3 else out


@register("resize_crop_mirror", "cpu")
@per_sample
def resize_crop_mirror_kernel(ctx, ins, a, i):
    """``resize_crop_mirror`` of sample ``i``."""
    return resize_crop_mirror(np.asarray(ins[0]), meta_layout(ctx.in_metas[0]), a)
