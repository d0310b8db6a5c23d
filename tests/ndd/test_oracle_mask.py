"""ndd vs NVIDIA DALI 2.4 dynamic mode for the masking ops (``erase``, ...): values, dtype,
shape and layout must match exactly; error cases must fail in both."""
import inspect

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


def _img(dtype=np.uint8, shape=(11, 13, 3)):
    x = (np.arange(np.prod(shape)) * 7 % 253 + 1).reshape(shape)
    return x.astype(dtype)


_ERASE = [
    dict(anchor=[1, 2], shape=[2, 3]),
    dict(anchor=[1, 2, 4, 5, 8.5, -2.5], shape=[2, 3, 1, 1, 9.7, 4.4]),
    dict(anchor=[1, 2], shape=[2, 3], axis_names="WH"),
    dict(anchor=[1, 2], shape=[2, 3], axes=[1, 0]),
    dict(anchor=[1, 2], shape=[2, 3], axes=[0, 1], axis_names="WH"),
    dict(anchor=[1, 1], shape=[2, 1], axes=[2, 0]),
    dict(anchor=[3], shape=[4], axis_names="W"),
    dict(anchor=[0.1, 0.2], shape=[0.3, 0.5], normalized=True),
    dict(anchor=[0.15, 0.7], shape=[2, 3], normalized_anchor=True),
    dict(anchor=[2, 3], shape=[0.45, 0.3], normalized_shape=True),
    dict(anchor=[5.5, 6.5], shape=[3, 4], centered_anchor=True),
    dict(anchor=[0.5, 0.5], shape=[0.25, 0.5], normalized=True, centered_anchor=True),
    dict(anchor=[1.9999, 2.0001], shape=[1.0002, 3.7]),
    dict(anchor=[-1.5, 11], shape=[3, 5]),
    dict(anchor=[1, 2], shape=[-2, 3]),
    dict(anchor=[1, 2], shape=[4, 3], fill_value=[7, 9, 200]),
    dict(anchor=[1, 2], shape=[4, 3], fill_value=[42]),
    dict(anchor=[1, 2, 0], shape=[4, 3, 2], axis_names="HWC", fill_value=[7, 9, 200]),
    dict(),
]


@pytest.mark.parametrize("kw", _ERASE, ids=[str(i) for i in range(len(_ERASE))])
def test_erase_matches_dali(dyn, kw):
    x = _img()
    _same(ndd.erase(ndd.as_tensor(x, layout="HWC"), **kw),
          dyn.erase(dyn.as_tensor(x, layout="HWC"), **kw))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32])
def test_erase_dtypes_and_chw(dyn, dtype):
    x = _img(dtype, (3, 9, 10))
    kw = dict(anchor=[1, 2, 5, 5], shape=[3, 4, 9, 2], fill_value=[1, 2, 3])
    _same(ndd.erase(ndd.as_tensor(x, layout="CHW"), **kw),
          dyn.erase(dyn.as_tensor(x, layout="CHW"), **kw))


def test_erase_per_sample_matches_dali(dyn):
    imgs = [_img(), _img(shape=(6, 5, 3)), _img(shape=(9, 16, 3))]
    anchors = [np.array([1, 2], np.float32), np.array([0, 0, 2, 2], np.float32),
               np.array([0.2, 0.1, 0.6, 0.6, 0.9, 0.9], np.float32)]
    shapes = [np.array([2, 3], np.float32), np.array([1, 1, 5, 5], np.float32),
              np.array([0.3, 0.3, 0.1, 0.2, 0.5, 0.5], np.float32)]

    def call(mod):
        return mod.erase(mod.as_batch(imgs, layout="HWC"), anchor=mod.as_batch(anchors),
                         shape=mod.as_batch(shapes), normalized=False,
                         fill_value=[5, 6, 7])
    _same(call(ndd), call(dyn))

    def call_norm(mod):
        return mod.erase(mod.as_batch(imgs[2:], layout="HWC"), anchor=mod.as_batch(anchors[2:]),
                         shape=mod.as_batch(shapes[2:]), normalized=True)
    _same(call_norm(ndd), call_norm(dyn))


@pytest.mark.parametrize("kw", [dict(anchor=[1, 2], shape=[2, 3, 4]),
                                dict(anchor=[1, 2]),
                                dict(anchor=[1, 2, 3], shape=[2, 3, 1]),
                                dict(anchor=[1, 2], shape=[2, 3], fill_value=[7, 9])],
                         ids=["len", "no_shape", "multiple", "fill_channels"])
