"""Element-wise arithmetic and ``ndd.math`` functions on the CPU (numpy), one sample at a time.

Semantics are DALI 2.4's arithmetic expressions (see ``compiler/promotion.py`` for the dtype
rules and ``docs/semantics.md`` for the details and the deliberate differences):

* operands are converted to the promoted dtype and the op is computed in it: integer results
  wrap (``uint8 + uint8`` stays ``uint8``), ``int / int`` is computed in float32;
* integer ``//`` and ``%`` truncate toward zero (C semantics), integer division by zero raises;
  on floats ``//`` is a true division (DALI) and ``%`` is ``fmod``;
* comparisons of integers are exact, also between signed and unsigned 64-bit values;
* ``min``/``max``/``clamp`` follow DALI's NaN behaviour (``min(a, b) = a < b ? a : b``);
* shifts take the shift count modulo the width the C++ code computes in (32, or 64 for 64-bit
  operands), like DALI on x86;
* integer ``pow`` with a negative exponent gives 0.

Broadcasting is numpy's (DALI broadcasts the same way). All functions are thread-safe: no
shared state, numpy error flags are set through the thread-local ``np.errstate``.

:data:`NUMPY_IMPL` maps each op to a function ``f(*operands, out_dtype) -> ndarray`` that does no
validation: operands are numpy arrays (or 0-d arrays for scalars) in their *own* dtypes and
``out_dtype`` is the promoted result dtype (a ``numpy.dtype``). :func:`apply` is the validating
entry point.

Registers the kernels of ``arithmetic`` (one op of an expression) and ``elementwise_fused``
(a chain of arithmetic and cast steps the compiler's elementwise fusion made, run per sample).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from compiler import promotion
from runtime.kernels.registry import per_sample, register

from .cast import cast as cast_op

__all__ = ["apply", "NUMPY_IMPL", "cast", "prepare_operand", "IntegerDivisionByZero"]


class IntegerDivisionByZero(ZeroDivisionError, ValueError):
    """Integer ``//`` or ``%`` with a zero divisor (DALI raises ValueError)."""


# ------------------------------------------------------------------------------------------------
# conversions
# ------------------------------------------------------------------------------------------------

def _round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)


def cast(x: np.ndarray, dtype) -> np.ndarray:
    """Convert ``x`` to ``dtype`` the way DALI casts: float -> integer rounds half away from zero
    and saturates (NaN -> 0), integer -> integer saturates, float -> bool rounds first.

    Parameters
    ----------
    x : numpy.ndarray
        Any shape, any supported dtype.
    dtype : str or numpy.dtype
        Target dtype.

    Returns
    -------
    numpy.ndarray
        Same shape, dtype ``dtype``; ``x`` itself when it already has that dtype.
    """
    dst = np.dtype(dtype)
    x = np.asarray(x)
    src = x.dtype
    if src == dst:
        return x
    if dst.kind == "b":
        if src.kind == "f":
            return np.abs(x) >= 0.5
        return x != 0
    if dst.kind == "f" or src.kind == "b":
        return x.astype(dst)
    info = np.iinfo(dst)
    if src.kind == "f":
        with np.errstate(invalid="ignore"):
            r = _round_half_away(x.astype(np.float64))
            hi = float(info.max)
            out = np.clip(np.nan_to_num(r, nan=0.0), float(info.min), hi).astype(dst)
            # float(int64 max) rounds up to 2**63: fix the values that reached it
            return np.where(r >= hi, dst.type(info.max), out) if hi >= 2.0 ** 63 else out
    sinfo = np.iinfo(src)
    if info.min > sinfo.min:
        x = np.maximum(x, src.type(info.min))
    if info.max < sinfo.max:
        x = np.minimum(x, src.type(info.max))
    return x.astype(dst)


def prepare_operand(value, dtype: str):
    """Turn a Python scalar operand into a 0-d numpy array of its DALI dtype.

    Parameters
    ----------
    value : numpy.ndarray or bool or int or float
        One operand.
    dtype : str
        The promoted dtype of all operands. A float scalar is kept in float64 when that is
        float64 (DALI rounds it to float32 first; see the notes).

    Returns
    -------
    numpy.ndarray
    """
    if isinstance(value, np.ndarray):
        return value
    sdt = promotion.scalar_dtype(value)
    if sdt == "float32" and dtype == "float64":
        return np.array(value, dtype=np.float64)
    return np.array(value, dtype=sdt)


