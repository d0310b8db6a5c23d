"""CPU kernel of ``fused.audio``: the audio front end in one pass per sample (the compiler's
``fuse`` pass creates it, rules in ``compiler/fusion_rules_audio.py``).

The stages are the original ops (``compiler.ir.Stage`` records): an optional first ``slice``
whose window is taken as a view of the signal (``out_of_bounds_policy`` "error" or
"trim_to_shape", no type change: the same samples the slice kernel copies), then
``preemphasis_filter``, ``spectrogram``, ``mel_filter_bank``, ``to_decibels``, ``mfcc`` and a
last per-sample ``normalize``.  Each stage calls the per-sample function the unfused op's
kernel calls, with the same arguments (a per-sample argument resolved the same way), so every
sample's result is bit-identical with the unfused chain; what goes away is the batch of every
intermediate and one dispatch (a pool barrier) per op.  One pool task per sample runs the
whole chain, so a sample's intermediates stay in its thread's cache; the large ones (the
filtered signal, the spectrogram) are written into per-thread scratch arrays that the next
stage only reads (no fresh pages per sample).
"""
from __future__ import annotations

import numpy as np

from compiler.ops.reductions import normalize_axes
from runtime.kernels.params.nd_slice import slice_window
from runtime.kernels.registry import register, sample_arg

import math

from .audio import (PREEMPHASIS_BORDERS, mel_filter_bank_sample, mel_weights, mfcc_sample,
                    nonsilent_region, preemphasis_sample, to_decibels_sample)
from .audio_fft import hann_window, rfft_rows, spectrogram_sample
from .audio_jit import normalize_rows, scratch, speech_features, speech_frames
from .normalize import normalize_batch
from .slicing import slice_data

__all__ = ["fused_audio", "SAMPLE_FUNCTIONS", "SPEECH_CHAIN", "SpeechPlan"]


def _normalize_sample(x, a, layout, dtype):
    """``normalize`` (``batch=False``) of one sample: :func:`normalize_batch` on that sample
    alone, as the unfused kernel computes each sample (its reductions are per sample); a
    float32 spectrogram normalized over one axis with computed mean and stddev (the speech
    front end's per-feature normalization) in one compiled pass with the same arithmetic
    (:func:`.audio_jit.normalize_rows`)."""
    x = np.asarray(x)
    if (x.ndim == 2 and x.dtype == np.float32 and a.get("mean") is None
            and a.get("stddev") is None and np.dtype(dtype or "float32") == np.float32):
        red = normalize_axes(2, layout or "", a.get("axes"), a.get("axis_names"))
        ddof = int(a.get("ddof") or 0)
        if red in ([0], [1]) and x.shape[red[0]] - ddof > 0:
            out = np.empty(x.shape, np.float32)
            normalize_rows()(np.ascontiguousarray(x), red[0], ddof,
                             np.float32(a.get("epsilon") or 0.0),
                             np.float32(1.0 if a.get("scale") is None else a["scale"]),
                             np.float32(a.get("shift") or 0.0), out)
            return out
    return normalize_batch(
        [np.asarray(x)], layout or "", axes=a.get("axes"), axis_names=a.get("axis_names"),
        batch=False, ddof=int(a.get("ddof") or 0), dtype=dtype or "float32",
        epsilon=a.get("epsilon") or 0.0,
        mean=None if a.get("mean") is None else [a["mean"]],
        scale=1.0 if a.get("scale") is None else a["scale"], shift=a.get("shift") or 0.0,
        stddev=None if a.get("stddev") is None else [a["stddev"]])[0]


#: ``op -> fn(sample, args, input layout, output dtype)``: the per-sample functions of the ops
#: a ``fused.audio`` node chains (the unfused kernels call the same ones).
SAMPLE_FUNCTIONS = {
    "preemphasis_filter": preemphasis_sample,
    "spectrogram": spectrogram_sample,
    "mel_filter_bank": mel_filter_bank_sample,
    "to_decibels": to_decibels_sample,
    "mfcc": mfcc_sample,
    "normalize": _normalize_sample,
}


