"""CPU image decoding: ``decode``, ``peek_shape`` and ``image_info``.

The back end of ``ndd.decoders.image``, ``decoders.image_crop`` / ``image_slice`` /
``image_random_crop`` (through ``roi``) and ``ndd.peek_image_shape``. nvImageCodec's CPU
decoder does the work (libjpeg-turbo for JPEG); Pillow decodes what nvImageCodec cannot
(GIF, gray+alpha with ``ANY_DATA``, RGBA BMP, ...). Semantics follow DALI 2.4's
``decoders.image`` (see ``docs/semantics.md`` for where and why we differ).

Every function here handles one sample, is thread-safe, and is meant to be called from a
worker pool; each thread lazily creates its own nvImageCodec decoder.
"""

import operator
from dataclasses import dataclass

import numpy as np

from . import nvimgcodec_backend as nvb
from .color import OUTPUT_DTYPES, convert_depth, rgb_to_gray, rgb_to_ycbcr
from .errors import DecodeError, sample_prefix
from .exif import orientation_swaps_axes, oriented_copy, read_orientation, stored_box
from .formats import diagnose_failure, first_bytes_hex, sniff_format
from .limits import check_image_size, get_max_image_pixels
from .pillow_backend import decode_pillow, file_channels, open_header, pillow_reason
from .structure import (gif_declared_size, jpeg_structure_problem, jpeg_walk, png_chunk_problem,
                        webp_container_problem)

__all__ = ["decode", "peek_shape", "image_info", "parse_image", "ParsedImage", "ImageInfo",
           "OUTPUT_TYPES", "DecodeError", "plain_jpeg", "decode_plain", "plain_decode_args"]

#: DALI's ``DALIImageType`` names accepted as ``output_type``.
OUTPUT_TYPES = ("RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA")
_DTYPE_ALIASES = {"uint8": "uint8", "uint16": "uint16", "float32": "float32", "float": "float32"}


@dataclass(frozen=True)
class ImageInfo:
    """Header facts of an encoded image.

    Attributes
    ----------
    height, width : int
        Size in pixels after applying the EXIF orientation (as decoding returns it).
    channels : int
        Channels stored in the file (gray 1, gray+alpha 2, RGB/YCbCr/palette 3, RGBA and
        CMYK 4).
    format : str
        ``"jpeg"``, ``"png"``, ``"bmp"``, ``"tiff"``, ``"webp"``, ``"jpeg2k"``, ``"pnm"``,
        ``"gif"``, ...
    orientation : int
        EXIF orientation 1..8 (1 when absent).
    bit_depth : int
        Bits per stored sample (8, 16, ...).
    """

    height: int
    width: int
    channels: int
    format: str
    orientation: int
    bit_depth: int = 8


def _as_buffer(data, sample):
    if isinstance(data, (bytes, bytearray, memoryview)):
        buf = np.frombuffer(data, dtype=np.uint8)
    elif isinstance(data, np.ndarray):
        if data.dtype not in (np.uint8, np.int8):
            raise TypeError(f"{sample_prefix(sample)}data must hold encoded bytes as a uint8 "
                            f"array, got dtype {data.dtype}")
        if data.ndim != 1:
            raise TypeError(f"{sample_prefix(sample)}data must be a 1-D array of encoded "
                            f"bytes, got shape {data.shape}")
        buf = np.ascontiguousarray(data).view(np.uint8)
    else:
        raise TypeError(f"{sample_prefix(sample)}data must be bytes or a 1-D uint8 numpy "
                        f"array, got {type(data).__name__}")
    if buf.size == 0:
        raise DecodeError(f"{sample_prefix(sample)}empty input (0 bytes)")
    return buf


def _check_output_type(output_type):
    if output_type.__class__ is str and output_type in OUTPUT_TYPES:    # the common case
        return output_type
    name = getattr(output_type, "name", output_type)
    if isinstance(name, str):
        for ot in OUTPUT_TYPES:
            if name.upper() == ot.upper():
                return ot
    raise ValueError(f"output_type must be one of {', '.join(OUTPUT_TYPES)}, "
                     f"got {output_type!r}")


