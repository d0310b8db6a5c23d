"""Resampling ops beyond ``resize``: ``tensor_resize`` (any axes) and ``resize_crop_mirror``
(resize, crop and flip in one op).

Source: DALI 2.4 ``tensor_resize`` / ``resize_crop_mirror`` (argument names, defaults and error
rules; behaviour observed by running DALI's CPU operators).
"""
from __future__ import annotations

from compiler.ops.geometry import CROP_WINDOW_ARGS
from compiler.schema import ArgSpec, OpSchema, register

TENSOR_RESIZE_DTYPES = ("uint8", "int16", "uint16", "float32")

_FILTER_ARGS = (
    ArgSpec("interp_type", "interp", "linear",
            doc="Filter: nn, linear, cubic, lanczos3, triangular, gaussian."),
    ArgSpec("min_filter", "interp", None, doc="Filter used when downscaling."),
    ArgSpec("mag_filter", "interp", None, doc="Filter used when upscaling."),
    ArgSpec("antialias", "bool", True, doc="Widen the filter when downscaling."),
    ArgSpec("mode", "str", "default", choices=("default", "stretch", "not_larger", "not_smaller"),
            doc="How the given extents are reconciled with the aspect ratio."),
    ArgSpec("max_size", "float[]", None, doc="Upper limit of the output extents."),
    ArgSpec("roi_start", "float[]", None, tensor=True, doc="Start of the input region."),
    ArgSpec("roi_end", "float[]", None, tensor=True, doc="End of the input region."),
    ArgSpec("roi_relative", "bool", False, doc="roi_start/roi_end are relative (0..1)."),
    ArgSpec("subpixel_scale", "bool", True,
            doc="Keep fractional output sizes by adjusting the input region."),
    ArgSpec("minibatch_size", "int", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("temp_buffer_hint", "int", None, doc="Ignored (DALI tuning knob)."),
)


def _tensor_resize_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in TENSOR_RESIZE_DTYPES:
        raise TypeError(f"tensor_resize: Unsupported type: {m.dtype}. Supported types are: "
                        f"uint8, int16, uint16 and float")
    dt = args.get("dtype") or m.dtype
    if m.dtype is not None and dt not in (m.dtype, "float32"):
        raise ValueError(f"Resize must output original type or float. Got: {dt}")
    if args.get("axes") is not None and args.get("axis_names") is not None:
        raise ValueError("Arguments `axes` and `axis_names` are mutually exclusive")
    if args.get("sizes") is not None and args.get("scales") is not None:
        raise ValueError("Need one of ``scales`` or ``sizes``, but not both")
    if args.get("scales") is not None and args.get("mode") in ("not_larger", "not_smaller"):
        raise ValueError("Providing ``scales`` is incompatible with not-smaller or not-larger "
                         "modes")
    return [m.with_(dtype=dt)]


register(OpSchema(
    "tensor_resize", ("input",), (
        ArgSpec("sizes", "float[]", None, tensor=True,
                doc="Output extents of the axes (0: derived by ``mode``)."),
        ArgSpec("scales", "float[]", None, tensor=True,
                doc="Scale factors of the axes: ``out = size_rounding(scale * extent)``."),
        ArgSpec("axes", "int[]", None, doc="Axes sizes/scales/max_size/roi_* refer to "
                                           "(default all; negative from the back)."),
        ArgSpec("axis_names", "layout", None, doc="The same axes by layout letters."),
        ArgSpec("alignment", "float[]", (0.5,), tensor=True,
                doc="Point of the region kept in place when the size is rounded: "
                    "(1 - a) * start + a * end."),
        ArgSpec("size_rounding", "str", "round", choices=("round", "truncate", "ceil"),
                doc="Rounding of fractional output extents."),
        ArgSpec("dtype", "dtype", None, doc="Output type: the input's (default) or float32."),
    ) + _FILTER_ARGS, _tensor_resize_infer, public_name="tensor_resize",
    doc="Resizes any axes of the samples (up to 3 adjacent ones; uint8, int16, uint16 or "
        "float32) with ``resize``'s filters. Axes not named keep their extent. Source: DALI "
        "``tensor_resize``."))

_SPATIAL = ("HWC", "CHW", "HW")


def _rcm_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in TENSOR_RESIZE_DTYPES:
        raise TypeError(f"resize_crop_mirror: Unsupported type: {m.dtype}. Supported types "
                        f"are: uint8, int16, uint16 and float")
    dt = args.get("dtype")
    if dt is not None and m.dtype is not None and dt not in (m.dtype, "float32"):
        raise ValueError(f"Resize must output original type or float. Got: {dt}")
    if m.ndim is not None and m.ndim not in (2, 3):
        raise ValueError(f"expected images with 2 (HW) or 3 (HWC/CHW) dimensions, got {m.ndim}")
    layout = m.layout or {3: "HWC", 2: "HW"}.get(m.ndim, "")
    if layout and layout not in _SPATIAL:
        raise ValueError(f"expected layout HWC, CHW or HW, got {layout!r}")
    return [m.with_(dtype=args.get("dtype") or m.dtype, layout=layout)]


register(OpSchema(
    "resize_crop_mirror", ("input",), (
        ArgSpec("size", "float[]", None, tensor=True,
                doc="Resized size (height, width); 0 or a missing extent keeps the aspect."),
        ArgSpec("resize_x", "float", None, tensor=True, doc="Resized width in pixels."),
        ArgSpec("resize_y", "float", None, tensor=True, doc="Resized height in pixels."),
        ArgSpec("resize_z", "float", None, tensor=True, doc="Resized depth (volumes only)."),
        ArgSpec("resize_shorter", "float", None, tensor=True,
                doc="Length of the shorter side; the longer one keeps the aspect ratio."),
        ArgSpec("resize_longer", "float", None, tensor=True,
                doc="Length of the longer side; the shorter one keeps the aspect ratio."),
    ) + CROP_WINDOW_ARGS + (
        ArgSpec("crop_d", "float", None, tensor=True, doc="Crop depth (volumes only)."),
        ArgSpec("crop_pos_z", "float", 0.5, tensor=True, doc="Depth anchor (volumes only)."),
        ArgSpec("mirror", "int", 0, tensor=True,
                doc="Flip the result: 1 horizontally, 2 vertically, 3 both (DALI's bits)."),
        ArgSpec("rounding", "str", "round", choices=("round", "truncate"),
                doc="Rounding of the crop anchor."),
        ArgSpec("dtype", "dtype", None, doc="Output type (default: the input type)."),
    ) + _FILTER_ARGS, _rcm_infer, public_name="resize_crop_mirror",
    doc="Resizes, then crops (``crop`` / ``crop_h`` / ``crop_w`` at ``crop_pos_*`` of the "
        "resized image), then mirrors, in one resampling of the crop's source region. Source: "
        "DALI ``resize_crop_mirror``."))
