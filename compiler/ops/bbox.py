"""Bounding-box ops: ``bb_flip``, ``random_bbox_crop`` and ``bbox_rotate``.

Source: DALI 2.4 ``bb_flip`` (arguments, and the float32 arithmetic measured on its CPU
operator).
"""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def _bb_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype != "float32":
        raise ValueError(f"expected float32 boxes, got {m.dtype}")
    return [m]


register(OpSchema(
    "bb_flip", ("input",), (
        ArgSpec("horizontal", "int", 1, tensor=True, doc="Non-zero flips horizontally."),
        ArgSpec("ltrb", "bool", False,
                doc="Boxes are ``[left, top, right, bottom]`` (True) or ``[x, y, width, "
                    "height]`` (False)."),
        ArgSpec("vertical", "int", 0, tensor=True, doc="Non-zero flips vertically."),
    ), _bb_infer, public_name="bb_flip",
    doc="Mirrors bounding boxes given in relative coordinates (0..1): every 4 consecutive "
        "values are one box. Source: DALI ``bb_flip``."))


def _bbox_crop_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype != "float32":
        raise ValueError(f"expected float32 boxes, got {m.dtype}")
    if m.ndim not in (None, 2):
        raise ValueError(f"expected boxes as a 2-D tensor (boxes x 4 coordinates), got "
                         f"{m.ndim}-D samples")
    outs = [ValueMeta(dtype="float32", ndim=1, layout=""),
            ValueMeta(dtype="float32", ndim=1, layout=""),
            ValueMeta(dtype="float32", ndim=2, layout="")]
    if len(metas) > 1:
        outs.append(metas[1].with_(layout=""))
    if args.get("output_bbox_indices"):
        outs.append(ValueMeta(dtype="int32", ndim=1, layout=""))
    return outs


register(OpSchema(
    "random_bbox_crop", ("boxes", "labels"), (
        ArgSpec("all_boxes_above_threshold", "bool", True,
                doc="A window is valid only if every box reaches the threshold (False: one "
                    "box suffices)."),
        ArgSpec("allow_no_crop", "bool", True,
                doc="Not cropping is one more outcome, drawn like a threshold."),
        ArgSpec("aspect_ratio", "float[]", (1.0, 1.0), length=2,
                doc="Range of the window's width/height ratio, relative to the image's "
                    "(absolute with ``input_shape``)."),
        ArgSpec("bbox_layout", "layout", None,
                doc="Box coordinates: 'xyXY' (default; ltrb) or 'xyWH'."),
        ArgSpec("bbox_prune_threshold", "float", None,
                doc="Keep boxes with at least this fraction of their area in the window "
                    "(default: keep boxes whose center is in the window)."),
        ArgSpec("crop_shape", "int[]", None, tensor=True,
                doc="Fixed window size (needs ``input_shape``), in ``shape_layout`` order."),
        ArgSpec("input_shape", "int[]", None, tensor=True,
                doc="Image size, in ``shape_layout`` order."),
        ArgSpec("ltrb", "bool", True, doc="Boxes are xyXY (True) or xyWH (False)."),
        ArgSpec("num_attempts", "int", 1, doc="Windows tried per drawn threshold."),
        ArgSpec("output_bbox_indices", "bool", False,
                doc="Also return the indices of the kept boxes."),
        ArgSpec("quiet", "bool", False, doc="Ignored (DALI's warnings switch)."),
        ArgSpec("scaling", "float[]", (1.0, 1.0), length=2,
                doc="Range of the window's extents relative to the image's."),
        ArgSpec("shape_layout", "layout", None,
                doc="Order of ``crop_shape`` / ``input_shape`` (default 'WH')."),
        ArgSpec("threshold_type", "str", "iou", choices=("iou", "overlap"),
                doc="iou: intersection over union with the window; overlap: the fraction of "
                    "the box inside the window."),
        ArgSpec("thresholds", "float[]", (0.0,),
                doc="Minimum overlaps to choose from (one drawn per try)."),
        ArgSpec("total_num_attempts", "int", -1,
                doc="Limit of windows tried in all (-1: none); then no crop."),
        ArgSpec("_seeds", "any", None),
    ), _bbox_crop_infer, traits=frozenset({"random"}), min_inputs=1,
    public_name="random_bbox_crop",
    doc="Draws a random crop window of 2-D images that keeps the bounding boxes (and labels) "
        "consistent: returns the window's ``anchor`` and ``shape`` ([x, y], [w, h]: relative, or "
        "absolute with ``crop_shape``), the kept boxes in window coordinates, then the kept "
        "labels (with a labels input) and indices (``output_bbox_indices``). Source: DALI "
        "``random_bbox_crop`` (its random streams are not reproduced)."))


