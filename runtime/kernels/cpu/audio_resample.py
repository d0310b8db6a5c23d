"""Band-limited resampling of audio (``audio_resample``, and ``decoders.audio(sample_rate=)``):
windowed-sinc interpolation as DALI 2.4's CPU resampler computes it.

The kernel is a sinc of ``lobes`` zero crossings on each side under a Hann envelope, tabulated
at ``lobes * 64 + 1`` points and interpolated linearly; ``lobes = round(0.007 q^2 - 0.09 q +
3)`` for quality ``q`` (DALI's ``ResamplingParams::FromQuality``).  Output sample ``o`` sits at
input position ``o * in_rate / out_rate`` (computed in blocks of 256 outputs from a float64 block
start, stepping by the float32 ratio inside a block, as DALI does); taps outside the signal are
left out.  Sums run in float32 in DALI's order (groups of four taps in four lanes, the lanes
added pairwise, then the remaining taps one by one), so results match DALI's bit for bit where
its table does.  Integer inputs are normalized to [-1, 1] (divided by the type's maximum) and
integer outputs scaled back, rounded and saturated.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from runtime.kernels.registry import per_sample, register

from .cast import cast
from .jit import compiled

__all__ = ["resampling_window", "resample", "lobes_for_quality", "resampled_length",
           "to_full_scale", "warm_up"]

F32 = np.float32


def lobes_for_quality(quality: float) -> int:
    """DALI's number of sinc lobes for ``quality`` (0-100)."""
    q = float(quality)
    return int(math.floor(0.007 * q * q - 0.09 * q + 3 + 0.5))


def resampled_length(n: int, in_rate: float, out_rate: float) -> int:
    """``ceil(n * out_rate / in_rate)`` (DALI's output length)."""
    return int(math.ceil(n * float(out_rate) / float(in_rate)))


@functools.lru_cache(maxsize=16)
def resampling_window(lobes: int):
    """``(lookup, scale, center)``: the tabulated windowed sinc (float32, a zero at both ends),
    the table index per unit of input position, and the index of position 0."""
    coeffs = lobes * 64 + 1
    scale = F32(F32(2.0 * lobes) / F32(coeffs - 1))
    scale_env = F32(F32(2.0) / F32(coeffs))
    center = int(F32(coeffs - 1) * F32(0.5))
    lookup = np.zeros(coeffs + 2, F32)
    for i in range(coeffs):
        x = F32(F32(i - center) * scale)
        y = F32(F32(i - center) * scale_env)
        px = F32(float(x) * math.pi)         # DALI: x *= M_PI on a float (double product)
        sinc = F32(1.0) - px * px * F32(1.0 / 6) if abs(px) < 1e-5 else F32(
            F32(math.sin(float(px))) / px)
        env = 0.5 * (1.0 + math.cos(float(y) * math.pi))
        lookup[i + 1] = F32(float(sinc) * env)
    lookup.setflags(write=False)
    return lookup, F32(F32(1.0) / scale), F32(center + 1)


@compiled
def _resample_kernel(njit):
    """``kernel(lookup, wscale, wcenter, lobes, x, in_rate, out_rate, out)``: ``x`` (N, C)
    float32, ``out`` (M, C) float32."""
    @njit
    def weight(lookup, wscale, wcenter, xpos):
        fi = xpos * wscale + wcenter
        i = np.int64(fi)                  # truncation (fi > 0 inside the window)
        di = fi - np.float32(i)
        return lookup[i] + di * (lookup[i + 1] - lookup[i])

    @njit
    def kernel(lookup, wscale, wcenter, lobes, x, in_rate, out_rate, out):
        n_in, channels = x.shape
        n_out = out.shape[0]
        scale = in_rate / out_rate
        fscale = np.float32(scale)
        block = 256
        lane = np.zeros(4, np.float32)
        xl = np.zeros(4, np.float32)
        acc = np.zeros(channels, np.float32)
        for out_block in range(0, n_out, block):
            block_end = min(out_block + block, n_out)
            in_block_f = out_block * scale
            in_block_i = np.int64(np.floor(in_block_f))
            in_pos = np.float32(in_block_f - in_block_i)
            for o in range(out_block, block_end):
                i0 = np.int64(np.ceil(in_pos)) - lobes
                i1 = np.int64(np.floor(in_pos)) + lobes + 1
                if i0 + in_block_i < 0:
                    i0 = -in_block_i
                if i1 + in_block_i > n_in:
                    i1 = n_in - in_block_i
                if channels == 1:
                    i = i0
                    for k in range(4):
                        lane[k] = np.float32(0.0)
                        xl[k] = np.float32(i + k) - in_pos
                    while i + 3 < i1:
                        for k in range(4):
                            w = weight(lookup, wscale, wcenter, xl[k])
                            lane[k] = lane[k] + x[in_block_i + i + k, 0] * w
                            xl[k] = xl[k] + np.float32(4.0)
                        i += 4
                    f = (lane[0] + lane[2]) + (lane[1] + lane[3])
                    xpos = np.float32(i) - in_pos
                    while i < i1:
                        w = weight(lookup, wscale, wcenter, xpos)
                        f = f + x[in_block_i + i, 0] * w
                        i += 1
                        xpos = xpos + np.float32(1.0)
                    out[o, 0] = f
                else:
                    for c in range(channels):
                        acc[c] = np.float32(0.0)
                    xpos = np.float32(i0) - in_pos
                    for i in range(i0, i1):
                        w = weight(lookup, wscale, wcenter, xpos)
                        for c in range(channels):
                            acc[c] = acc[c] + x[in_block_i + i, c] * w
                        xpos = xpos + np.float32(1.0)
                    for c in range(channels):
                        out[o, c] = acc[c]
                in_pos = in_pos + fscale
    return kernel


