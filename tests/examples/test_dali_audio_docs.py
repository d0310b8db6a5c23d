"""DALI's own audio examples, held out: the op sequences and arguments of the dynamic-mode
notebooks of DALI's documentation run on ndd as written for DALI (only the data paths differ)
and agree with DALI 2.4.

* "Audio Decoder in DALI" (docs/examples/audio_processing/audio_decoder/dynamic_mode.ipynb):
  ``readers.File(file_root=...)``, one sample from ``reader()``, ``decoders.audio(encoded,
  dtype=int16)``, the sampling rate and the interleaved samples flattened.
* "Audio spectrogram" (docs/examples/audio_processing/spectrogram/dynamic_mode.ipynb): a
  power spectrogram with ``nfft = window_length = 2048`` and ``window_step = 512`` of a loaded
  signal, ``to_decibels(multiplier=10, cutoff_db=-80)`` (0 dB at the maximum), a 128-filter mel
  spectrogram up to 8 kHz in decibels, and 40 orthonormal type-2 MFCCs of it.

The examples load their signal with librosa from DALI_extra; here it is a speech-like WAV file
written by the test (soundfile reads it back as the notebook's ``y``), in a ``file_root`` with
one class folder as the decoder example expects.  The same function runs on both libraries
(``api`` is ``ndd`` or ``nvidia.dali.experimental.dynamic``).  DALI's FFT differs from ndd's
in the last float32 bits (docs/semantics.md, "Audio"), so spectral values are compared relative
to each output's largest magnitude.
"""
import numpy as np
import pytest

import ndd

sf = pytest.importorskip("soundfile")
RATE = 22050


def _speech_like(n, seed):
    """A voiced sound (harmonics of a gliding pitch under a syllable envelope) with noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / RATE
    f0 = 120 + 40 * np.sin(2 * np.pi * 1.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = np.clip(np.sin(2 * np.pi * 2.2 * t), 0, None) ** 2
    return 0.2 * voiced * envelope + 0.003 * rng.standard_normal(n)


@pytest.fixture(scope="module")
def audio_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("audio")
    (root / "speech").mkdir()
    for i, n in enumerate((RATE + 1001, 2 * RATE - 333)):
        x = _speech_like(n, i)
        sf.write(root / "speech" / f"utt{i}.wav", (x * 32767).astype(np.int16), RATE,
                 subtype="PCM_16")
    return root


def audio_decoder_example(api, audio_files):
    """The decoder notebook's steps: (sampling rate, samples as decoded, flattened)."""
    reader = api.readers.File(file_root=audio_files)
    encoded, _ = reader()
    audio, sr = api.decoders.audio(encoded, dtype=api.int16)
    data = np.asarray(audio)
    return float(np.asarray(sr)), data, data.flatten()


def spectrogram_example(api, y, sr):
    """The spectrogram notebook's DALI steps on the signal ``y`` at rate ``sr``."""
    n_fft = 2048
    hop_length = 512
    spectrogram = api.spectrogram(api.as_tensor(y), nfft=n_fft, window_length=n_fft,
                                  window_step=hop_length)
    spectrogram_db = api.to_decibels(spectrogram, multiplier=10.0, cutoff_db=-80)
    mel_spectrogram = api.mel_filter_bank(spectrogram, sample_rate=sr, nfilter=128,
                                          freq_high=8000.0)
    mel_spectrogram_db = api.to_decibels(mel_spectrogram, multiplier=10.0, cutoff_db=-80)
    mfccs = api.mfcc(mel_spectrogram_db, n_mfcc=40, dct_type=2, normalize=True)
    return {"spectrogram": spectrogram, "spectrogram_db": spectrogram_db,
            "mel": mel_spectrogram, "mel_db": mel_spectrogram_db, "mfcc": mfccs}


def test_audio_decoder_example_runs_on_ndd(audio_root):
    sr, data, flat = audio_decoder_example(ndd, audio_root)
    want, rate = sf.read(sorted((audio_root / "speech").iterdir())[0], dtype="int16",
                         always_2d=True)
    assert sr == rate == RATE
    assert data.dtype == np.int16 and data.shape == want.shape       # (samples, 1)
    np.testing.assert_array_equal(data, want)
    assert flat.shape == (want.shape[0],)


def test_spectrogram_example_runs_on_ndd(audio_root):
    y, sr = sf.read(audio_root / "speech" / "utt1.wav", dtype="float32")
    out = {k: np.asarray(v) for k, v in spectrogram_example(ndd, y, float(sr)).items()}
    frames = y.size // 512 + 1
    assert out["spectrogram"].shape == (1025, frames)
    assert out["mel"].shape == out["mel_db"].shape == (128, frames)
    assert out["mfcc"].shape == (40, frames)
    # 0 dB at the maximum, nothing below the cutoff (as librosa's power_to_db(ref=np.max))
    for k in ("spectrogram_db", "mel_db"):
        assert out[k].max() == pytest.approx(0.0, abs=1e-4) and out[k].min() >= -80.0
    # the spectrogram is |STFT|^2 with DALI's Hann window over centred frames,
    # reflect-padded: frame 3 from numpy's FFT in float64
    pad = np.pad(y.astype(np.float64), 1024, mode="reflect")
    w = 0.5 * (1 - np.cos(2 * np.pi * (np.arange(2048) + 0.5) / 2048))
    ref = np.abs(np.fft.rfft(pad[3 * 512:3 * 512 + 2048] * w)) ** 2
    np.testing.assert_allclose(out["spectrogram"][:, 3], ref, rtol=0,
                               atol=1e-5 * ref.max())


@pytest.mark.oracle
def test_audio_decoder_example_matches_dali(audio_root):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    sr_d, data_d, flat_d = audio_decoder_example(dali, audio_root)
    sr_n, data_n, flat_n = audio_decoder_example(ndd, audio_root)
    assert sr_d == sr_n
    assert data_d.dtype == data_n.dtype and data_d.shape == data_n.shape
    np.testing.assert_array_equal(data_n, data_d)
    np.testing.assert_array_equal(flat_n, flat_d)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["utt0.wav", "utt1.wav"])
def test_spectrogram_example_matches_dali(audio_root, name):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    y, sr = sf.read(audio_root / "speech" / name, dtype="float32")
    got = spectrogram_example(ndd, y, float(sr))
    want = spectrogram_example(dali, y, float(sr))
    for key in got:
        g, w = np.asarray(got[key]), np.asarray(want[key])
        assert g.shape == w.shape and g.dtype == w.dtype == np.float32, key
        scale = float(np.abs(w).max())
        # 1e-4 of the output's range (the decibel outputs span 80 dB: 8e-3 dB)
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-4 * scale, err_msg=key)
