"""``debayer`` on the CPU: demosaicing of single-channel Bayer images (uint8 / uint16).

DALI 2.4's CPU operator is OpenCV's ``demosaicing``; ndd calls the same routine
(:mod:`.ocv`), one image at a time (ndd's pool runs the samples in parallel; OpenCV releases
the GIL), and gets DALI's results bit for bit for every algorithm (measured):

* the Bayer tile: ``blue_position = (by, bx)`` puts blue at the pixels whose row is ``1 + by``
  and column ``1 + bx`` modulo 2 (OpenCV's naming starts at the second row and column):
  ``(0, 0)`` is OpenCV's ``BayerBG``, ``(0, 1)`` ``BayerGB``, ``(1, 0)`` ``BayerGR``, ``(1, 1)``
  ``BayerRG``; the output is RGB;
* ``bilinear_ocv`` (``default``): the missing colours from the 2 / 4 nearest sites of that
  colour (``(a + b + 1) >> 1``, ``(sum + 2) >> 2``), edges copied from their neighbours;
* ``edgeaware_ocv``: green interpolated along the direction of the smaller gradient;
* ``vng_ocv`` (uint8 only, as DALI): variable number of gradients (images under 8 pixels in
  either extent: bilinear, as OpenCV);
* ``gray_ocv``: ``(4899 R + 9617 G + 1868 B)`` of the bilinear estimates in fixed point.

All four are integer arithmetic in OpenCV (VNG's ``1 / n`` averaging: one float32 product
rounded to nearest, no fused multiply-add), compiled for the wheel's baseline instruction set,
not dispatched per CPU: the same bits on every x86-64 CPU. Registers ``debayer``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

from .ocv import opencv

__all__ = ["debayer", "ALGORITHMS", "bayer_code"]

#: DALI 2.4's CPU algorithms (``default_npp`` is GPU-only)
ALGORITHMS = ("bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv")

#: OpenCV's Bayer pattern name of each ``blue_position``
_PATTERNS = {(0, 0): "BG", (0, 1): "GB", (1, 0): "GR", (1, 1): "RG"}
#: the conversion-code suffix of each algorithm
_SUFFIX = {"bilinear_ocv": "2RGB", "edgeaware_ocv": "2RGB_EA", "vng_ocv": "2RGB_VNG",
           "gray_ocv": "2GRAY"}


def bayer_code(algorithm: str, blue_position) -> int:
    """OpenCV's ``COLOR_Bayer*`` conversion code of ``algorithm`` at ``blue_position``
    ``(by, bx)`` (both 0 or 1)."""
    return getattr(opencv(), "COLOR_Bayer" + _PATTERNS[tuple(blue_position)]
                   + _SUFFIX[algorithm])


def _checked(img, algorithm, blue_position):
    """``img`` as a 2-D array and ``(by, bx)``, after DALI's argument checks."""
    img = np.asarray(img)
    if img.ndim == 3:
        if img.shape[2] != 1:
            raise ValueError(f"debayer expects single-channel images (HW or HWC with 1 "
                             f"channel), got shape {img.shape}")
        img = img[:, :, 0]
    if img.ndim != 2:
        raise ValueError(f"debayer expects HW images, got {img.ndim} dimensions")
    if img.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"debayer supports uint8 and uint16 input, got {img.dtype}")
    if algorithm == "default_npp":
        raise ValueError("default_npp algorithm is not supported on CPU.")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"Unsupported debayer algorithm was specified: `{algorithm}`.")
    if algorithm == "vng_ocv" and img.dtype != np.uint8:
        raise ValueError("VNG debayering only supported with UINT8.")
    by, bx = (int(v) for v in np.asarray(blue_position).reshape(-1)[:2])
    if not (0 <= by <= 1 and 0 <= bx <= 1):
        raise ValueError(f"The `blue_position` position must lie within 2x2 tile, got: "
                         f"{by} x {bx}.")
    h, w = img.shape
    if h % 2 or w % 2:
        raise ValueError(f"The height and width of the image to debayer must be even. "
                         f"However, the sample has shape {h} x {w}.")
    return img, (by, bx)


def debayer(img, *, algorithm="bilinear_ocv", blue_position=(0, 0)) -> np.ndarray:
    """Demosaic one ``(H, W)`` (or ``(H, W, 1)``) Bayer image (see the module docstring).

    Parameters
    ----------
    img : array-like
        uint8 or uint16, even height and width.
    algorithm : str
        One of :data:`ALGORITHMS`.
    blue_position : sequence of 2 ints
        ``(y, x)`` of blue in the 2 x 2 tile starting at the second row and column.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` RGB (``(H, W, 1)`` for ``gray_ocv``), the input's dtype.

    Raises
    ------
    ValueError
        Not uint8 / uint16, not one channel, odd height or width, an unknown algorithm,
        ``default_npp`` (GPU-only), ``vng_ocv`` on uint16, a blue position outside the 2 x 2
        tile (DALI's messages).
    """
    img, bp = _checked(img, algorithm, blue_position)
    h, w = img.shape
    if h == 0 or w == 0:
        return np.zeros((h, w, 1 if algorithm == "gray_ocv" else 3), img.dtype)
    out = opencv().demosaicing(np.ascontiguousarray(img), bayer_code(algorithm, bp))
    return out.reshape(h, w, -1)


@register("debayer", "cpu")
@per_sample
def debayer_kernel(ctx, ins, a, i):
    """``debayer`` of sample ``i`` (every frame of an ``FHW`` sequence)."""
    x = np.asarray(ins[0])
    alg = a.get("algorithm") or "default"
    kw = dict(algorithm="bilinear_ocv" if alg == "default" else alg,
              blue_position=a["blue_position"])
    if (ctx.in_metas[0].layout or "").startswith("F"):
        frames = [debayer(f, **kw) for f in x]
        ch = 1 if kw["algorithm"] == "gray_ocv" else 3
        return np.stack(frames) if frames else np.zeros(x.shape[:3] + (ch,), x.dtype)
    return debayer(x, **kw)
