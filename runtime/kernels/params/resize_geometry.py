"""Output size and source window of DALI's ``resize`` operator (2D, per sample).

This module holds only the *geometry* of ``resize``: given the input extent and the size
arguments (``size``, ``resize_x``/``resize_y``, ``resize_shorter``, ``resize_longer``,
``mode``, ``max_size``, ``roi_*``, ``subpixel_scale``) it computes the output extent and the
source window, in input pixel coordinates, that the output maps onto.  Resampling itself lives
in the device kernels (:mod:`runtime.kernels.cpu.resize` on the CPU).

Semantics follow DALI 2.4's ``ResizeAttr`` (documented arguments of ``nvidia.dali.fn.resize``),
checked against DALI 2.4's CPU operator.  DALI stores sizes and ROI coordinates as 32-bit
floats; the computation below rounds intermediate values to float32 in the same places so
that output shapes match exactly.

Pure Python + numpy scalars; thread-safe (no shared state).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from runtime.kernels.registry import given

__all__ = ["ResizeParams", "resize_output_shape", "crop_resize_params", "RESIZE_MODES",
           "SIZE_ARGS", "resize_size_args", "adjust_output_size"]

RESIZE_MODES = ("default", "stretch", "not_larger", "not_smaller")

#: The arguments of ``resize`` that set the output size and source window (the keyword
#: arguments of :func:`resize_output_shape`).
SIZE_ARGS = ("size", "resize_x", "resize_y", "resize_shorter", "resize_longer", "mode",
             "max_size", "roi_start", "roi_end", "roi_relative", "subpixel_scale")

_f32 = np.float32
# ROI extents below this many pixels are widened symmetrically (DALI's "min_size" of 1e-3).
_MIN_ROI_EXTENT = 1e-3


@dataclass(frozen=True)
class ResizeParams:
    """Everything resampling needs for one 2D sample.

    Attributes
    ----------
    out_h, out_w : int
        Output extent in pixels (>= 0).
    y0, x0, y1, x1 : float
        Source window in input pixel coordinates (pixel ``i`` covers ``[i, i+1)``): output row
        ``0`` starts at ``y0`` and the last output row ends at ``y1``.  ``y1 < y0`` (``x1 < x0``)
        means the output is flipped along that axis.  Values are float32-representable.
    in_h, in_w : int
        Input extent the parameters were computed for.
    """

    out_h: int
    out_w: int
    y0: float
    x0: float
    y1: float
    x1: float
    in_h: int = 0
    in_w: int = 0

    @property
    def out_hw(self) -> tuple[int, int]:
        """Output extent as ``(out_h, out_w)``."""
        return (self.out_h, self.out_w)


def _is_given(value) -> bool:
    return value is not None


def _as_number(name: str, value) -> float:
    cls = value.__class__
    if cls is int or cls is float:      # the common case, without the ABC check below
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"resize: `{name}` must be finite, got {value!r}")
        return v
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        raise TypeError(f"resize: `{name}` must be a real number, got {value!r} "
                        f"({type(value).__name__})")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"resize: `{name}` must be finite, got {value!r}")
    return v


def _as_pair(name: str, value, allow_scalar: bool = True) -> list[float]:
    """Convert a scalar or a 2-element sequence to two floats in (H, W) order."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)) and len(value) == 1 and allow_scalar:
        value = value[0]    # the argument schema makes a scalar (DALI: both axes) a 1-tuple
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"resize: `{name}` must have 2 elements (one per spatial dimension, "
                             f"in (H, W) order), got {len(value)}: {value!r}")
        return [_as_number(name, v) for v in value]
    if allow_scalar:
        v = _as_number(name, value)
        return [v, v]
    raise TypeError(f"resize: `{name}` must be a sequence of 2 numbers, got {value!r}")


