"""``slice`` on the CPU: a window of n-dimensional data with DALI's out-of-bounds policies.

Semantics follow DALI 2.4 (compared in ``tests/ndd/test_oracle_ops_more.py``): the window is
:func:`runtime.kernels.params.nd_slice.slice_window`; outside the data, ``error`` raises,
``pad`` / ``constant`` fill with ``fill_values`` (one value, or one per channel of the layout's
C axis), ``edge`` / ``clamp`` repeat the border, ``reflect`` / ``reflect_1001`` mirror with the
border repeated, ``reflect_101`` without it, ``wrap`` tiles, ``trim_to_shape`` cuts the window
to the data. ``dtype`` converts with ``cast``. Registers ``slice``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.params.nd_slice import slice_window
from runtime.kernels.registry import per_sample, register

from .cast import cast
from .warp import fill_in_type

__all__ = ["slice_data"]

_PAD_MODES = {"edge": "edge", "clamp": "edge", "reflect": "symmetric",
              "reflect_1001": "symmetric", "reflect_101": "reflect", "wrap": "wrap"}


def _index_map(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Source indices of the positions ``lo..hi-1`` of an axis of extent ``n``."""
    idx = np.arange(lo, hi)
    if mode == "edge":
        return np.clip(idx, 0, n - 1)
    if mode == "wrap":
        return np.mod(idx, n)
    if mode == "symmetric":         # ... 1 0 | 0 1 ... n-1 | n-1 n-2 ...
        p = np.mod(idx, 2 * n)
        return np.where(p < n, p, 2 * n - 1 - p)
    period = 2 * n - 2              # reflect_101: ... 2 1 | 0 1 ... n-1 | n-2 ...
    if period <= 0:
        return np.zeros_like(idx)
    p = np.mod(idx, period)
    return np.where(p < n, p, period - p)


def slice_data(x, layout, a, anchor=None, shape_in=None, dtype=None):
    """The slice of one sample (see the module docstring).

    Raises
    ------
    ValueError
        A window outside the data with ``out_of_bounds_policy="error"``, or a bad window.
    """
    x = np.asarray(x)
    starts, ends = slice_window(x.shape, layout or "", a, anchor, shape_in)
    policy = a.get("out_of_bounds_policy", "error")
    out_dt = x.dtype if dtype is None else dtype
    outside = any(s < 0 or e > n for s, e, n in zip(starts, ends, x.shape))
    if policy == "trim_to_shape":
        starts = [min(max(s, 0), n) for s, n in zip(starts, x.shape)]
        ends = [min(max(e, 0), n) for e, n in zip(ends, x.shape)]
    elif outside and policy == "error":
        raise ValueError(f"the slice window (start {starts}, end {ends}) is out of the bounds of "
                         f"the input of shape {list(x.shape)}; use out_of_bounds_policy 'pad', "
                         f"'trim_to_shape', 'edge', 'reflect', 'reflect_101' or 'wrap'")
    if not outside or policy in ("trim_to_shape", "error"):
        return cast(x[tuple(slice(s, e) for s, e in zip(starts, ends))], out_dt)
    if policy in ("pad", "constant"):
        return cast(_padded(x, layout, starts, ends, a.get("fill_values") or (0.0,)), out_dt)
    mode = _PAD_MODES[policy]
    if any(n == 0 for n in x.shape):
        raise ValueError(f"out_of_bounds_policy {policy!r} needs non-empty data")
    idx = np.ix_(*[_index_map(n, s, e, mode) for n, s, e in zip(x.shape, starts, ends)])
    return cast(x[idx], out_dt)


def _padded(x, layout, starts, ends, fill_values):
    out_shape = [e - s for s, e in zip(starts, ends)]
    fills = [fill_in_type(v, x.dtype) for v in fill_values]
    out = np.empty(out_shape, dtype=x.dtype)
    c_axis = layout.index("C") if layout and "C" in layout else x.ndim - 1
    if len(fills) == 1:
        out[...] = fills[0]
    else:
        if x.ndim == 0 or out_shape[c_axis] != len(fills):
            raise ValueError(f"fill_values has {len(fills)} values, but the slice has "
                             f"{out_shape[c_axis] if x.ndim else 0} channels")
        shape = [1] * x.ndim
        shape[c_axis] = len(fills)
        out[...] = np.array(fills, dtype=x.dtype).reshape(shape)
    src, dst = [], []
    for s, e, n in zip(starts, ends, x.shape):
        lo, hi = max(s, 0), min(e, n)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - s, hi - s))
    out[tuple(dst)] = x[tuple(src)]
    return out


@register("slice", "cpu")
@per_sample
def slice_kernel(ctx, ins, a, i):
    """``slice`` of sample ``i`` (``anchor`` / ``shape`` inputs when given)."""
    anchor = np.asarray(ins[1]) if len(ins) > 1 else None
    shape_in = np.asarray(ins[2]) if len(ins) > 2 else None
    return slice_data(ins[0], ctx.in_metas[0].layout or "", a, anchor, shape_in,
                      dtype=ctx.out_metas[0].dtype)
