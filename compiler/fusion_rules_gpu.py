"""Which fusion rules apply to a chain on a GPU, and their GPU-only legality (read by
``compiler.passes.fuse``'s generic check for chains whose two nodes run on one GPU).

The rule table is the one of ``compiler.fusion_rules`` (its own checks keep applying: the
fused node must equal the unfused chain bit for bit on every device); a rule fuses on a GPU
only when the fused op has a GPU kernel that runs that chain (``runtime/kernels/gpu/``):

==================================  =================================================  ========
rule                                GPU kernel                                         launches
==================================  =================================================  ========
``flip->crop_mirror_normalize``     ``fused.image``: cmn with the mirror folded in      1
                                    (``cmn.cu``)
``resize->crop_mirror_normalize``   ``fused.image``: resize / random_resized_crop's     2
                                    first pass, then cmn reading only the pixels it
                                    needs (``resize_cmn.cu``)
``elementwise``                     ``elementwise_fused``: one generated kernel         1
``color->crop_mirror_normalize``    ``fused.color``: cmn reading the colour op's value  1
                                    of each pixel it needs (``color_cmn.cu``); after
                                    ``color->color``, the chain's value
                                    (``color_chain.cu``)
``color->color``                    ``fused.color``: up to 4 colour ops (HWC, uint8 /  1
                                    float32 between them) in one pass
                                    (``color_chain.cu``)
``decode->random_resized_crop``     ``fused.image``: a region decode of the box the     decode
``decode->resize``                  resize reads (nvImageCodec), then the resize (or,  + 2
                                    after ``resize->crop_mirror_normalize``, resize ->
                                    [flip] -> cmn as above) on the region
``decode->crop``                    ``decoders.image_crop`` on the GPU (region decode) decode
==================================  =================================================  ========

Every other rule is refused on a GPU with the reason (``ndd.explain``): decode -> cmn (no GPU
kernel crops a decoding cmn yet), colour chains into cast / arithmetic / normalize, colour
chains of more than 4 ops, ``resize->color`` and ``fused.window`` (no GPU kernels),
the audio rules. The GPU-only
checks below refuse, at compile time, what those kernels do not run (they would raise
``NotImplementedError`` at run time): element types outside their instantiations, layouts other
than HWC / CHW / HW, integer ``//`` and ``%`` (a zero divisor must raise, which a kernel
cannot). The type tuples mirror the kernels' (``runtime/kernels/gpu/fused.py`` ``MID_TYPES`` /
``OUT_TYPES``, ``cmn.py`` ``IN_TYPES`` / ``OUT_TYPES``, ``fused_color.py``; a test keeps them
equal), since the
compiler imports nothing of the runtime.
"""
from __future__ import annotations

from typing import Callable

from compiler import promotion
from compiler.fusion_rules import COLOR_OPS
from compiler.ir import Node, stages_of

__all__ = ["CHECKS", "refusal", "RESIZE_TYPES", "RESIZE_MID_TYPES", "RESIZE_CMN_OUT_TYPES", "CMN_IN_TYPES",
           "CMN_OUT_TYPES", "LAYOUTS", "COLOR_CMN_TYPES", "COLOR_CHAIN_MAX"]

#: element types the GPU resize reads and writes (``runtime/kernels/gpu/resize.py`` ``TYPES``)
RESIZE_TYPES = ("uint8", "int8", "uint16", "int16", "int32", "float32")
#: resize output types the fused resize -> cmn kernel is instantiated for
RESIZE_MID_TYPES = ("uint8", "float32")
#: cmn output types of the fused resize -> cmn kernel
RESIZE_CMN_OUT_TYPES = ("float32", "float16", "uint8")
#: input / output types of the GPU cmn kernel (flip -> cmn runs it)
CMN_IN_TYPES = ("uint8", "int8", "uint16", "int16", "float16", "float32")
CMN_OUT_TYPES = ("float32", "float16", "uint8", "int8", "int16", "int32")
#: (colour input, colour output, cmn output) types of the fused colour -> cmn kernel
COLOR_CMN_TYPES = (("uint8", "float32"), ("uint8", "float32"), ("float32", "float16", "uint8"))
#: most colour ops one fused colour chain runs on the GPU (``runtime/kernels/gpu/fused_color.py``
#: ``CHAIN_MAX``)
COLOR_CHAIN_MAX = 4
#: image layouts the GPU resize and cmn kernels read
LAYOUTS = ("HWC", "CHW", "HW")


def _layout_refusal(node: Node, what: str) -> str | None:
    layout = node.inputs[0].meta.layout if node.inputs else None
    if layout not in LAYOUTS:
        return (f"{what} on the GPU reads {', '.join(LAYOUTS)} images, not "
                f"{layout or '<no layout>'!r}")
    return None


def _type_refusal(dtype, allowed, what: str) -> str | None:
    if dtype is None:
        return f"the {what} type is not known when compiling"
    if dtype not in allowed:
        return f"the GPU kernel has no {dtype} {what} (only {', '.join(allowed)})"
    return None


