"""Audio kernels (runtime/kernels/cpu/audio.py, audio_fft.py) against independent formulas
(numpy / scipy in float64, written differently) and, under ``oracle``, DALI 2.4's CPU
operators."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft

import ndd
from runtime.kernels.cpu import audio, audio_fft

RNG = np.random.default_rng(7)
SIGNALS = [RNG.standard_normal(1001).astype(np.float32), RNG.standard_normal(517).astype(
    np.float32), RNG.standard_normal(64).astype(np.float32)]


def _np(batch, i=0):
    return np.asarray(batch.evaluate().tensors[i])


def _rel(a, b):
    """Largest difference relative to the largest magnitude (float32 outputs of sums)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)


# ----------------------------------------------------------------------- preemphasis
@pytest.mark.parametrize("border,first", [("zero", lambda x, c: x[0]),
                                          ("clamp", lambda x, c: x[0] - c * x[0]),
                                          ("reflect", lambda x, c: x[0] - c * x[1])])
def test_preemphasis_formula(border, first):
    x = SIGNALS[1]
    got = audio.preemphasis(x, 0.9, border)
    x64, c = x.astype(np.float64), float(np.float32(0.9))
    ref = np.concatenate([[first(x64, c)], x64[1:] - c * x64[:-1]])
    # float32: the product and the difference each rounded once (<= 1 ulp of the operands)
    np.testing.assert_allclose(got, ref, rtol=0, atol=2 * np.spacing(np.abs(x).max()))
    assert got.dtype == np.float32


def test_preemphasis_integer_output_rounds_half_away_and_saturates():
    x = np.array([3, 4, 5, -4, 30000, -30000, 30000], np.int16)
    got = audio.preemphasis(x, 0.5, "zero", "int16")
    # 4 - 1.5 = 2.5 -> 3, 5 - 2 = 3, -4 - 2.5 = -6.5 -> -7, 30000 + 2; beyond int16: saturated
    assert got.tolist() == [3, 3, 3, -7, 30002, -32768, 32767]


def test_preemphasis_per_sample_coefficients_through_ndd():
    b = ndd.as_batch(SIGNALS[:2])
    coeff = ndd.as_batch([np.float32(0.5), np.float32(0.1)])
    out = ndd.preemphasis_filter(b, preemph_coeff=coeff, border="zero")
    for i, c in enumerate((0.5, 0.1)):
        np.testing.assert_array_equal(_np(out, i), audio.preemphasis(SIGNALS[i], c, "zero"))


