"""Element-wise math functions (``ndd.math.*``), with DALI's type promotion.

Integer inputs to floating-point functions (``sqrt``, ``exp``, ``sin``...) give float32.
Angles are in radians. Source: DALI ``dali.math``.
"""
from __future__ import annotations

from ndd._handle_operators import elementwise

_UNARY = ("abs", "fabs", "floor", "ceil", "sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10",
          "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
          "atanh")
_BINARY = ("pow", "fpow", "min", "max", "atan2")


def _make_unary(name):
    def fn(input):
        return elementwise(name, input)
    fn.__name__ = name
    fn.__doc__ = (f"Element-wise ``{name}`` of a Tensor or Batch. Integer inputs give float32 "
                  f"for floating-point functions. Source: DALI ``math.{name}``.")
    return fn


def _make_binary(name):
    def fn(left, right):
        return elementwise(name, left, right)
    fn.__name__ = name
    fn.__doc__ = f"Element-wise ``{name}(left, right)``. Source: DALI ``math.{name}``."
    return fn


for _n in _UNARY:
    globals()[_n] = _make_unary(_n)
for _n in _BINARY:
    globals()[_n] = _make_binary(_n)


def clamp(input, lo, hi):
    """Clamp values to [lo, hi]. ``clamp(uint8, 50, 200)`` gives int32 (DALI promotion)."""
    return elementwise("clamp", input, lo, hi)


__all__ = list(_UNARY) + list(_BINARY) + ["clamp"]
