"""The plain-JPEG route of fused decode -> random_resized_crop (codecs.image.plain_jpeg /
decode_plain, fused_roi.rrc_plan_plain): the samples it takes give exactly what the generic
route (parse_image -> rrc_plan -> decode) gives, every other file is left to the generic route,
and a codec failure on the plain route falls back to it."""
import io

import numpy as np
import pytest
from PIL import Image

import ndd
from runtime.codecs import image as codec
from runtime.kernels.cpu import fused as fused_kernel
from runtime.kernels.cpu import fused_stages
from runtime.kernels.cpu.fused_stages import batch_plan, run_chunk
from runtime.kernels.registry import KernelContext

from .test_fused_stages import _run


def _enc(img, fmt="JPEG", **kw):
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return np.frombuffer(buf.getvalue(), np.uint8)


def _photo(h, w, seed):
    rng = np.random.default_rng(seed)
    smooth = np.cumsum(rng.integers(-6, 7, (h, w, 3)), axis=1) % 256
    return Image.fromarray(smooth.astype(np.uint8))


def _exif(orientation):
    ex = Image.Exif()
    ex[0x0112] = orientation
    return ex.tobytes()


@pytest.fixture(scope="module")
def plain_files():
    return [_enc(_photo(97, 131, 0), quality=92), _enc(_photo(64, 48, 1), subsampling=0),
            _enc(_photo(120, 90, 2), progressive=True), _enc(_photo(70, 70, 3).convert("L")),
            _enc(_photo(33, 200, 4), quality=75, subsampling=1),
            _enc(_photo(81, 77, 5), exif=_exif(1))]


@pytest.fixture(scope="module")
def other_files():
    """Files the plain route must leave to the generic one."""
    ok = _enc(_photo(50, 60, 9)).tobytes()
    return {"rotated": _enc(_photo(90, 60, 6), exif=_exif(6)),
            "mirrored": _enc(_photo(40, 70, 7), exif=_exif(2)),
            "cmyk": _enc(_photo(60, 80, 8).convert("CMYK")),
            "png": _enc(_photo(50, 60, 9), "PNG"),
            "no_eoi": np.frombuffer(ok[:-2], np.uint8),
            "bytes": ok}


def test_plain_jpeg_takes_only_plain_files(plain_files, other_files):
    for data in plain_files:
        got = codec.plain_jpeg(data)
        assert got is not None
        info = codec.image_info(data)
        assert got[1:] == (info.height, info.width)
    for name, data in other_files.items():
        assert codec.plain_jpeg(data) is None, name


def test_plain_decode_args():
    assert codec.plain_decode_args()
    assert codec.plain_decode_args(output_type=ndd.types.RGB, dtype="uint8",
                                   adjust_orientation=False)
    assert not codec.plain_decode_args(output_type="BGR")
    assert not codec.plain_decode_args(dtype="float32")
    assert not codec.plain_decode_args(output_type="nonsense")