def _adjust_output_size(out_size, in_size, mode, max_size):
    """DALI's AdjustOutputSize: fill in missing extents and apply mode / max_size.

    ``out_size`` (float32 list, may be negative to flip) is modified in place.
    """
    ndim = len(in_size)
    scale = [1.0] * ndim
    mask = [False] * ndim
    provided = 0
    for d in range(ndim):
        mask[d] = out_size[d] != 0 and in_size[d] != 0
        scale[d] = float(out_size[d]) / float(in_size[d]) if in_size[d] else 1.0
        provided += mask[d]

    if provided == 0:  # nothing to go by: keep the input size
        for d in range(ndim):
            out_size[d] = _f32(in_size[d])
        return

    if mode in ("default", "stretch"):
        if provided < ndim:
            if mode == "default":
                # missing extents use the geometric mean of the provided scales
                avg = 1.0
                for d in range(ndim):
                    if mask[d]:
                        avg *= abs(scale[d])
                if provided > 1:
                    avg = avg ** (1.0 / provided)
            for d in range(ndim):
                if not mask[d]:
                    scale[d] = avg if mode == "default" else 1.0
                    out_size[d] = _f32(float(in_size[d]) * scale[d])
        if max_size is not None:
            for d in range(ndim):
                if max_size[d] > 0 and abs(out_size[d]) > max_size[d]:
                    out_size[d] = _f32(math.copysign(max_size[d], out_size[d]))
        return

    # not_larger / not_smaller: one common scale (kept aspect ratio)
    final = 0.0
    first = True
    for d in range(ndim):
        if mask[d]:
            s = float(_f32(abs(scale[d])))  # DALI holds this one in a float
            if (first or (mode == "not_smaller" and s > final)
                    or (mode == "not_larger" and s < final)):
                final = s
            first = False
    if max_size is not None:
        for d in range(ndim):
            if max_size[d] > 0:
                s = float(max_size[d]) / float(in_size[d])
                if s < final:
                    final = s
    for d in range(ndim):
        if not mask[d] or abs(scale[d]) != final:
            scale[d] = math.copysign(final, scale[d])
            out_size[d] = _f32(float(in_size[d]) * scale[d])


#: public name of the N-D extent rule (shared with ``tensor_resize``'s geometry)
adjust_output_size = _adjust_output_size


