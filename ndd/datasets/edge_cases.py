"""A small folder of deliberately hard image files, for tests of readers and decoders.

Written by :func:`build_edge_cases`; every picture is a deterministic synthetic pattern
(:func:`edge_case_pattern`), so lossless files decode to exactly that pattern.
"""

from __future__ import annotations

import io
import json
import pathlib
import struct
import zlib

import numpy as np
from PIL import Image

__all__ = ["build_edge_cases", "edge_case_pattern"]

_W, _H = 64, 48


def edge_case_pattern(width: int = _W, height: int = _H) -> np.ndarray:
    """Deterministic test picture: gradients, a disc and a bright bar.

    Parameters
    ----------
    width, height : int
        Size in pixels.

    Returns
    -------
    numpy.ndarray
        uint8 array of shape (height, width, 3), layout HWC, RGB.
    """
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    r = x * 255.0 / max(width - 1, 1)
    g = y * 255.0 / max(height - 1, 1)
    disc = (x - width / 2) ** 2 + (y - height / 2) ** 2 < (min(width, height) / 3) ** 2
    b = np.where(disc, 220.0, 40.0)
    img = np.stack([r, g, b], axis=-1)
    img[height // 5 : height // 5 + 3, :, :] = 250.0
    return np.rint(img).astype(np.uint8)


def _png_rgb16(arr16: np.ndarray) -> bytes:
    """Encode a (H, W, 3) uint16 array as a 16-bit RGB PNG (Pillow cannot write this mode)."""
    height, width, _ = arr16.shape
    rows = np.ascontiguousarray(arr16.astype(">u2")).view(np.uint8).reshape(height, width * 6)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw.tobytes(), 9))
        + chunk(b"IEND", b"")
    )


def _save(img: Image.Image, fmt: str, **kwargs) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kwargs)
    return buf.getvalue()


def _good_files(rgb: np.ndarray) -> dict[str, tuple[bytes, dict]]:
    """name -> (bytes, description) of files every decoder should decode."""
    im = Image.fromarray(rgb, "RGB")
    gray = im.convert("L")
    alpha = Image.fromarray(np.linspace(0, 255, _W, dtype=np.uint8)[None].repeat(_H, 0), "L")
    rgba = im.copy()
    rgba.putalpha(alpha)
    gray16 = Image.fromarray(np.asarray(gray, np.uint16) * np.uint16(257))  # mode I;16
    exif = Image.Exif()
    exif[0x0112] = 6
    lossless = {"lossless": True}
    return {
        "png_rgb.png": (_save(im, "PNG"), dict(lossless, mode="RGB")),
        "png_palette.png": (_save(im.quantize(16), "PNG"), {"mode": "P", "colors": 16}),
        "png_rgba.png": (_save(rgba, "PNG"), dict(lossless, mode="RGBA")),
        "png_gray.png": (_save(gray, "PNG"), dict(lossless, mode="L")),
        "png_gray16.png": (_save(gray16, "PNG"), dict(lossless, mode="I;16", scale=257)),
        "png_rgb16.png": (
            _png_rgb16(rgb.astype(np.uint16) * 257),
            dict(lossless, mode="RGB16", scale=257),
        ),
        "bmp_rgb.bmp": (_save(im, "BMP"), dict(lossless, mode="RGB")),
        "tiff_rgb.tif": (_save(im, "TIFF"), dict(lossless, mode="RGB")),
        "webp_lossless.webp": (_save(im, "WEBP", lossless=True), dict(lossless, mode="RGB")),
        "webp_lossy.webp": (_save(im, "WEBP", quality=80), {"mode": "RGB"}),
        "jpeg_gray.jpg": (_save(gray, "JPEG", quality=90), {"mode": "L"}),
        "jpeg_cmyk.jpg": (_save(im.convert("CMYK"), "JPEG", quality=90), {"mode": "CMYK"}),
        "jpeg_cmyk_420.jpg": (
            _save(im.convert("CMYK"), "JPEG", quality=90, subsampling=2),
            {"mode": "CMYK", "note": "C sampled 2x2, M/Y/K 1x1 (unusual but valid)"},
        ),
        "jpeg_exif6.jpg": (
            _save(im, "JPEG", quality=90, exif=exif.tobytes()),
            {"mode": "RGB", "orientation": 6, "displayed_size": [_H, _W]},
        ),
        "jpeg_progressive.jpg": (
            _save(im, "JPEG", quality=90, progressive=True),
            {"mode": "RGB", "progressive": True},
        ),
        "jpeg_upper_ext.JPG": (_save(im, "JPEG", quality=90), {"mode": "RGB"}),
        "jpeg_1x1.jpg": (
            _save(Image.new("RGB", (1, 1), (200, 30, 90)), "JPEG"),
            {"mode": "RGB", "size": [1, 1]},
        ),
        "jpeg_odd_17x13.jpg": (
            _save(Image.fromarray(edge_case_pattern(17, 13)), "JPEG", subsampling=2),
            {"mode": "RGB", "size": [17, 13]},
        ),
    }