# ------------------------------------------------------------------------ spectrogram
def _stft_reference(x, nfft, wl, step, power, center, reflect):
    """Window by window with a full complex FFT (no strided views, no rfft)."""
    n = len(x)
    x = x.astype(np.float64)
    if center:      # windows centred on 0, step, 2 step, ... up to n (DALI: n // step + 1)
        p = wl // 2
        x = np.pad(x, (p, wl - p), mode="reflect" if reflect else "constant")
        starts = range(0, n + 1, step)
    else:
        starts = range(0, n - wl + 1, step)
    w = np.array([math.sin(math.pi * (t + 0.5) / wl) ** 2 for t in range(wl)])   # = Hann
    cols = []
    for start in starts:
        frame = np.zeros(nfft)
        frame[:wl] = x[start:start + wl] * w
        mag = np.abs(np.fft.fft(frame))[:nfft // 2 + 1]
        cols.append(mag ** power)
    return np.array(cols).T


@pytest.mark.parametrize("kw", [
    dict(nfft=64, window_length=64, window_step=16),
    dict(nfft=128, window_length=50, window_step=7, power=1),
    dict(nfft=64, window_length=33, window_step=8, reflect_padding=False),
    dict(nfft=32, window_length=32, window_step=5, center_windows=False),
])
def test_spectrogram_matches_a_framewise_fft(kw):
    for x in SIGNALS:
        got = audio_fft.spectrogram(x, **kw)
        ref = _stft_reference(x, kw["nfft"], kw["window_length"], kw["window_step"],
                              kw.get("power", 2), kw.get("center_windows", True),
                              kw.get("reflect_padding", True))
        assert got.shape == ref.shape and got.dtype == np.float32
        assert _rel(got, ref) < 1e-6            # float32 rounding of a float64 transform
    tf = audio_fft.spectrogram(SIGNALS[0], layout="tf", **kw)
    np.testing.assert_array_equal(tf, audio_fft.spectrogram(SIGNALS[0], **kw).T)


@pytest.mark.parametrize("n", [1, 2, 5, 33, 64])
@pytest.mark.parametrize("reflect", [True, False])
def test_spectrogram_of_signals_shorter_than_the_padding(n, reflect):
    """Centred windows wider than the signal: the reflection folds back and forth (a 1-sample
    signal repeats), or zeros; int16 and float32 signals."""
    rng = np.random.default_rng(n)
    for x in ((rng.standard_normal(n) * 0.3).astype(np.float32),
              (rng.standard_normal(n) * 3000).astype(np.int16)):
        got = audio_fft.spectrogram(x, nfft=128, window_length=100, window_step=3,
                                    reflect_padding=reflect)
        ref = _stft_reference(x, 128, 100, 3, 2, True, reflect)
        assert got.shape == ref.shape == (65, n // 3 + 1)
        assert _rel(got, ref) < 1e-6


def test_power_spectrum_is_the_rfft_power():
    x = RNG.standard_normal((6, 40)).astype(np.float32)
    got = audio_fft.power_spectrum(x, nfft=50, axis=1)
    ref = np.abs(scipy.fft.fft(np.pad(x.astype(np.float64), ((0, 0), (0, 10))), axis=1))[
        :, :26] ** 2
    assert got.shape == (6, 26) and _rel(got, ref) < 1e-6


# ----------------------------------------------------------------------- mel filters
def _mel_reference(nbins, sr, nfilter, flo, fhi, formula, normalize):
    """Triangles in Hz between mel points (the textbook / librosa construction, float64)."""
    if formula == "htk":
        h2m = lambda f: 2595.0 * math.log10(1 + f / 700.0)            # noqa: E731
        m2h = lambda m: 700.0 * (10 ** (m / 2595.0) - 1)               # noqa: E731
    else:
        step = math.log(6.4) / 27.0
        h2m = lambda f: f / (200 / 3) if f < 1000 else 15 + math.log(f / 1000) / step  # noqa
        m2h = lambda m: m * (200 / 3) if m < 15 else 1000 * math.exp(step * (m - 15))  # noqa
    fhi = fhi or sr / 2
    pts = [m2h(m) for m in np.linspace(h2m(flo), h2m(fhi), nfilter + 2)]
    freqs = np.arange(nbins) * sr / (2 * (nbins - 1))
    w = np.zeros((nfilter, nbins))
    for k in range(nfilter):
        lo, c, hi = pts[k:k + 3]
        w[k] = np.clip(np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)), 0, None)
        w[k][(freqs < flo) | (freqs > fhi)] = 0
        if normalize:
            w[k] *= 2.0 / (hi - lo)
    return w


@pytest.mark.parametrize("kw", [
    dict(nfilter=40, sample_rate=16000.0, mel_formula="htk"),
    dict(nfilter=64, sample_rate=16000.0, freq_low=20.0, freq_high=7000.0, normalize=False),
    dict(nfilter=20, sample_rate=8000.0),
    dict(nfilter=128, sample_rate=44100.0),
])
def test_mel_filter_bank_matches_the_triangle_construction(kw):
    # a generator of its own: the data must not depend on which tests ran before
    spec = np.abs(np.random.default_rng(kw["nfilter"]).standard_normal((129, 23))).astype(np.float32)
    got = audio.mel_filter_bank(spec, "ft", **kw)
    w = _mel_reference(129, kw["sample_rate"], kw["nfilter"], kw.get("freq_low", 0.0),
                       kw.get("freq_high", 0.0), kw.get("mel_formula", "slaney"),
                       kw.get("normalize", True))
    ref = w @ spec.astype(np.float64)
    # float32 weights (DALI's computation) vs float64: measured up to 4.0e-5 of the largest
    # value over 200 random inputs (the 20 Hz - 7 kHz unnormalized bank; the others <= 2.4e-5)
    assert got.shape == ref.shape and _rel(got, ref) < 5e-5
    tf = audio.mel_filter_bank(np.ascontiguousarray(spec.T), "tf", **kw)
    np.testing.assert_array_equal(tf, got.T)


