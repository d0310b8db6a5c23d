"""Color ops: ``brightness_contrast``, ``hsv``, ``brightness``, ``contrast``, ``hue``,
``saturation``, ``color_twist`` and ``color_space_conversion``.

Source: DALI 2.4's operators of those names (argument names, defaults and the float32
arithmetic measured on its CPU operators).
"""
from __future__ import annotations

from compiler.schema import REQUIRED, ArgSpec, OpSchema, register


def _color_infer(default_dtype):
    def infer(metas, args):
        m = metas[0]
        layout = m.layout or {3: "HWC", 4: "FHWC"}.get(m.ndim, "")
        if m.ndim is not None and (layout not in ("HWC", "FHWC", "DHWC")
                                   or len(layout) != m.ndim):
            raise ValueError(f"expected HWC images, or FHWC / DHWC sequences and volumes, got "
                             f"{m.ndim}-D samples with layout {m.layout!r}")
        return [m.with_(dtype=args.get("dtype") or default_dtype or m.dtype, layout=layout)]
    return infer


register(OpSchema(
    "brightness_contrast", ("input",), (
        ArgSpec("brightness", "float", 1.0, tensor=True, doc="Brightness multiplier."),
        ArgSpec("brightness_shift", "float", 0.0, tensor=True,
                doc="Brightness shift, in units of the output range (1.0 for floats, the "
                    "type's maximum for integers)."),
        ArgSpec("contrast", "float", 1.0, tensor=True,
                doc="Contrast multiplier; 0 gives a uniform ``contrast_center``."),
        ArgSpec("contrast_center", "float", None, tensor=True,
                doc="Intensity unaffected by contrast (default: half the input type's positive "
                    "range, rounded up: 128 for uint8; 0.5 for floats)."),
        ArgSpec("dtype", "dtype", None, doc="Output type (default: the input type)."),
    ), _color_infer(None), public_name="brightness_contrast",
    doc="``out = brightness_shift * output_range + brightness * (contrast_center + contrast * "
        "(in - contrast_center))``, converted to the output type with ``cast``'s rounding and "
        "saturation. Source: DALI ``brightness_contrast``."))

register(OpSchema(
    "hsv", ("input",), (
        ArgSpec("dtype", "dtype", "uint8",
                doc="Output type (DALI's default uint8, whatever the input type)."),
        ArgSpec("hue", "float", 0.0, tensor=True,
                doc="Hue delta in degrees (an angle: values wrap around)."),
        ArgSpec("saturation", "float", 1.0, tensor=True, doc="Saturation multiplier."),
        ArgSpec("value", "float", 1.0, tensor=True, doc="Value (brightness) multiplier."),
    ), _color_infer(None), public_name="hsv",
    doc="Adjusts hue, saturation and value of RGB images, approximated (as DALI does) by a "
        "linear transform in RGB: the color is taken to YIQ, its chroma rotated by ``hue`` and "
        "scaled by ``saturation``, everything scaled by ``value``, and taken back. Source: "
        "DALI ``hsv``."))


_BRIGHTNESS = ArgSpec("brightness", "float", 1.0, tensor=True, doc="Brightness multiplier.")
_DTYPE = ArgSpec("dtype", "dtype", None, doc="Output type (default: the input type).")
_IMAGE_TYPE = ArgSpec("image_type", "image_type", "RGB",
                      doc="The color space of the input and output. Accepted and, as in DALI "
                          "2.4, not used: the channels are treated as RGB.")
_HUE = ArgSpec("hue", "float", 0.0, tensor=True,
               doc="Hue change in degrees (an angle: values wrap around).")
_SATURATION = ArgSpec("saturation", "float", 1.0, tensor=True,
                      doc="Saturation factor: 0 desaturates completely, 1 changes nothing.")

register(OpSchema(
    "brightness", ("input",), (
        _BRIGHTNESS,
        ArgSpec("brightness_shift", "float", 0.0, tensor=True,
                doc="Brightness shift, in units of the output range (1.0 for floats, the "
                    "type's maximum for integers)."),
        _DTYPE,
    ), _color_infer(None), public_name="brightness",
    doc="``out = brightness_shift * output_range + brightness * in``: ``brightness_contrast`` "
        "with ``contrast`` 1 (the same float32 arithmetic and rounding). Source: DALI "
        "``brightness``."))

