"""Fusion rules of the audio front end (issue 19), read by ``compiler.passes.fuse`` after the
image rules of ``compiler.fusion_rules``.

Each entry is a :class:`compiler.fusion_rules.Rule` (producer ops, consumer ops, a check that
returns a refusal reason or None, a rewrite into one fused node). Kept apart from the image
table so the two families grow independently; the driver and its generic legality checks are
shared.

The chain ``[nonsilent_region -> slice ->] preemphasis_filter -> spectrogram -> mel_filter_bank ->
to_decibels -> [mfcc ->] normalize`` (any contiguous part of it of two ops or more, in any order the ops
accept) becomes one ``fused.audio`` node (``runtime/kernels/cpu/fused_audio.py``): per sample,
each stage's own per-sample function, so the result is bit-identical with the unfused chain.
A ``slice`` is read in place (its window a view of the signal) when it only selects samples:
``out_of_bounds_policy`` "error" or "trim_to_shape" and no type change; a ``nonsilent_region``
whose two outputs are that slice's begin and length over the same signal (and read by nothing
else) joins as the first stage. Refused (reason in
``explain``): a padding slice or one that converts, a ``normalize`` over the batch
(``batch=True``), a ``normalize`` whose reduced axes would be guessed from per-sample
parameters (the unfused kernel guesses them from sample 0 for all), and anything after a
``normalize``.
"""
from __future__ import annotations

from compiler.fusion_rules import Ops, Rule
from compiler.ir import Node, Stage, Value, make_stage, stages_of

FUSED = "fused.audio"
#: the ops of the chain, each run by its own per-sample function in the fused kernel
AUDIO_OPS = ("preemphasis_filter", "spectrogram", "mel_filter_bank", "to_decibels", "mfcc")
#: a ``fused.audio`` node ends with it: nothing is fused after a normalize
_TERMINAL = ("normalize",)


def _stages(node: Node, first: int) -> tuple[tuple[Stage, ...], dict[str, Value]]:
    """(stages, tensor arguments keyed as the fused node keeps them) of a chain op or of a
    ``fused.audio`` node; a new stage is named ``<op>#<first>`` (its position)."""
    if node.op == FUSED:
        return stages_of(node), dict(node.tensor_args)
    name = f"{node.op}#{first}"
    keys = {k: f"{name}.{k}" for k in node.tensor_args}
    args = {**node.args, "_layout": node.inputs[0].meta.layout or "",
            "_out": node.outputs[0].meta.dtype}
    if node.op == "slice":
        args["_inputs"] = len(node.inputs)
    stage = make_stage(node.op, name, args, keys)
    return (stage,), {keys[k]: v for k, v in node.tensor_args.items()}


def _rewrite(p: Node, c: Node) -> Node:
    """One ``fused.audio`` node doing ``p``'s stages then ``c``'s, reading ``p``'s inputs (a
    slice's signal, anchor and shape; the chain ops have no other regular input) and keeping
    ``c``'s output values (user handles keep working)."""
    ps, pt = _stages(p, 0)
    cs, ct = _stages(c, len(ps))
    node = Node(FUSED, tuple(p.inputs), {"stages": ps + cs}, {**pt, **ct}, [],
                device=c.device, callsite=c.callsite)
    node.adopt_outputs(c)
    node.meta["fused_from"] = [s.op for s in ps + cs]
    # (op, user call site) of every original node: errors name the user's own call
    node.meta["fused_sites"] = (
        list(p.meta.get("fused_sites") or [(p.op, p.callsite)])
        + list(c.meta.get("fused_sites") or [(c.op, c.callsite)]))
    return node


def _last_op(node: Node) -> str:
    return stages_of(node)[-1].op if node.op == FUSED else node.op


