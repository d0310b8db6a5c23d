"""Tests for runtime.kernels.cpu.reorder (rearrange, lookup) against independent numpy/Python
computations, and the schemas' checks."""
import numpy as np
import pytest

from compiler.ir import ValueMeta
from compiler.ops.reorder import _lookup_table_infer, _sequence_rearrange_infer
from runtime.kernels.cpu.reorder import batch_permutation, lookup, rearrange


def test_rearrange_frames():
    x = np.arange(12).reshape(4, 3)
    got = rearrange(x, [3, 0, 0])
    assert got.tolist() == [x[3].tolist(), x[0].tolist(), x[0].tolist()]
    assert not np.shares_memory(got, x)
    with pytest.raises(ValueError, match="between 0 and input_sequence_length = 4"):
        rearrange(x, [4])
    with pytest.raises(ValueError, match="Empty"):
        rearrange(x, [])


def test_lookup_against_a_python_dict():
    keys, values = [0, 2, 3, 4, 5, 3], [0.2, 0.4, 0.5, 0.6, 0.7, 0.1]
    table = dict(zip(keys, values))                      # the last occurrence wins, as in DALI
    x = np.array([1, 4, 1, 0, 100, 2, 3, 4, 5, 6, -1], np.int32)
    want = [np.float32(table.get(int(v), 0.99)) for v in x]
    np.testing.assert_array_equal(lookup(x, keys, values, 0.99), np.array(want, np.float32))
    got = lookup(x, [0, 2], [2.7, -1.5], 300, "uint8")  # rounding and saturation
    assert got.dtype == np.uint8 and got.tolist() == [255, 255, 255, 3, 255, 0] + [255] * 5
    assert lookup(np.array([0, 1, 255], np.uint8), [255, 1], [5, 6]).tolist() == [0, 6, 5]
    assert lookup(np.array([3]), [], []).tolist() == [0.0]


def test_schema_checks():
    m = ValueMeta("int32", 1, "")
    with pytest.raises(ValueError, match="size should match"):
        _lookup_table_infer([m], {"keys": [0, 1], "values": [1.0]})
    with pytest.raises(ValueError, match=r"range \[0, 65535\]"):
        _lookup_table_infer([m], {"keys": [70000], "values": [1.0]})
    with pytest.raises(ValueError, match="Unsupported input type"):
        _lookup_table_infer([ValueMeta("float32", 1, "")], {})
    assert _lookup_table_infer([m], {"dtype": "uint8"})[0].dtype == "uint8"
    with pytest.raises(ValueError, match="frames dimension"):
        _sequence_rearrange_infer([ValueMeta("int32", 2, "HW")], {"new_order": [0]})
    with pytest.raises(ValueError, match="at least 1 dim"):
        _sequence_rearrange_infer([m], {"new_order": [0]})


# ------------------------------------------------------------------ batch_permutation
def _perm(n, seed, **kw):
    return batch_permutation(n, np.random.default_rng(seed), **kw)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16])
def test_batch_permutation_is_a_permutation(n):
    for seed in range(20):
        out = _perm(n, seed)
        assert out.dtype == np.int32 and out.shape == (n,)
        assert sorted(out.tolist()) == list(range(n))


@pytest.mark.parametrize("n", [2, 3, 5, 9])
def test_batch_permutation_without_fixed_points(n):
    for seed in range(30):
        out = _perm(n, seed, no_fixed_points=True)
        assert sorted(out.tolist()) == list(range(n))
        assert all(out[i] != i for i in range(n)), out
        rep = _perm(n, seed, no_fixed_points=True, allow_repetitions=True)
        assert all(rep[i] != i for i in range(n)) and ((0 <= rep) & (rep < n)).all()
    assert _perm(1, 0, no_fixed_points=True).tolist() == [0]      # ignored for one sample


def test_batch_permutation_derangements_are_uniform():
    """All 2 derangements of 3 elements appear about equally often (not only one cycle)."""
    seen = {}
    for seed in range(400):
        key = tuple(_perm(3, seed, no_fixed_points=True).tolist())
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) == {(1, 2, 0), (2, 0, 1)}
    assert min(seen.values()) > 150


def test_batch_permutation_repetitions_are_independent_draws():
    draws = np.concatenate([_perm(8, s, allow_repetitions=True) for s in range(500)])
    counts = np.bincount(draws, minlength=8)
    assert counts.min() > 400 and counts.max() < 600      # 4000 draws, 500 expected each
    # some batches repeat an index (a permutation never would)
    assert any(len(set(_perm(8, s, allow_repetitions=True).tolist())) < 8 for s in range(10))
