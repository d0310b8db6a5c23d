"""ndd vs NVIDIA DALI 2.4 dynamic mode for the constant, geometry and noise ops added for API
parity (``ones`` ... ``full_like``, ``rotate``, ``warp_affine``, ``sphere``, ``noise.*``).

Deterministic ops must match exactly (values, dtype, shape, layout) unless a test says why not;
random ops are compared on what is deterministic (shape, dtype, layout, the identity cases).
"""
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
    """Per-sample arrays of a Batch (DALI's or ours), or the array of a Tensor."""
    if hasattr(x, "tensors") and hasattr(x, "batch_size"):
        return [np.asarray(x.tensors[i].cpu()) for i in range(x.batch_size)]
    return np.asarray(x.cpu())


def _same(ours, ref):
    a, b = _np(ours), _np(ref)
    if isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert (ours.layout or None) == (ref.layout or None)


# ---------------------------------------------------------------- constants
_CONST_CASES = [
    ("ones", {}), ("zeros", {}), ("ones", {"shape": 3}), ("zeros", {"shape": (2, 0)}),
    ("ones", {"shape": (2, 3), "dtype": "float32", "layout": "HW"}),
    ("zeros", {"shape": (4, 4, 3), "dtype": "uint8", "layout": "HWC"}),
    ("ones", {"shape": (2,), "dtype": "bool"}), ("zeros", {"shape": (2, 2), "dtype": "float16"}),
    ("ones", {"shape": (2,), "batch_size": 3}),
]


@pytest.mark.parametrize("name,kw", _CONST_CASES)
def test_ones_zeros_match_dali(dyn, name, kw):
    def call(mod):
        k = dict(kw)
        if "dtype" in k:
            k["dtype"] = getattr(mod, k["dtype"])
        return getattr(mod, name)(**k)
    _same(call(ndd), call(dyn))


_FILLS = [np.float32(2.5), np.int8(-3), np.array([1.5, -2.5, 300.0], np.float32),
          np.array([[1], [2]], np.int16), np.array([0.5, -0.5, 1.5], np.float64)]


@pytest.mark.parametrize("k", range(len(_FILLS)))
def test_full_and_full_like_match_dali(dyn, k):
    fill = _FILLS[k]
    _same(ndd.full(fill, shape=(2, 3)), dyn.full(fill, shape=(2, 3)))
    for dt in (np.uint8, np.int16, np.float32):
        like = np.zeros((2, 3), dt)
        _same(ndd.full_like(ndd.tensor(like, layout="HW"), fill),
              dyn.full_like(dyn.tensor(like, layout="HW"), fill))


def test_like_ops_match_dali(dyn):
    samples = [np.zeros((2, 3), np.int8), np.zeros((1, 4), np.int8)]
    for name in ("ones_like", "zeros_like"):
        for kw in ({}, {"dtype": "float32"}):
            k = {key: (getattr(ndd, v), getattr(dyn, v)) for key, v in kw.items()}
            ours = getattr(ndd, name)(ndd.batch(samples, layout="HW"),
                                      **{key: v[0] for key, v in k.items()})
            ref = getattr(dyn, name)(dyn.batch(samples, layout="HW"),
                                     **{key: v[1] for key, v in k.items()})
            _same(ours, ref)


def test_full_per_sample_fill_and_shape_match_dali(dyn):
    fills = [np.int8(1), np.int8(-2)]
    shapes = [np.array([1, 2]), np.array([2, 2])]
    _same(ndd.full(ndd.batch(fills), shape=ndd.batch(shapes)),
          dyn.full(dyn.batch(fills), shape=dyn.batch(shapes)))


# ---------------------------------------------------------------- warp_affine, rotate
_RNG = np.random.default_rng(2024)
_U8 = _RNG.integers(0, 256, size=(31, 40, 3), dtype=np.uint8)
_F32 = (_RNG.random((16, 21, 2)) * 255).astype(np.float32)


