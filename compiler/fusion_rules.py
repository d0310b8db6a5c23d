"""The one table of fusion rules used by the ``fuse`` pass (``compiler/passes/fuse.py``).

Each :class:`Rule` matches a producer -> consumer edge by op pattern (:class:`Ops`: op names, or
a schema trait such as ``elementwise``), has a legality check returning ``None`` (legal) or a
refusal reason, and a rewrite that builds the fused node. Fused nodes reuse the consumer's
output values (user handles keep working) and record ``meta["fused_from"]`` /
``meta["fused_sites"]``; a ``fused.image`` node carries its original ops as
:class:`compiler.ir.Stage` records in ``args["stages"]``. Every fused op must be bit-exact with
the unfused chain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compiler import promotion
from compiler.ir import Node, Stage, Value, make_stage, stages_of
from compiler.schema import REGISTRY

_CROP = ("crop", "crop_h", "crop_w", "crop_pos_x", "crop_pos_y")
_SEEDS = "_seeds"


@dataclass(frozen=True)
class Ops:
    """An op pattern: the ops named in ``names``, or (with ``trait``) every op whose schema has
    that trait and none of the traits in ``without``."""

    names: tuple[str, ...] = ()
    trait: str | None = None
    without: frozenset = frozenset()

    def matches(self, op: str) -> bool:
        if op in self.names:
            return True
        if self.trait is None:
            return False
        schema = REGISTRY.get(op)
        return (schema is not None and self.trait in schema.traits
                and not schema.traits & self.without)


@dataclass(frozen=True)
class Rule:
    """One fusion: an edge ``producer`` -> ``consumer`` (op patterns) rewritten by ``rewrite``.

    ``check(producer, consumer) -> str | None`` gives the rule-specific refusal reason;
    the generic conditions (see :func:`compiler.passes.fuse.edge_refusal`) are checked by the
    pass first. ``any_input``: the consumer may read the intermediate as any of its regular
    inputs (elementwise operands), not only as its first. ``all_outputs``: the producer may
    have several outputs, each read by the consumer alone (as any of its inputs).
    """

    name: str
    producer: Ops
    consumer: Ops
    check: Callable[[Node, Node], str | None]
    rewrite: Callable[[Node, Node], Node]
    any_input: bool = False
    all_outputs: bool = False

    def matches(self, producer: Node, consumer: Node) -> bool:
        return self.producer.matches(producer.op) and self.consumer.matches(consumer.op)


# ------------------------------------------------------------------ helpers
def _get(node: Node, name: str, default=None):
    if name in node.tensor_args:
        return node.tensor_args[name]
    return node.args.get(name, default)


#: Short stage names of the ops a ``fused.image`` node can hold (the fused kernel's vocabulary).
STAGE_NAMES = {"decoders.image": "decode", "random_resized_crop": "rrc", "resize": "resize",
               "flip": "flip", "crop_mirror_normalize": "cmn"}


def _stage_names(node: Node) -> tuple[str, ...]:
    """Stage names of a ``fused.image`` node, or the single stage an image op stands for."""
    if node.op == "fused.image":
        return tuple(s.name for s in stages_of(node))
    return (STAGE_NAMES[node.op],)


def _as_stages(node: Node) -> tuple[tuple[Stage, ...], dict[str, Value], dict]:
    """(stages, tensor arguments keyed as the fused node keeps them, node-level arguments: the
    drawn ``_seeds``) of an image op or of a ``fused.image`` node."""
    if node.op == "fused.image":
        return (stages_of(node), dict(node.tensor_args),
                {k: v for k, v in node.args.items() if k != "stages"})
    name = STAGE_NAMES[node.op]
    keys = {k: f"{name}.{k}" for k in node.tensor_args}
    stage = make_stage(node.op, name, {k: v for k, v in node.args.items() if k != _SEEDS}, keys)
    targs = {keys[k]: v for k, v in node.tensor_args.items()}
    return (stage,), targs, {k: v for k, v in node.args.items() if k == _SEEDS}


def fused_image_node(producer: Node, consumer: Node) -> Node:
    """A ``fused.image`` node doing producer's stages then consumer's stages."""
    ps, pt, pa = _as_stages(producer)
    cs, ct, ca = _as_stages(consumer)
    args = {**pa, **ca, "stages": ps + cs}
    return _replace(producer, consumer, "fused.image", producer.inputs, args, {**pt, **ct})


def _replace(producer: Node, consumer: Node, op: str, inputs, args, tensor_args) -> Node:
    node = Node(op, inputs, args, tensor_args, [], device=consumer.device,
                callsite=consumer.callsite)
    node.adopt_outputs(consumer)
    node.meta["fused_from"] = (list(producer.meta.get("fused_from") or [producer.op])
                               + list(consumer.meta.get("fused_from") or [consumer.op]))
    # (op, user call site) of every original node, so errors can name the user's own call
    node.meta["fused_sites"] = (
        list(producer.meta.get("fused_sites") or [(producer.op, producer.callsite)])
        + list(consumer.meta.get("fused_sites") or [(consumer.op, consumer.callsite)]))
    return node


# ------------------------------------------------------------------ legality pieces
def _decode_ok(p: Node) -> str | None:
    if p.op == "decoders.image" and p.args.get("dtype", "uint8") != "uint8":
        return f"decoder dtype={p.args.get('dtype')!r}; only uint8 decodes are fused"
    if p.op == "decoders.image" and not p.args.get("adjust_orientation", True):
        return "adjust_orientation=False (ROI coordinates are those of the oriented image)"
    return None


def _cmn_ok(c: Node) -> str | None:
    pol = c.args.get("out_of_bounds_policy", "error")
    if pol != "error":
        return f"out_of_bounds_policy={pol!r} (only 'error' is fused)"
    if c.args.get("pad_output"):
        return "pad_output=True is not fused"
    if "pad_output" in c.tensor_args or "out_of_bounds_policy" in c.tensor_args:
        return "per-sample pad_output/out_of_bounds_policy"
    return None


def _tail_ok(p: Node) -> str | None:
    st = _stage_names(p)
    if st[-1] not in ("rrc", "resize", "flip"):
        return f"the fused chain ends with {st[-1]!r}; cmn can follow only rrc, resize or flip"
    if "flip" in st[:-1] or (st[-1] == "flip" and len(st) > 1):
        return "flip is folded only directly into cmn"
    return None


def _check_decode_crop(p, c):
    if c.args.get("out_of_bounds_policy", "error") != "error":
        return f"out_of_bounds_policy={c.args['out_of_bounds_policy']!r} needs padding"
    if c.args.get("dtype") not in (None, "uint8"):
        return f"crop converts to dtype={c.args['dtype']!r}"
    return _decode_ok(p)


def _check_decode_rrc(p, c):
    return _decode_ok(p)


def _check_decode_cmn(p, c):
    return _decode_ok(p) or _cmn_ok(c)


def _check_to_cmn(p, c):
    return _tail_ok(p) or _cmn_ok(c)


def _check_flip_cmn(p, c):
    if any(_get(c, k) is not None for k in ("crop", "crop_h", "crop_w")):
        return "cmn crops: a window of the flipped image is not the mirrored window"
    for k in ("vertical", "depthwise"):
        v = _get(p, k, 0)
        if isinstance(v, Value) or v:
            return f"flip {k}={'<per-sample>' if isinstance(v, Value) else v} is not a mirror"
    return _cmn_ok(c)


def _check_crop_resize(p, c):
    return ("resize filter taps near the window edge read pixels outside the crop in an ROI "
            "resize, so the result would differ from resizing the cropped copy (a plain crop "
            "is read in place by crop->window instead)")


def _check_elementwise(p, c):
    if c.op == "arithmetic" and any(v is p.outputs[0] for v in c.tensor_args.values()):
        return "read as a tensor argument"
    for v in p.inputs:
        if v.meta.batch_size != c.outputs[0].meta.batch_size and v.meta.batch_size != 1:
            return "operand batch sizes differ"
    return None


# ------------------------------------------------------------------ rewrites
def _rewrite_decode_crop(p, c):
    args = {k: p.args[k] for k in p.args}
    targs = {}
    for k in _CROP:
        if k in c.tensor_args:
            targs[k] = c.tensor_args[k]
        elif c.args.get(k) is not None:
            args[k] = c.args[k]
    return _replace(p, c, "decoders.image_crop", p.inputs, args, targs)


def _program_of(node: Node) -> tuple[list[Value], list[tuple]]:
    """(inputs, program) of an arithmetic / cast / elementwise_fused node."""
    if node.op == "elementwise_fused":
        return list(node.inputs), list(node.args["program"])
    if node.op == "cast":
        return [node.inputs[0]], [("cast", (("t", 0),), node.args["dtype"])]
    return list(node.inputs), [(node.args["op"], tuple(node.args["operands"]),
                                node.outputs[0].meta.dtype)]


def _rewrite_elementwise(p, c):
    p_ins, p_prog = _program_of(p)
    c_ins, c_prog = _program_of(c)
    inputs = list(p_ins)
    pos = {v.id: i for i, v in enumerate(inputs)}
    last = len(p_prog) - 1
    produced = p.outputs[0]
    mapping = {}
    for i, v in enumerate(c_ins):
        if v is produced:
            mapping[i] = ("r", last)
        else:
            if v.id not in pos:
                pos[v.id] = len(inputs)
                inputs.append(v)
            mapping[i] = ("t", pos[v.id])

    def remap(operand):
        if operand[0] == "t":
            return mapping[operand[1]]
        if operand[0] == "r":
            return ("r", operand[1] + len(p_prog))
        return operand
    prog = list(p_prog) + [(op, tuple(remap(o) for o in ops), dt) for op, ops, dt in c_prog]
    return _replace(p, c, "elementwise_fused", inputs, {"program": tuple(prog)}, {})


# ------------------------------------------------------------------ the colour chain
COLOR_OPS = ("brightness_contrast", "brightness", "contrast", "hsv", "hue", "saturation",
             "color_twist")
#: ops that end a ``fused.color`` chain (nothing is fused after them)
_COLOR_TERMINAL = ("normalize", "crop_mirror_normalize")
#: intermediate dtypes whose every value a float32 holds exactly (the fused loop keeps the
#: chain's values in float32): integers of up to 16 bits, float32, and float64 values made from
#: float32 ones
_EXACT_INTERMEDIATE = ("uint8", "int8", "uint16", "int16", "float32", "float64")
_FUSED_ARITH = ("add", "sub", "mul", "truediv")


def _check_color(p: Node, c: Node) -> str | None:
    """Legality of ``p`` (a colour op or fused.color) -> ``c`` in one ``fused.color`` pass."""
    if p.op == "fused.color" and stages_of(p)[-1].op in _COLOR_TERMINAL:
        return f"{stages_of(p)[-1].op} ends the fused colour chain"
    dt = p.outputs[0].meta.dtype
    if dt is None:
        return "the intermediate's dtype is not known when compiling"
    if dt not in _EXACT_INTERMEDIATE:
        return (f"the intermediate is {dt}: the fused pass keeps values in float32, which "
                f"does not reproduce a {dt} intermediate's rounding exactly")
    if c.op == "arithmetic":
        return _check_color_arith(p, c, dt)
    if c.op == "normalize":
        if c.args.get("batch"):
            return "normalize with batch=True reduces over the whole batch"
        missing = [k for k in ("mean", "stddev") if _get(c, k) is None]
        if missing:
            return (f"normalize computes its {' and '.join(missing)} from the data (a "
                    f"reduction over the intermediate)")
    if c.op == "crop_mirror_normalize":
        if dt == "float64":
            return "cmn computes a float64 input in float64"
        if p.outputs[0].meta.layout != "HWC":
            return f"cmn reads {p.outputs[0].meta.layout!r} images; only HWC is fused"
        return _cmn_ok(c)
    if c.op == "cast" and c.outputs[0].meta.dtype is None:
        return "the cast's dtype is not known when compiling"
    return None


def _check_color_arith(p: Node, c: Node, dt: str) -> str | None:
    ops = c.args.get("operands", ())
    name = promotion.canonical_op(c.args.get("op", ""))
    if name not in _FUSED_ARITH:
        return f"arithmetic {name!r} is not fused (only {', '.join(_FUSED_ARITH)})"
    if c.tensor_args or len(ops) != 2 or sorted(o[0] for o in ops) != ["s", "t"]:
        return "arithmetic with another tensor operand (only a scalar operand is fused)"
    scalar = next(o[1] for o in ops if o[0] == "s")
    natural = promotion.infer_dtype(name, [dt, promotion.scalar_dtype(scalar)])
    if natural != "float32" or c.outputs[0].meta.dtype != "float32":
        return f"arithmetic computed in {natural} (only float32 arithmetic is fused)"
    return None


def _color_stages(node: Node, first: int) -> tuple[tuple[Stage, ...], dict[str, Value]]:
    """(stages, tensor arguments keyed as the fused node keeps them) of a colour-chain op or
    of a ``fused.color`` node; a new stage is named ``<op>#<first>`` (its position)."""
    if node.op == "fused.color":
        return stages_of(node), dict(node.tensor_args)
    name = f"{node.op}#{first}"
    keys = {k: f"{name}.{k}" for k in node.tensor_args}
    inp, out = node.inputs[0].meta, node.outputs[0].meta
    args = {**node.args, "_in": inp.dtype, "_out": out.dtype, "_layout": inp.layout}
    stage = make_stage(node.op, name, args, keys)
    return (stage,), {keys[k]: v for k, v in node.tensor_args.items()}


