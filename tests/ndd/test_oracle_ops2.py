"""ndd vs NVIDIA DALI 2.4 dynamic mode for ``squeeze``, ``cat``, ``pad`` and ``one_hot``: values,
dtype, shape and layout must match exactly; error cases must fail in both."""
import types

import numpy as np
import pytest

import ndd

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def dyn():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


def _np(x):
    if hasattr(x, "tensors") and hasattr(x, "batch_size"):
        return [np.asarray(x.tensors[i].cpu()) for i in range(x.batch_size)]
    return [np.asarray(x.cpu())]


def _same(ours, ref):
    a, b = _np(ours), _np(ref)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
    assert (ours.layout or None) == (ref.layout or None)


def _both(dyn, make, op, kw):
    """``op`` on the data ``make(mod)`` in ndd and DALI; dtype names in ``kw`` resolved."""
    def call(mod):
        k = {key: (v(mod) if isinstance(v, types.FunctionType) else v) for key, v in kw.items()}
        k = {key: (getattr(mod, v[6:]) if isinstance(v, str) and v.startswith("dtype:") else v)
             for key, v in k.items()}
        return getattr(mod, op)(*make(mod), **k)
    return call(ndd), call(dyn)


def _fails_in_both(dyn, make, op, kw):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError, TypeError)):
            k = {key: (getattr(mod, v[6:]) if isinstance(v, str) and v.startswith("dtype:")
                       else v) for key, v in kw.items()}
            out = getattr(mod, op)(*make(mod), **k)
            out.evaluate()
            _np(out)


_X4 = np.arange(6, dtype=np.int16).reshape(1, 2, 1, 3)


def _x4(mod):
    return (mod.tensor(_X4, layout="FHWC"),)


def _xb(mod):
    return (mod.batch([np.ones((1, 2, 1), np.float32), np.zeros((1, 3, 1), np.float32)],
                      layout="HWC"),)


# DALI reads its caller's source to tell literal arguments from tensor ones, and squeeze fails
# with ``axes`` given as a tensor argument: the DALI calls spell their arguments literally.
_SQUEEZE = [
    (_x4, lambda m, x: m.squeeze(x, axes=[0, 2])), (_x4, lambda m, x: m.squeeze(x, axes=[0])),
    (_x4, lambda m, x: m.squeeze(x, axis_names="FW")),
    (_x4, lambda m, x: m.squeeze(x, axis_names="W")),
    (_xb, lambda m, x: m.squeeze(x, axes=[0, 2])), (_xb, lambda m, x: m.squeeze(x, axes=2)),
    (_xb, lambda m, x: m.squeeze(x, axis_names="C")),
    (lambda m: (m.tensor(np.zeros((0, 1, 0), np.float32)),),
     lambda m, x: m.squeeze(x, axes=[0])),
    (lambda m: (m.tensor(np.ones((1, 1), np.uint8), layout="HW"),),
     lambda m, x: m.squeeze(x, axes=[0, 1])),
]


@pytest.mark.parametrize("k", range(len(_SQUEEZE)))
def test_squeeze_matches_dali(dyn, k):
    make, call = _SQUEEZE[k]
    _same(call(ndd, *make(ndd)), call(dyn, *make(dyn)))


_SQUEEZE_BAD = [lambda m, x: m.squeeze(x), lambda m, x: m.squeeze(x, axes=[1]),
                lambda m, x: m.squeeze(x, axes=[0], axis_names="W"),
                lambda m, x: m.squeeze(x, axes=[0, 0]), lambda m, x: m.squeeze(x, axis_names="Z")]


@pytest.mark.parametrize("k", range(len(_SQUEEZE_BAD)))
def test_squeeze_errors_match_dali(dyn, k):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            _np(_SQUEEZE_BAD[k](mod, *_x4(mod)))


def _cat2(mod):
    return (mod.tensor(np.arange(6, dtype=np.int32).reshape(2, 3), layout="HW"),
            mod.tensor(np.arange(4, dtype=np.int32).reshape(2, 2) + 10))


def _cat3(mod):
    s = [np.arange(8, dtype=np.float32).reshape(2, 2, 2) + k for k in range(3)]
    return (mod.batch([s[0], s[1]], layout="HWC"), mod.batch([s[2], s[0]], layout="HWC"),
            mod.batch([s[1], s[2]]))


