"""CPU kernel of ``decoders.audio`` (schema in :mod:`compiler.ops.audio_io`): libsndfile decode
(:mod:`runtime.codecs.audio`), then DALI 2.4's steps: downmix (float32, channel weights
``1 / channels`` added in order), resampling (:mod:`.audio_resample`), conversion to the output
type (full scale, rounded, saturated)."""
from __future__ import annotations

import numpy as np

from runtime.codecs.audio import audio_channels, decode_audio
from runtime.kernels.registry import register, sample_args
from runtime.storage import sample_name

from .audio_resample import resample, to_full_scale

__all__ = ["downmix", "decode_sample", "decode_float", "flac_bits"]

F32 = np.float32


def downmix(frames: np.ndarray) -> np.ndarray:
    """``(frames, channels)`` float32 -> ``(frames,)``: ``sum_c x[:, c] * (1 / channels)``,
    the channels added in order in float32."""
    w = F32(1.0) / F32(frames.shape[1])
    out = frames[:, 0] * w
    for c in range(1, frames.shape[1]):
        out = out + frames[:, c] * w
    return out


#: libsndfile's float conversion of 16-bit samples: ``v * 2 ** -15`` (a power of two: exact)
_INT16_SCALE = F32(2.0 ** -15)


def flac_bits(data) -> int:
    """Bits per sample of a FLAC file from its STREAMINFO block (which the format puts first,
    right after ``fLaC``), 0 for anything else (not FLAC, a short or odd header)."""
    head = bytes(np.asarray(data[:22], np.uint8)) if isinstance(data, np.ndarray) else \
        bytes(data[:22])
    if len(head) < 22 or head[:4] != b"fLaC" or head[4] & 0x7F != 0:
        return 0
    return (((head[20] & 1) << 4) | (head[21] >> 4)) + 1


def decode_float(data, sample=None) -> tuple[np.ndarray, float]:
    """:func:`runtime.codecs.audio.decode_audio` to float32: ``(frames, channels)`` and the
    rate.  A 16-bit FLAC file is read as int16 and scaled here (libsndfile's own float
    conversion is the same exact ``v * 2 ** -15``, at a fifth more of the decode time); the
    same samples, errors and messages."""
    if flac_bits(data) == 16:
        frames, rate = decode_audio(data, "int16", sample)
        out = frames.astype(F32)
        out *= _INT16_SCALE
        return out, rate
    return decode_audio(data, "float32", sample)


def decode_sample(data, dtype="float32", do_downmix=False, sample_rate=0.0, quality=50.0,
                  sample=None) -> tuple[np.ndarray, np.float32]:
    """One file: ``(samples, rate)`` as ``decoders.audio`` returns them.

    Without resampling, integer outputs are libsndfile's own conversion of the file's samples;
    a mono file's downmix is only the channel axis dropped (as DALI); float processing
    (downmix of several channels, resampling) decodes to float32 and converts at the end.
    """
    dt = np.dtype(dtype)
    rate = float(F32(sample_rate or 0.0))
    if not rate and dt != F32 and not (do_downmix and audio_channels(data, sample) > 1):
        frames, src_rate = decode_audio(data, dt.name, sample)     # libsndfile's conversion
        return (frames[:, 0] if do_downmix else frames), F32(src_rate)
    frames, src_rate = decode_float(data, sample)
    if do_downmix:
        frames = downmix(frames) if frames.shape[1] > 1 else frames[:, 0]
    out_rate = src_rate
    if rate and rate != src_rate:
        frames = resample(frames, src_rate, rate, quality=quality)
        out_rate = rate
    return to_full_scale(frames, dt), F32(out_rate)


@register("decoders.audio", "cpu")
def decode_audio_kernel(ctx, inputs, args):
    """``decoders.audio`` of a batch: [samples], [sampling rates]; errors name the sample."""
    data = inputs[0]
    dtype = ctx.out_metas[0].dtype

    def one(i):
        a = sample_args(ctx, args, i)
        audio, rate = decode_sample(np.asarray(data[i] if len(data) > 1 else data[0]), dtype,
                                    a.get("downmix", False),
                                    float(np.asarray(a.get("sample_rate", 0.0))),
                                    a.get("quality", 50.0), sample_name(data, i))
        return audio, np.array(rate, F32)
    results = ctx.pool.map(one, ctx.batch_size)
    return [[r[0] for r in results], [r[1] for r in results]]