def _interp(mod, kw):
    k = dict(kw)
    if k.get("interp_type") in ("nn", "linear") and mod is not ndd:
        import nvidia.dali.types as T
        k["interp_type"] = {"nn": T.INTERP_NN, "linear": T.INTERP_LINEAR}[k["interp_type"]]
    return k


_ROT_KW = [{}, {"fill_value": 0.0}, {"interp_type": "nn"}, {"keep_size": True},
           {"size": (20, 25)}, {"fill_value": 7.0, "interp_type": "nn"}, {"dtype": "float32"}]


@pytest.mark.parametrize("angle", [0.0, 30.0, -70.0, 45.0, 90.0, 123.0, 200.0, 315.0, 17.3])
@pytest.mark.parametrize("kw", range(len(_ROT_KW)))
@pytest.mark.parametrize("img", ["u8", "f32"])
def test_rotate_matches_dali_exactly(dyn, angle, kw, img):
    """Canvas size, rotation matrix (float32), sampling and rounding: bit-exact."""
    arr = _U8 if img == "u8" else _F32
    k = _ROT_KW[kw]

    def call(mod):
        kk = _interp(mod, k)
        if "dtype" in kk:
            kk["dtype"] = getattr(mod, kk["dtype"])
        return mod.rotate(mod.tensor(arr, layout="HWC"), angle=angle, **kk)
    _same(call(ndd), call(dyn))


@pytest.mark.parametrize("hw", [(7, 9), (8, 8), (10, 13), (5, 20), (39, 14)])
def test_rotate_canvas_size_matches_dali(dyn, hw):
    angles = [0, 1, 10, 30, 45, -45, 135, 225, 315, 405, 60, 89.9, 90, 180, 270, -90, 360,
              179.9874, 0.0409, 33.3]
    for a in angles:
        img = np.zeros((*hw, 1), np.uint8)
        ours = ndd.rotate(ndd.tensor(img, layout="HWC"), angle=a).shape
        ref = dyn.rotate(dyn.tensor(img, layout="HWC"), angle=a).shape
        assert tuple(ours) == tuple(ref), (hw, a)


def test_rotate_sequences_and_per_sample_angles_match_dali(dyn):
    v = _RNG.integers(0, 256, size=(3, 12, 15, 3), dtype=np.uint8)
    angles = [np.float32(60), np.float32(-20)]
    _same(ndd.rotate(ndd.batch([v, v[:2]], layout="FHWC"), angle=ndd.batch(angles)),
          dyn.rotate(dyn.batch([v, v[:2]], layout="FHWC"), angle=dyn.batch(angles)))


_MATS = [np.array([[0.9, 0.1, 1.5], [-0.1, 0.9, -2.0]], np.float32),
         np.array([[1.2, 0.3, -1.0], [0.2, 0.8, 0.7]], np.float32),
         (np.eye(2, 3) + _RNG.normal(0, 0.3, (2, 3))).astype(np.float32)]
_WARP_KW = [{}, {"inverse_map": False}, {"size": (10, 30)}, {"fill_value": 5.0},
            {"fill_value": 5.0, "interp_type": "nn"}, {"interp_type": "nn"}]


@pytest.mark.parametrize("m", range(len(_MATS)))
@pytest.mark.parametrize("kw", range(len(_WARP_KW)))
def test_warp_affine_matches_dali_exactly(dyn, m, kw):
    img = np.ascontiguousarray(_U8[:16, :20])
    for arr in (img, img.astype(np.float32)):
        outs = []
        for mod in (ndd, dyn):
            k = _interp(mod, _WARP_KW[kw])
            outs.append(mod.warp_affine(mod.tensor(arr, layout="HWC"), matrix=_MATS[m], **k))
        _same(*outs)


