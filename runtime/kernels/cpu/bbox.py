"""``bb_flip`` on the CPU: mirror boxes in relative (0..1) coordinates.

Semantics follow DALI 2.4 (measured bit-exactly): boxes are groups of 4 consecutive values;
``xywh`` boxes go through ``ltrb`` (``r = x + w``, ``b = y + h``), a flip maps ``(l, r)`` to
``(1 - r, 1 - l)`` (``(t, b)`` likewise), and ``w = r - l``, ``h = b - t`` come back, in float32,
so even an unflipped ``xywh`` box may change its size by an ulp, as in DALI.
Registers ``bb_flip``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

__all__ = ["bb_flip"]

_ONE = np.float32(1)


def bb_flip(boxes, *, horizontal=1, vertical=0, ltrb=False):
    """Flip boxes (see the module docstring).

    Parameters
    ----------
    boxes : numpy.ndarray
        float32, any shape whose size is a multiple of 4 (usually ``(N, 4)``).
    horizontal, vertical : int
        Non-zero flips.
    ltrb : bool
        ``[l, t, r, b]`` boxes instead of ``[x, y, w, h]``.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype.

    Raises
    ------
    ValueError
        A size that is not a multiple of 4.
    """
    boxes = np.asarray(boxes)
    if boxes.size % 4:
        raise ValueError(f"bounding boxes are groups of 4 coordinates; got {boxes.size} values "
                         f"(shape {boxes.shape})")
    b = boxes.reshape(-1, 4)
    left, top = b[:, 0], b[:, 1]
    right, bottom = (b[:, 2], b[:, 3]) if ltrb else (b[:, 0] + b[:, 2], b[:, 1] + b[:, 3])
    if horizontal:
        left, right = _ONE - right, _ONE - left
    if vertical:
        top, bottom = _ONE - bottom, _ONE - top
    if ltrb:
        out = np.stack([left, top, right, bottom], axis=1)
    else:
        out = np.stack([left, top, right - left, bottom - top], axis=1)
    return out.astype(boxes.dtype, copy=False).reshape(boxes.shape)


@register("bb_flip", "cpu")
@per_sample
def bb_flip_kernel(ctx, ins, a, i):
    """``bb_flip`` of sample ``i``."""
    return bb_flip(ins[0], horizontal=a.get("horizontal", 1), vertical=a.get("vertical", 0),
                   ltrb=a.get("ltrb", False))
