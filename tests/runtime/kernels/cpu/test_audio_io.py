"""decoders.audio (runtime/codecs/audio.py, runtime/kernels/cpu/audio_decode.py) and
audio_resample (runtime/kernels/cpu/audio_resample.py): against files written independently
(a WAV header packed here; soundfile for FLAC / OGG), analytic sines, and DALI 2.4 (oracle)."""
from __future__ import annotations

import io
import struct

import numpy as np
import pytest

import ndd
from runtime.codecs.errors import DecodeError
from runtime.kernels.cpu.audio_resample import lobes_for_quality, resample

sf = pytest.importorskip("soundfile")
RNG = np.random.default_rng(11)
PCM = (RNG.standard_normal((1200, 2)) * 6000).astype(np.int16)


def _wav_bytes(pcm: np.ndarray, rate: int) -> np.ndarray:
    """A canonical 16-bit PCM WAV file, packed by hand (RIFF / fmt / data chunks)."""
    frames, channels = pcm.shape
    data = pcm.astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * channels * 2, channels * 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + \
        struct.pack("<I", len(data)) + data
    return np.frombuffer(b"RIFF" + struct.pack("<I", len(body)) + body, np.uint8)


def _encoded(pcm, rate, fmt, subtype):
    buf = io.BytesIO()
    sf.write(buf, pcm, rate, format=fmt, subtype=subtype)
    return np.frombuffer(buf.getvalue(), np.uint8)


def _np(b, i=0):
    return np.asarray(b.evaluate().tensors[i])


def test_wav_decodes_to_the_packed_samples():
    files = ndd.as_batch([_wav_bytes(PCM, 16000), _wav_bytes(PCM[:300, :1], 8000)])
    audio, rate = ndd.decoders.audio(files)
    np.testing.assert_array_equal(_np(audio, 0), PCM / np.float32(32768))
    assert _np(audio, 1).shape == (300, 1) and _np(audio, 0).dtype == np.float32
    assert float(_np(rate, 0)) == 16000.0 and float(_np(rate, 1)) == 8000.0
    assert _np(rate, 0).dtype == np.float32 and _np(rate, 0).shape == ()
    a16, _ = ndd.decoders.audio(files, dtype=ndd.int16)
    np.testing.assert_array_equal(_np(a16, 0), PCM)


def test_downmix_averages_the_channels_in_float32():
    pcm = np.concatenate([PCM, PCM[:, :1] // 3], axis=1)          # 3 channels
    audio, _ = ndd.decoders.audio(ndd.as_batch([_wav_bytes(pcm, 16000)]), downmix=True)
    x = pcm.astype(np.float64) / 32768
    got = _np(audio)
    assert got.shape == (1200,)
    np.testing.assert_allclose(got, x.mean(axis=1), rtol=0, atol=2e-7)   # float32 sums


@pytest.mark.parametrize("fmt,subtype,tol", [("FLAC", "PCM_16", 0.0), ("WAV", "PCM_24", 0.0),
                                             ("WAV", "FLOAT", 0.0), ("OGG", "VORBIS", 0.05)])
def test_other_formats(fmt, subtype, tol):
    t = np.arange(1200)[:, None] / 22050.0
    tones = (6000 * np.sin(2 * np.pi * np.array([[220.0, 330.0]]) * t)).astype(np.int16)
    pcm = PCM if tol == 0 else tones            # a lossy codec keeps tones, not white noise
    f = _encoded(pcm if subtype.startswith("PCM") else pcm / np.float32(32768), 22050, fmt,
                 subtype)
    audio, rate = ndd.decoders.audio(ndd.as_batch([f]))
    got, want = _np(audio), pcm / 32768.0
    assert got.shape == want.shape and float(_np(rate)) == 22050.0
    if tol == 0:
        np.testing.assert_array_equal(got, want.astype(np.float32))
    else:                       # lossy: close to the original signal, not equal
        assert np.sqrt(np.mean((got - want) ** 2)) < tol


def test_resampling_keeps_a_low_frequency_sine():
    t = np.arange(4800) / 48000.0
    sine = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    for in_rate, out_rate in ((48000, 16000), (48000, 44100), (48000, 96000)):
        got = resample(sine, in_rate, out_rate)
        n = int(np.ceil(4800 * out_rate / in_rate))
        want = 0.5 * np.sin(2 * np.pi * 440 * np.arange(n) / out_rate)
        assert got.shape == (n,)
        inner = slice(n // 10, -n // 10)            # away from the edges (taps cut off there)
        assert np.abs(got[inner] - want[inner]).max() < 2e-3, (in_rate, out_rate)


def test_decoder_resamples_to_sample_rate_per_sample():
    t = np.arange(8000) / 16000.0
    pcm = (8000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16)[:, None]
    files = ndd.as_batch([_wav_bytes(pcm, 16000)] * 2)
    audio, rate = ndd.decoders.audio(files, sample_rate=ndd.as_batch(
        [np.float32(8000), np.float32(16000)]), downmix=True)
    assert _np(audio, 0).shape == (4000,) and _np(audio, 1).shape == (8000,)
    assert float(_np(rate, 0)) == 8000.0 and float(_np(rate, 1)) == 16000.0
    np.testing.assert_allclose(_np(audio, 0), resample(pcm[:, 0] / np.float32(32768), 16000,
                                                        8000), rtol=0, atol=0)


def test_quality_sets_the_lobes_and_errors():
    assert lobes_for_quality(50) == 16 and lobes_for_quality(10) == 3
    x = ndd.as_batch([np.zeros(10, np.float32)])
    with pytest.raises(ValueError, match="give `scale`"):
        ndd.audio_resample(x).evaluate()
    with pytest.raises(ValueError, match="cannot be combined"):
        ndd.audio_resample(x, scale=2.0, in_rate=1.0, out_rate=2.0).evaluate()
    out = ndd.audio_resample(x, out_length=7)
    assert _np(out).shape == (7,)


def test_corrupt_audio_names_the_sample():
    bad = np.frombuffer(b"RIFF\x10\x00\x00\x00WAVEjunkjunk", np.uint8)
    with pytest.raises(DecodeError, match=r"sample 1.*cannot decode audio"):
        ndd.decoders.audio(ndd.as_batch([_wav_bytes(PCM, 8000), bad]))[0].evaluate()
    with pytest.raises(RuntimeError):                 # DALI code catches RuntimeError
        ndd.decoders.audio(ndd.as_batch([np.zeros(0, np.uint8)]))[0].evaluate()


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(dtype="int16"), dict(downmix=True),
                                dict(dtype="int16", downmix=True),
                                dict(sample_rate=8000.0), dict(sample_rate=11025.0, quality=80.0),
                                dict(sample_rate=8000.0, downmix=True, dtype="int16")])
def test_decoder_matches_dali(kw):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    files = [_wav_bytes(PCM, 16000), _encoded(PCM[:700], 22050, "FLAC", "PCM_16"),
             _wav_bytes(PCM[:500, :1], 16000)]
    kd, kn = dict(kw), dict(kw)
    if "dtype" in kw:
        kd["dtype"], kn["dtype"] = getattr(dali, kw["dtype"]), getattr(ndd, kw["dtype"])
    ad, rd = dali.decoders.audio(dali.as_batch(files), **kd)
    an, rn = ndd.decoders.audio(ndd.as_batch(files), **kn)
    for i in range(len(files)):
        a, b = _np(ad, i), _np(an, i)
        assert a.shape == b.shape and a.dtype == b.dtype
        if "sample_rate" in kw:
            # resampled: DALI's window weights differ in the last bits (measured <= 5e-7)
            np.testing.assert_allclose(b, a, rtol=0, atol=1 if a.dtype.kind == "i" else 1e-6)
        else:
            np.testing.assert_array_equal(b, a)
        assert float(_np(rd, i)) == float(_np(rn, i))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(scale=0.5), dict(scale=1.37), dict(in_rate=22050.0,
                                out_rate=16000.0), dict(in_rate=16000.0, out_rate=16000.0),
                                dict(scale=0.5, quality=10.0), dict(scale=2.0, quality=100.0),
                                dict(out_length=333)])
