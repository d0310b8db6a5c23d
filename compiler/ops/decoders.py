"""Image decoders and ``peek_image_shape``."""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.ops.geometry import CROP_WINDOW_ARGS
from compiler.schema import ArgSpec, OpSchema, register

_COMMON = (
    ArgSpec("output_type", "image_type", "RGB",
            doc="Colour space of the output: RGB, BGR, GRAY, YCbCr or ANY_DATA "
                "(ndd.types.* or the string)."),
    ArgSpec("dtype", "dtype", "uint8", doc="Output element type (uint8)."),
    ArgSpec("adjust_orientation", "bool", True, doc="Apply the EXIF orientation."),
    # Accepted for compatibility with DALI; they tune DALI's GPU/hybrid decoders only.
    ArgSpec("hw_decoder_load", "float", None, doc="Ignored on the CPU (DALI tuning knob)."),
    ArgSpec("preallocate_width_hint", "int", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("preallocate_height_hint", "int", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("use_fast_idct", "bool", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("jpeg_fancy_upsampling", "bool", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("device_memory_padding", "int", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("host_memory_padding", "int", None, doc="Ignored (DALI tuning knob)."),
    ArgSpec("affine", "bool", None, doc="Ignored (DALI thread-affinity knob)."),
    ArgSpec("split_stages", "bool", None, doc="Ignored (deprecated in DALI)."),
    ArgSpec("use_chunk_allocator", "bool", None, doc="Ignored (deprecated in DALI)."),
    ArgSpec("memory_stats", "bool", None, doc="Ignored (DALI debugging knob)."),
    ArgSpec("hybrid_huffman_threshold", "int", None, doc="Ignored (DALI GPU decoder knob)."),
    ArgSpec("cache_size", "int", None, doc="Ignored (DALI decoder cache; no cache here)."),
    ArgSpec("cache_threshold", "int", None, doc="Ignored (DALI decoder cache)."),
    ArgSpec("cache_type", "str", None, doc="Ignored (DALI decoder cache)."),
    ArgSpec("cache_debug", "bool", None, doc="Ignored (DALI decoder cache)."),
    ArgSpec("cache_batch_copy", "bool", None, doc="Ignored (DALI decoder cache)."),
)
_CROP = CROP_WINDOW_ARGS


def _image_infer(metas, args):
    return [ValueMeta(dtype=args.get("dtype") or "uint8", ndim=3, layout="HWC")]


_DOC_TAIL = (" Input: encoded files as 1-D uint8 samples (JPEG incl. progressive/CMYK/grayscale, "
             "PNG incl. palette/alpha/16-bit, BMP, TIFF, WebP). Output: HWC uint8 images with 3 "
             "channels (RGB/BGR/YCbCr), 1 (GRAY) or the file's own (ANY_DATA). EXIF orientation "
             "is applied. Raises ValueError naming the sample for corrupt, truncated, empty or "
             "unsupported data. Source: DALI ``decoders.image``.")

register(OpSchema("decoders.image", ("input",), _COMMON, _image_infer,
                  public_name="decoders.image", doc="Decodes images." + _DOC_TAIL))
register(OpSchema("decoders.image_crop", ("input",), _COMMON + _CROP, _image_infer,
                  public_name="decoders.image_crop",
                  doc="Decodes images and crops them (decoding only the window where the codec "
                      "allows)." + _DOC_TAIL))
register(OpSchema(
    "decoders.image_slice", ("input", "anchor", "shape_input"), _COMMON + (
        ArgSpec("start", "float[]", None, tensor=True, doc="Absolute start coordinates."),
        ArgSpec("end", "float[]", None, tensor=True, doc="Absolute end coordinates."),
        ArgSpec("rel_start", "float[]", None, tensor=True, doc="Relative (0..1) start."),
        ArgSpec("rel_end", "float[]", None, tensor=True, doc="Relative (0..1) end."),
        ArgSpec("rel_shape", "float[]", None, tensor=True, doc="Relative (0..1) shape."),
        ArgSpec("shape", "float[]", None, tensor=True, doc="Absolute shape (pixels)."),
        ArgSpec("axis_names", "layout", "WH", doc="Order of the anchor/shape coordinates."),
        ArgSpec("axes", "int[]", None, doc="Axis indices of the anchor/shape coordinates."),
        ArgSpec("normalized_anchor", "bool", True, doc="Anchor input is relative (0..1)."),
        ArgSpec("normalized_shape", "bool", True, doc="Shape input is relative (0..1)."),
    ), _image_infer, min_inputs=1, public_name="decoders.image_slice",
    doc="Decodes images and slices them (anchor/shape given as inputs or arguments)." + _DOC_TAIL))
register(OpSchema(
    "decoders.image_random_crop", ("input",), _COMMON + (
        ArgSpec("random_area", "float[]", (0.08, 1.0), length=2,
                doc="Range of the crop area as a fraction of the image area."),
        ArgSpec("random_aspect_ratio", "float[]", (3 / 4, 4 / 3), length=2,
                doc="Range of the crop's width/height ratio."),
        ArgSpec("num_attempts", "int", 10, doc="Tries before falling back."),
        ArgSpec("_seeds", "any", None),
    ), _image_infer, traits=frozenset({"random"}), public_name="decoders.image_random_crop",
    doc="Decodes a random crop window (area and aspect ratio as in ``random_resized_crop``)."
        + _DOC_TAIL))


def _peek_infer(metas, args):
    return [ValueMeta(dtype=args.get("dtype") or "int64", ndim=1, layout="")]


register(OpSchema(
    "peek_image_shape", ("input",), (
        ArgSpec("dtype", "dtype", "int64", doc="Output type."),
        ArgSpec("adjust_orientation", "bool", True, doc="Report the EXIF-rotated shape."),
        ArgSpec("image_type", "image_type", "RGB",
                doc="Colour space the shape is for: C is 3 for RGB/BGR/YCbCr, 1 for GRAY, the "
                    "file's channels for ANY_DATA."),
    ), _peek_infer, public_name="peek_image_shape",
    doc="Shape (H, W, C) of encoded images without decoding them. Source: DALI "
        "``peek_image_shape``."))
