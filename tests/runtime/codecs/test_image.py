"""Tests of runtime.codecs (CPU image decoding).

Fixtures are generated at run time with Pillow from scikit-image's bundled photos; references
are Pillow decodes (libjpeg-turbo, libpng, libwebp: bit-exact with nvImageCodec here), numpy
formulas, and DALI 2.4 under ``@pytest.mark.oracle``.
"""

import io
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image, ImageOps

skdata = pytest.importorskip("skimage.data")

from runtime.codecs import DecodeError, decode, image_info, peek_shape  # noqa: E402


def _encode(img, fmt, **kw):
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def _exif(orientation):
    ex = Image.Exif()
    ex[0x0112] = orientation
    return ex.tobytes()


@pytest.fixture(scope="module")
def files():
    chel = skdata.chelsea()  # 300x451 RGB photo
    ast = skdata.astronaut()[:200, :300]
    coffee = skdata.coffee()  # 400x600
    im = Image.fromarray(chel)
    alpha = np.broadcast_to((np.arange(chel.shape[1]) % 256).astype(np.uint8), chel.shape[:2])
    rgba = Image.fromarray(np.dstack([chel, alpha]), "RGBA")
    pal = im.convert("P", palette=Image.ADAPTIVE, colors=64)
    g16 = chel[..., 1].astype(np.uint16) * 257 + (np.arange(chel.shape[1]) % 257).astype(np.uint16)
    f = {
        "base.jpg": _encode(im, "JPEG", quality=90),
        "prog.jpg": _encode(im, "JPEG", quality=90, progressive=True),
        "s444.jpg": _encode(im, "JPEG", quality=90, subsampling=0),
        "s422.jpg": _encode(im, "JPEG", quality=90, subsampling=1),
        "s420.jpg": _encode(im, "JPEG", quality=90, subsampling=2),
        "gray.jpg": _encode(im.convert("L"), "JPEG"),
        "cmyk.jpg": _encode(im.convert("CMYK"), "JPEG"),
        "rgb.png": _encode(im, "PNG"),
        "rgba.png": _encode(rgba, "PNG"),
        "gray.png": _encode(im.convert("L"), "PNG"),
        "la.png": _encode(Image.fromarray(np.dstack([chel[..., 0], alpha]), "LA"), "PNG"),
        "pal.png": _encode(pal, "PNG"),
        "palt.png": _encode(pal, "PNG", transparency=5),
        "g16.png": _encode(Image.fromarray(g16), "PNG"),
        "x.bmp": _encode(im, "BMP"),
        "x.tif": _encode(im, "TIFF"),
        "lossy.webp": _encode(im, "WEBP", quality=80),
        "lossless.webp": _encode(im, "WEBP", lossless=True),
        "x.gif": _encode(pal, "GIF"),
        "1x1.jpg": _encode(Image.new("RGB", (1, 1), (10, 200, 30)), "JPEG"),
        "1x1.png": _encode(Image.new("RGB", (1, 1), (10, 200, 30)), "PNG"),
        "odd.jpg": _encode(Image.fromarray(coffee[:3, :517]), "JPEG"),
        "odd.png": _encode(Image.fromarray(coffee[:3, :517]), "PNG"),
    }
    for o in range(1, 9):
        f[f"o{o}.jpg"] = _encode(Image.fromarray(ast), "JPEG", quality=95, exif=_exif(o))
        f[f"o{o}.png"] = _encode(Image.fromarray(ast), "PNG", exif=_exif(o))
    f["g16.raw"] = g16
    return f


def _buf(b):
    return np.frombuffer(b, dtype=np.uint8)


def _pil(b, mode=None, transpose=True):
    img = Image.open(io.BytesIO(b))
    if transpose:
        img = ImageOps.exif_transpose(img)
    if mode is not None:
        img = img.convert(mode)
    a = np.asarray(img)
    return a[:, :, None] if a.ndim == 2 else a


# EXIF orientation -> numpy transform of the stored image (EXIF 2.3 definitions).
_ORIENT = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1],
    5: lambda a: a.transpose(1, 0, 2),
    6: lambda a: np.rot90(a, -1),
    7: lambda a: a[::-1, ::-1].transpose(1, 0, 2),
    8: lambda a: np.rot90(a, 1),
}

COLOR_FILES = ["base.jpg", "prog.jpg", "s444.jpg", "s422.jpg", "s420.jpg", "cmyk.jpg",
               "rgb.png", "rgba.png", "pal.png", "palt.png", "x.bmp", "x.tif", "lossy.webp",
               "lossless.webp", "x.gif", "1x1.jpg", "1x1.png", "odd.jpg", "odd.png"]


