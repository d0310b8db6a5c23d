"""DALI's ``io.file``: ``read`` (the bytes of the files named by 1-D uint8 path samples)."""
from ndd._op_functions import namespace_functions as _functions

# one function per schema whose public name is io.file.<name>
_ops = _functions("io.file")
globals().update(_ops)

__all__ = list(_ops)
