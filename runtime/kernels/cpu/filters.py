"""``laplacian`` and ``filter`` on the CPU, with DALI 2.4's CPU numerics.

``laplacian`` (DALI's ``LaplacianCpu``; measured bit-exact):

* windows (:func:`laplacian_windows`): smoothing of size ``m`` the binomial row ``(1 + 1) **
  (m - 1)``, derivative of size ``m`` that row of size ``m - 2`` differenced twice, each built
  by DALI's recursion in float32 (one addition or subtraction per entry and size);
* partial derivative ``i`` (outermost axis first) is a separable convolution over every data
  axis, innermost first, each pass summing in float32 (:func:`runtime.kernels.cpu.filters_conv.
  conv_axis`), the derivative window along axis ``i``, smoothing windows along the others
  (size-1 windows skipped: they are exact);
* the last pass of derivative ``i`` multiplies its sums by ``scale[i]`` (float32); the first
  derivative is written, the next ones added (``acc + sum * scale``), all in float32;
* the float32 result converted like DALI's ``ConvertSat`` (round half away from zero,
  saturate);
* float16 inputs follow DALI's half arithmetic: every product rounded to float16, every pass
  output and the running sum stored as float16 (ties away from zero);
* sequences take per-frame arguments (``ndd.per_frame``: ``F`` or ``F x axes`` values).

``filter`` (DALI's CPU operator calls OpenCV's ``filter2D``; measured bit-exact on its direct
path): each 2-D plane padded by the border mode, correlated with the float32 filter summing in
row-major filter order from 0 (zero weights skipped), integers rounded half to even and
saturated (OpenCV's ``saturate_cast``). OpenCV switches to a DFT for large filters (at least
50 taps for uint8 to float32, 130 for uint8 to uint8 and float32); ndd keeps the direct sum
there, within float32 rounding of DALI's result (docs/semantics.md).

Registers ``laplacian`` and ``filter``.
"""
from __future__ import annotations

import numpy as np

from runtime.buffers import batch_array
from runtime.kernels.registry import per_sample, register, sample_args

from .blur import to_output
from .cast import to_numpy_dtype
from .filters_conv import border_index, conv_axis
from .filters_corr import correlate2d

__all__ = ["laplacian_windows", "laplacian", "filter2d", "data_axes"]

_F = np.float32
MAX_WINDOW = 31
_LAPLACIAN_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
                    "float16", "float32")
_FILTER_TYPES = ("uint8", "int16", "uint16", "float32")
_DALI_TYPE_NAMES = {"float64": "double", "bool": "bool"}
_BORDERS = ("reflect_101", "reflect_1001", "wrap", "clamp", "constant")


def _shift_sum(v: np.ndarray, sign: int) -> np.ndarray:
    """One step of DALI's window recursion in float32: ``r[j] = v[j - 1] + sign * v[j]``
    (``v[-1] = v[len] = 0``), one entry longer than ``v``."""
    out = np.empty(len(v) + 1, _F)
    out[0] = sign * v[0]
    out[1:-1] = v[:-1] + _F(sign) * v[1:]
    out[-1] = v[-1]
    return out


def laplacian_windows(size: int):
    """``(smoothing, derivative)`` float32 windows of odd ``size`` (derivative: ``size >= 3``).

    Raises
    ------
    ValueError
        Even or non-positive ``size``.
    """
    if size < 1 or size % 2 == 0:
        raise ValueError(f"window size must be odd and positive, got {size}")
    smooth = [np.ones(1, _F)]
    for _ in range(1, size):
        smooth.append(_shift_sum(smooth[-1], 1))
    deriv = None
    if size >= 3:
        deriv = _shift_sum(_shift_sum(smooth[size - 3], -1), -1)
    return smooth[size - 1], deriv


def data_axes(layout: str, ndim: int, op: str = "laplacian"):
    """``(data axes, channels last)`` of a sample; DALI's layout rule: channels first or last
    (after the frames)."""
    if not layout:
        return list(range(ndim)), False
    axes = [i for i, c in enumerate(layout) if c not in "CF"]
    if "C" in layout:
        c = layout.index("C")
        first = 1 if layout[0] == "F" else 0
        if c not in (first, len(layout) - 1):
            raise ValueError(f"Only channel-first or channel-last layouts are supported, got: "
                             f"{layout}.")
        return axes, c == len(layout) - 1 and len(axes) > 0
    return axes, False


def _per_axis(value, n: int, name: str, sample: int, default):
    if value is None:
        return [default] * n
    vals = np.asarray(value).reshape(-1).tolist()
    if len(vals) not in (1, n):
        raise ValueError(f"Argument {name} for sample {sample} is expected to have 1 or {n} "
                         f"elements, got: {len(vals)}.")
    return vals * n if len(vals) == 1 else vals


