"""The nvImageCodec GPU-decode path of ``runtime/kernels/gpu/decode.py`` on the fake GPU, with a
stand-in for nvImageCodec's GPU decoder (it decodes on the CPU into fake device memory): which
samples go to the GPU decoder (8-bit JPEGs, RGB/BGR/GRAY uint8), the per-sample CPU fallback
(another format, a JPEG the decoder rejects), the order of the batch, the copy into the pool on
the lane's stream, the backend reported, the decoder's knobs (``hw_decoder_load``)."""
from __future__ import annotations

import io
import types

import numpy as np
import pytest

import ndd
from runtime.codecs import nvimgcodec_backend as nvb
from runtime.device import use_api
from runtime.gpu.fake import FakeApi
from runtime.kernels.gpu import decode as gpu_decode

pytestmark = pytest.mark.skipif(not nvb.available(), reason="needs nvImageCodec (CPU)")


def _encode(img, fmt):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format=fmt, quality=90)
    return np.frombuffer(buf.getvalue(), np.uint8)


class _StubNv:
    """The parts of nvImageCodec's module the GPU path uses; ``Decoder.decode`` decodes each
    stream with the CPU codec into fake device memory and records what it was given."""

    def __init__(self, api, reject=()):
        self.api, self.reject, self.calls, self.made = api, set(reject), [], []
        self.BackendKind = types.SimpleNamespace(GPU_ONLY="gpu", HW_GPU_ONLY="hw")
        self.ColorSpec = types.SimpleNamespace(SRGB="srgb", GRAY="gray")
        self.SampleFormat = types.SimpleNamespace(I_BGR="bgr", I_AUTO_COMPONENTS="auto")
        self.Region = nvb._nvimgcodec().Region        # the real one: sub-streams of CPU streams
        stub = self

        class Decoder:
            def __init__(self, device_id, backends, options=""):
                stub.made.append((device_id, tuple(backends), options))

            def decode(self, streams, params, cuda_stream):
                stub.calls.append((len(streams), params, cuda_stream))
                out = []
                for k, s in enumerate(streams):
                    if len(stub.calls) == 1 and k in stub.reject:
                        out.append(None)
                        continue
                    mode = {"gray": "GRAY", "bgr": "BGR"}.get(
                        params["color_spec"] if params["color_spec"] == "gray"
                        else params["sample_format"], "RGB")
                    host = nvb.decode_stream(
                        s, mode, adjust_orientation=params["apply_exif_orientation"])
                    mem = stub.api.alloc(host.nbytes)
                    arr = stub.api.array(mem, 0, host.shape, host.dtype)
                    arr.host[...] = host
                    out.append(arr)
                return out
        self.Decoder = Decoder

    @staticmethod
    def Backend(kind, load_hint=1.0):
        return (kind, load_hint)

    @staticmethod
    def DecodeParams(**kw):
        return kw


@pytest.fixture
def stub(monkeypatch):
    api = FakeApi()
    with use_api(api):
        nv = _StubNv(api)
        monkeypatch.setattr(gpu_decode, "_nvimgcodec", lambda: nv)
        monkeypatch.setattr(gpu_decode, "gpu_decoder_available", lambda ctx: True)
        monkeypatch.setattr(gpu_decode, "_local", __import__("threading").local())
        yield nv
    assert api.violations == []


def _files():
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, s, dtype=np.uint8) for s in ((24, 30, 3), (17, 9, 3),
                                                               (20, 20, 3), (9, 33, 3))]
    return [_encode(imgs[0], "JPEG"), _encode(imgs[1], "PNG"), _encode(imgs[2], "JPEG"),
            _encode(imgs[3], "JPEG")]


def _host(b):
    return [np.asarray(t) for t in b.cpu().tensors]


def test_jpegs_go_to_the_gpu_decoder_and_the_rest_to_the_cpu_in_batch_order(stub):
    files = _files()
    enc = ndd.batch(files)
    want = [np.asarray(t) for t in ndd.decoders.image(enc).tensors]
    got = _host(ndd.decoders.image(enc, device="gpu"))
    assert [g.shape for g in got] == [w.shape for w in want]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert len(stub.calls) == 1 and stub.calls[0][0] == 3          # the three JPEGs, batched
    assert stub.calls[0][1]["apply_exif_orientation"] is False     # upright files only
    assert isinstance(stub.calls[0][2], int) and stub.calls[0][2] != 0   # the lane's stream
    assert gpu_decode.last_backend() == "nvimgcodec-gpu+cpu"
    # the default split: hardware decoder for 0.9 of the batch, then the CUDA decoder
    assert stub.made[0][1] == (("hw", gpu_decode.HW_DECODER_LOAD), ("gpu", 1.0))


def test_only_jpegs_all_on_the_gpu_and_cuda_only_without_hw_load(stub):
    files = [f for k, f in enumerate(_files()) if k != 1]
    got = _host(ndd.decoders.image(ndd.batch(files), device="gpu", hw_decoder_load=0.0))
    want = [np.asarray(t) for t in ndd.decoders.image(ndd.batch(files)).tensors]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert gpu_decode.last_backend() == "nvimgcodec-gpu"
    assert stub.made[-1][1] == (("gpu", 1.0),)


