"""Output extents and source windows of DALI's ``tensor_resize`` (N-D, per sample).

``tensor_resize`` resizes any of a sample's axes.  The axes named by ``axes`` / ``axis_names``
(all by default) get ``sizes`` or ``scales`` (one value each, or one for all); every other axis
keeps its extent but still takes part in ``mode`` as an axis whose size is given and equals its
extent (DALI 2.4, observed: ``sizes=(20, 0)`` on the H, W of a 37x53x3 image gives W = 53 *
sqrt(20/37 * 1) = 39; ``mode="not_larger"`` scales the channels too).  The rule that fills in
missing extents and applies ``mode`` / ``max_size`` is ``resize``'s
(:func:`runtime.kernels.params.resize_geometry.adjust_output_size`).  A fractional output
extent is rounded by ``size_rounding``; with ``subpixel_scale`` the source window is then
scaled about the point ``(1 - alignment) * start + alignment * end`` so the scale factor is
kept.  Sizes, scales and windows are float32, as in DALI.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.params.resize_geometry import RESIZE_MODES, adjust_output_size

__all__ = ["AxisWindow", "tensor_resize_geometry", "resized_axes", "ROUNDINGS"]

ROUNDINGS = ("round", "truncate", "ceil")
_f32 = np.float32
_MIN_ROI_EXTENT = 1e-3


class AxisWindow(tuple):
    """``(out_len, start, end)`` of one axis: the output extent and the source window
    (``end < start`` flips)."""

    __slots__ = ()

    def __new__(cls, out_len, start, end):
        return super().__new__(cls, (int(out_len), float(start), float(end)))

    @property
    def out_len(self) -> int:
        return self[0]

    @property
    def start(self) -> float:
        return self[1]

    @property
    def end(self) -> float:
        return self[2]


def resized_axes(ndim: int, layout: str, axes=None, axis_names=None) -> list[int]:
    """The axes the size arguments refer to, in their order (all by default).

    Raises
    ------
    ValueError
        Both ``axes`` and ``axis_names``; an axis out of ``[-ndim, ndim)``; a name missing from
        the layout; repeated axes.
    """
    if axes is not None and axis_names is not None:
        raise ValueError("Arguments `axes` and `axis_names` are mutually exclusive")
    if axis_names is not None:
        missing = [c for c in axis_names if c not in (layout or "")]
        if missing:
            raise ValueError(f"axis_names {axis_names!r}: no axis {missing[0]!r} in the layout "
                             f"{layout!r}")
        out = [layout.index(c) for c in axis_names]
    elif axes is not None:
        axes = [axes] if isinstance(axes, int) else list(axes)
        for a in axes:
            if not -ndim <= a < ndim:
                raise ValueError(f"axis {a} is out of range for {ndim}-D samples (expected "
                                 f"[{-ndim}, {ndim - 1}])")
        out = [a % ndim for a in axes]
    else:
        out = list(range(ndim))
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axes in {out}")
    return out


def _per_axis(name, value, n):
    if value is None:
        return None
    v = [float(x) for x in np.asarray(value, np.float64).ravel().tolist()]
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError(f"Argument \"{name}\" expects either a single value or a list of {n} "
                         f"elements. {len(v)} given.")
    return v


def _rounded(x: float, how: str) -> int:
    if how == "truncate":
        return int(math.floor(x))
    if how == "ceil":
        return int(math.ceil(x))
    return int(math.floor(x + 0.5))         # non-negative: half away from zero


def tensor_resize_geometry(in_shape, axes, *, sizes=None, scales=None, mode="default",
                           max_size=None, roi_start=None, roi_end=None, roi_relative=False,
                           subpixel_scale=True, alignment=0.5,
                           size_rounding="round") -> list[AxisWindow]:
    """One :class:`AxisWindow` per dimension of a sample of ``in_shape``.

    Parameters
    ----------
    in_shape : tuple of int
    axes : list of int
        The axes ``sizes`` / ``scales`` / ``max_size`` / ``roi_*`` / ``alignment`` refer to
        (:func:`resized_axes`).
    sizes, scales : float or sequence, optional
        Exactly one of them: output extents (0: derived by ``mode``; negative flips) or scale
        factors (``out = size_rounding(scale * extent)``).
    mode : {"default", "stretch", "not_larger", "not_smaller"}
        As ``resize``'s; ``not_*`` cannot be combined with ``scales``.
    max_size, roi_start, roi_end, roi_relative, subpixel_scale, alignment, size_rounding
        DALI's arguments of the same names (see the module docstring).

    Raises
    ------
    ValueError
        Both or neither of ``sizes`` / ``scales``; lists of the wrong length; an unknown mode or
        rounding; ``scales`` with a ``not_*`` mode; only one of ``roi_start`` / ``roi_end``; a
        non-empty output from an empty extent.
    """
    nd = len(in_shape)
    n = len(axes)
    if (sizes is None) == (scales is None):
        raise ValueError("Need one of ``scales`` or ``sizes``, but not both")
    if mode not in RESIZE_MODES:
        raise ValueError(f"`mode` must be one of {RESIZE_MODES}, got {mode!r}")
    if size_rounding not in ROUNDINGS:
        raise ValueError(f"`size_rounding` must be one of {ROUNDINGS}, got {size_rounding!r}")
    if scales is not None and mode in ("not_larger", "not_smaller"):
        raise ValueError("Providing ``scales`` is incompatible with not-smaller or not-larger "
                         "modes")
    if (roi_start is None) != (roi_end is None):
        raise ValueError("`roi_start` and `roi_end` must be given together")
    sizes, scales, max_size, roi_start, roi_end, alignment = (
        _per_axis(k, v, n) for k, v in (("sizes", sizes), ("scales", scales),
                                        ("max_size", max_size), ("roi_start", roi_start),
                                        ("roi_end", roi_end), ("alignment", alignment)))
    lo = [_f32(0.0)] * nd
    hi = [_f32(e) for e in in_shape]
    align = [0.5] * nd
    limits = [0.0] * nd
    for k, d in enumerate(axes):
        align[d] = float(_f32(alignment[k]))
        if max_size is not None:
            limits[d] = float(_f32(max_size[k]))
        if roi_start is not None and in_shape[d] > 0:
            a, b = float(_f32(roi_start[k])), float(_f32(roi_end[k]))
            if roi_relative:
                a, b = a * in_shape[d], b * in_shape[d]
            if abs(b - a) < _MIN_ROI_EXTENT:
                off = float(_f32(0.5 * _MIN_ROI_EXTENT if a <= b else -0.5 * _MIN_ROI_EXTENT))
                a, b = a - off, b + off
            lo[d], hi[d] = _f32(a), _f32(b)
    win = [_f32(0.0)] * nd
    flip = [False] * nd
    for d in range(nd):
        w = _f32(hi[d] - lo[d])
        if w < 0:
            lo[d], hi[d], w, flip[d] = hi[d], lo[d], _f32(-w), True
        win[d] = w
    requested = [win[d] for d in range(nd)]         # axes not named keep their extent
    for k, d in enumerate(axes):
        requested[d] = _f32(scales[k] * float(win[d])) if scales is not None \
            else _f32(sizes[k])
    if scales is None:
        adjust_output_size(requested, win, mode, limits if max_size is not None else None)
    out = []
    for d in range(nd):
        req = float(requested[d])
        if flip[d]:
            req = -req
        frac = abs(req)
        if lo[d] == hi[d] and frac != 0 and in_shape[d] == 0:
            raise ValueError(f"cannot produce a non-empty output from an empty extent along "
                             f"axis {d}")
        size = _rounded(frac, size_rounding)
        size = max(size, 0 if in_shape[d] == 0 else 1)
        s_lo, s_hi = float(lo[d]), float(hi[d])
        if req < 0:
            s_lo, s_hi = s_hi, s_lo
        if subpixel_scale and size != frac:
            adj = min(size / frac, 10.0) if frac else 10.0
            center = (1.0 - align[d]) * s_lo + align[d] * s_hi
            s_lo = float(_f32(min(max(center + (s_lo - center) * adj, -1e9), 1e9)))
            s_hi = float(_f32(min(max(center + (s_hi - center) * adj, -1e9), 1e9)))
        out.append(AxisWindow(size, s_lo, s_hi))
    return out
