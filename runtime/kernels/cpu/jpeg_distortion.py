"""``jpeg_compression_distortion`` on the CPU: a JPEG encode + decode round trip of RGB images.

Encoded and decoded by OpenCV's ``imencode`` / ``imdecode`` (:mod:`.ocv`; libjpeg-turbo inside:
baseline, 4:2:0 chroma subsampling, the standard quantisation tables scaled by ``quality``,
the integer DCTs and fancy upsampling), the libjpeg round trip of DALI 2.4's CPU operator: its
results bit for bit (measured on qualities 1..100 and odd sizes; also the pixels of Pillow's
encoder and decoder, libjpeg-turbo both). ``quality`` is clamped to 1..100 as DALI does.
libjpeg-turbo's SIMD routines are integer and give the bits of its C code on every CPU.

Speed: both calls release the GIL (Pillow's encoder, used before, held it), so the pool's
threads encode and decode in parallel; the RGB <-> BGR swaps are OpenCV's ``cvtColor``
(a strided numpy copy costs more than the encode). Registers ``jpeg_compression_distortion``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

from .ocv import opencv

__all__ = ["jpeg_round_trip", "jpeg_encode", "jpeg_decode"]


def jpeg_encode(img: np.ndarray, quality: int) -> bytes:
    """The baseline JPEG (4:2:0, ``quality`` 1..100) of a uint8 ``(H, W, 3)`` RGB image, by
    OpenCV (libjpeg-turbo).

    Raises
    ------
    RuntimeError
        OpenCV failed to encode.
    """
    cv = opencv()
    bgr = cv.cvtColor(np.ascontiguousarray(img), cv.COLOR_RGB2BGR)
    ok, buf = cv.imencode(".jpg", bgr, [cv.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError(f"jpeg_compression_distortion: encoding a {img.shape} image failed")
    return buf.tobytes()


def jpeg_decode(data) -> np.ndarray:
    """uint8 ``(H, W, 3)`` RGB pixels of a JPEG made by :func:`jpeg_encode`, by OpenCV
    (libjpeg-turbo).

    Raises
    ------
    RuntimeError
        ``data`` is not a decodable JPEG.
    """
    cv = opencv()
    arr = np.frombuffer(data, np.uint8)
    rgb_flag = getattr(cv, "IMREAD_COLOR_RGB", None)      # OpenCV >= 4.11
    out = cv.imdecode(arr, cv.IMREAD_COLOR if rgb_flag is None else rgb_flag)
    if out is None:
        raise RuntimeError("jpeg_compression_distortion: decoding the JPEG failed")
    return cv.cvtColor(out, cv.COLOR_BGR2RGB) if rgb_flag is None else out


def jpeg_round_trip(img, quality: int = 50) -> np.ndarray:
    """One ``(H, W, 3)`` uint8 RGB image through JPEG at ``quality`` (clamped to 1..100).

    Raises
    ------
    ValueError
        Not uint8, or not 3 channels last.
    """
    img = np.asarray(img)
    if img.dtype != np.uint8:
        raise ValueError(f"jpeg_compression_distortion supports only uint8 input, got "
                         f"{img.dtype}")
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"Invalid number of channels. Expected a channel-last layout, with 3 "
                         f"channels (RGB), got shape: {' x '.join(map(str, img.shape))}")
    if img.shape[0] == 0 or img.shape[1] == 0:
        return img.copy()
    q = int(min(max(int(quality), 1), 100))
    return jpeg_decode(jpeg_encode(np.ascontiguousarray(img), q))


@register("jpeg_compression_distortion", "cpu")
@per_sample
def jpeg_compression_distortion(ctx, ins, a, i):
    """``jpeg_compression_distortion`` of sample ``i`` (every frame of a sequence)."""
    x = np.asarray(ins[0])
    q = int(np.asarray(a.get("quality", 50)).reshape(-1)[0])
    if (ctx.in_metas[0].layout or "").startswith("F"):
        return np.stack([jpeg_round_trip(f, q) for f in x]) if len(x) else x.copy()
    return jpeg_round_trip(x, q)
