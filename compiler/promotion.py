"""Type promotion for arithmetic operators and ``ndd.math`` functions.

Pure Python (no numpy): the compiler uses it to infer output dtypes from metadata, the CPU/GPU
kernels use it to know what to compute in.

Dtypes are plain strings: ``"bool"``, ``"int8"`` ... ``"int64"``, ``"uint8"`` ... ``"uint64"``,
``"float16"``, ``"float32"``, ``"float64"``. A Python scalar operand takes part in promotion as
the dtype DALI gives it (:func:`scalar_dtype`): ``bool -> bool``, ``int -> int32``,
``float -> float32``.

Semantics follow DALI 2.4 ("Mathematical Expressions", type promotion table), verified against
DALI 2.4 dynamic mode for every dtype pair (``tests/compiler/test_promotion.py``):

==============  ==============  ==============  =========================
operand         operand         result          condition
==============  ==============  ==============  =========================
T               T               T
floatX          T               floatX          T is not a float
floatX          floatY          float max(X,Y)
intX            intY            int max(X,Y)
uintX           uintY           uint max(X,Y)
intX            uintY           int 2Y          X <= Y (capped at int64)
intX            uintY           intX            X > Y
bool            T               T
==============  ==============  ==============  =========================

Per-op rules on top of the table: comparisons give ``bool``; ``truediv``, ``fpow``, ``atan2`` and
the floating-point math functions give ``float32`` when no operand is a float; bitwise ops need
integral (or bool) operands; arithmetic with *only* bool operands is an error except ``mul``
(logical and), ``pos`` and bitwise ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

__all__ = [
    "DTYPES",
    "OPS",
    "ALIASES",
    "OpInfo",
    "canonical_op",
    "is_float",
    "is_integral",
    "is_signed_int",
    "is_unsigned_int",
    "bit_width",
    "binary_promotion",
    "scalar_dtype",
    "ScalarRangeError",
    "infer_dtype",
    "result_dtype",
]

#: Every dtype the arithmetic supports (bfloat16 is not supported: numpy has no such type).
DTYPES: tuple[str, ...] = (
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)

_BITS = {
    "bool": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
    "float16": 16, "float32": 32, "float64": 64,
}

#: Range of a Python ``int`` accepted as a scalar operand (it becomes an int32 constant).
INT32_MIN = -(2 ** 31)
INT32_MAX = 2 ** 31 - 1


def _check_dtype(dtype: str, what: str = "dtype") -> str:
    if dtype not in _BITS:
        if dtype == "bfloat16":
            raise TypeError(f"{what}: bfloat16 is not supported by ndd arithmetic; "
                            f"cast to float32 first")
        raise TypeError(f"{what}: unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return dtype


def is_float(dtype: str) -> bool:
    """True for ``float16``, ``float32``, ``float64``."""
    return dtype.startswith("float")


def is_signed_int(dtype: str) -> bool:
    """True for ``int8`` ... ``int64`` (not bool)."""
    return dtype.startswith("int")


def is_unsigned_int(dtype: str) -> bool:
    """True for ``uint8`` ... ``uint64`` (not bool)."""
    return dtype.startswith("uint")


def is_integral(dtype: str) -> bool:
    """True for bool and all (un)signed integer dtypes: the operands bitwise ops accept."""
    return dtype == "bool" or is_signed_int(dtype) or is_unsigned_int(dtype)


def bit_width(dtype: str) -> int:
    """Width of ``dtype`` in bits (bool counts as 8)."""
    return _BITS[_check_dtype(dtype)]


# ------------------------------------------------------------------------------------------------
# Operator table
# ------------------------------------------------------------------------------------------------

#: Result rule kinds used by :class:`OpInfo`.
#: ``same``: the promoted operand type; ``float``: promoted type, float32 if no operand is a float;
#: ``bool``: always bool.
_RESULT_KINDS = ("same", "float", "bool")


@dataclass(frozen=True, slots=True)
class OpInfo:
    """Static description of one element-wise arithmetic op.

    Attributes
    ----------
    name : str
        ndd name (``"add"``, ``"truediv"``, ``"sqrt"``, ...).
    arity : int
        Number of operands (1, 2 or 3 for ``clamp``).
    symbol : str
        Python operator symbol (``"+"``) or function name (``"sqrt"``) for messages/printing.
    dali_name : str
        Name DALI's expression language uses (``"fdiv"`` for ``/``, ``"div"`` for ``//``).
    dunder : str | None
        Python special method stem (``"add"`` -> ``__add__``/``__radd__``), None for functions.
    result : str
        ``"same"``, ``"float"`` or ``"bool"`` (see module docstring).
    category : str
        ``"arithmetic"``, ``"comparison"``, ``"bitwise"`` or ``"math"``.
    bool_ok : bool
        Whether the op accepts operands that are all bool.
    integral_only : bool
        Whether every operand must be bool or an integer (bitwise ops).
    """

    name: str
    arity: int
    symbol: str
    dali_name: str
    dunder: str | None
    result: str
    category: str
    bool_ok: bool = False
    integral_only: bool = False

    @property
    def is_comparison(self) -> bool:
        return self.category == "comparison"

    @property
    def is_bitwise(self) -> bool:
        return self.category == "bitwise"


def _build_ops() -> dict[str, OpInfo]:
    ops: list[OpInfo] = [
        # unary
        OpInfo("neg", 1, "-", "minus", "neg", "same", "arithmetic"),
        OpInfo("pos", 1, "+", "plus", "pos", "same", "arithmetic", bool_ok=True),
        OpInfo("invert", 1, "~", "bitnot", "invert", "same", "bitwise", True, True),
        OpInfo("abs", 1, "abs", "abs", "abs", "same", "math"),
        # binary arithmetic
        OpInfo("add", 2, "+", "add", "add", "same", "arithmetic"),
        OpInfo("sub", 2, "-", "sub", "sub", "same", "arithmetic"),
        OpInfo("mul", 2, "*", "mul", "mul", "same", "arithmetic", bool_ok=True),
        OpInfo("truediv", 2, "/", "fdiv", "truediv", "float", "arithmetic"),
        OpInfo("floordiv", 2, "//", "div", "floordiv", "same", "arithmetic"),
        OpInfo("mod", 2, "%", "mod", "mod", "same", "arithmetic"),
        OpInfo("pow", 2, "**", "pow", "pow", "same", "arithmetic"),
        OpInfo("fpow", 2, "fpow", "fpow", None, "float", "math"),
        OpInfo("min", 2, "min", "min", None, "same", "math"),
        OpInfo("max", 2, "max", "max", None, "same", "math"),
        OpInfo("atan2", 2, "atan2", "atan2", None, "float", "math"),
        # comparisons
        OpInfo("eq", 2, "==", "eq", "eq", "bool", "comparison", bool_ok=True),
        OpInfo("ne", 2, "!=", "neq", "ne", "bool", "comparison", bool_ok=True),
        OpInfo("lt", 2, "<", "lt", "lt", "bool", "comparison", bool_ok=True),
        OpInfo("le", 2, "<=", "leq", "le", "bool", "comparison", bool_ok=True),
        OpInfo("gt", 2, ">", "gt", "gt", "bool", "comparison", bool_ok=True),
        OpInfo("ge", 2, ">=", "geq", "ge", "bool", "comparison", bool_ok=True),
        # bitwise
        OpInfo("and", 2, "&", "bitand", "and", "same", "bitwise", True, True),
        OpInfo("or", 2, "|", "bitor", "or", "same", "bitwise", True, True),
        OpInfo("xor", 2, "^", "bitxor", "xor", "same", "bitwise", True, True),
        OpInfo("lshift", 2, "<<", "lshift", "lshift", "same", "bitwise", True, True),
        OpInfo("rshift", 2, ">>", "rshift", "rshift", "same", "bitwise", True, True),
        # ternary
        OpInfo("clamp", 3, "clamp", "clamp", None, "same", "math"),
    ]
    for fn in ("fabs", "floor", "ceil", "sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10",
               "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
               "asinh", "acosh", "atanh"):
        ops.append(OpInfo(fn, 1, fn, fn, None, "float", "math"))
    return {op.name: op for op in ops}


#: ndd op name -> :class:`OpInfo`.
OPS: dict[str, OpInfo] = _build_ops()

#: Other accepted spellings (DALI expression names, ``operator`` module names) -> ndd name.
ALIASES: dict[str, str] = {
    "minus": "neg", "plus": "pos", "bitnot": "invert", "fdiv": "truediv", "div": "floordiv",
    "neq": "ne", "leq": "le", "geq": "ge", "bitand": "and", "bitor": "or", "bitxor": "xor",
    "and_": "and", "or_": "or", "invert_": "invert",
}


def canonical_op(op: str) -> str:
    """Return the ndd name of ``op`` (accepts :data:`ALIASES`).

    Raises
    ------
    ValueError
        If ``op`` is not a known arithmetic op.
    """
    if op in OPS:
        return op
    name = ALIASES.get(op) if isinstance(op, str) else None
    if name is None:
        raise ValueError(f"op: unknown arithmetic op {op!r}; expected one of "
                         f"{', '.join(sorted(OPS))}")
    return name


# ------------------------------------------------------------------------------------------------
# Promotion
# ------------------------------------------------------------------------------------------------

def binary_promotion(a: str, b: str) -> str:
    """DALI's binary promotion table (symmetric), before any per-op rule.

    Parameters
    ----------
    a, b : str
        Operand dtypes.

    Returns
    -------
    str
        The promoted dtype (see the table in the module docstring).
    """
    _check_dtype(a, "lhs")
    _check_dtype(b, "rhs")
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    fa, fb = is_float(a), is_float(b)
    if fa or fb:
        if fa and fb:
            return a if _BITS[a] >= _BITS[b] else b
        return a if fa else b
    sa, sb = is_signed_int(a), is_signed_int(b)
    if sa == sb:
        return a if _BITS[a] >= _BITS[b] else b
    signed, unsigned = (a, b) if sa else (b, a)
    if _BITS[signed] > _BITS[unsigned]:
        return signed
    return "int" + str(min(2 * _BITS[unsigned], 64))


class ScalarRangeError(ValueError, OverflowError):
    """A Python int scalar operand does not fit in int32 (DALI raises OverflowError)."""


def scalar_dtype(scalar: object) -> str:
    """Dtype a Python scalar (or its type) takes part in promotion as.

    Parameters
    ----------
    scalar : bool | int | float | type
        A Python scalar value, or one of the types ``bool``, ``int``, ``float``.

    Returns
    -------
    str
        ``"bool"``, ``"int32"`` or ``"float32"`` (DALI's constant types).

    Raises
    ------
    TypeError
        For other types (str, complex, numpy scalars are not Python scalars).
    ValueError
        For an ``int`` outside the int32 range (DALI raises OverflowError; the error raised here
        is also an OverflowError).
    """
    if isinstance(scalar, type):
        kind = scalar
    else:
        kind = type(scalar)
    if kind is bool:
        return "bool"
    if kind is int:
        if not isinstance(scalar, type) and not INT32_MIN <= scalar <= INT32_MAX:
            raise ScalarRangeError(
                f"scalar operand: integer {scalar} is out of range for int32 "
                f"([{INT32_MIN}, {INT32_MAX}]); wrap it in an int64 tensor instead")
        return "int32"
    if kind is float:
        return "float32"
    raise TypeError(f"scalar operand: expected a Python bool, int or float, got {kind.__name__}")


def infer_dtype(op: str, dtypes: Sequence[str]) -> str:
    """Result dtype of ``op`` applied to operands of the given dtypes.

    Parameters
    ----------
    op : str
        An op name from :data:`OPS` (or an alias from :data:`ALIASES`).
    dtypes : sequence of str
        One dtype per operand; Python scalars already mapped with :func:`scalar_dtype`.

    Returns
    -------
    str
        Output dtype.

    Raises
    ------
    ValueError
        Unknown op or wrong number of operands.
    TypeError
        Unsupported dtypes for the op: only-bool operands to arithmetic (DALI: "cannot be
        booleans"), non-integral operands to bitwise ops, unknown dtypes.
    """
    info = OPS[canonical_op(op)]
    dtypes = tuple(dtypes)
    if len(dtypes) != info.arity:
        raise ValueError(f"op {info.name!r}: expected {info.arity} operand(s), got {len(dtypes)}")
    for i, dt in enumerate(dtypes):
        _check_dtype(dt, f"operand {i} of {info.name!r}")
    if info.integral_only:
        bad = [dt for dt in dtypes if not is_integral(dt)]
        if bad:
            raise TypeError(f"op {info.name!r} ({info.symbol}): operands must be integers or "
                            f"bool, got {', '.join(dtypes)}")
    if not info.bool_ok and all(dt == "bool" for dt in dtypes):
        hint = "use a bitwise operator (&, |, ^, ~) or convert one operand to a numeric type"
        raise TypeError(f"op {info.name!r} ({info.symbol}): operands cannot all be bool; {hint}")
    promoted = dtypes[0]
    for dt in dtypes[1:]:
        promoted = binary_promotion(promoted, dt)
    if info.result == "bool":
        return "bool"
    if info.result == "float" and not is_float(promoted):
        return "float32"
    return promoted


def result_dtype(op: str, lhs: str | None, rhs: str | None = None, third: str | None = None, *,
                 lhs_scalar: type | None = None, rhs_scalar: type | None = None,
                 third_scalar: type | None = None) -> str:
    """Result dtype of a unary, binary or ternary (``clamp``) arithmetic op.

    Parameters
    ----------
    op : str
        Op name (see :data:`OPS`; DALI names such as ``"fdiv"`` are accepted).
    lhs, rhs, third : str or None
        Operand dtypes. A Python scalar operand is given as ``None`` with its type in the
        matching ``*_scalar`` argument. ``rhs``/``third`` are left out for unary/binary ops.
    lhs_scalar, rhs_scalar, third_scalar : type or None
        ``bool``, ``int`` or ``float`` for a scalar operand (or the scalar value itself, which
        also range-checks ints).

    Returns
    -------
    str
        Output dtype, e.g. ``result_dtype("add", "uint8", None, rhs_scalar=int) == "int32"``.

    Raises
    ------
    ValueError, TypeError
        As :func:`infer_dtype`; also when an operand has neither a dtype nor a scalar type.
    """
    info = OPS[canonical_op(op)]
    given = ((lhs, lhs_scalar, "lhs"), (rhs, rhs_scalar, "rhs"), (third, third_scalar, "third"))
    dtypes: list[str] = []
    for dtype, scalar, what in given[: info.arity]:
        if dtype is not None and scalar is not None:
            raise ValueError(f"{what}: give either a dtype or a scalar type, not both")
        if dtype is None and scalar is None:
            raise ValueError(f"{what}: op {info.name!r} takes {info.arity} operand(s) but "
                             f"{what} has neither a dtype nor a scalar type")
        dtypes.append(dtype if dtype is not None else scalar_dtype(scalar))
    for dtype, scalar, what in given[info.arity:]:
        if dtype is not None or scalar is not None:
            raise ValueError(f"{what}: op {info.name!r} takes only {info.arity} operand(s)")
    return infer_dtype(info.name, dtypes)