# ------------------------------------------------------------------------------------------------
# per-op implementations (no validation)
# ------------------------------------------------------------------------------------------------

_F32 = np.dtype(np.float32)


def _to(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    return x if x.dtype == dt else x.astype(dt)


def _binary(ufunc) -> Callable:
    def impl(a, b, out_dtype):
        with np.errstate(all="ignore"):
            return ufunc(_to(a, out_dtype), _to(b, out_dtype))
    return impl


def _mul(a, b, out_dtype):
    if out_dtype.kind == "b":
        return np.logical_and(a, b)
    with np.errstate(all="ignore"):
        return np.multiply(_to(a, out_dtype), _to(b, out_dtype))


def _check_int_divisor(b: np.ndarray) -> None:
    if not np.all(b):
        raise IntegerDivisionByZero("Integer division by zero: the divisor of an integer // or "
                                    "% contains 0")


def _trunc_div_mod(a: np.ndarray, b: np.ndarray):
    """C-style (truncating) quotient and remainder of two integer arrays of the same dtype."""
    _check_int_divisor(b)
    with np.errstate(all="ignore"):
        if a.dtype.kind == "u" or (a.min(initial=0) >= 0 and b.min(initial=1) > 0):
            return np.floor_divide(a, b), np.remainder(a, b)  # floor == trunc here
        r = np.fmod(a, b)
        # (a - r) is an exact multiple of b, so floor division is exact; INT_MIN // -1 wraps
        return np.floor_divide(a - r, b), r


def _floordiv(a, b, out_dtype):
    a, b = _to(a, out_dtype), _to(b, out_dtype)
    if out_dtype.kind == "f":
        with np.errstate(all="ignore"):
            return np.true_divide(a, b)  # DALI: `//` on floats is a plain division
    return _trunc_div_mod(a, b)[0]


def _mod(a, b, out_dtype):
    if out_dtype.kind == "f":
        # fmod is exact, so computing it in float64 equals fmod in the operands' own types;
        # DALI computes int % float in double (C++ overload), which this also reproduces.
        with np.errstate(all="ignore"):
            return np.fmod(a.astype(np.float64), b.astype(np.float64)).astype(out_dtype)
    return _trunc_div_mod(_to(a, out_dtype), _to(b, out_dtype))[1]


def _truediv(a, b, out_dtype):
    with np.errstate(all="ignore"):
        return np.true_divide(_to(a, out_dtype), _to(b, out_dtype))


def _libm():
    """The C-library math kernels (numba-compiled; imported on first use, not by ``import ndd``).
    Floats go through them rather than numpy's per-CPU SIMD routines: see ``libm.py``."""
    from . import libm  # lazy: libm imports numba (~0.3 s), which only float math needs
    return libm


def _pow(a, b, out_dtype):
    if out_dtype.kind == "f":
        return _libm().binary("pow", a, b, out_dtype)
    a, b = _to(a, out_dtype), _to(b, out_dtype)
    with np.errstate(all="ignore"):
        if out_dtype.kind == "i":
            neg = b < 0
            if np.any(neg):
                return np.where(neg, out_dtype.type(0), np.power(a, np.where(neg, 0, b)))
        return np.power(a, b)


def _min(a, b, out_dtype):
    a, b = _to(a, out_dtype), _to(b, out_dtype)
    if out_dtype.kind != "f":
        return np.minimum(a, b)
    return np.where(a < b, a, b)  # NaN rule: a < b ? a : b


def _max(a, b, out_dtype):
    a, b = _to(a, out_dtype), _to(b, out_dtype)
    if out_dtype.kind != "f":
        return np.maximum(a, b)
    return np.where(a > b, a, b)


def _clamp(x, lo, hi, out_dtype):
    x, lo, hi = _to(x, out_dtype), _to(lo, out_dtype), _to(hi, out_dtype)
    if out_dtype.kind != "f":
        return np.minimum(np.maximum(x, lo), hi)  # lo > hi gives hi, as in DALI
    t = np.where(x < lo, lo, x)  # std::max(x, lo): NaN x stays NaN, NaN bound is ignored
    return np.where(hi < t, hi, t)


# comparison: (ufunc, result when the signed operand is negative and on the left, ... on the right)
_CMP = {
    "eq": (np.equal, False, False),
    "ne": (np.not_equal, True, True),
    "lt": (np.less, True, False),
    "le": (np.less_equal, True, False),
    "gt": (np.greater, False, True),
    "ge": (np.greater_equal, False, True),
}


def _comparison(name: str) -> Callable:
    ufunc, left_neg, right_neg = _CMP[name]

    def impl(a, b, out_dtype=None):
        ka, kb = a.dtype.kind, b.dtype.kind
        if ka in "iub" and kb in "iub":
            if (ka == "i" and kb == "u") or (ka == "u" and kb == "i"):
                # exact signed/unsigned comparison (DALI's safe_compare)
                if ka == "i":
                    res = ufunc(np.maximum(a, 0).astype(np.uint64), b.astype(np.uint64))
                    return np.where(a < 0, left_neg, res)
                res = ufunc(a.astype(np.uint64), np.maximum(b, 0).astype(np.uint64))
                return np.where(b < 0, right_neg, res)
            return ufunc(a, b)  # numpy compares same-signedness integers exactly
        dt = np.dtype(promotion.binary_promotion(a.dtype.name, b.dtype.name))
        return ufunc(_to(a, dt), _to(b, dt))

    return impl


def _bitwise(ufunc) -> Callable:
    def impl(a, b, out_dtype):
        return ufunc(_to(a, out_dtype), _to(b, out_dtype))
    return impl


def _shift(left: bool) -> Callable:
    def impl(a, b, out_dtype):
        # C++ promotes operands narrower than int to int32; x86 masks the count to the width
        if out_dtype.kind == "b" or out_dtype.itemsize < 4:
            wide = np.dtype(np.int32)
        else:
            wide = out_dtype
        count = _to(_to(b, out_dtype), wide) & wide.type(wide.itemsize * 8 - 1)
        value = _to(_to(a, out_dtype), wide)
        with np.errstate(all="ignore"):
            res = np.left_shift(value, count) if left else np.right_shift(value, count)
        if out_dtype.kind == "b":
            return res != 0
        return res.astype(out_dtype, copy=False)
    return impl


def _neg(a, out_dtype):
    with np.errstate(all="ignore"):
        return np.negative(a)


def _pos(a, out_dtype):
    return a


def _invert(a, out_dtype):
    return np.logical_not(a) if a.dtype.kind == "b" else np.invert(a)


def _abs(a, out_dtype):
    if a.dtype.kind == "u":
        return a
    with np.errstate(all="ignore"):
        if a.dtype.kind == "f":
            return np.where(a < 0, -a, a)  # DALI: abs(-0.0) stays -0.0
        return np.abs(a)


def _float_fn(ufunc) -> Callable:
    def impl(a, out_dtype):
        with np.errstate(all="ignore"):
            return ufunc(_to(a, out_dtype))
    return impl


def _libm_fn(name: str) -> Callable:
    def impl(a, out_dtype):
        return _libm().unary(name, a, out_dtype)
    return impl


def _rsqrt(a, out_dtype):
    a = _to(a, out_dtype)
    with np.errstate(all="ignore"):
        return np.reciprocal(np.sqrt(a))


def _libm_binary(name: str) -> Callable:
    def impl(a, b, out_dtype):
        return _libm().binary(name, a, b, out_dtype)
    return impl


NUMPY_IMPL: dict[str, Callable[..., np.ndarray]] = {
    "neg": _neg,
    "pos": _pos,
    "invert": _invert,
    "abs": _abs,
    "add": _binary(np.add),
    "sub": _binary(np.subtract),
    "mul": _mul,
    "truediv": _truediv,
    "floordiv": _floordiv,
    "mod": _mod,
    "pow": _pow,
    "fpow": _libm_binary("pow"),
    "min": _min,
    "max": _max,
    "atan2": _libm_binary("atan2"),
    "and": _bitwise(np.bitwise_and),
    "or": _bitwise(np.bitwise_or),
    "xor": _bitwise(np.bitwise_xor),
    "lshift": _shift(True),
    "rshift": _shift(False),
    "clamp": _clamp,
    "rsqrt": _rsqrt,
}
NUMPY_IMPL.update({name: _comparison(name) for name in _CMP})
# exactly rounded in IEEE arithmetic, so numpy's SIMD routines all give the same bits
NUMPY_IMPL.update({
    name: _float_fn(fn) for name, fn in {
        "fabs": np.fabs, "floor": np.floor, "ceil": np.ceil, "sqrt": np.sqrt}.items()
})
# transcendentals: the C library's functions (numpy's differ between CPUs; see libm.py)
NUMPY_IMPL.update({name: _libm_fn(name) for name in (
    "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh")})
assert set(NUMPY_IMPL) == set(promotion.OPS), set(promotion.OPS) ^ set(NUMPY_IMPL)


# ------------------------------------------------------------------------------------------------
# validating entry point
# ------------------------------------------------------------------------------------------------

def apply(op: str, *operands, out_dtype: str | None = None) -> np.ndarray:
    """Apply one element-wise arithmetic op to one sample.

    Parameters
    ----------
    op : str
        Op name from ``compiler.promotion.OPS`` (``"add"``, ``"truediv"``, ``"sqrt"``,
        ``"clamp"``, ...) or a DALI alias (``"fdiv"``, ``"div"``, ``"minus"``, ...).
    *operands : numpy.ndarray or bool or int or float
        One sample per array operand (any shapes that broadcast together, numpy rules, as DALI
        does) or Python scalars, which take part as bool / int32 / float32 constants.
    out_dtype : str, optional
        The dtype to return. Computation always happens in the promoted dtype (see
        ``compiler.promotion.infer_dtype``); a different ``out_dtype`` is reached with
        :func:`cast` semantics (round half away from zero, saturate). Defaults to the promoted
        dtype.

    Returns
    -------
    numpy.ndarray
        The broadcast shape, dtype ``out_dtype``. Never a view of an operand unless the op is
        ``pos``.

    Raises
    ------
    ValueError
        Unknown op, wrong operand count, shapes that do not broadcast, an int scalar outside
        int32, integer division by zero (:class:`IntegerDivisionByZero`, also a
        ZeroDivisionError).
    TypeError
        Unsupported operand types or dtypes (see ``compiler.promotion.infer_dtype``).
    """
    name = promotion.canonical_op(op)
    info = promotion.OPS[name]
    if len(operands) != info.arity:
        raise ValueError(f"op {name!r}: expected {info.arity} operand(s), got {len(operands)}")
    dtypes = []
    for i, x in enumerate(operands):
        if isinstance(x, np.ndarray):
            dtypes.append(x.dtype.name)
        elif type(x) in (bool, int, float):
            dtypes.append(promotion.scalar_dtype(x))
        else:
            raise TypeError(f"operand {i} of {name!r}: expected a numpy array or a Python "
                            f"bool/int/float, got {type(x).__name__}")
    natural = promotion.infer_dtype(name, dtypes)
    promoted = dtypes[0]
    for dt in dtypes[1:]:
        promoted = promotion.binary_promotion(promoted, dt)
    arrays = [prepare_operand(x, promoted) for x in operands]
    if len(arrays) > 1:
        try:
            np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise ValueError(f"op {name!r}: operand shapes {shapes} cannot be broadcast "
                             f"together") from None
    result = NUMPY_IMPL[name](*arrays, out_dtype=np.dtype(natural))
    result = np.asarray(result)
    if out_dtype is not None and np.dtype(out_dtype) != result.dtype:
        promotion.bit_width(np.dtype(out_dtype).name)  # rejects unsupported dtypes
        return cast(result, out_dtype)
    return result


# ------------------------------------------------------------------------------------------------
# kernels
# ------------------------------------------------------------------------------------------------

@register("arithmetic", "cpu")
@per_sample
def arithmetic_kernel(ctx, ins, a, i):
    """``arithmetic``: :func:`apply` of ``op`` to every sample.  ``operands`` lists
    ``("t", k)`` (regular input ``k``) or ``("s", value)`` (a Python scalar)."""
    ops = [ins[item[1]] if item[0] == "t" else item[1] for item in a["operands"]]
    return apply(a["op"], *ops, out_dtype=ctx.out_metas[0].dtype)


@register("elementwise_fused", "cpu")
@per_sample
def elementwise_fused(ctx, ins, a, i):
    """Evaluate the fused arithmetic/cast program on one sample.

    ``program`` is a list of steps ``(op, operands, dtype)``; an operand is ``("t", k)``
    (regular input ``k``), ``("r", j)`` (the result of step ``j``) or ``("s", value)``; a
    ``cast`` step converts as the ``cast`` op does, any other step is :func:`apply`.  The last
    step's result is the sample's output."""
    results = []
    for op, operands, dt in a["program"]:
        vals = [ins[o[1]] if o[0] == "t" else results[o[1]] if o[0] == "r" else o[1]
                for o in operands]
        if op == "cast":
            results.append(cast_op(vals[0], dt))
        else:
            results.append(apply(op, *vals, out_dtype=dt))
    return results[-1]