def test_erase_errors_in_both(dyn, kw):
    x = _img()
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            np.asarray(mod.erase(mod.as_tensor(x, layout="HWC"), **kw).cpu())


@pytest.mark.parametrize("dtype", [np.float64, np.bool_])
def test_erase_unsupported_types_in_both(dyn, dtype):
    x = _img().astype(dtype)
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            np.asarray(mod.erase(mod.as_tensor(x, layout="HWC"), anchor=[1, 2],
                                 shape=[2, 3]).cpu())


def _paste_cases():
    rng = np.random.default_rng(5)
    cases = [dict(ratio=2.0, fill_value=[1, 2, 3]), dict(ratio=1.0, fill_value=[7]),
             dict(ratio=1.0, fill_value=[1, 2, 3], min_canvas_size=17.5),
             dict(ratio=1.3, fill_value=[0, 128, 255], paste_x=0.0, paste_y=1.0),
             dict(ratio=2.5, fill_value=[9], paste_x=1.0, paste_y=0.0, min_canvas_size=40.0)]
    for _ in range(12):
        cases.append(dict(ratio=float(rng.uniform(1, 3)), fill_value=[3, 4, 5],
                          paste_x=float(rng.random()), paste_y=float(rng.random())))
    return cases


@pytest.mark.parametrize("kw", _paste_cases())
def test_paste_matches_dali(dyn, kw):
    x = _img()
    _same(ndd.paste(ndd.as_tensor(x, layout="HWC"), **kw),
          dyn.paste(dyn.as_tensor(x, layout="HWC"), **kw))


def test_paste_per_sample_matches_dali(dyn):
    imgs = [_img(), _img(shape=(6, 5, 3)), _img(shape=(9, 16, 3))]
    ratios = [np.float32(1.5), np.float32(2.37), np.float32(3.1)]
    px = [np.float32(0.0), np.float32(0.61), np.float32(1.0)]
    py = [np.float32(0.33), np.float32(1.0), np.float32(0.0)]

    def call(mod):
        return mod.paste(mod.as_batch(imgs, layout="HWC"), ratio=mod.as_batch(ratios),
                         paste_x=mod.as_batch(px), paste_y=mod.as_batch(py),
                         fill_value=[10, 20, 30])
    _same(call(ndd), call(dyn))


@pytest.mark.parametrize("kw", [dict(ratio=0.5, fill_value=[0]),
                                dict(ratio=2.0, fill_value=[1, 2]),
                                dict(ratio=2.0, fill_value=[0], paste_x=1.5)],
                         ids=["ratio", "fill", "paste_x"])
def test_paste_errors_in_both(dyn, kw):
    x = _img()
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            np.asarray(mod.paste(mod.as_tensor(x, layout="HWC"), **kw).cpu())


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_paste_non_uint8_fails_in_both(dyn, dtype):
    x = _img(dtype)
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            np.asarray(mod.paste(mod.as_tensor(x, layout="HWC"), ratio=2.0,
                                 fill_value=[0]).cpu())


def _grid_cases():
    rng = np.random.default_rng(9)
    cases = [dict(), dict(tile=8), dict(tile=8, ratio=0.25), dict(tile=6, shift_x=3.0),
             dict(tile=7, shift_y=2.5), dict(tile=10, angle=0.3), dict(tile=5, ratio=1.5),
             dict(tile=9, angle=np.pi / 4, ratio=0.6)]
    for _ in range(20):
        cases.append(dict(tile=int(rng.integers(3, 30)), ratio=float(rng.uniform(0.05, 0.95)),
                          angle=float(rng.uniform(-4, 4)), shift_x=float(rng.uniform(-20, 20)),
                          shift_y=float(rng.uniform(-20, 20))))
    return cases


@pytest.mark.parametrize("kw", _grid_cases())
def test_grid_mask_matches_dali(dyn, kw):
    x = _img(shape=(57, 73, 3))
    _same(ndd.grid_mask(ndd.as_tensor(x, layout="HWC"), **kw),
          dyn.grid_mask(dyn.as_tensor(x, layout="HWC"), **kw))


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.float32])
def test_grid_mask_dtypes_match_dali(dyn, dtype):
    x = _img(dtype, (20, 31, 1))
    kw = dict(tile=6, ratio=0.4, angle=-0.7, shift_x=1.5)
    _same(ndd.grid_mask(ndd.as_tensor(x, layout="HWC"), **kw),
          dyn.grid_mask(dyn.as_tensor(x, layout="HWC"), **kw))


