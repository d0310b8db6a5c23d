"""Noise ops (``ndd.noise.gaussian``, ``salt_and_pepper``, ``shot``).

Random ops: the seeds are drawn from ``rng`` (default: the thread's default generator) when the
call is made. Source: DALI ``noise.*``.
"""
from ndd._op_functions import namespace_functions as _functions

# one function per schema whose public name is noise.<name>
_ops = _functions("noise")
globals().update(_ops)

__all__ = list(_ops)