def test_warp_affine_mtx_input_and_batches_match_dali(dyn):
    img = np.ascontiguousarray(_U8[:16, :20])
    mats = [_MATS[0], _MATS[1]]
    ref = dyn.warp_affine(dyn.batch([img, img], layout="HWC"), dyn.batch(mats))
    _same(ndd.warp_affine(ndd.batch([img, img], layout="HWC"), ndd.batch(mats)), ref)
    _same(ndd.warp_affine(ndd.batch([img, img], layout="HWC"), matrix=ndd.batch(mats)), ref)
    _same(ndd.warp_affine(ndd.tensor(img, layout="HWC"), ndd.tensor(mats[0])),
          dyn.warp_affine(dyn.tensor(img, layout="HWC"), dyn.tensor(mats[0])))


# ---------------------------------------------------------------- sphere
# fill values the image type holds: DALI truncates and wraps others (300 -> 44 for uint8), we
# round and saturate like cast (docs/semantics.md)
_SPHERE_KW = [{}, {"fill_value": 7.0}, {"fill_value": 255.0}, {"interp_type": "linear"},
              {"interp_type": "linear", "fill_value": 3.0}]


@pytest.mark.parametrize("hw", [(9, 12), (12, 9), (15, 8), (11, 13), (61, 91), (100, 37)])
@pytest.mark.parametrize("kw", range(len(_SPHERE_KW)))
def test_sphere_matches_dali_exactly(dyn, hw, kw):
    img = _RNG.integers(0, 256, size=(*hw, 3), dtype=np.uint8)
    for arr in (img, img.astype(np.float32)):
        _same(ndd.sphere(ndd.tensor(arr, layout="HWC"), **_interp(ndd, _SPHERE_KW[kw])),
              dyn.sphere(dyn.tensor(arr, layout="HWC"), **_interp(dyn, _SPHERE_KW[kw])))


def test_sphere_per_sample_mask_matches_dali(dyn):
    img = _RNG.integers(0, 256, size=(20, 30, 3), dtype=np.uint8)
    masks = [np.int32(0), np.int32(1)]
    _same(ndd.sphere(ndd.batch([img, img], layout="HWC"), mask=ndd.batch(masks)),
          dyn.sphere(dyn.batch([img, img], layout="HWC"), mask=dyn.batch(masks)))


# ---------------------------------------------------------------- noise (deterministic parts)
_NOISE_IN = {"u8": np.array([[0, 1, 2, 3, 254, 255]], np.uint8),
             "i16": np.array([[-3, 0, 5, 32767, -32768, 9]], np.int16),
             "f32": np.array([[0.1, 0.2, -7.5, 1e3, 0.0, 2.5]], np.float32)}


@pytest.mark.parametrize("kind", list(_NOISE_IN))
@pytest.mark.parametrize("mean", [0.5, -0.5, 1.5, -2.5, 300.0])
def test_gaussian_without_spread_matches_dali(dyn, kind, mean):
    x = _NOISE_IN[kind]
    _same(ndd.noise.gaussian(ndd.tensor(x), mean=mean, stddev=0.0),
          dyn.noise.gaussian(dyn.tensor(x), mean=mean, stddev=0.0))


@pytest.mark.parametrize("kind", list(_NOISE_IN))
@pytest.mark.parametrize("svp", [0.0, 1.0])
def test_salt_and_pepper_defaults_match_dali(dyn, kind, svp):
    x = np.repeat(_NOISE_IN[kind][..., None], 3, axis=-1)
    for prob in (0.0, 1.0):
        _same(ndd.noise.salt_and_pepper(ndd.tensor(x, layout="HWC"), prob=prob,
                                        salt_vs_pepper=svp),
              dyn.noise.salt_and_pepper(dyn.tensor(x, layout="HWC"), prob=prob,
                                        salt_vs_pepper=svp))


