"""CPU image codecs (nvImageCodec, with Pillow as the fallback)."""

from .errors import DecodeError
from .image import OUTPUT_TYPES, ImageInfo, decode, image_info, peek_shape

__all__ = ["DecodeError", "ImageInfo", "OUTPUT_TYPES", "decode", "image_info", "peek_shape"]
