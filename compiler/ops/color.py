"""Color ops: ``brightness_contrast``, ``hsv``, ``brightness``, ``contrast``, ``hue``,
``saturation``, ``color_twist``, ``color_space_conversion``, ``equalize``, ``clahe``,
``debayer`` and ``jpeg_compression_distortion``.

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
    ), _color_infer(None), public_name="brightness_contrast", devices=("cpu", "gpu"),
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
    ), _color_infer(None), public_name="hsv", devices=("cpu", "gpu"),
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
    ), _color_infer(None), public_name="brightness", devices=("cpu", "gpu"),
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
    ), _color_infer(None), public_name="contrast", devices=("cpu", "gpu"),
    doc="``out = contrast_center + contrast * (in - contrast_center)``: ``brightness_contrast`` "
        "with ``brightness`` 1 (the same float32 arithmetic and rounding). Source: DALI "
        "``contrast``."))

register(OpSchema(
    "hue", ("input",), (_DTYPE, _HUE, _IMAGE_TYPE), _color_infer(None), public_name="hue",
    devices=("cpu", "gpu"),
    doc="Rotates the hue of RGB images: ``hsv`` with only ``hue`` set (the YIQ approximation), "
        "output type defaulting to the input's. Source: DALI ``hue``."))

register(OpSchema(
    "saturation", ("input",), (_DTYPE, _IMAGE_TYPE, _SATURATION), _color_infer(None),
    public_name="saturation", devices=("cpu", "gpu"),
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
    ), _color_infer(None), public_name="color_twist", devices=("cpu", "gpu"),
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


# ---------------------------------------------- histograms, demosaicing, JPEG artefacts
def _u8_image_infer(op, layouts):
    def infer(metas, args):
        m = metas[0]
        layout = m.layout or {2: "HW", 3: "HWC", 4: "FHWC"}.get(m.ndim, "")
        if m.dtype is not None and m.dtype != "uint8":
            raise ValueError(f"Unsupported input type for {op} operator: {m.dtype}. Expected "
                             f"input type: `uint8_t`.")
        if m.ndim is not None and (layout not in layouts or len(layout) != m.ndim):
            raise ValueError(f"{op}: the layout {layout!r} ({m.ndim}-D samples) does not match "
                             f"any of the allowed layouts: {', '.join(layouts)}")
        return [m.with_(layout=layout)]
    return infer


register(OpSchema(
    "equalize", ("input",), (),
    _u8_image_infer("equalize", ("HW", "HWC", "CHW", "FHW", "FHWC", "FCHW")),
    public_name="equalize",
    doc="Histogram equalization of every channel of uint8 images (or of every frame of "
        "sequences), as OpenCV's ``equalizeHist``. Source: DALI ``equalize``."))


def _clahe_infer(metas, args):
    for name in ("tiles_x", "tiles_y"):
        if args.get(name) is not None and args[name] <= 0:
            raise ValueError(f"argument '{name}' must be positive, got {args[name]}")
    bins = args.get("bins", 256)
    if bins is not None and (bins <= 0 or bins & (bins - 1)):
        raise ValueError(f"argument 'bins' must be a power of 2, got {bins}")
    return _u8_image_infer("clahe", ("HWC",))(metas, args)


register(OpSchema(
    "clahe", ("input",), (
        ArgSpec("bins", "int", 256,
                doc="Number of histogram bins, a power of 2; accepted and, as in DALI's CPU "
                    "operator, not used (256 bins)."),
        ArgSpec("clip_limit", "float", REQUIRED,
                doc="Relative clip limit: each tile's histogram is clipped at ``clip_limit * "
                    "tile_area / 256`` (at least 1; 0 or less: no clipping)."),
        ArgSpec("luma_only", "bool", True,
                doc="For RGB images: equalize only the L channel of CIE Lab (default), else "
                    "every channel alone."),
        ArgSpec("tiles_x", "int", REQUIRED, doc="Number of tiles along the width."),
        ArgSpec("tiles_y", "int", REQUIRED, doc="Number of tiles along the height."),
    ), _clahe_infer, public_name="clahe",
    doc="Contrast Limited Adaptive Histogram Equalization of uint8 HWC images (1 or 3 "
        "channels, RGB order), as OpenCV's ``CLAHE``: per-tile clipped histograms, their "
        "lookup tables blended bilinearly between tile centers. Source: DALI ``clahe``."))


def _debayer_infer(metas, args):
    m = metas[0]
    layout = m.layout or {2: "HW", 3: "HWC"}.get(m.ndim, "")
    if m.dtype is not None and m.dtype not in ("uint8", "uint16"):
        raise ValueError(f"debayer supports uint8 and uint16 input, got {m.dtype}")
    if m.ndim is not None and (layout not in ("HW", "HWC", "FHW", "FHWC")
                               or len(layout) != m.ndim):
        raise ValueError(f"debayer expects HW (or HWC with 1 channel) images or FHW "
                         f"sequences, got {m.ndim}-D samples with layout {m.layout!r}")
    alg = args.get("algorithm")
    if alg is not None and alg not in ("default", "bilinear_ocv", "edgeaware_ocv", "vng_ocv",
                                       "gray_ocv", "default_npp"):
        raise ValueError(f"Unsupported debayer algorithm was specified: `{alg}`.")
    seq = layout.startswith("F")
    return [m.with_(ndim=4 if seq else 3, layout="FHWC" if seq else "HWC")]


register(OpSchema(
    "debayer", ("input",), (
        ArgSpec("algorithm", "str", "default",
                doc="CPU algorithms: ``bilinear_ocv`` (``default``), ``edgeaware_ocv``, "
                    "``vng_ocv`` (uint8 only), ``gray_ocv`` (grayscale output); "
                    "``default_npp`` is GPU-only."),
        ArgSpec("blue_position", "int[]", REQUIRED, tensor=True, length=2,
                doc="``(y, x)`` of blue in the 2 x 2 Bayer tile that starts at the second row "
                    "and column: (0, 0) BGGR, (0, 1) GBRG, (1, 0) GRBG, (1, 1) RGGB."),
    ), _debayer_infer, public_name="debayer",
    doc="Demosaics single-channel Bayer images (uint8 / uint16, even height and width) to RGB "
        "HWC (FHWC for sequences), as OpenCV's ``demosaicing``. Source: DALI ``debayer``."))


def _jpeg_infer(metas, args):
    m = metas[0]
    layout = m.layout or {3: "HWC", 4: "FHWC"}.get(m.ndim, "")
    if m.dtype is not None and m.dtype != "uint8":
        raise ValueError(f"jpeg_compression_distortion supports only uint8 input, got "
                         f"{m.dtype}")
    if m.ndim is not None and (layout not in ("HWC", "FHWC") or len(layout) != m.ndim):
        raise ValueError(f"expected HWC images or FHWC sequences, got {m.ndim}-D samples with "
                         f"layout {m.layout!r}")
    return [m.with_(layout=layout)]


register(OpSchema(
    "jpeg_compression_distortion", ("input",), (
        ArgSpec("quality", "int", 50, tensor=True,
                doc="JPEG quality, 1 (lowest) to 100; values outside are clamped."),
    ), _jpeg_infer, public_name="jpeg_compression_distortion",
    doc="Introduces JPEG compression artefacts into uint8 RGB images: a JPEG encode and "
        "decode at ``quality`` (by Pillow, bit-exact with DALI 2.4's CPU operator). Source: "
        "DALI ``jpeg_compression_distortion``."))
