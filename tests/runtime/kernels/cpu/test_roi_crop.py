"""roi_random_crop and random_crop_generator: the windows' contracts (ROI inside the window or
the window inside the ROI, inside the input; area and aspect ranges), reproducibility, eager ==
deferred; DALI 2.4 oracle cases on the contract (its draws differ)."""
import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.roi_crop import random_crop_generator, roi_random_crop


def _check_roi(start, crop, roi_s, roi_e, shape=None):
    start, crop, roi_s, roi_e = (np.asarray(v) for v in (start, crop, roi_s, roi_e))
    end = start + crop
    big = roi_e - roi_s >= crop
    # a ROI at least as large as the window holds it; a smaller ROI lies inside the window,
    # unless the input bound forces the window to slide
    assert ((start >= roi_s) & (end <= roi_e) | ~big).all()
    if shape is None:
        assert ((start <= roi_s) & (end >= roi_e) | big).all()
    else:
        assert (start >= 0).all() and (end <= np.asarray(shape)).all()


@pytest.mark.parametrize("seed", range(25))
def test_roi_random_crop_contract(seed):
    rng = np.random.default_rng(seed)
    crop, roi_s, roi_e, shape = [10, 20], [5, 5], [50, 15], [60, 100]
    s = roi_random_crop(rng, crop_shape=crop, roi_start=roi_s, roi_end=roi_e, in_shape=shape)
    assert s.dtype == np.int64
    _check_roi(s, crop, roi_s, roi_e, shape)
    s = roi_random_crop(rng, crop_shape=crop, roi_start=roi_s, roi_shape=[45, 10])
    _check_roi(s, crop, roi_s, roi_e)
    assert 5 <= s[0] <= 40 and -5 <= s[1] <= 5


def test_roi_random_crop_covers_its_range_and_errors():
    got = {int(roi_random_crop(np.random.default_rng(k), crop_shape=[4], roi_start=[2],
                               roi_end=[3])[0]) for k in range(300)}
    assert got == {-1, 0, 1, 2}         # every start whose window holds [2, 3)
    with pytest.raises(ValueError, match="exactly one"):
        roi_random_crop(np.random.default_rng(0), crop_shape=[4], roi_start=[2])
    with pytest.raises(ValueError, match="same number"):
        roi_random_crop(np.random.default_rng(0), crop_shape=[4, 4], roi_start=[2], roi_end=[3])
    with pytest.raises(ValueError, match="not inside"):
        roi_random_crop(np.random.default_rng(0), crop_shape=[4], roi_start=[2], roi_end=[30],
                        in_shape=[10])
    with pytest.raises(ValueError, match="mutually exclusive"):
        ndd.roi_random_crop(crop_shape=[4], roi_start=[2], roi_end=[3], roi_shape=[1],
                            batch_size=2)


def test_roi_random_crop_front_end():
    img = ndd.tensor(np.zeros((60, 100, 3), np.uint8))
    s = np.asarray(ndd.roi_random_crop(img, crop_shape=[10, 20, 3], roi_start=[5, 5, 0],
                                       roi_end=[50, 15, 3]))
    _check_roi(s, [10, 20, 3], [5, 5, 0], [50, 15, 3], (60, 100, 3))
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.roi_random_crop(crop_shape=[10, 20],
                                      roi_start=ndd.batch([np.array([5, 5]), np.array([0, 70])]),
                                      roi_shape=[30, 30], in_shape=[60, 100],
                                      rng=ndd.random.RNG(seed=2))
            res.append([np.asarray(t).tolist() for t in out.tensors])
    assert res[0] == res[1]
    _check_roi(res[0][1], [10, 20], [0, 70], [30, 100], (60, 100))


@pytest.mark.parametrize("seed", range(40))
def test_random_crop_generator_contract(seed):
    shape = np.array([480, 640, 3])
    a, s = random_crop_generator(shape, np.random.default_rng(seed))
    assert a.dtype == s.dtype == np.int32 and a.shape == s.shape == (2,)
    assert (a >= 0).all() and (a + s <= shape[:2]).all() and (s >= 1).all()
    area = s[0] * s[1] / (480 * 640)
    assert 0.08 - 0.01 <= area <= 1.0
    assert 0.75 - 0.02 <= s[1] / s[0] <= 4 / 3 + 0.02


def test_random_crop_generator_fallback_and_front_end():
    a, s = random_crop_generator([480, 640], np.random.default_rng(0), random_area=(1.0, 1.0),
                                 random_aspect_ratio=(3.0, 3.0))
    assert s.tolist() == [213, 640] and 0 <= a[0] <= 480 - 213 and a[1] == 0
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            anc, shp = ndd.random_crop_generator(ndd.batch([np.array([100, 200])] * 3),
                                                 random_area=[0.5, 0.5], rng=ndd.random.RNG(1))
            res.append([np.asarray(t).tolist() for t in [*anc.tensors, *shp.tensors]])
    assert res[0] == res[1]
    with pytest.raises(ValueError, match="1-D shape"):
        ndd.random_crop_generator(ndd.tensor(np.zeros((2, 2), np.int64)))


# ----------------------------------------------------------------------------- DALI oracle
@pytest.mark.oracle
def test_contracts_hold_for_dali_and_ndd():
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    for mod in (ndd, dali):
        out = mod.roi_random_crop(crop_shape=[10, 20], roi_start=[5, 5], roi_end=[50, 15],
                                  in_shape=[60, 100], batch_size=8)
        for t in out.tensors:
            assert np.asarray(t).dtype == np.int64
            _check_roi(np.asarray(t), [10, 20], [5, 5], [50, 15], (60, 100))
        out = mod.roi_random_crop(crop_shape=[10, 20], roi_start=[5, 5], roi_shape=[45, 10],
                                  batch_size=8)
        for t in out.tensors:
            _check_roi(np.asarray(t), [10, 20], [5, 5], [50, 15])
        anc, shp = mod.random_crop_generator(mod.batch([np.array([480, 640, 3], np.int64)] * 8))
        for a, s in zip(anc.tensors, shp.tensors):
            a, s = np.asarray(a), np.asarray(s)
            assert a.dtype == s.dtype == np.int32 and a.shape == (2,)
            assert (a >= 0).all() and (a + s <= [480, 640]).all()
            assert 0.07 <= s[0] * s[1] / (480 * 640) <= 1.0
        anc, shp = mod.random_crop_generator(mod.tensor(np.array([480, 640], np.int32)),
                                             random_area=[1.0, 1.0],
                                             random_aspect_ratio=[3.0, 3.0])
        assert np.asarray(shp).tolist() == [213, 640]
