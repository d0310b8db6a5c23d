"""Audio and spectral ops: ``preemphasis_filter``, ``spectrogram``, ``power_spectrum``,
``mel_filter_bank``, ``to_decibels``, ``mfcc``, ``nonsilent_region``.

Source: DALI 2.4's operators of the same names (argument names, defaults, layouts, output types
and error cases from its schema and observed on its CPU operators; see docs/semantics.md,
"Audio"). Signals are 1-D (time) samples; spectrograms are 2-D with layout ``"ft"`` (frequency,
time: DALI's default) or ``"tf"``; every output is float32 except ``nonsilent_region``'s two
int32 scalars.
"""
from __future__ import annotations

from compiler.schema import ArgSpec, OpSchema, register

#: Input types DALI's CPU operators accept.
SIGNAL_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
                "float32")


def _check_type(op, m, allowed):
    if m.dtype is not None and m.dtype not in allowed:
        raise TypeError(f"{op}: input type {m.dtype} is not supported; expected one of "
                        f"{', '.join(allowed)}")


def _check_ndim(op, m, ndims, what):
    if m.ndim is not None and m.ndim not in ndims:
        raise ValueError(f"{op}: expected {what}, got a {m.ndim}-D input"
                         + (f" (layout {m.layout!r})" if m.layout else ""))


def _preemphasis_infer(metas, args):
    m = metas[0]
    _check_type("preemphasis_filter", m, SIGNAL_TYPES + ("float64",))
    if args.get("border", "clamp") not in ("zero", "clamp", "reflect"):
        raise ValueError(f"preemphasis_filter: border={args.get('border')!r} is not one of "
                         f"'zero', 'clamp', 'reflect'")
    return [m.with_(dtype=args.get("dtype") or "float32")]


register(OpSchema(
    "preemphasis_filter", ("input",), (
        ArgSpec("preemph_coeff", "float", 0.97, tensor=True,
                doc="Pre-emphasis coefficient ``c``: ``out[t] = in[t] - c * in[t - 1]``."),
        ArgSpec("border", "str", "clamp", choices=("zero", "clamp", "reflect"),
                doc="The value standing for ``in[-1]``: 0 (``zero``), ``in[0]`` (``clamp``) or "
                    "``in[1]`` (``reflect``)."),
        ArgSpec("dtype", "dtype", "float32",
                doc="Output type; integers round half away from zero and saturate."),
    ),
    _preemphasis_infer, public_name="preemphasis_filter",
    doc="Pre-emphasis filter of 1-D signals (along the first axis of each sample), computed in "
        "float32. Source: DALI ``preemphasis_filter``."))


def _spectrogram_infer(metas, args):
    m = metas[0]
    _check_type("spectrogram", m, SIGNAL_TYPES)
    _check_ndim("spectrogram", m, (1,), "a 1-D signal")
    layout = args.get("layout") or "ft"
    if layout not in ("ft", "tf"):
        raise ValueError(f"spectrogram: layout={layout!r} is not 'ft' or 'tf'")
    wl, step = args.get("window_length", 512), args.get("window_step", 256)
    nfft = args.get("nfft")
    if wl < 1 or step < 1:
        raise ValueError(f"spectrogram: window_length ({wl}) and window_step ({step}) must be "
                         f"positive")
    if nfft is not None and nfft < wl:
        raise ValueError(f"spectrogram: nfft ({nfft}) must be at least window_length ({wl})")
    if args.get("power", 2) not in (1, 2):
        raise ValueError(f"spectrogram: power={args.get('power')!r}; expected 1 (magnitude) or "
                         f"2 (power)")
    fn = args.get("window_fn")
    if fn is not None and len(fn) != wl:
        raise ValueError(f"spectrogram: window_fn has {len(fn)} values; expected "
                         f"window_length={wl}")
    return [m.with_(dtype="float32", ndim=2, layout=layout)]


register(OpSchema(
    "spectrogram", ("input",), (
        ArgSpec("nfft", "int", None,
                doc="FFT size (>= window_length; default: window_length). The output has "
                    "``nfft // 2 + 1`` frequency bins."),
        ArgSpec("window_length", "int", 512, doc="Window size in samples."),
        ArgSpec("window_step", "int", 256, doc="Step between window starts, in samples."),
        ArgSpec("window_fn", "float[]", None,
                doc="Window function, ``window_length`` values (default: Hann, "
                    "``0.5 * (1 - cos(2 pi (t + 0.5) / window_length))``)."),
        ArgSpec("power", "int", 2, doc="1: magnitude; 2: power (squared magnitude)."),
        ArgSpec("center_windows", "bool", True,
                doc="Windows centred on ``t * window_step`` (the signal padded by "
                    "``window_length // 2`` on both sides); otherwise they start there."),
        ArgSpec("reflect_padding", "bool", True,
                doc="Centred windows: pad by reflection (without repeating the edge) rather "
                    "than with zeros."),
        ArgSpec("layout", "layout", "ft", doc="Output layout: ``\"ft\"`` or ``\"tf\"``."),
    ),
    _spectrogram_infer, public_name="spectrogram",
    doc="Short-time Fourier transform magnitudes of 1-D signals (float32). Source: DALI "
        "``spectrogram``."))


