"""Slice windows of ``decoders.image_slice`` (DALI's ``anchor`` / ``shape`` inputs and the
``start`` / ``rel_start`` / ``end`` / ``rel_end`` / ``shape`` / ``rel_shape`` arguments).

A slice names its axes (``axis_names``, default ``"WH"``, or ``axes``); coordinates are
fractions of the image or pixels, rounded half up to whole pixels.  Pure Python on scalars.
"""
from __future__ import annotations

import numpy as np

from .windows import window_roi

__all__ = ["slice_roi", "check_slice_args"]


def slice_roi(in_hw, a: dict, anchor=None, shape=None) -> tuple[int, int, int, int]:
    """The box ``(y0, x0, y1, x1)`` (end-exclusive) a slice selects in an ``in_hw`` image.

    Parameters
    ----------
    in_hw : tuple of int
        ``(H, W)`` of the (oriented) image.
    a : dict
        The sample's arguments: ``axis_names`` / ``axes``, ``normalized_anchor``,
        ``normalized_shape``, ``start``, ``rel_start``, ``end``, ``rel_end``, ``shape``,
        ``rel_shape`` (those not given are absent or None).
    anchor, shape : sequence of numbers, optional
        The sample's ``anchor`` / ``shape`` inputs; integer ones are always absolute (DALI).

    Raises
    ------
    ValueError
        A window given twice or not at all (:func:`check_slice_args`), a coordinate count
        that differs from the axis names, an axis other than H and W, or a box outside the
        image.
    """
    H, W = in_hw
    names = a.get("axis_names") or "WH"
    axes = a.get("axes")
    if axes is not None:
        names = "".join("HW"[ax] if ax in (0, 1) else "?" for ax in axes)
    extent = {"H": H, "W": W}
    start = {"H": 0.0, "W": 0.0}
    size = {"H": float(H), "W": float(W)}

    def put(vals, target, rel):
        vals = (vals,) if np.isscalar(vals) else tuple(vals)
        if len(vals) != len(names):
            raise ValueError(f"expected {len(names)} coordinates for axis_names {names!r}, got "
                             f"{len(vals)}")
        for ax, v in zip(names, vals):
            if ax not in extent:
                raise ValueError(f"axis_names {names!r}: only H and W can be sliced")
            target[ax] = float(v) * (extent[ax] if rel else 1.0)
    check_slice_args(a, anchor, shape)
    if anchor is not None:      # DALI: integer anchor/shape inputs are always absolute
        put(anchor, start, a.get("normalized_anchor", True) and not _integral(anchor))
    if shape is not None:
        put(shape, size, a.get("normalized_shape", True) and not _integral(shape))
    if a.get("shape") is not None:
        put(a["shape"], size, False)
    if a.get("rel_start") is not None:
        put(a["rel_start"], start, True)
    if a.get("start") is not None:
        put(a["start"], start, False)
    if a.get("rel_shape") is not None:
        put(a["rel_shape"], size, True)
    end = {}
    if a.get("rel_end") is not None:
        put(a["rel_end"], end, True)
    if a.get("end") is not None:
        put(a["end"], end, False)
    for ax in end:
        size[ax] = end[ax] - start[ax]
    if shape is None and not any(a.get(k) is not None for k in ("shape", "rel_shape", "end",
                                                                  "rel_end")):
        for ax in names:        # a start without an extent: to the end of the image (DALI)
            size[ax] = extent[ax] - start[ax]
    y0 = int(np.floor(start["H"] + 0.5))
    x0 = int(np.floor(start["W"] + 0.5))
    y1 = int(np.floor(start["H"] + size["H"] + 0.5))
    x1 = int(np.floor(start["W"] + size["W"] + 0.5))
    return window_roi((y0, x0, y1 - y0, x1 - x0), in_hw, "slice window")


def _integral(values) -> bool:
    return np.asarray(values).dtype.kind in "iub"


def check_slice_args(a: dict, anchor, shape) -> None:
    """DALI's rules for the slice window: at most one way to give the start (``anchor`` input,
    ``start``, ``rel_start``) and one to give the extent (``shape`` input, ``shape``,
    ``rel_shape``, ``end``, ``rel_end``), and some window at all.

    Raises
    ------
    ValueError
        When a rule is broken.
    """
    starts = [n for n, v in (("the anchor input", anchor), ("start", a.get("start")),
                             ("rel_start", a.get("rel_start"))) if v is not None]
    extents = [n for n, v in (("the shape input", shape), ("shape", a.get("shape")),
                              ("rel_shape", a.get("rel_shape")), ("end", a.get("end")),
                              ("rel_end", a.get("rel_end"))) if v is not None]
    for group, what in ((starts, "start"), (extents, "extent")):
        if len(group) > 1:
            raise ValueError(f"the slice {what} is given twice ({' and '.join(group)}); give "
                             f"one of them")
    if not starts and not extents:
        raise ValueError("no slice window: give the anchor and shape inputs, or start/rel_start "
                         "with end/rel_end/shape/rel_shape")
