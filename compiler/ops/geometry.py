"""Geometric image ops: resize, crop, crop_mirror_normalize, flip, random_resized_crop."""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def _spatial(layout: str | None) -> str:
    return "".join(c for c in (layout or "") if c in "DHW")


def _check_image(metas, op, sequences=False):
    m = metas[0]
    if sequences and m.ndim == 4:       # a sequence of frames: the op applies to every frame
        if m.layout and m.layout not in ("FHWC", "FCHW"):
            raise ValueError(f"expected layout FHWC or FCHW for 4-D samples (sequences of "
                             f"frames), got {m.layout!r}")
        return
    if m.ndim is not None and m.ndim not in (2, 3):
        more = " or 4 (FHWC/FCHW sequences)" if sequences else ""
        raise ValueError(f"expected images with 2 (HW) or 3 (HWC/CHW) dimensions{more}, got "
                         f"{m.ndim}")
    if m.layout and m.layout not in ("HWC", "CHW", "HW"):
        raise ValueError(f"expected layout HWC, CHW or HW, got {m.layout!r}")


def _same(metas, args):
    _check_image(metas, "")
    m = metas[0]
    layout = m.layout or {3: "HWC", 2: "HW"}.get(m.ndim, "")
    return [m.with_(dtype=args.get("dtype") or m.dtype, layout=layout)]


def _same_or_sequence(metas, args):
    """:func:`_same` that also takes sequences of frames (FHWC / FCHW; 4-D without a layout
    is FHWC), as DALI's resize, crop and flip do."""
    m = metas[0]
    if m.ndim != 4:
        return _same(metas, args)
    _check_image(metas, "", sequences=True)
    return [m.with_(dtype=args.get("dtype") or m.dtype, layout=m.layout or "FHWC")]


