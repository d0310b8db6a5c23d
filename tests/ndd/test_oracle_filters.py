"""ndd's filters against NVIDIA DALI 2.4's CPU operators (``laplacian``, ``filter``,
``gaussian_blur``), the front end of the filter ops (DALI's names and signatures, including the
GPU-only ``experimental.median_blur`` / ``dilate`` / ``erode``), and eager == deferred.

Exactness (docs/semantics.md, "Filters"): ``laplacian`` and ``gaussian_blur`` are bit-exact;
``filter`` is bit-exact on OpenCV's direct path, and within float32 rounding where OpenCV
switches to a DFT (large filters).
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import ndd

_RNG = np.random.default_rng(1604)
_TYPES = {"uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "int16": np.int16,
          "uint32": np.uint32, "int32": np.int32, "uint64": np.uint64, "int64": np.int64,
          "float16": np.float16, "float32": np.float32}


@pytest.fixture(scope="module")
def dyn():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    return dalidyn


def _image(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.random(shape) * 4 - 1).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -30000), min(info.max, 60000)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)


def _out(x):
    if hasattr(x, "tensors"):
        return [np.asarray(t.cpu()) if hasattr(t, "cpu") else np.asarray(t) for t in x.tensors]
    return [np.asarray(x.cpu()) if hasattr(x, "cpu") else np.asarray(x)]


def _args(mod, kw):
    out = {}
    for k, v in kw.items():
        if k == "dtype" and isinstance(v, str):
            v = getattr(mod, v)
        elif isinstance(v, tuple) and v and v[0] == "per_sample":
            v = mod.batch([np.asarray(s) for s in v[1]])
        out[k] = v
    return out


def _run(mod, op, samples, layout, kw, extra=()):
    data = mod.batch(samples, layout=layout or None)
    ins = [data] + [mod.batch(e) if isinstance(e, list) else mod.tensor(e) for e in extra]
    fn = mod
    for part in op.split("."):
        fn = getattr(fn, part)
    return _out(fn(*ins, **_args(mod, kw)).evaluate())


def _compare(dyn, op, samples, layout, kw, extra=(), rtol=0.0):
    ours = _run(ndd, op, samples, layout, kw, extra)
    ref = _run(dyn, op, samples, layout, kw, extra)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert a.dtype == b.dtype and a.shape == b.shape
        if rtol:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                                       atol=rtol * max(1.0, float(np.abs(b).max())))
        else:
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- front end
_DALI_SIGNATURES = {
    "laplacian": ["input", "batch_size", "device", "dtype", "normalized_kernel", "scale",
                  "smoothing_size", "window_size"],
    "filter": ["data", "filter", "fill_value", "batch_size", "device", "anchor", "border",
               "dtype", "mode"],
    "experimental.median_blur": ["input", "batch_size", "device", "window_size"],
    "experimental.dilate": ["input", "batch_size", "device", "anchor", "border_mode",
                            "iterations", "mask_size"],
    "experimental.erode": ["input", "batch_size", "device", "anchor", "border_mode",
                           "iterations", "mask_size"],
}


def _fn(mod, name):
    for part in name.split("."):
        mod = getattr(mod, part)
    return mod


@pytest.mark.parametrize("name", sorted(_DALI_SIGNATURES))
def test_filter_functions_exist_with_dalis_signature(name):
    fn = _fn(ndd, name)
    assert inspect.isfunction(fn)
    params = list(inspect.signature(fn).parameters.values())
    assert [p.name for p in params] == _DALI_SIGNATURES[name]
    n_pos = 3 if name == "filter" else 1
    assert all(p.kind == p.POSITIONAL_ONLY for p in params[:n_pos])
    assert all(p.kind == p.KEYWORD_ONLY for p in params[n_pos:])
    assert name.rpartition(".")[2] in _fn(ndd, name.rpartition(".")[0] or "experimental"
                                          ).__all__ or name in ndd.__all__


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(_DALI_SIGNATURES))
def test_signatures_are_dalis(dyn, name):
    ours = [p.name for p in inspect.signature(_fn(ndd, name)).parameters.values()]
    theirs = [p.name for p in inspect.signature(_fn(dyn, name)).parameters.values()]
    assert ours == theirs


# ---------------------------------------------------------------- laplacian
_LAP_CASES = [
    ("HWC", (31, 45, 3), {}),
    ("HWC", (17, 23, 3), {"window_size": 5}),
    ("HWC", (17, 23, 3), {"window_size": 7, "smoothing_size": 3}),
    ("HW", (19, 29), {"window_size": [3, 9], "smoothing_size": [1, 5]}),
    ("HW", (19, 29), {"smoothing_size": 1}),
    ("HW", (19, 29), {"normalized_kernel": True, "window_size": 11}),
    ("HWC", (13, 20, 3), {"scale": [0.25, 3.0]}),
    ("HWC", (13, 20, 3), {"scale": 0.5, "dtype": "float32"}),
    ("CHW", (3, 14, 18), {"window_size": 5}),
    ("DHW", (6, 9, 11), {}),
    ("DHW", (6, 9, 11), {"window_size": [3, 5, 7], "smoothing_size": [1, 3, 5]}),
    ("DHWC", (5, 7, 8, 2), {"normalized_kernel": True}),
    ("FHWC", (2, 9, 12, 3), {}),
    ("FCHW", (2, 3, 9, 12), {"window_size": 5}),
    ("", (15, 21), {}),
    ("W", (40,), {"window_size": 7}),
    ("HW", (1, 30), {}),
    ("HW", (3, 2), {"window_size": 9}),
    ("HW", (40, 37), {"window_size": 23}),
    ("HW", (40, 37), {"window_size": 31, "normalized_kernel": True}),
    ("HW", (40, 37), {"smoothing_size": 29, "dtype": "float32"}),
]


@pytest.mark.oracle
@pytest.mark.parametrize("layout,shape,kw", _LAP_CASES,
                         ids=[f"{c[0] or 'none'}-{c[1]}-{c[2]}" for c in _LAP_CASES])
def test_laplacian_matches_dali(dyn, layout, shape, kw):
    for dtype in ("uint8", "float32"):
        x = [_image(shape, dtype, s) for s in range(2)]
        _compare(dyn, "laplacian", x, layout, kw)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", sorted(_TYPES))
def test_laplacian_every_type_matches_dali(dyn, dtype):
    x = [_image((11, 14, 3), dtype, s) for s in range(2)]
    _compare(dyn, "laplacian", x, "HWC", {"window_size": 5})
    _compare(dyn, "laplacian", x, "HWC", {"dtype": "float32"})


@pytest.mark.oracle
def test_laplacian_per_sample_arguments_match_dali(dyn):
    x = [_image((15 + 3 * s, 19 - s, 3), "uint8", s) for s in range(3)]
    _compare(dyn, "laplacian", x, "HWC",
             {"window_size": ("per_sample", [np.int32(3), np.int32(5), np.int32(7)])})
    _compare(dyn, "laplacian", x, "HWC",
             {"scale": ("per_sample", [np.float32(0.5), np.float32(1.5), np.float32(2.0)])})
    _compare(dyn, "laplacian", x, "HWC",
             {"window_size": ("per_sample", [np.array([3, 5], np.int32),
                                             np.array([7, 3], np.int32),
                                             np.array([5, 5], np.int32)]),
              "smoothing_size": ("per_sample", [np.array([1, 3], np.int32),
                                                np.array([5, 1], np.int32),
                                                np.array([3, 3], np.int32)])})


_LAP_ERRORS = [
    ({"window_size": 2}, "uint8"), ({"window_size": 1}, "uint8"), ({"window_size": 33}, "uint8"),
    ({"smoothing_size": 0}, "uint8"), ({"scale": [1.0, 2.0, 3.0]}, "uint8"),
    ({"window_size": [3, 5, 7]}, "uint8"), ({"normalized_kernel": True, "scale": 2.0}, "uint8"),
    ({"dtype": "int16"}, "uint8"), ({}, "float64"), ({}, "bool"),
]


@pytest.mark.oracle
@pytest.mark.parametrize("kw,dtype", _LAP_ERRORS, ids=[str(e) for e in _LAP_ERRORS])
def test_laplacian_errors_as_dali(dyn, kw, dtype):
    x = [np.ones((6, 7), dtype)]
    with pytest.raises(RuntimeError):
        _run(dyn, "laplacian", x, "HW", kw)
    with pytest.raises(RuntimeError):
        _run(ndd, "laplacian", x, "HW", kw)


@pytest.mark.oracle
def test_laplacian_layout_error_as_dali(dyn):
    x = [np.ones((5, 3, 6), np.uint8)]
    with pytest.raises(RuntimeError):
        _run(dyn, "laplacian", x, "HCW", {})
    with pytest.raises(RuntimeError, match="channel-first or channel-last"):
        _run(ndd, "laplacian", x, "HCW", {})


# ---------------------------------------------------------------- filter
_BORDERS = ["reflect_101", "reflect_1001", "wrap", "clamp", "constant"]


def _kernel(shape, seed=0):
    return np.random.default_rng(100 + seed).standard_normal(shape).astype(np.float32) / 3


@pytest.mark.oracle
@pytest.mark.parametrize("border", _BORDERS)
@pytest.mark.parametrize("kshape", [(3, 3), (1, 4), (5, 2), (7, 7)])
def test_filter_borders_match_dali(dyn, border, kshape):
    for dtype in ("uint8", "float32"):
        x = [_image((23, 31, 3), dtype, 1), _image((9, 40, 3), dtype, 2)]
        _compare(dyn, "filter", x, "HWC", {"border": border}, extra=[_kernel(kshape)])


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint16", "float32"])
@pytest.mark.parametrize("out", [None, "float32"])
def test_filter_types_match_dali(dyn, dtype, out):
    x = [_image((21, 26, 3), dtype, 3), _image((17, 11), dtype, 4)[..., None]]
    kw = {"dtype": out} if out else {}
    _compare(dyn, "filter", x, "HWC", kw, extra=[_kernel((3, 5))])


@pytest.mark.oracle
@pytest.mark.parametrize("layout,shape", [("HW", (19, 24)), ("CHW", (2, 15, 17)),
                                          ("FHWC", (3, 10, 13, 3)), ("FCHW", (2, 3, 9, 11)),
                                          ("FHW", (2, 12, 8)), ("HWC", (30, 20, 5))])
def test_filter_layouts_match_dali(dyn, layout, shape):
    _compare(dyn, "filter", [_image(shape, "uint8", 5)], layout, {}, extra=[_kernel((3, 3))])


@pytest.mark.oracle
def test_filter_anchor_mode_fill_and_per_sample_filters_match_dali(dyn):
    x = [_image((20, 25, 3), "uint8", s) for s in range(3)]
    ks = [_kernel((3, 3), 1), _kernel((5, 1), 2), _kernel((2, 6), 3)]
    _compare(dyn, "filter", x, "HWC", {}, extra=[ks])
    _compare(dyn, "filter", x, "HWC", {"mode": "valid"}, extra=[ks])
    _compare(dyn, "filter", x, "HWC", {"anchor": [0, 0]}, extra=[_kernel((4, 4))])
    _compare(dyn, "filter", x, "HWC", {"anchor": ("per_sample", [np.array([0, 2], np.int32),
                                                                 np.array([2, 1], np.int32),
                                                                 np.array([-1, 3], np.int32)])},
             extra=[_kernel((3, 4))])
    fills = [np.uint8(7), np.uint8(200), np.uint8(0)]
    _compare(dyn, "filter", x, "HWC", {"border": "constant"}, extra=[_kernel((5, 5)), fills])
    _compare(dyn, "filter", x, "HWC", {"border": "constant", "anchor": [4, 0]},
             extra=[_kernel((5, 5)), fills])


@pytest.mark.oracle
def test_filter_half_to_even_rounding_and_saturation_match_dali(dyn):
    x = [np.arange(60, dtype=np.uint8).reshape(6, 10) * 4]
    _compare(dyn, "filter", x, "HW", {}, extra=[np.array([[0.5]], np.float32)])
    _compare(dyn, "filter", x, "HW", {}, extra=[np.array([[0.125, 0, 4.0]], np.float32)])
    i16 = [np.arange(-30000, 30000, 1000, dtype=np.int16).reshape(-1, 4)]
    _compare(dyn, "filter", i16, "HW", {}, extra=[np.array([[1.5, -1.0]], np.float32)])


@pytest.mark.oracle
def test_filter_large_filters_within_float32_rounding(dyn):
    """OpenCV's DFT path (uint8 -> float32 from 50 taps, uint8 -> uint8 from 130): ndd keeps
    the direct sum."""
    x = [_image((40, 45, 3), "uint8", 6)]
    _compare(dyn, "filter", x, "HWC", {"dtype": "float32"}, extra=[_kernel((9, 9))], rtol=1e-4)
    _compare(dyn, "filter", x, "HWC", {}, extra=[_kernel((13, 13)) / 10], rtol=1e-2)


_FILTER_ERRORS = [
    ("int8", (6, 7, 3), "HWC", (3, 3), {}), ("float16", (6, 7, 3), "HWC", (3, 3), {}),
    ("int32", (6, 7, 3), "HWC", (3, 3), {}), ("uint8", (6, 7, 3), "HWC", (3, 3),
                                              {"border": "mirror"}),
    ("uint8", (6, 7, 3), "HWC", (3, 3), {"mode": "full"}),
    ("uint8", (6, 7, 3), "HWC", (3, 3), {"anchor": [3, 0]}),
    ("uint8", (6, 7, 3), "HWC", (3, 3), {"anchor": [-2, 0]}),
    ("uint8", (6, 7, 3), "", (3, 3), {}), ("uint8", (4, 6, 7), "DHW", (3, 3, 3), {}),
    ("uint8", (6, 7, 3), "HWC", (3,), {}), ("uint8", (6, 7, 3), "HWC", (9, 3),
                                            {"mode": "valid"}),
    ("uint8", (6, 3, 7), "HCW", (3, 3), {}), ("uint8", (6, 7, 3), "HWC", (3, 3),
                                              {"dtype": "int16"}),
]


@pytest.mark.oracle
@pytest.mark.parametrize("dtype,shape,layout,kshape,kw", _FILTER_ERRORS,
                         ids=[f"{e[0]}-{e[2] or 'none'}-{e[3]}-{e[4]}" for e in _FILTER_ERRORS])
def test_filter_errors_as_dali(dyn, dtype, shape, layout, kshape, kw):
    x = [np.ones(shape, dtype)]
    k = np.ones(kshape, np.float32)
    with pytest.raises(RuntimeError):
        _run(dyn, "filter", x, layout, kw, extra=[k])
    with pytest.raises(RuntimeError):
        _run(ndd, "filter", x, layout, kw, extra=[k])


@pytest.mark.oracle
def test_filter_kernel_type_error_as_dali(dyn):
    x = [np.ones((6, 7), np.uint8)]
    with pytest.raises(RuntimeError):
        _run(dyn, "filter", x, "HW", {}, extra=[np.ones((3, 3))])
    with pytest.raises(RuntimeError, match="Unsupported filter type: double"):
        _run(ndd, "filter", x, "HW", {}, extra=[np.ones((3, 3))])


# ---------------------------------------------------------------- gaussian_blur (speed rework)
@pytest.mark.oracle
@pytest.mark.parametrize("layout,shape,kw", [
    ("HWC", (33, 47, 3), {"sigma": 2.0}), ("HWC", (33, 47, 3), {"window_size": 7}),
    ("HW", (20, 9), {"sigma": [0.8, 3.0]}), ("CHW", (3, 16, 21), {"sigma": 1.3}),
    ("DHWC", (5, 8, 9, 2), {"window_size": 3}), ("FHWC", (2, 11, 13, 3), {"sigma": 1.0}),
])
def test_gaussian_blur_still_matches_dali(dyn, layout, shape, kw):
    for dtype in ("uint8", "int16", "float32"):
        _compare(dyn, "gaussian_blur", [_image(shape, dtype, 8)], layout, kw)
    _compare(dyn, "gaussian_blur", [_image(shape, "uint8", 9)], layout,
             dict(kw, dtype="float32"))


# ---------------------------------------------------------------- eager == deferred
@pytest.mark.parametrize("op,kw,extra", [
    ("laplacian", {"window_size": 5}, ()),
    ("filter", {"border": "wrap"}, (np.ones((3, 3), np.float32) / 9,)),
    ("experimental.median_blur", {}, ()),
    ("experimental.dilate", {"mask_size": [5, 3]}, ()),
    ("experimental.erode", {"iterations": 2}, ()),
])
def test_eager_equals_deferred(op, kw, extra):
    x = [_image((12, 15, 3), "uint8", s) for s in range(2)]
    with ndd.EvalMode.eager:
        eager = _run(ndd, op, x, "HWC", kw, extra)
    with ndd.EvalMode.deferred:
        deferred = _run(ndd, op, x, "HWC", kw, extra)
    for a, b in zip(eager, deferred):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- per-frame arguments
@pytest.mark.oracle
@pytest.mark.parametrize("layout", ["FHWC", "FCHW", "FHW"])
def test_per_frame_filters_and_fill_values_match_dali(dyn, layout):
    shape = {"FHWC": (3, 10, 12, 3), "FCHW": (3, 2, 10, 12), "FHW": (3, 10, 12)}[layout]
    x = _image(shape, "uint8", 11)
    k = np.stack([_kernel((3, 3), s) for s in range(3)])
    fills = np.array([5, 120, 250], np.uint8)
    outs = []
    for mod in (ndd, dyn):
        data = mod.tensor(x, layout=layout)
        a = mod.filter(data, mod.per_frame(mod.tensor(k))).evaluate()
        b = mod.filter(data, mod.tensor(k[1]), mod.per_frame(mod.tensor(fills)),
                       border="constant").evaluate()
        outs.append([np.asarray(a.cpu() if hasattr(a, "cpu") else a),
                     np.asarray(b.cpu() if hasattr(b, "cpu") else b)])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [
    {"window_size": np.array([3, 5, 7], np.int32)},
    {"scale": np.array([0.5, 1.0, 2.0], np.float32)},
    {"window_size": np.array([[3, 5], [7, 3], [5, 9]], np.int32)},
    {"smoothing_size": np.array([1, 3, 5], np.int32), "window_size": 5},
], ids=["window", "scale", "window-per-axis", "smoothing"])
def test_laplacian_per_frame_arguments_match_dali(dyn, kw):
    x = _image((3, 11, 13, 3), "uint8", 12)
    outs = []
    for mod in (ndd, dyn):
        args = {k: mod.per_frame(mod.tensor(v)) if isinstance(v, np.ndarray) else v
                for k, v in kw.items()}
        r = mod.laplacian(mod.tensor(x, layout="FHWC"), **args).evaluate()
        outs.append(np.asarray(r.cpu() if hasattr(r, "cpu") else r))
    np.testing.assert_array_equal(outs[0], outs[1])
