"""API-level tests of the constant, geometry and noise ops (``ndd.ones`` ... ``ndd.full_like``,
``ndd.rotate``, ``ndd.warp_affine``, ``ndd.sphere``, ``ndd.noise.*``): results against
independent numpy computations, and every evaluation mode giving the same values."""
import numpy as np
import pytest

import ndd


def _arrays(x):
    if isinstance(x, ndd.Batch):
        return [np.asarray(t) for t in x.tensors[:]]
    return [np.asarray(x)]


def _in_modes(fn):
    """``fn()``'s arrays in eager, deferred and sync_cpu mode (each call's values)."""
    out = {}
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu):
        with mode:
            out[mode] = _arrays(fn())
    return out


def _assert_modes_equal(fn):
    res = list(_in_modes(fn).values())
    for other in res[1:]:
        assert len(other) == len(res[0])
        for a, b in zip(res[0], other):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    return res[0]


# ---------------------------------------------------------------- constants
def test_ones_zeros_defaults():
    t = ndd.ones(shape=(2, 5, 5), dtype=ndd.float32)
    assert isinstance(t, ndd.Tensor) and t.dtype == ndd.float32 and t.shape == (2, 5, 5)
    np.testing.assert_array_equal(np.asarray(t), np.ones((2, 5, 5), np.float32))
    z = ndd.zeros()
    assert z.dtype == ndd.int32 and z.shape == () and np.asarray(z) == 0
    b = ndd.zeros(batch_size=2, shape=(4, 4, 3), layout="HWC")
    assert isinstance(b, ndd.Batch) and b.layout == "HWC" and len(b) == 2
    for a in _arrays(b):
        assert a.dtype == np.int32 and a.shape == (4, 4, 3) and not a.any()


def test_ones_layout_must_match_shape():
    with pytest.raises(ValueError, match="layout 'HW'"):
        ndd.ones(shape=3, layout="HW")


def test_full_broadcasts_like_numpy():
    fill = np.array([[1.5], [2.5]], np.float32)
    got = _assert_modes_equal(lambda: ndd.full(fill, shape=(3, 2, 4)))[0]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.tile(fill, (3, 1, 4)))
    with pytest.raises(ValueError, match="can't be broadcast"):
        np.asarray(ndd.full(np.zeros(3), shape=(2, 2)))


def test_like_ops_take_shape_type_layout():
    src = ndd.batch([np.zeros((2, 3), np.uint8), np.zeros((1, 4), np.uint8)], layout="HW")
    for fn, value in ((ndd.ones_like, 1), (ndd.zeros_like, 0)):
        out = _assert_modes_equal(lambda: fn(src))
        assert [a.shape for a in out] == [(2, 3), (1, 4)]
        assert all(a.dtype == np.uint8 and (a == value).all() for a in out)
        assert fn(src).layout == "HW"
        assert fn(src, dtype=ndd.float64).dtype == ndd.float64
    out = _assert_modes_equal(lambda: ndd.full_like(src, np.array([7.5], np.float32)))
    assert all(a.dtype == np.uint8 and (a == 8).all() for a in out)


def test_constant_per_sample_shape():
    shapes = ndd.batch([np.array([1, 2]), np.array([3, 1])])
    out = _assert_modes_equal(lambda: ndd.ones(shape=shapes, dtype=ndd.int16))
    assert [a.shape for a in out] == [(1, 2), (3, 1)] and all(a.dtype == np.int16 for a in out)


# ---------------------------------------------------------------- warp_affine, rotate
_IMG = np.random.default_rng(5).integers(0, 256, size=(16, 20, 3), dtype=np.uint8)
_M = np.array([[0.9, 0.1, 1.5], [-0.1, 0.9, -2.0]], np.float32)


def test_warp_affine_positional_matrix_equals_argument():
    img = ndd.tensor(_IMG, layout="HWC")
    a = ndd.warp_affine(img, ndd.tensor(_M))
    assert a.device.device_type == "cpu" and a.layout == "HWC" and a.dtype == ndd.uint8
    np.testing.assert_array_equal(np.asarray(a), np.asarray(ndd.warp_affine(img, matrix=_M)))
    np.testing.assert_array_equal(np.asarray(a),
                                  np.asarray(ndd.warp_affine(img, matrix=_M.reshape(-1).tolist())))


