"""fused.image's cmn stage per sample (runtime/kernels/cpu/fused_stages.py): the window, shape and
plan computed once per image shape must not be reused across samples whose cmn arguments differ
(per-sample crop positions, means), and must be when only the mirror flag does."""
import io

import numpy as np
import pytest

import ndd
from compiler.pipeline import set_options
from ndd._evaluate import last_plan
from runtime.kernels.cpu import fused as fused_kernel
from runtime.kernels.cpu.fused_stages import batch_plan, run_chunk
from runtime.kernels.registry import KernelContext


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


def _mixed_jpegs():
    """Files of three sizes (so the cmn memo holds several shapes), each size twice."""
    from PIL import Image
    rng = np.random.default_rng(12)
    out = []
    for h, w in ((40, 56), (33, 47), (40, 56), (61, 30), (33, 47), (61, 30)):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(
            buf, format="JPEG", quality=90)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def resize_cmn_per_sample_mean(b):
    img = ndd.resize(ndd.decoders.image(b), size=(30, 30))
    mean = ndd.random.uniform(batch_size=b.batch_size, range=(0.0, 200.0), shape=(3,))
    flip = ndd.random.coin_flip(batch_size=b.batch_size)
    return ndd.crop_mirror_normalize(img, mirror=flip, mean=mean, output_layout="HWC")


def decode_cmn_mirror(b):
    flip = ndd.random.coin_flip(batch_size=b.batch_size)
    return ndd.crop_mirror_normalize(ndd.decoders.image(b), mirror=flip, std=[30.0, 40.0, 50.0])


@pytest.mark.parametrize("fn", [decode_cmn_mirror, resize_cmn_per_sample_mean])
def test_groups_sharing_one_batch_plan_give_the_unfused_results(fn):
    # the worker processes run a batch as several run_chunk calls sharing one BatchPlan (its
    # cmn memo filled by the first groups, read by the later ones)
    files = _mixed_jpegs()
    unfused, _ = _run(fn, ndd.EvalMode.deferred, files, disable={"fuse"})
    calls = []
    fused_kernel.set_recorder(lambda ctx, inputs, args: calls.append((ctx, inputs, args)))
    try:
        _run(fn, ndd.EvalMode.deferred, files)
    finally:
        fused_kernel.set_recorder(None)
    (ctx, inputs, args), = calls
    n = ctx.batch_size
    ctx = KernelContext(None, ctx.in_metas, ctx.out_metas, ctx.tensor_arg_names, n, ctx.op)
    plan = batch_plan(args)
    got = {}
    for group in ([4, 0], [2], [5, 1, 3]):
        got.update(zip(group, run_chunk(ctx, inputs, args, group, None, plan)))
    for i in range(n):
        assert got[i].shape == unfused[i].shape
        np.testing.assert_array_equal(got[i], unfused[i])