@pytest.mark.parametrize("make,kw", [
    (_cat2, {"axis": 1}), (_cat2, {"axis": -1}), (_cat2, {"axis_name": "W"}),
    (_cat3, {}), (_cat3, {"axis": 2}), (_cat3, {"axis_name": "W"}), (_cat3, {"axis": -2}),
    (lambda m: (m.tensor(np.arange(3, dtype=np.uint8)),), {}),
])
def test_cat_matches_dali(dyn, make, kw):
    _same(*_both(dyn, make, "cat", kw))


@pytest.mark.parametrize("kw", [{"axis": 0}, {"axis": 2}, {"axis": 1, "axis_name": "W"},
                                {"axis_name": "C"}])
def test_cat_errors_match_dali(dyn, kw):
    _fails_in_both(dyn, _cat2, "cat", kw)


def _pad1(mod):
    return (mod.batch([np.array([3, 4, 2, 5, 4], np.int32), np.array([2, 2], np.int32),
                       np.array([3, 199, 5], np.int32)]),)


def _pad2(mod):
    return (mod.batch([np.arange(6, dtype=np.float32).reshape(2, 3),
                       np.arange(6, dtype=np.float32).reshape(3, 2)], layout="HW"),)


def _pad_u8(mod):
    return (mod.batch([np.array([[1]], np.uint8), np.array([[1, 2], [3, 4]], np.uint8)],
                      layout="HW"),)


def _pad_per_sample(mod):
    return mod.batch([np.array([4, 4], np.int32), np.array([1, 1], np.int32)])


@pytest.mark.parametrize("make,kw", [
    (_pad1, {"fill_value": -1}), (_pad1, {"fill_value": -1, "shape": [7]}),
    (_pad1, {"fill_value": -1, "align": [4]}), (_pad1, {"shape": [1], "align": [2]}),
    (_pad1, {"fill_value": 2.7}), (_pad1, {"fill_value": -2.7}), (_pad1, {"fill_value": 1e10}),
    (_pad2, {"axes": [0, 1], "align": [1, 2], "shape": [4, -1]}), (_pad2, {"axis_names": "W"}),
    (_pad2, {"axes": [-1]}), (_pad2, {"align": 3}), (_pad2, {"shape": [0, 0]}),
    (_pad2, {"shape": [-2, 5]}), (_pad2, {"shape": _pad_per_sample}),
    (_pad2, {"fill_value": lambda m: m.batch([np.float32(1), np.float32(2.5)])}),
    (_pad_u8, {"fill_value": -1}), (_pad_u8, {"fill_value": 300}),
    (_pad_u8, {"axis_names": "H", "fill_value": 9}),
    (lambda m: (m.tensor(np.ones((2, 3), np.float32)),), {"shape": [3, 4]}),
    (lambda m: (m.batch([np.array([1], np.int8), np.array([1, 2], np.int8)]),),
     {"fill_value": 200}),
    (lambda m: (m.batch([np.array([1], np.uint16), np.array([1, 2], np.uint16)]),),
     {"fill_value": -1.5}),
    (lambda m: (m.batch([np.array([1], np.float16), np.array([1, 2], np.float16)]),),
     {"fill_value": 0.1}),
    (lambda m: (m.batch([np.array([True]), np.array([True, False])]),), {"fill_value": 2}),
])
def test_pad_matches_dali(dyn, make, kw):
    _same(*_both(dyn, make, "pad", kw))


@pytest.mark.parametrize("kw", [{"axes": [0], "shape": [4, 4]}, {"axes": [0], "axis_names": "H"},
                                {"align": [0]}, {"align": [-2]}, {"axes": [2]}, {"axes": [-3]},
                                {"axis_names": "C"}, {"axes": [0], "align": [2, 2]}])
def test_pad_errors_match_dali(dyn, kw):
    _fails_in_both(dyn, _pad2, "pad", kw)


def _labels(mod):
    return (mod.tensor(np.array([0, 2, 1], np.int32)),)


def _labels_b(mod):
    return (mod.batch([np.array([1], np.int32), np.array([2], np.int32)]),)