def test_warp_affine_translation_and_modes():
    m = np.array([[1, 0, 3], [0, 1, -2]], np.float32)     # out[y, x] = in[y - 2, x + 3]
    imgs = ndd.batch([_IMG, _IMG[::-1].copy()], layout="HWC")
    out = _assert_modes_equal(lambda: ndd.warp_affine(imgs, matrix=m, fill_value=0))
    for got, src in zip(out, (_IMG, _IMG[::-1])):
        want = np.zeros_like(src)
        want[2:, :-3] = src[:-2, 3:]
        np.testing.assert_array_equal(got, want)


def test_rotate_quarter_turn_and_modes():
    imgs = ndd.batch([_IMG, _IMG[:, :10].copy()], layout="HWC")
    out = _assert_modes_equal(lambda: ndd.rotate(imgs, angle=90))
    np.testing.assert_array_equal(out[0], np.rot90(_IMG))
    np.testing.assert_array_equal(out[1], np.rot90(_IMG[:, :10]))
    angles = ndd.batch([np.float32(30), np.float32(-45)])
    out = _assert_modes_equal(lambda: ndd.rotate(imgs, angle=angles, fill_value=0))
    assert out[0].shape[2] == 3 and out[0].shape != out[1].shape


def test_rotate_sequences_rotate_every_frame():
    seq = np.stack([_IMG, 255 - _IMG])
    out = ndd.rotate(ndd.tensor(seq, layout="FHWC"), angle=60)
    assert out.layout == "FHWC"
    frames = np.asarray(out)
    for k in range(2):
        one = np.asarray(ndd.rotate(ndd.tensor(seq[k], layout="HWC"), angle=60))
        np.testing.assert_array_equal(frames[k], one)


def test_rotate_errors():
    with pytest.raises(TypeError, match="angle"):
        ndd.rotate(ndd.tensor(_IMG, layout="HWC"))
    with pytest.raises(ValueError, match="HWC"):
        ndd.rotate(ndd.tensor(_IMG, layout="CHW"), angle=3)


# ---------------------------------------------------------------- sphere
def test_sphere_modes_and_scalar_mask():
    imgs = ndd.batch([_IMG, _IMG[:, :13].copy()], layout="HWC")
    out = _assert_modes_equal(lambda: ndd.sphere(imgs))
    assert [a.shape for a in out] == [(16, 20, 3), (16, 13, 3)]
    assert (out[0][0, 0] == 0).all()               # a corner maps outside: fill_value 0
    # mask=0 leaves the samples unchanged (DALI 2.4 ignores a scalar 0: docs/semantics.md)
    same = _arrays(ndd.sphere(imgs, mask=0))
    np.testing.assert_array_equal(same[0], _IMG)
    with pytest.raises(ValueError, match="HWC"):
        ndd.sphere(ndd.tensor(_IMG[..., 0].copy(), layout="HW"))


# ---------------------------------------------------------------- noise
_NOISE = [
    (lambda x, rng: ndd.noise.gaussian(x, stddev=3.0, rng=rng)),
    (lambda x, rng: ndd.noise.salt_and_pepper(x, prob=0.2, rng=rng)),
    (lambda x, rng: ndd.noise.shot(x, factor=4.0, rng=rng)),
]


@pytest.mark.parametrize("k", range(len(_NOISE)))
def test_noise_same_values_in_every_mode_from_the_same_seed(k):
    imgs = ndd.batch([_IMG, _IMG[:5].copy()], layout="HWC")
    out = _assert_modes_equal(lambda: _NOISE[k](imgs, ndd.random.RNG(seed=42)))
    assert [a.shape for a in out] == [(16, 20, 3), (5, 20, 3)]
    assert all(a.dtype == np.uint8 for a in out)
    other = _arrays(_NOISE[k](imgs, ndd.random.RNG(seed=43)))
    assert not np.array_equal(other[0], out[0])
    assert _NOISE[k](imgs, ndd.random.RNG(seed=1)).layout == "HWC"