def _check_dtype(dtype):
    if dtype.__class__ is str and dtype in _DTYPE_ALIASES:              # the common case
        return _DTYPE_ALIASES[dtype]
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name is None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    key = str(name).lower() if name is not None else None
    if key not in _DTYPE_ALIASES:
        raise ValueError(f"dtype must be one of {', '.join(OUTPUT_DTYPES)}, got {dtype!r}")
    return _DTYPE_ALIASES[key]


class ParsedImage:
    """A parsed stream: nvImageCodec ``CodeStream`` when it can read it, else a Pillow header.

    Made by :func:`parse_image`; :func:`decode`, :func:`image_info` and :func:`peek_shape`
    accept it in place of the encoded bytes so that a header read once (e.g. to place a crop
    window) is not parsed again by the decode.  Its header facts (:meth:`info`) are computed
    once.  Not meant to be shared between threads.

    Parsing checks the declared size against :func:`runtime.codecs.limits.
    get_max_image_pixels` (raising :class:`DecodeError` above it), so no pixel buffer is ever
    allocated for an image over the limit.  A PNG or WebP whose chunks do not add up is not
    given to nvImageCodec, whose parsers allocate what a chunk's length field says (4 GB for
    a WebP EXIF chunk, 2 GB for a PNG chunk, in 1 KB files); Pillow reads it, or names the
    problem (``problem``: what the walk found).
    """

    __slots__ = ("buf", "stream", "pil", "fmt", "problem", "_info")

    def __init__(self, buf, sample):
        self.buf = buf
        self._info = None
        self.problem = _container_problem(buf)
        stream = nvb.parse(buf) if self.problem is None and nvb.available() else None
        self.stream = stream if stream is not None and nvb.usable(stream) else None
        self.pil = None
        if self.stream is not None:
            s = self.stream
            self.fmt = s.codec_name
            # a TIFF decoder allocates one whole tile (or strip) besides the image
            tile = (s.tile_width, s.tile_height) if self.fmt == "tiff" else None
            check_image_size(s.width, s.height, sample, self.fmt, tile)
            return
        fmt = sniff_format(buf)
        if fmt == "gif":
            # Pillow applies its own limit before it tells the size (and then only in
            # pixels): the size is read here first, for our limit and message
            size = gif_declared_size(buf)
            if size is not None:
                check_image_size(*size, sample, fmt)
        try:
            self.pil = open_header(buf)
        except Exception as exc:
            if fmt is None:
                raise DecodeError(f"{sample_prefix(sample)}not a recognised image format "
                                  f"(first bytes: {first_bytes_hex(buf)})") from None
            raise DecodeError(f"{sample_prefix(sample)}{diagnose_failure(buf, fmt, 'header')}"
                              f"{_detail(self.problem)}: {pillow_reason(exc)}") from None
        self.fmt = (self.pil.format or "unknown").lower()
        check_image_size(*self.pil.size, sample, self.fmt)

    def info(self):
        """The :class:`ImageInfo` of the stream (read once, then reused)."""
        if self._info is None:
            self._info = self._read_info()
        return self._info

    def _read_info(self):
        if self.stream is not None:
            s = self.stream
            h, w, c = s.height, s.width, s.num_channels
            depth = int(s.precision) or 8 * np.dtype(s.dtype).itemsize
            orientation = read_orientation(self.buf, self.fmt)
        else:
            w, h = self.pil.size
            c = file_channels(self.pil)
            depth = 16 if self.pil.mode.startswith("I;16") else 8
            try:
                orientation = int(self.pil.getexif().get(0x0112, 1))
            except Exception:  # noqa: BLE001 - an unreadable EXIF block: as stored
                orientation = 1
            orientation = orientation if 1 <= orientation <= 8 else 1
        if orientation_swaps_axes(orientation):
            h, w = w, h
        return ImageInfo(int(h), int(w), int(c), self.fmt, orientation, depth)


_Source = ParsedImage


def _container_problem(buf):
    """What is wrong with the chunks of a PNG or WebP stream (None: sound, or another
    format); see :mod:`runtime.codecs.structure`."""
    head = buf[:16].tobytes()
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return png_chunk_problem(buf)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return webp_container_problem(buf)
    return None


def _detail(problem):
    return f" ({problem})" if problem else ""


def _source(data, sample) -> ParsedImage:
    """``data`` itself when already parsed, else the parsed encoded bytes."""
    if data.__class__ is ParsedImage:
        return data
    return ParsedImage(_as_buffer(data, sample), sample)


