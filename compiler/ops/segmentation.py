"""Segmentation and crop-window ops: ``segmentation.select_masks``,
``segmentation.random_mask_pixel``, ``segmentation.random_object_bbox``, ``roi_random_crop``,
``random_crop_generator``.

Source: DALI 2.4's operators of the same names (arguments, defaults, outputs and their dtypes,
observed on its CPU operators; see ``runtime/kernels/cpu/segmentation.py`` and ``roi_crop.py``).
The random ones draw per-sample seeds like every ndd random op: the contract (windows inside the
image, the ROI inside the window, the pixel in the foreground...) is DALI's, the streams are not.
"""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register

_INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_RANDOM = frozenset({"random"})


def _select_masks_infer(metas, args):
    ids, polys, verts = metas
    if ids.dtype is not None and ids.dtype != "int32":
        raise ValueError(f"expected int32 mask_ids, got {ids.dtype}")
    if polys.dtype is not None and polys.dtype != "int32":
        raise ValueError(f"expected int32 polygons, got {polys.dtype}")
    if polys.ndim not in (None, 2):
        raise ValueError(f"expected polygons of shape (P, 3), got {polys.ndim}-D samples")
    if verts.ndim not in (None, 2):
        raise ValueError(f"expected vertices of shape (V, D), got {verts.ndim}-D samples")
    return [polys.with_(layout=""), verts.with_(layout="")]


register(OpSchema(
    "segmentation.select_masks", ("mask_ids", "polygons", "vertices"), (
        ArgSpec("reindex_masks", "bool", False,
                doc="Replace the mask ids by their positions in ``mask_ids``."),
    ), _select_masks_infer, public_name="segmentation.select_masks",
    doc="Keeps the polygons (int32 (P, 3): mask id, first vertex, one past the last vertex) of "
        "the masks listed in ``mask_ids`` (int32 (K,)), in that order, with their vertices "
        "(any type, (V, D)) renumbered. Source: DALI ``segmentation.select_masks``."))


def _mask_pixel_infer(metas, args):
    if args.get("value") is not None and args.get("threshold") is not None:
        raise ValueError("`value` and `threshold` are mutually exclusive")
    return [ValueMeta(dtype="int64", ndim=1, layout="")]


register(OpSchema(
    "segmentation.random_mask_pixel", ("input",), (
        ArgSpec("foreground", "int", 0, tensor=True,
                doc="Non-zero: a foreground pixel (uniform among them; any pixel if there is "
                    "none); zero: any pixel."),
        ArgSpec("threshold", "float", None, tensor=True,
                doc="Foreground pixels are above this (default 0.0)."),
        ArgSpec("value", "int", None, tensor=True,
                doc="Foreground pixels equal this (exclusive with ``threshold``)."),
        ArgSpec("_seeds", "any", None),
    ), _mask_pixel_infer, traits=_RANDOM, public_name="segmentation.random_mask_pixel",
    doc="Picks a random pixel of a mask (any shape, one value per element): its coordinates, "
        "int64 (ndim,), one per axis. Source: DALI ``segmentation.random_mask_pixel``."))


def _object_bbox_infer(metas, args):
    if args.get("ignore_class") and any(args.get(k) is not None and args.get(k) is not False
                                        for k in ("classes", "class_weights", "output_class")):
        raise ValueError("Class-related arguments ``classes``, ``weights`` and "
                         "``output_class`` cannot be used when ``ignore_class`` is True")
    classes, weights = args.get("classes"), args.get("class_weights")
    if classes is not None and weights is not None and len(classes) != len(weights):
        raise ValueError(f"`classes` ({len(classes)} values) and `class_weights` "
                         f"({len(weights)} values) must have the same length")
    if args.get("k_largest") is not None and args["k_largest"] < 1:
        raise ValueError(f"`k_largest` must be at least 1, got {args['k_largest']}")
    m = metas[0]
    if m.dtype is not None and m.dtype not in _INT_TYPES and m.dtype != "bool":
        raise ValueError(f"expected an integer label map, got {m.dtype}")
    box = ValueMeta(dtype="int32", ndim=1, layout="")
    outs = [box] if args.get("format", "anchor_shape") == "box" else [box, box]
    if args.get("output_class"):
        outs.append(ValueMeta(dtype="int32", ndim=0, layout=""))
    return outs