def _rewrite_color(p: Node, c: Node) -> Node:
    ps, pt = _color_stages(p, 0)
    cs, ct = _color_stages(c, len(ps))
    return _replace(p, c, "fused.color", p.inputs[:1], {"stages": ps + cs}, {**pt, **ct})


# ------------------------------------------------------------------ resize at the head of it
#: the stage name of a resize run first in a ``fused.color`` pass
RESIZE_STAGE = "resize#0"


def _check_resize_color(p: Node, c: Node) -> str | None:
    """Legality of ``resize`` -> a colour op (or a ``fused.color`` chain): the resize becomes
    the colour pass's first stage, the resize kernel's own per-sample function resampling one
    image at a time into a scratch image that the colour stages then read (so the resized
    image is the one the unfused colour op reads, whatever its type, and its per-sample sizes
    are those of the unfused call)."""
    if c.op == "fused.color" and stages_of(c)[0].op == "resize":
        return "the colour chain already starts with a resize"
    for side, meta in (("input", p.inputs[0].meta), ("output", p.outputs[0].meta)):
        if meta.layout != "HWC":
            return (f"resize {side} layout {meta.layout or '<none>'!r}: only HWC images are "
                    f"resized in the colour pass (the colour stages read channels last)")
    if p.inputs[0].meta.dtype is None or p.outputs[0].meta.dtype is None:
        return "resize's input or output dtype is not known when compiling"
    return None