def _bbox_rotate_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype != "float32":
        raise ValueError(f"expected float32 boxes, got {m.dtype}")
    if m.ndim not in (None, 2):
        raise ValueError(f"expected boxes as a 2-D tensor (boxes x 4 coordinates), got "
                         f"{m.ndim}-D samples")
    if args.get("bbox_layout") not in (None, "xyXY", "xyWH"):
        raise ValueError(f"bbox_layout must be 'xyXY' or 'xyWH', got {args['bbox_layout']!r}")
    if args.get("keep_size") and args.get("size") is not None:
        raise ValueError("`keep_size` is mutually exclusive with `size` (as in DALI)")
    if args.get("size") is not None and len(args["size"]) != 2:
        raise ValueError(f"`size` must be 2 values (H, W), got {list(args['size'])}")
    outs = [ValueMeta(dtype="float32", ndim=2, layout="")]
    if len(metas) > 1:
        if metas[1].dtype is not None and metas[1].dtype != "int32":
            raise ValueError(f"expected int32 labels, got {metas[1].dtype}")
        outs.append(metas[1].with_(layout=""))
    return outs


register(OpSchema(
    "bbox_rotate", ("bboxes", "labels"), (
        ArgSpec("angle", "float", REQUIRED, tensor=True,
                doc="Rotation angle in degrees (counter-clockwise, as ``rotate``)."),
        ArgSpec("bbox_layout", "layout", "xyXY", doc="Boxes as 'xyXY' or 'xyWH'."),
        ArgSpec("bbox_normalized", "bool", True,
                doc="Boxes are relative (0..1) coordinates (False: pixels)."),
        ArgSpec("input_shape", "int[]", REQUIRED, tensor=True,
                doc="Shape of the image the boxes belong to, in ``shape_layout`` order."),
        ArgSpec("keep_size", "bool", False,
                doc="The rotated image keeps the input's size (as ``rotate(keep_size=True)``)."),
        ArgSpec("mode", "str", "expand", choices=("expand", "fixed", "halfway"),
                doc="expand: the box of the rotated corners; fixed: the original width and "
                    "height about the rotated center; halfway: between the two."),
        ArgSpec("remove_threshold", "float", 0.1,
                doc="Drop boxes keeping less than this fraction of their area inside the "
                    "canvas."),
        ArgSpec("shape_layout", "layout", "HW",
                doc="Order of ``input_shape`` (H and W found by their letters)."),
        ArgSpec("size", "float[]", None, tensor=True,
                doc="The rotated canvas (H, W) given to ``rotate`` (floored); default the "
                    "canvas ``rotate`` computes."),
    ), _bbox_rotate_infer, min_inputs=1, public_name="bbox_rotate",
    doc="Moves boxes (float32 (N, 4)) with their image when it is rotated by ``angle`` about "
        "its center onto ``rotate``'s canvas: the rotated corners' bounding box (``mode``), "
        "clipped to the canvas; boxes keeping less than ``remove_threshold`` of their area are "
        "removed with their labels (second input and output). Source: DALI 2.4 "
        "``bbox_rotate`` (float32 arithmetic as its CPU operator)."))