@pytest.mark.parametrize("make,kw", [
    (_labels, {"num_classes": 3}), (_labels, {"num_classes": 3, "axis": 0}),
    (_labels, {"num_classes": 3, "axis": 1}), (_labels, {"num_classes": 3, "axis": -1}),
    (_labels, {"num_classes": 3, "on_value": 7.6, "off_value": -1.5, "dtype": "dtype:int32"}),
    (_labels, {"num_classes": 3, "on_value": 300, "off_value": -1, "dtype": "dtype:uint8"}),
    (_labels, {"num_classes": 3, "on_value": -7.6, "off_value": 1e10, "dtype": "dtype:uint8"}),
    (_labels, {"num_classes": 3, "dtype": "dtype:float64"}), (_labels, {}),
    (_labels, {"num_classes": 2, "dtype": "dtype:int64"}),
    (lambda m: (m.tensor(np.int64(2)),), {"num_classes": 4}),
    (lambda m: (m.tensor(np.int32(1)),), {"num_classes": 3, "axis_name": "C"}),
    (lambda m: (m.tensor(np.array([[1]], np.int32)),), {"num_classes": 4}),
    (lambda m: (m.tensor(np.array([[1]], np.int32)),), {"num_classes": 4, "axis": 0}),
    (lambda m: (m.tensor(np.array([5, -1], np.int32)),), {"num_classes": 3}),
    (lambda m: (m.tensor(np.array([1.7, 0.2, -0.5, 2.99], np.float32)),), {"num_classes": 3}),
    (lambda m: (m.tensor(np.array([1, 2], np.uint8)),), {"num_classes": 3}),
    (lambda m: (m.tensor(np.array([[0, 1]], np.int32), layout="AB"),),
     {"num_classes": 2, "axis": 1, "axis_name": "C"}),
    (lambda m: (m.tensor(np.array([[0, 1]], np.int32), layout="AB"),), {"num_classes": 2}),
    (lambda m: (m.tensor(np.array([1], np.int32)),), {"num_classes": 3, "axis_name": "C"}),
    (_labels_b, {"num_classes": 3}), (_labels_b, {"num_classes": 3, "axis": 0}),
    (lambda m: (m.batch([np.array([1, 0], np.int32), np.array([2], np.int32)]),),
     {"num_classes": 3}),
])
def test_one_hot_matches_dali(dyn, make, kw):
    _same(*_both(dyn, make, "one_hot", kw))


@pytest.mark.parametrize("kw", [{"num_classes": 3, "axis": 0, "axis_name": "K"},
                                {"num_classes": 3, "axis": 2}, {"num_classes": 3, "axis": -2},
                                {"num_classes": 3, "axis_name": "KL"},
                                {"num_classes": 3, "dtype": "dtype:float16"},
                                {"num_classes": 3, "dtype": "dtype:bool"}])
def test_one_hot_errors_match_dali(dyn, kw):
    _fails_in_both(dyn, _labels, "one_hot", kw)


# ---------------------------------------------------------------- reinterpret, element_extract,
# get_property (literal DALI calls: see squeeze)
def _y(m):
    return m.tensor(np.arange(8, dtype=np.uint8).reshape(2, 4), layout="HW")


def _yb(m):
    return m.batch([np.arange(8, dtype=np.uint8).reshape(2, 4),
                    np.arange(16, dtype=np.uint8).reshape(4, 4) * 3], layout="HW")


def _seq(m):
    return m.tensor(np.arange(24, dtype=np.int32).reshape(4, 2, 3), layout="FHW")


def _seqb(m):
    return m.batch([np.arange(6).reshape(3, 2), np.arange(4).reshape(2, 2)], layout="FX")


_MISC = [
    lambda m: m.reinterpret(_y(m), dtype=m.uint16),
    lambda m: m.reinterpret(_y(m), dtype=m.int32),
    lambda m: m.reinterpret(_yb(m), dtype=m.uint16),
    lambda m: m.reinterpret(_y(m), dtype=m.uint16, shape=[4]),
    lambda m: m.reinterpret(_y(m), dtype=m.uint16, shape=[2, -1]),
    lambda m: m.reinterpret(_y(m), shape=[8]), lambda m: m.reinterpret(_y(m), shape=[4, 2]),
    lambda m: m.reinterpret(_y(m), layout="XY"),
    lambda m: m.reinterpret(_y(m), rel_shape=[0.5, 2]),
    lambda m: m.reinterpret(_y(m), rel_shape=[0.5, -1]),
    lambda m: m.reinterpret(_yb(m), rel_shape=[2, 0.5], layout="AB"),
    lambda m: m.reinterpret(_y(m), src_dims=[1, 0]),
    lambda m: m.reinterpret(m.tensor(np.array([1.0, -2.0], np.float32)), dtype=m.int32),
    lambda m: m.reinterpret(m.tensor(np.array([1.0, -2.0], np.float32)), dtype=m.float16),
    lambda m: m.element_extract(_seq(m), element_map=[2, 0, 3]),
    lambda m: m.element_extract(_seq(m), element_map=1),
    lambda m: m.element_extract(m.tensor(np.arange(6).reshape(3, 2)), element_map=[0]),
    lambda m: m.element_extract(_seqb(m), element_map=[1, 0]),
    lambda m: m.get_property(_y(m), key="layout"),
    lambda m: m.get_property(_y(m), key="source_info"),
    lambda m: m.get_property(m.tensor(np.zeros(3)), key="layout"),
    lambda m: m.get_property(_yb(m), key="layout"),
]


