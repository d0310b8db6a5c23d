"""``flip``: mirror an image along its horizontal, vertical and depth axes (CPU).

Semantics follow ``nvidia.dali.fn.flip`` (DALI 2.4): ``horizontal`` flips the
``W`` axis, ``vertical`` the ``H`` axis, ``depthwise`` the ``D`` axis; any
non-zero value means "flip" (DALI accepts 2 or -1 as true). A requested axis
that the layout lacks (e.g. ``depthwise`` on ``"HWC"``) is ignored, as in DALI.
Registers the ``flip`` kernel.
"""

from __future__ import annotations

import numbers

import numpy as np

from runtime.kernels.params.layouts import layout_axes, meta_layout
from runtime.kernels.registry import per_sample, register

__all__ = ["flip"]


def _flag(value, name):
    if isinstance(value, (numbers.Integral, np.integer, bool, np.bool_)):
        return bool(value)
    arr = np.asarray(value)
    if arr.size == 1 and arr.dtype.kind in "biu":
        return bool(arr.item())
    raise TypeError(f"{name}={value!r}: expected an integer (0 = keep, non-zero = flip)")


def flip(image, *, layout="HWC", horizontal=1, vertical=0, depthwise=0):
    """Flip one sample (DALI ``fn.flip``).

    Parameters
    ----------
    image : numpy.ndarray
        One sample of any dtype, layout ``layout`` (``"HWC"``, ``"CHW"``,
        ``"HW"``, ``"DHWC"``, ``"FHWC"``...; must have ``H`` and ``W``).
    layout : str
        Layout of ``image``; ``None`` infers HWC (3-D) / HW (2-D).
    horizontal, vertical, depthwise : int
        Non-zero flips the ``W`` / ``H`` / ``D`` axis.

    Returns
    -------
    numpy.ndarray
        New C-contiguous array, same shape, dtype and layout.

    Raises
    ------
    ValueError
        Bad layout.
    TypeError
        Non-integer flags.
    """
    image = np.asarray(image)
    layout, axes = layout_axes(layout, image.ndim)
    index = [slice(None)] * image.ndim
    for letter, value, name in (("W", horizontal, "horizontal"), ("H", vertical, "vertical"),
                                ("D", depthwise, "depthwise")):
        if _flag(value, name) and letter in axes:
            index[axes[letter]] = slice(None, None, -1)
    return image[tuple(index)].copy(order="C")


@register("flip", "cpu")
@per_sample
def flip_kernel(ctx, ins, a, i):
    """``flip``: :func:`flip` of every sample, in the input's layout."""
    return flip(ins[0], layout=meta_layout(ctx.in_metas[0]), horizontal=a.get("horizontal", 1),
                vertical=a.get("vertical", 0), depthwise=a.get("depthwise", 0))