@pytest.mark.parametrize("name", COLOR_FILES)
def test_rgb_matches_pillow(files, name):
    out = decode(_buf(files[name]))
    ref = _pil(files[name], "RGB")
    assert out.dtype == np.uint8 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("mode", ["LA", "PA"])
def test_tiff_with_an_alpha_sample_matches_pillow(mode):
    """Gray+alpha and palette+alpha TIFFs: nvImageCodec's TIFF plug-in reads them as three
    samples a pixel (garbage), so they are decoded by Pillow."""
    img = Image.fromarray(skdata.chelsea()[:60, :80]).convert(mode)
    data = _encode(img, "TIFF")
    np.testing.assert_array_equal(decode(data), _pil(data, "RGB"))
    np.testing.assert_array_equal(decode(data, "BGR"), _pil(data, "RGB")[..., ::-1])
    any_data = decode(data, "ANY_DATA")
    assert any_data.shape == peek_shape(data, image_type="ANY_DATA")
    np.testing.assert_array_equal(any_data, _pil(data, "LA" if mode == "LA" else "RGB"))


def test_accepts_bytes_and_odd_shapes(files):
    assert decode(files["odd.jpg"]).shape == (3, 517, 3)
    np.testing.assert_array_equal(decode(files["1x1.png"]), [[[10, 200, 30]]])


@pytest.mark.parametrize("name,channels,mode", [
    ("rgb.png", 3, "RGB"), ("rgba.png", 4, "RGBA"), ("gray.png", 1, "L"), ("la.png", 2, "LA"),
    ("pal.png", 3, "RGB"), ("palt.png", 3, "RGB"), ("gray.jpg", 1, "L"), ("base.jpg", 3, "RGB"),
    ("lossless.webp", 3, "RGB"), ("x.gif", 3, "RGB")])
def test_any_data_keeps_file_channels(files, name, channels, mode):
    out = decode(_buf(files[name]), "ANY_DATA")
    assert out.shape[2] == channels
    np.testing.assert_array_equal(out, _pil(files[name], mode))


def test_cmyk_any_data_is_rgb(files):
    np.testing.assert_array_equal(decode(files["cmyk.jpg"], "ANY_DATA"),
                                  _pil(files["cmyk.jpg"], "RGB"))


@pytest.mark.parametrize("name", ["gray.png", "gray.jpg"])
def test_gray_of_gray_file(files, name):
    np.testing.assert_array_equal(decode(files[name], "GRAY"), _pil(files[name], "L"))


def test_gray_of_color_is_full_range_luma(files):
    rgb = decode(files["x.bmp"]).astype(np.float64)
    gray = decode(files["x.bmp"], "GRAY")[..., 0].astype(np.float64)
    luma = rgb @ [0.299, 0.587, 0.114]
    assert gray.shape == luma.shape and np.abs(gray - luma).max() <= 0.51


@pytest.mark.parametrize("name", ["base.jpg", "rgb.png", "x.gif", "la.png"])
def test_bgr_and_ycbcr(files, name):
    rgb = decode(files[name])
    np.testing.assert_array_equal(decode(files[name], "BGR"), rgb[..., ::-1])
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    ref = np.stack([16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
                    128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255,
                    128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255], axis=-1)
    ycc = decode(files[name], "YCbCr")
    assert ycc.shape == rgb.shape
    assert np.abs(ycc - ref).max() <= 0.5 + 1e-4


def test_sixteen_bit_png(files):
    raw = files["g16.raw"].astype(np.int64)
    u8 = decode(files["g16.png"], "GRAY")[..., 0]
    np.testing.assert_array_equal(u8, np.floor(raw / 257 + 0.5))
    assert not np.array_equal(u8, raw >> 8)  # the fixture does tell the two roundings apart
    np.testing.assert_array_equal(decode(files["g16.png"], "ANY_DATA", dtype="uint16")[..., 0], raw)
    rgb = decode(files["g16.png"], "RGB", dtype="float32")
    np.testing.assert_allclose(rgb, np.repeat((raw / 65535.0)[..., None], 3, 2), atol=1e-6)


def test_dtypes_rescale(files):
    u8 = decode(files["base.jpg"])
    np.testing.assert_array_equal(decode(files["base.jpg"], dtype="uint16"), u8.astype(np.uint16) * 257)
    f = decode(files["base.jpg"], dtype=np.float32)
    assert f.dtype == np.float32
    np.testing.assert_allclose(f, u8 / 255.0, atol=1e-7)


