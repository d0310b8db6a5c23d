"""Detection box and coordinate ops: ``coord_flip``, ``bbox_paste``, ``box_encoder``.

Source: DALI 2.4's operators of the same names (arguments, defaults, and the float32
arithmetic measured on their CPU backends; see ``runtime/kernels/cpu/detection.py``).
"""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def _float32_in(m):
    if m.dtype is not None and m.dtype != "float32":
        raise ValueError(f"expected float32 input, got {m.dtype}")


def _coord_flip_infer(metas, args):
    _float32_in(metas[0])
    return [metas[0]]


def _bbox_paste_infer(metas, args):
    _float32_in(metas[0])
    return [metas[0]]


def _box_encoder_infer(metas, args):
    boxes, labels = metas
    _float32_in(boxes)
    if labels.dtype is not None and labels.dtype != "int32":
        raise ValueError(f"expected int32 labels, got {labels.dtype}")
    anchors = args.get("anchors")
    if anchors is not None and (len(anchors) == 0 or len(anchors) % 4):
        raise ValueError(f"`anchors` must be a flat list of [l, t, r, b] "
                         f"anchors (a multiple of 4 values); got {len(anchors)} values")
    crit = args.get("criteria")
    if crit is not None and not 0 <= crit <= 1:
        raise ValueError(f"`criteria` must be within [0, 1]; got {crit}")
    return [ValueMeta(dtype="float32", ndim=2, layout=""),
            ValueMeta(dtype="int32", ndim=1, layout="")]


register(OpSchema(
    "coord_flip", ("input",), (
        ArgSpec("center_x", "float", 0.5, tensor=True, doc="Flip center of the x axis."),
        ArgSpec("center_y", "float", 0.5, tensor=True, doc="Flip center of the y axis."),
        ArgSpec("center_z", "float", 0.5, tensor=True, doc="Flip center of the z axis."),
        ArgSpec("flip_x", "int", 1, tensor=True, doc="Non-zero flips the x coordinate."),
        ArgSpec("flip_y", "int", 0, tensor=True, doc="Non-zero flips the y coordinate."),
        ArgSpec("flip_z", "int", 0, tensor=True, doc="Non-zero flips the z coordinate."),
        ArgSpec("layout", "layout", None,
                doc="Order of the coordinates, of 'x', 'y', 'z' (default 'x', 'xy' or 'xyz' "
                    "by their number)."),
    ), _coord_flip_infer, public_name="coord_flip",
    doc="Reflects points (float32, shape (N, D), D in 1..3) about a center: a flipped "
        "coordinate ``c`` becomes ``2 * center - c``. Source: DALI ``coord_flip``."))

register(OpSchema(
    "bbox_paste", ("input",), (
        ArgSpec("ltrb", "bool", False,
                doc="Boxes are ``[l, t, r, b]`` (True) or ``[x, y, w, h]`` (False)."),
        ArgSpec("paste_x", "float", 0.5, tensor=True,
                doc="Horizontal position of the pasted image on the canvas (0 left, 1 right)."),
        ArgSpec("paste_y", "float", 0.5, tensor=True,
                doc="Vertical position of the pasted image on the canvas (0 top, 1 bottom)."),
        ArgSpec("ratio", "float", REQUIRED, tensor=True,
                doc="Canvas size over image size, at least 1."),
    ), _bbox_paste_infer, public_name="bbox_paste",
    doc="Moves relative boxes (float32, groups of 4) so they stay on their objects after "
        "the image is pasted on a ``ratio`` times larger canvas (as ``paste`` does). Source: "
        "DALI ``bbox_paste``."))

register(OpSchema(
    "box_encoder", ("boxes", "labels"), (
        ArgSpec("anchors", "float[]", REQUIRED,
                doc="The anchors, a flat list of ``[l, t, r, b]`` boxes (relative)."),
        ArgSpec("criteria", "float", 0.5, doc="IoU above which an anchor matches a box."),
        ArgSpec("means", "float[]", (0.0, 0.0, 0.0, 0.0), length=4,
                doc="[x, y, w, h] means of the offset normalization."),
        ArgSpec("offset", "bool", False,
                doc="Output SSD's normalized offsets instead of the matched boxes."),
        ArgSpec("scale", "float", 1.0,
                doc="Scale of boxes and anchors before the offsets are computed."),
        ArgSpec("stds", "float[]", (1.0, 1.0, 1.0, 1.0), length=4,
                doc="[x, y, w, h] standard deviations of the offset normalization."),
    ), _box_encoder_infer, public_name="box_encoder",
    doc="SSD encoding: matches boxes (float32 (N, 4) ``[l, t, r, b]``) and labels (N,) with "
        "the anchors by IoU; returns one box per anchor (float32 (M, 4), center form "
        "``[cx, cy, w, h]``, or normalized offsets with ``offset``) and one label per anchor "
        "(0: background). Source: DALI ``box_encoder``."))
