"""Audio decoding through libsndfile (the ``soundfile`` binding): WAV (PCM 8/16/24/32, float),
FLAC, OGG/Vorbis, Opus and the other formats libsndfile reads; DALI 2.4's CPU audio decoder uses
libsndfile too, so samples are the same.

``soundfile`` is imported on first use (``import ndd`` does not need it).
"""
from __future__ import annotations

import io

import numpy as np

from .errors import DecodeError, sample_prefix

__all__ = ["decode_audio", "audio_channels", "AUDIO_DTYPES"]

#: Output types of :func:`decode_audio` (libsndfile converts to them itself).
AUDIO_DTYPES = ("int16", "int32", "float32")


def _soundfile():
    try:
        import soundfile
    except (ImportError, OSError) as exc:      # OSError: the bundled libsndfile failed to load
        raise RuntimeError(f"decoders.audio needs the 'soundfile' package (libsndfile): "
                           f"pip install soundfile ({exc})") from exc
    return soundfile


def decode_audio(data, dtype="float32", sample=None) -> tuple[np.ndarray, float]:
    """Decode one encoded audio file.

    Parameters
    ----------
    data : bytes-like or numpy.ndarray of uint8
        The whole file.
    dtype : {"int16", "int32", "float32"}
        Output type: floats in [-1, 1] (PCM divided by 2^(bits-1)), integers at full scale.
    sample : str, optional
        How error messages name the sample.

    Returns
    -------
    (numpy.ndarray, float)
        ``(frames, channels)`` samples and the file's sampling rate in Hz.

    Raises
    ------
    DecodeError
        Empty, truncated, corrupt or unsupported data (libsndfile's reason in the message).
    """
    buf = memoryview(np.ascontiguousarray(data, dtype=np.uint8)).tobytes() \
        if not isinstance(data, (bytes, bytearray)) else bytes(data)
    if not buf:
        raise DecodeError(f"{sample_prefix(sample)}empty audio data (0 bytes)")
    sf = _soundfile()
    try:
        frames, rate = sf.read(io.BytesIO(buf), dtype=dtype, always_2d=True)
    except (RuntimeError, ValueError, TypeError, sf.SoundFileError) as exc:
        raise DecodeError(f"{sample_prefix(sample)}cannot decode audio ({len(buf)} bytes): "
                          f"{exc}") from None
    return np.ascontiguousarray(frames), float(rate)


def audio_channels(data, sample=None) -> int:
    """The number of channels of an encoded audio file, from its header only.

    Raises
    ------
    DecodeError
        Data libsndfile cannot open (its reason in the message).
    """
    sf = _soundfile()
    buf = bytes(np.ascontiguousarray(data, dtype=np.uint8)) if not isinstance(
        data, (bytes, bytearray)) else bytes(data)
    try:
        return int(sf.info(io.BytesIO(buf)).channels)
    except (RuntimeError, ValueError, TypeError, sf.SoundFileError) as exc:
        raise DecodeError(f"{sample_prefix(sample)}cannot decode audio ({len(buf)} bytes): "
                          f"{exc}") from None