@pytest.mark.parametrize("k", range(len(_MISC)))
def test_reinterpret_element_extract_get_property_match_dali(dyn, k):
    ours, ref = _MISC[k](ndd), _MISC[k](dyn)
    if isinstance(ref, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(ref)
        for a, b in zip(ours, ref):
            _same(a, b)
    else:
        _same(ours, ref)


_MISC_BAD = [
    lambda m: m.reinterpret(m.tensor(np.zeros((2, 3), np.uint8)), dtype=m.uint16),
    lambda m: m.reinterpret(_y(m), rel_shape=[0.5, 2], dtype=m.uint16),
    lambda m: m.reinterpret(_y(m)),
    lambda m: m.element_extract(_seq(m), element_map=[4]),
    lambda m: m.element_extract(_seq(m), element_map=[-1]),
    lambda m: m.element_extract(m.tensor(np.arange(6).reshape(3, 2), layout="HW"),
                                element_map=[0]),
    lambda m: m.element_extract(m.tensor(np.arange(3), layout="F"), element_map=[0]),
    lambda m: m.element_extract(_seqb(m), element_map=[2]),
    lambda m: m.get_property(_y(m), key="foo"),
]


@pytest.mark.parametrize("k", range(len(_MISC_BAD)))
def test_reinterpret_element_extract_get_property_errors_match_dali(dyn, k):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            out = _MISC_BAD[k](mod)
            for o in (out if isinstance(out, tuple) else (out,)):
                _np(o)


# ---------------------------------------------------------------- reductions
_RED_RNG = np.random.default_rng(11)
_RED_DATA = {
    "f32": (_RED_RNG.normal(3, 5, (13, 17, 3)) * 10).astype(np.float32),
    "u8": _RED_RNG.integers(0, 256, (13, 17, 3), dtype=np.uint8),
    "i16": _RED_RNG.integers(-3000, 3000, (13, 17, 3)).astype(np.int16),
    "i32": _RED_RNG.integers(-10 ** 6, 10 ** 6, (13, 17, 3)).astype(np.int32),
}
_RED_CALLS = [
    lambda m, R, x: R.sum(x), lambda m, R, x: R.sum(x, axes=0),
    lambda m, R, x: R.sum(x, axes=[0, 1]), lambda m, R, x: R.sum(x, axis_names="HW"),
    lambda m, R, x: R.sum(x, axes=-1, keep_dims=True), lambda m, R, x: R.sum(x, axes=[]),
    lambda m, R, x: R.sum(x, keep_dims=True), lambda m, R, x: R.sum(x, dtype=m.float32),
    lambda m, R, x: R.mean(x), lambda m, R, x: R.mean(x, axis_names="HW"),
    lambda m, R, x: R.mean(x, axes=[1], keep_dims=True),
    lambda m, R, x: R.mean_square(x, axes=[0, 2]), lambda m, R, x: R.rms(x, axes=[0, 1]),
    lambda m, R, x: R.min(x), lambda m, R, x: R.min(x, axes=[0, 1]),
    lambda m, R, x: R.max(x, axis_names="W", keep_dims=True),
    lambda m, R, x: R.variance(x, R.mean(x)),
    lambda m, R, x: R.variance(x, R.mean(x, axes=[0, 1]), axes=[0, 1], ddof=1),
    lambda m, R, x: R.std_dev(x, R.mean(x, axes=[0, 1], keep_dims=True), axes=[0, 1]),
    lambda m, R, x: R.std_dev(x, R.mean(x, axes=2), axes=2, keep_dims=True),
    lambda m, R, x: R.std_dev(x, 2.5),
]


def _close(ours, ref, exact):
    a, b = _np(ours), _np(ref)
    assert len(a) == len(b) and (ours.layout or None) == (ref.layout or None)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        if exact:
            np.testing.assert_array_equal(x, y)
        else:       # DALI accumulates float32; ndd float64, rounded once
            np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-6 * float(np.abs(y).max() + 1))