@pytest.mark.parametrize("o", range(1, 9))
def test_exif_orientation(files, o):
    stored = _pil(files[f"o{o}.jpg"], transpose=False)
    out = decode(files[f"o{o}.jpg"])
    np.testing.assert_array_equal(out, _ORIENT[o](stored))
    np.testing.assert_array_equal(decode(files[f"o{o}.png"]), _pil(files[f"o{o}.png"]))
    np.testing.assert_array_equal(decode(files[f"o{o}.png"]), _ORIENT[o](_pil(files[f"o{o}.png"], transpose=False)))
    np.testing.assert_array_equal(decode(files[f"o{o}.jpg"], adjust_orientation=False), stored)
    info = image_info(files[f"o{o}.jpg"])
    assert info.orientation == o and info.format == "jpeg"
    assert (info.height, info.width) == out.shape[:2]
    assert peek_shape(files[f"o{o}.png"]) == out.shape
    assert image_info(files[f"o{o}.png"]).orientation == o


ROIS = [(0, 0, 10, 10), (13, 17, 101, 97), (5, 3, -7, -1), (1, 2, -0, -0), (7, 0, 8, -0)]


@pytest.mark.parametrize("name", ["base.jpg", "s422.jpg", "prog.jpg", "rgb.png", "o2.jpg",
                                  "o3.jpg", "o4.jpg", "o5.jpg", "o6.jpg", "o7.jpg", "o8.jpg",
                                  "o7.png", "lossy.webp", "x.gif", "la.png"])
@pytest.mark.parametrize("output_type", ["RGB", "GRAY", "ANY_DATA"])
def test_roi_equals_decode_then_crop(files, name, output_type):
    full = decode(files[name], output_type)
    h, w = full.shape[:2]
    for y0, x0, y1, x1 in ROIS:
        y1, x1 = (y1 if y1 > 0 else h + y1), (x1 if x1 > 0 else w + x1)
        out = decode(files[name], output_type, roi=(y0, x0, y1, x1))
        assert out.flags.c_contiguous
        np.testing.assert_array_equal(out, full[y0:y1, x0:x1])


def test_roi_errors(files):
    with pytest.raises(ValueError, match=r"roi .*y1=201.*\(H=200, W=300\)"):
        decode(files["o1.jpg"], roi=(0, 0, 201, 10))
    with pytest.raises(ValueError, match="H=300, W=200"):  # oriented shape of o6
        decode(files["o6.jpg"], roi=(0, 0, 10, 201))
    with pytest.raises(ValueError, match="empty or outside"):
        decode(files["o1.jpg"], roi=(5, 5, 5, 9))
    with pytest.raises(TypeError, match="roi must be"):
        decode(files["o1.jpg"], roi=(0, 0, 1.5, 3))


def test_argument_errors(files):
    with pytest.raises(ValueError, match="output_type .* got 'XYZ'"):
        decode(files["base.jpg"], "XYZ")
    with pytest.raises(ValueError, match="dtype .* got 'int64'"):
        decode(files["base.jpg"], dtype="int64")
    with pytest.raises(TypeError, match="got list"):
        decode([1, 2, 3])
    with pytest.raises(TypeError, match="1-D"):
        decode(np.zeros((2, 2), np.uint8))


