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

from .audio import mel_filter_bank_sample, mfcc_sample, preemphasis_sample, to_decibels_sample
from .audio_fft import spectrogram_sample
from .audio_jit import normalize_rows
from .normalize import normalize_batch
from .slicing import slice_data

__all__ = ["fused_audio", "SAMPLE_FUNCTIONS"]


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


def _pick(batch, i):
    return batch[i] if len(batch) > 1 else batch[0]


@register("fused.audio", "cpu")
def fused_audio(ctx, inputs, args):
    """Run the stages of a ``fused.audio`` node, one pool task per sample."""
    stages = args["stages"]
    first = stages[0]
    n_in = first.arg("_inputs", 1) if first.op == "slice" else 1
    chain = stages[1:] if first.op == "slice" else stages
    fns = [SAMPLE_FUNCTIONS[s.op] for s in chain]
    static = {s.name: dict(s.args) for s in stages}      # read only, shared by the samples
    last = len(chain) - 1

    def one(i):
        x = _pick(inputs[0], i)
        if first.op == "slice":
            x = _window(x, _sample_args(first, static[first.name], args, i),
                        [_pick(inp, i) for inp in inputs[1:n_in]])
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
