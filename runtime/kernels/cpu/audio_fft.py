"""CPU kernels of ``spectrogram`` and ``power_spectrum`` (schemas in :mod:`compiler.ops.audio`).

``spectrogram`` windows in float64, rounds the windowed frames once to float32 and transforms
them in float32 (scipy's pocketfft: compiled once, no per-CPU code paths, so the same results
on every CPU), as DALI's CPU operator transforms in float32 (FFTS): values agree to float32
accuracy, not bit for bit (docs/semantics.md, "Audio").  ``power_spectrum`` transforms in
float64 and rounds once.  The windows are read from the signal by one compiled loop (the
centred windows' reflect / zero padding computed on the fly, no padded copy) into a per-thread
frame buffer: one batched FFT per sample, no per-frame Python.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import scipy.fft

try:    # scipy's own binding of pocketfft, the transform behind scipy.fft.rfft, with an `out`
    from scipy.fft._pocketfft.pypocketfft import r2c as _r2c
except ImportError:     # pragma: no cover - another scipy layout: scipy.fft.rfft allocates
    _r2c = None

from runtime.kernels.registry import per_sample, register

from .audio_jit import power_bins, scratch, signal_frames

__all__ = ["hann_window", "spectrogram", "power_spectrum", "spectrogram_sample"]


@functools.lru_cache(maxsize=32)
def hann_window(n: int) -> np.ndarray:
    """DALI's Hann window: ``0.5 * (1 - cos(2 pi (t + 0.5) / n))``, float64."""
    t = np.arange(n, dtype=np.float64)
    w = 0.5 * (1.0 - np.cos(2.0 * math.pi / n * (t + 0.5)))
    w.setflags(write=False)
    return w


def rfft_rows(buf: np.ndarray) -> np.ndarray:
    """``scipy.fft.rfft(buf, axis=1)`` (complex64 for float32 rows), into a per-thread scratch
    array when scipy's pocketfft binding takes an output (the same transform scipy.fft.rfft
    calls, so the same values); the result is valid until this thread's next call."""
    if _r2c is None:
        return scipy.fft.rfft(buf, axis=1)
    out = scratch("spectrum", (buf.shape[0], buf.shape[1] // 2 + 1), np.complex64)
    return _r2c(buf, (1,), True, 0, out, 1)


def spectrogram(x, nfft=None, window_length=512, window_step=256, window_fn=None, power=2,
                center_windows=True, reflect_padding=True, layout="ft",
                out_key=None) -> np.ndarray:
    """Short-time Fourier transform magnitudes of a 1-D signal.

    Window ``k`` covers ``x[k * window_step : k * window_step + window_length]``; with
    ``center_windows`` it is centred there instead (``window_length // 2`` samples before it,
    outside the signal by reflection or zeros), ``len(x) // window_step + 1`` windows; it is
    multiplied by ``window_fn`` (default :func:`hann_window`), zero-padded to
    ``nfft`` and transformed.

    ``out_key``: the result is a per-thread scratch array under that name
    (:func:`.audio_jit.scratch`: valid until this thread's next use of the name; the fused
    chain's intermediate), else a new array.

    Returns
    -------
    numpy.ndarray
        float32, ``(nfft // 2 + 1, windows)`` for layout ``"ft"``, transposed for ``"tf"``;
        ``power`` 2 gives ``|X|^2``, 1 ``|X|``.
    """
    wl, step = int(window_length), int(window_step)
    nfft = wl if nfft is None else int(nfft)
    sig = np.asarray(x)
    if sig.dtype not in (np.float32, np.float64):
        sig = sig.astype(np.float64)            # integers: float64 holds them
    sig = np.ascontiguousarray(sig)
    n = sig.shape[0]
    before = wl // 2 if center_windows else 0
    if center_windows:      # centres 0, step, ... <= n: n // step + 1 windows (DALI)
        count = n // step + 1
    else:
        count = (n - wl) // step + 1 if n >= wl else 0
    nbins = nfft // 2 + 1
    if count <= 0:
        return np.zeros((nbins, 0) if layout == "ft" else (0, nbins), np.float32)
    w = hann_window(wl) if window_fn is None else np.asarray(window_fn, np.float64)
    buf = scratch("frames", (count, nfft), np.float32)      # zero-padded frames: one plan
    # the (reflect- or zero-) padded windows read from the signal itself: no padded copy
    signal_frames()(sig, before, bool(reflect_padding and center_windows), step,
                    np.ascontiguousarray(w), buf)
    c = rfft_rows(buf)                              # float32, as DALI's FFT
    ft = layout == "ft"
    shape = (nbins, count) if ft else (count, nbins)
    out = np.empty(shape, np.float32) if out_key is None else scratch(out_key, shape,
                                                                        np.float32)
    power_bins()(c, int(power) == 1, ft, out)        # |X|^2 (or |X|) in float32
    return out


def spectrogram_sample(x, a, layout, dtype, out_key=None):
    """``spectrogram`` of one sample ``x`` with its arguments ``a`` (``layout`` / ``dtype``:
    the input layout and output type, unused): the kernel's and ``fused.audio``'s."""
    return spectrogram(x, a.get("nfft"), a.get("window_length", 512),
                       a.get("window_step", 256), a.get("window_fn"), a.get("power", 2),
                       a.get("center_windows", True), a.get("reflect_padding", True),
                       a.get("layout") or "ft", out_key)


@register("spectrogram", "cpu")
@per_sample
def spectrogram_kernel(ctx, ins, a, i):
    """``spectrogram`` of sample ``i``."""
    return spectrogram_sample(ins[0], a, ctx.in_metas[0].layout, ctx.out_metas[0].dtype)


def power_spectrum(x, nfft=None, axis=-1, power=2) -> np.ndarray:
    """``|rfft(x, nfft)|^power`` along ``axis`` (float32; ``nfft`` defaults to the length
    there; the input is cut or zero-padded to ``nfft``)."""
    x = np.asarray(x).astype(np.float64)
    axis = axis % x.ndim
    n = x.shape[axis] if nfft is None else int(nfft)
    spec = np.abs(np.fft.rfft(x, n=n, axis=axis))
    if int(power) == 2:
        spec = spec * spec
    return spec.astype(np.float32)


@register("power_spectrum", "cpu")
@per_sample
def power_spectrum_kernel(ctx, ins, a, i):
    """``power_spectrum`` of sample ``i``."""
    return power_spectrum(ins[0], a.get("nfft"), a.get("axis", -1), a.get("power", 2))
