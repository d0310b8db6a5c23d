"""CPU kernels of the color ops: ``brightness_contrast`` (and ``hsv``).

``brightness_contrast`` follows DALI 2.4 bit for bit (measured): in float32,
``out = in * (b * c) + (shift * range + b * (center - c * center))``, then ``cast`` to the output
type; ``range`` is 1 for float outputs and the type's maximum otherwise, ``center`` defaults to
``(max + 1) / 2`` of an integer input type (128 for uint8) and 0.5 for floats.
Registers ``brightness_contrast``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

from .cast import cast, to_numpy_dtype

__all__ = ["brightness_contrast", "default_center", "output_range"]

_F = np.float32


def default_center(dtype) -> float:
    """``contrast_center``'s default for an input type."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return (int(np.iinfo(dt).max) + 1) / 2
    return 0.5


def output_range(dtype) -> float:
    """What ``brightness_shift`` 1.0 means in an output type."""
    dt = np.dtype(dtype)
    return float(np.iinfo(dt).max) if dt.kind in "iu" else 1.0


def brightness_contrast(x, *, brightness=1.0, brightness_shift=0.0, contrast=1.0,
                        contrast_center=None, dtype=None):
    """Adjust one sample (see the module docstring).

    Returns
    -------
    numpy.ndarray
        Same shape; ``dtype`` (default: the input's).
    """
    x = np.asarray(x)
    out_dt = x.dtype if dtype is None else to_numpy_dtype(dtype)
    center = default_center(x.dtype) if contrast_center is None else contrast_center
    b, c, cc = _F(brightness), _F(contrast), _F(center)
    mul = b * c
    add = _F(brightness_shift) * _F(output_range(out_dt)) + b * (cc - c * cc)
    return cast(x.astype(_F) * mul + add, out_dt)


@register("brightness_contrast", "cpu")
@per_sample
def brightness_contrast_kernel(ctx, ins, a, i):
    """``brightness_contrast`` of sample ``i``."""
    return brightness_contrast(
        ins[0], brightness=a.get("brightness", 1.0), brightness_shift=a.get("brightness_shift",
                                                                            0.0),
        contrast=a.get("contrast", 1.0), contrast_center=a.get("contrast_center"),
        dtype=ctx.out_metas[0].dtype)