register(OpSchema(
    "contrast", ("input",), (
        ArgSpec("contrast", "float", 1.0, tensor=True,
                doc="Contrast multiplier; 0 gives a uniform ``contrast_center``."),
        ArgSpec("contrast_center", "float", None, tensor=True,
                doc="Intensity unaffected by contrast (default: half the input type's positive "
                    "range, rounded up: 128 for uint8; 0.5 for floats)."),
        _DTYPE,
    ), _color_infer(None), public_name="contrast",
    doc="``out = contrast_center + contrast * (in - contrast_center)``: ``brightness_contrast`` "
        "with ``brightness`` 1 (the same float32 arithmetic and rounding). Source: DALI "
        "``contrast``."))

register(OpSchema(
    "hue", ("input",), (_DTYPE, _HUE, _IMAGE_TYPE), _color_infer(None), public_name="hue",
    doc="Rotates the hue of RGB images: ``hsv`` with only ``hue`` set (the YIQ approximation), "
        "output type defaulting to the input's. Source: DALI ``hue``."))

register(OpSchema(
    "saturation", ("input",), (_DTYPE, _IMAGE_TYPE, _SATURATION), _color_infer(None),
    public_name="saturation",
    doc="Scales the saturation of RGB images: ``hsv`` with only ``saturation`` set (the YIQ "
        "approximation), output type defaulting to the input's. Source: DALI ``saturation``."))

register(OpSchema(
    "color_twist", ("input",), (
        ArgSpec("brightness", "float", 1.0, tensor=True,
                doc="Brightness factor: 0 gives black, 1 changes nothing."),
        ArgSpec("contrast", "float", 1.0, tensor=True,
                doc="Contrast factor: 0 gives a uniform grey (128 for every integer input type, "
                    "as in DALI; 0.5 for floats), 1 changes nothing."),
        _DTYPE, _HUE, _IMAGE_TYPE, _SATURATION,
    ), _color_infer(None), public_name="color_twist",
    doc="Adjusts hue, saturation, contrast and brightness of RGB images in one affine map: "
        "``out = brightness * (center + contrast * (hsv(in) - center))``, with ``hsv``'s YIQ "
        "matrix for hue and saturation and ``center`` 128 (integer inputs) or 0.5 (floats). Source: "
        "DALI ``color_twist``."))

#: the conversions DALI 2.4's CPU ``color_space_conversion`` implements (uint8 only)
CSC_CONVERSIONS = frozenset({
    ("RGB", "BGR"), ("BGR", "RGB"), ("RGB", "GRAY"), ("BGR", "GRAY"), ("GRAY", "RGB"),
    ("GRAY", "BGR"), ("RGB", "YCbCr"), ("BGR", "YCbCr"), ("YCbCr", "RGB"), ("YCbCr", "BGR"),
    ("GRAY", "YCbCr"), ("YCbCr", "GRAY")})


def _csc_infer(metas, args):
    m = metas[0]
    src, dst = args["image_type"], args["output_type"]
    if (src, dst) not in CSC_CONVERSIONS:
        raise ValueError(f"conversion not supported: image_type {src} to output_type {dst} "
                         f"(supported: RGB, BGR, GRAY and YCbCr to one another)")
    if m.dtype is not None and m.dtype != "uint8":
        raise ValueError(f"Color space conversion accept only uint8 tensors, got {m.dtype}")
    layout = m.layout or {3: "HWC", 4: "FHWC"}.get(m.ndim, "")
    if m.ndim is not None and (layout not in ("HWC", "FHWC", "DHWC", "FDHWC")
                               or len(layout) != m.ndim):
        raise ValueError(f"expected HWC images, or FHWC / DHWC / FDHWC sequences and volumes, "
                         f"got {m.ndim}-D samples with layout {m.layout!r}")
    return [m.with_(layout=layout)]


register(OpSchema(
    "color_space_conversion", ("input",), (
        ArgSpec("image_type", "image_type", REQUIRED, doc="The color space of the input."),
        ArgSpec("output_type", "image_type", REQUIRED, doc="The color space of the output."),
    ), _csc_infer, public_name="color_space_conversion",
    doc="Converts uint8 images between RGB, BGR, GRAY (1 channel) and YCbCr (ITU-R BT.601, "
        "16..235 luma), with DALI 2.4's arithmetic: GRAY from RGB / BGR in 15-bit fixed point, "
        "the YCbCr conversions in float32, rounded to nearest. Source: DALI "
        "``color_space_conversion``."))