# ------------------------------------------------------------------------ to_decibels
def test_to_decibels_formula():
    s = np.abs(RNG.standard_normal((30, 9))).astype(np.float32)
    s[0, 0] = 0.0
    for mul, ref, cut in ((10.0, 0.0, -200.0), (20.0, 2.0, -30.0), (10.0, 1.0, -3.0)):
        got = audio.to_decibels(s, mul, ref, cut)
        r = ref or float(s.max())
        want = mul * np.log10(np.maximum(10 ** (cut / mul), s.astype(np.float64) / r))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1, abs(cut)))


# ------------------------------------------------------------------------------- mfcc
@pytest.mark.parametrize("dct_type", [1, 2, 3, 4])
@pytest.mark.parametrize("normalize", [False, True])
def test_mfcc_is_scipys_dct(dct_type, normalize):
    if dct_type == 1 and normalize:
        pytest.skip("DALI: no orthonormal DCT-I")
    x = RNG.standard_normal((40, 13)).astype(np.float32)
    got = audio.mfcc(x, n_mfcc=12, dct_type=dct_type, normalize=normalize)
    ref = scipy.fft.dct(x.astype(np.float64), type=dct_type, axis=0,
                        norm="ortho" if normalize else None)[:12]
    if not normalize:
        ref = ref / 2                       # DALI's unnormalized DCTs have no factor 2
    assert got.shape == (12, 13) and _rel(got, ref) < 1e-5


def test_mfcc_lifter_and_axis():
    x = RNG.standard_normal((7, 30)).astype(np.float32)
    got = audio.mfcc(x, n_mfcc=5, axis=1, lifter=22.0)
    ref = scipy.fft.dct(x.astype(np.float64), type=2, axis=1)[:, :5] / 2
    ref *= 1 + 11.0 * np.sin(np.pi * np.arange(1, 6) / 22.0)
    assert got.shape == (7, 5) and _rel(got, ref) < 1e-5
    assert audio.mfcc(x, n_mfcc=100, axis=1).shape == (7, 30)   # at most the input's length


def test_mfcc_errors_name_the_argument():
    x = ndd.as_batch([np.ones((4, 3), np.float32)])
    with pytest.raises(ValueError, match="Unsupported DCT type: 5"):
        ndd.mfcc(x, dct_type=5).evaluate()
    with pytest.raises(ValueError, match="Ortho-normalization is not supported for DCT type I"):
        ndd.mfcc(x, dct_type=1, normalize=True).evaluate()


# -------------------------------------------------------------------- nonsilent_region
def _nonsilent_reference(x, cutoff_db, ref_power, wl):
    x = x.astype(np.float64)
    wl = min(wl, len(x))
    power = np.array([np.mean(x[j:j + wl] ** 2) for j in range(len(x) - wl + 1)])
    thr = (ref_power or power.max()) * 10 ** (cutoff_db / 10)
    loud = np.flatnonzero(power >= thr)
    return (0, 0) if not loud.size else (int(loud[0]), int(loud[-1] + wl - loud[0]))


@pytest.mark.parametrize("wl,cut,ref", [(16, -60.0, 0.0), (1, -20.0, 0.0), (32, -10.0, 0.5),
                                        (5000, -60.0, 0.0)])
def test_nonsilent_region_is_the_union_of_loud_windows(wl, cut, ref):
    x = np.zeros(2000, np.float32)
    x[300:500] = RNG.standard_normal(200)
    x[1200:1210] = 0.01 * RNG.standard_normal(10)
    reset = wl * 4 if wl < 2000 else -1
    assert audio.nonsilent_region(x, cut, ref, wl, reset) == _nonsilent_reference(x, cut, ref,
                                                                                  wl)


def test_nonsilent_region_outputs_and_errors():
    x = np.zeros(100, np.float32)
    x[50] = 1.0
    b = ndd.as_batch([x, np.zeros(10, np.float32)])
    begin, length = ndd.nonsilent_region(b, window_length=4)
    assert _np(begin, 0).dtype == np.int32 and _np(begin, 0).shape == ()
    assert (int(_np(begin, 0)), int(_np(length, 0))) == (47, 7)
    assert (int(_np(begin, 1)), int(_np(length, 1))) == (0, 10)   # silence at reference 0
    with pytest.raises(ValueError, match="shall be a multiple of `window_length`"):
        ndd.nonsilent_region(b, window_length=10)


