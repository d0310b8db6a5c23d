"""Reductions (``ndd.reductions.sum``, ``mean``, ``mean_square``, ``rms``, ``min``, ``max``,
``std_dev``, ``variance``) along ``axes`` / ``axis_names`` of each sample.

Source: DALI ``reductions.*``.
"""
from ndd._op_functions import namespace_functions as _functions

# one function per schema whose public name is reductions.<name>
_ops = _functions("reductions")
globals().update(_ops)

__all__ = list(_ops)