def _flip_cmn(p: Node, c: Node) -> str | None:
    return (_layout_refusal(p, "crop_mirror_normalize")
            or _type_refusal(p.inputs[0].meta.dtype, CMN_IN_TYPES, "cmn input")
            or _type_refusal(c.outputs[0].meta.dtype, CMN_OUT_TYPES, "cmn output"))


def _resize_cmn(p: Node, c: Node) -> str | None:
    decodes = False
    if p.op == "fused.image":
        names = [s.name for s in stages_of(p)]
        decodes = names[:1] == ["decode"]
        if decodes:
            names = names[1:]
        if names[:1] != ["rrc"] and names[:1] != ["resize"]:
            return (f"the GPU fused kernel starts with [decode ->] resize or "
                    f"random_resized_crop, not {' -> '.join(names)}")
    return ((None if decodes else _layout_refusal(p, "resize"))      # a decode gives HWC
            or _type_refusal(p.outputs[0].meta.dtype, RESIZE_MID_TYPES, "resize output")
            or _type_refusal(c.outputs[0].meta.dtype, RESIZE_CMN_OUT_TYPES, "cmn output"))


def _color_stages(p: Node) -> tuple[list[str], list]:
    """(ops, output dtypes) of the colour ops ``p`` computes (one op, or a fused.color)."""
    if p.op == "fused.color":
        st = stages_of(p)
        return [s.op for s in st], [dict(s.args).get("_out") for s in st]
    return [p.op], [p.outputs[0].meta.dtype]


def _chain_refusal(ops, dts, first_in, extra: int) -> str | None:
    ins, mids, _ = COLOR_CMN_TYPES
    if not set(ops) <= set(COLOR_OPS):
        return (f"on the GPU a fused colour chain holds only colour ops, not "
                f"{' -> '.join(ops)}")
    if len(ops) + extra > COLOR_CHAIN_MAX:
        return f"the GPU colour chain kernel runs at most {COLOR_CHAIN_MAX} colour ops"
    for dt in dts:
        why = _type_refusal(dt, mids, "colour output")
        if why:
            return why
    return _type_refusal(first_in, ins, "colour input")


def _color_cmn(p: Node, c: Node) -> str | None:
    ops, dts = _color_stages(p)
    return (_chain_refusal(ops, dts, p.inputs[0].meta.dtype, 0)
            or _type_refusal(c.outputs[0].meta.dtype, COLOR_CMN_TYPES[2], "cmn output"))


def _color_color(p: Node, c: Node) -> str | None:
    if p.inputs[0].meta.layout != "HWC":
        return (f"a fused colour chain on the GPU reads HWC images, not "
                f"{p.inputs[0].meta.layout or '<no layout>'!r}")
    ops, dts = _color_stages(p)
    return (_chain_refusal(ops + [c.op], dts + [c.outputs[0].meta.dtype],
                           p.inputs[0].meta.dtype, 0))


def _decode_resize(p: Node, c: Node) -> str | None:
    """decoders.image -> rrc / resize: the GPU resize's output types (the decode is uint8
    HWC, checked by the rule itself)."""
    return _type_refusal(c.outputs[0].meta.dtype, RESIZE_TYPES, "resize output")


def _decode_crop(p: Node, c: Node) -> str | None:
    """decoders.image -> crop becomes ``decoders.image_crop``, which decodes on the GPU."""
    return None


def _steps(node: Node) -> list[tuple[str, str | None]]:
    """(op, result dtype) of each step an element-wise node computes."""
    if node.op == "elementwise_fused":
        return [(op, dt) for op, _, dt in node.args["program"]]
    if node.op == "cast":
        return [("cast", node.outputs[0].meta.dtype)]
    return [(node.args.get("op", ""), node.outputs[0].meta.dtype)]


def _elementwise(p: Node, c: Node) -> str | None:
    for node in (p, c):
        for op, dt in _steps(node):
            name = promotion.canonical_op(op) if op in promotion.OPS or \
                op in promotion.ALIASES else op
            if name in ("floordiv", "mod") and (dt is None or not promotion.is_float(dt)):
                return (f"integer {name} is not generated for the GPU (a zero divisor must "
                        f"raise, which a kernel cannot)")
    return None


#: rule name -> its GPU-only check ``(producer, consumer) -> reason | None``; a rule missing
#: here does not fuse on a GPU
CHECKS: dict[str, Callable[[Node, Node], str | None]] = {
    "flip->crop_mirror_normalize": _flip_cmn,
    "resize->crop_mirror_normalize": _resize_cmn,
    "elementwise": _elementwise,
    "color->crop_mirror_normalize": _color_cmn,
    "color->color": _color_color,
    "decode->random_resized_crop": _decode_resize,
    "decode->resize": _decode_resize,
    "decode->crop": _decode_crop,
}


def refusal(rule_name: str, producer: Node, consumer: Node) -> str | None:
    """Why ``producer -> consumer`` (both on one GPU) cannot fuse under rule ``rule_name`` on
    the GPU, or None."""
    check = CHECKS.get(rule_name)
    if check is None:
        return (f"{rule_name} is not fused on the GPU (no GPU kernel runs the fused op; on the "
                f"GPU only {', '.join(CHECKS)} fuse)")
    return check(producer, consumer)
