"""fused.image's cmn stage per sample (runtime/kernels/cpu/fused_stages.py): the window, shape and
plan computed once per image shape must not be reused across samples whose cmn arguments differ
(per-sample crop positions, means), and must be when only the mirror flag does."""
import io

import numpy as np
import pytest

import ndd
from compiler.pipeline import set_options
from ndd._evaluate import last_plan


@pytest.fixture(scope="module")
def same_size_jpegs():
    from PIL import Image
    rng = np.random.default_rng(11)
    out = []
    for _ in range(4):      # one size: every sample has the same cmn key
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)).save(
            buf, format="JPEG", quality=92)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _run(fn, mode, enc, disable=()):
    ndd.random.set_seed(5)
    set_options(disable=disable)
    try:
        with mode:
            out = fn(ndd.as_batch(enc))
            res = [np.asarray(out.tensors[i]) for i in range(out.batch_size)]
            plan = last_plan()
    finally:
        set_options(disable=())
    return res, plan


def per_sample_position(b):
    pos = ndd.random.uniform(batch_size=b.batch_size, range=(0.0, 1.0))
    return ndd.crop_mirror_normalize(ndd.decoders.image(b), crop=(20, 24), crop_pos_x=pos,
                                     mean=[10.0, 20.0, 30.0], output_layout="HWC")


def per_sample_mean(b):
    img = ndd.resize(ndd.decoders.image(b), resize_shorter=32)
    mean = ndd.random.uniform(batch_size=b.batch_size, range=(0.0, 200.0), shape=(3,))
    return ndd.crop_mirror_normalize(img, crop=(24, 24), mean=mean, std=[50.0, 60.0, 70.0])


def per_sample_mirror(b):
    img = ndd.random_resized_crop(ndd.decoders.image(b), size=(30, 20))
    flip = ndd.random.coin_flip(batch_size=b.batch_size)
    return ndd.crop_mirror_normalize(img, mirror=flip, mean=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("fn", [per_sample_position, per_sample_mean, per_sample_mirror])
def test_fused_cmn_per_sample_arguments_match_unfused(same_size_jpegs, fn):
    unfused, _ = _run(fn, ndd.EvalMode.deferred, same_size_jpegs, disable={"fuse"})
    fused, plan = _run(fn, ndd.EvalMode.deferred, same_size_jpegs)
    assert "fused.image" in [s.node.op for s in plan.steps]
    for u, f in zip(unfused, fused):
        assert u.dtype == f.dtype and u.shape == f.shape
        np.testing.assert_array_equal(u, f)
    # the per-sample argument really differs between samples
    assert any(not np.array_equal(fused[0], f) for f in fused[1:])
