"""Tests for runtime.kernels.cpu.normalize against an independent torch computation, and its
axis / parameter rules."""
import numpy as np
import pytest
import torch

from compiler.ops.reductions import normalize_axes
from runtime.kernels.cpu.normalize import normalize_batch, unflatten

_RNG = np.random.default_rng(8)


def _ref(x, dims, mean=None, std=None, scale=1.0, shift=0.0, eps=0.0, ddof=0):
    t = torch.from_numpy(x).double()
    m = t.mean(dims, keepdim=True) if mean is None else torch.as_tensor(mean).double()
    if std is None:
        n = np.prod([x.shape[d] for d in dims])
        var = ((t - m) ** 2).sum(dims, keepdim=True) / (n - ddof)
    else:
        var = torch.as_tensor(std).double() ** 2
    return ((t - m) * scale / torch.sqrt(var + eps) + shift).numpy()


def test_per_sample_against_torch():
    x = _RNG.normal(5, 3, (10, 7, 3)).astype(np.float32)
    for axes, kw in (([0, 1], {}), ([2], {"ddof": 1}), ([0, 1, 2], {"epsilon": 0.5}),
                     ([0], {"scale": 3.0, "shift": 1.0})):
        got = normalize_batch([x], "HWC", axes=axes, **kw)[0]
        ref = _ref(x, tuple(axes), scale=kw.get("scale", 1.0), shift=kw.get("shift", 0.0),
                   eps=kw.get("epsilon", 0.0), ddof=kw.get("ddof", 0))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    got = normalize_batch([x], "HWC", axis_names="HW", mean=[2.0], stddev=[4.0])[0]
    np.testing.assert_allclose(got, (x.astype(np.float64) - 2) / 4, rtol=1e-6, atol=1e-6)


def test_batch_and_inferred_axes():
    xs = [_RNG.normal(0, 2, (k, 4)).astype(np.float32) for k in (3, 6)]
    got = normalize_batch(xs, "", axes=[0], batch=True)
    allx = np.concatenate(xs).astype(np.float64)
    m, s = allx.mean(0), allx.std(0)
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g, (x - m) / s, rtol=1e-5, atol=1e-5)
    mean = np.full((1, 4), 0.5, np.float32)       # extent 1 on axis 0: axis 0 is reduced
    got = normalize_batch([xs[0]], "", mean=[mean])[0]
    np.testing.assert_allclose(got, _ref(xs[0], (0,), mean=mean), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="must match"):
        normalize_batch(xs, "", axes=[1], batch=True)
    with pytest.raises(ValueError, match="TensorList"):
        normalize_batch(xs, "", axes=[0], batch=True, mean=[mean, mean])


def test_constant_data_integers_and_zero_stddev():
    assert normalize_batch([np.ones((2, 2), np.float32)])[0].tolist() == [[0, 0], [0, 0]]
    out = normalize_batch([np.array([1, 2, 3, 4, 6, 8], np.float32)], dtype="uint8", scale=64,
                          shift=128)[0]
    ref = np.clip(np.round(_ref(np.array([1, 2, 3, 4, 6, 8], np.float32), (0,), scale=64,
                                shift=128)), 0, 255)
    np.testing.assert_array_equal(out, ref)
    with np.errstate(all="ignore"):
        z = normalize_batch([np.array([1.0, 3.0], np.float32)], stddev=[0.0])[0]
    assert z.tolist() == [-np.inf, np.inf]


def test_axes_and_unflatten():
    assert normalize_axes(3, "HWC", None, "WH") == [0, 1]
    assert normalize_axes(3, "", None, None) is None
    with pytest.raises(ValueError, match="out of valid range"):
        normalize_axes(2, "", [-1], None)
    with pytest.raises(ValueError, match="mutually exclusive"):
        normalize_axes(2, "HW", [0], "H")
    assert unflatten((1.0, 2.0), (2, 3), None).shape == (2, 1)
    assert unflatten((1.0, 2.0, 3.0), (2, 3), [0]).shape == (1, 3)
    with pytest.raises(ValueError, match="unambiguously"):
        unflatten((1.0, 2.0, 3.0), (3, 3), None)