def test_a_rejected_jpeg_falls_back_to_the_cpu(stub):
    stub.reject = {1}                       # the second JPEG of the GPU call
    files = _files()
    got = _host(ndd.decoders.image(ndd.batch(files), device="gpu"))
    want = [np.asarray(t) for t in ndd.decoders.image(ndd.batch(files)).tensors]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_gray_and_bgr_ask_the_decoder_for_them(stub):
    files = [_files()[0]]
    for ot, spec in ((ndd.types.GRAY, "gray"), (ndd.types.BGR, "srgb")):
        got = _host(ndd.decoders.image(ndd.batch(files), device="gpu", output_type=ot))
        want = [np.asarray(t) for t in ndd.decoders.image(ndd.batch(files),
                                                           output_type=ot).tensors]
        np.testing.assert_array_equal(got[0], want[0])
        assert stub.calls[-1][1]["color_spec"] == spec


def test_ycbcr_and_corrupt_files_take_the_cpu_path_with_its_errors(stub):
    files = _files()
    got = _host(ndd.decoders.image(ndd.batch(files), device="gpu",
                                   output_type=ndd.types.YCbCr))
    want = [np.asarray(t) for t in ndd.decoders.image(ndd.batch(files),
                                                       output_type=ndd.types.YCbCr).tensors]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert gpu_decode.last_backend() == "cpu+h2d" and not stub.calls
    bad = ndd.batch([files[0], np.frombuffer(b"\xff\xd8\xff\xe0garbage", np.uint8)])
    with pytest.raises(Exception) as cpu_err:
        ndd.decoders.image(bad).evaluate()
    with pytest.raises(Exception) as gpu_err:
        ndd.decoders.image(bad, device="gpu").evaluate()
    assert type(gpu_err.value) is type(cpu_err.value)


def test_region_decoders_decode_their_windows_on_the_gpu(stub):
    files = _files()
    enc = ndd.batch(files)
    kw = dict(crop=(8, 6), crop_pos_x=0.25, crop_pos_y=0.75)
    want = [np.asarray(t) for t in ndd.decoders.image_crop(enc, **kw).tensors]
    got = _host(ndd.decoders.image_crop(enc, device="gpu", **kw))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert stub.calls[-1][0] == 3 and gpu_decode.last_backend() == "nvimgcodec-gpu+cpu"
    want = [np.asarray(t) for t in ndd.decoders.image_random_crop(
        enc, rng=ndd.random.RNG(4)).tensors]
    got = _host(ndd.decoders.image_random_crop(enc, device="gpu", rng=ndd.random.RNG(4)))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_an_exif_rotated_jpeg_is_decoded_by_the_cpu_path(stub):
    from PIL import Image
    rng = np.random.default_rng(2)
    img = rng.integers(0, 256, (12, 20, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = 6                                 # rotate 90 degrees clockwise
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=90, exif=exif.tobytes())
    files = [_files()[0], np.frombuffer(buf.getvalue(), np.uint8)]
    want = [np.asarray(t) for t in ndd.decoders.image(ndd.batch(files)).tensors]
    got = _host(ndd.decoders.image(ndd.batch(files), device="gpu"))
    assert want[1].shape[:2] == (20, 12)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert stub.calls[-1][0] == 1                    # only the upright JPEG went to the GPU
    got = _host(ndd.decoders.image(ndd.batch(files), device="gpu", adjust_orientation=False))
    assert stub.calls[-1][0] == 2 and got[1].shape[:2] == (12, 20)


def test_a_fused_decode_rrc_cmn_sends_its_regions_to_the_gpu_decoder(stub):
    from compiler.pipeline import set_options
    from ndd._evaluate import last_plan
    rng = np.random.default_rng(5)
    files = [_encode(rng.integers(0, 256, s, dtype=np.uint8), "JPEG")
             for s in ((90, 120, 3), (75, 61, 3))] + [_files()[1]]
    enc = ndd.batch(files)
    mirror = ndd.batch([np.int32(v) for v in (1, 0, 1)])

    def train():
        img = ndd.decoders.image(enc, device="gpu")
        img = ndd.random_resized_crop(img, size=(21, 19), rng=ndd.random.RNG(9))
        out = ndd.crop_mirror_normalize(img, mirror=mirror, mean=[100.0] * 3, std=[50.0] * 3)
        return [np.asarray(t) for t in out.cpu().tensors]
    runs = {}
    for fuse in (True, False):
        set_options(disable=() if fuse else ("fuse",))
        try:
            with ndd.EvalMode.deferred:
                runs[fuse] = train()
                ops = [s.node.op for s in last_plan().steps]
        finally:
            set_options(disable=())
        assert (ops[0] == "fused.image") is fuse
    for w, g in zip(runs[False], runs[True]):
        np.testing.assert_array_equal(g, w)
    # the fused run sent the two JPEGs (sub-streams of their boxes) to the GPU decoder in one
    # call, the PNG went to the CPU path
    assert stub.calls[0][0] == 2 and gpu_decode.last_backend() == "nvimgcodec-gpu+cpu"


def test_image_slice_decodes_its_windows_on_the_gpu(stub):
    files = _files()
    enc = ndd.batch(files)
    anchor = ndd.batch([np.array([0.25, 0.1], np.float32)] * 4)
    shape = ndd.batch([np.array([0.5, 0.6], np.float32)] * 4)
    want = [np.asarray(t) for t in ndd.decoders.image_slice(enc, anchor, shape).tensors]
    got = _host(ndd.decoders.image_slice(enc, anchor, shape, device="gpu"))
    assert [g.shape for g in got] == [w.shape for w in want]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert stub.calls[-1][0] == 3 and gpu_decode.last_backend() == "nvimgcodec-gpu+cpu"
    kw = dict(start=[2, 3], end=[8, 9], axis_names="HW")      # absolute window arguments
    want = [np.asarray(t) for t in ndd.decoders.image_slice(enc, **kw).tensors]
    got = _host(ndd.decoders.image_slice(enc, device="gpu", **kw))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert got[0].shape[:2] == (6, 6)
