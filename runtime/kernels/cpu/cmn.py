"""``crop_mirror_normalize``: crop, horizontal mirror, per-channel normalization,
layout permutation, channel padding and type conversion in one pass (CPU).

Semantics follow ``nvidia.dali.fn.crop_mirror_normalize`` (DALI 2.4, checked
against DALI as an oracle):

* the window is placed as in ``crop`` (:func:`runtime.kernels.cpu.crop_window.crop_window`)
  and may leave the image under ``out_of_bounds_policy``;
* ``mirror`` flips the produced window horizontally (padding included);
* ``out = (in - mean) / std * scale + shift``, evaluated in float32 as DALI does:
  ``(in - mean') * inv`` with ``inv = scale / std`` and
  ``mean' = mean - shift * std / scale`` (bit-exact to DALI on float32 output);
* padded pixels hold ``fill_values`` as given (not normalized);
* ``pad_output`` pads the channel count to the next power of two (3 -> 4, 5 -> 8);
  the extra channels hold ``fill_values[c]`` when ``out_of_bounds_policy="pad"``,
  0 otherwise;
* integer outputs are rounded half away from zero and saturated.

The work is one torch elementwise pass (uint8 -> float32 subtract written
straight into the permuted output buffer) plus an in-place multiply; torch is
used single-threaded by the runtime.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
import torch

from .cast import cast, to_numpy_dtype
from .crop import clip_window, fill_vector, layout_axes
from .crop_window import crop_window

__all__ = ["crop_mirror_normalize", "cmn_window_from_crop", "cmn_to_window",
           "resolve_output_layout", "normalize_params"]

# dtypes torch can subtract from directly (others go through float32 first)
_TORCH_OK = {np.dtype(t) for t in ("uint8", "int8", "int16", "int32", "int64",
                                   "float16", "float32", "float64")}


def _next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def resolve_output_layout(layout, output_layout):
    """Validate ``output_layout`` against the input ``layout``.

    Parameters
    ----------
    layout : str
        Input layout (validated), e.g. ``"HWC"``.
    output_layout : str or None
        A permutation of ``layout``'s letters. ``None`` means the input layout.
        The default ``"CHW"`` given for an input without channels (``"HW"``)
        means ``"HW"``.

    Returns
    -------
    tuple
        ``(output_layout, perm)`` where output axis ``i`` is input axis ``perm[i]``.

    Raises
    ------
    ValueError
        ``output_layout`` is not a permutation of ``layout``.
    """
    if output_layout is None or output_layout == "":
        output_layout = layout
    if not isinstance(output_layout, str):
        raise TypeError(f"output_layout={output_layout!r}: expected a layout string")
    if "C" not in layout and output_layout == "CHW":
        output_layout = "HW"
    if sorted(output_layout) != sorted(layout):
        raise ValueError(
            f"output_layout={output_layout!r} is not a permutation of the input layout "
            f"{layout!r}")
    return output_layout, tuple(layout.index(c) for c in output_layout)


def _per_channel(value, channels, name):
    try:
        vec = np.asarray(value, dtype=np.float32).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"{name}={value!r}: expected a number or a list of numbers") from None
    if vec.size != 1 and vec.size != (channels or 1):
        raise ValueError(
            f"{name}={value!r} has {vec.size} values; expected 1 or one per input channel "
            f"({channels or 1})")
    return vec


def _scalar(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        arr = np.asarray(value)
        if arr.size != 1 or arr.dtype.kind not in "iuf":
            raise TypeError(f"{name}={value!r}: expected a number")
        value = arr.item()
    return np.float32(value)


def _as_key(value, name):
    """Hashable form of a scalar / per-channel argument (for the cache)."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return (float(value),)
    try:
        return tuple(float(v) for v in np.asarray(value, dtype=np.float64).ravel())
    except (TypeError, ValueError):
        raise TypeError(f"{name}={value!r}: expected a number or a list of numbers") from None


def normalize_params(mean, std, scale, shift, channels):
    """Fold ``mean``/``std``/``scale``/``shift`` into DALI's float32 form.

    Parameters
    ----------
    mean, std : float or sequence of float
        One value or one per input channel.
    scale, shift : float
        Scalars.
    channels : int or None
        Input channel count (``None``: no ``C`` axis).

    Returns
    -------
    tuple of numpy.ndarray
        ``(base, inv, post_shift)``: ``out = (in - base) * inv + post_shift``,
        float32 vectors of equal length (1 or ``channels``); ``post_shift`` is
        0 unless ``scale == 0``. The arrays are shared (cached): do not modify.

    Raises
    ------
    ValueError
        A zero or non-finite ``std``, or wrong vector lengths.
    TypeError
        Non-numeric values.
    """
    _scalar(scale, "scale")
    _scalar(shift, "shift")
    return _folded(_as_key(mean, "mean"), _as_key(std, "std"), float(np.asarray(scale)),
                   float(np.asarray(shift)), channels)


