"""DALI's ``experimental.decoders``: ``image``, ``image_crop``, ``image_random_crop``,
``image_slice`` (the same decoders as :mod:`ndd.decoders`)."""
from ndd._op_functions import namespace_functions as _functions

# one function per schema whose public name is experimental.decoders.<name>
_ops = _functions("experimental.decoders")
globals().update(_ops)

__all__ = list(_ops)
