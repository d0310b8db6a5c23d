"""``decoders.audio`` and ``audio_resample``.

Source: DALI 2.4's ``decoders.audio`` and ``audio_resample`` (argument names, defaults, output
layouts and types observed on its CPU operators; see docs/semantics.md, "Audio").
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register

from .audio import SIGNAL_TYPES

AUDIO_OUTPUT_TYPES = ("int16", "int32", "float32")


def _decode_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype != "uint8":
        raise TypeError(f"decoders.audio: expected encoded files as uint8 samples, got "
                        f"{m.dtype}")
    dtype = args.get("dtype") or "float32"
    if dtype not in AUDIO_OUTPUT_TYPES:
        raise ValueError(f"decoders.audio: dtype={dtype!r} is not supported; expected one of "
                         f"{', '.join(AUDIO_OUTPUT_TYPES)}")
    audio = m.with_(dtype=dtype, ndim=1 if args.get("downmix") else 2, layout="")
    return [audio, m.with_(dtype="float32", ndim=0, layout="")]


register(OpSchema(
    "decoders.audio", ("input",), (
        ArgSpec("dtype", "dtype", "float32",
                doc="Output type: float32 in [-1, 1], or int16 / int32 at full scale."),
        ArgSpec("downmix", "bool", False,
                doc="Average the channels into one: the output is 1-D (time)."),
        ArgSpec("sample_rate", "float", 0.0, tensor=True,
                doc="Resample to this rate, in Hz (0: keep the file's rate)."),
        ArgSpec("quality", "float", 50.0,
                doc="Resampling quality, 0-100 (the number of sinc lobes grows with it)."),
    ),
    _decode_infer, public_name="decoders.audio",
    doc="Decodes audio files (WAV, FLAC, OGG/Vorbis... through libsndfile). Outputs the "
        "samples, ``(time, channels)`` (``(time,)`` with ``downmix``), and the sampling rate "
        "as a float32 scalar. Source: DALI ``decoders.audio``."))


def _resample_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in SIGNAL_TYPES:
        raise TypeError(f"audio_resample: input type {m.dtype} is not supported")
    if m.ndim is not None and m.ndim not in (1, 2):
        raise ValueError(f"audio_resample: expected (time,) or (time, channels) samples, got "
                         f"a {m.ndim}-D input")
    return [m.with_(dtype=args.get("dtype") or m.dtype)]


register(OpSchema(
    "audio_resample", ("input",), (
        ArgSpec("in_rate", "float", None, tensor=True,
                doc="Input sampling rate (with ``out_rate``; exclusive with ``scale``)."),
        ArgSpec("out_rate", "float", None, tensor=True, doc="Output sampling rate."),
        ArgSpec("scale", "float", None, tensor=True,
                doc="Output rate / input rate (exclusive with the rates)."),
        ArgSpec("out_length", "int", None, tensor=True,
                doc="Output length in samples (default: ceil(length * out / in))."),
        ArgSpec("quality", "float", 50.0, doc="Resampling quality, 0-100."),
        ArgSpec("dtype", "dtype", None,
                doc="Output type (default: the input's); integers are treated as [-1, 1] "
                    "at full scale."),
    ),
    _resample_infer, public_name="audio_resample",
    doc="Resamples 1-D or (time, channels) signals with a windowed-sinc filter. Source: DALI "
        "``audio_resample``."))
