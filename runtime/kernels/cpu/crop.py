"""``crop``: cut a fixed-size window out of an image (CPU, numpy).

Semantics follow ``nvidia.dali.fn.crop`` (DALI 2.4): window size from ``crop`` or
``crop_h``/``crop_w``, placed by ``crop_pos_x``/``crop_pos_y`` (see
:mod:`runtime.kernels.params.windows`), windows that leave the image handled by
``out_of_bounds_policy`` (:func:`runtime.kernels.params.windows.clip_window`). Deliberate
differences from DALI are listed in ``docs/semantics.md``.  Registers the ``crop`` kernel.
"""

from __future__ import annotations

import numpy as np

from runtime.kernels.params.layouts import layout_axes, meta_layout
from runtime.kernels.params.windows import CROP_ARGS, clip_window, crop_window
from runtime.kernels.registry import given, per_sample, register

from .cast import cast, to_numpy_dtype

__all__ = ["crop", "crop_to_window", "fill_vector"]

# the arguments of ``crop`` besides the window's
_CROP_OUTPUT_ARGS = ("out_of_bounds_policy", "fill_values", "dtype")


def fill_vector(fill_values, channels, dtype, *, name="fill_values"):
    """Convert ``fill_values`` to per-channel values of the output dtype.

    Parameters
    ----------
    fill_values : float or sequence of float
        One value, or one per channel.
    channels : int or None
        Number of output channels; ``None`` when the layout has no ``C`` axis.
    dtype : numpy.dtype
        Output dtype; values are rounded half away from zero and saturated
        (see :func:`runtime.kernels.cpu.cast.cast`).

    Returns
    -------
    numpy.ndarray
        1-D array of length 1 or ``channels``, dtype ``dtype``.

    Raises
    ------
    ValueError
        Wrong number of values.
    TypeError
        Non-numeric values.
    """
    try:
        vals = np.asarray(fill_values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"{name}={fill_values!r}: expected a number or a list of numbers") \
            from None
    if vals.size != 1 and vals.size != (channels or 1):
        raise ValueError(
            f"{name}={fill_values!r} has {vals.size} values; expected 1 or one per output "
            f"channel ({channels or 1})")
    return cast(vals, dtype)


def _fill(out, fill, c_axis):
    if fill.size == 1:
        out.fill(fill[0])
    else:
        shape = [1] * out.ndim
        shape[c_axis] = fill.size
        out[...] = fill.reshape(shape)


def crop_to_window(image, window, *, layout="HWC", out_of_bounds_policy="error",
                   fill_values=0, dtype=None):
    """Cut ``window`` out of ``image`` (the kernel under :func:`crop`).

    Parameters
    ----------
    image : numpy.ndarray
        One sample, any numeric dtype, layout ``layout``.
    window : tuple of int
        ``(y0, x0, h, w)`` in input pixels, possibly out of bounds.
    layout, out_of_bounds_policy, fill_values, dtype : see :func:`crop`.

    Returns
    -------
    numpy.ndarray
        New C-contiguous array, same layout as the input, H and W replaced by
        the window's (trimmed) extent.
    """
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    ah, aw = axes["H"], axes["W"]
    H, W = image.shape[ah], image.shape[aw]
    y0, x0, h, w = clip_window(window, (H, W), out_of_bounds_policy, image.shape, layout)
    out_dtype = image.dtype if dtype is None else to_numpy_dtype(dtype)
    sy0, sx0 = max(y0, 0), max(x0, 0)
    sy1, sx1 = min(y0 + h, H), min(x0 + w, W)
    src = [slice(None)] * image.ndim
    src[ah], src[aw] = slice(sy0, max(sy1, sy0)), slice(sx0, max(sx1, sx0))
    region = image[tuple(src)]
    inside = sy0 == y0 and sx0 == x0 and sy1 == y0 + h and sx1 == x0 + w
    if inside:
        if out_dtype == image.dtype:
            return region.copy(order="C")
        return np.ascontiguousarray(cast(region, out_dtype))
    out_shape = list(image.shape)
    out_shape[ah], out_shape[aw] = h, w
    out = np.empty(out_shape, dtype=out_dtype)
    c_axis = axes.get("C")
    channels = image.shape[c_axis] if c_axis is not None else None
    _fill(out, fill_vector(fill_values, channels, out_dtype), c_axis)
    if sy1 > sy0 and sx1 > sx0:
        dst = [slice(None)] * image.ndim
        dst[ah] = slice(sy0 - y0, sy1 - y0)
        dst[aw] = slice(sx0 - x0, sx1 - x0)
        out[tuple(dst)] = region if out_dtype == image.dtype else cast(region, out_dtype)
    return out


def crop(image, *, layout="HWC", crop=None, crop_h=None, crop_w=None, crop_pos_x=0.5,
         crop_pos_y=0.5, out_of_bounds_policy="error", fill_values=0, dtype=None):
    """Crop a fixed-size window out of one image (DALI ``fn.crop``).

    Parameters
    ----------
    image : numpy.ndarray
        One sample of any numeric dtype; layout ``layout`` (``"HWC"``,
        ``"CHW"``, ``"HW"``, or any layout with ``H`` and ``W`` axes, e.g.
        ``"FHWC"``; other axes are kept whole).
    layout : str
        Layout of ``image``; ``None`` infers HWC (3-D) / HW (2-D).
    crop : float or (float, float), optional
        Window ``(h, w)`` in pixels; fractions truncate; 0 = whole extent.
    crop_h, crop_w : float, optional
        Alternative to ``crop``; must be given together.
    crop_pos_x, crop_pos_y : float in [0, 1]
        Window position; anchor ``round(pos * (in - crop))``, halves away from 0.
    out_of_bounds_policy : {"error", "pad", "trim_to_shape"}
        What to do with a window that leaves the image: raise ``ValueError``,
        pad with ``fill_values``, or shrink the window to the image.
    fill_values : float or sequence of float
        Padding value, one or one per channel; converted to the output dtype
        (rounded half away from zero, saturated). Not used unless padding.
    dtype : dtype-like, optional
        Output dtype (default: the input's); converted as :func:`cast` does.

    Returns
    -------
    numpy.ndarray
        New C-contiguous array in the input layout with H, W = the window's.

    Raises
    ------
    ValueError
        Bad layout, crop extents, positions or policy; window out of bounds with
        ``out_of_bounds_policy="error"``; wrong number of ``fill_values``.
    TypeError
        Non-numeric arguments or unsupported ``dtype``.
    """
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    in_hw = (image.shape[axes["H"]], image.shape[axes["W"]])
    window = crop_window(in_hw, crop=crop, crop_h=crop_h, crop_w=crop_w,
                         crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y)
    return crop_to_window(image, window, layout=layout, out_of_bounds_policy=out_of_bounds_policy,
                          fill_values=fill_values, dtype=dtype)


@register("crop", "cpu")
@per_sample
def crop_kernel(ctx, ins, a, i):
    """``crop``: :func:`crop` of every sample, in the input's layout (the arguments given)."""
    return crop(ins[0], layout=meta_layout(ctx.in_metas[0]),
                **given(a, CROP_ARGS + _CROP_OUTPUT_ARGS))