def parse_image(data, sample=None) -> ParsedImage:
    """Parse an encoded image's header once, for :func:`image_info` and :func:`decode`.

    Parameters
    ----------
    data : bytes or numpy.ndarray or ParsedImage
        The encoded file: bytes, or a 1-D uint8 array (kept alive by the result).
    sample : str, optional
        Names the sample in error messages.

    Returns
    -------
    ParsedImage
        Pass it as ``data`` to :func:`decode` / :func:`image_info` / :func:`peek_shape`: the
        results are exactly those for the bytes, without parsing the header again.

    Raises
    ------
    DecodeError
        Empty or unrecognised data, or an unreadable header.
    TypeError
        ``data`` of the wrong type.
    """
    return _source(data, sample)


def _check_roi(roi, height, width, sample):
    try:
        y0, x0, y1, x1 = (operator.index(v) for v in roi)
    except (TypeError, ValueError):
        raise TypeError(f"{sample_prefix(sample)}roi must be None or 4 integers "
                        f"(y0, x0, y1, x1), got {roi!r}") from None
    if not (0 <= y0 < y1 <= height and 0 <= x0 < x1 <= width):
        raise ValueError(f"{sample_prefix(sample)}roi (y0={y0}, x0={x0}, y1={y1}, x1={x1}) is "
                         f"empty or outside the image of shape (H={height}, W={width}); expected "
                         f"0 <= y0 < y1 <= {height} and 0 <= x0 < x1 <= {width}")
    return y0, x0, y1, x1


def _decode_nvimgcodec(src, output_type, roi, adjust_orientation):
    s = src.stream
    native = np.dtype(s.dtype) == np.uint16
    cmyk = nvb.is_cmyk(s)
    mode = {"RGB": "RGB", "BGR": "BGR", "GRAY": "GRAY", "YCbCr": "RGB",
            "ANY_DATA": "UNCHANGED"}[output_type]
    if cmyk and mode in ("GRAY", "UNCHANGED"):
        mode = "RGB"  # libjpeg-turbo gives no raw CMYK; gray is computed from RGB below
    # nvImageCodec orients CMYK JPEGs and TIFFs itself (its OpenCV route, whose colour and
    # gray conversions differ); every other stream gets the orientation ndd reads
    # (exif.read_orientation, also behind peek_shape), never nvImageCodec's own reading,
    # which accepts damaged EXIF tags (a SHORT orientation with a count of 257) that Pillow
    # skips.
    own = not cmyk and src.fmt != "tiff"
    if adjust_orientation and own:
        orientation = src.info().orientation
        if orientation != 1:
            # nvImageCodec hands an EXIF-rotated JPEG to its OpenCV plug-in, which decodes
            # the whole image (no region) ~2.5x slower than the libjpeg-turbo plug-in.  The
            # orientation is a pixel permutation: decode the stored pixels (only the box
            # that becomes ``roi``) and permute them here -- the same pixels (tested on
            # every orientation; CMYK stays on the plug-in: its colour conversion differs).
            box = inner = None
            if roi is not None:
                box, inner = _padded_box(stored_box(roi, orientation, _raw_size(src)),
                                         _raw_size(src))
            arr = nvb.decode_stream(s, mode, box, native, False)
            if arr is None:
                return None
            if inner is not None:
                arr = arr[inner]
            return oriented_copy(arr, orientation)
    arr = nvb.decode_stream(s, mode, roi, native, adjust_orientation and not own)
    if arr is not None and cmyk and output_type == "GRAY":
        arr = rgb_to_gray(arr)
    return arr


# libjpeg-turbo's region decode can differ from a full decode in the outermost pixels of a
# region (seen on 1-pixel-wide boxes of 4:2:0 files: the chroma upsampling at the cut), while
# nvImageCodec's own route for rotated files decodes them whole; so a rotated file's box is
# decoded with this margin and cut to size afterwards.
_ROTATED_ROI_MARGIN = 16