def _power_spectrum_infer(metas, args):
    m = metas[0]
    _check_type("power_spectrum", m, SIGNAL_TYPES)
    if args.get("power", 2) not in (1, 2):
        raise ValueError(f"power_spectrum: power={args.get('power')!r}; expected 1 or 2")
    if m.ndim is not None:
        axis = args.get("axis", -1)
        if not -m.ndim <= axis < m.ndim:
            raise ValueError(f"power_spectrum: axis {axis} is out of range for a {m.ndim}-D "
                             f"input")
    return [m.with_(dtype="float32")]


register(OpSchema(
    "power_spectrum", ("input",), (
        ArgSpec("nfft", "int", None,
                doc="FFT size (default: the length along ``axis``); the input is cut or "
                    "zero-padded to it; the output has ``nfft // 2 + 1`` bins there."),
        ArgSpec("axis", "int", -1, doc="Axis of the transform (default: the last one)."),
        ArgSpec("power", "int", 2, doc="1: magnitude; 2: power."),
    ),
    _power_spectrum_infer, public_name="power_spectrum",
    doc="Magnitude or power of the real FFT along one axis (float32). Source: DALI "
        "``power_spectrum``."))


def _mel_infer(metas, args):
    m = metas[0]
    _check_type("mel_filter_bank", m, ("float32",))
    if m.ndim is not None and m.ndim < 2:
        raise ValueError(f"mel_filter_bank: expected a spectrogram (at least 2-D), got a "
                         f"{m.ndim}-D input")
    if m.layout and "f" not in m.layout:
        raise ValueError(f"mel_filter_bank: the input layout {m.layout!r} has no frequency "
                         f"axis 'f'")
    if args.get("mel_formula", "slaney") not in ("slaney", "htk"):
        raise ValueError(f"mel_filter_bank: mel_formula={args.get('mel_formula')!r}; expected "
                         f"'slaney' or 'htk'")
    sr = args.get("sample_rate", 44100.0)
    lo, hi = args.get("freq_low", 0.0), args.get("freq_high", 0.0)
    if sr <= 0 or args.get("nfilter", 128) < 1:
        raise ValueError("mel_filter_bank: sample_rate and nfilter must be positive")
    if not 0 <= lo <= sr / 2 or not 0 <= hi <= sr / 2 or (hi and lo >= hi):
        raise ValueError(f"mel_filter_bank: need 0 <= freq_low < freq_high <= sample_rate / 2 "
                         f"(got freq_low={lo}, freq_high={hi or sr / 2}, sample_rate={sr})")
    return [m.with_(dtype="float32")]


register(OpSchema(
    "mel_filter_bank", ("input",), (
        ArgSpec("nfilter", "int", 128, doc="Number of mel filters (output bins)."),
        ArgSpec("sample_rate", "float", 44100.0, doc="Sampling rate of the signal, in Hz."),
        ArgSpec("freq_low", "float", 0.0, doc="Lowest frequency, in Hz."),
        ArgSpec("freq_high", "float", 0.0, doc="Highest frequency, in Hz (0: sample_rate / 2)."),
        ArgSpec("mel_formula", "str", "slaney", choices=("slaney", "htk"),
                doc="Hz <-> mel conversion: Slaney's (linear below 1 kHz, logarithmic above) "
                    "or HTK's ``2595 log10(1 + f / 700)``."),
        ArgSpec("normalize", "bool", True,
                doc="Scale each triangular filter by ``2 / (its width in Hz)`` (constant "
                    "energy per band)."),
    ),
    _mel_infer, public_name="mel_filter_bank",
    doc="Converts a spectrogram (frequency axis ``'f'`` of the layout, default the "
        "second-to-last axis) to mel bins with triangular filters. Source: DALI "
        "``mel_filter_bank``."))


def _decibels_infer(metas, args):
    _check_type("to_decibels", metas[0], ("float32",))
    return [metas[0].with_(dtype="float32")]


register(OpSchema(
    "to_decibels", ("input",), (
        ArgSpec("multiplier", "float", 10.0,
                doc="Decibel multiplier: 10 for power, 20 for magnitude."),
        ArgSpec("reference", "float", 0.0,
                doc="Reference magnitude (0: the maximum of each sample)."),
        ArgSpec("cutoff_db", "float", -200.0,
                doc="Lowest output value, in dB (the ratio is clamped at "
                    "``10 ** (cutoff_db / multiplier)``)."),
    ),
    _decibels_infer, public_name="to_decibels",
    doc="``multiplier * log10(max(min_ratio, x / reference))`` of every element (float32). "
        "Source: DALI ``to_decibels``."))