#: ops whose per-sample function can put its result in a per-thread scratch array
#: (``out_key``): the big intermediates (a signal, a spectrogram), never a node's output
_INTO_SCRATCH = ("preemphasis_filter", "spectrogram")


def _sample_args(stage, static, kernel_args, i):
    """A stage's arguments for sample ``i``: its constant ones (``static``, shared by every
    sample when it has no per-sample ones) and its per-sample ones resolved as the unfused
    kernel resolves them (:func:`runtime.kernels.registry.sample_arg`)."""
    if not stage.tensor_args:
        return static
    a = dict(static)
    for arg, key in stage.tensor_args:
        a[arg] = sample_arg(kernel_args[key][i])
    return a


def _window(x, a, ins):
    """The ``slice`` window of one signal as a view (the values the slice kernel copies);
    a window out of bounds with policy "error" raises the slice's own error."""
    x = np.asarray(x)
    anchor = np.asarray(ins[0]) if ins else None
    shape_in = np.asarray(ins[1]) if len(ins) > 1 else None
    if _plain_window(x, a, anchor, shape_in):
        # nonsilent_region's (begin, length) on a 1-D signal, inside it: slice_window's window
        # (integer inputs are absolute, whole numbers round to themselves) without its setup
        begin, length = int(anchor.reshape(())), int(shape_in.reshape(()))
        if length >= 0 and 0 <= begin and begin + length <= x.shape[0]:
            return x[begin:begin + length]
    layout = a["_layout"] or ""
    starts, ends = slice_window(x.shape, layout, a, anchor, shape_in)
    if any(s < 0 or e > n for s, e, n in zip(starts, ends, x.shape)):
        if a.get("out_of_bounds_policy", "error") != "trim_to_shape":
            slice_data(x, layout, a, anchor, shape_in)     # raises the slice's own error
        starts = [min(max(s, 0), n) for s, n in zip(starts, x.shape)]
        ends = [min(max(e, 0), n) for e, n in zip(ends, x.shape)]
    return x[tuple(slice(s, e) for s, e in zip(starts, ends))]


_WINDOW_ARGS = ("start", "rel_start", "shape", "rel_shape", "end", "rel_end", "axis_names")


def _plain_window(x, a, anchor, shape_in) -> bool:
    """A 1-D signal sliced along axis 0 by one integer anchor and one integer length (the
    speech front end's ``slice(audio, begin, length, axes=[0])``), no other window argument."""
    return (x.ndim == 1 and anchor is not None and shape_in is not None
            and tuple(a.get("axes") or ()) in ((0,), (-1,))
            and all(a.get(k) is None for k in _WINDOW_ARGS)
            and anchor.size == 1 and shape_in.size == 1
            and anchor.dtype.kind in "iu" and shape_in.dtype.kind in "iu")


#: the speech front end's chain (examples/speech_loader.py), which :class:`SpeechPlan` runs
#: in two compiled calls and one FFT per sample
SPEECH_CHAIN = ("preemphasis_filter", "spectrogram", "mel_filter_bank", "to_decibels",
                "normalize")
F32 = np.float32


