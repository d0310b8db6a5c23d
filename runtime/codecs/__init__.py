"""CPU image codecs (nvImageCodec, with Pillow as the fallback)."""

from .errors import DecodeError
from .image import OUTPUT_TYPES, ImageInfo, decode, image_info, peek_shape
from .limits import DEFAULT_MAX_IMAGE_PIXELS, get_max_image_pixels, set_max_image_pixels

__all__ = ["DecodeError", "ImageInfo", "OUTPUT_TYPES", "decode", "image_info", "peek_shape",
           "DEFAULT_MAX_IMAGE_PIXELS", "get_max_image_pixels", "set_max_image_pixels"]
