"""decoders.image(device="gpu") fused with what follows (``runtime/kernels/gpu/fused.py``,
``compiler/fusion_rules_gpu.py``) on the fake GPU (the real .cu kernels built as host C++, the
CPU's region decode + one H2D copy in place of nvImageCodec's): decode -> rrc / resize [-> flip]
-> cmn is one GPU node that decodes only the box its resize reads, equal bit for bit to the
unfused GPU chain (whole decode, then the ops one by one) and within the CPU resize fast
path's tolerance of the CPU; errors are the CPU's."""
from __future__ import annotations

import io
import shutil

import numpy as np
import pytest

import ndd
from compiler.pipeline import set_options
from ndd._evaluate import last_plan
from runtime.device import use_api
from runtime.gpu.fake import FakeApi
from runtime.kernels.gpu import fused as gpu_fused

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="host build needs g++")

MEAN, STD = [120.0, 110.0, 100.0], [60.0, 61.0, 62.0]


@pytest.fixture(scope="module")
def files():
    """Textured JPEGs (and one PNG) of odd sizes: a region decode that missed a tap would show."""
    from PIL import Image
    rng = np.random.default_rng(1)
    out = []
    for k, (h, w) in enumerate([(97, 131), (64, 45), (120, 88), (71, 71)]):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG" if k == 1 else "JPEG", quality=85)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


@pytest.fixture
def gpu(monkeypatch):
    """The fake GPU; ``gpu.regions`` records the boxes each fused decode asked for."""
    api = FakeApi()
    api.regions = []
    real = gpu_fused.decode_regions

    def spy(ctx, data, per, parsed, regions):
        api.regions.append(list(regions))
        return real(ctx, data, per, parsed, regions)
    monkeypatch.setattr(gpu_fused, "decode_regions", spy)
    with use_api(api):
        yield api
    assert api.violations == []


def _host(b):
    return [np.asarray(t) for t in (b.cpu() if b.device.kind == "gpu" else b).tensors]


def _run(fn, enc, device, fuse=True):
    """(host arrays, plan) of ``fn(enc, device)`` in deferred mode."""
    set_options(disable=() if fuse else ("fuse",))
    try:
        with ndd.EvalMode.deferred:
            out = _host(fn(enc, device))
            plan = last_plan()
    finally:
        set_options(disable=())
    return out, plan


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def _stages(plan):
    return [[s.name for s in st.node.args["stages"]] for st in plan.steps
            if st.node.op == "fused.image" and st.node.device.kind == "gpu"]


def _train(mirror, flip=False, dtype=None):
    def fn(b, device):
        img = ndd.decoders.image(b, device=device)
        img = ndd.random_resized_crop(img, size=(29, 23), rng=ndd.random.RNG(7))
        if flip:
            img = ndd.flip(img, horizontal=1)
        kw = {} if dtype is None else {"dtype": dtype}
        return ndd.crop_mirror_normalize(img, mirror=mirror, mean=MEAN, std=STD, **kw)
    return fn


def test_train_chain_is_one_gpu_node_decoding_only_the_region_read(gpu, files):
    enc = ndd.batch(files)
    mirror = ndd.batch([np.int32(v) for v in (1, 0, 1, 0)])
    fn = _train(mirror)
    fused, plan = _run(fn, enc, "gpu")
    assert [(s.node.op, s.node.device.kind) for s in plan.steps] == [("fused.image", "gpu")]
    assert _stages(plan) == [["decode", "rrc", "cmn"]]
    # at least one sample decoded only part of its image (the box of its taps)
    boxes = gpu.regions[-1]
    assert any(b is not None for b in boxes)
    for b in boxes:
        assert b is None or (0 <= b[0] < b[2] and 0 <= b[1] < b[3])
    unfused, plan_u = _run(fn, enc, "gpu", fuse=False)
    assert ("decoders.image", "gpu") in [(s.node.op, s.node.device.kind) for s in plan_u.steps]
    _same(fused, unfused)
    _same(fused, _host(fn(enc, "gpu")))                      # eager: ops one by one
    cpu, _ = _run(fn, enc, "cpu")
    for c, g in zip(cpu, fused):        # the CPU's uint8 resize fast path: within 1 level
        np.testing.assert_allclose(g, c, rtol=0, atol=1.0 / min(STD) + 1e-6)


def test_a_flip_before_cmn_and_a_float16_output(gpu, files):
    enc = ndd.batch(files)
    mirror = ndd.batch([np.int32(v) for v in (0, 1, 1, 0)])
    fn = _train(mirror, flip=True, dtype=ndd.float16)
    fused, plan = _run(fn, enc, "gpu")
    # flip -> cmn fuses first (as on the CPU), then the decode with the rrc: two GPU nodes
    assert sorted(_stages(plan)) == [["decode", "rrc"], ["flip", "cmn"]]
    _same(fused, _run(fn, enc, "gpu", fuse=False)[0])