def test_grid_mask_per_sample_matches_dali(dyn):
    imgs = [_img(), _img(shape=(26, 15, 3)), _img(shape=(19, 36, 3))]
    tiles = [np.int32(4), np.int32(7), np.int32(11)]
    angles = [np.float32(0.0), np.float32(1.1), np.float32(-2.3)]

    def call(mod):
        return mod.grid_mask(mod.as_batch(imgs, layout="HWC"), tile=mod.as_batch(tiles),
                             angle=mod.as_batch(angles), ratio=0.35)
    _same(call(ndd), call(dyn))


@pytest.mark.parametrize("kw", [dict(tile=0), dict(tile=-2)])
def test_grid_mask_errors_in_both(dyn, kw):
    x = _img()
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            np.asarray(mod.grid_mask(mod.as_tensor(x, layout="HWC"), **kw).cpu())


def _water_cases():
    rng = np.random.default_rng(13)
    cases = [dict(), dict(ampl_x=0.0, ampl_y=0.0), dict(fill_value=9.0, ampl_x=-12.0)]
    for _ in range(10):
        cases.append(dict(ampl_x=float(rng.uniform(-9, 9)), ampl_y=float(rng.uniform(-9, 9)),
                          freq_x=float(rng.uniform(0, 0.6)), freq_y=float(rng.uniform(0, 0.6)),
                          phase_x=float(rng.uniform(-3, 3)), phase_y=float(rng.uniform(-3, 3)),
                          fill_value=float(rng.integers(0, 256))))
    return cases


@pytest.mark.parametrize("interp", ["nn", "linear"])
@pytest.mark.parametrize("kw", _water_cases())
def test_water_matches_dali(dyn, kw, interp):
    dtypes = pytest.importorskip("nvidia.dali.types")
    x = _img(shape=(41, 53, 3))
    ours = ndd.water(ndd.as_tensor(x, layout="HWC"), interp_type=getattr(
        ndd.types, f"INTERP_{interp.upper()}"), **kw)
    ref = dyn.water(dyn.as_tensor(x, layout="HWC"), interp_type=getattr(
        dtypes, f"INTERP_{interp.upper()}"), **kw)
    _same(ours, ref)


@pytest.mark.parametrize("dtype", [np.float32])
def test_water_dtypes_match_dali(dyn, dtype):
    x = _img(dtype, (20, 31, 3))
    kw = dict(ampl_x=4.5, ampl_y=-3.0, freq_x=0.3, freq_y=0.2, phase_x=1.0)
    _same(ndd.water(ndd.as_tensor(x, layout="HWC"), **kw),
          dyn.water(dyn.as_tensor(x, layout="HWC"), **kw))


def test_water_per_sample_mask_matches_dali(dyn):
    imgs = [_img(), _img(shape=(26, 15, 3))]
    masks = [np.int32(0), np.int32(1)]

    def call(mod):
        return mod.water(mod.as_batch(imgs, layout="HWC"), mask=mod.as_batch(masks), ampl_x=3.0)
    _same(call(ndd), call(dyn))


@pytest.mark.parametrize("op", ["water", "grid_mask"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float16, np.float64])
def test_water_grid_mask_unsupported_types_in_both(dyn, op, dtype):
    x = _img(dtype, (8, 9, 3))
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            np.asarray(getattr(mod, op)(mod.as_tensor(x, layout="HWC")).cpu())


def test_water_int16_fails_in_both(dyn):
    x = _img(np.int16, (8, 9, 3))
    for mod in (ndd, dyn):
        with pytest.raises((ValueError, RuntimeError)):
            np.asarray(mod.water(mod.as_tensor(x, layout="HWC")).cpu())


@pytest.mark.parametrize("op", ["erase", "paste", "grid_mask", "jitter", "water"])
def test_signatures_match_dali(dyn, op):
    ours = inspect.signature(getattr(ndd, op)).parameters
    ref = inspect.signature(getattr(dyn, op)).parameters
    assert list(ours) == list(ref)
    assert [p.kind for p in ours.values()] == [p.kind for p in ref.values()]
