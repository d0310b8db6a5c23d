"""``jpeg_compression_distortion`` on the CPU: a JPEG encode + decode round trip of RGB images.

Encoded and decoded by Pillow (libjpeg-turbo; baseline, 4:2:0 chroma subsampling, the
standard quantisation tables scaled by ``quality``), which gives DALI 2.4's CPU results bit for
bit (measured on qualities 1..100 and odd sizes). ``quality`` is clamped to 1..100 as DALI
does. Registers ``jpeg_compression_distortion``.
"""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

from runtime.kernels.registry import per_sample, register

__all__ = ["jpeg_round_trip"]


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
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(img), "RGB").save(buf, format="JPEG", quality=q)
    buf.seek(0)
    with Image.open(buf) as decoded:
        return np.asarray(decoded.convert("RGB"))


@register("jpeg_compression_distortion", "cpu")
@per_sample
def jpeg_compression_distortion(ctx, ins, a, i):
    """``jpeg_compression_distortion`` of sample ``i`` (every frame of a sequence)."""
    x = np.asarray(ins[0])
    q = int(np.asarray(a.get("quality", 50)).reshape(-1)[0])
    if (ctx.in_metas[0].layout or "").startswith("F"):
        return np.stack([jpeg_round_trip(f, q) for f in x]) if len(x) else x.copy()
    return jpeg_round_trip(x, q)