@pytest.mark.parametrize("kind", sorted(_RED_DATA))
@pytest.mark.parametrize("k", range(len(_RED_CALLS)))
def test_reductions_match_dali(dyn, kind, k):
    data = _RED_DATA[kind]
    samples = [data, np.ascontiguousarray(data[2:9, 3:])]

    def run(m):
        return _RED_CALLS[k](m, m.reductions, m.batch(samples, layout="HWC"))
    ours, ref = run(ndd), run(dyn)
    exact = ref.dtype != dyn.float32 or k in (13, 14, 15)     # integers; min / max
    _close(ours, ref, exact)


_RED_BAD = [
    lambda m, R, x: R.sum(x, axes=[3]), lambda m, R, x: R.sum(x, axes=[0, 0]),
    lambda m, R, x: R.sum(x, axis_names="C", axes=[0]), lambda m, R, x: R.sum(x, axis_names="X"),
    lambda m, R, x: R.sum(x, dtype=m.float64), lambda m, R, x: R.sum(x, dtype=m.int16),
    lambda m, R, x: R.mean(m.batch([np.zeros(2, np.float64)])),
]


@pytest.mark.parametrize("k", range(len(_RED_BAD)))
def test_reduction_errors_match_dali(dyn, k):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError, IndexError)):
            _np(_RED_BAD[k](mod, mod.reductions, mod.batch([_RED_DATA["u8"]], layout="HWC")))


# ---------------------------------------------------------------- normalize
def _nx(m):
    return m.tensor(np.array([[1, 2, 3], [4, 6, 8]], np.float32), layout="HW")


def _nxb(m):
    return m.batch([np.array([[1, 2, 3], [4, 6, 8]], np.float32),
                    np.array([[0, 10, 20]], np.float32)], layout="HW")


_NIMG = [np.random.default_rng(k).integers(0, 256, (12 + k, 9, 3), dtype=np.uint8)
         for k in range(3)]


def _nimg(m):
    return m.batch(_NIMG, layout="HWC")


_NORM = [
    lambda m: m.normalize(_nx(m)), lambda m: m.normalize(_nx(m), axes=[0]),
    lambda m: m.normalize(_nx(m), axis_names="W"), lambda m: m.normalize(_nx(m), mean=2.0),
    lambda m: m.normalize(_nx(m), stddev=2.0), lambda m: m.normalize(_nx(m), mean=2, stddev=4),
    lambda m: m.normalize(_nx(m), scale=2.0, shift=10.0),
    lambda m: m.normalize(_nx(m), epsilon=1.0),
    lambda m: m.normalize(_nx(m), stddev=2.0, epsilon=5.0), lambda m: m.normalize(_nx(m), ddof=1),
    lambda m: m.normalize(_nx(m), dtype=m.uint8, scale=64, shift=128),
    lambda m: m.normalize(_nx(m), dtype=m.int16, scale=1.5),
    lambda m: m.normalize(m.tensor(np.array([0, 100, 255], np.uint8))),
    lambda m: m.normalize(m.tensor(np.array([0, 100, 255], np.int32))),
    lambda m: m.normalize(_nxb(m), batch=True), lambda m: m.normalize(_nxb(m), batch=True,
                                                                      axes=[0]),
    lambda m: m.normalize(_nxb(m)),
    lambda m: m.normalize(_nx(m), mean=m.tensor(np.array([[1], [2]], np.float32))),
    lambda m: m.normalize(_nx(m), mean=m.tensor(np.array([[1, 2, 3]], np.float32))),
    lambda m: m.normalize(_nx(m), mean=m.tensor(np.array([[1], [2]], np.float32)), axes=[1]),
    lambda m: m.normalize(_nxb(m), mean=m.batch([np.array([[1], [2]], np.float32),
                                                 np.array([[5]], np.float32)])),
    lambda m: m.normalize(m.tensor(np.ones((2, 2), np.float32))),
    lambda m: m.normalize(_nx(m), stddev=m.tensor(np.array([[1, 2, 4]], np.float32))),
    lambda m: m.normalize(_nx(m), stddev=0.0),
    lambda m: m.normalize(_nimg(m), axis_names="HW"),
    lambda m: m.normalize(_nimg(m), axis_names="HW", batch=True),
    lambda m: m.normalize(_nimg(m), axes=[0, 1], batch=True, dtype=m.uint8, scale=50,
                          shift=128, epsilon=0.5),
    lambda m: m.normalize(_nimg(m), axis_names="HWC", ddof=2, dtype=m.int8, scale=30),
    lambda m: m.normalize(_nimg(m), mean=128.0, stddev=64.0, dtype=m.int16, scale=100),
]


