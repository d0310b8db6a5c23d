"""Deferred (compiled + fused) output == eager output, bit for bit."""
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ndd

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    import pathlib
    from ndd.datasets.sample import build_sample_dataset
    root = build_sample_dataset(tmp_path_factory.mktemp("ds"), num_images=6, progress=False)
    return [np.fromfile(f, np.uint8) for f in sorted(pathlib.Path(root).rglob("*.jpg"))]


def _both(fn, inputs):
    outs = []      # the IR checker runs after every pass (tests/conftest.py turns it on)
    for mode in (ndd.EvalMode.sync_cpu, ndd.EvalMode.deferred):
        ndd.random.set_seed(11)
        with mode:
            out = fn(ndd.as_batch(inputs))
            outs.append([np.asarray(out.tensors[i]) for i in range(out.batch_size)])
    return outs


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_train_pipeline(photos):
    def train(b):
        img = ndd.random_resized_crop(ndd.decoders.image(b), size=(224, 224))
        flip = ndd.random.coin_flip(batch_size=b.batch_size)
        return ndd.crop_mirror_normalize(img, mirror=flip, mean=MEAN, std=STD)
    _assert_same(*_both(train, photos))


def test_val_pipeline(photos):
    def val(b):
        img = ndd.resize(ndd.decoders.image(b), resize_shorter=256)
        return ndd.crop_mirror_normalize(img, crop=(224, 224), mean=MEAN, std=STD)
    _assert_same(*_both(val, photos))


# ---------------------------------------------------------------- random op graphs
_ARITH = st.sampled_from([("add", 3), ("sub", 2.5), ("mul", 2), ("truediv", 3.0), ("max", 100),
                          ("min", 40), ("neg", None), ("abs", None)])
_CASTS = st.sampled_from(["uint8", "int16", "int32", "float32"])
_STEP = st.one_of(st.tuples(st.just("a"), _ARITH), st.tuples(st.just("c"), _CASTS),
                  st.tuples(st.just("bin"), st.integers(0, 10)))


def _apply(steps, b):
    vals = [b]
    for kind, arg in steps:
        x = vals[-1]
        if kind == "c":
            y = ndd.cast(x, dtype=arg)
        elif kind == "bin":            # combine with an earlier value (DAG, shared reads)
            y = x + vals[arg % len(vals)]
        else:
            op, k = arg
            if op == "neg":
                y = -x
            elif op == "abs":
                y = ndd.math.abs(x)
            elif op in ("max", "min"):
                y = getattr(ndd.math, op)(x, k)
            else:
                y = {"add": x + k, "sub": x - k, "mul": x * k, "truediv": x / k}[op]
        vals.append(y)
    return vals[-1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEP, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_random_elementwise_graphs(steps, seed):
    rng = np.random.default_rng(seed)
    data = [rng.integers(0, 200, (3, 4), dtype=np.uint8) for _ in range(2)]
    _assert_same(*_both(lambda b: _apply(steps, b), data))


_IMG_STEP = st.sampled_from(["rrc", "resize", "crop", "flip", "cmn", "cmn_crop"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_IMG_STEP, min_size=1, max_size=3))
def test_random_image_chains(photos, steps):
    def fn(b):
        x = ndd.decoders.image(b)
        for s in steps:
            if x.dtype != ndd.uint8 if hasattr(ndd, "uint8") else False:
                break
            if s == "rrc":
                x = ndd.random_resized_crop(x, size=(31, 45))
            elif s == "resize":
                x = ndd.resize(x, resize_shorter=40)
            elif s == "crop":
                x = ndd.crop(x, crop=(20, 25), crop_pos_x=0.3)
            elif s == "flip":
                x = ndd.flip(x, horizontal=1)
            elif s == "cmn":
                x = ndd.crop_mirror_normalize(x, mean=MEAN, std=STD, output_layout="HWC",
                                              dtype="uint8", mirror=1)
            else:
                x = ndd.crop_mirror_normalize(x, crop=(16, 18), mean=MEAN, std=STD,
                                              output_layout="HWC", dtype="uint8")
        return x
    try:
        eager = _both(fn, photos[:3])
    except ValueError as exc:     # window larger than the image: both modes must refuse
        assert "crop window" in str(exc)
        return
    _assert_same(*eager)


# The slow tier: the same properties with many more examples (`pytest -m slow`).
@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEP, min_size=1, max_size=8), seed=st.integers(0, 2**32 - 1))
def test_random_elementwise_graphs_many(steps, seed):
    test_random_elementwise_graphs.hypothesis.inner_test(steps, seed)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_IMG_STEP, min_size=1, max_size=4))
def test_random_image_chains_many(photos, steps):
    test_random_image_chains.hypothesis.inner_test(photos, steps)