_RESIZE_ARGS = (
    ArgSpec("size", "float[]", None, tensor=True,
            doc="Output size (height, width) in pixels; 0 or a missing extent keeps the aspect."),
    ArgSpec("resize_x", "float", None, tensor=True, doc="Output width in pixels."),
    ArgSpec("resize_y", "float", None, tensor=True, doc="Output height in pixels."),
    ArgSpec("resize_shorter", "float", None, tensor=True,
            doc="Length of the shorter side; the longer one keeps the aspect ratio."),
    ArgSpec("resize_longer", "float", None, tensor=True,
            doc="Length of the longer side; the shorter one keeps the aspect ratio."),
    ArgSpec("mode", "str", "default", choices=("default", "stretch", "not_larger", "not_smaller"),
            doc="How size/resize_x/resize_y are reconciled with the aspect ratio."),
    ArgSpec("max_size", "float[]", None, doc="Upper limit of the output size (height, width)."),
    ArgSpec("interp_type", "interp", "linear", tensor=False,
            doc="Filter: nn, linear, cubic, lanczos3, triangular, gaussian."),
    ArgSpec("min_filter", "interp", None, doc="Filter used when downscaling."),
    ArgSpec("mag_filter", "interp", None, doc="Filter used when upscaling."),
    ArgSpec("antialias", "bool", True, doc="Widen the filter when downscaling."),
    ArgSpec("dtype", "dtype", None, doc="Output type (default: the input type)."),
    ArgSpec("roi_start", "float[]", None, tensor=True, doc="Start of the input region (h, w)."),
    ArgSpec("roi_end", "float[]", None, tensor=True, doc="End of the input region (h, w)."),
    ArgSpec("roi_relative", "bool", False, doc="roi_start/roi_end are relative (0..1)."),
    ArgSpec("subpixel_scale", "bool", True,
            doc="Keep fractional output sizes by adjusting the input region."),
    ArgSpec("minibatch_size", "int", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("temp_buffer_hint", "int", None, doc="Ignored (DALI tuning knob)."),
)

register(OpSchema(
    "resize", ("input",), _RESIZE_ARGS, _same_or_sequence, public_name="resize",
    devices=("cpu", "gpu"),
    deprecated={"image_type": None, "save_attrs": None},
    doc="Resizes images (HWC/CHW/HW; uint8, int16, uint16 or float32). Output sizes round half "
        "up. Source: DALI ``resize``."))

# The crop window, shared with decoders.image_crop.
CROP_WINDOW_ARGS = (
    ArgSpec("crop", "float[]", None, tensor=True, length=2, doc="Crop (height, width) in pixels."),
    ArgSpec("crop_h", "float", None, tensor=True, doc="Crop height in pixels."),
    ArgSpec("crop_w", "float", None, tensor=True, doc="Crop width in pixels."),
    ArgSpec("crop_pos_x", "float", 0.5, tensor=True,
            doc="Normalized (0..1) horizontal anchor: x0 = round(pos * (W - crop_w))."),
    ArgSpec("crop_pos_y", "float", 0.5, tensor=True,
            doc="Normalized (0..1) vertical anchor: y0 = round(pos * (H - crop_h))."),
)
_CROP_ARGS = CROP_WINDOW_ARGS + (
    ArgSpec("out_of_bounds_policy", "str", "error", choices=("error", "pad", "trim_to_shape"),
            doc="What to do with windows exceeding the image."),
    ArgSpec("fill_values", "float[]", (0.0,), doc="Padding values (scalar or per channel)."),
)

register(OpSchema(
    "crop", ("input",), _CROP_ARGS + (
        ArgSpec("dtype", "dtype", None, doc="Output type (default: input type)."),),
    _same_or_sequence, public_name="crop", deprecated={"image_type": None},
    devices=("cpu", "gpu"),
    doc="Crops images (or every frame of a sequence). Source: DALI ``crop``."))


def _cmn_infer(metas, args):
    _check_image(metas, "")
    m = metas[0]
    in_layout = m.layout or {3: "HWC", 2: "HW"}.get(m.ndim, "")
    out_layout = args.get("output_layout") or in_layout
    if sorted(out_layout) != sorted(in_layout):
        raise ValueError(f"output_layout {out_layout!r} is not a permutation of the input layout "
                         f"{in_layout!r}")
    return [m.with_(dtype=args.get("dtype") or "float32", layout=out_layout)]


register(OpSchema(
    "crop_mirror_normalize", ("input",), _CROP_ARGS + (
        ArgSpec("mirror", "int", 0, tensor=True, doc="1 flips horizontally."),
        ArgSpec("mean", "float[]", (0.0,), tensor=True, doc="Mean (scalar or per channel)."),
        ArgSpec("std", "float[]", (1.0,), tensor=True, doc="Standard deviation."),
        ArgSpec("scale", "float", 1.0, doc="Multiplier applied after normalization."),
        ArgSpec("shift", "float", 0.0, doc="Value added after scaling."),
        ArgSpec("output_layout", "layout", "CHW", doc="Output layout."),
        ArgSpec("dtype", "dtype", "float32", doc="Output type."),
        ArgSpec("pad_output", "bool", False, doc="Pad the channels to 4."),
    ), _cmn_infer, public_name="crop_mirror_normalize", devices=("cpu", "gpu"),
    deprecated={"output_dtype": "dtype", "image_type": None},
    doc="Crops, mirrors and normalizes images in one pass: ``out = (in - mean) / std * scale + "
        "shift``; float32 CHW by default. Source: DALI ``crop_mirror_normalize``."))

register(OpSchema(
    "flip", ("input",), (
        ArgSpec("horizontal", "int", 1, tensor=True, doc="Flip horizontally (1) or not (0)."),
        ArgSpec("vertical", "int", 0, tensor=True, doc="Flip vertically."),
        ArgSpec("depthwise", "int", 0, tensor=True, doc="Flip along depth (volumes)."),
    ), _same_or_sequence, public_name="flip", devices=("cpu", "gpu"),
    doc="Flips images (or every frame of a sequence). Source: DALI ``flip``."))

register(OpSchema(
    "random_resized_crop", ("input",), (
        ArgSpec("size", "float[]", REQUIRED, length=2, doc="Output size (height, width)."),
        ArgSpec("random_area", "float[]", (0.08, 1.0), length=2,
                doc="Range of the crop area as a fraction of the image area."),
        ArgSpec("random_aspect_ratio", "float[]", (3 / 4, 4 / 3), length=2,
                doc="Range of width/height of the crop."),
        ArgSpec("num_attempts", "int", 10, doc="Tries before the fallback window."),
        ArgSpec("interp_type", "interp", "linear", doc="Resampling filter."),
        ArgSpec("min_filter", "interp", None, doc="Filter when downscaling."),
        ArgSpec("mag_filter", "interp", None, doc="Filter when upscaling."),
        ArgSpec("antialias", "bool", True, doc="Antialiasing when downscaling."),
        ArgSpec("dtype", "dtype", None, doc="Output type (default: input type)."),
        ArgSpec("_seeds", "any", None),
    ), _same, traits=frozenset({"random"}), public_name="random_resized_crop",
    devices=("cpu", "gpu"),
    doc="Crops a random window (area fraction in ``random_area``, aspect ratio in "
        "``random_aspect_ratio``) and resizes it to ``size``. Source: DALI "
        "``random_resized_crop``."))