@pytest.mark.parametrize("k", range(len(_NORM)))
def test_normalize_matches_dali(dyn, k):
    ours, ref = _NORM[k](ndd), _NORM[k](dyn)
    a, b = _np(ours), _np(ref)
    assert len(a) == len(b) and (ours.layout or None) == (ref.layout or None)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        if x.dtype.kind == "f":
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
        else:       # integers: the rounding of a value within float32 error of a half may differ
            assert np.abs(x.astype(int) - y.astype(int)).max() <= 1
            assert np.mean(x != y) < 0.01


_NORM_BAD = [
    lambda m: m.normalize(m.tensor(np.array([0, 100, 255], np.float16))),
    lambda m: m.normalize(m.tensor(np.array([0, 100, 255], np.float64))),
    lambda m: m.normalize(_nx(m), dtype=m.float16),
    lambda m: m.normalize(m.batch([np.ones((2, 3), np.float32)]),
                          mean=m.batch([np.array([[1, 2]], np.float32)])),
    lambda m: m.normalize(_nxb(m), batch=True, mean=m.tensor(np.array([[1, 2, 3]], np.float32))),
    lambda m: m.normalize(_nx(m), axes=[0], axis_names="H"),
    lambda m: m.normalize(_nx(m), axes=[2]), lambda m: m.normalize(_nx(m), axes=[-1]),
    lambda m: m.normalize(_nxb(m), batch=True, axes=[1]),
]


@pytest.mark.parametrize("k", range(len(_NORM_BAD)))
def test_normalize_errors_match_dali(dyn, k):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            _np(_NORM_BAD[k](mod))


# ---------------------------------------------------------------- transforms
def _m1(m):
    return m.transforms.translation(offset=[1, 2])


_TRANSFORMS = [
    lambda m: m.transforms.translation(offset=[1.5, -2]),
    lambda m: m.transforms.translation(offset=[1.5, -2], batch_size=2),
    lambda m: m.transforms.translation(offset=[1, 2, 3]),
    lambda m: m.transforms.translation(offset=1.0),
    lambda m: m.transforms.scale(scale=[2, 3]),
    lambda m: m.transforms.scale(scale=[2, 3], center=[1, 1]),
    lambda m: m.transforms.scale(scale=2.0, ndim=3),
    lambda m: m.transforms.scale(scale=0.7, center=[1.3, 2.1, 0.4], ndim=3),
    lambda m: m.transforms.rotation(angle=30.0),
    lambda m: m.transforms.rotation(angle=30.0, center=[10, 20]),
    lambda m: m.transforms.rotation(angle=-123.4, center=[0.3, 7.7]),
    lambda m: m.transforms.rotation(angle=30.0, axis=[0, 0, 1]),
    lambda m: m.transforms.rotation(angle=90.0),
    lambda m: m.transforms.shear(shear=[0.5, 0.25]),
    lambda m: m.transforms.shear(angles=[30, 10]),
    lambda m: m.transforms.shear(angles=[-12.5, 44, 3, 7, 80, -60]),
    lambda m: m.transforms.shear(shear=[0.5, 0.25], center=[2, 3]),
    lambda m: m.transforms.shear(shear=[1, 2, 3, 4, 5, 6]),
    lambda m: m.transforms.crop(from_start=[10, 20], from_end=[110, 220], to_start=[0, 0],
                                to_end=[1, 1]),
    lambda m: m.transforms.crop(),
    lambda m: m.transforms.crop(from_start=[110, 20], from_end=[10, 220], absolute=True),
    lambda m: m.transforms.crop(from_start=5.0, from_end=[10, 20]),
    lambda m: m.transforms.combine(_m1(m), m.transforms.scale(scale=[2, 3])),
    lambda m: m.transforms.combine(_m1(m), m.transforms.scale(scale=[2, 3]), reverse_order=True),
    lambda m: m.transforms.combine(_m1(m), m.transforms.scale(scale=[2, 3]),
                                   m.transforms.rotation(angle=10.0)),
    lambda m: m.transforms.scale(_m1(m), scale=[2, 3]),
    lambda m: m.transforms.scale(_m1(m), scale=[2, 3], reverse_order=True),
    lambda m: m.transforms.scale(_m1(m), scale=2.0),
    lambda m: m.transforms.rotation(m.transforms.shear(shear=[0.3, 0.1]), angle=33.0,
                                    center=[4, 5]),
    lambda m: m.transforms.translation(np.array([[1, 0, 0], [0, 1, 0]], np.float32),
                                       offset=[1, 2]),
    lambda m: m.transforms.translation(m.batch([np.eye(2, 3, dtype=np.float32)] * 2),
                                       offset=[1, 2]),
    lambda m: m.transforms.translation(offset=m.batch([np.array([1, 2], np.float32),
                                                       np.array([3, 4], np.float32)])),
    lambda m: m.transforms.rotation(angle=m.batch([np.float32(10), np.float32(20)])),
]


