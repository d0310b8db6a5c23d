"""GPU decode (``decoders.image(..., device="gpu")``, DALI's mixed decoders) on the fake GPU:
the CPU decode + one H2D copy path of ``runtime/kernels/gpu/decode.py``. The encoded files stay
on the host (no transfer is placed before the decoder), the images land on the GPU equal to the
CPU decode, the rest of the chain runs (and fuses) on the GPU, errors are the CPU's."""
from __future__ import annotations

import io
import shutil

import numpy as np
import pytest

import ndd
from compiler.pipeline import set_options
from ndd._evaluate import last_plan
from runtime.kernels.gpu import decode as gpu_decode

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="host build needs g++")

MEAN, STD = [120.0, 110.0, 100.0], [60.0, 61.0, 62.0]


@pytest.fixture(scope="module")
def files():
    from PIL import Image
    rng = np.random.default_rng(0)
    out = []
    for k, (h, w) in enumerate([(40, 52), (33, 27), (48, 48)]):
        y, x = np.mgrid[:h, :w]
        img = np.stack([(x * 5) % 256, (y * 7) % 256, (x + y) % 256], -1).astype(np.uint8)
        img = np.clip(img.astype(int) + rng.integers(-20, 20, img.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG" if k == 1 else "JPEG", quality=90)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _host(b):
    return [np.asarray(t) for t in (b.cpu() if b.device.kind == "gpu" else b).tensors]


def test_decode_on_the_gpu_equals_the_cpu_decode(gpu, files):
    enc = ndd.batch(files)
    want = _host(ndd.decoders.image(enc))
    out = ndd.decoders.image(enc, device="gpu")
    assert out.device.kind == "gpu" and out.layout == "HWC"
    got = _host(out)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    assert gpu_decode.last_backend() == "cpu+h2d"
    gray = _host(ndd.decoders.image(enc, device="gpu", output_type=ndd.types.GRAY))
    for w, g in zip(_host(ndd.decoders.image(enc, output_type=ndd.types.GRAY)), gray):
        np.testing.assert_array_equal(g, w)


def test_encoded_files_on_the_gpu_are_read_back_on_the_host(gpu, files):
    enc = ndd.batch(files).gpu()
    got = _host(ndd.decoders.image(enc))              # device inferred from the input
    for w, g in zip(_host(ndd.decoders.image(ndd.batch(files))), got):
        np.testing.assert_array_equal(g, w)


def test_region_decoders_on_the_gpu_equal_the_cpu(gpu, files):
    enc = ndd.batch(files)
    kw = dict(crop=(20, 16), crop_pos_x=0.3, crop_pos_y=0.7)
    for w, g in zip(_host(ndd.decoders.image_crop(enc, **kw)),
                    _host(ndd.decoders.image_crop(enc, device="gpu", **kw))):
        np.testing.assert_array_equal(g, w)
    want = _host(ndd.decoders.image_random_crop(enc, rng=ndd.random.RNG(3)))
    got = _host(ndd.decoders.image_random_crop(enc, device="gpu", rng=ndd.random.RNG(3)))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_train_chain_decodes_on_the_gpu_without_moving_the_files(gpu, files):
    enc = ndd.batch(files)
    mirror = ndd.batch([np.int32(v) for v in (1, 0, 1)])

    def train(b, device):
        img = ndd.decoders.image(b, device=device)
        img = ndd.random_resized_crop(img, size=(24, 20), rng=ndd.random.RNG(5))
        return ndd.crop_mirror_normalize(img, mirror=mirror, mean=MEAN, std=STD)
    with ndd.EvalMode.deferred:
        got = _host(train(enc, "gpu"))
        plan = last_plan()
    ops = [(s.node.op, s.node.device.kind) for s in plan.steps]
    # decode -> rrc -> cmn is one GPU node (region decode + two launches)
    assert ops[0] == ("fused.image", "gpu")
    assert [s.name for s in plan.steps[0].node.args["stages"]] == ["decode", "rrc", "cmn"]
    assert "transfer" not in [op for op, _ in ops]         # the files stay on the host
    assert any("applied decode->random_resized_crop" in m for _, m in plan.notes)
    eager = _host(train(enc, "gpu"))                        # unfused GPU kernels
    for e, g in zip(eager, got):
        np.testing.assert_array_equal(g, e)
    set_options(disable=("fuse",))
    try:
        with ndd.EvalMode.deferred:
            cpu = _host(train(enc, "cpu"))
    finally:
        set_options(disable=())
    for c, g in zip(cpu, got):      # the CPU's uint8 resize fast path: within 1 level
        np.testing.assert_allclose(g, c, rtol=0, atol=1.0 / min(STD) + 1e-6)


def test_a_corrupt_file_raises_the_cpu_error(gpu, files):
    bad = ndd.batch([files[0], np.frombuffer(b"\xff\xd8\xff\xe0garbage", np.uint8)])
    with pytest.raises(Exception) as cpu_err:
        ndd.decoders.image(bad).evaluate()
    with pytest.raises(Exception) as gpu_err:
        ndd.decoders.image(bad, device="gpu").evaluate()
    assert type(gpu_err.value) is type(cpu_err.value)
    assert "sample 1" in str(gpu_err.value) or "[1]" in str(gpu_err.value)