def build_edge_cases(root) -> dict[str, pathlib.Path]:
    """Write the edge-case image folder.

    Layout (``readers.File(file_root=root)`` should see exactly two classes, ``broken`` = 0 and
    ``good`` = 1, and skip the hidden entries)::

        root/EDGE_CASES.json                       per file: kind, expected behaviour, mode
        root/good/...                              PNG (RGB, palette, RGBA, gray, 16-bit gray and
                                                   RGB), BMP, TIFF, WebP (lossy / lossless),
                                                   JPEG (gray, CMYK, EXIF 6, progressive, .JPG,
                                                   1x1, 17x13)
        root/good/._png_rgb.png                    hidden AppleDouble junk (not an image)
        root/.ipynb_checkpoints/png_rgb-checkpoint.png   hidden folder (not a class)
        root/broken/truncated.jpg                  first half of a valid JPEG
        root/broken/empty.jpg                      0 bytes
        root/broken/not_an_image.jpg               text

    Lossless files decode to :func:`edge_case_pattern` (64x48; gray files to Pillow's "L"
    conversion of it; 16-bit files to 257 times that).

    Parameters
    ----------
    root : str or os.PathLike
        Output folder (created; existing files of the same names are overwritten).

    Returns
    -------
    dict of str to pathlib.Path
        ``"root"`` and each file name (``"good/png_rgb.png"``, ``"broken/empty.jpg"``, ...)
        mapped to its path.
    """
    if root is None:
        raise ValueError("root must be a folder path, got None")
    root = pathlib.Path(root).expanduser()
    rgb = edge_case_pattern()
    entries: dict[str, tuple[bytes, dict]] = {}
    for name, (data, info) in _good_files(rgb).items():
        entries[f"good/{name}"] = (data, dict(info, expect="decodes"))
    png = entries["good/png_rgb.png"][0]
    jpeg = entries["good/jpeg_progressive.jpg"][0]
    appledouble = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(64)
    entries["good/._png_rgb.png"] = (appledouble, {"expect": "skip (hidden file)"})
    entries[".ipynb_checkpoints/png_rgb-checkpoint.png"] = (png, {"expect": "skip (hidden dir)"})
    entries["broken/truncated.jpg"] = (jpeg[: len(jpeg) // 2], {"expect": "error (truncated)"})
    entries["broken/empty.jpg"] = (b"", {"expect": "error (empty file)"})
    entries["broken/not_an_image.jpg"] = (b"this is not an image\n", {"expect": "error"})
    paths = {"root": root}
    for rel, (data, _) in entries.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths[rel] = path
    described = {rel: dict(info, bytes=len(data)) for rel, (data, info) in entries.items()}
    with open(root / "EDGE_CASES.json", "w", encoding="utf-8") as f:
        json.dump(described, f, indent=1, sort_keys=True)
    return paths
