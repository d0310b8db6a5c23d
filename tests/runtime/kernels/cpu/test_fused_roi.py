"""ROI decode in the fused decode -> random_resized_crop stage: bit-exact with decode-then-resize.

Images are strongly textured (uniform noise, JPEG q=95) so that any source pixel the resize reads
but the ROI decode left out (zero in the canvas) changes the output; windows touch the borders
and corners, filters cover every interpolation type, up- and downscaling.
"""
import io

import numpy as np
import pytest

import ndd
from compiler.ir import make_stage
from runtime.codecs import image as codec
from runtime.kernels.cpu import fused_roi, fused_stages
from runtime.kernels.cpu.resize import resample
from runtime.kernels.params.resize_geometry import resize_output_shape


def _jpeg(h, w, seed, orientation=None):
    from PIL import Image
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    kw = {}
    if orientation is not None:
        exif = Image.Exif()
        exif[0x0112] = orientation
        kw["exif"] = exif.tobytes()
    Image.fromarray(img).save(buf, format="JPEG", quality=95, **kw)
    return np.frombuffer(buf.getvalue(), np.uint8)


@pytest.fixture(scope="module")
def noisy():
    return [_jpeg(97, 131, 0), _jpeg(120, 64, 1, orientation=6), _jpeg(53, 200, 2)]


INTERPS = [
    {}, {"interp_type": "linear", "antialias": False}, {"interp_type": "cubic"},
    {"interp_type": "lanczos3"}, {"interp_type": "gaussian"}, {"interp_type": "triangular"},
    {"interp_type": "nn"}, {"interp_type": "cubic", "antialias": False},
    {"min_filter": "lanczos3", "mag_filter": "nn"}, {"interp_type": ndd.types.INTERP_CUBIC},
]


