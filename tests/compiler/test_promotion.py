"""Type promotion of arithmetic ops (compiler/promotion.py) against DALI's documented table,
hand-picked cases, and DALI 2.4 itself (oracle: every dtype pair, scalars, unary ops, clamp)."""

import operator

import pytest

from compiler import promotion
from compiler.promotion import OPS, binary_promotion, infer_dtype, result_dtype, scalar_dtype

DALI_DTYPES = [d for d in promotion.DTYPES if d != "float16"]  # DALI CPU rejects float16
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def test_promotion_module_does_not_import_numpy():
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(promotion))
    names = [a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in n.names] + [n.module for n in ast.walk(tree)
                                  if isinstance(n, ast.ImportFrom) and n.module]
    assert not any(x.split(".")[0] in ("numpy", "torch", "cupy") for x in names)


@pytest.mark.parametrize("op, args, kwargs, expected", [
    ("add", ("uint8", None), {"rhs_scalar": int}, "int32"),
    ("add", ("int8", None), {"rhs_scalar": int}, "int32"),
    ("add", (None, "uint8"), {"lhs_scalar": int}, "int32"),
    ("truediv", ("int32", "int32"), {}, "float32"),
    ("truediv", ("int64", "int64"), {}, "float32"),
    ("truediv", ("float64", None), {"rhs_scalar": int}, "float64"),
    ("add", ("uint8", "uint8"), {}, "uint8"),
    ("mul", ("uint8", "uint8"), {}, "uint8"),
    ("neg", ("uint8",), {}, "uint8"),
    ("lt", ("uint8", None), {"rhs_scalar": float}, "bool"),
    ("add", ("float32", "int64"), {}, "float32"),
    ("add", ("uint8", None), {"rhs_scalar": float}, "float32"),
    ("add", ("float64", None), {"rhs_scalar": float}, "float64"),
    ("add", ("uint8", None), {"rhs_scalar": bool}, "uint8"),
    ("clamp", ("uint8", None, None), {"rhs_scalar": 50, "third_scalar": 200}, "int32"),
    ("clamp", ("uint8", None, None), {"rhs_scalar": 0.5, "third_scalar": 2.5}, "float32"),
    ("clamp", ("uint8", "uint8", "uint8"), {}, "uint8"),
    ("add", ("int8", "uint8"), {}, "int16"),
    ("add", ("int32", "uint32"), {}, "int64"),
    ("add", ("int64", "uint64"), {}, "int64"),
    ("add", ("int16", "uint8"), {}, "int16"),
    ("sqrt", ("uint8",), {}, "float32"),
    ("sqrt", ("float64",), {}, "float64"),
    ("floor", ("int64",), {}, "float32"),
    ("abs", ("int8",), {}, "int8"),
    ("invert", ("bool",), {}, "bool"),
    ("mul", ("bool", "bool"), {}, "bool"),
    ("and", ("bool", None), {"rhs_scalar": int}, "int32"),
    ("fpow", ("int8", "uint8"), {}, "float32"),
    ("atan2", ("float64", "int8"), {}, "float64"),
    ("pow", ("uint8", None), {"rhs_scalar": int}, "int32"),
    ("pos", ("bool",), {}, "bool"),
    ("add", ("float16", "int64"), {}, "float16"),
    ("add", ("float16", "float32"), {}, "float32"),
    ("sin", ("float16",), {}, "float16"),
    ("fdiv", ("int8", "int8"), {}, "float32"),    # DALI alias
    ("div", ("int8", "int8"), {}, "int8"),
])
def test_hand_computed(op, args, kwargs, expected):
    assert result_dtype(op, *args, **kwargs) == expected


@pytest.mark.parametrize("a", promotion.DTYPES)
@pytest.mark.parametrize("b", promotion.DTYPES)
def test_table_symmetric_and_by_doc(a, b):
    r = binary_promotion(a, b)
    assert r == binary_promotion(b, a)
    if a == b:
        assert r == a
    elif "bool" in (a, b):
        assert r == (b if a == "bool" else a)
    elif promotion.is_float(a) or promotion.is_float(b):
        floats = [x for x in (a, b) if promotion.is_float(x)]
        assert r == max(floats, key=promotion.bit_width)
    elif a[0] == b[0]:  # same signedness
        assert r == max((a, b), key=promotion.bit_width)
    else:
        s, u = (a, b) if a.startswith("int") else (b, a)
        ws, wu = promotion.bit_width(s), promotion.bit_width(u)
        assert r == (s if ws > wu else f"int{min(2 * wu, 64)}")


@pytest.mark.parametrize("op, dtypes, message", [
    ("add", ("bool", "bool"), "cannot all be bool"),
    ("sub", ("bool", "bool"), "cannot all be bool"),
    ("truediv", ("bool", "bool"), "cannot all be bool"),
    ("neg", ("bool",), "cannot all be bool"),
    ("abs", ("bool",), "cannot all be bool"),
    ("sqrt", ("bool",), "cannot all be bool"),
    ("clamp", ("bool", "bool", "bool"), "cannot all be bool"),
    ("and", ("int8", "float32"), "must be integers or bool, got int8, float32"),
    ("lshift", ("float64", "int8"), "must be integers"),
    ("invert", ("float32",), "must be integers"),
    ("add", ("bfloat16", "float32"), "bfloat16 is not supported"),
    ("add", ("complex64", "float32"), "unknown dtype 'complex64'"),
])
def test_type_errors(op, dtypes, message):
    with pytest.raises(TypeError, match=message):
        infer_dtype(op, dtypes)


