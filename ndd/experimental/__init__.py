"""DALI's experimental operators (``ndd.experimental.<op>``, ``ndd.experimental.decoders``).

Every schema whose public name is ``experimental.<name>`` is a function here; those named
``experimental.decoders.<name>`` are in :mod:`ndd.experimental.decoders`.  Source: DALI 2.4
``nvidia.dali.experimental.dynamic.experimental``.
"""
from ndd._op_functions import namespace_functions as _functions
from ndd.experimental import decoders

# one function per schema whose public name is experimental.<name>
_ops = _functions("experimental")
globals().update(_ops)

__all__ = ["decoders", *_ops]