def _padded_box(box, hw):
    """``box`` widened by the margin (clamped to ``hw``) and the slices of ``box`` in it."""
    y0, x0, y1, x1 = box
    py0, px0 = max(0, y0 - _ROTATED_ROI_MARGIN), max(0, x0 - _ROTATED_ROI_MARGIN)
    py1, px1 = min(hw[0], y1 + _ROTATED_ROI_MARGIN), min(hw[1], x1 + _ROTATED_ROI_MARGIN)
    return (py0, px0, py1, px1), (slice(y0 - py0, y1 - py0), slice(x0 - px0, x1 - px0))


def _decode_pillow(src, output_type, roi, adjust_orientation, sample):
    mode = {"RGB": "RGB", "BGR": "RGB", "GRAY": "GRAY", "YCbCr": "RGB",
            "ANY_DATA": "UNCHANGED"}[output_type]
    arr = decode_pillow(src.buf, mode, adjust_orientation, check=_size_check(src, sample))
    if output_type == "GRAY" and arr.shape[2] == 3:
        arr = rgb_to_gray(arr)
    elif output_type == "BGR":
        arr = arr[:, :, ::-1]
    if roi is not None:
        y0, x0, y1, x1 = roi
        arr = arr[y0:y1, x0:x1]
    return np.ascontiguousarray(arr)


def decode(data, output_type="RGB", roi=None, dtype="uint8", sample=None,
           adjust_orientation=True):
    """Decode one encoded image on the CPU.

    Parameters
    ----------
    data : bytes or numpy.ndarray or ParsedImage
        The encoded file: bytes, or a 1-D uint8 array, or its :func:`parse_image`.
    output_type : str
        DALI ``DALIImageType`` name (or an enum with that ``.name``): ``"RGB"``, ``"BGR"``,
        ``"GRAY"`` (full-range luma; libjpeg-turbo's Y for JPEG), ``"YCbCr"`` (studio-range
        BT.601) or ``"ANY_DATA"`` (the file's channels: gray 1, gray+alpha 2, RGB and palette
        3, RGBA 4; CMYK is given as RGB).
    roi : tuple of int, optional
        ``(y0, x0, y1, x1)``: end-exclusive pixel box in the oriented (post-EXIF) image. Only
        that region is decoded where the codec supports it; the pixels are exactly those of
        decode-then-crop.
    dtype : str
        ``"uint8"`` (default), ``"uint16"`` or ``"float32"``; values are rescaled to the range
        of the type (uint8 -> uint16: ``v * 257``; -> float32: ``[0, 1]``; 16-bit files ->
        uint8: ``round(v / 257)``), as DALI's ``dtype`` argument.
    sample : str, optional
        Names the sample in error messages (e.g. ``"sample 3 ('cat/01.jpg')"``).
    adjust_orientation : bool
        Apply the EXIF orientation (DALI's ``adjust_orientation``, default True).

    Returns
    -------
    numpy.ndarray
        C-contiguous array, layout HWC; C = 3 for RGB/BGR/YCbCr, 1 for GRAY.

    Raises
    ------
    DecodeError
        Empty, truncated, corrupt or unrecognised data.
    ValueError
        Bad ``output_type``, ``dtype``, or an ``roi`` that is empty or outside the image.
    TypeError
        ``data`` or ``roi`` of the wrong type.
    """
    output_type = _check_output_type(output_type)
    dtype = _check_dtype(dtype)
    src = _source(data, sample)
    buf = src.buf
    if roi is not None:
        if adjust_orientation:
            info = src.info()
            height, width = info.height, info.width
        else:
            height, width = _raw_size(src)
        roi = _check_roi(roi, height, width, sample)
    arr = None
    # two channels (gray+alpha): ANY_DATA keeps them, which nvImageCodec cannot
    use_nv = src.stream is not None and not (output_type == "ANY_DATA"
                                             and src.stream.num_channels == 2)
    if use_nv and src.fmt == "tiff" and _tiff_with_extra_samples(src):
        use_nv = False
    if use_nv:
        doubt = _doubt(src)
        if doubt and roi is not None:
            # a damaged stream's region is cut from its whole decode: libjpeg-turbo fills in
            # missing coefficients differently when it decodes a region
            arr = _decode_nvimgcodec(src, output_type, None, adjust_orientation)
            if arr is not None:
                arr = arr[roi[0]:roi[2], roi[1]:roi[3]]
        else:
            arr = _decode_nvimgcodec(src, output_type, roi, adjust_orientation)
        if arr is not None and doubt is not None:
            _second_opinion(src, sample, doubt)
    if arr is None:
        try:
            arr = _decode_pillow(src, output_type, roi, adjust_orientation, sample)
        except DecodeError:
            raise
        except Exception as exc:
            reason = diagnose_failure(buf, src.fmt, "data") + _detail(src.problem)
            raise DecodeError(f"{sample_prefix(sample)}{reason}: {pillow_reason(exc)}") \
                from None
    if adjust_orientation and roi is None:
        info = src.info()
        if arr.shape[:2] != (info.height, info.width):
            # nvImageCodec (CMYK JPEG, TIFF) and Pillow apply the orientation themselves: a
            # damaged EXIF block they read differently would make decode and peek_shape
            # disagree
            raise DecodeError(f"{sample_prefix(sample)}corrupt EXIF block in the "
                              f"{src.fmt.upper()} file: its orientation cannot be read "
                              f"reliably (decoded {arr.shape[1]}x{arr.shape[0]}, header "
                              f"{info.width}x{info.height} after orientation "
                              f"{info.orientation})")
    if output_type == "YCbCr":
        arr = rgb_to_ycbcr(arr)
    return np.ascontiguousarray(convert_depth(arr, dtype))


