"""Segmentation ops (``ndd.segmentation.select_masks``, ``random_mask_pixel``,
``random_object_bbox``).

The random ones draw their seeds from ``rng`` (default: the thread's default generator) when the
call is made. Source: DALI ``segmentation.*``.
"""
from ndd._op_functions import namespace_functions as _functions

# one function per schema whose public name is segmentation.<name>
_ops = _functions("segmentation")
globals().update(_ops)

__all__ = list(_ops)