def test_bad_data_errors(files):
    jpg = files["base.jpg"]
    for caught_as in (ValueError, RuntimeError):   # RuntimeError: what DALI 2.4's decoders raise
        with pytest.raises(caught_as, match="empty input"):
            decode(b"")
    with pytest.raises(DecodeError, match=r"^sample 3 \('a.jpg'\): empty input \(0 bytes\)$"):
        decode(b"", sample="sample 3 ('a.jpg')")
    with pytest.raises(DecodeError, match=r"^s1: truncated JPEG"):
        decode(jpg[: len(jpg) // 2], sample="s1")
    with pytest.raises(DecodeError, match="JPEG header"):
        decode(jpg[:100])
    with pytest.raises(DecodeError, match=r"not a recognised image format \(first bytes: 3c 68 74 6d\)"):
        decode(b"<html><body>hello</body></html>\n")
    garbage = np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8)
    garbage[:2] = (0x5F, 0x82)
    with pytest.raises(DecodeError, match="first bytes: 5f 82"):
        decode(garbage)
    with pytest.raises(DecodeError, match="empty input"):
        peek_shape(np.zeros(0, np.uint8))
    assert issubclass(DecodeError, ValueError)


def test_peek_shape_and_info(files):
    assert peek_shape(files["gray.png"]) == (300, 451, 3)  # DALI: image_type RGB by default
    assert peek_shape(files["gray.png"], image_type="ANY_DATA") == (300, 451, 1)
    assert peek_shape(files["rgba.png"], image_type="ANY_DATA") == (300, 451, 4)
    assert peek_shape(files["o8.jpg"], image_type="GRAY") == (300, 200, 1)
    assert peek_shape(files["o8.jpg"], adjust_orientation=False) == (200, 300, 3)
    half = files["base.jpg"][: len(files["base.jpg"]) // 2]
    assert peek_shape(half) == (300, 451, 3)  # the header is intact
    for name, fmt, c, depth in [("g16.png", "png", 1, 16), ("la.png", "png", 2, 8),
                                ("cmyk.jpg", "jpeg", 4, 8), ("lossy.webp", "webp", 3, 8),
                                ("x.tif", "tiff", 3, 8), ("x.bmp", "bmp", 3, 8),
                                ("x.gif", "gif", 3, 8)]:
        info = image_info(files[name])
        assert (info.height, info.width, info.channels, info.format, info.bit_depth,
                info.orientation) == (300, 451, c, fmt, depth, 1), name


def test_threads_each_get_a_decoder(files):
    names = ["base.jpg", "prog.jpg", "rgb.png", "o6.jpg", "lossy.webp", "x.tif"] * 4
    expected = [decode(files[n]) for n in names]
    from runtime.codecs import nvimgcodec_backend as nvb
    decoders = set()

    def work(n):
        out = decode(files[n])
        decoders.add((threading.get_ident(), id(nvb._local.decoder)))
        return out

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(work, names))
    for a, b in zip(results, expected):
        np.testing.assert_array_equal(a, b)
    assert len({d for _, d in decoders}) == len({t for t, _ in decoders})


# --------------------------------------------------------------------------- DALI oracle

ORACLE_FILES = ["base.jpg", "prog.jpg", "s444.jpg", "s422.jpg", "s420.jpg", "gray.jpg",
                "cmyk.jpg", "rgb.png", "rgba.png", "gray.png", "la.png", "pal.png", "palt.png",
                "g16.png", "x.bmp", "x.tif", "lossy.webp", "lossless.webp", "1x1.jpg",
                "odd.jpg", "odd.png"] + [f"o{o}.{e}" for o in range(2, 9) for e in ("jpg", "png")]
# DALI 2.4 fails on gray+alpha and CMYK with ANY_DATA, and gray JPEG + ANY_DATA can crash it.
ANY_DATA_SKIP = {"la.png", "cmyk.jpg", "gray.jpg"}


@pytest.fixture(scope="module")
def dali():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as ndd
    import nvidia.dali.types as types
    return ndd, types


def _dali_batch(dali, names, files, op="image", **kw):
    ndd, types = dali
    batch = ndd.as_batch([_buf(files[n]) for n in names])
    fn = getattr(ndd.decoders, op) if op != "peek" else ndd.peek_image_shape
    out = fn(batch, device="cpu", **kw) if op != "peek" else fn(batch, **kw)
    return [np.asarray(t) for t in out.tensors]


@pytest.mark.oracle
@pytest.mark.parametrize("output_type", ["RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA"])
def test_oracle_decode(files, dali, output_type):
    names = [n for n in ORACLE_FILES if not (output_type == "ANY_DATA" and n in ANY_DATA_SKIP)]
    ref = _dali_batch(dali, names, files, output_type=getattr(dali[1], output_type))
    for name, r in zip(names, ref):
        out = decode(files[name], output_type)
        assert out.shape == r.shape and out.dtype == r.dtype, name
        if output_type in ("GRAY", "YCbCr") and name == "cmyk.jpg":
            # DALI converts CMYK to gray/YCbCr by its own route; see docs/semantics.md.
            assert np.abs(out.astype(int) - r).max() <= 1, name
            continue
        np.testing.assert_array_equal(out, r, err_msg=name)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["uint16", "float32"])
def test_oracle_dtype(files, dali, dtype):
    names = ["base.jpg", "g16.png", "rgb.png"]
    dt = {"uint16": dali[1].UINT16, "float32": dali[1].FLOAT}[dtype]
    for name, r in zip(names, _dali_batch(dali, names, files, dtype=dt)):
        out = decode(files[name], dtype=dtype)
        assert out.dtype == r.dtype, name
        np.testing.assert_array_equal(out, r, err_msg=name)      # bit for bit, float32 too


