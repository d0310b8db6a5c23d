"""Image decoders (``ndd.decoders.image``, ``image_crop``, ``image_slice``, ``image_random_crop``).

Use ``device="gpu"`` (not ``"mixed"``) for GPU decoding in dynamic mode.
"""
from ndd._op_functions import make_function as _make_function

image = _make_function("decoders.image", module="ndd.decoders")
image_crop = _make_function("decoders.image_crop", module="ndd.decoders")
image_slice = _make_function("decoders.image_slice", module="ndd.decoders")
image_random_crop = _make_function("decoders.image_random_crop", module="ndd.decoders")

__all__ = ["image", "image_crop", "image_slice", "image_random_crop"]