@functools.lru_cache(maxsize=256)
def _folded(mean, std, scale, shift, channels):
    mean_v = _per_channel(mean, channels, "mean")
    std_v = _per_channel(std, channels, "std")
    if np.any(std_v == 0) or not np.all(np.isfinite(std_v)):
        raise ValueError(f"std={list(std)!r}: expected finite, non-zero values")
    scale32, shift32 = np.float32(scale), np.float32(shift)
    n = max(mean_v.size, std_v.size)
    mean_v, std_v = np.broadcast_to(mean_v, (n,)), np.broadcast_to(std_v, (n,))
    if scale32 == 0:
        base, inv, post = mean_v.copy(), np.zeros(n, np.float32), shift32
    else:
        inv = (scale32 / std_v).astype(np.float32)
        base = (mean_v - shift32 * std_v / scale32).astype(np.float32)
        post = np.float32(0)
    return base, inv, post


def cmn_window_from_crop(in_hw, *, crop=None, crop_h=None, crop_w=None, crop_pos_x=0.5,
                         crop_pos_y=0.5, out_of_bounds_policy="error"):
    """The window ``crop_mirror_normalize`` reads, after ``out_of_bounds_policy``.

    For fusion (e.g. ROI decode or resize -> crop_mirror_normalize): the
    producer only needs to deliver the in-bounds part of this window.

    Parameters
    ----------
    in_hw : tuple of int
        Input ``(H, W)``.
    crop, crop_h, crop_w, crop_pos_x, crop_pos_y, out_of_bounds_policy
        As in :func:`crop_mirror_normalize`.

    Returns
    -------
    tuple of int
        ``(y0, x0, h, w)``; out of bounds only with ``out_of_bounds_policy="pad"``.
    """
    window = crop_window(in_hw, crop=crop, crop_h=crop_h, crop_w=crop_w,
                         crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y)
    return clip_window(window, in_hw, out_of_bounds_policy)


def _mirror_flag(mirror):
    if isinstance(mirror, (numbers.Integral, np.integer, bool, np.bool_)):
        return bool(mirror)
    arr = np.asarray(mirror)
    if arr.size == 1 and arr.dtype.kind in "biu":
        return bool(arr.item())
    raise TypeError(f"mirror={mirror!r}: expected an integer (0 = no flip, 1 = flip)")


def cmn_to_window(image, window, *, layout="HWC", mirror=0, mean=0.0, std=1.0, scale=1.0,
                  shift=0.0, output_layout="CHW", dtype="float32", pad_output=False,
                  fill_values=0, out_of_bounds_policy="error", out=None):
    """:func:`crop_mirror_normalize` with an explicit window ``(y0, x0, h, w)``.

    Parameters and results are those of :func:`crop_mirror_normalize`; the
    window replaces the ``crop*`` arguments and is subject to
    ``out_of_bounds_policy``. ``out``, when given, is the array to write into (shape and dtype
    of the result; e.g. one sample of a preallocated batch) and is returned.
    """
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    out_layout, perm = resolve_output_layout(layout, output_layout)
    ah, aw, ac = axes["H"], axes["W"], axes.get("C")
    H, W = image.shape[ah], image.shape[aw]
    policy = getattr(out_of_bounds_policy, "name", out_of_bounds_policy)
    policy = policy.lower() if isinstance(policy, str) else policy
    y0, x0, h, w = clip_window(window, (H, W), policy, image.shape, layout)
    out_dtype = to_numpy_dtype(dtype)
    flip = _mirror_flag(mirror)
    c_in = image.shape[ac] if ac is not None else None
    if not isinstance(pad_output, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"pad_output={pad_output!r}: expected a bool")
    if pad_output and ac is None:
        raise ValueError(f"pad_output=True needs a channel axis; layout {layout!r} has none")
    c_out = _next_pow2(c_in) if (pad_output and c_in) else c_in
    base, inv, post_shift = normalize_params(mean, std, scale, shift, c_in)

    # output buffer in the output layout, and a view of it in input-axis order
    shape_in_order = list(image.shape)
    shape_in_order[ah], shape_in_order[aw] = h, w
    if ac is not None:
        shape_in_order[ac] = c_out
    shape_out = tuple(shape_in_order[p] for p in perm)
    if out is None:
        out = np.empty(shape_out, dtype=out_dtype)
    elif out.shape != shape_out or out.dtype != out_dtype:
        raise ValueError(f"out has shape {out.shape} and dtype {out.dtype}; expected "
                         f"{shape_out} and {out_dtype}")
    view = out.transpose(np.argsort(perm))

    sy0, sx0 = max(y0, 0), max(x0, 0)
    sy1, sx1 = min(y0 + h, H), min(x0 + w, W)
    has_data = sy1 > sy0 and sx1 > sx0
    inside = sy0 == y0 and sx0 == x0 and sy1 == y0 + h and sx1 == x0 + w
    if policy == "pad":
        fill = fill_vector(fill_values, c_out, out_dtype)
        if not inside or c_out != c_in:
            _broadcast_fill(view, fill, ac)
    elif c_out != c_in:
        chan = [slice(None)] * view.ndim
        chan[ac] = slice(c_in, c_out)
        view[tuple(chan)] = 0
    if not has_data:
        return out

    src = [slice(None)] * image.ndim
    src[ah], src[aw] = slice(sy0, sy1), slice(sx0, sx1)
    dst = [slice(None)] * image.ndim
    dst[ah] = slice(sy0 - y0, sy1 - y0)
    dst[aw] = slice(w - (sx1 - x0), w - (sx0 - x0)) if flip else slice(sx0 - x0, sx1 - x0)
    if ac is not None:
        dst[ac] = slice(0, c_in)
    region = image[tuple(src)]
    target = view[tuple(dst)]
    _normalize_into(region, target, base, inv, post_shift, ac, aw if flip else None)
    return out