@pytest.mark.oracle
def test_oracle_peek_shape(files, dali):
    names = ["base.jpg", "gray.png", "rgba.png", "o6.jpg", "o5.png", "odd.jpg", "g16.png"]
    for name, r in zip(names, _dali_batch(dali, names, files, op="peek")):
        assert peek_shape(files[name]) == tuple(int(v) for v in r), name


@pytest.mark.oracle
def test_oracle_image_slice_and_crop(files, dali):
    names = ["base.jpg", "o6.jpg", "rgb.png", "s422.jpg"]
    # image_slice with absolute anchor/shape in (x, y) order (axes "WH").
    for start, shape in [((17, 13), (80, 88)), ((0, 0), (200, 150)), ((101, 33), (99, 120))]:
        refs = _dali_batch(dali, names, files, op="image_slice", start=list(start),
                           shape=list(shape), normalized_anchor=False, normalized_shape=False)
        for name, r in zip(names, refs):
            x0, y0 = start
            w, h = shape
            np.testing.assert_array_equal(decode(files[name], roi=(y0, x0, y0 + h, x0 + w)), r,
                                          err_msg=name)
    # image_crop centred window: anchor = round((size - crop) * 0.5), half away from zero.
    refs = _dali_batch(dali, names, files, op="image_crop", crop=(101, 77))
    for name, r in zip(names, refs):
        h, w = peek_shape(files[name])[:2]
        y0 = int(np.floor((h - 101) * 0.5 + 0.5))
        x0 = int(np.floor((w - 77) * 0.5 + 0.5))
        np.testing.assert_array_equal(decode(files[name], roi=(y0, x0, y0 + 101, x0 + 77)), r,
                                      err_msg=name)


@pytest.mark.parametrize("o", range(1, 9))
def test_stored_box_maps_an_upright_box_back(o):
    from runtime.codecs.exif import apply_orientation, oriented_copy, stored_box
    rng = np.random.default_rng(o)
    stored = rng.integers(0, 256, (13, 17, 3), dtype=np.uint8)
    upright = apply_orientation(stored, o)
    np.testing.assert_array_equal(oriented_copy(stored, o), upright)
    assert oriented_copy(stored, o).flags.c_contiguous
    np.testing.assert_array_equal(oriented_copy(stored[..., :1].copy(), o), upright[..., :1])
    np.testing.assert_array_equal(oriented_copy(stored.astype(np.uint16), o), upright)
    h, w = upright.shape[:2]
    for _ in range(20):
        y0, y1 = sorted(rng.choice(h + 1, 2, replace=False))
        x0, x1 = sorted(rng.choice(w + 1, 2, replace=False))
        sy0, sx0, sy1, sx1 = stored_box((y0, x0, y1, x1), o, stored.shape[:2])
        np.testing.assert_array_equal(apply_orientation(stored[sy0:sy1, sx0:sx1], o),
                                      upright[y0:y1, x0:x1])


def _app1(tiff: bytes) -> bytes:
    import struct
    payload = b"Exif\x00\x00" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def _tiff(tags):
    """Little-endian TIFF block with one IFD of SHORT ``(tag, value)`` entries."""
    import struct
    body = b"II*\x00" + struct.pack("<IH", 8, len(tags))
    for tag, value in tags:
        body += struct.pack("<HHIHH", tag, 3, 1, value, 0)
    return body + b"\x00\x00\x00\x00"


@pytest.mark.parametrize("first, second, expected", [
    ([(0x010F, 0)], [(0x0112, 6)], 6),      # the first Exif block has no orientation
    ([(0x0112, 3)], [(0x0112, 6)], 3),      # the first tag found wins
    ([(0x010F, 0)], [(0x010F, 0)], 1),
])
def test_orientation_from_a_later_exif_block(first, second, expected):
    stored = np.random.default_rng(3).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(stored).save(buf, format="JPEG", quality=95)
    raw = buf.getvalue()
    data = raw[:2] + _app1(_tiff(first)) + _app1(_tiff(second)) + raw[2:]
    assert image_info(data).orientation == expected
    plain = decode(raw)
    np.testing.assert_array_equal(decode(data), _ORIENT[expected](plain))
    assert peek_shape(data) == decode(data).shape


