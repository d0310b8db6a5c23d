"""Random crop windows on the CPU: ``roi_random_crop`` and ``random_crop_generator``.

Semantics (DALI 2.4's operators):

- ``roi_random_crop``: per axis, a window of ``crop`` over a ROI ``[s, e)`` starts uniformly
  (integers) in ``[s, e - crop]`` when the ROI is at least as large as the window (the window
  inside the ROI), else in ``[e - crop, s]`` (the ROI inside the window); with a known input
  shape ``n`` the range is then intersected with ``[0, n - crop]`` (the window inside the
  input; DALI requires the ROI inside the input and the window not larger than it). int64.
- ``random_crop_generator``: the window of ``random_resized_crop``
  (:func:`runtime.kernels.params.windows.random_crop_window`) of an input whose shape (HW or
  HWC) is the op's input; ``anchor`` (y, x) and ``shape`` (h, w) int32.

Registers ``roi_random_crop`` and ``random_crop_generator``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.params.seeds import sample_rng
from runtime.kernels.params.windows import random_crop_window
from runtime.kernels.registry import per_sample, register, sample_args

__all__ = ["roi_random_crop", "random_crop_generator"]


def _ints(v):
    return None if v is None else np.asarray(v, np.int64).reshape(-1)


def roi_random_crop(rng, *, crop_shape, roi_start, roi_end=None, roi_shape=None,
                    in_shape=None):
    """The start of a random window holding the ROI (see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
    crop_shape, roi_start : sequence of int
        One value per axis.
    roi_end, roi_shape : sequence of int
        One of them (exclusive end, or extents).
    in_shape : sequence of int, optional
        The input's shape (the window stays inside it).

    Returns
    -------
    numpy.ndarray
        int64 (ndim,).

    Raises
    ------
    ValueError
        Mismatched lengths, neither or both of ``roi_end`` / ``roi_shape``, a negative extent,
        and with ``in_shape`` a ROI outside the input or a window larger than it.
    """
    crop, start = _ints(crop_shape), _ints(roi_start)
    if (roi_end is None) == (roi_shape is None):
        raise ValueError("roi_random_crop: give exactly one of `roi_end` and `roi_shape`")
    end = _ints(roi_end) if roi_end is not None else start + _ints(roi_shape)
    shape = _ints(in_shape)
    lengths = {len(crop), len(start), len(end)} | ({len(shape)} if shape is not None else set())
    if len(lengths) != 1:
        raise ValueError(f"roi_random_crop: crop_shape {crop.tolist()}, roi_start "
                         f"{start.tolist()}, the ROI end {end.tolist()}"
                         + (f" and in_shape {shape.tolist()}" if shape is not None else "")
                         + " must have the same number of dimensions")
    if (crop < 0).any() or (end < start).any():
        raise ValueError(f"roi_random_crop: negative crop_shape {crop.tolist()} or ROI "
                         f"[{start.tolist()}, {end.tolist()})")
    if shape is not None:
        if (start < 0).any() or (end > shape).any():
            raise ValueError(f"roi_random_crop: the ROI [{start.tolist()}, {end.tolist()}) "
                             f"is not inside the input shape {shape.tolist()}")
        if (crop > shape).any():
            raise ValueError(f"roi_random_crop: crop_shape {crop.tolist()} is larger than "
                             f"the input shape {shape.tolist()}")
    lo = np.where(end - start >= crop, start, end - crop)
    hi = np.where(end - start >= crop, end - crop, start)
    if shape is not None:
        lo, hi = np.maximum(lo, 0), np.minimum(hi, shape - crop)
    return rng.integers(lo, hi + 1).astype(np.int64)


@register("roi_random_crop", "cpu")
def roi_random_crop_kernel(ctx, inputs, args):
    """``roi_random_crop`` of every sample (the input, when given, only lends its shape)."""
    data = inputs[0] if inputs else None

    def one(i):
        a = sample_args(ctx, args, i)
        in_shape = a.get("in_shape")
        if data is not None:
            in_shape = np.shape(data[i] if len(data) > 1 else data[0])
        return roi_random_crop(sample_rng(a["_seeds"], i), crop_shape=a["crop_shape"],
                               roi_start=a["roi_start"], roi_end=a.get("roi_end"),
                               roi_shape=a.get("roi_shape"), in_shape=in_shape)
    return [ctx.pool.map(one, ctx.batch_size)]


def random_crop_generator(shape, rng, *, random_area=(0.08, 1.0),
                          random_aspect_ratio=(0.75, 4 / 3), num_attempts=10):
    """``(anchor, shape)`` int32 (2,) each, ``(y, x)`` / ``(h, w)``, of a random window of an
    input of ``shape`` (HW or HWC; see the module docstring)."""
    dims = np.asarray(shape).reshape(-1)
    if dims.size < 2:
        raise ValueError(f"random_crop_generator: expected a shape of at least 2 values "
                         f"(HW or HWC), got {dims.tolist()}")
    y0, x0, h, w = random_crop_window((int(dims[0]), int(dims[1])), rng,
                                      random_area=random_area,
                                      random_aspect_ratio=random_aspect_ratio,
                                      num_attempts=num_attempts)
    return np.asarray([y0, x0], np.int32), np.asarray([h, w], np.int32)


@register("random_crop_generator", "cpu")
@per_sample
def random_crop_generator_kernel(ctx, ins, a, i):
    """``random_crop_generator`` of sample ``i``."""
    return random_crop_generator(ins[0], sample_rng(a["_seeds"], i),
                                 random_area=a.get("random_area", (0.08, 1.0)),
                                 random_aspect_ratio=a.get("random_aspect_ratio",
                                                           (0.75, 4 / 3)),
                                 num_attempts=a.get("num_attempts", 10))