def test_noise_draws_from_the_default_generator():
    x = ndd.tensor(np.zeros((50, 50), np.float32))
    ndd.random.set_seed(5)
    a = np.asarray(ndd.noise.gaussian(x))
    ndd.random.set_seed(5)
    b = np.asarray(ndd.noise.gaussian(x))
    np.testing.assert_array_equal(a, b)
    assert abs(a.std() - 1.0) < 0.05
    assert not np.array_equal(a, np.asarray(ndd.noise.gaussian(x)))


def test_noise_per_sample_arguments():
    x = ndd.batch([np.zeros((100, 100), np.float32)] * 2)
    out = _arrays(ndd.noise.gaussian(x, stddev=ndd.batch([np.float32(0.0), np.float32(2.0)]),
                                     mean=ndd.batch([np.float32(1.0), np.float32(0.0)])))
    assert (out[0] == 1.0).all() and abs(out[1].std() - 2.0) < 0.1


# ---------------------------------------------------------------- expand_dims, stack
def test_expand_dims_and_stack_modes():
    a = ndd.batch([np.arange(6).reshape(2, 3), np.arange(4).reshape(2, 2)], layout="HW")
    out = _assert_modes_equal(lambda: ndd.expand_dims(a, axes=[0], new_axis_names="F"))
    assert [x.shape for x in out] == [(1, 2, 3), (1, 2, 2)]
    assert ndd.expand_dims(a, axes=[0], new_axis_names="F").layout == "FHW"
    out = _assert_modes_equal(lambda: ndd.stack(a, a + 1, a + 2, axis=2, axis_name="C"))
    np.testing.assert_array_equal(out[0][..., 2], np.arange(6).reshape(2, 3) + 2)
    assert ndd.stack(a, a, axis=2, axis_name="C").layout == "HWC"
    one = ndd.stack(ndd.tensor(np.zeros((2, 3))))
    assert isinstance(one, ndd.Tensor) and one.shape == (1, 2, 3)
    with pytest.raises(ValueError, match="same type"):
        ndd.stack(ndd.tensor(np.zeros(2, np.int8)), ndd.tensor(np.zeros(2)))
    with pytest.raises(ValueError, match="new_axis_names"):
        ndd.expand_dims(a, axes=[0, 1], new_axis_names="F")


def test_bb_flip_modes():
    boxes = ndd.batch([np.array([[0.1, 0.2, 0.3, 0.4]], np.float32),
                       np.array([[0.5, 0.5, 0.25, 0.25], [0, 0, 1, 1]], np.float32)])
    out = _assert_modes_equal(lambda: ndd.bb_flip(boxes))
    np.testing.assert_allclose(out[0], [[0.6, 0.2, 0.3, 0.4]], atol=1e-6)
    assert ndd.bb_flip(ndd.zeros(shape=(1, 4), dtype=ndd.float32)).dtype == ndd.float32


def test_brightness_contrast_modes_and_layouts():
    seq = ndd.batch([np.stack([_IMG, _IMG]), np.stack([_IMG])], layout="FHWC")
    out = _assert_modes_equal(lambda: ndd.brightness_contrast(seq, brightness=1.5,
                                                              contrast=0.5))
    assert out[0].dtype == np.uint8 and out[1].shape == (1, 16, 20, 3)
    t = ndd.zeros(shape=(4, 4, 3), dtype=ndd.uint8, layout="HWC")
    r = ndd.brightness_contrast(t, brightness=1.2, dtype=ndd.float32)
    assert r.dtype == ndd.float32 and r.layout == "HWC"
    with pytest.raises(ValueError, match="HWC"):
        ndd.brightness_contrast(ndd.tensor(_IMG[..., 0].copy(), layout="HW"))


