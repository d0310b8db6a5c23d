"""CPU kernels of ``preemphasis_filter``, ``to_decibels``, ``mel_filter_bank``, ``mfcc`` and
``nonsilent_region`` (schemas in :mod:`compiler.ops.audio`).

Semantics and arithmetic follow DALI 2.4's CPU operators (float32, DALI's order of operations
and accumulation; see docs/semantics.md, "Audio"): the filter bank's weights are computed in
float32 with the C library's ``logf`` / ``expf`` as DALI computes them, the DCT table in float64
rounded once to float32, sums run element after element (:mod:`.audio_jit`).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from runtime.kernels.registry import per_sample, register

from .audio_jit import dct_rows, decibels, mel_rows, nonsilent_bounds, preemphasis_loop, scratch
from .cast import cast, to_numpy_dtype
from .libm import unary

__all__ = ["preemphasis", "to_decibels", "mel_weights", "mel_filter_bank", "dct_table",
           "mfcc", "nonsilent_region", "preemphasis_sample", "to_decibels_sample",
           "mel_filter_bank_sample", "mfcc_sample"]

F32 = np.float32


def _logf(v) -> np.float32:
    return unary("log", np.array([v], F32), F32)[0]


def _expf(v) -> np.float32:
    return unary("exp", np.array([v], F32), F32)[0]


# -------------------------------------------------------------------------- preemphasis
#: ``border`` of ``preemphasis_filter`` -> the code :func:`.audio_jit.preemphasis_loop` takes
PREEMPHASIS_BORDERS = {"zero": 0, "clamp": 1, "reflect": 2}


def preemphasis(x, coeff: float, border: str = "clamp", dtype="float32",
                out_key=None) -> np.ndarray:
    """``out[t] = x[t] - coeff * x[t - 1]`` along axis 0, in float32.

    Parameters
    ----------
    x : numpy.ndarray
        A signal (any numeric type; time is the first axis).
    coeff : float
        The pre-emphasis coefficient (rounded to float32).
    border : {"zero", "clamp", "reflect"}
        ``x[-1]`` is taken as 0, ``x[0]`` or ``x[1]``.
    dtype
        Output type; integers round half away from zero and saturate.
    out_key : str, optional
        A float32 result of a 1-D signal is a per-thread scratch array under that name
        (:func:`.audio_jit.scratch`: valid until this thread's next use of it; the fused
        chain's intermediate).

    Returns
    -------
    numpy.ndarray
        ``x``'s shape, type ``dtype``.
    """
    x = np.asarray(x)
    xf = x if x.dtype == F32 else x.astype(F32)
    c = F32(coeff)
    dt = to_numpy_dtype(dtype)
    if xf.ndim == 1:        # one compiled pass (the same float32 operations)
        xf = np.ascontiguousarray(xf)
        out = (scratch(out_key, xf.shape, F32) if out_key is not None and dt == F32
               else np.empty(xf.shape, F32))
        preemphasis_loop()(xf, c, PREEMPHASIS_BORDERS.get(border, 1), out)
        return out if dt == F32 else cast(out, dt)
    out = np.empty_like(xf)
    if xf.shape[0]:
        out[1:] = xf[1:] - c * xf[:-1]
        if border == "zero":
            out[0] = xf[0]
        elif border == "reflect" and xf.shape[0] > 1:
            out[0] = xf[0] - c * xf[1]
        else:
            out[0] = xf[0] - c * xf[0]
    return out if dt == F32 else cast(out, dt)


def preemphasis_sample(x, a, layout, dtype, out_key=None):
    """``preemphasis_filter`` of one sample ``x`` with its arguments ``a`` (tensor arguments
    resolved), input ``layout`` and output ``dtype``: the kernel's and ``fused.audio``'s."""
    return preemphasis(x, float(np.asarray(a.get("preemph_coeff", 0.97))),
                       a.get("border", "clamp"), dtype, out_key)


@register("preemphasis_filter", "cpu")
@per_sample
def preemphasis_kernel(ctx, ins, a, i):
    """``preemphasis_filter`` of sample ``i``."""
    return preemphasis_sample(ins[0], a, ctx.in_metas[0].layout, ctx.out_metas[0].dtype)


# -------------------------------------------------------------------------- to_decibels
def to_decibels(x, multiplier=10.0, reference=0.0, cutoff_db=-200.0) -> np.ndarray:
    """``multiplier * log10(max(min_ratio, x / reference))`` in float32 (DALI: the factor
    ``multiplier / log2(10)`` and ``1 / reference`` in float64, rounded to float32, then
    ``log2f``); ``reference`` 0: the sample's maximum (at least 0); ``min_ratio =
    10 ** (cutoff_db / multiplier)``."""
    x = np.asarray(x, F32)
    ref = float(reference)
    if ref == 0.0:
        ref = max(0.0, float(x.max())) if x.size else 0.0
    mul_log2 = F32(multiplier / math.log2(10.0))
    inv_ref = F32(1.0 if ref == 1.0 else (1.0 / ref if ref else math.inf))
    min_ratio = F32(10.0 ** (cutoff_db / multiplier))
    out = np.empty(x.shape, F32)
    # one compiled pass: maximum(min_ratio, x * inv_ref), log2f, the factor (float32)
    decibels()(np.ascontiguousarray(x).reshape(-1), inv_ref, min_ratio, mul_log2,
               out.reshape(-1))
    return out


def to_decibels_sample(x, a, layout, dtype):
    """``to_decibels`` of one sample (see :func:`preemphasis_sample`)."""
    return to_decibels(x, a.get("multiplier", 10.0), a.get("reference", 0.0),
                       a.get("cutoff_db", -200.0))


@register("to_decibels", "cpu")
@per_sample
def to_decibels_kernel(ctx, ins, a, i):
    """``to_decibels`` of sample ``i``."""
    return to_decibels_sample(ins[0], a, ctx.in_metas[0].layout, ctx.out_metas[0].dtype)


# ---------------------------------------------------------------------- mel filter bank
_FSP = F32(200.0 / 3.0)
_MIN_LOG_HZ = F32(1000.0)
_MIN_LOG_MEL = F32(_MIN_LOG_HZ / _FSP)
_STEP_LOG = F32(0.068751777)


def _hz_to_mel(hz, formula):
    hz = F32(hz)
    if formula == "htk":
        return F32(1127.0) * _logf(F32(1.0) + hz / F32(700.0))
    if hz >= _MIN_LOG_HZ:
        return _MIN_LOG_MEL + _logf(hz / _MIN_LOG_HZ) / _STEP_LOG
    return hz / _FSP


def _mel_to_hz(mel, formula):
    mel = F32(mel)
    if formula == "htk":
        return F32(700.0) * (_expf(mel / F32(1127.0)) - F32(1.0))
    if mel >= _MIN_LOG_MEL:
        return _MIN_LOG_HZ * _expf(_STEP_LOG * (mel - _MIN_LOG_MEL))
    return mel * _FSP


@functools.lru_cache(maxsize=64)
def mel_weights(nbins: int, nfilter: int, sample_rate: float, freq_low: float,
                freq_high: float, formula: str, normalize: bool):
    """The filter bank as per-bin weights: ``(bins, down, up, w_down, w_up)``.

    Bin ``b`` (of ``nbins = nfft // 2 + 1``) feeds filter ``down[b]`` with ``w_down[b]`` (its
    falling slope) and filter ``up[b]`` with ``w_up[b]`` (rising slope); -1: none.  Filters are
    triangles between neighbouring points of a grid evenly spaced in mel from ``freq_low`` to
    ``freq_high``, interpolated linearly in Hz; with ``normalize`` each is scaled by
    ``2 / (right - left)`` in Hz.  Computed in float32 as DALI 2.4's CPU kernel does.
    """
    nfft = 2 * (nbins - 1)
    sr = F32(sample_rate)
    f_high = F32(freq_high) if freq_high > 0 else sr / F32(2.0)
    f_low = F32(freq_low)
    mel_low, mel_high = _hz_to_mel(f_low, formula), _hz_to_mel(f_high, formula)
    hz_step = np.float64(sr / F32(nfft))
    mel_delta = np.float64((mel_high - mel_low) / F32(nfilter + 1))
    inv_hz_step = 1.0 / hz_step
    start = max(0, math.ceil(np.float64(f_low) * inv_hz_step))
    end = min(nbins - 1, math.floor(np.float64(f_high) * inv_hz_step))
    w_down = np.zeros(nbins, F32)
    interval_of = np.full(nbins, -1, np.int64)
    norm = np.ones(nfilter, F32)
    mel0, mel1 = mel_low, F32(np.float64(mel_low) + mel_delta)
    b = start
    f = F32(b * hz_step)
    for interval in range(nfilter + 1):
        if interval == nfilter:
            mel1 = mel_high
        f0, f1 = _mel_to_hz(mel0, formula), _mel_to_hz(mel1, formula)
        if normalize and interval < nfilter:
            f2 = _mel_to_hz(F32(np.float64(mel1) + mel_delta), formula)
            norm[interval] = F32(2.0) / (f2 - f0)
        slope = F32(1.0) / (f1 - f0)
        while b <= end and f < f1:
            w_down[b] = (f1 - f) * slope
            interval_of[b] = interval
            b += 1
            f = F32(b * hz_step)
        mel0, mel1 = mel1, F32(np.float64(mel1) + mel_delta)
    bins = np.arange(start, end + 1, dtype=np.int64)
    up = np.where(interval_of < nfilter, interval_of, -1)
    down = np.where(interval_of >= 1, interval_of - 1, -1)
    w_up = F32(1.0) - w_down
    if normalize:
        w_down = np.where(down >= 0, w_down * norm[np.maximum(down, 0)], w_down).astype(F32)
        w_up = np.where(up >= 0, w_up * norm[np.maximum(up, 0)], w_up).astype(F32)
    for arr in (bins, down, up, w_down, w_up):
        arr.setflags(write=False)
    return bins, down, up, w_down, w_up


def _freq_axis(layout, ndim) -> int:
    if layout and "f" in layout:
        return layout.index("f")
    return ndim - 2


def mel_filter_bank(spec, layout="ft", nfilter=128, sample_rate=44100.0, freq_low=0.0,
                    freq_high=0.0, mel_formula="slaney", normalize=True) -> np.ndarray:
    """Mel spectrogram of a float32 spectrogram ``spec`` (frequency axis: ``'f'`` of
    ``layout``, else the second-to-last): ``nfilter`` bins replace the ``nfft // 2 + 1`` FFT
    bins there, accumulated in float32 bin by bin (:func:`mel_weights`)."""
    x = np.asarray(spec, F32)
    axis = _freq_axis(layout, x.ndim)
    nf = int(nfilter)
    # frequency first (the "ft" spectrogram): the rows as they are, no axis moved
    moved = x if axis == 0 else np.moveaxis(x, axis, 0)
    lead = moved if moved.ndim == 2 else moved.reshape(moved.shape[0], -1)
    weights = mel_weights(int(moved.shape[0]), nf, float(sample_rate), float(freq_low),
                          float(freq_high), mel_formula, bool(normalize))
    out = np.zeros((nf, lead.shape[1]), F32)
    mel_rows()(np.ascontiguousarray(lead), *weights, out)
    if axis == 0 and moved.ndim == 2:
        return out
    return np.moveaxis(out.reshape((nf,) + moved.shape[1:]), 0, axis)


def mel_filter_bank_sample(x, a, layout, dtype):
    """``mel_filter_bank`` of one sample (see :func:`preemphasis_sample`)."""
    return mel_filter_bank(x, layout, a.get("nfilter", 128), a.get("sample_rate", 44100.0),
                           a.get("freq_low", 0.0), a.get("freq_high", 0.0),
                           a.get("mel_formula", "slaney"), a.get("normalize", True))


@register("mel_filter_bank", "cpu")
@per_sample
def mel_filter_bank_kernel(ctx, ins, a, i):
    """``mel_filter_bank`` of sample ``i``."""
    return mel_filter_bank_sample(ins[0], a, ctx.in_metas[0].layout, ctx.out_metas[0].dtype)


# -------------------------------------------------------------------------------- mfcc
@functools.lru_cache(maxsize=64)
def dct_table(n: int, ndct: int, dct_type: int, normalize: bool) -> np.ndarray:
    """The ``(ndct, n)`` cosine table of a DCT of type 1-4 (scipy's definitions; orthonormal
    scaling with ``normalize``), computed in float64 and rounded once to float32."""
    k = np.arange(ndct, dtype=np.float64)[:, None]
    m = np.arange(n, dtype=np.float64)[None, :]
    if dct_type == 1:
        t = np.cos(math.pi / (n - 1) * k * m)
        t[:, 0] = 0.5
        t[:, -1] = np.where(np.arange(ndct) % 2 == 0, 0.5, -0.5)
    elif dct_type == 2:
        t = np.cos(math.pi / n * (m + 0.5) * k)
        if normalize:
            t *= np.where(k == 0, 1.0 / math.sqrt(n), math.sqrt(2.0 / n))
    elif dct_type == 3:
        t = np.cos(math.pi / n * m * (k + 0.5))
        t *= math.sqrt(2.0 / n) if normalize else 1.0
        t[:, 0] = 1.0 / math.sqrt(n) if normalize else 0.5
    else:
        t = np.cos(math.pi / n * (m + 0.5) * (k + 0.5)) * (math.sqrt(2.0 / n) if normalize
                                                           else 1.0)
    out = t.astype(F32)
    out.setflags(write=False)
    return out


def mfcc(x, n_mfcc=20, dct_type=2, normalize=False, axis=0, lifter=0.0) -> np.ndarray:
    """DCT of ``x`` along ``axis`` keeping ``n_mfcc`` coefficients (all when ``n_mfcc`` is
    larger), float32 sums in input order; ``lifter`` ``L`` multiplies coefficient ``k`` by
    ``1 + L / 2 * sin(pi * (k + 1) / L)`` (float32)."""
    x = np.asarray(x, F32)
    n = x.shape[axis]
    if dct_type == 1 and n < 2:
        raise ValueError("DCT type I requires an input length > 1")
    ndct = n if n_mfcc <= 0 or n_mfcc > n else int(n_mfcc)
    moved = np.moveaxis(x, axis, 0)
    lead = np.ascontiguousarray(moved.reshape(n, -1))
    out = np.empty((ndct, lead.shape[1]), F32)
    dct_rows()(lead, dct_table(n, ndct, int(dct_type), bool(normalize)), out)
    if lifter:
        amp, phase = F32(lifter / 2), F32(F32(math.pi) / F32(lifter))
        ks = np.arange(1, ndct + 1, dtype=F32)
        coeffs = F32(1.0) + amp * unary("sin", phase * ks, F32)
        out *= coeffs[:, None]
    return np.moveaxis(out.reshape((ndct,) + moved.shape[1:]), 0, axis)


def mfcc_sample(x, a, layout, dtype):
    """``mfcc`` of one sample (see :func:`preemphasis_sample`)."""
    return mfcc(x, a.get("n_mfcc", 20), a.get("dct_type", 2), a.get("normalize", False),
                a.get("axis", 0), a.get("lifter", 0.0))


@register("mfcc", "cpu")
@per_sample
def mfcc_kernel(ctx, ins, a, i):
    """``mfcc`` of sample ``i``."""
    return mfcc_sample(ins[0], a, ctx.in_metas[0].layout, ctx.out_metas[0].dtype)


# -------------------------------------------------------------------- nonsilent_region
def nonsilent_region(x, cutoff_db=-60.0, reference_power=0.0, window_length=2048,
                     reset_interval=8192) -> tuple[int, int]:
    """``(begin, length)`` of the union of the non-silent windows of a 1-D signal.

    The mean power of every window ``x[j:j + window_length]`` is a running float32 sum
    (recomputed every ``reset_interval`` windows for float inputs; integer inputs never); a
    window is silent when its power is below ``reference * 10 ** (cutoff_db / 10)``, the
    reference being ``reference_power`` or, when 0, the largest window power.  A signal no
    longer than the window is one window; no non-silent window gives ``(0, 0)``.

    Raises
    ------
    ValueError
        ``window_length`` < 1, or ``reset_interval`` not a multiple of it (DALI's words).
    """
    x = np.asarray(x)
    wl, reset = int(window_length), int(reset_interval)
    if wl < 1:
        raise ValueError(f"nonsilent_region: window_length must be positive, got {wl}")
    if reset != -1 and reset % wl != 0:
        raise ValueError(f"`reset_interval` shall be a multiple of `window_length`. Got: "
                         f"reset_interval: {reset} vs window_length: {wl}")
    n = x.shape[0]
    if n == 0:
        return 0, 0
    wl = min(wl, n)
    if x.dtype.kind != "f" or reset == -1:
        reset = n
    power = scratch("window_power", (n - wl + 1,), F32)      # per thread, read only here
    # the window powers, their maximum (the reference without reference_power) and the
    # first and last window at least ref * 10 ** (cutoff_db / 10), in float32: one call
    begin, last = nonsilent_bounds()(np.ascontiguousarray(x, dtype=F32), wl, reset, power,
                                     bool(reference_power), F32(reference_power),
                                     F32(10.0 ** (float(cutoff_db) / 10.0)))
    if begin < 0:
        return 0, 0
    return int(begin), int(last) + wl - int(begin)


@register("nonsilent_region", "cpu")
@per_sample
def nonsilent_region_kernel(ctx, ins, a, i):
    """``nonsilent_region`` of sample ``i``: two int32 scalars."""
    begin, length = nonsilent_region(
        ins[0], float(np.asarray(a.get("cutoff_db", -60.0))),
        float(np.asarray(a.get("reference_power", 0.0))),
        int(np.asarray(a.get("window_length", 2048))),
        int(np.asarray(a.get("reset_interval", 8192))))
    return np.array(begin, np.int32), np.array(length, np.int32)
