"""Compiled separable-convolution loops of ``gaussian_blur`` and ``laplacian``, and the border
tables and integer rounding ``filter`` shares.

DALI 2.4's CPU convolutions accumulate in float32 with a fixed order, so the loops here do the
same, written once as numba kernels (``nogil``: pool threads run samples in parallel):

* :func:`conv_axis` -- a 1-D window along one axis of a sample seen as ``(outer, n, inner)``:
  ``acc = 0; acc += x[i - r + k] * w[k]`` for ``k = 0 .. K-1`` in float32, then
  ``acc * scale`` (DALI's ``ConvolutionCpu``: the last pass of a separable convolution carries
  the scale), written as float32 or, with ``accumulate``, added to the float32 output
  (``out + acc * scale``, DALI's "scale, add to the output" transform of ``laplacian``);
* :func:`to_integer` -- float32 sums to integers, rounded and saturated.

The 2-D correlation of ``filter`` is :mod:`.filters_corr`.

The per-element order is the same whatever the loop nesting (the window index is always the
outer loop of an element's sum), so the inner loops run over contiguous memory and vectorise
without changing a single result: no fast-math, no fused multiply-add (LLVM does not contract
``a * b + c`` unless told to), hence the same bits on every CPU.

Border handling is by index tables (:func:`border_index`): the kernels read row ``idx[p]`` for
padded position ``p``, so every border mode is one table.
"""
from __future__ import annotations

import numpy as np

from .cast import cast
from .jit import compiled

__all__ = ["border_index", "conv_axis", "to_integer", "warm_up"]

_F = np.float32


def border_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Source index of each position ``lo .. hi - 1`` of an axis of length ``n`` (``-1``:
    the constant fill).

    Parameters
    ----------
    n : int
        Axis length (> 0).
    lo, hi : int
        The positions, possibly outside ``[0, n)``.
    mode : str
        ``"reflect_101"`` (``dcb|abcd|cba``), ``"reflect_1001"`` (``cba|abcd|dcb``),
        ``"wrap"``, ``"clamp"`` or ``"constant"`` (DALI's ``filter`` spellings; morphology's
        ``"replicate"`` / ``"reflect"`` are ``"clamp"`` / ``"reflect_1001"``).

    Returns
    -------
    numpy.ndarray
        int64, ``hi - lo`` entries. Reflections repeat for windows larger than the axis.
    """
    i = np.arange(lo, hi, dtype=np.int64)
    if mode == "reflect_101":
        if n == 1:
            return np.zeros_like(i)
        p = 2 * n - 2
        i = np.mod(i, p)
        return np.where(i < n, i, p - i)
    if mode == "reflect_1001":
        i = np.mod(i, 2 * n)
        return np.where(i < n, i, 2 * n - 1 - i)
    if mode == "wrap":
        return np.mod(i, n)
    if mode == "clamp":
        return np.clip(i, 0, n - 1)
    if mode == "constant":
        return np.where((i >= 0) & (i < n), i, -1)
    raise ValueError(f"unknown border mode {mode!r}")


def _build_axis(njit):
    @njit
    def outer_axis(src, idx, w, scale, out, accumulate):
        # src (O, N, I), idx (N + K - 1,), out (O, N, I) float32; I is the contiguous run
        n_o, n, n_i = out.shape
        k_n = w.shape[0]
        acc = np.empty(n_i, np.float32)
        for o in range(n_o):
            for y in range(n):
                acc[:] = np.float32(0)
                for k in range(k_n):
                    seg = src[o, idx[y + k]]
                    wk = w[k]
                    for j in range(n_i):
                        acc[j] += np.float32(seg[j]) * wk
                orow = out[o, y]
                if accumulate:
                    for j in range(n_i):
                        orow[j] = orow[j] + acc[j] * scale
                else:
                    for j in range(n_i):
                        orow[j] = acc[j] * scale
    return outer_axis


def _build_inner(njit):
    @njit
    def inner_axis(src, chans, idx, w, scale, out, accumulate):
        # src (O, N * C), out (O, N * C) float32: the window runs along the pixels of each row
        n_o, flat = out.shape
        k_n = w.shape[0]
        n_pad = idx.shape[0]
        line = np.empty(n_pad * chans, np.float32)
        acc = np.empty(flat, np.float32)
        for o in range(n_o):
            srow = src[o]
            for p in range(n_pad):
                q = idx[p] * chans
                for c in range(chans):
                    line[p * chans + c] = np.float32(srow[q + c])
            acc[:] = np.float32(0)
            for k in range(k_n):
                wk = w[k]
                seg = line[k * chans:k * chans + flat]
                for f in range(flat):
                    acc[f] += seg[f] * wk
            orow = out[o]
            if accumulate:
                for f in range(flat):
                    orow[f] = orow[f] + acc[f] * scale
            else:
                for f in range(flat):
                    orow[f] = acc[f] * scale
    return inner_axis


def _build_round(njit):
    @njit
    def round_sat(acc, out, lo, hi, half_even):
        # acc float32 (flat), out integer (flat); lo/hi the output range as float64
        for f in range(acc.shape[0]):
            v = acc[f]
            if v != v:
                out[f] = 0
                continue
            d = min(max(np.float64(v), lo), hi)
            if half_even:
                r = np.rint(d)
            elif d >= 0:
                r = np.floor(d + 0.5)
            else:
                r = -np.floor(0.5 - d)
            out[f] = r
    return round_sat


_round = compiled(_build_round)
_outer = compiled(_build_axis)
_inner = compiled(_build_inner)


def _half(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to float16 (ties away from zero), as float32."""
    return cast(a, "float16").astype(_F)


