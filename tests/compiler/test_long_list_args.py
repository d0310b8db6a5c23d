"""Long number-list arguments (SSD's anchors) are converted once per content."""
import numpy as np
import pytest

from compiler import schema as S


def _spec(t="float[]", length=None):
    return S.ArgSpec("anchors", t, None, length=length)


def test_long_list_converts_like_short_lists():
    values = [0.25 * i for i in range(300)]
    values[3] = 7           # ints become floats, as element-wise conversion does
    values[4] = True
    out = S.convert_arg("op", _spec(), values)
    assert out == tuple(float(v) for v in values)
    assert all(type(v) is float for v in out)
    ints = S.convert_arg("op", _spec("int[]"), [float(i) for i in range(100)])
    assert ints == tuple(range(100)) and all(type(v) is int for v in ints)


def test_equal_lists_give_the_same_tuple_and_arrays_too():
    values = [float(i) / 7 for i in range(1000)]
    a = S.convert_arg("op", _spec(), values)
    b = S.convert_arg("op", _spec(), list(values))
    c = S.convert_arg("op", _spec(), np.asarray(values))        # float64 array: same numbers
    assert a is b is c
    d = S.convert_arg("op", _spec(), np.asarray(values, np.float32))
    assert d == tuple(float(v) for v in np.asarray(values, np.float32)) and d != a


def test_long_list_errors_name_the_argument():
    bad = [0.5] * 100 + ["x"]
    with pytest.raises(S.ArgError, match="'anchors' must be a number"):
        S.convert_arg("box_encoder", _spec(), bad)
    with pytest.raises(S.ArgError, match="'anchors' must be an integer"):
        S.convert_arg("op", _spec("int[]"), [1.5] * 100)
    with pytest.raises(S.ArgError, match="must have 4 elements"):
        S.convert_arg("op", _spec(length=4), [1.0] * 100)
    with pytest.raises(S.ArgError):     # an unhashable element is reported, not cached
        S.convert_arg("op", _spec(), [0.5] * 100 + [[1.0]])


def test_a_mutated_list_is_converted_again():
    values = [0.5] * 200
    a = S.convert_arg("op", _spec(), values)
    values[10] = 0.75
    b = S.convert_arg("op", _spec(), values)
    assert a[10] == 0.5 and b[10] == 0.75
