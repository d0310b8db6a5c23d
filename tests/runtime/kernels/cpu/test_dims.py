"""Tests for runtime.kernels.cpu.dims (expand_dims, stack) and their schemas' layout rules."""
import numpy as np
import pytest

from compiler.ops.dims import expand_axes, expand_layout, stack_axis
from runtime.kernels.cpu.dims import expand_dims, stack


def test_expand_dims_axes_are_output_positions():
    x = np.arange(6).reshape(2, 3)
    assert expand_dims(x, [0, 3]).shape == (1, 2, 3, 1)
    assert expand_dims(x, 1).shape == (2, 1, 3)
    out = expand_dims(x, [0])
    np.testing.assert_array_equal(out[0], x)
    assert not np.shares_memory(out, x)


def test_expand_layout_and_checks():
    assert expand_layout("A", (0, 2), "BC") == "BAC"
    assert expand_layout("A", (2, 0), "BC") == "CAB"
    assert expand_layout("A", (0, 1), "") == ""
    assert expand_layout("", (0, 1), "AB") == "AB"
    with pytest.raises(ValueError, match="axes"):
        expand_axes((0, 0), 1)
    with pytest.raises(ValueError, match="axes"):
        expand_axes((3,), 1)


def test_stack_axes():
    a, b = np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])
    np.testing.assert_array_equal(stack([a, b], 0), [a, b])
    np.testing.assert_array_equal(stack([a, b], 2)[..., 1], b)      # interleaved
    np.testing.assert_array_equal(stack([a, b], -1), stack([a, b], 2))
    np.testing.assert_array_equal(stack([a, b], 1)[:, 0], a)
    assert stack_axis(-1, 2) == 2 and stack_axis(-2, 2) == 1 and stack_axis(0, 2) == 0
    with pytest.raises(ValueError, match="axis"):
        stack([a, b], 3)
    with pytest.raises(ValueError, match="same shape"):
        stack([a, b[:1]], 0)