class SpeechPlan:
    """``preemphasis_filter -> spectrogram -> mel_filter_bank -> to_decibels -> normalize``
    with constant arguments, per sample: the values each stage's per-sample function
    computes, the same kernels called in the same order on the same arrays, but through
    two compiled calls around the FFT (:func:`.audio_jit.speech_frames`,
    :func:`.audio_jit.speech_features`), each stage's argument handling done once per batch
    here: per utterance two releases of the GIL instead of seven, and ~30 us less Python.
    :meth:`build` returns None when an argument takes another path of those functions (a
    padded or magnitude-free layout, ``reference`` 0, a ``normalize`` with given mean /
    stddev, ...); :meth:`run` returns None for a sample that does (not a 1-D float32 signal,
    no window, too few rows for ``ddof``), which then takes the stages one by one."""

    @classmethod
    def build(cls, chain, static):
        if tuple(s.op for s in chain) != SPEECH_CHAIN or any(s.tensor_args for s in chain):
            return None
        pre, spec, mel, db, norm = (static[s.name] for s in chain)
        try:
            return cls(pre, spec, mel, db, norm)
        except _NotPlain:
            return None

    def __init__(self, pre, spec, mel, db, norm):
        # preemphasis (audio.preemphasis_sample / preemphasis): float32 out
        if np.dtype(pre["_out"]) != F32:
            raise _NotPlain
        self.coeff = F32(float(np.asarray(pre.get("preemph_coeff", 0.97))))
        self.border = PREEMPHASIS_BORDERS.get(pre.get("border", "clamp"), 1)
        # spectrogram (audio_fft.spectrogram_sample / spectrogram): "ft"
        if (spec.get("layout") or "ft") != "ft":
            raise _NotPlain
        wl, step = int(spec.get("window_length", 512)), int(spec.get("window_step", 256))
        nfft = spec.get("nfft")
        self.wl, self.step = wl, step
        self.nfft = wl if nfft is None else int(nfft)
        self.center = bool(spec.get("center_windows", True))
        self.before = wl // 2 if self.center else 0
        self.reflect = bool(spec.get("reflect_padding", True) and self.center)
        fn = spec.get("window_fn")
        self.window = np.ascontiguousarray(hann_window(wl) if fn is None
                                           else np.asarray(fn, np.float64))
        self.magnitude = int(spec.get("power", 2)) == 1
        nbins = self.nfft // 2 + 1
        # mel_filter_bank (audio.mel_filter_bank_sample / mel_filter_bank) of an "ft" input
        layout = mel["_layout"] or ""
        if "f" in layout and layout.index("f") != 0:     # (no "f": the second-to-last axis)
            raise _NotPlain
        self.nfilter = int(mel.get("nfilter", 128))
        self.weights = mel_weights(nbins, self.nfilter, float(mel.get("sample_rate", 44100.0)),
                                   float(mel.get("freq_low", 0.0)),
                                   float(mel.get("freq_high", 0.0)),
                                   mel.get("mel_formula", "slaney"),
                                   bool(mel.get("normalize", True)))
        # to_decibels (audio.to_decibels_sample / to_decibels) with a given reference
        multiplier = db.get("multiplier", 10.0)
        ref = float(db.get("reference", 0.0))
        if ref == 0.0:
            raise _NotPlain
        cutoff_db = db.get("cutoff_db", -200.0)
        self.mul_log2 = F32(multiplier / math.log2(10.0))
        self.inv_ref = F32(1.0 if ref == 1.0 else 1.0 / ref)
        self.min_ratio = F32(10.0 ** (cutoff_db / multiplier))
        # normalize (_normalize_sample's compiled path): float32, mean and stddev computed
        if (norm.get("mean") is not None or norm.get("stddev") is not None
                or np.dtype(norm["_out"] or "float32") != F32):
            raise _NotPlain
        try:
            red = normalize_axes(2, norm["_layout"] or "", norm.get("axes"),
                                 norm.get("axis_names"))
        except Exception:  # noqa: BLE001 - the stage's own path raises it
            raise _NotPlain from None
        if red not in ([0], [1]):
            raise _NotPlain
        self.axis = red[0]
        self.ddof = int(norm.get("ddof") or 0)
        self.epsilon = F32(norm.get("epsilon") or 0.0)
        self.scale = F32(1.0 if norm.get("scale") is None else norm["scale"])
        self.shift = F32(norm.get("shift") or 0.0)

    def run(self, x):
        """The chain's result for one signal ``x``, or None (see the class)."""
        if not isinstance(x, np.ndarray) or x.ndim != 1 or x.dtype != F32:
            return None
        x = np.ascontiguousarray(x)
        n, wl, step = x.shape[0], self.wl, self.step
        count = n // step + 1 if self.center else ((n - wl) // step + 1 if n >= wl else 0)
        nf = self.nfilter
        if count <= 0 or (nf if self.axis == 0 else count) - self.ddof <= 0:
            return None
        pre = scratch("fused.audio#0", (n,), F32)
        frames = scratch("frames", (count, self.nfft), F32)
        speech_frames()(x, self.coeff, self.border, pre, self.before, self.reflect, step,
                        self.window, frames)
        c = rfft_rows(frames)
        spec = scratch("fused.audio#1", (self.nfft // 2 + 1, count), F32)
        mel = scratch("fused.audio#mel", (nf, count), F32)
        db = scratch("fused.audio#db", (nf, count), F32)
        out = np.empty((nf, count), F32)
        speech_features()(c, self.magnitude, spec, *self.weights, mel, self.inv_ref,
                          self.min_ratio, self.mul_log2, db, self.axis, self.ddof, self.epsilon,
                          self.scale, self.shift, out)
        return out


class _NotPlain(Exception):
    """An argument of the speech chain takes another path of its stage's function."""


def _pick(batch, i):
    return batch[i] if len(batch) > 1 else batch[0]


@register("fused.audio", "cpu")
def fused_audio(ctx, inputs, args):
    """Run the stages of a ``fused.audio`` node, one pool task per sample."""
    stages = args["stages"]
    static = {s.name: dict(s.args) for s in stages}      # read only, shared by the samples
    # a first nonsilent_region stage: its (begin, length) are the next stage's (a slice's)
    # anchor and shape, as nonsilent_region's kernel computes them (its argument conversions)
    region = None
    if stages[0].op == "nonsilent_region":
        a = static[stages[0].name]
        region = (float(np.asarray(a.get("cutoff_db", -60.0))),
                  float(np.asarray(a.get("reference_power", 0.0))),
                  int(np.asarray(a.get("window_length", 2048))),
                  int(np.asarray(a.get("reset_interval", 8192))))
        stages = stages[1:]
    first = stages[0]
    n_in = first.arg("_inputs", 1) if first.op == "slice" and region is None else 1
    chain = stages[1:] if first.op == "slice" else stages
    fns = [SAMPLE_FUNCTIONS[s.op] for s in chain]
    last = len(chain) - 1
    speech = SpeechPlan.build(chain, static)

    def one(i):
        x = _pick(inputs[0], i)
        if region is not None:
            begin, length = nonsilent_region(x, *region)
            x = _window(x, _sample_args(first, static[first.name], args, i),
                        [np.array(begin, np.int32), np.array(length, np.int32)])
        elif first.op == "slice":
            x = _window(x, _sample_args(first, static[first.name], args, i),
                        [_pick(inp, i) for inp in inputs[1:n_in]])
        if speech is not None:
            out = speech.run(x)
            if out is not None:
                return out
        for k, (stage, fn) in enumerate(zip(chain, fns)):
            a = _sample_args(stage, static[stage.name], args, i)
            if k < last and stage.op in _INTO_SCRATCH:
                # an intermediate the next stage only reads: into this thread's scratch
                x = fn(x, a, a["_layout"], a["_out"], out_key=f"fused.audio#{k}")
            else:
                x = fn(x, a, a["_layout"], a["_out"])
        return x
    # longest signals first: the pool's threads take the next sample as they finish, so the
    # batch ends with short ones and no thread waits long for the last (results keep their
    # places)
    n = ctx.batch_size
    sizes = [np.size(_pick(inputs[0], i)) for i in range(n)]
    order = sorted(range(n), key=lambda i: -sizes[i])

    def task(k):
        try:
            return one(order[k]), None
        except Exception as exc:  # noqa: BLE001 - re-raised below: the lowest sample's, as eager
            return None, exc
    done = ctx.pool.map(task, n)
    out: list = [None] * n
    errors: list = [None] * n
    for k, i in enumerate(order):
        out[i], errors[i] = done[k]
    for exc in errors:
        if exc is not None:
            raise exc
    return [out]
