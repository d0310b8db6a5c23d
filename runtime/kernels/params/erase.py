"""The regions of ``erase`` (DALI 2.4's rules, measured on its CPU operator): per region, the
anchor and extent of each named axis, scaled by the axis' extent when normalized, the anchor
moved back by half the extent when centered, both ends floored and clipped to the sample.

Device-neutral: Python floats (IEEE double operations one at a time, the bits of numpy's
float64 arithmetic without its per-call cost); coordinates that are not finite take numpy's
floor and clip.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["erase_regions"]


def erase_regions(shape, anchor, extent, axes, *, normalized_anchor=False,
                  normalized_shape=False, centered_anchor=False):
    """The index windows of ``erase``'s regions in a sample of ``shape``.

    Parameters
    ----------
    shape : tuple of int
        The sample's shape.
    anchor, extent : sequence of float
        ``len(axes) * n`` coordinates, grouped per region in the order of ``axes``.
    axes : sequence of int
        The axes the coordinates refer to.
    normalized_anchor, normalized_shape, centered_anchor : bool
        As ``erase``'s arguments.

    Returns
    -------
    list of tuple of slice
        One full-rank index tuple per non-empty region (clipped to the sample).

    Raises
    ------
    ValueError
        ``anchor`` and ``shape`` of different lengths, or a length that is not a multiple of
        the number of axes.
    """
    a = np.asarray([] if anchor is None else anchor, np.float64).ravel()
    s = np.asarray([] if extent is None else extent, np.float64).ravel()
    if a.size != s.size:
        raise ValueError(f"`anchor` and `shape` must have the same number of values; "
                         f"got {a.size} and {s.size}")
    n = len(axes)
    if a.size % n:
        raise ValueError(f"`anchor` / `shape` must hold {n} values ({n} axes) per "
                         f"region; got {a.size} values")
    exts = [float(shape[ax]) for ax in axes]
    av, sv = a.tolist(), s.tolist()
    if not all(math.isfinite(v) for v in av + sv):
        return _regions_numpy(shape, a, s, axes, exts, normalized_anchor, normalized_shape,
                              centered_anchor)
    out = []
    for r in range(a.size // n):    # Python floats: float64 operations, one at a time
        idx = [slice(None)] * len(shape)
        for k, ax in enumerate(axes):
            e = exts[k]
            lo, sz = av[r * n + k], sv[r * n + k]
            if normalized_anchor:
                lo = lo * e
            if normalized_shape:
                sz = sz * e
            if centered_anchor:
                lo = lo - sz / 2
            hi = lo + sz
            lo = int(min(max(math.floor(lo), 0.0), e))
            hi = int(min(max(math.floor(hi), 0.0), e))
            if hi <= lo:
                break
            idx[ax] = slice(lo, hi)
        else:
            out.append(tuple(idx))
    return out


def _regions_numpy(shape, a, s, axes, exts, normalized_anchor, normalized_shape,
                   centered_anchor):
    """:func:`erase_regions` where a coordinate is not finite (numpy's floor and clip of
    infinities and NaN)."""
    n = len(axes)
    ext = np.array(exts, np.float64)
    a, s = a.reshape(-1, n), s.reshape(-1, n)
    if normalized_anchor:
        a = a * ext
    if normalized_shape:
        s = s * ext
    if centered_anchor:
        a = a - s / 2
    lo = np.clip(np.floor(a), 0, ext).astype(np.int64)
    hi = np.clip(np.floor(a + s), 0, ext).astype(np.int64)
    out = []
    for r in range(a.shape[0]):
        if np.any(hi[r] <= lo[r]):
            continue
        idx = [slice(None)] * len(shape)
        for k, ax in enumerate(axes):
            idx[ax] = slice(int(lo[r, k]), int(hi[r, k]))
        out.append(tuple(idx))
    return out