def plain_decode_args(output_type="RGB", dtype="uint8", adjust_orientation=True) -> bool:
    """Whether :func:`decode` with these arguments takes the plain-JPEG route of
    :func:`plain_jpeg` / :func:`decode_plain` (RGB, uint8; invalid values: False, so that
    :func:`decode` reports them)."""
    try:
        return _check_output_type(output_type) == "RGB" and _check_dtype(dtype) == "uint8"
    except ValueError:
        return False


def plain_jpeg(data):
    """``(stream, height, width)`` of a *plain* JPEG, or None.

    Plain: a C-contiguous 1-D uint8 array holding an 8-bit, non-CMYK JPEG that nvImageCodec
    parses, within the size limit, without an EXIF rotation (orientation 1) and with a sound
    marker structure (:func:`runtime.codecs.structure.jpeg_structure_problem`).  For such a
    file ``decode(data, "RGB", roi, "uint8", adjust_orientation=either)`` is exactly
    :func:`decode_plain` of the stream (the route :func:`decode` takes for it, without its
    generic checks), unless that returns None.  Anything else (None here): call
    :func:`decode`, which gives the pixels or raises the errors.  The per-sample fast path of
    the fused decode chains (``runtime.kernels.cpu.fused_roi``); ``height``/``width`` are
    ``image_info``'s (the stored size: no rotation).
    """
    if data.__class__ is not np.ndarray or data.dtype != np.uint8 or data.ndim != 1 or \
            data.size < 4 or not data.flags.c_contiguous or data[0] != 0xFF or data[1] != 0xD8:
        return None
    if not nvb.available():
        return None
    stream = nvb.parse(data)
    if stream is None or stream.codec_name != "jpeg":
        return None
    height, width = stream.height, stream.width
    limit = get_max_image_pixels()
    try:
        if np.dtype(stream.dtype) != np.uint8:
            return None
    except (TypeError, ValueError, RuntimeError):
        return None
    if not (height > 0 and width > 0 and stream.num_channels > 0) or \
            (limit is not None and width * height > limit):
        return None
    if nvb.is_cmyk(stream):
        return None
    problem, orientation = jpeg_walk(data)      # the structure and the orientation at once
    if problem is not None or (orientation if orientation is not None
                               else read_orientation(data, "jpeg")) != 1:
        return None
    return stream, int(height), int(width)


def decode_plain(stream, roi, hw):
    """The RGB uint8 pixels of a :func:`plain_jpeg` stream (``hw``: its ``(height,
    width)``) in ``roi`` (as :func:`decode`'s, inside the image; None: all of it), or None
    when the codec failed (then :func:`decode` of the file decides: Pillow, or the error)."""
    arr = nvb.decode_stream(stream, "RGB", roi, False, False)
    if arr is None or (roi is None and arr.shape[:2] != hw):
        return None
    return arr


def _tiff_with_extra_samples(src):
    """True for a gray+alpha or palette+alpha TIFF: nvImageCodec's TIFF plug-in reads its
    samples as if there were three (the next pixel's gray as blue, palette indices off by a
    sample), so Pillow decodes it."""
    try:
        return open_header(src.buf).mode in ("LA", "La", "PA")
    except Exception:  # noqa: BLE001 - Pillow cannot read the header: nvImageCodec decodes
        return False