register(OpSchema(
    "segmentation.random_object_bbox", ("input",), (
        ArgSpec("background", "int", None, tensor=True,
                doc="Background label (default 0, or a value not in ``classes``)."),
        ArgSpec("cache_objects", "bool", False, doc="Accepted and ignored (DALI's cache)."),
        ArgSpec("class_weights", "float[]", None, tensor=True,
                doc="Relative probabilities of ``classes`` (default equal; without "
                    "``classes``, the classes are 1..len)."),
        ArgSpec("classes", "int[]", None, tensor=True,
                doc="Foreground labels (default: every label but the background)."),
        ArgSpec("foreground_prob", "float", 1.0, tensor=True,
                doc="Probability of choosing an object (else the whole input)."),
        ArgSpec("format", "str", "anchor_shape", choices=("anchor_shape", "start_end", "box"),
                doc="anchor_shape / start_end: two outputs; box: start and end in one."),
        ArgSpec("ignore_class", "bool", False,
                doc="Choose among all objects at once (not a class first)."),
        ArgSpec("k_largest", "int", None,
                doc="Choose among the k largest boxes (by volume) only."),
        ArgSpec("output_class", "bool", False,
                doc="Also return the chosen object's label (int32 scalar)."),
        ArgSpec("threshold", "int[]", None, tensor=True,
                doc="Minimum extent of a box along each axis."),
        ArgSpec("_seeds", "any", None),
    ), _object_bbox_infer, traits=_RANDOM, public_name="segmentation.random_object_bbox",
    doc="Chooses a random object of a label map (a class by ``class_weights``, then one of its "
        "blobs of face-connected pixels) and returns its bounding box (int32, one coordinate "
        "per axis in the input's axis order) as ``format`` says; the whole input when none "
        "qualifies or with probability ``1 - foreground_prob``. Source: DALI "
        "``segmentation.random_object_bbox``."))


def _roi_crop_infer(metas, args):
    if args.get("roi_end") is not None and args.get("roi_shape") is not None:
        raise ValueError("`roi_end` and `roi_shape` are mutually exclusive")
    if metas and args.get("in_shape") is not None:
        raise ValueError("`in_shape` cannot be given together with an input (its shape is "
                         "the input shape)")
    return [ValueMeta(dtype="int64", ndim=1, layout="")]


register(OpSchema(
    "roi_random_crop", ("input",), (
        ArgSpec("crop_shape", "int[]", REQUIRED, tensor=True, doc="The window's extents."),
        ArgSpec("in_shape", "int[]", None, tensor=True,
                doc="Shape of the data to crop: the window stays inside it."),
        ArgSpec("roi_end", "int[]", None, tensor=True, doc="End of the ROI (exclusive)."),
        ArgSpec("roi_shape", "int[]", None, tensor=True, doc="Extents of the ROI."),
        ArgSpec("roi_start", "int[]", REQUIRED, tensor=True, doc="Start of the ROI."),
        ArgSpec("_seeds", "any", None),
    ), _roi_crop_infer, traits=_RANDOM, min_inputs=0, public_name="roi_random_crop",
    doc="Start (int64, one per axis) of a ``crop_shape`` window placed at random so that it "
        "holds the ROI (or lies inside a ROI larger than it), within ``in_shape`` (or the "
        "input's shape) when known. Source: DALI ``roi_random_crop``."))


def _crop_gen_infer(metas, args):
    m = metas[0]
    if m.ndim not in (None, 1):
        raise ValueError(f"expected a 1-D shape (HW or HWC), got {m.ndim}-D samples")
    if m.dtype is not None and m.dtype not in _INT_TYPES:
        raise ValueError(f"expected an integer shape, got {m.dtype}")
    win = ValueMeta(dtype="int32", ndim=1, layout="")
    return [win, win]


register(OpSchema(
    "random_crop_generator", ("input",), (
        ArgSpec("num_attempts", "int", 10, doc="Tries before the fallback window."),
        ArgSpec("random_area", "float[]", (0.08, 1.0), length=2,
                doc="Range of the window's area over the input's."),
        ArgSpec("random_aspect_ratio", "float[]", (0.75, 4 / 3), length=2,
                doc="Range of the window's width / height."),
        ArgSpec("_seeds", "any", None),
    ), _crop_gen_infer, traits=_RANDOM, public_name="random_crop_generator",
    doc="A random crop window of an input whose shape (HW or HWC) is given: ``anchor`` "
        "(y, x) and ``shape`` (h, w), int32, drawn as ``random_resized_crop``'s window. "
        "Source: DALI ``random_crop_generator``."))
