"""``gaussian_blur`` on the CPU: separable Gaussian convolution.

Semantics follow DALI 2.4 bit for bit (measured on its CPU operator):

* weights (:func:`gaussian_weights`): ``exp((i * i) * (-0.5 / sigma**2))`` with the argument in
  float32 and the exponential (the C library's, in double) rounded to float32; each multiplied
  by the float32 reciprocal of ``center + 2 * side``, ``side`` the float32 sum of one side's
  weights from the outermost inwards;
* one pass per data axis, innermost first (W, then H, then D), each accumulating
  ``w[0] * x[i - r] + w[1] * x[i - r + 1] + ...`` in float32 from the left, the borders
  mirrored without repeating the edge (reflect 101);
* the result converted to the output type with ``cast`` (round half away from zero, saturate);
* float16 inputs follow DALI's half arithmetic: each product rounded to float16 before the
  float32 sum, each pass's output stored as float16 (ties away from zero).

Registers ``gaussian_blur``.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.registry import per_sample, register

from .cast import cast, to_numpy_dtype
from .filters_conv import conv_axis, to_integer

__all__ = ["gaussian_weights", "gaussian_blur", "blur_params", "to_output"]

_F = np.float32


def gaussian_weights(sigma: float, window: int = 0) -> np.ndarray:
    """float32 weights of a ``window``-tap kernel (0: ``2 * ceil(3 * sigma) + 1``).

    Raises
    ------
    ValueError
        Both 0, a negative value or an even window.
    """
    if sigma < 0 or window < 0:
        raise ValueError(f"sigma and window_size must not be negative, got {sigma}, {window}")
    if window and window % 2 == 0:
        raise ValueError(f"window_size must be odd, got {window}")
    if not window:
        if sigma == 0:
            raise ValueError("sigma and window_size must not both be 0")
        window = 2 * math.ceil(3 * sigma) + 1
    r = (window - 1) // 2
    if sigma == 0:
        sigma = (r - 1) * 0.3 + 0.8
    s = _F(sigma)
    c = _F(-0.5) / (s * s)
    vals = [_F(math.exp(float(_F(_F(i * i) * c)))) for i in range(-r, r + 1)]
    side = _F(0)
    for v in reversed(vals[r + 1:]):       # one side, from the outermost tap inwards
        side = side + v
    inv = _F(1) / (vals[r] + _F(2) * side)
    return np.array([v * inv for v in vals], dtype=_F)


def _per_axis(values, n: int, name: str):
    values = tuple(values)
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise ValueError(f"argument '{name}' must give 1 or {n} values (one per data axis), got "
                         f"{len(values)}")
    return values


def blur_params(sigma, window, n_axes: int, frames: int | None):
    """Per frame (or once, for ``frames`` None) the per-axis ``(sigmas, windows)``."""
    def as_tuple(v, default):
        if v is None:
            return (default,)
        return tuple(np.asarray(v).reshape(-1).tolist())
    sig, win = as_tuple(sigma, 0.0), as_tuple(window, 0)
    count = max(len(sig), len(win))
    if frames is not None and count not in (1, n_axes) and count in (frames, frames * n_axes):
        per = count // frames
        sig = [sig[k * per:(k + 1) * per] if len(sig) > 1 else sig for k in range(frames)]
        win = [win[k * per:(k + 1) * per] if len(win) > 1 else win for k in range(frames)]
        return [(_per_axis(s, n_axes, "sigma"), _per_axis(w, n_axes, "window_size"))
                for s, w in zip(sig, win)]
    return (_per_axis(sig, n_axes, "sigma"), _per_axis(win, n_axes, "window_size"))


def gaussian_blur(x, layout="", *, sigma=None, window_size=None, dtype=None):
    """Blur one sample (see the module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        Any numeric type; data axes are those whose layout letter is not C or F (all axes
        without a layout).
    layout : str
    sigma, window_size : float / int or sequences
        One value, one per data axis (outermost first), or, for sequences, per frame.
    dtype : dtype-like or None

    Returns
    -------
    numpy.ndarray
        Same shape; ``dtype`` (default: the input's).
    """
    x = np.asarray(x)
    out_dt = x.dtype if dtype is None else dtype
    layout = layout or ""
    data_axes = [i for i in range(x.ndim) if not layout or layout[i] not in "CF"]
    frames_axis = layout.index("F") if "F" in layout else None
    channels_last = bool(layout) and layout[-1] == "C"
    half = x.dtype == np.float16                   # DALI's half arithmetic (conv_axis)
    if half:
        x = x.astype(_F)
    params = blur_params(sigma, window_size, len(data_axes),
                         None if frames_axis is None else x.shape[frames_axis])
    if isinstance(params, list):                   # per-frame arguments
        frames = [_blur(np.take(x, k, axis=frames_axis), [a - (a > frames_axis)
                                                          for a in data_axes], *params[k],
                        channels_last, half)
                  for k in range(x.shape[frames_axis])]
        return to_output(np.stack(frames, axis=frames_axis), out_dt)
    return to_output(_blur(x, data_axes, *params, channels_last, half), out_dt)


def _blur(x, data_axes, sigmas, windows, channels_last=False, half=False):
    out = x
    for ax, s, w in reversed(list(zip(data_axes, sigmas, windows))):   # innermost first
        wts = gaussian_weights(float(s), int(w))
        if len(wts) == 1 and wts[0] == 1:      # a 1-tap window: the identity
            out = out.astype(_F, copy=False)
            continue
        out = conv_axis(out, wts, ax, channels_last, half=half)
    return out.astype(_F, copy=False)


def to_output(acc, dtype):
    """The float32 sums ``acc`` as ``dtype`` (DALI's ``ConvertSat``: round half away from
    zero, saturate); ``acc`` itself when ``dtype`` is float32."""
    dt = np.dtype(to_numpy_dtype(dtype))
    if dt == _F:
        return acc
    if dt.kind in "iu" and dt.itemsize <= 4:
        return to_integer(acc, dt)
    return cast(acc, dt)


@register("gaussian_blur", "cpu")
@per_sample
def gaussian_blur_kernel(ctx, ins, a, i):
    """``gaussian_blur`` of sample ``i``."""
    return gaussian_blur(ins[0], ctx.in_metas[0].layout or "", sigma=a.get("sigma"),
                         window_size=a.get("window_size"), dtype=ctx.out_metas[0].dtype)
