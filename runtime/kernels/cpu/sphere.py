"""``sphere`` on the CPU: DALI's sphere augmentation (a radial "fish-eye" remap) of HWC images.

Semantics follow DALI 2.4 (measured bit-exactly on its CPU operator): with the center
``(cx, cy) = (W / 2, H / 2)`` and ``d = max(W // 2, H // 2)``, output pixel ``(x, y)`` (its
center ``p = (x + 0.5, y + 0.5)``) samples the input at ``c + (p - c) * |p - c| / d``, all in
float32, with :func:`runtime.kernels.cpu.warp.sample_points` (``nn`` by default; points outside
the image read ``fill_value``). ``fill_value`` is converted to the image type with ``cast``'s
rules (round half away from zero, saturate), where DALI truncates and wraps (300 -> 44 for
uint8; docs/semantics.md). ``mask`` 0 leaves a sample unchanged. Registers ``sphere``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

from .warp import fill_in_type, sample_points
from .warp_sample_jit import sphere_points as compiled_points

__all__ = ["sphere", "sphere_points", "numpy_sphere_points"]

_F = np.float32


def sphere_points(h: int, w: int):
    """The float32 source points ``(sx, sy)`` (each ``(h, w)``) of the sphere remap."""
    cx, cy = _F(w) / _F(2), _F(h) / _F(2)
    d = _F(max(w // 2, h // 2))
    if d != 0 and h and w:     # the compiled loop (the same float32 operations)
        return compiled_points()(h, w, cx, cy, d, np.empty((h, w), _F), np.empty((h, w), _F))
    return numpy_sphere_points(h, w)


def numpy_sphere_points(h: int, w: int):
    """:func:`sphere_points` with numpy (the reference of the compiled loop, and the
    degenerate sizes whose ``d`` is 0)."""
    cx, cy = _F(w) / _F(2), _F(h) / _F(2)
    d = _F(max(w // 2, h // 2))
    tx = (np.arange(w, dtype=_F) + _F(0.5)) - cx
    ty = ((np.arange(h, dtype=_F) + _F(0.5)) - cy)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.sqrt(tx * tx + ty * ty) / d
    return cx + tx * r, cy + ty * r


def sphere(img, *, interp="nn", fill_value=0.0, mask=1):
    """:mod:`sphere` of one ``(H, W, C)`` (or ``(H, W)``) image.

    Parameters
    ----------
    img : numpy.ndarray
        Any numeric dtype.
    interp : {"nn", "linear"}
    fill_value : float
        Value outside the source image (converted to the image type with ``cast``'s rules).
    mask : int
        0: return a copy of ``img``.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``img``.

    Raises
    ------
    ValueError
        An interpolation other than ``nn`` / ``linear``.
    """
    img = np.asarray(img)
    if not mask:
        return img.copy()
    sx, sy = sphere_points(*img.shape[:2])
    fill = fill_in_type(0.0 if fill_value is None else fill_value, img.dtype)
    return sample_points(img, sx, sy, interp=interp, fill_value=float(fill), op="sphere")


@register("sphere", "cpu")
@per_sample
def sphere_kernel(ctx, ins, a, i):
    """``sphere`` of every sample."""
    return sphere(ins[0], interp=a.get("interp_type", "nn"), fill_value=a.get("fill_value"),
                  mask=a.get("mask", 1))