def _broadcast_fill(view, fill, c_axis):
    if fill.size == 1 or c_axis is None:
        view[...] = fill[0]
    else:
        shape = [1] * view.ndim
        shape[c_axis] = fill.size
        view[...] = fill.reshape(shape)


def _lut_table(base, inv, post_shift, dtype):
    """Per-channel 256-entry tables ``cast((v - base[c]) * inv[c] + post_shift, dtype)``."""
    lut = (np.arange(256, dtype=np.float32)[None, :] - base[:, None]) * inv[:, None]
    if post_shift != 0:
        lut = lut + post_shift
    return cast(lut, dtype)


def _lut_apply(region, target, lut, c_axis, flip_axis):
    """Gather ``lut`` (from :func:`_lut_table`) at the uint8 ``region`` into ``target``."""
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
    _lut_apply(region, target, _lut_table(base, inv, post_shift, target.dtype), c_axis,
               flip_axis)


def _normalize_into(region, target, base, inv, post_shift, c_axis, flip_axis):
    """Write ``(region - base) * inv + post_shift`` into ``target`` (same axis order)."""
    if region.dtype == np.uint8 and target.dtype != np.float32:
        _lut_into(region, target, base, inv, post_shift, c_axis, flip_axis)
        return
    if region.dtype not in _TORCH_OK:
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


def crop_mirror_normalize(image, *, layout="HWC", crop=None, crop_h=None, crop_w=None,
                          crop_pos_x=0.5, crop_pos_y=0.5, mirror=0, mean=0.0, std=1.0,
                          scale=1.0, shift=0.0, output_layout="CHW", dtype="float32",
                          pad_output=False, fill_values=0, out_of_bounds_policy="error"):
    """Crop, mirror, normalize, permute and convert one image (DALI ``fn.crop_mirror_normalize``).

    Parameters
    ----------
    image : numpy.ndarray
        One sample, layout ``layout`` (``"HWC"``, ``"CHW"``, ``"HW"`` or any
        layout with ``H`` and ``W``); any numeric dtype (uint8 typical).
    layout : str
        Input layout; ``None`` infers HWC (3-D) / HW (2-D).
    crop, crop_h, crop_w, crop_pos_x, crop_pos_y
        Window as in :func:`runtime.kernels.cpu.crop.crop` (no crop = whole image).
    mirror : int
        Non-zero flips the output horizontally.
    mean, std : float or sequence of float
        One value or one per input channel; ``std`` must be non-zero.
    scale, shift : float
        ``out = (in - mean) / std * scale + shift``.
    output_layout : str
        Permutation of the input layout letters (default ``"CHW"``; for an input
        without ``C`` the default means ``"HW"``).
    dtype : dtype-like
        Output type (default float32). Integer outputs round half away from
        zero and saturate; float16 is IEEE-rounded.
    pad_output : bool
        Pad the channel count to the next power of two.
    fill_values : float or sequence of float
        Values of padded pixels (and padded channels) with
        ``out_of_bounds_policy="pad"``; one value or one per output channel.
    out_of_bounds_policy : {"error", "pad", "trim_to_shape"}
        As in ``crop``.

    Returns
    -------
    numpy.ndarray
        New C-contiguous array in ``output_layout``, dtype ``dtype``.

    Raises
    ------
    ValueError
        Bad layout/output_layout, crop arguments, policy, window out of bounds
        with ``"error"``, wrong number of per-channel values, zero ``std``.
    TypeError
        Non-numeric arguments or an unsupported ``dtype``.
    """
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    in_hw = (image.shape[axes["H"]], image.shape[axes["W"]])
    window = crop_window(in_hw, crop=crop, crop_h=crop_h, crop_w=crop_w,
                         crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y)
    return cmn_to_window(image, window, layout=layout, mirror=mirror, mean=mean, std=std,
                         scale=scale, shift=shift, output_layout=output_layout, dtype=dtype,
                         pad_output=pad_output, fill_values=fill_values,
                         out_of_bounds_policy=out_of_bounds_policy)