def test_audio_resample_matches_dali(kw):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    x = RNG.standard_normal(3000).astype(np.float32)
    samples = [x, RNG.standard_normal((1000, 2)).astype(np.float32), (x * 8000).astype(np.int16)]
    for s in samples:
        a = _np(dali.audio_resample(dali.as_batch([s]), **kw))
        b = _np(ndd.audio_resample(ndd.as_batch([s]), **kw))
        assert a.shape == b.shape and a.dtype == b.dtype
        # integer and half-integer positions: bit-exact; other ratios: measured <= 4.8e-7
        # (float32 ulps of the window weights), int16 within 1
        np.testing.assert_allclose(b, a, rtol=0, atol=1 if a.dtype.kind == "i" else 1e-6)


@pytest.mark.parametrize("subtype", ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT"])
@pytest.mark.parametrize("channels", [1, 2])
def test_wav_read_without_libsndfile_equals_libsndfile(subtype, channels):
    """Plain PCM WAV files are read by the standard library's wave module and converted in
    numpy (runtime/codecs/audio.py): the same samples libsndfile gives, for every width."""
    from runtime.codecs.audio import decode_audio
    x = np.clip(RNG.standard_normal((301, channels)) * 0.4, -1, 1)
    x[:4, 0] = [-1.0, 1.0 - 2 ** -15, 0.0, -2 ** -20]       # full scale and tiny values
    data = _encoded(x, 16000, "WAV", subtype)
    for dtype in ("float32", "int16", "int32"):
        got, rate = decode_audio(data, dtype)
        want, _ = sf.read(io.BytesIO(data.tobytes()), dtype=dtype, always_2d=True)
        assert got.dtype == want.dtype and got.shape == want.shape == (301, channels)
        np.testing.assert_array_equal(got, want)
        assert rate == 16000.0


def test_wav_with_extra_chunks_and_a_truncated_data_chunk():
    from runtime.codecs.audio import decode_audio
    pcm = PCM[:100]
    data = _wav_bytes(pcm, 8000).tobytes()
    # a LIST chunk between fmt and data: skipped as libsndfile skips it
    at = data.index(b"data")
    listed = data[:at] + b"LIST" + struct.pack("<I", 6) + b"INFOab" + data[at:]
    listed = listed[:4] + struct.pack("<I", len(listed) - 8) + listed[8:]
    got, _ = decode_audio(np.frombuffer(listed, np.uint8))
    np.testing.assert_array_equal(got, pcm / np.float32(32768))
    # the data chunk cut in the middle of a frame: libsndfile's reading of it
    cut = data[:-3]
    got, _ = decode_audio(np.frombuffer(cut, np.uint8))
    want, _ = sf.read(io.BytesIO(cut), dtype="float32", always_2d=True)
    np.testing.assert_array_equal(got, want)
