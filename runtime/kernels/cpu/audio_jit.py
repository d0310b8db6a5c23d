"""Compiled loops of the audio kernels (:mod:`.audio`): float32 arithmetic in DALI's order.

DALI's CPU operators accumulate in float32, element after element; numpy's reductions and BLAS
sum in blocks whose order depends on the CPU's SIMD path.  These loops add in the order DALI
does (IEEE float32, no fused multiply-add: numba without fast-math), so their results do not
depend on the CPU and match DALI's operators bit for bit where DALI's own order is known.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from .jit import compiled

__all__ = ["moving_mean_square", "dct_rows", "mel_rows", "signal_frames",
           "power_bins", "normalize_rows", "preemphasis_loop", "decibels", "first_last_at_least", "scratch",
           "nonsilent_bounds", "speech_frames", "speech_features", "warm_up"]

_local = threading.local()


def scratch(name: str, shape, dtype) -> np.ndarray:
    """A per-thread scratch array of ``shape`` and ``dtype`` under ``name`` (grown when too
    small, reused otherwise: a fresh array of a few hundred KB is fresh pages, faulted in on
    every call).  Valid until this thread asks for ``name`` again."""
    size = math.prod(shape)
    key = f"{name}:{np.dtype(dtype).str}"
    buf = getattr(_local, key, None)
    if buf is None or buf.size < size:
        buf = np.empty(max(size, 1 << 14), dtype)
        setattr(_local, key, buf)
    return buf[:size].reshape(shape)


@compiled
def moving_mean_square(njit):
    """``kernel(x, window, reset, out)``: ``out[j]`` = mean of ``x[j:j + window]`` squared, for
    ``j`` in ``0 .. len(x) - window``, as a running float32 sum (add the new square, subtract
    the old one) recomputed from scratch every ``reset`` windows (DALI's
    ``MovingMeanSquare``; ``reset`` <= 0: every window from scratch); ``x`` is float32
    (integers converted by the caller).  Returns the largest ``out`` value as ``numpy.max``
    gives it (NaN when there is a NaN).

    The float32 operations of one running sum, in its order, arranged for speed: first every
    step's difference ``new * new - old * old`` (independent of each other: one vector pass
    into ``out``), then the sums.  Each run of ``reset`` windows starts from scratch, so runs
    are independent: four or two of them are summed in lockstep, as many chains of additions
    instead of one (a signal of a few seconds has several runs of 8192 windows)."""
    @njit
    def first_sum(x, window):
        s = np.float32(0.0)
        for k in range(window):
            s = s + x[k] * x[k]
        return s

    @njit
    def sums(y, s, factor, t):
        # y[t:] of one run (its differences there); s: the run's sum before y[t]
        for k in range(t, y.shape[0]):
            s = s + y[k]
            y[k] = s * factor

    @njit
    def kernel(x, window, reset, out):
        n_out = out.shape[0]
        factor = np.float32(1.0) / np.float32(window)
        ahead = x[window - 1:]
        for j in range(1, n_out):
            new = ahead[j]
            old = x[j - 1]
            out[j] = new * new - old * old
        run = reset if reset > 0 else 1
        a = 0
        while a < n_out:
            left = n_out - a
            if left > 3 * run:              # four runs (the fourth may be short)
                y0 = out[a:a + run]
                y1 = out[a + run:a + 2 * run]
                y2 = out[a + 2 * run:a + 3 * run]
                y3 = out[a + 3 * run:min(a + 4 * run, n_out)]
                s0 = first_sum(x[a:], window)
                s1 = first_sum(x[a + run:], window)
                s2 = first_sum(x[a + 2 * run:], window)
                s3 = first_sum(x[a + 3 * run:], window)
                y0[0] = s0 * factor
                y1[0] = s1 * factor
                y2[0] = s2 * factor
                y3[0] = s3 * factor
                for t in range(1, y3.shape[0]):
                    s0 = s0 + y0[t]
                    s1 = s1 + y1[t]
                    s2 = s2 + y2[t]
                    s3 = s3 + y3[t]
                    y0[t] = s0 * factor
                    y1[t] = s1 * factor
                    y2[t] = s2 * factor
                    y3[t] = s3 * factor
                t = max(y3.shape[0], 1)
                sums(y0, s0, factor, t)
                sums(y1, s1, factor, t)
                sums(y2, s2, factor, t)
                a += 4 * run
            elif left > run:                # two runs (the second may be short)
                y0 = out[a:a + run]
                y1 = out[a + run:min(a + 2 * run, n_out)]
                s0 = first_sum(x[a:], window)
                s1 = first_sum(x[a + run:], window)
                y0[0] = s0 * factor
                y1[0] = s1 * factor
                for t in range(1, y1.shape[0]):
                    s0 = s0 + y0[t]
                    s1 = s1 + y1[t]
                    y0[t] = s0 * factor
                    y1[t] = s1 * factor
                sums(y0, s0, factor, max(y1.shape[0], 1))
                a += 2 * run
            else:                           # the last run
                y0 = out[a:]
                s0 = first_sum(x[a:], window)
                y0[0] = s0 * factor
                sums(y0, s0, factor, 1)
                a = n_out
        # numpy's max: the largest value, or the first NaN (four independent maxima, exact in
        # any order; NaN compares false, so they skip it: a NaN is looked for apart)
        t0 = out[0]
        t1 = out[0]
        t2 = out[0]
        t3 = out[0]
        nan = out[0] != out[0]
        j = 1
        while j + 4 <= n_out:
            v0 = out[j]
            v1 = out[j + 1]
            v2 = out[j + 2]
            v3 = out[j + 3]
            t0 = v0 if v0 > t0 else t0
            t1 = v1 if v1 > t1 else t1
            t2 = v2 if v2 > t2 else t2
            t3 = v3 if v3 > t3 else t3
            nan = nan | (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3)
            j += 4
        while j < n_out:
            v0 = out[j]
            t0 = v0 if v0 > t0 else t0
            nan = nan | (v0 != v0)
            j += 1
        if nan:
            for j in range(n_out):
                if out[j] != out[j]:
                    return out[j]
        t0 = t1 if t1 > t0 else t0
        t2 = t3 if t3 > t2 else t2
        return t2 if t2 > t0 else t0
    return kernel


@compiled
def first_last_at_least(njit):
    """``kernel(values, threshold) -> (first, last)``: the first and last index ``j`` with
    ``values[j] >= threshold`` (NaN never is), ``(-1, -1)`` when there is none: the ends of
    ``numpy.flatnonzero(values >= threshold)`` without building it."""
    @njit
    def kernel(values, threshold):
        n = values.shape[0]
        first = -1
        for j in range(n):
            if values[j] >= threshold:
                first = j
                break
        if first < 0:
            return -1, -1
        last = first
        for j in range(n - 1, first, -1):
            if values[j] >= threshold:
                last = j
                break
        return first, last
    return kernel


@compiled
def dct_rows(njit):
    """``kernel(x, table, out)``: ``out[k, t] = sum_n x[n, t] * table[k, n]`` in float32,
    ``n`` ascending (DALI's ``Dct1DCpu``); ``x`` (N, T), ``table`` (K, N), ``out`` (K, T)."""
    @njit
    def kernel(x, table, out):
        n_in, n_t = x.shape
        for k in range(table.shape[0]):
            for t in range(n_t):
                acc = np.float32(0.0)
                for n in range(n_in):
                    acc = acc + x[n, t] * table[k, n]
                out[k, t] = acc
    return kernel


@compiled
def mel_rows(njit):
    """``kernel(spec, bins, down, up, w_down, w_up, out)``: for each FFT bin ``b`` (ascending)
    of ``bins``: ``out[down[b]] += w_down[b] * spec[b]`` (if ``down[b] >= 0``), then
    ``out[up[b]] += w_up[b] * spec[b]`` (if ``up[b] >= 0``): float32, DALI's
    ``MelFilterBankCpu`` order; ``spec`` (F, T), ``out`` (nfilter, T), zeroed by the caller."""
    @njit
    def kernel(spec, bins, down, up, w_down, w_up, out):
        n_t = spec.shape[1]
        for b in bins:
            fd = down[b]
            if fd >= 0:
                w = w_down[b]
                for t in range(n_t):
                    out[fd, t] = out[fd, t] + w * spec[b, t]
            fu = up[b]
            if fu >= 0:
                w = w_up[b]
                for t in range(n_t):
                    out[fu, t] = out[fu, t] + w * spec[b, t]
    return kernel


@compiled
def signal_frames(njit):
    """``kernel(x, before, reflect, step, window, buf)``: ``buf[k, j] = float32(float64(xp[k *
    step + j]) * window[j])`` for ``j < len(window)`` (the product in float64, rounded once),
    0 for the rest of the row up to ``buf.shape[1]`` (the FFT's zero padding), where ``xp`` is
    the signal ``x`` padded by ``before`` samples in front (and as needed behind), without
    building the padded copy: a position outside ``x`` reads its reflection (numpy's
    "reflect", folded back and forth; a 1-sample signal repeats) when ``reflect``, else 0;
    ``x`` float32 or float64, each sample taken as float64 (exact)."""
    @njit
    def kernel(x, before, reflect, step, window, buf):
        count, nfft = buf.shape
        wl = window.shape[0]
        n = x.shape[0]
        period = 2 * (n - 1)
        for k in range(count):
            at = k * step - before
            inside = at >= 0 and at + wl <= n
            for j in range(wl):
                p = at + j
                if inside or (p >= 0 and p < n):
                    v = np.float64(x[p])
                elif not reflect or n == 0:
                    v = 0.0
                elif n == 1:
                    v = np.float64(x[0])
                else:
                    m = p % period
                    if m >= n:
                        m = period - m
                    v = np.float64(x[m])
                buf[k, j] = np.float32(v * window[j])
            for j in range(wl, nfft):
                buf[k, j] = np.float32(0.0)
    return kernel


@compiled
def preemphasis_loop(njit):
    """``kernel(x, c, border, out)``: ``out[t] = x[t] - c * x[t - 1]`` in float32 (the product
    rounded, then the difference: numpy's ``x[1:] - c * x[:-1]``), ``x[-1]`` being 0 (border
    0: ``out[0] = x[0]``), ``x[0]`` (1, clamp) or ``x[1]`` (2, reflect; clamp for one
    sample); ``x`` float32."""
    @njit
    def kernel(x, c, border, out):
        n = x.shape[0]
        if n == 0:
            return
        for t in range(1, n):
            out[t] = x[t] - c * x[t - 1]
        if border == 0:
            out[0] = x[0]
        elif border == 2 and n > 1:
            out[0] = x[0] - c * x[1]
        else:
            out[0] = x[0] - c * x[0]
    return kernel


@compiled
def decibels(njit):
    """``kernel(x, inv_ref, min_ratio, mul, out)``: ``out = mul * log2(maximum(min_ratio, x *
    inv_ref))`` element by element in float32 (numpy's ``maximum``: NaN stays NaN), ``log2``
    being the C library's ``log2f`` as in :mod:`.libm` (numba's ``math.log2`` of a float32
    lowers to it); ``x`` and ``out`` flat float32."""
    @njit
    def kernel(x, inv_ref, min_ratio, mul, out):
        for i in range(x.size):
            r = x[i] * inv_ref
            if r < min_ratio:
                r = min_ratio
            out[i] = mul * math.log2(r)
    return kernel


@compiled
def power_bins(njit):
    """``kernel(c, magnitude, transpose, out)``: ``out[b, k] = re * re + im * im`` of ``c[k, b]`` in
    float32 (the square root of it with ``magnitude``), i.e. numpy's ``c.real * c.real +
    c.imag * c.imag`` (and ``sqrt``) of the ``(frames, bins)`` complex64 spectrum written
    transposed: ``out`` (bins, frames) for layout "ft", or ``(frames, bins)`` when
    ``transpose`` is False."""
    @njit
    def kernel(c, magnitude, transpose, out):
        count, nbins = c.shape
        tile = 16 if transpose else 1       # "ft": 16 frames a row of out at a time
        for k0 in range(0, count, tile):
            k1 = min(k0 + tile, count)
            for b in range(nbins):
                for k in range(k0, k1):
                    v = c[k, b]
                    re = np.float32(v.real)
                    im = np.float32(v.imag)
                    p = re * re + im * im
                    if magnitude:
                        p = np.sqrt(p)
                    if transpose:
                        out[b, k] = p
                    else:
                        out[k, b] = p
    return kernel


@compiled
def normalize_rows(njit):
    """``kernel(x, axis, ddof, epsilon, scale, shift, out)``: ``normalize`` of the 2-D ``x``
    over ``axis`` (1: each row over its columns; 0: each column over its rows), its mean and
    standard deviation computed, with exactly the arithmetic of
    :func:`runtime.kernels.cpu.normalize.normalize_batch` (whose sums follow
    :func:`runtime.kernels.cpu.reductions.fixed_sum`'s order): the ``R`` reduced elements in
    blocks of ``b = ceil(sqrt(R))``, element ``j`` of each block added into partial sum ``j``
    (float64), block after block, then the partial sums in order; the mean that sum / R rounded
    to float32; the variance the same blocked sum of ``float64(float32(x) - mean) ** 2`` over
    ``R - ddof``; the factor ``float64(scale) / sqrt(var + float64(epsilon))`` (0 where
    ``var + epsilon`` is 0) rounded to float32; ``out = (x - mean) * factor + shift`` in
    float32.  ``epsilon``, ``scale``, ``shift`` are float32 values; ``x`` and ``out``
    C-contiguous float32 of one shape."""
    @njit
    def kernel(x, axis, ddof, epsilon, scale, shift, out):
        if axis == 1:
            rows, r = x.shape
        else:
            r, rows = x.shape
        b = 1
        while b * b < r:
            b += 1
        part = np.zeros(b, np.float64)
        eps = np.float64(epsilon)
        sc = np.float64(scale)
        for a in range(rows):
            part[:] = 0.0
            for k0 in range(0, r, b):
                for t in range(min(b, r - k0)):
                    v = x[a, k0 + t] if axis == 1 else x[k0 + t, a]
                    part[t] += np.float64(v)
            total = 0.0
            for j in range(b):
                total += part[j]
            mean = np.float32(total / r)
            part[:] = 0.0
            for k0 in range(0, r, b):
                for t in range(min(b, r - k0)):
                    v = x[a, k0 + t] if axis == 1 else x[k0 + t, a]
                    d = np.float64(v - mean)
                    part[t] += d * d
            total = 0.0
            for j in range(b):
                total += part[j]
            v = total / np.float64(r - ddof) + eps
            f = np.float32(0.0) if v == 0.0 else np.float32(sc / np.sqrt(v))
            for t in range(r):
                if axis == 1:
                    out[a, t] = (x[a, t] - mean) * f + shift
                else:
                    out[t, a] = (x[t, a] - mean) * f + shift
    return kernel


@compiled
def nonsilent_bounds(njit):
    """``kernel(x, window, reset, out, has_ref, ref, factor) -> (first, last)``:
    :func:`moving_mean_square` into ``out``, then :func:`first_last_at_least` of ``out``
    against ``threshold = ref * factor`` (float32), ``ref`` being the given reference power
    when ``has_ref``, else the largest window power: ``nonsilent_region``'s scan in one call
    (one release of the GIL instead of two)."""
    mms = moving_mean_square()
    ends = first_last_at_least()

    @njit
    def kernel(x, window, reset, out, has_ref, ref, factor):
        top = mms(x, window, reset, out)
        r = ref if has_ref else np.float32(top)
        return ends(out, np.float32(r * factor))
    return kernel


@compiled
def speech_frames(njit):
    """``kernel(x, c, border, pre, before, reflect, step, window, buf)``:
    :func:`preemphasis_loop` of ``x`` into ``pre``, then :func:`signal_frames` of ``pre`` into
    ``buf`` (the fused speech front end's steps before its FFT, in one call)."""
    pre_k = preemphasis_loop()
    frames_k = signal_frames()

    @njit
    def kernel(x, c, border, pre, before, reflect, step, window, buf):
        pre_k(x, c, border, pre)
        frames_k(pre, before, reflect, step, window, buf)
    return kernel


@compiled
def speech_features(njit):
    """``kernel(c, magnitude, spec, bins, down, up, w_down, w_up, mel, inv_ref, min_ratio, mul,
    db, axis, ddof, epsilon, scale, shift, out)``: the fused speech front end's steps after its
    FFT in one call: :func:`power_bins` of the spectrum ``c`` into ``spec`` (layout "ft"),
    ``mel`` zeroed and :func:`mel_rows` into it, :func:`decibels` of ``mel`` into ``db``,
    :func:`normalize_rows` of ``db`` into ``out`` (``mel``, ``db``, ``out``: C-contiguous)."""
    power_k = power_bins()
    mel_k = mel_rows()
    db_k = decibels()
    norm_k = normalize_rows()

    @njit
    def kernel(c, magnitude, spec, bins, down, up, w_down, w_up, mel, inv_ref, min_ratio, mul,
               db, axis, ddof, epsilon, scale, shift, out):
        power_k(c, magnitude, True, spec)
        mel[:, :] = np.float32(0.0)
        mel_k(spec, bins, down, up, w_down, w_up, mel)
        db_k(mel.reshape(mel.size), inv_ref, min_ratio, mul, db.reshape(db.size))
        norm_k(db, axis, ddof, epsilon, scale, shift, out)
    return kernel


def warm_up() -> None:
    """Build (or load from the cache) the compiled loops."""
    x = np.zeros(4, np.float32)
    moving_mean_square()(x, 2, 2, np.zeros(3, np.float32))
    dct_rows()(np.zeros((2, 2), np.float32), np.zeros((1, 2), np.float32),
               np.zeros((1, 2), np.float32))
    mel_rows()(np.zeros((2, 2), np.float32), np.arange(2, dtype=np.int64),
               np.array([-1, 0]), np.array([0, -1]), np.ones(2, np.float32),
               np.ones(2, np.float32), np.zeros((1, 2), np.float32))
    c = np.zeros((2, 2), np.complex64)
    power_bins()(c, False, True, np.zeros((2, 2), np.float32))
    signal_frames()(np.zeros(5, np.float32), 1, True, 1, np.ones(2), np.zeros((2, 3), np.float32))
    preemphasis_loop()(np.zeros(3, np.float32), np.float32(0.5), 1, np.zeros(3, np.float32))
    first_last_at_least()(np.zeros(3, np.float32), np.float32(1))
    f = np.float32
    decibels()(np.ones(3, f), f(1), f(1e-8), f(3.0), np.empty(3, f))
    y = np.ones((2, 3), np.float32)
    normalize_rows()(y, 1, 0, np.float32(0), np.float32(1), np.float32(0), np.empty_like(y))
    nonsilent_bounds()(x, 2, 2, np.zeros(3, f), False, f(0), f(1e-6))
    speech_frames()(x, f(0.5), 1, np.zeros(4, f), 1, True, 1, np.ones(2), np.zeros((2, 3), f))
    speech_features()(c, False, np.zeros((2, 2), f), np.arange(2, dtype=np.int64),
                      np.array([-1, 0]), np.array([0, -1]), np.ones(2, f), np.ones(2, f),
                      np.zeros((1, 2), f), f(1), f(1e-8), f(3.0), np.zeros((1, 2), f), 1, 0,
                      f(0), f(1), f(0), np.zeros((1, 2), f))