def resize_output_shape(in_hw, *, size=None, resize_x=None, resize_y=None, resize_shorter=None,
                        resize_longer=None, mode="default", max_size=None, roi_start=None,
                        roi_end=None, roi_relative=False, subpixel_scale=True) -> ResizeParams:
    """Compute the output extent and source window of DALI's ``resize`` for one 2D sample.

    Parameters
    ----------
    in_hw : tuple of 2 int
        Input extent ``(H, W)`` in pixels (>= 0).
    size : float or sequence of 2 float, optional
        Requested output size in ``(H, W)`` order (the order of the spatial dimensions of the
        layout).  A scalar applies to both.  ``0`` means "unspecified" (derived from the other
        extent according to ``mode``); a negative value flips that axis.
    resize_x, resize_y : float, optional
        Requested output width / height; an omitted or 0 one is derived as for ``size``.
        Negative flips.
    resize_shorter, resize_longer : float, optional
        Length of the shorter / longer output side, keeping the aspect ratio (equivalent to
        the same size on both axes with ``mode="not_smaller"`` / ``"not_larger"``).
    mode : {"default", "stretch", "not_larger", "not_smaller"}
        ``default``: missing extents are scaled by the geometric mean of the given scales;
        ``stretch``: missing extents keep their input size; ``not_larger`` / ``not_smaller``:
        one scale for both axes so that no side exceeds / falls short of the request.
    max_size : float or sequence of 2 float, optional
        Upper limit of the output extent, per axis (``<= 0`` means no limit on that axis).  In
        ``not_*`` modes it lowers the common scale (aspect ratio kept); otherwise it clamps.
    roi_start, roi_end : sequence of 2 float, optional
        Input region of interest in ``(H, W)`` order, given together.  ``roi_end < roi_start``
        flips that axis.  Absolute pixels unless ``roi_relative``.
    roi_relative : bool
        ROI coordinates are fractions of the input extent (0 = top/left, 1 = bottom/right).
    subpixel_scale : bool
        If True (default) a fractional output size keeps the exact scale factor: the source
        window is shrunk/grown about its centre by ``rounded_size / fractional_size``.
        Otherwise the window stays and the scale changes to fit the rounded size.

    Returns
    -------
    ResizeParams
        ``out_h, out_w`` (rounded half up, at least 1 unless the input is empty) and the float32
        source window ``(y0, x0, y1, x1)``.

    Raises
    ------
    ValueError
        Not exactly one of {``size``, ``resize_x``/``resize_y``, ``resize_shorter``,
        ``resize_longer``}; ``mode`` other than "default" combined with
        ``resize_shorter``/``resize_longer``; unknown ``mode``; only one of
        ``roi_start``/``roi_end``; wrong number of elements; non-finite values; an empty input
        asked to produce a non-empty output; a negative input extent.
    TypeError
        Non-numeric argument values.

    Notes
    -----
    Source of the semantics: DALI 2.4 ``nvidia.dali.fn.resize`` documentation and its
    ``ResizeAttr`` behaviour (checked against the operator).  The output extent is
    ``round_half_up(|requested|)``; sizes and ROI are float32 as in DALI.
    """
    if not isinstance(in_hw, (tuple, list, np.ndarray)) or len(in_hw) != 2:
        raise ValueError(f"resize: `in_hw` must be a pair (H, W), got {in_hw!r}")
    in_h, in_w = (int(v) for v in in_hw)
    if in_h < 0 or in_w < 0:
        raise ValueError(f"resize: input extent must be non-negative, got (H, W) = {in_hw!r}")

    has_xy = _is_given(resize_x) or _is_given(resize_y)
    methods = [n for n, g in (("resize_x/resize_y", has_xy), ("size", _is_given(size)),
                              ("resize_shorter", _is_given(resize_shorter)),
                              ("resize_longer", _is_given(resize_longer))) if g]
    if len(methods) != 1:
        raise ValueError(
            "resize: exactly one way of giving the size must be used (separate resize_x/resize_y, "
            f"size, resize_shorter or resize_longer); got {methods or 'none'}")
    if mode not in RESIZE_MODES:
        raise ValueError(f"resize: `mode` must be one of {RESIZE_MODES}, got {mode!r}")
    if (_is_given(resize_shorter) or _is_given(resize_longer)) and mode != "default":
        raise ValueError(f"resize: `mode` ({mode!r}) cannot be combined with "
                         f"`{methods[0]}`, which implies its own mode")
    if _is_given(roi_start) != _is_given(roi_end):
        raise ValueError("resize: `roi_start` and `roi_end` must be given together, got "
                         f"roi_start={roi_start!r}, roi_end={roi_end!r}")

    if _is_given(size):
        requested = _as_pair("size", size)
    elif has_xy:
        ry = 0.0 if resize_y is None else _as_number("resize_y", resize_y)
        rx = 0.0 if resize_x is None else _as_number("resize_x", resize_x)
        requested = [ry, rx]
    elif _is_given(resize_shorter):
        v = _as_number("resize_shorter", resize_shorter)
        requested, mode = [v, v], "not_smaller"
    else:
        v = _as_number("resize_longer", resize_longer)
        requested, mode = [v, v], "not_larger"
    requested = [_f32(v) for v in requested]

    limits = None
    if _is_given(max_size):
        limits = [float(_f32(v)) for v in _as_pair("max_size", max_size)]

    # --- input window (CalculateInputRoI) ---
    in_ext = (in_h, in_w)
    lo = [_f32(0.0), _f32(0.0)]
    hi = [_f32(in_h), _f32(in_w)]
    if _is_given(roi_start):
        rs = _as_pair("roi_start", roi_start, allow_scalar=False)
        re_ = _as_pair("roi_end", roi_end, allow_scalar=False)
        for d in range(2):
            if in_ext[d] <= 0:
                continue
            a, b = float(_f32(rs[d])), float(_f32(re_[d]))
            if roi_relative:
                a *= in_ext[d]
                b *= in_ext[d]
            if abs(b - a) < _MIN_ROI_EXTENT:
                off = float(_f32(0.5 * _MIN_ROI_EXTENT if a <= b else -0.5 * _MIN_ROI_EXTENT))
                a, b = a - off, b + off
            lo[d], hi[d] = _f32(a), _f32(b)

    # --- CalculateSampleParams ---
    empty_input = in_h * in_w == 0
    win_size = [_f32(0.0), _f32(0.0)]
    for d in range(2):
        sz = _f32(hi[d] - lo[d])
        if sz < 0:
            lo[d], hi[d] = hi[d], lo[d]
            requested[d] = -requested[d]
            sz = -sz
        win_size[d] = sz

    _adjust_output_size(requested, win_size, mode, limits)

    for d in range(2):
        if lo[d] == hi[d] and requested[d] != 0:
            raise ValueError(f"resize: cannot produce a non-empty output from an empty input "
                             f"(input (H, W) = ({in_h}, {in_w}), requested output extent "
                             f"{abs(float(requested[d]))} along axis {'HW'[d]})")

    min_size = 0 if empty_input else 1
    out = [0, 0]
    src_lo = [float(v) for v in lo]
    src_hi = [float(v) for v in hi]
    for d in range(2):
        req = float(requested[d])
        frac = abs(req)
        out[d] = max(min_size, int(math.floor(frac + 0.5)))
        if req < 0:
            src_lo[d], src_hi[d] = src_hi[d], src_lo[d]
        if subpixel_scale and out[d] != frac:
            adj = min(out[d] / frac, 10.0) if frac else 10.0
            center = (src_lo[d] + src_hi[d]) * 0.5
            src_lo[d] = float(_f32(min(max(center + (src_lo[d] - center) * adj, -1e9), 1e9)))
            src_hi[d] = float(_f32(min(max(center + (src_hi[d] - center) * adj, -1e9), 1e9)))

    return ResizeParams(out_h=out[0], out_w=out[1], y0=src_lo[0], x0=src_lo[1],
                        y1=src_hi[0], x1=src_hi[1], in_h=in_h, in_w=in_w)