@pytest.mark.parametrize("k", range(len(_TRANSFORMS)))
def test_transforms_match_dali(dyn, k):
    _same(_TRANSFORMS[k](ndd), _TRANSFORMS[k](dyn))


def test_rotation_3d_close_to_dali(dyn):
    """3-D rotations: float32 Rodrigues; DALI's diagonal may differ in the last bit."""
    def make(m):
        return m.transforms.rotation(angle=17.0, axis=[1, 2, 3], center=[1, 1, 1])
    a, b = _np(make(ndd))[0], _np(make(dyn))[0]
    assert a.dtype == b.dtype and a.shape == b.shape == (3, 4)
    np.testing.assert_allclose(a, b, rtol=0, atol=5e-7)


_TRANSFORMS_BAD = [
    lambda m: m.transforms.shear(shear=[1, 2], angles=[1, 2]), lambda m: m.transforms.shear(),
    lambda m: m.transforms.scale(_m1(m), scale=[2, 3, 4]),
    lambda m: m.transforms.scale(scale=0.7, center=[1.3, 2.1, 0.4]),
    lambda m: m.transforms.translation(m.tensor(np.eye(2, 3)), offset=[1, 2]),
    lambda m: m.transforms.translation(m.tensor(np.eye(3, dtype=np.float32)), offset=[1, 2]),
]


@pytest.mark.parametrize("k", range(len(_TRANSFORMS_BAD)))
def test_transform_errors_match_dali(dyn, k):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            _np(_TRANSFORMS_BAD[k](mod))


# ---------------------------------------------------------------- coord_transform
_PTS = (np.random.default_rng(0).normal(0, 100, (200, 3))).astype(np.float32)
_CM = np.random.default_rng(1).normal(0, 2, (2, 3)).astype(np.float32)
_CT = np.random.default_rng(2).normal(0, 50, 2).astype(np.float32)


def _p2(m):
    return m.tensor(np.array([[1, 2], [3, 4]], np.float32))


_COORD = [
    lambda m: m.coord_transform(m.tensor(_PTS, layout="NX"), M=m.tensor(_CM), T=m.tensor(_CT)),
    lambda m: m.coord_transform(m.tensor(_PTS), MT=m.tensor(np.hstack([_CM, _CT[:, None]]))),
    lambda m: m.coord_transform(m.batch([_PTS, _PTS[:7] * 3]), M=m.batch([_CM, _CM * 2])),
    lambda m: m.coord_transform(_p2(m), M=2.0), lambda m: m.coord_transform(_p2(m), T=[1, 2]),
    lambda m: m.coord_transform(_p2(m), T=5.0),
    lambda m: m.coord_transform(_p2(m), MT=[1, 0, 10, 0, 1, 20]),
    lambda m: m.coord_transform(_p2(m), MT=3.0), lambda m: m.coord_transform(_p2(m), M=[1, 1]),
    lambda m: m.coord_transform(m.tensor(np.array([[1, 2]], np.int32)), M=[0.5, 0, 0, 0.5]),
    lambda m: m.coord_transform(m.tensor(np.array([[7, -3]], np.int32)), M=[0.5, 0, 0, 0.5],
                                dtype=m.int32),
    lambda m: m.coord_transform(m.tensor(np.ones((2, 2, 2), np.float32), layout="ABC"),
                                M=[1, 0, 0, 2]),
    lambda m: m.coord_transform(_p2(m)),
]


@pytest.mark.parametrize("k", range(len(_COORD)))
def test_coord_transform_matches_dali(dyn, k):
    _same(_COORD[k](ndd), _COORD[k](dyn))