def test_noise_statistics_agree_with_dali(dyn):
    """Different streams, same distributions (means and spreads within sampling error)."""
    x = np.full((300, 300, 3), 100, np.uint8)
    for name, kw, stat in (("gaussian", {"stddev": 5.0}, lambda a: (a.mean(), a.std())),
                           ("shot", {"factor": 20.0}, lambda a: (a.mean(), a.std())),
                           ("salt_and_pepper", {"prob": 0.3},
                            lambda a: ((a == 255).mean(), (a == 0).mean()))):
        ours = stat(np.asarray(getattr(ndd.noise, name)(ndd.tensor(x, layout="HWC"), **kw),
                               dtype=np.float64))
        ref = stat(np.asarray(getattr(dyn.noise, name)(dyn.tensor(x, layout="HWC"), **kw),
                              dtype=np.float64))
        np.testing.assert_allclose(ours, ref, rtol=0.03, atol=0.01)


# ---------------------------------------------------------------- expand_dims, stack
@pytest.mark.parametrize("kw", [dict(axes=[0, 1], new_axis_names="BC"),
                                dict(axes=[0, 2], new_axis_names="BC"),
                                dict(axes=[2, 0], new_axis_names="BC"), dict(axes=[0, 1]),
                                dict(axes=1)])
def test_expand_dims_matches_dali(dyn, kw):
    data = [np.array([1, 2], np.int32), np.array([10, 20, 30], np.int32)]
    _same(ndd.expand_dims(ndd.batch(data, layout="A"), **kw),
          dyn.expand_dims(dyn.batch(data, layout="A"), **kw))


@pytest.mark.parametrize("kw", [dict(axis=0), dict(axis=1, axis_name="C"),
                                dict(axis=-1, axis_name="C"), dict(axis=2), dict(axis=-2)])
def test_stack_matches_dali(dyn, kw):
    a = [np.array([[1], [2]], np.int16), np.array([[10], [20]], np.int16)]
    b = [np.array([[3], [4]], np.int16), np.array([[30], [40]], np.int16)]
    c = [x + 100 for x in b]
    _same(ndd.stack(ndd.batch(a, layout="AB"), ndd.batch(b, layout="AB"),
                    ndd.batch(c, layout="AB"), **kw),
          dyn.stack(dyn.batch(a, layout="AB"), dyn.batch(b, layout="AB"),
                    dyn.batch(c, layout="AB"), **kw))


# ---------------------------------------------------------------- bb_flip
@pytest.mark.parametrize("ltrb", [False, True])
@pytest.mark.parametrize("hv", [(1, 0), (0, 1), (1, 1), (0, 0), (2, -1)])
def test_bb_flip_matches_dali_exactly(dyn, ltrb, hv):
    boxes = (_RNG.random((500, 4)) * 0.5).astype(np.float32)
    kw = dict(ltrb=ltrb, horizontal=hv[0], vertical=hv[1])
    _same(ndd.bb_flip(ndd.tensor(boxes), **kw), dyn.bb_flip(dyn.tensor(boxes), **kw))


def test_bb_flip_per_sample_flags_match_dali(dyn):
    boxes = [(_RNG.random((n, 4)) * 0.5).astype(np.float32) for n in (3, 1)]
    flags = [np.int32(1), np.int32(0)]
    _same(ndd.bb_flip(ndd.batch(boxes), horizontal=ndd.batch(flags), vertical=ndd.batch(flags)),
          dyn.bb_flip(dyn.batch(boxes), horizontal=dyn.batch(flags), vertical=dyn.batch(flags)))