def conv_axis(x: np.ndarray, w: np.ndarray, axis: int, channels_last: bool, *,
              border: str = "reflect_101", scale=1.0, out: np.ndarray | None = None,
              accumulate: bool = False, half: bool = False) -> np.ndarray:
    """Correlate ``x`` with the odd window ``w`` along ``axis`` (centered), in float32.

    Parameters
    ----------
    x : numpy.ndarray
        Any real dtype, any shape.
    w : numpy.ndarray
        float32, odd length.
    axis : int
        The axis to convolve.
    channels_last : bool
        True when the last axis is channels and ``axis`` is the one before it: the pixels of a
        row are then interleaved (processed flat, as DALI's innermost pass).
    border : str
        :func:`border_index` mode (not ``"constant"``).
    scale : float
        Multiplies each sum (float32).
    out : numpy.ndarray, optional
        float32 array of ``x``'s shape to write (or, with ``accumulate``, add) into.
    half : bool
        DALI's float16 arithmetic (``x`` holds float16 values): each product rounded to
        float16 before the float32 sum, the result (after the scale and the addition to
        ``out``) rounded to float16 (ties away from zero, as DALI's half type).

    Returns
    -------
    numpy.ndarray
        float32, the shape of ``x``.
    """
    w = np.ascontiguousarray(w, dtype=_F)
    shape = x.shape
    if out is None:
        out = np.empty(shape, _F)
    n = shape[axis]
    if x.size == 0:
        return out
    r = len(w) // 2
    idx = border_index(n, -r, n + r, border)
    if half:
        acc = np.zeros(shape, _F)
        for k in range(len(w)):
            acc = acc + _half(np.take(x, idx[k:k + n], axis=axis).astype(_F) * w[k])
        res = acc * _F(scale)
        out[...] = _half(out + res if accumulate else res)
        return out
    x = np.ascontiguousarray(x)
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    if (channels_last and axis == x.ndim - 2) or axis == x.ndim - 1:
        c = shape[-1] if axis == x.ndim - 2 else 1
        _inner()(x.reshape(outer, n * c), c, idx, w, _F(scale), out.reshape(outer, n * c),
                 accumulate)
    else:
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        _outer()(x.reshape(outer, n, inner), idx, w, _F(scale), out.reshape(outer, n, inner),
                 accumulate)
    return out


def to_integer(acc: np.ndarray, dtype, half_even: bool = False) -> np.ndarray:
    """float32 ``acc`` as the integer ``dtype`` (up to 32 bits), saturated, NaN -> 0, rounded
    half away from zero (DALI's ``ConvertSat``) or, with ``half_even``, to even (OpenCV's
    ``saturate_cast``, behind DALI's CPU ``filter``)."""
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    out = np.empty(acc.shape, dt)
    if acc.size:
        _round()(np.ascontiguousarray(acc, dtype=_F).reshape(-1), out.reshape(-1),
                 float(info.min), float(info.max), half_even)
    return out


def warm_up() -> None:
    """Compile (or load) the loops for the common uint8 / float32 inputs."""
    w = np.ones(3, _F)
    for dt in (np.uint8, np.float32):
        conv_axis(np.zeros((4, 5, 3), dt), w, 0, True)
        conv_axis(np.zeros((4, 5, 3), dt), w, 1, True)
    for dt in (np.uint8, np.int16):
        to_integer(np.zeros(4, _F), dt)