def _frame_values(layout, x, n, values):
    """Per frame, the arguments of a sequence given per frame (``F`` or ``F * n`` values, as
    ``ndd.per_frame`` passes them), or None when every argument applies to all frames."""
    if not layout.startswith("F") or x.shape[0] == 0:
        return None
    frames = x.shape[0]
    split = {}
    for name, v in values.items():
        if v is None:
            continue
        flat = np.asarray(v).reshape(-1)
        if len(flat) in (1, n) or len(flat) not in (frames, frames * n):
            continue
        split[name] = flat.reshape(frames, -1)
    if not split:
        return None
    return [{k: (split[k][f] if k in split else v) for k, v in values.items()}
            for f in range(frames)]


def laplacian(x, layout="", *, window_size=None, smoothing_size=None, scale=None,
              normalized_kernel=False, dtype=None, sample=0):
    """Laplacian of one sample (see the module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        uint8/int8/uint16/int16/uint32/int32/uint64/int64/float16/float32; data axes: all but
        C and F (all axes without a layout), 1 to 3 of them.
    layout : str
    window_size, smoothing_size : int or sequence, optional
        One value or one per data axis (outermost first).
    scale : float or sequence, optional
    normalized_kernel : bool
    dtype : dtype-like or None
        The input type (default) or float32.
    sample : int
        The sample's index (for messages).

    Returns
    -------
    numpy.ndarray
        The input's shape, ``dtype``.

    Raises
    ------
    ValueError
        DALI's errors: unsupported type, layout, window sizes, scale with
        ``normalized_kernel``, output type.
    """
    x = np.asarray(x)
    name = str(x.dtype)
    if name not in _LAPLACIAN_TYPES:
        raise ValueError(f"Unsupported data type: {_DALI_TYPE_NAMES.get(name, name)}")
    out_dt = x.dtype if dtype is None else np.dtype(to_numpy_dtype(dtype))
    if out_dt not in (x.dtype, np.dtype(_F)):
        raise ValueError("Output data type must be same as input, FLOAT or skipped (defaults "
                         "to input type)")
    axes, channels_last = data_axes(layout or "", x.ndim)
    n = len(axes)
    per_frame = _frame_values(layout or "", x, n, dict(window_size=window_size,
                                                        smoothing_size=smoothing_size,
                                                        scale=scale))
    if per_frame is not None:                          # ndd.per_frame arguments
        return np.stack([laplacian(x[f], layout[1:], normalized_kernel=normalized_kernel,
                                   dtype=dtype, sample=sample, **per_frame[f])
                         for f in range(x.shape[0])])
    if not 1 <= n <= 3:
        raise ValueError(f"laplacian supports 1 to 3 data axes (layout {layout!r}, shape "
                         f"{x.shape}), got {n}")
    deriv = [int(v) for v in _per_axis(window_size, n, "window_size", sample, 3)]
    for d in deriv:
        if not (3 <= d <= MAX_WINDOW and d % 2 == 1):
            raise ValueError(f"Window size must be an odd integer between 3 and {MAX_WINDOW}, "
                             f"got {d} for sample: {sample}.")
    if smoothing_size is None:
        sizes = [[deriv[i]] * n for i in range(n)]
    else:
        smooth = [int(v) for v in _per_axis(smoothing_size, n, "smoothing_size", sample, 1)]
        for s in smooth:
            if not (1 <= s <= MAX_WINDOW and s % 2 == 1):
                raise ValueError(f"Smoothing window size must be an odd integer between 1 and "
                                 f"{MAX_WINDOW}, got {s} for sample: {sample}.")
        sizes = [[deriv[i] if i == j else smooth[j] for j in range(n)] for i in range(n)]
    if normalized_kernel:
        if scale is not None:
            raise ValueError("Parameter ``scale`` cannot be specified when "
                             "``normalized_kernel`` is set to True")
        scales = [_F(2.0 ** (n + 2 - sum(row))) for row in sizes]
    else:
        scales = [_F(v) for v in _per_axis(scale, n, "scale", sample, 1.0)]
    half = x.dtype == np.float16               # DALI's float16 arithmetic (conv_axis)
    if half:
        x = x.astype(_F)
    acc = np.empty(x.shape, _F)
    for i in range(n):                                  # one partial derivative per axis
        passes = [(j, sizes[i][j]) for j in reversed(range(n))
                  if j == i or sizes[i][j] != 1]        # innermost first; [1] is the identity
        cur = x
        for p, (j, size) in enumerate(passes):
            smooth_w, deriv_w = laplacian_windows(size)
            w = deriv_w if j == i else smooth_w
            if p < len(passes) - 1:
                cur = conv_axis(cur, w, axes[j], channels_last, half=half)
            else:
                conv_axis(cur, w, axes[j], channels_last, scale=scales[i], out=acc,
                          accumulate=i > 0, half=half)
    return to_output(acc, out_dt)


