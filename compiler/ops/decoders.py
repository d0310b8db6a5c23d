"""Decoders (images, ``.npy`` bytes, compressed data) and ``peek_image_shape``."""
from __future__ import annotations

from compiler.ir import ValueMeta
from compiler.ops.geometry import CROP_WINDOW_ARGS
from compiler.schema import REQUIRED, ArgSpec, OpSchema, register

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
             "unsupported data. With ``device=\"gpu\"`` the files are read on the host and "
             "the images written on the GPU (DALI's mixed decoders). Source: DALI "
             "``decoders.image``.")

register(OpSchema("decoders.image", ("input",), _COMMON, _image_infer,
                  public_name="decoders.image", devices=("cpu", "gpu"),
                  doc="Decodes images." + _DOC_TAIL))
register(OpSchema("decoders.image_crop", ("input",), _COMMON + _CROP, _image_infer,
                  public_name="decoders.image_crop", devices=("cpu", "gpu"),
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
    ), _image_infer, min_inputs=1, public_name="decoders.image_slice", devices=("cpu", "gpu"),
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
    devices=("cpu", "gpu"),
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


def _bytes_input(m, op):
    if m.dtype is not None and m.dtype not in ("uint8", "int8"):
        raise TypeError(f"the input must be 1-D uint8 samples of encoded bytes, got {m.dtype}")
    if m.ndim is not None and m.ndim != 1:
        raise ValueError(f"the input must be 1-D samples of encoded bytes, got {m.ndim}-D "
                         f"samples")


def _numpy_infer(metas, args):
    m = metas[0]
    if m.dtype is not None and m.dtype not in ("uint8", "int8"):     # any shape: read flat
        raise TypeError(f"the input must be uint8 samples of .npy bytes, got {m.dtype}")
    return [ValueMeta(dtype=args.get("dtype"), ndim=None, layout="")]


register(OpSchema(
    "decoders.numpy", ("data",), (
        ArgSpec("dtype", "dtype", None,
                doc="Output type (default: the arrays' own, which must then be the same for "
                    "every sample); values convert as ``cast`` does."),
    ), _numpy_infer, public_name="decoders.numpy",
    doc="Decodes serialized ``.npy`` files (format version 1.0; C or Fortran order; bool, "
        "integers, float16/32/64, little-endian) given as 1-D uint8 samples into arrays of "
        "their shape. Every sample must have the same number of dimensions. Raises ValueError "
        "naming the sample for other versions, big-endian data, structured/complex/object "
        "dtypes and truncated data. Source: DALI ``decoders.numpy``."))

INFLATE_ALGORITHMS = ("LZ4", "DEFLATE")


def _inflate_infer(metas, args):
    _bytes_input(metas[0], "decoders.inflate")
    algo = str(args.get("algorithm", "LZ4")).upper()
    if algo not in INFLATE_ALGORITHMS:
        raise ValueError(f"Unknown inflate algorithm: {args.get('algorithm')!r} (supported: "
                         f"LZ4, and ndd's DEFLATE)")
    shape = args.get("shape")
    nd = None if shape is None else (1 if isinstance(shape, (int, float)) else len(shape))
    chunked = any(k in args for k in ("chunk_offsets", "chunk_sizes"))
    layout = args.get("layout") or ""
    if layout and nd is not None and len(layout) != nd:
        raise ValueError(f"The layout {layout!r} does not match the shape of a chunk "
                         f"({nd} dimensions)")
    if chunked:
        nd = None if nd is None else nd + 1
        if layout:
            layout = (args.get("sequence_axis_name") or "F") + layout
    return [ValueMeta(dtype=args.get("dtype") or "uint8", ndim=nd, layout=layout)]


register(OpSchema(
    "decoders.inflate", ("input",), (
        ArgSpec("algorithm", "str", "LZ4",
                doc="LZ4 (raw LZ4 blocks, as nvCOMP writes them) or, in ndd, DEFLATE (raw "
                    "deflate streams, RFC 1951)."),
        ArgSpec("check_output_size", "bool", False,
                doc="Ignored: ndd always checks that each chunk inflates to its shape."),
        ArgSpec("chunk_offsets", "int[]", None, tensor=True,
                doc="Where the consecutive chunks of a sample start (bytes); without "
                    "chunk_sizes the last one ends at the sample's end."),
        ArgSpec("chunk_sizes", "int[]", None, tensor=True,
                doc="Sizes of the consecutive chunks (bytes); without chunk_offsets they are "
                    "packed from the sample's start."),
        ArgSpec("dtype", "dtype", "uint8", doc="Type of the inflated data."),
        ArgSpec("layout", "layout", "", doc="Layout of one inflated chunk."),
        ArgSpec("sequence_axis_name", "layout", "F",
                doc="Name of the outer (chunks) axis added for chunked samples when a layout "
                    "is given."),
        ArgSpec("shape", "int[]", REQUIRED, tensor=True,
                doc="Shape of one inflated chunk."),
    ), _inflate_infer, public_name="decoders.inflate",
    doc="Decompresses 1-D uint8 samples (one chunk, or several chunks of the same inflated "
        "shape stacked along a new outer axis) into tensors of ``shape`` and ``dtype``. Raises "
        "ValueError naming the sample and chunk for corrupt data or a size that does not match "
        "``shape``. Source: DALI ``decoders.inflate`` (GPU-only in DALI 2.4; ndd runs it on "
        "the CPU with the ``lz4`` and ``zlib`` libraries)."))
