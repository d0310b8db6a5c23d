"""Audio decoding through libsndfile (the ``soundfile`` binding): WAV (PCM 8/16/24/32, float),
FLAC, OGG/Vorbis, Opus and the other formats libsndfile reads; DALI 2.4's CPU audio decoder uses
libsndfile too, so samples are the same.

``soundfile`` is imported on first use (``import ndd`` does not need it).
"""
from __future__ import annotations

import io
import os
import threading
import wave

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
    fast = _pcm_wav(buf, dtype) if buf[:4] == b"RIFF" and buf[8:12] == b"WAVE" else None
    if fast is not None:
        return fast
    sf = _soundfile()
    errors = (RuntimeError, ValueError, TypeError, sf.SoundFileError)
    memory = _memory_file()
    if memory is not None:
        try:
            frames, rate = memory.read(sf, buf, dtype)
            return np.ascontiguousarray(frames), float(rate)
        except errors:
            pass    # the error as read from a BytesIO (its message), below
    try:
        frames, rate = sf.read(io.BytesIO(buf), dtype=dtype, always_2d=True)
    except errors as exc:
        raise DecodeError(f"{sample_prefix(sample)}cannot decode audio ({len(buf)} bytes): "
                          f"{exc}") from None
    return np.ascontiguousarray(frames), float(rate)


class _MemoryFile:
    """A thread's in-memory file (``memfd``) that libsndfile reads by its descriptor: its own
    reads, without the Python callbacks (each taking the GIL, ~44 a FLAC file) of reading a
    ``BytesIO``; the same decoder, so the same samples.  Rewritten for every file (the
    pages stay between files); closed when the thread ends."""

    def __init__(self):
        self.fd = os.memfd_create("ndd-audio", getattr(os, "MFD_CLOEXEC", 0))
        self.pid = os.getpid()

    def read(self, sf, buf: bytes, dtype: str):
        view, at = memoryview(buf), 0
        while at < len(view):
            at += os.pwrite(self.fd, view[at:], at)
        os.ftruncate(self.fd, len(buf))
        os.lseek(self.fd, 0, os.SEEK_SET)
        return sf.read(self.fd, dtype=dtype, always_2d=True, closefd=False)

    def __del__(self):
        fd, self.fd = self.fd, -1
        if fd >= 0 and self.pid == os.getpid():
            os.close(fd)


_local = threading.local()


def _memory_file():
    """This thread's :class:`_MemoryFile` (a new one in a forked child: the parent's is shared
    with it), or None where ``memfd_create`` is not available."""
    mem = getattr(_local, "memory", None)
    if mem is None or mem.pid != os.getpid():
        if not hasattr(os, "memfd_create"):
            return None
        try:
            mem = _MemoryFile()
        except OSError:
            return None
        _local.memory = mem
    return mem


#: libsndfile's float conversion of integer PCM: ``float(v) * 2 ** -(bits - 1)`` (8-bit WAV
#: is unsigned: ``v - 128``); a power of two, so numpy's conversion gives the same floats
_PCM_SCALE = {1: np.float32(2.0 ** -7), 2: np.float32(2.0 ** -15), 3: np.float32(2.0 ** -23),
              4: np.float32(2.0 ** -31)}


def _pcm_wav(buf: bytes, dtype: str):
    """``(frames, rate)`` of a plain integer-PCM WAV file read with the standard library's
    ``wave`` (its RIFF chunk parsing) and converted as libsndfile converts (float32 output, or
    int16 from 16-bit files: the samples as they are); None for anything else (float or
    extensible WAV, other output types, a truncated data chunk), which libsndfile reads.
    libsndfile's per-call overhead is several times the decode of a short PCM file."""
    if dtype not in ("float32", "int16"):
        return None
    try:
        with wave.open(io.BytesIO(buf)) as w:
            width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
            count = w.getnframes()
            raw = w.readframes(count)
    except Exception:  # noqa: BLE001 - what wave cannot read, libsndfile reads (or explains)
        return None
    if width not in _PCM_SCALE or channels < 1 or len(raw) != count * width * channels \
            or (dtype == "int16" and width != 2):
        return None
    if width == 1:
        v = np.frombuffer(raw, np.uint8).astype(np.int16) - np.int16(128)
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        v = (b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)) << 8 >> 8      # sign-extended
    else:
        v = np.frombuffer(raw, "<i2" if width == 2 else "<i4")
    if dtype == "int16":
        return v.astype(np.int16).reshape(count, channels), float(rate)
    out = v.astype(np.float32)
    out *= _PCM_SCALE[width]
    return out.reshape(count, channels), float(rate)


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
