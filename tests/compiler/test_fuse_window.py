"""The ``crop->window`` fusion: a crop read by resize / rotate / warp_affine without a copy
(the consumer's kernel runs on views of the windows), bit-identical with the unfused chain."""
import numpy as np
import pytest

import ndd
from compiler.pipeline import set_options
from runtime.kernels import registry

N = 4


def _images(layout="HWC", seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(N):
        a = rng.integers(0, 256, (50 + 3 * i, 61 - 2 * i, 3), dtype=np.uint8)
        out.append(np.ascontiguousarray(a.transpose(2, 0, 1)) if layout == "CHW" else a)
    return out


def _run(fn, mode, imgs, layout="HWC"):
    ndd.random.set_seed(4)
    set_options(disable=())
    with mode:
        out = fn(ndd.as_batch(imgs, layout=layout))
        res = [np.asarray(out.tensors[i]) for i in range(out.batch_size)]
        plan = __import__("ndd._evaluate", fromlist=["x"]).last_plan()
    return res, plan


def _pos():
    return ndd.random.uniform(range=(0, 1), batch_size=N)


CASES = {
    "resize": lambda b: ndd.resize(ndd.crop(b, crop=(30, 33), crop_pos_x=_pos()),
                                   size=(17, 23)),
    "resize_cubic_up": lambda b: ndd.resize(ndd.crop(b, crop=(21, 18), crop_pos_y=_pos()),
                                            size=(40, 41), interp_type=ndd.types.INTERP_CUBIC),
    "resize_shorter": lambda b: ndd.resize(ndd.crop(b, crop=(40, 40)), resize_shorter=24,
                                           antialias=False),
    "rotate": lambda b: ndd.rotate(ndd.crop(b, crop=(30, 33)),
                                   angle=ndd.random.uniform(range=(-30, 30), batch_size=N),
                                   fill_value=7),
    "rotate_keep": lambda b: ndd.rotate(ndd.crop(b, crop=(28, 36), crop_pos_x=0.0), angle=12.5,
                                        keep_size=True),
    "warp_affine": lambda b: ndd.warp_affine(ndd.crop(b, crop=(31, 32), crop_pos_y=0.1),
                                             matrix=[1.1, 0.1, 2.0, -0.1, 0.9, 1.0],
                                             size=(20, 25)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_crop_read_in_place_is_bit_exact(name):
    imgs = _images()
    eager, _ = _run(CASES[name], ndd.EvalMode.sync_cpu, imgs)
    got, plan = _run(CASES[name], ndd.EvalMode.deferred, imgs)
    assert plan.steps[-1].node.op == "fused.window", plan.notes
    assert any(m.startswith("applied crop->window") for k, m in plan.notes if k == "fuse")
    for e, g in zip(eager, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_array_equal(e, g)


def test_crop_of_chw_images_and_a_matrix_input():
    imgs = _images("CHW")
    mtx = ndd.as_batch([np.array([[0.9, -0.2, 3.0], [0.2, 1.0, -1.0]], np.float32)] * N)

    def fn(b):
        return ndd.resize(ndd.crop(b, crop=(25, 30), crop_pos_x=_pos()), size=(13, 11))
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, imgs, "CHW")
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs, "CHW")
    assert plan.steps[-1].node.op == "fused.window"
    for e, g in zip(eager, got):
        np.testing.assert_array_equal(e, g)

    def warp(b):
        return ndd.warp_affine(ndd.crop(b, crop=(30, 30)), mtx, size=(22, 19))
    hwc = _images()
    eager, _ = _run(warp, ndd.EvalMode.sync_cpu, hwc)
    got, plan = _run(warp, ndd.EvalMode.deferred, hwc)
    assert plan.steps[-1].node.op == "fused.window"
    for e, g in zip(eager, got):
        np.testing.assert_array_equal(e, g)


def test_the_consumer_reads_views_of_the_input(monkeypatch):
    imgs = _images()
    seen = []
    resize = registry.KERNELS[("resize", "cpu")]

    def spy(ctx, inputs, args):
        seen.extend(inputs[0])
        return resize(ctx, inputs, args)
    monkeypatch.setitem(registry.KERNELS, ("resize", "cpu"), spy)
    _run(CASES["resize"], ndd.EvalMode.deferred, imgs)
    assert len(seen) == N
    assert all(np.shares_memory(v, x) for v, x in zip(seen, imgs))


@pytest.mark.parametrize("fn,why", [
    (lambda b: ndd.resize(ndd.crop(b, crop=(80, 30), out_of_bounds_policy="pad"), size=(9, 9)),
     "out_of_bounds_policy='pad'"),
    (lambda b: ndd.rotate(ndd.crop(b, crop=(20, 20), dtype=ndd.float32), angle=5.0),
     "converts to dtype"),
])
def test_refused_where_the_window_is_not_a_view(fn, why):
    imgs = _images()
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, imgs)
    got, plan = _run(fn, ndd.EvalMode.deferred, imgs)
    assert any(why in m for k, m in plan.notes if m.startswith("refused crop->window")), \
        plan.notes
    for e, g in zip(eager, got):
        np.testing.assert_array_equal(e, g)


def _anchor(b):
    return ndd.as_batch([np.array([0.1 + 0.05 * i, 0.2], np.float32) for i in range(N)])


SLICES = {
    "rel_anchor_input": lambda b: ndd.resize(ndd.slice(b, _anchor(b), [0.5, 0.6],
                                                       axis_names="HW"), size=(15, 16)),
    "abs_args": lambda b: ndd.rotate(ndd.slice(b, start=[3, 5], end=[40, 45],
                                               axis_names="HW"), angle=8.0),
    "trim": lambda b: ndd.warp_affine(ndd.slice(b, start=[10, 20], shape=[90, 30],
                                                axis_names="HW",
                                                out_of_bounds_policy="trim_to_shape"),
                                      matrix=[1.0, 0.2, 0.0, 0.0, 1.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(SLICES))
def test_slice_read_in_place_is_bit_exact(name):
    imgs = _images()
    eager, _ = _run(SLICES[name], ndd.EvalMode.sync_cpu, imgs)
    got, plan = _run(SLICES[name], ndd.EvalMode.deferred, imgs)
    assert plan.steps[-1].node.op == "fused.window", plan.notes
    for e, g in zip(eager, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_array_equal(e, g)


def test_slice_out_of_bounds_raises_the_slice_error():
    imgs = _images()

    def fn(b):
        return ndd.resize(ndd.slice(b, start=[10, 20], shape=[90, 30], axis_names="HW"),
                          size=(8, 8))
    for mode in (ndd.EvalMode.sync_cpu, ndd.EvalMode.deferred):
        with pytest.raises(ValueError, match="out of the bounds"):
            _run(fn, mode, imgs)