def _rewrite_resize_color(p: Node, c: Node) -> Node:
    keys = {k: f"{RESIZE_STAGE}.{k}" for k in p.tensor_args}
    inp, out = p.inputs[0].meta, p.outputs[0].meta
    stage = make_stage(p.op, RESIZE_STAGE, {**p.args, "_in": inp.dtype, "_out": out.dtype,
                                            "_layout": inp.layout}, keys)
    cs, ct = _color_stages(c, 1)
    targs = {**{keys[k]: v for k, v in p.tensor_args.items()}, **ct}
    return _replace(p, c, "fused.color", p.inputs[:1], {"stages": (stage,) + cs}, targs)


# ------------------------------------------------------------------ windows read in place
_WINDOW_READERS = ("resize", "rotate", "warp_affine")


def _check_window(p: Node, c: Node) -> str | None:
    """A crop / slice whose copy ``c`` can read in place (a view of the window)."""
    pol = p.args.get("out_of_bounds_policy", "error")
    views = ("error", "trim_to_shape") if p.op == "slice" else ("error",)
    if pol not in views or "out_of_bounds_policy" in p.tensor_args:
        return f"out_of_bounds_policy={pol!r}: the window is padded, not a view"
    dt = p.args.get("dtype")
    if dt is not None and dt != p.inputs[0].meta.dtype:
        return f"crop converts to dtype={dt!r}"
    if p.op == "crop" and p.inputs[0].meta.layout not in ("HWC", "CHW", "FHWC", "HW"):
        return f"crop of {p.inputs[0].meta.layout!r} data"
    return None


