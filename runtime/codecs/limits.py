"""The limit on the decoded size of one image (decompression bombs).

A small file can declare a huge image: a 1.1 MB PNG of 20000x20000 zero pixels decodes to
1.2 GB.  Every decode, ``peek_image_shape`` and region decode checks the size the header
declares against this limit *before* any pixel buffer is allocated, and raises a
:class:`~runtime.codecs.errors.DecodeError` naming the sample, the declared size, the limit
and how to raise it.  The limit is process-wide; process-lane workers get the caller's value
with every call (:func:`process_settings`).
"""
from __future__ import annotations

import operator
import sys

from .errors import DecodeError, sample_prefix

__all__ = ["DEFAULT_MAX_IMAGE_PIXELS", "set_max_image_pixels", "get_max_image_pixels",
           "check_image_size", "process_settings", "apply_process_settings"]

#: The default limit, in pixels (width * height): twice Pillow's default
#: ``PIL.Image.MAX_IMAGE_PIXELS`` (89,478,485), which is where Pillow itself refuses to open an
#: image.  About 179 million pixels: a 16000x11000 panorama fits, the RGB decode of an image
#: at the limit takes 537 MB.
DEFAULT_MAX_IMAGE_PIXELS = 2 * 89_478_485

_max_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS


def set_max_image_pixels(pixels):
    """Set the largest image, in pixels (width * height), that ndd decodes.

    Parameters
    ----------
    pixels : int or None
        The limit in pixels (``>= 1``); ``None`` removes the limit (trusted files only).  The
        default is :data:`DEFAULT_MAX_IMAGE_PIXELS` (178,956,970 pixels).

    Raises
    ------
    TypeError
        ``pixels`` is neither an integer nor None.
    ValueError
        ``pixels`` is smaller than 1.

    Notes
    -----
    The limit applies to the size declared by the file's header (for tiled or striped TIFF
    files also to one tile or strip, which the decoder allocates whole), whatever region is
    requested, and is checked before any pixel is decoded; a larger image raises
    :class:`~runtime.codecs.errors.DecodeError`.  It takes effect for decodes that start after
    the call, in this process and in its process-lane workers.  Formats that Pillow decodes
    for ndd (GIF; and TIFF and BMP, which Pillow checks) are also subject to Pillow's own
    ``PIL.Image.MAX_IMAGE_PIXELS`` (Pillow refuses images above twice that); raise it too for
    such files above 178,956,970 pixels.
    """
    if pixels is not None:
        if isinstance(pixels, bool):
            raise TypeError(f"max_image_pixels must be an int or None, got {pixels!r}")
        try:
            pixels = operator.index(pixels)
        except TypeError:
            raise TypeError(f"max_image_pixels must be an int or None, got "
                            f"{type(pixels).__name__} {pixels!r}") from None
        if pixels < 1:
            raise ValueError(f"max_image_pixels must be at least 1 (or None for no limit), "
                             f"got {pixels}")
    global _max_pixels
    _max_pixels = pixels


def get_max_image_pixels():
    """The largest image, in pixels (width * height), that ndd decodes.

    Returns
    -------
    int or None
        The limit set by :func:`set_max_image_pixels` (default
        :data:`DEFAULT_MAX_IMAGE_PIXELS`); None when there is no limit.
    """
    return _max_pixels


def check_image_size(width, height, sample=None, fmt=None, tile=None):
    """Raise when an image of ``width`` x ``height`` pixels is over the limit.

    Parameters
    ----------
    width, height : int
        The size the header declares, in pixels.
    sample : str, optional
        Names the sample in the message.
    fmt : str, optional
        The format's name (``"png"``, ...), for the message.
    tile : tuple of int, optional
        ``(tile_width, tile_height)`` of a tiled or striped file: the decoder allocates one
        whole tile, so a tile larger than the limit is refused too.

    Raises
    ------
    DecodeError
        The image (or one tile) has more pixels than :func:`get_max_image_pixels`.
    """
    limit = _max_pixels
    if limit is None:
        return
    width, height = int(width), int(height)
    pixels = width * height
    what = f"{fmt.upper()} image" if fmt else "image"
    if pixels > limit:
        raise DecodeError(f"{sample_prefix(sample)}{what} declares {width}x{height} pixels "
                          f"({pixels:,} pixels), more than the limit of {limit:,} pixels per "
                          f"image (a decompression bomb?); nothing was decoded. {_HOW_TO}")
    if tile is not None and tile[0] and tile[1]:
        tw, th = int(tile[0]), int(tile[1])
        if tw * th > limit:
            raise DecodeError(f"{sample_prefix(sample)}{what} of {width}x{height} pixels "
                              f"declares tiles of {tw}x{th} pixels ({tw * th:,} pixels, "
                              f"allocated whole by the decoder), more than the limit of "
                              f"{limit:,} pixels per image (a decompression bomb?); nothing "
                              f"was decoded. {_HOW_TO}")


_HOW_TO = ("If such images are expected, raise the limit with "
           "ndd.set_max_image_pixels(n) (None: no limit).")

# Pillow's own limit is mirrored into the process-lane workers only when this process has
# Pillow loaded (otherwise it cannot have changed it).
_KEEP = "keep"


def process_settings() -> tuple:
    """The settings a worker process must share with this one: ``(ndd limit, Pillow's
    MAX_IMAGE_PIXELS or "keep")``; give them to :func:`apply_process_settings` there."""
    pil = sys.modules.get("PIL.Image")
    return (_max_pixels, getattr(pil, "MAX_IMAGE_PIXELS", _KEEP) if pil is not None else _KEEP)


def apply_process_settings(settings: tuple) -> None:
    """Adopt the :func:`process_settings` of the calling process (in a worker)."""
    global _max_pixels
    _max_pixels, pil_limit = settings
    if pil_limit != _KEEP:
        from PIL import Image
        Image.MAX_IMAGE_PIXELS = pil_limit