@pytest.mark.parametrize("o", range(2, 9))
def test_thin_roi_of_a_rotated_jpeg_equals_the_crop(o):
    """1-pixel rows/columns at every position of a rotated 4:2:0 file (region decoding cuts
    chroma upsampling at the box edge; the rotated route decodes with a margin)."""
    rng = np.random.default_rng(o)
    stored = rng.integers(0, 256, (9, 17, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = o
    buf = io.BytesIO()
    Image.fromarray(stored).save(buf, format="JPEG", quality=90, subsampling=2,
                                 exif=exif.tobytes())
    data = buf.getvalue()
    full = decode(data)
    h, w = full.shape[:2]
    for x in range(w):
        np.testing.assert_array_equal(decode(data, roi=(0, x, h, x + 1)), full[:, x:x + 1])
    for y in range(h):
        np.testing.assert_array_equal(decode(data, roi=(y, 0, y + 1, w)), full[y:y + 1])


# --------------------------------------------------------------------------- size limit
# Decompression bombs: small files that declare huge images.  Each builder writes the file
# with the standard library (struct/zlib), so the declared size is known independently.

from runtime.codecs import (DEFAULT_MAX_IMAGE_PIXELS, get_max_image_pixels,  # noqa: E402
                            set_max_image_pixels)


@pytest.fixture
def limit():
    """Restore the default image size limit after the test."""
    yield set_max_image_pixels
    set_max_image_pixels(DEFAULT_MAX_IMAGE_PIXELS)


def _png_chunk(kind, data):
    import struct
    import zlib
    return struct.pack(">I", len(data)) + kind + data + \
        struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _zeros_zlib(row_bytes, rows):
    """A zlib stream of ``rows * row_bytes`` zero bytes, built from one compressed block of
    rows repeated (blocks ended by a full flush are independent) -- fast for huge images."""
    import struct
    import zlib
    per = max(1, min(rows, (64 << 20) // row_bytes))
    comp = zlib.compressobj(9)
    block = comp.compress(bytes(row_bytes * per)) + comp.flush(zlib.Z_FULL_FLUSH)
    head, body = block[:2], block[2:]
    reps, rest = divmod(rows, per)
    tail = b""
    if rest:
        comp2 = zlib.compressobj(9)
        tail = comp2.compress(bytes(row_bytes * rest)) + comp2.flush(zlib.Z_FULL_FLUSH)
        tail = tail[2:]
    n = row_bytes * rows    # adler32 of n zeros: a = 1, b = n (mod 65521)
    return head + body * reps + tail + b"\x03\x00" + struct.pack(">I", ((n % 65521) << 16) | 1)


def _png_bomb(width, height, full=True):
    """An RGB PNG of zeros, ``full``: all its rows encoded (a real bomb), else only a few."""
    import struct
    import zlib
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = _zeros_zlib(1 + 3 * width, height) if full else zlib.compress(bytes(1 + 3 * width))
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat)
            + _png_chunk(b"IEND", b""))


def _tiff_bomb(width, height, rows=None, tile=None):
    """A deflate-compressed RGB TIFF whose strips (``rows`` rows each) or tiles (``tile`` =
    (w, h)) all point at the same compressed block of zeros."""
    import struct
    import zlib
    if tile is not None:
        count = -(-width // tile[0]) * -(-height // tile[1])
        block = zlib.compress(bytes(3 * 16 * 16))       # its content is never reached
        layout = [(322, 4, [tile[0]]), (323, 4, [tile[1]]), (324, 4, "offsets"),
                  (325, 4, "counts")]
    else:
        count = -(-height // rows)
        block = zlib.compress(bytes(3 * width * rows), 9)
        layout = [(273, 4, "offsets"), (278, 4, [rows]), (279, 4, "counts")]
    tags = sorted([(256, 4, [width]), (257, 4, [height]), (258, 3, [8, 8, 8]), (259, 3, [8]),
                   (262, 3, [2]), (277, 3, [3]), (284, 3, [1])] + layout)
    ifd_end = 8 + 2 + 12 * len(tags) + 4
    extra, entries = b"", b""
    block_at = ifd_end + sum(len(v) * (2 if t == 3 else 4) if isinstance(v, list) and
                             len(v) * (2 if t == 3 else 4) > 4 else
                             (4 * count if v in ("offsets", "counts") and count > 1 else 0)
                             for _, t, v in tags)
    for tag, typ, vals in tags:
        if vals == "offsets":
            vals = [block_at] * count
        elif vals == "counts":
            vals = [len(block)] * count
        data = struct.pack("<" + ("H" if typ == 3 else "I") * len(vals), *vals)
        if len(data) <= 4:
            entries += struct.pack("<HHI", tag, typ, len(vals)) + data.ljust(4, b"\x00")
        else:
            entries += struct.pack("<HHII", tag, typ, len(vals), ifd_end + len(extra))
            extra += data
    assert ifd_end + len(extra) == block_at
    return (b"II*\x00" + struct.pack("<IH", 8, len(tags)) + entries + b"\x00" * 4 + extra
            + block)


def _gif_bomb(screen, frame):
    """A GIF89a with logical screen ``screen`` = (w, h) and one 1-colour image descriptor at
    ``frame`` = (x0, y0, w, h), whose data is a single clear code (a few bytes)."""
    import struct
    head = b"GIF89a" + struct.pack("<HHBBB", *screen, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", *frame, 0) + b"\x02\x02\x44\x01\x00"
    return head + image + b"\x3b"


def _bmp_bomb(width, height):
    """A 24-bit BMP header declaring ``width`` x ``height`` and no pixel data."""
    import struct
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, 0, 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + len(info), 0, 0, 14 + len(info)) + info


def _webp_vp8l_bomb(width, height):
    """A lossless WebP whose VP8L header declares ``width`` x ``height`` (at most 16384)."""
    import struct
    bits = (width - 1) | ((height - 1) << 14)
    vp8l = b"\x2f" + struct.pack("<I", bits) + bytes(16)
    body = b"WEBP" + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _jpeg_sof_size(data, width, height):
    """``data`` (a JPEG) with its frame header (SOF0/SOF2) declaring ``width`` x ``height``."""
    import struct
    b = bytearray(data)
    i = 2
    while b[i + 1] not in (0xC0, 0xC2):
        i += 2 + struct.unpack_from(">H", b, i + 2)[0]
    struct.pack_into(">HH", b, i + 5, height, width)
    return bytes(b)


def _bombs(files):
    """name -> (bytes, declared width, declared height) of one bomb per format."""
    return {
        "png": (_png_bomb(20000, 20000, full=False), 20000, 20000),
        "jpeg": (_jpeg_sof_size(files["base.jpg"], 60000, 50000), 60000, 50000),
        "jpeg_progressive": (_jpeg_sof_size(files["prog.jpg"], 65000, 3000), 65000, 3000),
        "tiff_strips": (_tiff_bomb(20000, 20000, rows=16), 20000, 20000),
        "tiff_tiles": (_tiff_bomb(20000, 20000, tile=(256, 256)), 20000, 20000),
        "gif_screen": (_gif_bomb((65535, 65535), (0, 0, 1, 1)), 65535, 65535),
        "gif_frame": (_gif_bomb((10, 10), (30000, 0, 30000, 8000)), 60000, 8000),
        "webp": (_webp_vp8l_bomb(16384, 16384), 16384, 16384),
        "bmp": (_bmp_bomb(30000, 30000), 30000, 30000),
    }


BOMBS = ["png", "jpeg", "jpeg_progressive", "tiff_strips", "tiff_tiles", "gif_screen",
         "gif_frame", "webp", "bmp"]


@pytest.mark.parametrize("name", BOMBS)
def test_a_bomb_raises_before_decoding(files, name):
    """Every format: decode, a region decode, peek_shape and image_info refuse an image over
    the limit, naming the sample, the declared size, the limit and how to raise it."""
    data, w, h = _bombs(files)[name]
    pattern = (rf"^sample 7 \('x/{name}'\): [A-Z]+ image declares {w}x{h} pixels "
               rf"\({w * h:,} pixels\), more than the limit of {DEFAULT_MAX_IMAGE_PIXELS:,} "
               rf"pixels per image .*ndd\.set_max_image_pixels\(n\) \(None: no limit\)\.$")
    assert w * h > DEFAULT_MAX_IMAGE_PIXELS        # a huge image ...
    assert 3 * w * h > 10_000 * len(data)         # ... in a small file
    sample = f"sample 7 ('x/{name}')"
    for call in (lambda: decode(data, sample=sample),
                 lambda: decode(data, roi=(0, 0, 8, 8), sample=sample),
                 lambda: peek_shape(data, sample=sample),
                 lambda: image_info(data, sample=sample)):
        with pytest.raises(DecodeError, match=pattern) as err:
            call()
        assert "corrupt" not in str(err.value)      # a bomb is not a damaged file


def test_a_tiff_tile_larger_than_the_limit(files):
    """A 64x64 TIFF whose one tile is 16384x16384: the decoder would allocate the tile."""
    data = _tiff_bomb(64, 64, tile=(16384, 16384))
    with pytest.raises(DecodeError, match=r"TIFF image of 64x64 pixels declares tiles of "
                                          r"16384x16384 pixels \(268,435,456 pixels"):
        decode(data)


def test_the_limit_is_set_and_read(files, limit):
    """``set_max_image_pixels`` takes an int >= 1 or None; the limit counts width * height of
    the oriented image (the same either way) and applies from the next decode on."""
    img = files["base.jpg"]                        # 451x300 = 135,300 pixels
    assert get_max_image_pixels() == DEFAULT_MAX_IMAGE_PIXELS == 2 * Image.MAX_IMAGE_PIXELS
    limit(451 * 300)
    assert decode(img).shape == (300, 451, 3)       # exactly at the limit: decoded
    limit(451 * 300 - 1)
    with pytest.raises(DecodeError, match=r"declares 451x300 pixels \(135,300 pixels\), more "
                                          r"than the limit of 135,299 pixels"):
        decode(img)
    with pytest.raises(DecodeError, match="limit of 135,299"):
        peek_shape(img[:len(img) // 2])            # the header alone is enough
    limit(None)
    assert get_max_image_pixels() is None
    data = _png_bomb(3000, 3000)
    assert decode(data).shape == (3000, 3000, 3)    # no limit: 27 MB of zeros decode
    for bad, exc in ((0, ValueError), (-5, ValueError), (1.5, TypeError), ("100", TypeError),
                     (True, TypeError)):
        with pytest.raises(exc, match="max_image_pixels"):
            limit(bad)
    assert get_max_image_pixels() is None          # unchanged by the refused values
    import ndd
    assert ndd.set_max_image_pixels is set_max_image_pixels
    assert ndd.get_max_image_pixels is get_max_image_pixels


def test_pillows_own_limit_is_named_when_it_refuses(limit):
    """GIF is decoded by Pillow, which has its own limit (twice PIL.Image.MAX_IMAGE_PIXELS):
    with ndd's limit raised, the error says to raise Pillow's too."""
    limit(None)
    data = _gif_bomb((20000, 20000), (0, 0, 1, 1))
    with pytest.raises(DecodeError, match=r"PIL\.Image\.MAX_IMAGE_PIXELS") as err:
        decode(data, sample="s")
    assert str(err.value).startswith("s: ")


_RSS_PROBE = r"""
import json, sys
from runtime.codecs import DecodeError, decode, set_max_image_pixels

def peak_mb():
    # VmHWM: this process's peak RSS (getrusage's ru_maxrss would start at the parent's size)
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024

def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:     # "5": reset the peak to the RSS now
        f.write("5")

decode(open(sys.argv[4], "rb").read())                 # loads the codecs (not measured)
out = {}
for name in sys.argv[1:3]:
    data = open(name, "rb").read()
    reset_peak()
    before = peak_mb()
    try:
        decode(data)
        out[name] = "decoded"
    except DecodeError as exc:
        out[name] = str(exc)
    out[name + ":MB"] = peak_mb() - before
set_max_image_pixels(None)                            # control: the probe sees allocations
data = open(sys.argv[3], "rb").read()
reset_peak()
before = peak_mb()
out["control"] = decode(data).nbytes / 2 ** 20
out["control:MB"] = peak_mb() - before
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux /proc only")
def test_a_real_bomb_costs_far_less_than_its_decoded_size(tmp_path):
    """A 1.1 MB PNG and a 11 KB TIFF that decode to 1.2 GB each (20000x20000 RGB): the peak
    RSS of a fresh process (``VmHWM``) grows by a few MB at most; a control decode of a
    4000x4000 image (46 MB) shows the probe sees allocations."""
    import json
    import subprocess
    import sys
    png, tif, control = tmp_path / "bomb.png", tmp_path / "bomb.tif", tmp_path / "control.png"
    png.write_bytes(_png_bomb(20000, 20000))
    tif.write_bytes(_tiff_bomb(20000, 20000, rows=16))
    control.write_bytes(_png_bomb(4000, 4000))
    (tmp_path / "tiny.png").write_bytes(_png_bomb(8, 8))
    assert png.stat().st_size < 1_200_000 and tif.stat().st_size < 12_000
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(png), str(tif), str(control),
                          str(tmp_path / "tiny.png")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    for name in (str(png), str(tif)):
        assert "declares 20000x20000 pixels" in res[name]
        assert res[name + ":MB"] < 50, res          # vs 1144 MB decoded
    assert res["control"] == pytest.approx(45.8, abs=0.1)
    assert res["control:MB"] > 40, res