def _mfcc_infer(metas, args):
    m = metas[0]
    _check_type("mfcc", m, ("float32",))
    dct = args.get("dct_type", 2)
    if dct not in (1, 2, 3, 4):
        raise ValueError(f"Unsupported DCT type: {dct}. Supported types are: 1, 2, 3, 4.")
    if args.get("normalize") and dct == 1:
        raise ValueError("Ortho-normalization is not supported for DCT type I.")
    if args.get("n_mfcc", 20) <= 0:
        raise ValueError("number of MFCCs should be > 0")
    axis = args.get("axis", 0)
    if axis < 0:
        raise ValueError("Provided axis cannot be negative.")
    if m.ndim is not None and axis >= m.ndim:
        raise ValueError(f"mfcc: axis {axis} is out of range for a {m.ndim}-D input")
    return [m.with_(dtype="float32")]


register(OpSchema(
    "mfcc", ("input",), (
        ArgSpec("n_mfcc", "int", 20,
                doc="Number of coefficients (at most the input's length along ``axis``)."),
        ArgSpec("dct_type", "int", 2, doc="DCT type, 1 to 4 (as scipy.fft.dct)."),
        ArgSpec("normalize", "bool", False,
                doc="Orthonormal DCT (not for type 1)."),
        ArgSpec("axis", "int", 0, doc="Axis of the transform (the mel axis)."),
        ArgSpec("lifter", "float", 0.0,
                doc="Cepstral lifter ``L``: coefficient ``k`` is multiplied by "
                    "``1 + L / 2 * sin(pi * (k + 1) / L)`` (0: none)."),
    ),
    _mfcc_infer, public_name="mfcc",
    doc="Mel-frequency cepstral coefficients: a DCT of a (log) mel spectrogram along ``axis`` "
        "(float32). Source: DALI ``mfcc``."))


def _nonsilent_infer(metas, args):
    m = metas[0]
    _check_type("nonsilent_region", m, SIGNAL_TYPES)
    _check_ndim("nonsilent_region", m, (1,), "a 1-D signal")
    wl, reset = args.get("window_length", 2048), args.get("reset_interval", 8192)
    if wl < 1:
        raise ValueError(f"nonsilent_region: window_length must be positive, got {wl}")
    if reset != -1 and reset % wl != 0:
        raise ValueError(f"`reset_interval` shall be a multiple of `window_length`. Got: "
                         f"reset_interval: {reset} vs window_length: {wl}")
    scalar = m.with_(dtype="int32", ndim=0, layout="")
    return [scalar, scalar]


register(OpSchema(
    "nonsilent_region", ("input",), (
        ArgSpec("cutoff_db", "float", -60.0, tensor=True,
                doc="Threshold in dB: a window whose mean power is below "
                    "``reference_power * 10 ** (cutoff_db / 10)`` is silent."),
        ArgSpec("reference_power", "float", 0.0, tensor=True,
                doc="Reference power (0: the maximum mean power of the sample's windows)."),
        ArgSpec("window_length", "int", 2048, tensor=True,
                doc="Length of the moving window, in samples."),
        ArgSpec("reset_interval", "int", 8192, tensor=True,
                doc="Recompute the moving sum every this many windows (float inputs; a "
                    "multiple of window_length; -1: never)."),
    ),
    _nonsilent_infer, public_name="nonsilent_region",
    doc="Begin and length (int32 scalars) of the part of a 1-D signal between its first and "
        "last non-silent window (the union of those windows). Source: DALI "
        "``nonsilent_region``."))


# ------------------------------------------------------------------------ fused (compiler)
def _fused_audio_infer(metas, args):
    raise ValueError("fused.audio is created by the compiler's fuse pass and cannot be called")


register(OpSchema(
    "fused.audio", ("input",), (
        ArgSpec("stages", "any", None,
                doc="The original ops in order: compiler.ir.Stage records named "
                    "'<op>#<position>': optionally a first 'nonsilent_region' (its begin and "
                    "length the next slice's window; the node's one input is the signal), "
                    "optionally a 'slice' (the window, read in "
                    "place; '_inputs': its number of regular inputs, first among the node's), "
                    "then preemphasis_filter, spectrogram, mel_filter_bank, to_decibels, mfcc, "
                    "last possibly normalize; each with its input layout ('_layout') and "
                    "output dtype ('_out')."),
    ), _fused_audio_infer, traits=frozenset({"fused"}), variadic=True, min_inputs=1,
    doc="The audio front end in one pass per sample (compiler/fusion_rules_audio.py): each "
        "stage is the unfused op's own per-sample function, run on one signal after the "
        "other without batch intermediates; the slice window is a view. Bit-identical with "
        "the unfused chain."))