_COORD_BAD = [
    lambda m: m.coord_transform(_p2(m), M=[1, 1, 1]),
    lambda m: m.coord_transform(_p2(m), MT=[1, 0, 10, 0, 1, 20], M=[1, 0, 0, 1]),
    lambda m: m.coord_transform(_p2(m), M=[100.3, 0, 0, 1], dtype=m.uint8),
    lambda m: m.coord_transform(m.tensor(np.array([1, 2], np.float32)), M=[1, 0, 0, 1]),
    lambda m: m.coord_transform(m.tensor(np.ones((2, 2), np.float16)), M=2.0),
]


@pytest.mark.parametrize("k", range(len(_COORD_BAD)))
def test_coord_transform_errors_match_dali(dyn, k):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            _np(_COORD_BAD[k](mod))


# ---------------------------------------------------------------- sequence_rearrange,
# permute_batch, lookup_table
def _lx(m):
    return m.tensor(np.array([1, 4, 1, 0, 100, 2, 3, 4, 5, 6, -1], np.int32), layout="X")


def _seq2(m):
    return m.tensor(np.arange(12, dtype=np.int16).reshape(4, 3), layout="FX")


def _pbatch(m):
    return m.batch([np.array([1]), np.array([2, 2]), np.array([3, 3, 3])], layout="X")


_REORDER = [
    lambda m: m.lookup_table(_lx(m), keys=[0, 2, 3, 4, 5, 3],
                             values=[0.2, 0.4, 0.5, 0.6, 0.7, 0.10], default_value=0.99),
    lambda m: m.lookup_table(_lx(m), keys=[0, 2], values=[2.7, -1.5], default_value=300,
                             dtype=m.uint8),
    lambda m: m.lookup_table(_lx(m), keys=[0, 2], values=[2.7, -1.5], default_value=-7.9,
                             dtype=m.int32),
    lambda m: m.lookup_table(m.tensor(np.array([0, 1, 2, 255], np.uint8)), keys=[255, 1],
                             values=[5, 6]),
    lambda m: m.lookup_table(_lx(m)),
    lambda m: m.lookup_table(_lx(m), keys=[0], values=[1], dtype=m.float16),
    lambda m: m.lookup_table(_lx(m), keys=[0], values=[0.1], dtype=m.float64),
    lambda m: m.lookup_table(m.tensor(np.array([0, 1], np.int64)), keys=[1], values=[2]),
    lambda m: m.sequence_rearrange(_seq2(m), new_order=[3, 0, 0]),
    lambda m: m.sequence_rearrange(m.batch([np.arange(6).reshape(3, 2), np.arange(4).reshape(
        2, 2)]), new_order=m.batch([np.array([2, 1], np.int32), np.array([1], np.int32)])),
    lambda m: m.permute_batch(_pbatch(m), indices=[2, 0, 0]),
    lambda m: m.permute_batch(_pbatch(m), indices=m.batch([np.int32(1), np.int32(1),
                                                           np.int32(0)])),
]


@pytest.mark.parametrize("k", range(len(_REORDER)))
def test_reorder_ops_match_dali(dyn, k):
    _same(_REORDER[k](ndd), _REORDER[k](dyn))


_REORDER_BAD = [
    lambda m: m.lookup_table(m.tensor(np.array([0.0], np.float32)), keys=[0], values=[1]),
    lambda m: m.lookup_table(_lx(m), keys=[0, 1], values=[1]),
    lambda m: m.lookup_table(_lx(m), keys=[70000], values=[1]),
    lambda m: m.lookup_table(_lx(m), keys=[-1], values=[1]),
    lambda m: m.sequence_rearrange(_seq2(m), new_order=[4]),
    lambda m: m.sequence_rearrange(_seq2(m), new_order=[-1]),
    lambda m: m.sequence_rearrange(_seq2(m), new_order=[]),
    lambda m: m.sequence_rearrange(m.tensor(np.zeros((2, 2)), layout="HW"), new_order=[0]),
    lambda m: m.sequence_rearrange(m.tensor(np.arange(3)), new_order=[2, 1]),
    lambda m: m.permute_batch(_pbatch(m), indices=[3, 0, 0]),
    lambda m: m.permute_batch(_pbatch(m), indices=[0, 1]),
]


@pytest.mark.parametrize("k", range(len(_REORDER_BAD)))
def test_reorder_errors_match_dali(dyn, k):
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            _np(_REORDER_BAD[k](mod))
