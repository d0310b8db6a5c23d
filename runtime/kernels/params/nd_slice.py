"""The window of ``slice`` in n-dimensional data (DALI's ``anchor`` / ``shape`` inputs and the
``start`` / ``rel_start`` / ``end`` / ``rel_end`` / ``shape`` / ``rel_shape`` arguments).

The coordinates name their axes by ``axis_names`` (layout letters) or ``axes`` (indices,
negative from the back); by default ``"WH"`` when the data has a layout, axes ``[1, 0]``
otherwise (DALI). Fractions are of the axis extent; every start and end is rounded half up to a
whole index (``end = round(start + extent)``). Pure Python on scalars.
"""
from __future__ import annotations

import math

import numpy as np

from .slices import check_slice_args

__all__ = ["slice_axes", "slice_window"]


def slice_axes(a: dict, layout: str, ndim: int) -> list[int]:
    """The axis each coordinate of the window refers to.

    Raises
    ------
    ValueError
        An axis name missing from the layout, or an axis index out of range.
    """
    names = a.get("axis_names")
    axes = a.get("axes")
    if names or axes is None:
        if not names and not layout:
            axes = (1, 0)
        else:
            names = names or "WH"
            missing = [c for c in names if c not in (layout or "")]
            if missing:
                raise ValueError(f"axis_names {names!r}: the layout {layout!r} has no "
                                 f"{', '.join(map(repr, missing))}")
            return [layout.index(c) for c in names]
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ValueError(f"argument 'axes': axis {ax} is out of range for {ndim}-D data "
                             f"(valid: [{-ndim}, {ndim - 1}])")
        out.append(ax % ndim)
    return out


def _round(v: float) -> int:
    return int(math.floor(v + 0.5))


def _integral(values) -> bool:
    return np.asarray(values).dtype.kind in "iub"


def slice_window(shape, layout: str, a: dict, anchor=None, shape_in=None):
    """``(starts, ends)``, one per axis of data of ``shape`` (end-exclusive; axes not sliced
    are whole). Starts may be negative and ends beyond the extent: the out-of-bounds policy is
    applied later.

    Raises
    ------
    ValueError
        A window given twice or not at all, or a coordinate count that differs from the axes.
    """
    check_slice_args(a, anchor, shape_in)
    axes = slice_axes(a, layout, len(shape))
    start = {ax: 0.0 for ax in axes}
    size = {ax: float(shape[ax]) for ax in axes}

    def put(vals, target, rel, what):
        vals = (vals,) if np.isscalar(vals) else tuple(np.asarray(vals).reshape(-1).tolist())
        if len(vals) != len(axes):
            raise ValueError(f"{what}: expected {len(axes)} coordinates (one per sliced axis "
                             f"{axes}), got {len(vals)}")
        for ax, v in zip(axes, vals):
            target[ax] = float(v) * (shape[ax] if rel else 1.0)
    if anchor is not None:      # integer anchor/shape inputs are always absolute (DALI)
        put(anchor, start, a.get("normalized_anchor", True) and not _integral(anchor), "anchor")
    if shape_in is not None:
        put(shape_in, size, a.get("normalized_shape", True) and not _integral(shape_in),
            "shape input")
    for key, target, rel in (("start", start, False), ("rel_start", start, True),
                             ("shape", size, False), ("rel_shape", size, True)):
        if a.get(key) is not None:
            put(a[key], target, rel, f"argument '{key}'")
    end = {}
    for key, rel in (("end", False), ("rel_end", True)):
        if a.get(key) is not None:
            put(a[key], end, rel, f"argument '{key}'")
    for ax in end:
        size[ax] = end[ax] - start[ax]
    if shape_in is None and not any(a.get(k) is not None for k in ("shape", "rel_shape", "end",
                                                                     "rel_end")):
        for ax in axes:         # a start without an extent: to the end of the axis (DALI)
            size[ax] = shape[ax] - start[ax]
    starts = [0] * len(shape)
    ends = list(shape)
    for ax in axes:
        starts[ax] = _round(start[ax])
        ends[ax] = _round(start[ax] + size[ax])
        if ends[ax] < starts[ax]:
            raise ValueError(f"the slice window has a negative extent on axis {ax} "
                             f"(start {starts[ax]}, end {ends[ax]})")
    return starts, ends
