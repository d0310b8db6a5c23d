"""Element-wise math functions (``ndd.math.*``), with DALI's type promotion.

Integer inputs to floating-point functions (``sqrt``, ``exp``, ``sin``...) give float32.
Angles are in radians. Source: DALI ``dali.math``.
"""
from __future__ import annotations

from compiler.ops import arithmetic as _arithmetic
from ndd._handle_operators import elementwise

# Not schema ops of their own: each is a value of the one ``arithmetic`` schema's ``op``
# argument, so the functions are made here from the compiler's table of them
# (compiler.ops.arithmetic.MATH_FUNCTIONS).


def _make_unary(name):
    def fn(input):
        return elementwise(name, input)
    fn.__doc__ = (f"Element-wise ``{name}`` of a Tensor or Batch. Integer inputs give float32 "
                  f"for floating-point functions. Source: DALI ``math.{name}``.")
    return fn


def _make_binary(name):
    def fn(left, right):
        return elementwise(name, left, right)
    fn.__doc__ = f"Element-wise ``{name}(left, right)``. Source: DALI ``math.{name}``."
    return fn


def _make_ternary(name):
    def fn(input, lo, hi):
        return elementwise(name, input, lo, hi)
    fn.__doc__ = f"Element-wise ``{name}(input, lo, hi)``. Source: DALI ``math.{name}``."
    return fn


_MAKERS = {1: _make_unary, 2: _make_binary, 3: _make_ternary}
for _name, _arity in _arithmetic.MATH_FUNCTIONS:
    _fn = _MAKERS[_arity](_name)
    _fn.__name__ = _fn.__qualname__ = _name
    globals()[_name] = _fn
del _name, _arity, _fn

# the one ternary function: its docstring shows the promotion of mixed operands
globals()["clamp"].__doc__ = ("Clamp values to [lo, hi]. ``clamp(uint8, 50, 200)`` gives int32 "
                              "(DALI promotion).")

__all__ = [name for name, _ in _arithmetic.MATH_FUNCTIONS]