# ---------------------------------------------------------------- brightness_contrast
@pytest.mark.parametrize("src", ["u8", "i16", "f32"])
@pytest.mark.parametrize("dtype", [None, "float32", "uint8", "int16"])
def test_brightness_contrast_matches_dali_exactly(dyn, src, dtype):
    x = {"u8": _U8[:8, :9], "i16": (_U8[:8, :9].astype(np.int16) - 128) * 200,
         "f32": _F32[:8, :9, :1]}[src]
    x = np.ascontiguousarray(x)
    rng = np.random.default_rng(1)
    for _ in range(4):
        kw = dict(brightness=float(rng.uniform(0.5, 1.5)),
                  brightness_shift=float(rng.uniform(-0.1, 0.1)),
                  contrast=float(rng.uniform(0.0, 1.5)))
        if rng.random() < 0.5:
            kw["contrast_center"] = float(rng.uniform(0, 100))
        outs = []
        for mod in (ndd, dyn):
            k = dict(kw)
            if dtype:
                k["dtype"] = getattr(mod, dtype)
            outs.append(mod.brightness_contrast(mod.tensor(x, layout="HWC"), **k))
        _same(*outs)


# ---------------------------------------------------------------- hsv
@pytest.mark.parametrize("p", [(30, 1, 1), (30, 0.5, 1.5), (0, 0.5, 1), (200, 0.8, 0.9),
                               (-75, 1.3, 0.7), (10, 1, 1)])
def test_hsv_matches_dali(dyn, p):
    """uint8 results exact on this image (rarely 1 apart on larger ones); float32 within the
    rounding of the 3 x 3 matrix (DALI's YIQ constants agree with ours to float32 precision
    only, docs/semantics.md)."""
    kw = dict(hue=p[0], saturation=p[1], value=p[2])
    _same(ndd.hsv(ndd.tensor(_U8, layout="HWC"), **kw), dyn.hsv(dyn.tensor(_U8, layout="HWC"), **kw))
    ours = ndd.hsv(ndd.tensor(_U8, layout="HWC"), dtype=ndd.float32, **kw)
    ref = dyn.hsv(dyn.tensor(_U8, layout="HWC"), dtype=dyn.float32, **kw)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref.cpu()), rtol=1e-6, atol=1e-4)
    f = np.ascontiguousarray(_F32[..., :1].repeat(3, axis=-1)) / 255
    _same(ndd.hsv(ndd.tensor(f, layout="HWC"), **kw), dyn.hsv(dyn.tensor(f, layout="HWC"), **kw))


# ---------------------------------------------------------------- per_frame
def test_per_frame_layouts_match_dali(dyn):
    for arr, layout, kw in ((np.zeros((4, 2, 3)), None, {}), (np.zeros((4, 2)), "AB",
                                                              {"replace": True}),
                            (np.zeros((3, 5)), "FX", {})):
        ours = ndd.per_frame(ndd.tensor(arr, layout=layout), **kw)
        ref = dyn.per_frame(dyn.tensor(arr, layout=layout), **kw)
        _same(ours, ref)


def test_warp_affine_per_frame_matrices_match_dali(dyn):
    v = _RNG.integers(0, 256, size=(2, 16, 20, 3), dtype=np.uint8)
    m = np.stack([_MATS[0], _MATS[2]])
    _same(ndd.warp_affine(ndd.batch([v, v[:1]], layout="FHWC"),
                          matrix=ndd.per_frame(ndd.batch([m, m[1:]]))),
          dyn.warp_affine(dyn.batch([v, v[:1]], layout="FHWC"),
                          matrix=dyn.per_frame(dyn.batch([m, m[1:]]))))
    _same(ndd.warp_affine(ndd.tensor(v, layout="FHWC"), ndd.per_frame(ndd.tensor(m))),
          dyn.warp_affine(dyn.tensor(v, layout="FHWC"), dyn.per_frame(dyn.tensor(m))))


