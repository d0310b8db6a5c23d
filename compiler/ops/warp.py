"""Inverse-mapped image warps: ``warp_affine``, ``rotate``, ``sphere``,
``experimental.warp_perspective`` and ``experimental.remap``.

Source: DALI 2.4 ``warp_affine`` / ``rotate`` / ``sphere`` (argument names and defaults from
its schema; sampling, canvas size and rounding measured on its CPU operators).
"""
from __future__ import annotations

from compiler.schema import REQUIRED, ArgSpec, OpSchema, register

_LAYOUTS = {2: "HW", 3: "HWC", 4: "FHWC"}


def _warp_infer(metas, args):
    m = metas[0]
    layout = m.layout or _LAYOUTS.get(m.ndim, "")
    if m.ndim is not None and m.layout and m.layout in ("DHWC", "FDHWC"):
        raise ValueError(f"volumetric data (layout {m.layout!r}) is not supported by ndd yet")
    if m.ndim is not None and (layout not in ("HW", "HWC", "FHWC") or len(layout) != m.ndim):
        raise ValueError(f"expected HWC images or FHWC sequences, got {m.ndim}-D samples with "
                         f"layout {m.layout!r}")
    if len(metas) > 1 and metas[1].ndim not in (None, 1, 2, 3):
        raise ValueError(f"the 'mtx' input must hold 2 x 3 matrices (F x 2 x 3 per frame), "
                         f"got {metas[1].ndim}-D samples")
    return [m.with_(dtype=args.get("dtype") or m.dtype, layout=layout)]


_COMMON = (
    ArgSpec("dtype", "dtype", None, doc="Output type (default: the input type)."),
    ArgSpec("fill_value", "float", None,
            doc="Value of the areas outside the source image; if not set, the source "
                "coordinates are clamped and the border pixel repeats."),
    ArgSpec("interp_type", "interp", "linear", doc="Interpolation: nn or linear."),
    ArgSpec("size", "float[]", None, tensor=True,
            doc="Output size (height, width) in pixels, rounded to nearest; the channel "
                "dimension is excluded."),
)

register(OpSchema(
    "warp_affine", ("data", "mtx"), _COMMON + (
        ArgSpec("matrix", "float[]", None, tensor=True,
                doc="The 2 x 3 transform ``(M11, M12, M13, M21, M22, M23)``: with "
                    "``inverse_map`` (default) a destination -> source map, ``dst(x, y) = "
                    "src(M11 x + M12 y + M13, M21 x + M22 y + M23)``, ``(0, 0)`` being the "
                    "corner of the first pixel. The ``mtx`` input may give it instead. For "
                    "sequences, ``F x 2 x 3`` gives one matrix per frame (``ndd.per_frame``)."),
        ArgSpec("inverse_map", "bool", True,
                doc="False: ``matrix`` maps source to destination and is inverted first."),
    ), _warp_infer, min_inputs=1, public_name="warp_affine",
    deprecated={"output_dtype": "dtype"},
    doc="Applies an affine transform to images (HWC) or to every frame of sequences (FHWC); "
        "like OpenCV's ``warpAffine`` with ``inverse_map`` as ``WARP_INVERSE_MAP``. The output "
        "keeps the input size unless ``size`` is given. Source: DALI ``warp_affine``."))

register(OpSchema(
    "rotate", ("input",), (
        ArgSpec("angle", "float[]", REQUIRED, tensor=True,
                doc="Angle in degrees; counter-clockwise with the origin at the top-left "
                    "corner. For sequences, one per frame may be given (``ndd.per_frame``)."),
        ArgSpec("axis", "float[]", None, tensor=True,
                doc="Rotation axis of 3-D (volumetric) data; not supported by ndd yet."),
    ) + _COMMON + (
        ArgSpec("keep_size", "bool", False,
                doc="Keep the input canvas size (otherwise, without ``size``, the canvas "
                    "fits the rotated image with the least padding)."),
    ), _warp_infer, public_name="rotate", deprecated={"output_dtype": "dtype"},
    doc="Rotates images (HWC) or every frame of sequences (FHWC) about their center. The "
        "default canvas is the rotated bounding box, rounded up to keep the center on the "
        "pixel grid. Source: DALI ``rotate``."))


def _sphere_infer(metas, args):
    m = metas[0]
    if m.ndim is not None and m.ndim != 3 or (m.layout and m.layout != "HWC"):
        raise ValueError(f"expected HWC images, got {m.ndim}-D samples with layout "
                         f"{m.layout!r}")
    return [m.with_(layout=m.layout or "HWC")]


register(OpSchema(
    "sphere", ("input",), (
        ArgSpec("fill_value", "float", 0.0, doc="Color of the areas outside the source image "
                                                "(converted to the image type like ``cast``)."),
        ArgSpec("interp_type", "interp", "nn", doc="Interpolation: nn or linear."),
        ArgSpec("mask", "int", 1, tensor=True, doc="1: apply the augmentation; 0: leave the "
                                                   "sample unchanged."),
    ), _sphere_infer, public_name="sphere",
    doc="Performs a sphere augmentation: a radial remap that magnifies the image center and "
        "pushes the corners out (HWC images). Source: DALI ``sphere``."))