def test_decode_plain_equals_decode(plain_files):
    for data in plain_files:
        stream, h, w = codec.plain_jpeg(data)
        rois = [None, (0, 0, h, w), (0, 0, 1, 1), (h - 5, w - 7, h, w), (h // 3, 2, h // 2, w - 3)]
        for roi in rois:
            for ao in (True, False):
                want = codec.decode(data, roi=roi, adjust_orientation=ao)
                got = codec.decode_plain(stream, roi, (h, w))
                assert got.dtype == np.uint8 and got.flags.c_contiguous
                np.testing.assert_array_equal(got, want)


def rrc_mirror(b):
    img = ndd.random_resized_crop(ndd.decoders.image(b), size=(24, 20))
    flip = ndd.random.coin_flip(batch_size=b.batch_size)
    return ndd.crop_mirror_normalize(img, mirror=flip, mean=[10.0, 20.0, 30.0],
                                     std=[50.0, 60.0, 70.0])


def _batch(plain_files, other_files):
    others = [v for k, v in other_files.items() if k not in ("no_eoi", "bytes")]
    return [plain_files[0], others[0], *plain_files[1:3], *others[1:], *plain_files[3:]]


def _recorded(files):
    calls = []
    fused_kernel.set_recorder(lambda ctx, inputs, args: calls.append((ctx, inputs, args)))
    try:
        _run(rrc_mirror, ndd.EvalMode.deferred, files)
    finally:
        fused_kernel.set_recorder(None)
    (ctx, inputs, args), = calls
    ctx = KernelContext(None, ctx.in_metas, ctx.out_metas, ctx.tensor_arg_names,
                        ctx.batch_size, ctx.op)
    return ctx, inputs, args


def test_fused_rrc_with_plain_route_equals_unfused(plain_files, other_files):
    files = _batch(plain_files, other_files)
    unfused, _ = _run(rrc_mirror, ndd.EvalMode.deferred, files, disable={"fuse"})
    fused, plan = _run(rrc_mirror, ndd.EvalMode.deferred, files)
    assert "fused.image" in [s.node.op for s in plan.steps]
    for u, f in zip(unfused, fused):
        assert u.shape == f.shape
        np.testing.assert_array_equal(u, f)
    ctx, inputs, args = _recorded(files)
    assert batch_plan(args).plain is not None       # the route was taken
    generic = batch_plan(args)
    generic.plain = None
    n = ctx.batch_size
    for got, want in zip(run_chunk(ctx, inputs, args, range(n), None, generic), unfused):
        np.testing.assert_array_equal(got, want)


def test_codec_failure_on_the_plain_route_falls_back(plain_files, other_files, monkeypatch):
    files = _batch(plain_files, other_files)
    unfused, _ = _run(rrc_mirror, ndd.EvalMode.deferred, files, disable={"fuse"})
    ctx, inputs, args = _recorded(files)
    tried = []

    def failing(stream, roi, hw):
        tried.append(hw)
        return None
    monkeypatch.setattr(fused_stages, "decode_plain", failing)
    got = run_chunk(ctx, inputs, args, [5, 0, 2], None, batch_plan(args))
    assert len(tried) == 2          # samples 0 and 2 are plain, 5 is not
    for g, i in zip(got, [5, 0, 2]):
        np.testing.assert_array_equal(g, unfused[i])


def _generic_plan(data, ra, dec, interp, seeds, i):
    from runtime.kernels.cpu.fused_roi import rrc_plan
    return rrc_plan(data, None, {"_seeds": seeds}, i, (ra, dec, interp))


@pytest.mark.parametrize("seeds_kind", ["ints", "numpy"])
def test_batch_planner_equals_rrc_plan(plain_files, seeds_kind):
    # PlainRRC (what a batch shares made once) gives rrc_plan's window, resize parameters
    # and region for every sample: sizes, areas, aspect ratios and filters varied
    from runtime.kernels.cpu.fused_roi import PlainRRC
    rng = np.random.default_rng(11)
    checked = 0
    for trial in range(40):
        n = 16
        seeds = tuple(int(s) for s in rng.integers(0, 2 ** 63, n)) if seeds_kind == "ints" \
            else tuple(np.uint64(s) for s in rng.integers(0, 2 ** 63, n))
        lo = float(rng.choice([0.01, 0.08, 0.5, 1.0]))
        ra = {"size": (float(rng.integers(1, 300)), int(rng.integers(1, 300))),
              "random_area": (lo, 1.0), "num_attempts": int(rng.integers(1, 12)),
              "random_aspect_ratio": (float(rng.choice([0.2, 0.75, 1.0])),
                                      float(rng.choice([1.0, 4 / 3, 5.0])))}
        interp = {} if trial % 3 else {"interp_type": "cubic", "antialias": False}
        dec = {}
        planner = PlainRRC((ra, dec, interp), seeds)
        for i in range(n):
            data = plain_files[i % len(plain_files)]
            got = planner.plan(data, i)
            (src, region, _, _), finish = _generic_plan(data, ra, dec, interp, seeds, i)
            assert got[0].region == region and got[0].hw == finish[1]
            assert got[1] == finish
            checked += 1
    assert checked == 640
