"""Pillow fallback for streams nvImageCodec cannot decode (GIF, gray+alpha, RGBA BMP, ...).

The output follows the same conventions as the nvImageCodec path: HWC, EXIF orientation
applied like ``PIL.ImageOps.exif_transpose`` (which is what nvImageCodec and DALI do),
8- or 16-bit samples.
"""

import io
import re

import numpy as np

from runtime.profile import measured

__all__ = ["open_header", "decode_pillow", "file_channels", "pillow_reason"]


def open_header(buf):
    """Open a stream with Pillow, reading only its header.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the encoded file.

    Returns
    -------
    PIL.Image.Image
        A lazily-loaded image (pixels not decoded yet).

    Raises
    ------
    Exception
        Whatever Pillow raises for data it cannot identify (``PIL.UnidentifiedImageError``,
        ``OSError``, ...); callers turn it into a :class:`DecodeError`.
    """
    from PIL import Image
    return Image.open(io.BytesIO(buf.tobytes()))


def file_channels(img):
    """Channels as they are stored: L/I;16/1/F -> 1, LA -> 2, RGB/P/CMYK -> 3, RGBA -> 4.

    Palette images count as 3 channels even with a transparent entry or an alpha sample
    (``PA``), as nvImageCodec and DALI 2.4 report them.
    """
    mode = img.mode
    if mode in ("LA", "La"):
        return 2
    if mode in ("RGBA", "RGBa"):
        return 4
    if mode in ("RGB", "P", "PA", "CMYK", "YCbCr", "LAB", "HSV"):
        return 3
    return 1


def pillow_reason(exc):
    """Pillow's exception as a reason a user can read (for a :class:`DecodeError`).

    Parameters
    ----------
    exc : BaseException
        What Pillow raised while opening or decoding a stream.

    Returns
    -------
    str
        Pillow's message, with its bare status codes and object addresses explained, e.g.
        ``"the decoder stopped on damaged or unsupported data (Pillow: decoder error -2)"``.
    """
    from PIL import Image, UnidentifiedImageError
    msg = str(exc)
    if isinstance(exc, UnidentifiedImageError):
        return "Pillow cannot identify it as an image it can read (unsupported or damaged)"
    if isinstance(exc, Image.DecompressionBombError):
        return (f"Pillow refuses it as too large ({msg}); Pillow's own limit applies to the "
                f"formats it decodes for ndd: raise PIL.Image.MAX_IMAGE_PIXELS (Pillow refuses "
                f"twice that) besides ndd.set_max_image_pixels")
    code = re.fullmatch(r"decoder error (-?\d+)", msg)
    if code is not None:
        return f"the decoder stopped on damaged or unsupported data (Pillow: {msg})"
    if not msg:
        return f"Pillow raised {type(exc).__name__}"
    return msg


@measured("decode")
def decode_pillow(buf, mode, adjust_orientation=True, check=None):
    """Decode a whole stream with Pillow.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 array holding the encoded file.
    mode : {"RGB", "GRAY", "UNCHANGED"}
        ``"RGB"``: 3 channels; ``"GRAY"``: 1 channel, the file's own gray samples for gray
        images, otherwise RGB is returned and the caller converts; ``"UNCHANGED"``: the
        file's channels (gray 1, gray+alpha 2, colour and palette 3, RGBA 4).
    adjust_orientation : bool
        Apply the EXIF orientation (``ImageOps.exif_transpose`` semantics).
    check : callable, optional
        Called with the opened image before its pixels are decoded (the size limit); what
        it raises propagates.

    Returns
    -------
    numpy.ndarray
        C-contiguous uint8 (or uint16 for 16-bit gray) array, layout HWC.

    Raises
    ------
    Exception
        Whatever Pillow raises for corrupt or truncated data, or ``check`` raises.
    """
    from PIL import ImageOps
    img = open_header(buf)
    if check is not None:
        check(img)
    img.load()
    if adjust_orientation:
        img = ImageOps.exif_transpose(img)
    pmode = img.mode
    if pmode in ("I;16", "I;16B", "I;16L", "I;16N"):
        arr = np.asarray(img).astype(np.uint16)[:, :, None]
        if mode == "RGB":
            arr = np.repeat(arr, 3, axis=2)
        return np.ascontiguousarray(arr)
    channels = file_channels(img)
    if mode == "UNCHANGED":
        target = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
    elif mode == "GRAY" and channels <= 2:
        target = "L"
    else:
        target = "RGB"
    if pmode != target:
        img = img.convert(target)
    arr = np.asarray(img, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return np.ascontiguousarray(arr)
