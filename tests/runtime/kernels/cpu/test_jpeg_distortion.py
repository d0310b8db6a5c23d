"""jpeg_compression_distortion: the round trip's properties, DALI 2.4 oracle cases (bit-exact),
front end, errors."""
from __future__ import annotations

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.jpeg_distortion import jpeg_round_trip

RNG = np.random.default_rng(5)


def _smooth(h, w, rng=RNG):
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([128 + 100 * np.sin(x / 7.0), 128 + 90 * np.cos(y / 5.0),
                     128 + 60 * np.sin((x + y) / 9.0)], -1)
    return (base + rng.normal(0, 4, base.shape)).clip(0, 255).astype(np.uint8)


def test_quality_orders_the_error_and_is_clamped():
    img = _smooth(48, 64)
    errs = [np.abs(jpeg_round_trip(img, q).astype(int) - img).mean() for q in (5, 30, 95)]
    assert errs[0] > errs[1] > errs[2] > 0
    np.testing.assert_array_equal(jpeg_round_trip(img, -3), jpeg_round_trip(img, 1))
    np.testing.assert_array_equal(jpeg_round_trip(img, 400), jpeg_round_trip(img, 100))
    # deterministic, and 8x8 blocks: a flat image stays (nearly) flat
    np.testing.assert_array_equal(jpeg_round_trip(img, 50), jpeg_round_trip(img, 50))
    flat = np.full((16, 16, 3), 90, np.uint8)
    assert np.abs(jpeg_round_trip(flat, 10).astype(int) - 90).max() <= 2


def test_errors():
    with pytest.raises(ValueError, match="3 channels"):
        jpeg_round_trip(np.zeros((8, 8, 1), np.uint8))
    with pytest.raises(ValueError, match="uint8"):
        jpeg_round_trip(np.zeros((8, 8, 3), np.float32))


def test_front_end_per_sample_quality_and_sequences():
    imgs = [_smooth(20, 30), _smooth(9, 13)]
    with ndd.EvalMode.sync_cpu:
        out = ndd.jpeg_compression_distortion(
            ndd.as_batch(imgs, layout="HWC"),
            quality=ndd.as_batch([np.array(10, np.int32), np.array(90, np.int32)]))
    for i, q in enumerate((10, 90)):
        np.testing.assert_array_equal(np.asarray(out.select(i)), jpeg_round_trip(imgs[i], q))
    seq = ndd.jpeg_compression_distortion(ndd.as_batch([np.stack([imgs[0]] * 2)],
                                                       layout="FHWC"), quality=40)
    np.testing.assert_array_equal(np.asarray(seq.select(0))[1], jpeg_round_trip(imgs[0], 40))
    with pytest.raises(Exception, match="uint8"):
        ndd.jpeg_compression_distortion(ndd.as_batch([imgs[0].astype(np.float32)],
                                                     layout="HWC")).evaluate()


@pytest.mark.oracle
@pytest.mark.parametrize("quality", [0, 1, 7, 25, 50, 75, 93, 100, 150])
def test_matches_dali(quality):
    dali = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rng = np.random.default_rng(quality)
    imgs = [_smooth(37, 53, rng), rng.integers(0, 256, (7, 5, 3), dtype=np.uint8),
            _smooth(64, 16, rng), rng.integers(0, 256, (1, 1, 3), dtype=np.uint8)]
    want = dali.jpeg_compression_distortion(dali.as_batch(imgs, layout="HWC"),
                                            quality=quality).evaluate()
    got = ndd.jpeg_compression_distortion(ndd.as_batch(imgs, layout="HWC"), quality=quality)
    for i in range(len(imgs)):
        np.testing.assert_array_equal(np.asarray(got.select(i)), np.asarray(want.select(i)))


@pytest.mark.parametrize("h,w,q", [(1, 1, 50), (7, 5, 1), (17, 33, 90), (16, 9, 100),
                                   (31, 200, 30)])
def test_decoder_gives_pillows_pixels(h, w, q):
    """The round trip decodes with nvImageCodec where it can: the same pixels as Pillow's own
    decoder (libjpeg-turbo both), odd sizes included (4:2:0 edges)."""
    import io

    from PIL import Image

    from runtime.kernels.cpu.jpeg_distortion import jpeg_decode, jpeg_encode
    img = np.ascontiguousarray(RNG.integers(0, 256, (h, w, 3), dtype=np.uint8))
    data = jpeg_encode(img, q)
    with Image.open(io.BytesIO(data)) as im:
        want = np.asarray(im.convert("RGB"))
    got = jpeg_decode(data)
    assert got.shape == (h, w, 3) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("h,w", [(1, 1), (7, 5), (17, 33), (16, 9), (40, 31)])
def test_round_trip_gives_pillows_round_trip(h, w):
    """OpenCV's encode + decode (what ndd runs) against Pillow's (libjpeg-turbo through another
    binding: 4:2:0, the scaled standard tables), qualities across the range, odd sizes."""
    import io

    from PIL import Image
    img = _smooth(h, w)
    for q in (1, 2, 13, 50, 77, 94, 100):
        buf = io.BytesIO()
        Image.fromarray(img, "RGB").save(buf, format="JPEG", quality=q)
        with Image.open(io.BytesIO(buf.getvalue())) as im:
            want = np.asarray(im.convert("RGB"))
        np.testing.assert_array_equal(jpeg_round_trip(img, q), want, err_msg=f"q={q}")
