"""``experimental.median_blur``, ``experimental.dilate`` and ``experimental.erode`` on the CPU.

DALI 2.4 has these on the GPU only (CV-CUDA's ``MedianBlur`` and ``Morphology``); ndd follows
their documented rules, exact by construction (order statistics: no arithmetic):

* the 2-D images of a sample are its HW planes (HWC: channels interleaved; CHW and frames:
  one plane per leading index);
* sizes and anchors are CV-CUDA's ``(width, height)`` / ``(x, y)`` pairs (one value: both);
* ``median_blur``: the median of the ``width x height`` window (odd sizes), edges replicated
  (compare-exchange passes, vectorised across each row);
* ``dilate`` / ``erode``: the maximum / minimum over the ``mask_size`` rectangle placed with
  its ``anchor`` on the pixel (OpenCV's convention: ``in[y - ay + i, x - ax + j]``), repeated
  ``iterations`` times; ``border_mode="constant"`` pads with a value that never wins (the
  type's lowest for dilate, highest for erode), so the pad is invisible, as OpenCV's default.

Registers ``experimental.median_blur``, ``experimental.dilate`` and ``experimental.erode``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

from .filters_conv import border_index
from .jit import compiled

__all__ = ["median_blur", "morphology", "warm_up"]

_MEDIAN_TYPES = ("uint8", "uint16", "float32")
_MORPH_TYPES = ("uint8", "int8", "uint16", "int16", "int32", "float32")
_MORPH_BORDERS = {"constant": "constant", "replicate": "clamp", "reflect": "reflect_1001",
                  "reflect_101": "reflect_101", "wrap": "wrap"}
_MEDIAN_LAYOUTS = ("HWC", "FHWC", "CHW", "FCHW")
_MORPH_LAYOUTS = ("HW", "HWC", "FHWC", "CHW", "FCHW")


def _pair(value, default, name, sample):
    if value is None:
        return default
    vals = [int(v) for v in np.asarray(value).reshape(-1).tolist()]
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) != 2:
        raise ValueError(f"Argument {name} for sample {sample} is expected to have 1 or 2 "
                         f"elements, got: {len(vals)}.")
    return tuple(vals)


def _planes(x, layout, allowed, op):
    """``(P, H, W, C)`` view of a sample (and a function back to its shape)."""
    if layout not in allowed:
        raise ValueError(f"{op}: the input layout must be one of {', '.join(allowed)}, got "
                         f"{layout!r}")
    if layout.endswith("C"):
        planes = x.reshape((-1,) + x.shape[-3:])
    else:
        planes = x.reshape((-1,) + x.shape[-2:] + (1,))
    return planes


def _build_median(njit):
    @njit
    def median(pad, kh, kw, out):
        # pad (H + kh - 1, (W + kw - 1) * C), out (H, W * C): per output row, the kh * kw
        # window values of every pixel side by side, then bubble passes of compare-exchanges
        # (min / max, vectorised across the row) until the middle value is in place
        n_y, flat = out.shape
        chans = (pad.shape[1] - flat) // (kw - 1) if kw > 1 else 1
        n = kh * kw
        vals = np.empty((n, flat), pad.dtype)
        for y in range(n_y):
            for i in range(kh):
                prow = pad[y + i]
                for j in range(kw):
                    vals[i * kw + j, :] = prow[j * chans:j * chans + flat]
            for p in range(n // 2 + 1):
                for q in range(n - 1 - p):
                    lo_row = vals[q]
                    hi_row = vals[q + 1]
                    for f in range(flat):
                        a = lo_row[f]
                        b = hi_row[f]
                        lo_row[f] = min(a, b)
                        hi_row[f] = max(a, b)
            out[y, :] = vals[n // 2]
    return median


_median = compiled(_build_median)


def _median_cols(pad, kh, flat):
    """Median over ``kh`` rows of a one-column window (numpy; sorts each pixel's values)."""
    views = np.stack([pad[i:i + pad.shape[0] - kh + 1, :flat] for i in range(kh)])
    return np.sort(views, axis=0)[kh // 2]


def median_blur(x, layout="", *, window_size=None, sample=0):
    """Median blur of one sample (see the module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        uint8 or float32 with 1, 3 or 4 channels, or single-channel uint16; layout HWC, CHW,
        FHWC or FCHW.
    window_size : int or (width, height), optional
        Odd sizes; default ``(3, 3)``.

    Returns
    -------
    numpy.ndarray
        Same shape and type.

    Raises
    ------
    ValueError
        Unsupported type, channel count, layout or window size (DALI's words).
    """
    x = np.asarray(x)
    layout = layout or ""
    if str(x.dtype) not in _MEDIAN_TYPES:
        raise ValueError(f"Unsupported input type in MedianBlur operator: {x.dtype}. Supported "
                         f"types are: UINT8, UINT16 and FLOAT.")
    planes = _planes(x, layout, _MEDIAN_LAYOUTS, "experimental.median_blur")
    channels = x.shape[layout.index("C")]
    if channels not in (1, 3, 4):
        raise ValueError(f"MedianBlur operator supports the following number of channels: 1, "
                         f"3, 4. The provided input has {channels} channels.")
    if x.dtype == np.uint16 and channels != 1:
        raise ValueError(f"MedianBlur operator supports only single-channel images of type "
                         f"uint16. Provided image with {channels} channels.")
    kw, kh = _pair(window_size, (3, 3), "window_size", sample)
    if kw < 1 or kh < 1 or kw % 2 == 0 or kh % 2 == 0:
        raise ValueError(f"window_size must be odd and positive, got ({kw}, {kh}) for sample "
                         f"{sample}")
    out = np.empty_like(planes)
    h, w = planes.shape[1:3]
    if out.size:
        rows = border_index(h, -(kh // 2), h + kh // 2, "clamp")
        cols = border_index(w, -(kw // 2), w + kw // 2, "clamp")
        chans = planes.shape[3]
        for p in range(planes.shape[0]):
            pad = np.ascontiguousarray(planes[p][rows][:, cols]).reshape(len(rows), -1)
            res = out[p].reshape(h, w * chans)
            if kw == 1:                  # one column: the channel stride is not recoverable
                res[...] = _median_cols(pad, kh, w * chans)
            else:
                _median()(pad, kh, kw, res)
    return out.reshape(x.shape)


def _extreme(dtype, low: bool):
    if dtype.kind == "f":
        return dtype.type(-np.inf if low else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if low else info.max)


def _slide(a, k, offset, axis, border, neutral, pick):
    """``pick`` (np.maximum / np.minimum) over ``a[.., y - offset + t, ..]``, ``t < k``."""
    n = a.shape[axis]
    idx = border_index(n, -offset, n - offset + k - 1, border)
    if border == "constant":
        pad_shape = list(a.shape)
        pad_shape[axis] = len(idx)
        pad = np.full(pad_shape, neutral, a.dtype)
        inside = np.nonzero(idx >= 0)[0]
        sl = [slice(None)] * a.ndim
        sl[axis] = slice(int(inside[0]), int(inside[-1]) + 1) if len(inside) else slice(0, 0)
        pad[tuple(sl)] = np.take(a, idx[inside], axis=axis)
    else:
        pad = np.take(a, idx, axis=axis)
    out = None
    for t in range(k):
        sl = [slice(None)] * a.ndim
        sl[axis] = slice(t, t + n)
        part = pad[tuple(sl)]
        out = part.copy() if out is None else pick(out, part, out=out)
    return out


def morphology(x, layout="", *, dilate=True, mask_size=None, anchor=None, iterations=1,
               border_mode="constant", sample=0):
    """Dilation (``dilate``) or erosion of one sample (see the module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        uint8/int8/uint16/int16/int32/float32; layout HW, HWC, CHW, FHWC or FCHW.
    mask_size : int or (width, height), optional
        Default ``(3, 3)``.
    anchor : int or (x, y), optional
        ``-1``: the mask's center (``size // 2``).
    iterations : int
        At least 1.
    border_mode : str
        ``constant``, ``replicate``, ``reflect``, ``reflect_101`` or ``wrap``.

    Returns
    -------
    numpy.ndarray
        Same shape and type.

    Raises
    ------
    ValueError
        Unknown border mode (DALI's words), unsupported type or layout, bad sizes or anchor.
    """
    x = np.asarray(x)
    op = "experimental.dilate" if dilate else "experimental.erode"
    if border_mode not in _MORPH_BORDERS:
        raise ValueError(f"Unknown border mode: {border_mode}")
    if str(x.dtype) not in _MORPH_TYPES:
        raise ValueError(f"{op}: unsupported input type {x.dtype} (expected one of "
                         f"{', '.join(_MORPH_TYPES)})")
    planes = _planes(x, layout or "", _MORPH_LAYOUTS, op)
    mw, mh = _pair(mask_size, (3, 3), "mask_size", sample)
    if mw < 1 or mh < 1:
        raise ValueError(f"{op}: mask_size must be positive, got ({mw}, {mh}) for sample "
                         f"{sample}")
    ax, ay = _pair(anchor, (-1, -1), "anchor", sample)
    ax = mw // 2 if ax < 0 else ax
    ay = mh // 2 if ay < 0 else ay
    if ax >= mw or ay >= mh:
        raise ValueError(f"{op}: anchor ({ax}, {ay}) must lie within the mask ({mw}, {mh}) "
                         f"for sample {sample}")
    if int(iterations) < 1:
        raise ValueError(f"{op}: iterations must be at least 1, got {iterations}")
    border = _MORPH_BORDERS[border_mode]
    neutral = _extreme(x.dtype, low=dilate)
    pick = np.maximum if dilate else np.minimum
    out = planes
    if planes.size:
        for _ in range(int(iterations)):
            out = _slide(out, mw, ax, 2, border, neutral, pick)
            out = _slide(out, mh, ay, 1, border, neutral, pick)
    else:
        out = planes.copy()
    return np.ascontiguousarray(out).reshape(x.shape)


@register("experimental.median_blur", "cpu")
@per_sample
def median_blur_kernel(ctx, ins, a, i):
    """``experimental.median_blur`` of sample ``i``."""
    return median_blur(ins[0], ctx.in_metas[0].layout or "", window_size=a.get("window_size"),
                       sample=i)


def _morph_kernel(dilate):
    def kernel(ctx, ins, a, i):
        return morphology(ins[0], ctx.in_metas[0].layout or "", dilate=dilate,
                          mask_size=a.get("mask_size"), anchor=a.get("anchor"),
                          iterations=a.get("iterations") or 1,
                          border_mode=a.get("border_mode") or "constant", sample=i)
    kernel.__name__ = "dilate_kernel" if dilate else "erode_kernel"
    kernel.__doc__ = f"``experimental.{'dilate' if dilate else 'erode'}`` of sample ``i``."
    return kernel


register("experimental.dilate", "cpu")(per_sample(_morph_kernel(True)))
register("experimental.erode", "cpu")(per_sample(_morph_kernel(False)))


def warm_up() -> None:
    """Compile (or load) the median loop for uint8 and float32."""
    for dt in (np.uint8, np.float32):
        median_blur(np.zeros((4, 5, 3), dt), "HWC")