def _size_check(src, sample):
    """The size check Pillow runs on its own header before decoding (Pillow may read a
    damaged header differently from nvImageCodec, e.g. a negative BMP width)."""
    def check(img):
        check_image_size(*img.size, sample, src.fmt)
    return check


def _doubt(src):
    """Why nvImageCodec's pixels for ``src`` need Pillow's second opinion, or None.

    nvImageCodec hands a stream its first plug-in rejects to OpenCV, which returns what it
    could read of a damaged JPEG or of the frame of an extended (VP8X) WebP; its TIFF plug-in
    ignores strips it fails to decompress (zeros), and its BMP route ignores header fields
    it does not support.  A JPEG is doubted only when its structure is unsound (a cheap walk,
    see :mod:`runtime.codecs.structure`; the result says what is unsound), TIFF, BMP and
    extended WebP always (``""``).  (PNG and WebP streams with unsound chunks never reach
    nvImageCodec, see :class:`ParsedImage`.)
    """
    fmt = src.fmt
    if fmt == "jpeg":
        return jpeg_structure_problem(src.buf)
    if fmt in ("tiff", "bmp") or (fmt == "webp" and src.buf[12:16].tobytes() == b"VP8X"):
        return ""               # always asked; nothing to say beyond Pillow's reason
    return None


def _second_opinion(src, sample, doubt):
    """Raise when Pillow cannot decode the doubtful stream ``src`` either (``doubt``: what
    :func:`_doubt` found).

    Pillow (libjpeg-turbo, libwebp, libtiff, its BMP reader) is asked only for its verdict;
    the pixels returned stay nvImageCodec's, so valid files decode as before.
    """
    try:
        img = open_header(src.buf)
        check_image_size(*img.size, sample, src.fmt)
        img.load()
    except DecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - Pillow's verdict, as a message
        reason = diagnose_failure(src.buf, src.fmt, "data")
        raise DecodeError(f"{sample_prefix(sample)}{reason}{_detail(doubt)}: "
                          f"{pillow_reason(exc)}") from None


def _raw_size(src):
    if src.stream is not None:
        return int(src.stream.height), int(src.stream.width)
    w, h = src.pil.size
    return int(h), int(w)


def image_info(data, sample=None):
    """Read an encoded image's header (no pixel decoding).

    Parameters
    ----------
    data : bytes or numpy.ndarray or ParsedImage
        The encoded file: bytes, or a 1-D uint8 array, or its :func:`parse_image`.
    sample : str, optional
        Names the sample in error messages.

    Returns
    -------
    ImageInfo
        Oriented height/width, stored channels, format name, EXIF orientation, bit depth.

    Raises
    ------
    DecodeError
        Empty or unrecognised data, or an unreadable header.
    """
    return _source(data, sample).info()


def peek_shape(data, sample=None, image_type="RGB", adjust_orientation=True):
    """Shape a decode would return, from the header only (``ndd.peek_image_shape``).

    Parameters
    ----------
    data : bytes or numpy.ndarray or ParsedImage
        The encoded file: bytes, or a 1-D uint8 array, or its :func:`parse_image`.
    sample : str, optional
        Names the sample in error messages.
    image_type : str
        As DALI's ``image_type`` (default ``"RGB"``): C is 3 for RGB/BGR/YCbCr and 1 for
        GRAY, whatever the file stores; ``"ANY_DATA"`` gives the channels
        :func:`decode` returns for ``ANY_DATA``.
    adjust_orientation : bool
        Report the EXIF-oriented shape (DALI's default, True).

    Returns
    -------
    tuple of int
        ``(H, W, C)``.

    Raises
    ------
    DecodeError
        Empty or unrecognised data, or an unreadable header.
    """
    image_type = _check_output_type(image_type)
    src = _source(data, sample)
    info = src.info()
    h, w = (info.height, info.width) if adjust_orientation else _raw_size(src)
    if image_type == "GRAY":
        c = 1
    elif image_type == "ANY_DATA":
        c = 3 if src.stream is not None and nvb.is_cmyk(src.stream) else info.channels
    else:
        c = 3
    return (h, w, c)