_new = object.__new__
# id of a size tuple -> (the tuple, its float32 values): a pipeline passes the same constant
# tuple with every sample (the tuple is kept, so its id is not reused while cached)
_sizes: dict = {}


def _float32_size(size):
    """``size`` as two positive finite float32 values (Python floats), or None (anything
    else: not a tuple or list of two ints or floats, or a value that is not positive and
    finite)."""
    got = _sizes.get(id(size))
    if got is not None and got[0] is size:
        return got[1]
    if size.__class__ not in (tuple, list) or len(size) != 2 or \
            any(v.__class__ not in (int, float) for v in size):
        return None
    req = (float(_f32(size[0])), float(_f32(size[1])))
    if not (req[0] > 0 and req[1] > 0 and math.isfinite(req[0]) and math.isfinite(req[1])):
        return None
    if size.__class__ is tuple:
        if len(_sizes) >= 64:
            _sizes.clear()
        _sizes[id(size)] = (size, req)
    return req


def crop_resize_params(in_hw, size, y0: int, x0: int, y1: int, x1: int) -> ResizeParams:
    """``resize_output_shape(in_hw, size=size, roi_start=(y0, x0), roi_end=(y1, x1))``, fast.

    The geometry of ``random_resized_crop`` (an integer window resized to ``size``), computed
    with the few float32 roundings that case needs; anything outside the common case (a
    window that is empty, flipped or past 2**24, a ``size`` that is not two positive numbers)
    goes to :func:`resize_output_shape`, so the result is always identical to it.

    Parameters
    ----------
    in_hw : tuple of 2 int
        Input extent ``(H, W)``.
    size : sequence of 2 float
        Output ``(H, W)``.
    y0, x0, y1, x1 : int
        The window, end-exclusive, in input pixels.

    Returns
    -------
    ResizeParams
    """
    req = _float32_size(size)
    if (req is not None and in_hw.__class__ is tuple and len(in_hw) == 2
            and y0.__class__ is int and x0.__class__ is int and y1.__class__ is int
            and x1.__class__ is int):
        in_h, in_w = in_hw
        if (in_h.__class__ is int and in_w.__class__ is int and in_h > 0 and in_w > 0
                and 0 <= y0 < y1 < 1 << 24 and 0 <= x0 < x1 < 1 << 24):
            src = [float(y0), float(y1), float(x0), float(x1)]
            out = [0, 0]
            for d in range(2):
                frac = req[d]
                out[d] = max(1, int(math.floor(frac + 0.5)))
                if out[d] != frac:      # subpixel_scale: keep the exact scale
                    lo, hi = src[2 * d], src[2 * d + 1]
                    adj = min(out[d] / frac, 10.0)
                    center = (lo + hi) * 0.5
                    src[2 * d] = float(_f32(min(max(center + (lo - center) * adj, -1e9), 1e9)))
                    src[2 * d + 1] = float(_f32(min(max(center + (hi - center) * adj, -1e9),
                                                    1e9)))
            # the dataclass's own __init__ sets its frozen fields one by one (~2 us)
            params = _new(ResizeParams)
            params.__dict__.update(out_h=out[0], out_w=out[1], y0=src[0], x0=src[2],
                                   y1=src[1], x1=src[3], in_h=in_h, in_w=in_w)
            return params
    return resize_output_shape(in_hw, size=size, roi_start=(y0, x0), roi_end=(y1, x1))


def resize_size_args(a: dict) -> dict:
    """The size arguments of a ``resize`` (:data:`SIZE_ARGS`, those given: not None) as
    :func:`resize_output_shape` takes them (a single ``size`` / ``max_size`` value applies to
    both axes there, as in DALI)."""
    return given(a, SIZE_ARGS)