def test_hsv_modes_and_default_type():
    imgs = ndd.batch([_IMG, _IMG[:4].copy()], layout="HWC")
    out = _assert_modes_equal(lambda: ndd.hsv(imgs, hue=ndd.batch([np.float32(10),
                                                                   np.float32(-90)])))
    assert out[0].dtype == np.uint8 and out[1].shape == (4, 20, 3)
    f = ndd.tensor(np.full((2, 2, 3), 0.5, np.float32), layout="HWC")
    assert ndd.hsv(f, hue=10.0).dtype == ndd.uint8      # DALI's default type
    assert ndd.hsv(f, hue=10.0, dtype=ndd.float32).dtype == ndd.float32


def test_per_frame_marks_the_layout_only():
    m = np.zeros((3, 2, 3), np.float32)
    t = ndd.per_frame(ndd.tensor(m))
    assert t.layout == "F**"
    np.testing.assert_array_equal(np.asarray(t), m)
    with pytest.raises(ValueError, match="should start with 'F'"):
        ndd.per_frame(ndd.tensor(m, layout="ABC"))
    seq = np.stack([_IMG, _IMG])
    mats = np.stack([np.eye(2, 3), [[1, 0, 1], [0, 1, 0]]]).astype(np.float32)
    out = _assert_modes_equal(lambda: ndd.warp_affine(ndd.tensor(seq, layout="FHWC"),
                                                      matrix=ndd.per_frame(ndd.tensor(mats))))[0]
    np.testing.assert_array_equal(out[0], _IMG)
    np.testing.assert_array_equal(out[1][:, :-1], _IMG[:, 1:])


def test_slice_modes_and_errors():
    a = ndd.batch([np.arange(6).reshape(2, 3), np.arange(8).reshape(2, 4)])
    out = _assert_modes_equal(lambda: ndd.slice(a + a, end=[1], axes=[0]))
    np.testing.assert_array_equal(out[0], [[0, 2, 4]])
    np.testing.assert_array_equal(out[1], [[0, 2, 4, 6]])
    anchors = ndd.batch([np.array([1], np.int32), np.array([2], np.int32)])
    shapes = ndd.batch([np.array([2], np.int32), np.array([1], np.int32)])
    out = _arrays(ndd.slice(a, anchors, shapes, axes=[1]))
    np.testing.assert_array_equal(out[0], [[1, 2], [4, 5]])
    np.testing.assert_array_equal(out[1], [[2], [6]])
    with pytest.raises(ValueError, match="out of the bounds"):
        np.asarray(ndd.slice(ndd.tensor(np.zeros((2, 2))), start=[-1], axes=[0]))


def test_gaussian_blur_modes():
    imgs = ndd.batch([_IMG, _IMG[:7].copy()], layout="HWC")
    out = _assert_modes_equal(lambda: ndd.gaussian_blur(imgs, sigma=ndd.batch(
        [np.float32(1.0), np.float32(2.5)])))
    assert out[0].dtype == np.uint8 and out[1].shape == (7, 20, 3)
    flat = np.full((8, 8, 3), 40, np.uint8)
    np.testing.assert_array_equal(np.asarray(ndd.gaussian_blur(ndd.tensor(flat, layout="HWC"),
                                                               sigma=2.0)), flat)


def test_random_bbox_crop_modes_and_outputs():
    boxes = ndd.batch([np.array([[0.1, 0.1, 0.5, 0.5], [0.6, 0.6, 0.9, 0.95]], np.float32),
                       np.array([[0.2, 0.2, 0.4, 0.9]], np.float32)])
    res = {}
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.random_bbox_crop(boxes, scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0],
                                       thresholds=[0.0, 0.1], output_bbox_indices=True,
                                       rng=ndd.random.RNG(seed=9))
            res[mode] = [[np.asarray(t) for t in o.tensors] for o in out]
    assert len(res[ndd.EvalMode.eager]) == 4
    for a, b in zip(*res.values()):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    anchor, shape, out = ndd.random_bbox_crop(ndd.zeros(shape=(1, 4), dtype=ndd.float32))
    assert anchor.dtype == shape.dtype == out.dtype == ndd.float32 and out.ndim == 2