def test_value_errors():
    with pytest.raises(ValueError, match="unknown arithmetic op 'hypot'"):
        infer_dtype("hypot", ("float32", "float32"))
    with pytest.raises(ValueError, match="expected 2 operand"):
        infer_dtype("add", ("float32",))
    with pytest.raises(ValueError, match="out of range for int32"):
        scalar_dtype(2 ** 31)
    with pytest.raises(OverflowError):
        scalar_dtype(-(2 ** 31) - 1)
    assert scalar_dtype(-(2 ** 31)) == "int32"
    with pytest.raises(TypeError, match="complex"):
        scalar_dtype(1j)
    with pytest.raises(ValueError, match="neither"):
        result_dtype("add", "int8")
    with pytest.raises(ValueError, match="only 1"):
        result_dtype("neg", "int8", "int8")


def test_ops_table():
    assert OPS["add"].arity == 2 and OPS["clamp"].arity == 3 and OPS["sqrt"].arity == 1
    assert OPS["lt"].is_comparison and OPS["xor"].is_bitwise and not OPS["add"].is_comparison
    assert OPS["truediv"].dali_name == "fdiv" and OPS["floordiv"].dali_name == "div"
    assert {o.dunder for o in OPS.values() if o.dunder} >= {
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "invert",
        "and", "or", "xor", "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge", "abs"}


# ------------------------------------------------------------------------------------------------
# oracle: DALI 2.4 dynamic mode
# ------------------------------------------------------------------------------------------------

_DALI_BINARY = {  # one op per promotion rule family (result kind x bool rule x integral rule)
    "add": operator.add, "mul": operator.mul, "truediv": operator.truediv,
    "eq": operator.eq, "and": operator.and_,
}


def _dali_dtype(dali, fn):
    import numpy as np
    try:
        return np.asarray(fn()).dtype.name
    except Exception:  # DALI reports unsupported combinations as RuntimeError/ValueError
        return "ERR"


def _ours(op, dtypes):
    try:
        return infer_dtype(op, dtypes)
    except TypeError:
        return "ERR"


@pytest.fixture(scope="module")
def dyn():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


@pytest.fixture(scope="module")
def tensors(dyn):
    import numpy as np
    return {dt: dyn.as_tensor(np.array([3, 2, 1], dtype=dt)) for dt in DALI_DTYPES}


@pytest.mark.oracle
def test_oracle_all_dtype_pairs(dyn, tensors):
    mismatches = []
    for op, fn in _DALI_BINARY.items():
        for a in DALI_DTYPES:
            for b in DALI_DTYPES:
                got = _dali_dtype(dyn, lambda: fn(tensors[a], tensors[b]))
                if got != _ours(op, (a, b)):
                    mismatches.append((op, a, b, got, _ours(op, (a, b))))
    assert not mismatches


@pytest.mark.oracle
def test_oracle_scalars(dyn, tensors):
    mismatches = []
    ops = {"add": operator.add, "truediv": operator.truediv, "and": operator.and_,
           "min": dyn.math.min}
    for op, fn in ops.items():
        for a in DALI_DTYPES:
            for s in (7, 2.5, True):
                for left in (False, True):
                    args = (s, tensors[a]) if left else (tensors[a], s)
                    dts = (scalar_dtype(s), a) if left else (a, scalar_dtype(s))
                    got = _dali_dtype(dyn, lambda: fn(*args))
                    if got != _ours(op, dts):
                        mismatches.append((op, args, got, _ours(op, dts)))
    assert not mismatches


@pytest.mark.oracle
def test_oracle_unary_and_clamp(dyn, tensors):
    mismatches = []
    unary = {"neg": operator.neg, "invert": operator.invert, "abs": operator.abs}
    for name, info in OPS.items():
        if info.arity == 1 and name not in unary and name != "pos":
            unary[name] = getattr(dyn.math, name)
    for op, fn in unary.items():
        for a in DALI_DTYPES:
            got = _dali_dtype(dyn, lambda: fn(tensors[a]))
            if got != _ours(op, (a,)):
                mismatches.append((op, a, got, _ours(op, (a,))))
    for a in DALI_DTYPES:
        for b in DALI_DTYPES:
            got = _dali_dtype(dyn, lambda: dyn.math.clamp(tensors[a], tensors[b], tensors[b]))
            if got != _ours("clamp", (a, b, b)):
                mismatches.append(("clamp", a, b, got))
        got = _dali_dtype(dyn, lambda: dyn.math.clamp(tensors[a], 50, 200))
        if got != result_dtype("clamp", a, None, None, rhs_scalar=int, third_scalar=int):
            mismatches.append(("clamp-scalars", a, got))
    assert not mismatches