def _rewrite_window(p: Node, c: Node) -> Node:
    pkeys = {k: f"crop.{k}" for k in p.tensor_args}
    ckeys = {k: f"op.{k}" for k in c.tensor_args}
    crop = make_stage(p.op, "crop", {**p.args, "_meta": p.outputs[0].meta,
                                     "_inputs": len(p.inputs)}, pkeys)
    op = make_stage(c.op, "op", c.args, ckeys)
    targs = {**{pkeys[k]: v for k, v in p.tensor_args.items()},
             **{ckeys[k]: v for k, v in c.tensor_args.items()}}
    return _replace(p, c, "fused.window", tuple(p.inputs) + tuple(c.inputs[1:]),
                    {"stages": (crop, op)}, targs)


def _never(p, c):   # pragma: no cover - the check always refuses
    raise AssertionError("rule is never applied")


_IMAGE_TAIL = Ops(("random_resized_crop", "resize", "fused.image"))
_COLOR_CHAIN = Ops(COLOR_OPS + ("fused.color",))
_ELEMENTWISE = Ops(trait="elementwise")

RULES: tuple[Rule, ...] = (
    Rule("decode->crop", Ops(("decoders.image",)), Ops(("crop",)), _check_decode_crop,
         _rewrite_decode_crop),
    Rule("decode->random_resized_crop", Ops(("decoders.image",)), Ops(("random_resized_crop",)),
         _check_decode_rrc, fused_image_node),
    Rule("decode->resize", Ops(("decoders.image",)), Ops(("resize",)), _check_decode_rrc,
         fused_image_node),
    Rule("decode->crop_mirror_normalize", Ops(("decoders.image",)),
         Ops(("crop_mirror_normalize",)), _check_decode_cmn, fused_image_node),
    Rule("flip->crop_mirror_normalize", Ops(("flip",)), Ops(("crop_mirror_normalize",)),
         _check_flip_cmn, fused_image_node),
    Rule("resize->crop_mirror_normalize", _IMAGE_TAIL, Ops(("crop_mirror_normalize",)),
         _check_to_cmn, fused_image_node),
    Rule("crop->resize", Ops(("crop", "decoders.image_crop")), Ops(("resize",)),
         _check_crop_resize, _never),
    # (a crop refused above is read in place instead: the consumer runs on views)
    Rule("crop->window", Ops(("crop", "slice")), Ops(_WINDOW_READERS), _check_window,
         _rewrite_window),
    # colour ops, then cast / float32 scalar arithmetic / normalize / cmn, in one pass
    Rule("color->color", _COLOR_CHAIN, Ops(COLOR_OPS), _check_color, _rewrite_color),
    Rule("color->cast", _COLOR_CHAIN, Ops(("cast",)), _check_color, _rewrite_color),
    Rule("color->arithmetic", _COLOR_CHAIN, Ops(("arithmetic",)), _check_color,
         _rewrite_color),
    Rule("color->normalize", _COLOR_CHAIN, Ops(("normalize",)), _check_color, _rewrite_color),
    Rule("color->crop_mirror_normalize", _COLOR_CHAIN, Ops(("crop_mirror_normalize",)),
         _check_color, _rewrite_color),
    # a resize feeding a colour chain: resampled per image at the head of the colour pass
    Rule("resize->color", Ops(("resize",)), _COLOR_CHAIN, _check_resize_color,
         _rewrite_resize_color),
    # arithmetic, cast and an already fused chain, into an arithmetic or a cast
    Rule("elementwise", _ELEMENTWISE, Ops(trait="elementwise", without=frozenset({"fused"})),
         _check_elementwise, _rewrite_elementwise, any_input=True),
)
