"""Image decoders (``ndd.decoders.image``, ``image_crop``, ``image_slice``, ``image_random_crop``).

Use ``device="gpu"`` (not ``"mixed"``) for GPU decoding in dynamic mode.
"""
from ndd._op_functions import namespace_functions as _functions

# one function per schema whose public name is decoders.<name>
_ops = _functions("decoders")
globals().update(_ops)

__all__ = list(_ops)