def _normalize(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":
        return (x.astype(np.float64) / np.iinfo(x.dtype).max).astype(F32)
    return x.astype(F32, copy=False)


def to_full_scale(y: np.ndarray, dtype) -> np.ndarray:
    """float32 samples in [-1, 1] as ``dtype``: floats unchanged, integers ``y * max`` (a
    float32 product, as DALI's ``ConvertSatNorm``) rounded half away from zero and saturated."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return y.astype(dtype, copy=False)
    info = np.iinfo(dtype)
    scaled = np.asarray(y, F32) * F32(info.max)
    return cast(scaled, dtype)      # round half away from zero, saturate


def resample(x, in_rate: float, out_rate: float, out_length=None, quality=50.0,
             dtype=None) -> np.ndarray:
    """Resample a signal ``x`` (``(N,)`` or ``(N, channels)``) from ``in_rate`` to
    ``out_rate``.

    Parameters
    ----------
    x : numpy.ndarray
        Time on axis 0; channels (if any) on axis 1; any numeric type.
    in_rate, out_rate : float
        Sampling rates (only their ratio matters).
    out_length : int, optional
        Output length (default :func:`resampled_length`).
    quality : float
        0-100; sets the number of sinc lobes (:func:`lobes_for_quality`).
    dtype : numpy dtype, optional
        Output type (default: the input's).

    Returns
    -------
    numpy.ndarray
        ``(out_length,)`` or ``(out_length, channels)``.
    """
    x = np.asarray(x)
    dt = x.dtype if dtype is None else np.dtype(dtype)
    mono = x.ndim == 1
    xs = np.ascontiguousarray(_normalize(x).reshape(x.shape[0], -1))
    n_out = resampled_length(xs.shape[0], in_rate, out_rate) if out_length is None \
        else int(out_length)
    out = np.zeros((n_out, xs.shape[1]), F32)
    if xs.shape[0] and n_out:
        lobes = max(1, lobes_for_quality(quality))
        lookup, wscale, wcenter = resampling_window(lobes)
        _resample_kernel()(lookup, wscale, wcenter, lobes, xs, float(in_rate),
                           float(out_rate), out)
    res = to_full_scale(out, dt)
    return res[:, 0] if mono else res


def warm_up() -> None:
    """Build (or load from the cache) the compiled loop."""
    resample(np.zeros(8, F32), 2.0, 1.0)


def _rates(a) -> tuple[float, float]:
    """``(in_rate, out_rate)`` of one sample's arguments (float32, as DALI reads them)."""
    scale, in_rate, out_rate = a.get("scale"), a.get("in_rate"), a.get("out_rate")
    if scale is not None:
        if in_rate is not None or out_rate is not None:
            raise ValueError("audio_resample: `scale` cannot be combined with `in_rate` / "
                             "`out_rate`")
        scale = float(F32(np.asarray(scale)))
        if scale <= 0:
            raise ValueError(f"audio_resample: scale must be positive, got {scale}")
        return 1.0, scale
    if in_rate is not None and out_rate is not None:
        ir, orr = float(F32(np.asarray(in_rate))), float(F32(np.asarray(out_rate)))
        if ir <= 0 or orr <= 0:
            raise ValueError(f"audio_resample: sampling rates must be positive, got "
                             f"in_rate={ir}, out_rate={orr}")
        return ir, orr
    if a.get("out_length") is not None:
        return None, None
    raise ValueError("audio_resample: give `scale`, or `in_rate` and `out_rate`, or "
                     "`out_length`")


@register("audio_resample", "cpu")
@per_sample
def audio_resample_kernel(ctx, ins, a, i):
    """``audio_resample`` of sample ``i``."""
    x = ins[0]
    in_rate, out_rate = _rates(a)
    length = a.get("out_length")
    length = None if length is None else int(np.asarray(length))
    if in_rate is None:             # only a length: the rates follow from it
        in_rate, out_rate = float(x.shape[0]), float(length)
    return resample(x, in_rate, out_rate, length, a.get("quality", 50.0),
                    ctx.out_metas[0].dtype)