def test_deferred_equals_eager():
    b = ndd.as_batch(SIGNALS)

    def chain(x):
        x = ndd.preemphasis_filter(x)
        s = ndd.spectrogram(x, nfft=64, window_length=64, window_step=16)
        m = ndd.mel_filter_bank(s, nfilter=20, sample_rate=16000)
        return ndd.mfcc(ndd.to_decibels(m), n_mfcc=10)
    eager = [_np(chain(b), i) for i in range(3)]
    with ndd.EvalMode.deferred:
        out = chain(b)
    for i in range(3):
        np.testing.assert_array_equal(_np(out, i), eager[i])


# ------------------------------------------------------------------------ DALI oracle
ORACLE_CASES = [
    ("preemphasis_filter", dict(preemph_coeff=0.9), 0.0),
    ("preemphasis_filter", dict(border="reflect"), 0.0),
    ("preemphasis_filter", dict(border="zero", dtype="int16"), 0.0),
    ("spectrogram", dict(nfft=64, window_length=64, window_step=16), 1e-6),
    ("spectrogram", dict(nfft=100, window_length=60, window_step=7, center_windows=False,
                         layout="tf", power=1), 1e-6),
    ("spectrogram", dict(nfft=64, window_length=33, window_step=8, reflect_padding=False),
     1e-6),
    ("power_spectrum", dict(nfft=256), 1e-6),
    ("nonsilent_region", dict(window_length=16, reset_interval=64), 0.0),
    ("nonsilent_region", dict(), 0.0),
    ("nonsilent_region", dict(window_length=8, cutoff_db=-3.0), 0.0),
]
SPEC_CASES = [
    ("mel_filter_bank", dict(), 5e-5),              # measured 1.5e-5 (float32 weights)
    ("mel_filter_bank", dict(nfilter=40, sample_rate=16000.0, mel_formula="htk"), 5e-5),
    ("mel_filter_bank", dict(nfilter=64, sample_rate=16000.0, freq_low=20.0,
                             freq_high=7000.0, normalize=False), 5e-5),   # measured 3.1e-5
    ("to_decibels", dict(), 1e-6),
    ("to_decibels", dict(reference=2.0, cutoff_db=-30.0, multiplier=20.0), 1e-6),
    ("mfcc", dict(n_mfcc=13, dct_type=1), 0.0),
    ("mfcc", dict(n_mfcc=13, dct_type=2), 0.0),
    ("mfcc", dict(n_mfcc=13, dct_type=3, normalize=True), 0.0),
    ("mfcc", dict(n_mfcc=13, dct_type=4), 0.0),
    ("mfcc", dict(n_mfcc=20, normalize=True, lifter=22.0), 0.0),
    ("mfcc", dict(axis=1, n_mfcc=5), 0.0),
]


def _compare(op, kw, tol, samples, layout=None):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    kw_d = dict(kw)
    if "dtype" in kw_d:
        kw_d["dtype"] = getattr(dali, kw_d["dtype"])
    kw_n = dict(kw)
    if "dtype" in kw_n:
        kw_n["dtype"] = getattr(ndd, kw_n["dtype"])
    bd = dali.as_batch(samples, layout=layout) if layout else dali.as_batch(samples)
    bn = ndd.as_batch(samples, layout=layout) if layout else ndd.as_batch(samples)
    outs_d, outs_n = getattr(dali, op)(bd, **kw_d), getattr(ndd, op)(bn, **kw_n)
    if not isinstance(outs_d, (tuple, list)):
        outs_d, outs_n = [outs_d], [outs_n]
    for od, on in zip(outs_d, outs_n):
        for i in range(len(samples)):
            a, b = _np(od, i), _np(on, i)
            assert a.shape == b.shape and a.dtype == b.dtype, (op, kw, i)
            if tol == 0:
                np.testing.assert_array_equal(b, a, err_msg=f"{op} {kw} sample {i}")
            else:
                assert _rel(b, a) <= tol, (op, kw, i, _rel(b, a))


@pytest.mark.oracle
@pytest.mark.parametrize("op,kw,tol", ORACLE_CASES)
def test_signal_ops_match_dali(op, kw, tol):
    quiet = np.zeros(3000, np.float32)
    quiet[700:1500] = RNG.standard_normal(800)
    _compare(op, kw, tol, SIGNALS + [quiet])


@pytest.mark.oracle
@pytest.mark.parametrize("op,kw,tol", SPEC_CASES)
def test_spectral_ops_match_dali(op, kw, tol):
    specs = [np.abs(RNG.standard_normal((129, n))).astype(np.float32) for n in (40, 17, 1)]
    _compare(op, kw, tol, specs, layout="ft")
