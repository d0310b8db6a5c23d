"""``jpeg_compression_distortion`` on the CPU: a JPEG encode + decode round trip of RGB images.

Encoded by Pillow (libjpeg-turbo; baseline, 4:2:0 chroma subsampling, the standard
quantisation tables scaled by ``quality``) and decoded by nvImageCodec's CPU decoder
(libjpeg-turbo, the same integer DCT and fancy upsampling as Pillow's decoder: identical
pixels, measured on 240 sizes x qualities) or, where nvImageCodec is missing, by Pillow. This
gives DALI 2.4's CPU results bit for bit (measured on qualities 1..100 and odd sizes).
``quality`` is clamped to 1..100 as DALI does.

Speed: Pillow's encoder holds the GIL (about 1.5 ms a 640x480 image), its decoder releases it
but copies the pixels twice on the way to numpy; nvImageCodec's decoder releases the GIL and
hands its buffer over, so on the pool one thread decodes while the other encodes.
Registers ``jpeg_compression_distortion``.
"""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

from runtime.codecs import nvimgcodec_backend as nvb
from runtime.kernels.registry import per_sample, register

__all__ = ["jpeg_round_trip", "jpeg_encode", "jpeg_decode"]

_NV = []


def _nv_available() -> bool:
    if not _NV:
        _NV.append(nvb.available())
    return _NV[0]


def jpeg_encode(img: np.ndarray, quality: int) -> bytes:
    """The baseline JPEG (4:2:0, ``quality`` 1..100) of a C-contiguous uint8 ``(H, W, 3)``
    RGB image, by Pillow."""
    buf = io.BytesIO()
    Image.fromarray(img, "RGB").save(buf, format="JPEG", quality=int(quality))
    return buf.getvalue()


def jpeg_decode(data: bytes) -> np.ndarray:
    """uint8 ``(H, W, 3)`` RGB pixels of a JPEG made by :func:`jpeg_encode` (nvImageCodec's
    CPU decoder where it is usable, else Pillow; the same pixels)."""
    if _nv_available():
        stream = nvb.parse(np.frombuffer(data, np.uint8))
        out = None if stream is None else nvb.decode_stream(stream, "RGB",
                                                            adjust_orientation=False)
        if out is not None:
            return out
    with Image.open(io.BytesIO(data)) as decoded:
        return np.asarray(decoded if decoded.mode == "RGB" else decoded.convert("RGB"))


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