_WP_TYPES = ("uint8", "int16", "uint16", "float32")


_WP_LAYOUTS = ("HW", "HWC", "FHWC", "CHW", "FCHW")


def _perspective_infer(metas, args):
    # DALI 2.4 (measured): a sample without a layout is read by its number of dimensions as
    # HW, HWC or FHWC; other layouts or numbers of dimensions fail with its texts below
    m = metas[0]
    layout = m.layout or {2: "HW", 3: "HWC", 4: "FHWC"}.get(m.ndim, "")
    allowed = "Valid layouts are:\n" + "".join(f"{x}\n" for x in _WP_LAYOUTS)
    if m.ndim is not None and not m.layout and not layout:
        raise ValueError(f"The number of dimensions {m.ndim} does not match any of the allowed "
                         f"layouts for input 0. {allowed}")
    if m.ndim is not None and (layout not in _WP_LAYOUTS or len(layout) != m.ndim):
        raise ValueError(f'The layout "{layout}" does not match any of the allowed layouts for '
                         f"input 0. {allowed}")
    if m.dtype is not None and m.dtype not in _WP_TYPES:
        raise ValueError("The operator accepts the following input types: uint8, int16, "
                         "uint16, float.")
    if len(metas) > 1 and metas[1].dtype not in (None, "float32"):
        raise ValueError("Transformation matrix can be provided only as float32 values.")
    return [m.with_(layout=layout)]


register(OpSchema(
    "experimental.warp_perspective", ("input", "mtx"), (
        ArgSpec("border_mode", "str", "constant",
                choices=("constant", "replicate", "reflect", "reflect_101", "wrap"),
                doc="How taps outside the input are read: ``constant`` (``fill_value``), "
                    "``replicate``, ``reflect`` (``cba|abc``), ``reflect_101`` (``cb|abc``) or "
                    "``wrap``."),
        ArgSpec("fill_value", "float[]", None,
                doc="The value outside the input with the ``constant`` border: one value, or "
                    "one per channel (default 0)."),
        ArgSpec("interp_type", "interp", "linear", doc="Interpolation: nn, linear or cubic."),
        ArgSpec("inverse_map", "bool", True,
                doc="True: ``matrix`` maps destination to source coordinates; False: source "
                    "to destination (it is inverted first)."),
        ArgSpec("matrix", "float[]", None, tensor=True,
                doc="The 3 x 3 perspective matrix (a per-sample Batch of 3 x 3 arrays "
                    "allowed); the second input may give it instead. Like OpenCV's "
                    "``warpPerspective`` with ``inverse_map`` as ``WARP_INVERSE_MAP``."),
        ArgSpec("pixel_origin", "str", "corner", choices=("corner", "center"),
                doc="``corner``: ``(0, 0)`` is the top-left corner of the first pixel (like "
                    "OpenGL); ``center``: its center (like OpenCV)."),
        ArgSpec("size", "float[]", None, tensor=True,
                doc="Output ``(height, width)``, rounded, at least 1 (default: the input "
                    "size); the channel dimension excluded."),
    ), _perspective_infer, min_inputs=1, public_name="experimental.warp_perspective",
    doc="Performs a perspective transform on the images (HW / HWC, uint8, int16, uint16 or "
        "float32, at most 4 channels; planar CHW: every plane) or on every frame of sequences. Source: DALI "
        "``experimental.warp_perspective`` (its CPU operator is OpenCV's ``warpPerspective``)."))


def _remap_infer(metas, args):
    m = metas[0]
    if m.ndim is not None and m.ndim != 3:
        raise ValueError("Input has to be a HWC image.")
    if m.dtype is not None and m.dtype not in _WP_TYPES:
        raise ValueError(f"Unsupported input type: {m.dtype} (remap takes uint8, int16, "
                         f"uint16 or float32)")
    for name, mm in zip(("mapx", "mapy"), metas[1:]):
        if mm.dtype is not None and mm.dtype != "float32":
            raise ValueError(f"remap: {name} must be float32, got {mm.dtype}")
    return [m.with_(layout=m.layout or "HWC")]


register(OpSchema(
    "experimental.remap", ("input", "mapx", "mapy"), (
        ArgSpec("interp", "interp", "linear", doc="Interpolation: nn or linear."),
        ArgSpec("pixel_origin", "str", "corner", choices=("corner", "center"),
                doc="Which point of a pixel the map coordinates ``(0, 0)`` name: the corner "
                    "of the first pixel (default) or its center (to match OpenCV)."),
    ), _remap_infer, public_name="experimental.remap",
    doc="``output(x, y) = input(mapx(x, y), mapy(x, y))`` for HWC images; ``mapx`` / ``mapy`` "
        "are float32 ``H x W`` (or ``H x W x 1``) maps of the input's size; points outside the "
        "input read 0. Source: DALI ``experimental.remap`` (GPU-only in DALI 2.4; ndd's CPU "
        "kernel follows its documentation)."))