def _windows(h, w):
    """(y0, x0, wh, ww, out_size): borders, corners, interior; down- and upscaling."""
    return [
        (0, 0, h // 3, w // 3, (16, 16)), (h - h // 3, w - w // 4, h // 3, w // 4, (40, 70)),
        (0, w - 9, h, 9, (30, 5)), (h - 7, 0, 7, w, (3, 50)), (h // 4, w // 4, 11, 13, (60, 64)),
        (1, 2, h - 3, w - 4, (24, 24)), (0, 0, h, w, (h // 2, w // 3)), (5, 7, 2, 3, (9, 9)),
    ]


@pytest.mark.parametrize("interp", INTERPS, ids=lambda d: "-".join(map(str, d.values())) or "default")
def test_roi_resample_is_bit_exact(noisy, interp, monkeypatch):
    monkeypatch.setattr(fused_roi, "ROI_MAX_AREA", 1.0)   # region decode for every window
    for data in noisy:
        full = codec.decode(data)
        h, w = full.shape[:2]
        for y0, x0, wh, ww, size in _windows(h, w):
            params = resize_output_shape((h, w), size=size, roi_start=(y0, x0),
                                         roi_end=(y0 + wh, x0 + ww))
            expected = resample(full, params, layout="HWC", **interp)
            got = fused_roi.roi_resample(data, None, (h, w), params, interp, {}, None)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected, err_msg=f"{interp} {(y0, x0, wh, ww)}")


def test_roi_resample_float_output_and_gray(noisy):
    data = noisy[0]
    full = codec.decode(data, output_type="GRAY")
    params = resize_output_shape(full.shape[:2], size=(20, 30), roi_start=(3, 90),
                                 roi_end=(60, 131))
    expected = resample(full, params, dtype="float32", layout="HWC", interp_type="cubic")
    got = fused_roi.roi_resample(data, None, full.shape[:2], params, {"interp_type": "cubic"},
                             {"output_type": "GRAY"}, "float32")
    assert got.dtype == np.float32 and got.shape == (20, 30, 1)
    np.testing.assert_array_equal(got, expected)


def test_the_images_detect_a_missing_margin(noisy):
    """Sanity check of the test data: dropping the margin (decoding only the window) changes
    the result, so a too-small margin would fail the bit-exactness tests above."""
    data = noisy[0]
    full = codec.decode(data)
    y0, x0, wh, ww = 20, 30, 40, 50
    params = resize_output_shape(full.shape[:2], size=(16, 16), roi_start=(y0, x0),
                                 roi_end=(y0 + wh, x0 + ww))
    canvas = np.zeros_like(full)
    canvas[y0:y0 + wh, x0:x0 + ww] = full[y0:y0 + wh, x0:x0 + ww]
    assert not np.array_equal(resample(canvas, params), resample(full, params))


def test_only_the_region_is_decoded(noisy, monkeypatch):
    seen = []
    real = codec.decode

    def spy(data, *args, roi=None, **kw):
        seen.append(roi)
        return real(data, *args, roi=roi, **kw)
    monkeypatch.setattr(fused_roi, "decode", spy)
    data = noisy[0]
    params = resize_output_shape((97, 131), size=(10, 10), roi_start=(40, 50), roi_end=(60, 80))
    fused_roi.roi_resample(data, None, (97, 131), params, {}, {}, None)
    (y0, x0, y1, x1), = seen
    # linear antialias downscale by 2-3x: margin ceil(3) + 2 = 5 pixels per side
    assert (y0, x0, y1, x1) == (40 - 4, 50 - 5, 60 + 4, 80 + 5)
    seen.clear()   # region over 80% of the image: plain decode
    params = resize_output_shape((97, 131), size=(10, 10), roi_start=(3, 3), roi_end=(94, 128))
    fused_roi.roi_resample(data, None, (97, 131), params, {}, {}, None)
    assert seen == [None]


def test_source_region_clamps_and_scales_margin():
    params = resize_output_shape((100, 200), size=(10, 20), roi_start=(0, 150),
                                 roi_end=(50, 200))
    # window 50 -> 10 rows (scale 5), 50 -> 20 cols (scale 2.5); cubic: factor 2
    assert fused_roi.source_region((100, 200), params, 2) == (0, 150 - 7, 50 + 12, 200)
    params = resize_output_shape((100, 200), size=(80, 80), roi_start=(10, 10),
                                 roi_end=(20, 20))   # upscale: margin factor * 1 + 2
    assert fused_roi.source_region((100, 200), params, 3) == (5, 5, 25, 25)


def _train(b, **interp):
    img = ndd.random_resized_crop(ndd.decoders.image(b), size=(37, 29), **interp)
    flip = ndd.random.coin_flip(batch_size=b.batch_size)
    return ndd.crop_mirror_normalize(img, mirror=flip, mean=[10.0, 20.0, 30.0],
                                     std=[50.0, 60.0, 70.0])


def _rrc(b, **interp):
    return ndd.random_resized_crop(ndd.decoders.image(b), size=(150, 20),
                                   random_area=(0.01, 0.2), **interp)


@pytest.mark.parametrize("fn", [_train, _rrc])
@pytest.mark.parametrize("interp", [{}, {"interp_type": ndd.types.INTERP_LANCZOS3},
                                    {"interp_type": ndd.types.INTERP_NN}])
def test_pipeline_deferred_equals_eager(noisy, fn, interp):
    enc = noisy * 4
    outs = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        ndd.random.set_seed(11)
        with mode:
            out = fn(ndd.as_batch(enc), **interp)
            outs.append([np.asarray(out.tensors[i]) for i in range(out.batch_size)])
    plan = __import__("ndd._evaluate", fromlist=["x"]).last_plan()
    assert "fused.image" in [s.node.op for s in plan.steps]
    for e, d in zip(*outs):
        assert e.dtype == d.dtype and e.shape == d.shape
        np.testing.assert_array_equal(e, d)


def test_chunks_cover_the_batch_in_order(monkeypatch):
    monkeypatch.setattr(fused_stages, "CHUNKS_PER_THREAD", 1)
    assert [list(c) for c in fused_stages.chunks(5, 2)] == [[0, 1], [2, 3, 4]]
    monkeypatch.setattr(fused_stages, "CHUNKS_PER_THREAD", 2)
    for n, t in ((1, 4), (7, 3), (32, 2), (3, 8)):
        parts = fused_stages.chunks(n, t)
        assert [i for c in parts for i in c] == list(range(n))
        assert all(len(c) > 0 for c in parts)


def test_uneven_output_shapes_are_separate_arrays(noisy):
    """decode -> cmn without crop: every sample keeps its own size (no common batch array)."""
    def fn(b):
        return ndd.crop_mirror_normalize(ndd.decoders.image(b), mean=[1.0, 2.0, 3.0],
                                         std=[3.0, 2.0, 1.0], mirror=1)
    outs = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = fn(ndd.as_batch(noisy))
            outs.append([np.asarray(out.tensors[i]) for i in range(out.batch_size)])
    assert [o.shape for o in outs[1]] == [(3, 97, 131), (3, 64, 120), (3, 53, 200)]
    for e, d in zip(*outs):
        np.testing.assert_array_equal(e, d)


# ---------------------------------------------------------------- decode -> resize -> cmn crop
def _val_args(shorter, crop, pos, interp, output_type=None):
    """The kernel arguments of a fused decode -> resize -> cmn node (its Stage records)."""
    decode = {"output_type": output_type} if output_type else {}
    return {"stages": (make_stage("decoders.image", "decode", decode),
                       make_stage("resize", "resize", {"resize_shorter": shorter, **interp}),
                       make_stage("crop_mirror_normalize", "cmn",
                                  {"crop": crop, "crop_pos_y": pos[0], "crop_pos_x": pos[1]}))}


@pytest.mark.parametrize("interp", [{}, {"interp_type": "triangular"},
                                    {"interp_type": "linear", "antialias": False},
                                    {"interp_type": "cubic"}], ids=["linear", "tri", "noaa", "cubic"])
def test_resize_crop_plan_is_bit_exact(noisy, interp, monkeypatch):
    """Region decode + windowed resize of the val chain equal resize-then-crop of the full
    decode; the canvas is filled with noise first, so a pixel read outside the decoded region
    changes the result."""
    monkeypatch.setattr(fused_roi, "ROI_MAX_AREA", 1.0)
    real_canvas = fused_roi.canvas
    rng = np.random.default_rng(5)

    def noisy_canvas(shape, dtype):
        c = real_canvas(shape, dtype)
        c[...] = rng.integers(0, 256, c.shape, dtype=np.uint8)
        return c
    monkeypatch.setattr(fused_roi, "canvas", noisy_canvas)
    used = 0
    for data in noisy:
        full = codec.decode(data)
        for shorter, crop in ((40, (30, 30)), (23, (11, 17)), (90, (50, 60)), (150, (20, 140))):
            for pos in ((0.5, 0.5), (0.0, 1.0), (1.0, 0.0), (0.3, 0.8)):
                a = _val_args(shorter, crop, pos, interp)
                plan = fused_roi.resize_crop_plan(data, None, a)
                params = resize_output_shape(full.shape[:2], resize_shorter=shorter)
                if crop[0] > params.out_h or crop[1] > params.out_w:
                    assert plan is None        # crop outside the resized image: no plan
                    continue
                (todo, finish) = plan
                used += finish[1] is not None
                part = codec.decode(todo[0], roi=todo[1], **todo[3])
                got, window = fused_roi.resize_crop_finish(part, *finish[1:])
                resized = resample(full, params, layout="HWC", **interp)
                y0, x0, h, w = finish[4]
                assert window == (0, 0, h, w) and (h, w) == crop
                np.testing.assert_array_equal(got, resized[y0:y0 + h, x0:x0 + w],
                                              err_msg=f"{shorter} {crop} {pos}")
    # most tent cases decode a region; cubic reads whole windows (always the full image)
    assert used > 10 if interp.get("interp_type") != "cubic" else used == 0


def test_resize_crop_region_only_for_uint8_tent_filters(noisy):
    a = _val_args(40, (30, 30), (0.5, 0.5), {"interp_type": "cubic"})
    assert fused_roi.resize_crop_plan(noisy[0], None, a)[1][1] is None     # cubic: whole image
    a = _val_args(40, (30, 30), (0.5, 0.5), {}, output_type="GRAY")
    assert fused_roi.resize_crop_plan(noisy[0], None, a)[1][1] is None     # 1 channel


def test_fused_resize_takes_a_scalar_max_size(noisy):
    """DALI applies a single ``max_size`` to both axes; the fused chain must accept it too."""
    enc = ndd.batch([noisy[0], noisy[2]])

    def body():
        x = ndd.resize(ndd.decoders.image(enc), size=(77, 0), mode="not_larger", max_size=90)
        return ndd.crop_mirror_normalize(x, mean=[0, 0, 0], std=[1, 1, 1])
    eager = [np.asarray(s) for s in body().tensors]
    with ndd.EvalMode.deferred:
        deferred = [np.asarray(s) for s in body().tensors]
    # 97x131 and 53x200 inputs: H 77 would make W > 90, so W = 90 and H = round(H * 90 / W)
    assert [e.shape[1:] for e in eager] == [(67, 90), (24, 90)]
    for e, d in zip(eager, deferred):
        np.testing.assert_array_equal(e, d)


def test_resize_window_past_the_image_then_crop(noisy):
    """An absolute resize ROI reaching past the image reads its edge lines: the fused chain
    must decode them (the region is clamped into the image, never empty)."""
    enc = ndd.batch([noisy[1]])           # 120x64 stored, rotated to 64x120

    def body():
        x = ndd.resize(ndd.decoders.image(enc), resize_x=77, roi_start=(10, 5),
                       roi_end=(100, 150))
        return ndd.crop_mirror_normalize(x, crop=(8, 8), crop_pos_x=1.0, crop_pos_y=1.0)
    eager = np.asarray(body().tensors[0])
    with ndd.EvalMode.deferred:
        deferred = np.asarray(body().tensors[0])
    np.testing.assert_array_equal(eager, deferred)
    assert fused_roi.source_region((20, 30), resize_output_shape(
        (20, 30), size=(4, 4), roi_start=(25, 40), roi_end=(35, 50)), 1) == (19, 29, 20, 30)