# ---------------------------------------------------------------- slice
_SX = np.arange(4 * 5 * 3, dtype=np.int16).reshape(4, 5, 3)
_SLICE_CASES = [
    (dict(end=[1], axes=[0]), "HWC", ()), (dict(start=[1, 2]), "HWC", ()),
    (dict(start=[1, 2]), None, ()), (dict(start=[1, 1], end=[3, 4], axes=[0, 1]), "HWC", ()),
    (dict(start=[1], shape=[2], axes=[1]), "HWC", ()),
    (dict(rel_start=[0.25], rel_end=[0.75], axes=[0]), "HWC", ()),
    (dict(rel_start=[0.3], rel_shape=[0.5], axes=[1]), "HWC", ()),
    (dict(start=[1], end=[3], axis_names="W"), "HWC", ()),
    (dict(start=[1], axes=[-2]), "HWC", ()),
    (dict(rel_start=[0.3], rel_end=[0.9], axes=[1]), "HWC", ()),
    (dict(rel_start=[0.5], rel_shape=[0.3], axes=[1]), "HWC", ()),
    ({}, "HWC", (np.array([0.2, 0.25], np.float32), np.array([0.6, 0.5], np.float32))),
    ({}, "HWC", (np.array([1, 1], np.int32), np.array([2, 2], np.int32))),
    (dict(normalized_anchor=False, normalized_shape=False), "HWC",
     (np.array([1.0, 1.0], np.float32), np.array([2.0, 2.0], np.float32))),
] + [(dict(start=[-2], end=[7], axes=[0], out_of_bounds_policy=p), "HWC", ())
     for p in ("pad", "edge", "reflect", "reflect_101", "wrap", "trim_to_shape")] + [
    (dict(start=[-1], end=[6], axes=[0], out_of_bounds_policy="pad", fill_values=[7, 8, 9]),
     "HWC", ()),
]


@pytest.mark.parametrize("k", range(len(_SLICE_CASES)))
def test_slice_matches_dali(dyn, k):
    kw, layout, inputs = _SLICE_CASES[k]
    _same(ndd.slice(ndd.tensor(_SX, layout=layout), *inputs, **kw),
          dyn.slice(dyn.tensor(_SX, layout=layout), *inputs, **kw))


def test_slice_batches_and_dtype_match_dali(dyn):
    data = [_SX, _SX[:3, :2].copy()]
    _same(ndd.slice(ndd.batch(data, layout="HWC"), rel_start=[0.5], axes=[0]),
          dyn.slice(dyn.batch(data, layout="HWC"), rel_start=[0.5], axes=[0]))
    u8 = _SX.astype(np.uint8)
    _same(ndd.slice(ndd.tensor(u8, layout="HWC"), start=[1], axes=[0], dtype=ndd.float32),
          dyn.slice(dyn.tensor(u8, layout="HWC"), start=[1], axes=[0], dtype=dyn.float32))


# ---------------------------------------------------------------- gaussian_blur
_BLUR_CASES = [("HWC", "f32", dict(sigma=(1.0, 2.0))), ("HWC", "u8", dict(sigma=1.3)),
               ("HWC", "u8", dict(window_size=5)), ("HWC", "u8", dict(sigma=0.8)),
               ("HWC", "u8", dict(window_size=(3, 7), sigma=(2.0, 0.0))),
               ("CHW", "u8", dict(sigma=1.0)), ("FHWC", "u8", dict(sigma=0.6)),
               ("HW", "i16", dict(sigma=0.8, dtype="float32")), ("HW", "f32", dict(sigma=5.1)),
               ("DHWC", "u8", dict(sigma=(1.0, 0.5, 2.0)))]


@pytest.mark.parametrize("k", range(len(_BLUR_CASES)))
def test_gaussian_blur_matches_dali_exactly(dyn, k):
    layout, kind, kw = _BLUR_CASES[k]
    shape = {"HWC": (13, 17, 3), "CHW": (3, 13, 17), "FHWC": (2, 13, 17, 3), "HW": (13, 17),
             "DHWC": (5, 13, 17, 1)}[layout]
    arr = (_RNG.random(shape) * 255).astype({"u8": np.uint8, "i16": np.int16,
                                              "f32": np.float32}[kind])
    outs = []
    for mod in (ndd, dyn):
        kk = dict(kw)
        if "dtype" in kk:
            kk["dtype"] = getattr(mod, kk["dtype"])
        outs.append(mod.gaussian_blur(mod.tensor(arr, layout=layout), **kk))
    _same(*outs)


