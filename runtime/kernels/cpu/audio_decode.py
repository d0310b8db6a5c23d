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

__all__ = ["downmix", "decode_sample"]

F32 = np.float32


def downmix(frames: np.ndarray) -> np.ndarray:
    """``(frames, channels)`` float32 -> ``(frames,)``: ``sum_c x[:, c] * (1 / channels)``,
    the channels added in order in float32."""
    w = F32(1.0) / F32(frames.shape[1])
    out = frames[:, 0] * w
    for c in range(1, frames.shape[1]):
        out = out + frames[:, c] * w
    return out


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
    frames, src_rate = decode_audio(data, "float32", sample)
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