def filter2d(x, filt, layout="", *, fill_value=None, anchor=None, border="reflect_101",
             mode="same", dtype=None, sample=0, per_frame_filter=False,
             per_frame_fill=False, out=None):
    """``filter`` of one sample (see the module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        uint8, int16, uint16 or float32; layout HW, HWC, CHW, FHW, FHWC, FCHW (no layout: HW).
    filt : numpy.ndarray
        float32 ``(KH, KW)``.
    fill_value : scalar of the input type, optional
        The constant for ``border="constant"`` (default 0).
    anchor : int or pair, optional
        ``(ay, ax)``; -1: ``extent // 2``.
    border, mode : str
    dtype : dtype-like or None
        The input type (default) or float32.
    per_frame_filter, per_frame_fill : bool
        ``filt`` is ``(F, KH, KW)`` / ``fill_value`` has ``F`` values, one per frame of a
        sequence (``ndd.per_frame``).
    out : numpy.ndarray, optional
        C-contiguous array of the result's shape and dtype to write into (e.g. a view of a
        batch buffer); ignored when its shape or dtype is not the result's.

    Returns
    -------
    numpy.ndarray
        ``dtype``; the input's shape (``same``) or each spatial extent less
        ``filter_extent - 1`` (``valid``).

    Raises
    ------
    ValueError
        DALI's errors (types, layout, filter dimensionality, anchor, valid-mode size, border
        and mode names).
    """
    x = np.asarray(x)
    filt = np.asarray(filt)
    if border not in _BORDERS:
        raise ValueError(f"Unknown ``border_type`` was provided: ``{border}``.")
    if mode not in ("same", "valid"):
        raise ValueError(f"Unknown ``mode`` was provided: ``{mode}``. Supported modes are "
                         f"``same`` and ``valid``.")
    name = str(x.dtype)
    if name not in _FILTER_TYPES:
        raise ValueError(f"Filter CPU does not support input type "
                         f"{_DALI_TYPE_NAMES.get(name, name)}.")
    if filt.dtype != _F:
        fname = str(filt.dtype)
        raise ValueError(f"Unsupported filter type: {_DALI_TYPE_NAMES.get(fname, fname)}.")
    out_dt = x.dtype if dtype is None else np.dtype(to_numpy_dtype(dtype))
    if out_dt not in (x.dtype, np.dtype(_F)):
        raise ValueError("Output data type must be same as input, FLOAT or skipped (defaults "
                         "to input type)")
    layout = layout or ""
    if "F" in layout and layout.index("F") != 0:
        raise ValueError(f"When the input is video-like (i.e. contains frames), the frames must "
                         f"be an outermost dimension. However, got input with `{layout}` "
                         f"layout.")
    try:
        axes, channels_last = data_axes(layout, x.ndim, "filter")
    except ValueError:
        raise ValueError(f"Filter operator encountered input with unsupported layout: "
                         f"`{layout}`.") from None
    frames = x.shape[0] if layout.startswith("F") else None
    if (per_frame_filter or per_frame_fill) and frames is None:
        raise ValueError(f"per-frame filter or fill_value given for an input without frames "
                         f"(layout {layout!r})")
    if per_frame_filter:
        if filt.ndim == len(axes) + 1 and filt.shape[0] != frames:
            raise ValueError(f"per-frame filters: {filt.shape[0]} filters for {frames} frames "
                             f"in sample {sample}")
        frame_filters = list(filt) if filt.ndim == len(axes) + 1 else None
        filt = filt[0] if frame_filters else filt
    else:
        frame_filters = None
    if filt.ndim != len(axes):
        raise ValueError(f"Filter dimensionality must match the number of spatial dimensions in "
                         f"the input samples. Got {len(axes)} spatial dimensions but the filter "
                         f"is {filt.ndim} dimensional.")
    if len(axes) != 2:
        raise ValueError(f"Unsupported input data dimensionality. Got input with {len(axes)} "
                         f"spatial dimensions. CPU filter operator supports only 2-dimensional "
                         f"convolutions. If you are processing images with channels, please "
                         f"make sure to mark the layout accordingly (`HWC` or `CHW`).")
    kh, kw = filt.shape
    anc = [-1, -1] if anchor is None else [int(v) for v in np.asarray(anchor).reshape(-1)]
    if len(anc) == 1:
        anc = anc * 2
    if len(anc) != 2:
        raise ValueError(f"Argument anchor for sample {sample} is expected to have 1 or 2 "
                         f"elements, got: {len(anc)}.")
    for a, k in zip(anc, (kh, kw)):
        if not -1 <= a < k:
            raise ValueError(f"Anchor must lie within the filter. Got anchor {{{anc[0]}, "
                             f"{anc[1]}}} with a filter of shape {kh} x {kw} for sample of "
                             f"idx {sample}.")
    fills = None
    if fill_value is not None:
        fv = np.asarray(fill_value)
        if per_frame_fill and fv.size != 1:
            if fv.size != frames:
                raise ValueError(f"per-frame fill_value: {fv.size} values for {frames} frames "
                                 f"in sample {sample}")
            fills = [float(v) for v in fv.reshape(-1)]
        elif fv.ndim != 0 and fv.size != 1:
            raise ValueError(f"fill_value must be a scalar, got shape {fv.shape}")
        if fv.dtype != x.dtype:
            raise ValueError(f"fill_value must have the input's type {x.dtype}, got {fv.dtype}")
    h, w = x.shape[axes[0]], x.shape[axes[1]]
    if mode == "valid":
        oh, ow = h - kh + 1, w - kw + 1
        if oh <= 0 or ow <= 0:
            raise ValueError(f"Filter for sample of idx {sample} is bigger than the sample. This "
                             f"is not allowed if ``mode`` is set to ``valid``.")
        ay, ax = 0, 0
    else:
        oh, ow = h, w
        ay = kh // 2 if anc[0] < 0 else anc[0]
        ax = kw // 2 if anc[1] < 0 else anc[1]
    # planes: (P, H, W, C) with the frames / leading channels folded into P
    if channels_last:
        planes = x.reshape((-1, h, w, x.shape[-1]))
    else:
        planes = x.reshape((-1, h, w, 1))
    if mode == "valid":
        rows, cols = np.arange(h, dtype=np.int64), np.arange(w, dtype=np.int64)
    else:
        rows = border_index(h, -ay, h + kh - 1 - ay, border) if h else np.zeros(0, np.int64)
        cols = border_index(w, -ax, w + kw - 1 - ax, border) if w else np.zeros(0, np.int64)
    fill = 0.0 if fill_value is None else float(np.asarray(fill_value).reshape(-1)[0])
    shape = x.shape[:-3] + (oh, ow, x.shape[-1]) if channels_last else x.shape[:-2] + (oh, ow)
    if out is None or out.shape != shape or out.dtype != out_dt \
            or not out.flags.c_contiguous:
        out = np.empty(shape, out_dt)
    res = out.reshape((planes.shape[0], oh, ow, planes.shape[-1]))
    per = planes.shape[0] // frames if frames else 1       # planes per frame
    for p in range(planes.shape[0]):
        f = p // per if per else 0
        correlate2d(planes[p], frame_filters[f] if frame_filters else filt, rows, cols,
                    out_dt, fills[f] if fills else fill, 0 if mode == "valid" else ax,
                    out=res[p])
    return out


