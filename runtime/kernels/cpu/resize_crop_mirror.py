"""CPU kernel of ``resize_crop_mirror`` (DALI 2.4): ``resize``, then ``crop``, then ``flip``.

The resized grid comes from ``resize``'s geometry
(:func:`runtime.kernels.params.resize_geometry.resize_output_shape`), the crop window from
``crop``'s (:func:`runtime.kernels.params.windows.crop_window`, placed on the resized extent).
The crop's source window on that grid (its ends swapped for ``mirror``: bit 1 flips
horizontally, bit 2 vertically) is resampled once, only the crop's pixels, as DALI's operator
does: within 1 of ``resize`` + ``crop`` + ``flip`` (the window's float32 ends move the taps by
rounding); a window reaching past the resized image repeats the edge pixels.
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
    # the crop's source window on resize's grid, mirrored by swapping its ends: one resample
    # of just the crop (taps past the image repeat the edge pixels), as DALI's operator does
    sy = (p.y1 - p.y0) / p.out_h if p.out_h else 0.0
    sx = (p.x1 - p.x0) / p.out_w if p.out_w else 0.0
    wy0, wy1 = p.y0 + y0 * sy, p.y0 + (y0 + ch) * sy
    wx0, wx1 = p.x0 + x0 * sx, p.x0 + (x0 + cw) * sx
    mirror = int(a.get("mirror") or 0)
    if mirror & 1:
        wx0, wx1 = wx1, wx0
    if mirror & 2:
        wy0, wy1 = wy1, wy0
    q = ResizeParams(out_h=ch, out_w=cw, y0=float(_f32(wy0)), x0=float(_f32(wx0)),
                     y1=float(_f32(wy1)), x1=float(_f32(wx1)), in_h=in_hw[0], in_w=in_hw[1])
    return resample(image, q, **filters)


@register("resize_crop_mirror", "cpu")
@per_sample
def resize_crop_mirror_kernel(ctx, ins, a, i):
    """``resize_crop_mirror`` of sample ``i``."""
    return resize_crop_mirror(np.asarray(ins[0]), meta_layout(ctx.in_metas[0]), a)
