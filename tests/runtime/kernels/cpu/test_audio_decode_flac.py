"""16-bit FLAC decoded as int16 and scaled (runtime/kernels/cpu/audio_decode.py
``decode_float``): the same float32 samples as libsndfile's own float read, bit for bit, on
files written by soundfile (full-scale extremes, stereo, odd lengths); other files keep the
float read; the STREAMINFO bit depth read from the header."""
from __future__ import annotations

import io

import numpy as np
import pytest

from runtime.codecs.errors import DecodeError
from runtime.kernels.cpu.audio_decode import decode_float, decode_sample, flac_bits

sf = pytest.importorskip("soundfile")
RNG = np.random.default_rng(5)


def _flac(pcm, rate=16000, subtype="PCM_16", fmt="FLAC"):
    buf = io.BytesIO()
    sf.write(buf, pcm, rate, format=fmt, subtype=subtype)
    return np.frombuffer(buf.getvalue(), np.uint8)


def _libsndfile_float(data):
    frames, rate = sf.read(io.BytesIO(data.tobytes()), dtype="float32", always_2d=True)
    return frames, float(rate)


@pytest.mark.parametrize("channels,frames", [(1, 1), (1, 4097), (2, 1201)])
def test_16_bit_flac_equals_libsndfiles_float_read(channels, frames):
    pcm = RNG.integers(-32768, 32768, (frames, channels)).astype(np.int16)
    pcm[0, 0] = -32768
    pcm[-1, -1] = 32767
    data = _flac(pcm, 22050)
    got, rate = decode_float(data)
    want, want_rate = _libsndfile_float(data)
    assert got.dtype == np.float32 and got.shape == (frames, channels)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    assert rate == want_rate == 22050.0
    # and the independent formula: v / 32768
    np.testing.assert_array_equal(got, pcm.astype(np.float64) / 32768.0)


@pytest.mark.parametrize("fmt,subtype,bits", [("FLAC", "PCM_16", 16), ("FLAC", "PCM_24", 24),
                                              ("FLAC", "PCM_S8", 8), ("WAV", "PCM_16", 0),
                                              ("OGG", "VORBIS", 0)])
def test_flac_bits_reads_streaminfo(fmt, subtype, bits):
    pcm = (np.sin(np.arange(2000) / 7.0) * 0.5).astype(np.float32)
    data = _flac(pcm, 16000, subtype, fmt)
    assert flac_bits(data) == bits
    assert flac_bits(data.tobytes()) == bits
    if fmt == "FLAC":       # every depth: libsndfile's float read, bit for bit
        got, _ = decode_float(data)
        want, _ = _libsndfile_float(data)
        assert np.array_equal(got.view(np.int32), want.view(np.int32))


def test_short_or_foreign_headers_are_not_flac():
    assert flac_bits(b"") == 0 and flac_bits(b"fLaC") == 0
    assert flac_bits(np.frombuffer(b"fLaC" + b"\x01" + bytes(30), np.uint8)) == 0  # not first


def test_resampled_16_bit_flac_equals_the_float_read_path():
    pcm = (RNG.standard_normal(3000) * 5000).astype(np.int16)
    data = _flac(pcm, 22050)
    got, rate = decode_sample(data, do_downmix=True, sample_rate=16000.0)
    want = decode_sample(_flac(pcm.astype(np.float32) / np.float32(32768), 22050, "FLOAT",
                               "WAV"), do_downmix=True, sample_rate=16000.0)[0]
    assert float(rate) == 16000.0
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


def test_corrupt_16_bit_flac_raises_the_decode_error():
    data = _flac(np.zeros(500, np.int16))
    bad = np.concatenate([data[:42], np.full(200, 0xFF, np.uint8)])
    with pytest.raises(DecodeError, match="cannot decode audio"):
        decode_float(bad, sample="'x.flac'")