def test_val_chain_resize_then_cropping_cmn_is_fused_with_the_decode(gpu, files):
    enc = ndd.batch(files)

    def val(b, device):
        img = ndd.decoders.image(b, device=device)
        img = ndd.resize(img, resize_shorter=40, interp_type=ndd.types.INTERP_CUBIC)
        return ndd.crop_mirror_normalize(img, crop=(32, 32), mean=MEAN, std=STD)
    fused, plan = _run(val, enc, "gpu")
    assert _stages(plan) == [["decode", "resize", "cmn"]]
    assert all(b is None for b in gpu.regions[-1])   # a plain resize reads the whole image
    _same(fused, _run(val, enc, "gpu", fuse=False)[0])


def test_decode_then_rrc_alone_and_gray_output(gpu, files):
    enc = ndd.batch(files)

    def fn(b, device):
        img = ndd.decoders.image(b, device=device, output_type=ndd.types.GRAY)
        return ndd.random_resized_crop(img, size=(17, 30), rng=ndd.random.RNG(3),
                                       interp_type=ndd.types.INTERP_LINEAR, antialias=False)
    fused, plan = _run(fn, enc, "gpu")
    assert _stages(plan) == [["decode", "rrc"]]
    assert all(x.shape == (17, 30, 1) for x in fused)
    _same(fused, _run(fn, enc, "gpu", fuse=False)[0])


def test_decode_then_crop_becomes_the_gpu_region_decoder(gpu, files):
    enc = ndd.batch(files)

    def fn(b, device):
        return ndd.crop(ndd.decoders.image(b, device=device), crop=(30, 20),
                        crop_pos_x=0.3, crop_pos_y=0.8)
    fused, plan = _run(fn, enc, "gpu")
    assert [(s.node.op, s.node.device.kind) for s in plan.steps] == [
        ("decoders.image_crop", "gpu")]
    _same(fused, _run(fn, enc, "gpu", fuse=False)[0])


def test_a_corrupt_file_in_the_fused_decode_raises_the_cpu_error(gpu, files):
    bad = ndd.batch([files[0], np.frombuffer(b"\xff\xd8\xff\xe0garbage", np.uint8)])
    mirror = ndd.batch([np.int32(0), np.int32(1)])
    fn = _train(mirror)
    with pytest.raises(Exception) as cpu_err:
        _run(fn, bad, "cpu")
    with pytest.raises(Exception) as gpu_err:
        _run(fn, bad, "gpu")
    assert type(gpu_err.value) is type(cpu_err.value)
    assert "sample 1" in str(gpu_err.value) or "[1]" in str(gpu_err.value)


def test_a_fused_decode_stays_outside_the_cuda_graph_of_what_follows(gpu, files):
    """decode -> rrc -> cmn (one decoding node, on the decode stream, never captured), then an
    element-wise step captured and replayed on the lane: the capture waits on the decode's
    event before it starts (nothing allocated or waited on inside it: the fake checks)."""
    from runtime.gpu import capture
    enc = ndd.batch(files)
    capture.set_enabled(True)
    try:
        for i in range(5):
            mirror = ndd.batch([np.int32((i + k) % 2) for k in range(4)])

            def fn(b, device):
                img = ndd.decoders.image(b, device=device)
                img = ndd.random_resized_crop(img, size=(16, 20), rng=ndd.random.RNG(i))
                return ndd.crop_mirror_normalize(img, mirror=mirror, mean=MEAN,
                                                 std=STD) * 2.0 + 1.0
            got, plan = _run(fn, enc, "gpu")
            assert [s.node.op for s in plan.steps][0] == "fused.image"
            _same(got, _host(fn(enc, "gpu")))                # eager, unfused, no graphs
        stats = capture.cache().stats
    finally:
        capture.set_enabled(False)
    assert stats["capture"] >= 1 and stats["replay"] >= 2, stats


def test_an_exif_rotated_file_takes_its_window_on_the_oriented_image(gpu, files):
    from PIL import Image
    rng = np.random.default_rng(9)
    exif = Image.Exif()
    exif[0x0112] = 6                                 # rotate 90 degrees clockwise
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (40, 90, 3), dtype=np.uint8)).save(
        buf, format="JPEG", quality=90, exif=exif.tobytes())
    enc = ndd.batch([np.frombuffer(buf.getvalue(), np.uint8), files[0]])
    fn = _train(ndd.batch([np.int32(1), np.int32(0)]))
    fused, plan = _run(fn, enc, "gpu")
    assert _stages(plan) == [["decode", "rrc", "cmn"]]
    _same(fused, _run(fn, enc, "gpu", fuse=False)[0])