def _check_normalize(c: Node) -> str | None:
    if c.args.get("batch") or "batch" in c.tensor_args:
        return "normalize with batch=True reduces over the whole batch"
    guessed = c.args.get("axes") is None and c.args.get("axis_names") is None
    if guessed and ("mean" in c.tensor_args or "stddev" in c.tensor_args):
        return ("normalize without axes / axis_names takes its reduced axes from sample 0's "
                "per-sample mean / stddev for every sample; not fused")
    return None


def _check_chain(p: Node, c: Node) -> str | None:
    """Legality of ``p`` (a chain op or ``fused.audio``) -> ``c`` (a chain op or normalize)."""
    last = _last_op(p)
    if last in _TERMINAL:
        return f"{last} ends the fused audio chain"
    if p.outputs[0].meta.dtype is None:
        return "the intermediate's dtype is not known when compiling"
    if c.op == "normalize":
        return _check_normalize(c)
    return None


def _check_window(p: Node, c: Node) -> str | None:
    """A ``slice`` whose window the chain can read in place (a view of the signal)."""
    pol = p.args.get("out_of_bounds_policy", "error")
    if "out_of_bounds_policy" in p.tensor_args or pol not in ("error", "trim_to_shape"):
        return f"out_of_bounds_policy={pol!r}: the window is padded, not a view"
    dt = p.args.get("dtype")
    if dt is not None and dt != p.inputs[0].meta.dtype:
        return f"the slice converts to dtype={dt!r}"
    if p.inputs[0].meta.dtype is None:
        return "the signal's dtype is not known when compiling"
    if c.op == FUSED and stages_of(c)[0].op in ("slice", "nonsilent_region"):
        return "the chain already starts with a slice"
    return None


def _check_region(p: Node, c: Node) -> str | None:
    """``nonsilent_region`` whose (begin, length) are the window of the chain's first slice,
    over the same signal: the scan runs in the chain's pass, right before the window."""
    stages = stages_of(c)
    if not stages or stages[0].op != "slice" or stages[0].arg("_inputs", 1) != 3:
        return "the chain does not start with a slice by begin and length"
    if tuple(c.inputs[:3]) != (p.inputs[0], p.outputs[0], p.outputs[1]) or len(c.inputs) != 3:
        return "the slice's signal, begin and length are not the region's signal and outputs"
    if p.tensor_args:
        return "nonsilent_region with per-sample arguments"
    return None


def _rewrite_region(p: Node, c: Node) -> Node:
    """One ``fused.audio`` node reading the signal alone: the region's scan first (a stage
    ``nonsilent_region#<n>``), then ``c``'s stages; ``c``'s outputs kept."""
    cs = stages_of(c)
    name = f"{p.op}#{len(cs)}"
    stage = make_stage(p.op, name, {**p.args, "_layout": p.inputs[0].meta.layout or ""})
    node = Node(FUSED, (p.inputs[0],), {"stages": (stage,) + cs}, dict(c.tensor_args), [],
                device=c.device, callsite=c.callsite)
    node.adopt_outputs(c)
    node.meta["fused_from"] = [p.op] + [s.op for s in cs]
    node.meta["fused_sites"] = [(p.op, p.callsite)] + list(c.meta.get("fused_sites") or [])
    return node


_CHAIN = Ops(AUDIO_OPS + (FUSED,))

RULES: tuple[Rule, ...] = (
    # a slice (nonsilent_region's window) read in place by the first op of the chain
    Rule("slice->audio", Ops(("slice",)), Ops(AUDIO_OPS + (FUSED,)), _check_window,
         _rewrite),
    Rule("audio->audio", _CHAIN, Ops(AUDIO_OPS), _check_chain, _rewrite),
    Rule("audio->normalize", _CHAIN, Ops(("normalize",)), _check_chain, _rewrite),
    # nonsilent_region's (begin, length) window the chain's slice: one pass per sample
    Rule("region->audio", Ops(("nonsilent_region",)), Ops((FUSED,)), _check_region,
         _rewrite_region, all_outputs=True),
)
