"""The arguments of ``crop_mirror_normalize``, validated and folded (device-neutral).

Semantics of DALI 2.4's ``fn.crop_mirror_normalize``, evaluated in float32 as DALI does:
``out = (in - mean) / std * scale + shift`` is computed as ``(in - base) * inv + post_shift``
with ``inv = scale / std`` and ``base = mean - shift * std / scale`` (bit-exact with DALI on
float32 output; :func:`normalize_params`).  Also here: the output layout
(:func:`resolve_output_layout`), the ``mirror`` flag (:func:`mirror_flag`) and the window the
operator reads (:func:`cmn_window_from_crop`).
"""
from __future__ import annotations

import functools
import numbers

import numpy as np

from .windows import clip_window, crop_window

__all__ = ["resolve_output_layout", "normalize_params", "normalization_key", "check_scalar",
           "mirror_flag", "next_pow2", "cmn_window_from_crop"]


def next_pow2(n: int) -> int:
    """The smallest power of two ``>= n`` (``pad_output``'s channel count)."""
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


def check_scalar(value, name) -> np.float32:
    """``value`` (``scale``, ``shift``) as a float32 number.

    Raises
    ------
    TypeError
        Not a number (or a one-element array of one).
    """
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


def normalization_key(mean, std, scale, shift, channels) -> tuple:
    """The hashable identity of a normalization: ``(mean, std, scale, shift, channels)`` with
    ``mean``/``std`` as tuples of floats, ``scale``/``shift`` as floats; the arguments of
    :func:`normalize_params` for cached folding.

    Raises
    ------
    TypeError
        Non-numeric values.
    """
    check_scalar(scale, "scale")
    check_scalar(shift, "shift")
    return (_as_key(mean, "mean"), _as_key(std, "std"), float(np.asarray(scale)),
            float(np.asarray(shift)), channels)


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
    return _folded(*normalization_key(mean, std, scale, shift, channels))


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


def mirror_flag(mirror) -> bool:
    """The ``mirror`` argument of one sample as a bool (any integer: non-zero flips).

    Raises
    ------
    TypeError
        Not an integer (or a one-element integer array).
    """
    if isinstance(mirror, (numbers.Integral, np.integer, bool, np.bool_)):
        return bool(mirror)
    arr = np.asarray(mirror)
    if arr.size == 1 and arr.dtype.kind in "biu":
        return bool(arr.item())
    raise TypeError(f"mirror={mirror!r}: expected an integer (0 = no flip, 1 = flip)")


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
        As in ``crop_mirror_normalize``.

    Returns
    -------
    tuple of int
        ``(y0, x0, h, w)``; out of bounds only with ``out_of_bounds_policy="pad"``.
    """
    window = crop_window(in_hw, crop=crop, crop_h=crop_h, crop_w=crop_w,
                         crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y)
    return clip_window(window, in_hw, out_of_bounds_policy)
