"""Affine transform matrices (``ndd.transforms.translation``, ``scale``, ``rotation``,
``shear``, ``crop``, ``combine``): float32 ``ndim x (ndim + 1)`` matrices, for ``warp_affine``
and coordinate transforms.

Source: DALI ``transforms.*``.
"""
from ndd._op_functions import namespace_functions as _functions

# one function per schema whose public name is transforms.<name>
_ops = _functions("transforms")
globals().update(_ops)

__all__ = list(_ops)