def test_gaussian_blur_per_frame_sigma_matches_dali(dyn):
    v = (_RNG.random((4, 3, 30, 40)) * 255).astype(np.uint8)
    sig = np.array([[1, 1], [2, 2], [3, 3], [4, 4]], np.float32)
    _same(ndd.gaussian_blur(ndd.batch([v, v], layout="FCHW"),
                            sigma=ndd.per_frame(ndd.batch([sig, sig[::-1].copy()]))),
          dyn.gaussian_blur(dyn.batch([v, v], layout="FCHW"),
                            sigma=dyn.per_frame(dyn.batch([sig, sig[::-1].copy()]))))


# ---------------------------------------------------------------- random_bbox_crop
_BB = np.array([[0.1, 0.1, 0.5, 0.5], [0.6, 0.6, 0.9, 0.95]], np.float32)


def test_random_bbox_crop_deterministic_cases_match_dali(dyn):
    """The default window is the whole image; outputs, types and shapes as DALI's."""
    labels = np.array([3, 7], np.int32)
    for kw in ({}, {"output_bbox_indices": True}):
        ours = ndd.random_bbox_crop(ndd.tensor(_BB), ndd.tensor(labels), **kw)
        ref = dyn.random_bbox_crop(dyn.tensor(_BB), dyn.tensor(labels), **kw)
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            _same(o, r)


def test_random_bbox_crop_fixed_window_has_dalis_form(dyn):
    kw = dict(crop_shape=[100, 80], input_shape=[400, 300])
    ours = ndd.random_bbox_crop(ndd.tensor(_BB), **kw)
    ref = dyn.random_bbox_crop(dyn.tensor(_BB), **kw)
    for o, r in zip(ours, ref):
        assert o.dtype == ndd.float32 and np.asarray(r.cpu()).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(ours[1]), np.asarray(ref[1].cpu()))   # [100, 80]


@pytest.mark.parametrize("interp", ["linear", "nn"])
def test_warp_and_rotate_of_wide_images_match_dali_exactly(dyn, interp):
    """Rows longer than DALI's 256-pixel blocks (block starts accumulate ``M11 * 256``)."""
    img = _RNG.integers(0, 256, size=(40, 700, 3), dtype=np.uint8)
    f32 = img.astype(np.float32)
    m = np.array([[0.93, 0.21, 3.5], [-0.17, 1.08, -2.25]], np.float32)
    for arr in (img, f32):
        outs = [mod.warp_affine(mod.tensor(arr, layout="HWC"), matrix=m, size=(50, 1030),
                                fill_value=3.0, **_interp(mod, {"interp_type": interp}))
                for mod in (ndd, dyn)]
        _same(*outs)
        outs = [mod.rotate(mod.tensor(arr, layout="HWC"), angle=17.0,
                           **_interp(mod, {"interp_type": interp})) for mod in (ndd, dyn)]
        _same(*outs)


def test_rotate_per_frame_angles_match_dali(dyn):
    v = _RNG.integers(0, 256, size=(3, 10, 20, 3), dtype=np.uint8)
    ang = np.array([0, 90, 30], np.float32)
    _same(ndd.rotate(ndd.tensor(v, layout="FHWC"), angle=ndd.per_frame(ndd.tensor(ang))),
          dyn.rotate(dyn.tensor(v, layout="FHWC"), angle=dyn.per_frame(dyn.tensor(ang))))
    _same(ndd.rotate(ndd.batch([v, v[:2]], layout="FHWC"),
                     angle=ndd.per_frame(ndd.batch([ang, ang[1:]])), fill_value=0),
          dyn.rotate(dyn.batch([v, v[:2]], layout="FHWC"),
                     angle=dyn.per_frame(dyn.batch([ang, ang[1:]])), fill_value=0))
