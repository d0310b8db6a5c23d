"""CPU kernel of ``tensor_resize`` (DALI 2.4): resampling of any axes of a sample.

The geometry (output extents, source windows) comes from
:mod:`runtime.kernels.params.tensor_resize`; the filters are ``resize``'s (DALI's resampling
filters, :mod:`.resize_taps`): ``min_filter`` on an axis whose output is shorter than its
window, ``mag_filter`` otherwise, ``interp_type`` setting both.  Two adjacent resized axes that
form an image (HW, the HW of HWC, or the HW of CHW) go through :func:`.resize.resample` (its
fast paths included); any other set -- up to 3 adjacent axes, as in DALI -- is resampled one
axis after the other, each pass a compiled sum of ``K`` weighted source lines in float32, taps
in order (the axes that shrink most first).  Integer outputs round half away from zero and saturate.

Input types: uint8, int16, uint16, float32 (DALI's); output: the input type or float32.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.cpu.cast import cast
from runtime.kernels.params.interp import interp_name
from runtime.kernels.params.layouts import meta_layout
from runtime.kernels.params.resize_geometry import ResizeParams
from runtime.kernels.params.tensor_resize import resized_axes, tensor_resize_geometry
from runtime.kernels.registry import per_sample, register

from .jit import compiled
from .resize import resample
from .resize_taps import axis_taps

__all__ = ["tensor_resize", "resample_axis", "IN_DTYPES", "warm_up"]

IN_DTYPES = ("uint8", "int16", "uint16", "float32")
_f32 = np.float32


def _kind(out_len, start, end, kind_min, kind_mag):
    win = abs(float(_f32(_f32(end) - _f32(start))))
    return kind_min if out_len < win else kind_mag


def _build_axis_pass(njit):
    @njit
    def axis_pass(x3, idx, w, out):
        # out[p, i, :] = sum_k w[i, k] * x3[p, idx[i, k], :] in float32, k in order
        npre = x3.shape[0]
        nout, ntaps = idx.shape
        if x3.shape[2] == 1:        # the last axis: one scalar sum per output (same order)
            for p in range(npre):
                row = x3[p, :, 0]
                dst = out[p, :, 0]
                for i in range(nout):
                    acc = np.float32(0.0)
                    for k in range(ntaps):
                        acc += w[i, k] * row[idx[i, k]]
                    dst[i] = acc
            return out
        for p in range(npre):
            for i in range(nout):
                o = out[p, i]
                o[:] = 0.0
                for k in range(ntaps):
                    src = x3[p, idx[i, k]]
                    wk = w[i, k]
                    for t in range(o.size):
                        o[t] += wk * src[t]
        return out
    return axis_pass


_axis_pass = compiled(_build_axis_pass)


def resample_axis(x: np.ndarray, axis: int, out_len: int, start: float, end: float, kind: str,
                  antialias: bool, accumulate: bool) -> np.ndarray:
    """Resample float32 ``x`` along ``axis`` onto ``out_len`` points of the window
    ``[start, end)``: ``y[.., i, ..] = sum_k w[i, k] * x[.., idx[i, k], ..]`` in float32, the
    taps added in order (a compiled loop over contiguous runs of the axes after ``axis``)."""
    pre = math.prod(x.shape[:axis])
    post = math.prod(x.shape[axis + 1:])
    x3 = np.ascontiguousarray(x, np.float32).reshape(pre, x.shape[axis], post)
    idx, w = axis_taps(x.shape[axis], out_len, start, end, kind, antialias, accumulate)
    out = np.empty((pre, out_len, post), np.float32)
    _axis_pass()(x3, np.ascontiguousarray(idx, np.int64), np.ascontiguousarray(w, np.float32),
                 out)
    return out.reshape(x.shape[:axis] + (out_len,) + x.shape[axis + 1:])


def tensor_resize(x: np.ndarray, windows, *, interp_type="linear", min_filter=None,
                  mag_filter=None, antialias=True, dtype=None) -> np.ndarray:
    """Resample one sample onto ``windows`` (one ``(out_len, start, end)`` per axis).

    Raises
    ------
    TypeError
        An input type other than uint8, int16, uint16, float32.
    ValueError
        An output type other than the input's or float32; more than 3 adjacent axes resized.
    """
    if x.dtype.name not in IN_DTYPES:
        raise TypeError(f"Unsupported type: {x.dtype.name}. Supported types are: uint8, int16, "
                        f"uint16 and float")
    out_dt = np.dtype(dtype) if dtype is not None else x.dtype
    if out_dt != x.dtype and out_dt != np.float32:
        raise ValueError(f"Resize must output original type or float. Got: {out_dt.name}")
    kind = interp_name("interp_type", interp_type) or "linear"
    kmin = interp_name("min_filter", min_filter) or kind
    kmag = interp_name("mag_filter", mag_filter) or kind
    changed = [d for d, w in enumerate(windows)
               if (w[0], float(w[1]), float(w[2])) != (x.shape[d], 0.0, float(x.shape[d]))]
    if changed and changed[-1] - changed[0] >= 3:
        raise ValueError("TensorResize can not resize more than 3 consecutive spatial "
                         "dimensions; the resized axes here are " + str(changed))
    if not changed:
        return x.astype(out_dt, copy=True)
    if any(w[0] == 0 for w in windows) or x.size == 0:
        return np.zeros(tuple(w[0] for w in windows), out_dt)
    layout = _image_layout(x.ndim, changed)
    if layout is not None:
        h = layout.index("H")
        wy, wx = windows[h], windows[h + 1]
        params = ResizeParams(out_h=wy[0], out_w=wx[0], y0=wy[1], x0=wx[1], y1=wy[2], x1=wx[2],
                              in_h=x.shape[h], in_w=x.shape[h + 1])
        return resample(np.ascontiguousarray(x), params, interp_type=kind, antialias=antialias,
                        dtype=out_dt, min_filter=kmin, mag_filter=kmag, layout=layout)
    y = x.astype(np.float32)
    last = changed[-1]
    order = sorted(changed, key=lambda d: windows[d][0] / max(x.shape[d], 1))
    for d in order:
        n, a, b = windows[d]
        y = resample_axis(y, d, n, a, b, _kind(n, a, b, kmin, kmag), bool(antialias),
                          d != last)
    return y if out_dt == np.float32 else cast(y, out_dt)


def _image_layout(ndim, changed):
    """``HWC`` / ``HW`` / ``CHW`` when the resized axes are the H and W of an image."""
    if len(changed) > 2 or changed[-1] - changed[0] > 1:
        return None
    first = changed[0] if changed[0] + 1 < ndim else changed[0] - 1
    if ndim == 2:
        return "HW"
    if ndim == 3 and first == 0:
        return "HWC"
    if ndim == 3 and first == 1:
        return "CHW"
    return None


@register("tensor_resize", "cpu")
@per_sample
def tensor_resize_kernel(ctx, ins, a, i):
    """``tensor_resize`` of sample ``i``."""
    x = np.asarray(ins[0])
    axes = resized_axes(x.ndim, meta_layout(ctx.in_metas[0]), a.get("axes"),
                        a.get("axis_names"))
    windows = tensor_resize_geometry(
        x.shape, axes, sizes=a.get("sizes"), scales=a.get("scales"),
        mode=a.get("mode") or "default", max_size=a.get("max_size"),
        roi_start=a.get("roi_start"), roi_end=a.get("roi_end"),
        roi_relative=bool(a.get("roi_relative")), subpixel_scale=a.get("subpixel_scale", True),
        alignment=0.5 if a.get("alignment") is None else a["alignment"],
        size_rounding=a.get("size_rounding") or "round")
    return tensor_resize(x, windows, interp_type=a.get("interp_type") or "linear",
                         min_filter=a.get("min_filter"), mag_filter=a.get("mag_filter"),
                         antialias=a.get("antialias", True), dtype=ctx.out_metas[0].dtype)


def warm_up() -> None:
    """Compile (or load from numba's cache) the axis pass."""
    resample_axis(np.zeros((2, 3, 2), np.float32), 1, 2, 0.0, 3.0, "linear", True, False)