@register("laplacian", "cpu")
@per_sample
def laplacian_kernel(ctx, ins, a, i):
    """``laplacian`` of sample ``i``."""
    return laplacian(ins[0], ctx.in_metas[0].layout or "", window_size=a.get("window_size"),
                     smoothing_size=a.get("smoothing_size"), scale=a.get("scale"),
                     normalized_kernel=bool(a.get("normalized_kernel")),
                     dtype=ctx.out_metas[0].dtype, sample=i)


@register("filter", "cpu")
def filter_kernel(ctx, inputs, args):
    """``filter`` of every sample (inputs: data, filter, optional fill_value) on the pool;
    ``same``-mode results are views of one recycled batch buffer
    (:func:`runtime.buffers.batch_array`: warm pages, where a fresh array per sample faults
    every page in again)."""
    metas, n = ctx.in_metas, ctx.batch_size
    ins = [[inp[i] if len(inp) > 1 else inp[0] for inp in inputs] for i in range(n)]
    outs = [None] * n
    if (args.get("mode") or "same") == "same" and "mode" not in ctx.tensor_arg_names:
        xs = [np.asarray(s[0]) for s in ins]
        flat = batch_array((sum(x.size for x in xs),), np.dtype(ctx.out_metas[0].dtype))
        at = 0
        for i, x in enumerate(xs):
            outs[i] = flat[at:at + x.size].reshape(x.shape)
            at += x.size

    def one(i):
        a = sample_args(ctx, args, i)
        s = ins[i]
        return filter2d(s[0], s[1], metas[0].layout or "",
                        fill_value=s[2] if len(s) > 2 else None, anchor=a.get("anchor"),
                        border=a.get("border") or "reflect_101", mode=a.get("mode") or "same",
                        dtype=ctx.out_metas[0].dtype, sample=i,
                        per_frame_filter=(metas[1].layout or "").startswith("F"),
                        per_frame_fill=len(metas) > 2 and (metas[2].layout or "").startswith("F"),
                        out=outs[i])
    return [ctx.pool.map(one, n)]
