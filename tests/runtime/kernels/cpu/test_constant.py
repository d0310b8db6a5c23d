"""Tests for runtime.kernels.cpu.constant (ones, zeros, full and the *_like forms)."""
import numpy as np
import pytest

from runtime.kernels.cpu.constant import broadcast_fill, filled, output_shape


def test_output_shape():
    assert output_shape(None) == ()
    assert output_shape(3) == (3,)
    assert output_shape((2, 0, 4)) == (2, 0, 4)
    assert output_shape(np.array([5, 1])) == (5, 1)
    with pytest.raises(ValueError, match="negative"):
        output_shape((2, -1))


@pytest.mark.parametrize("fill_shape,shape", [((), (2, 3)), ((3,), (2, 3)), ((2, 1), (2, 3)),
                                              ((1, 3), (4, 3)), ((), ())])
def test_broadcast_fill_follows_numpy(fill_shape, shape):
    fill = np.arange(int(np.prod(fill_shape)), dtype=np.int16).reshape(fill_shape)
    got = broadcast_fill(fill, shape)
    # independent: explicit loop over output positions, padding the fill shape with 1s
    pad = (1,) * (len(shape) - fill.ndim) + fill.shape
    f = fill.reshape(pad)
    want = np.empty(shape, np.int16)
    for idx in np.ndindex(*shape):
        want[idx] = f[tuple(0 if p == 1 else k for k, p in zip(idx, pad))]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fill_shape,shape", [((2,), (2, 3)), ((3, 2), (3,)), ((2,), ())])
def test_broadcast_fill_errors_in_dalis_words(fill_shape, shape):
    with pytest.raises(ValueError, match="can't be broadcast"):
        broadcast_fill(np.zeros(fill_shape), shape)


def test_broadcast_fill_message():
    with pytest.raises(ValueError, match=r"^Shapes 2 x 3 and 2 can't be broadcast\.$"):
        broadcast_fill(np.zeros(2), (2, 3))


def test_filled_converts_with_cast_rules():
    out = filled((2, 3), np.array([2.5, -3.5, 300.0], np.float32), "uint8")
    assert out.dtype == np.uint8 and out.flags.c_contiguous and out.flags.writeable
    np.testing.assert_array_equal(out, [[3, 0, 255], [3, 0, 255]])
    out = filled((3,), np.array([0.5, -0.5, -1.5]), "int8")
    np.testing.assert_array_equal(out, [1, -1, -2])      # half away from zero
    np.testing.assert_array_equal(filled((2,), 1, "float16"), np.ones(2, np.float16))
    assert filled((), 0, "bool").dtype == np.bool_ and filled((), 1, "bool")[()]
    assert filled((0, 2), 1, "int32").shape == (0, 2)
