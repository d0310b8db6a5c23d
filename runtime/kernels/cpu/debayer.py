"""``debayer`` on the CPU: demosaicing of single-channel Bayer images (uint8 / uint16).

DALI 2.4's CPU operator is OpenCV's ``demosaicing``; ndd matches its ``bilinear_ocv`` (the
default) and ``gray_ocv`` results bit for bit (measured), written as whole-image integer numpy:

* the Bayer tile: ``blue_position = (by, bx)`` puts blue at the pixels whose row is ``1 + by``
  and column ``1 + bx`` modulo 2 (OpenCV's naming starts at the second row and column), red at
  the opposite parity, green elsewhere;
* ``bilinear_ocv``, at every pixel not on the image edge: the missing colour of a blue / red
  pixel from its four diagonal neighbours, green from its four direct ones (``(sum + 2) >>
  2``); at a green pixel the colour of its row from its left and right neighbours, the other
  from those above and below (``(a + b + 1) >> 1``); output is RGB;
* ``gray_ocv``: ``(4899 R + 9617 G + 1868 B)`` of those estimates in fixed point, ``(4 x sum +
  2^15) >> 16`` (OpenCV's Bayer-to-gray weights);
* the edge: the first and last columns repeat their neighbours, then the first and last rows
  (an image of 2 rows or fewer is all zeros; of 2 columns or fewer, zeros inside).

``edgeaware_ocv`` and ``vng_ocv`` are not implemented (a clear error). Registers ``debayer``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import per_sample, register

__all__ = ["debayer", "ALGORITHMS"]

#: DALI 2.4's CPU algorithms (``default_npp`` is GPU-only)
ALGORITHMS = ("bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv")
_R2Y, _G2Y, _B2Y = 4899, 9617, 1868


def _estimates(img, blue_position):
    """``(R, G, B)`` int64 bilinear estimates of the interior ``(H - 2, W - 2)`` pixels."""
    p = img.astype(np.int64)
    h, w = p.shape
    c = p[1:-1, 1:-1]
    n, s, we, e = p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]
    cross = (n + s + we + e + 2) >> 2
    diag = (p[:-2, :-2] + p[:-2, 2:] + p[2:, :-2] + p[2:, 2:] + 2) >> 2
    horiz = (we + e + 1) >> 1
    vert = (n + s + 1) >> 1
    by, bx = blue_position
    yy = (np.arange(1, h - 1) % 2)[:, None]
    xx = (np.arange(1, w - 1) % 2)[None, :]
    blue = (yy == (1 + by) % 2) & (xx == (1 + bx) % 2)
    red = (yy != (1 + by) % 2) & (xx != (1 + bx) % 2)
    blue_row = np.broadcast_to(yy == (1 + by) % 2, c.shape)
    green = ~(blue | red)
    r = np.where(red, c, np.where(blue, diag, np.where(blue_row, vert, horiz)))
    b = np.where(blue, c, np.where(red, diag, np.where(blue_row, horiz, vert)))
    g = np.where(green, c, cross)
    return r, g, b, green, blue_row, p


def _gray(img, blue_position):
    r, g, b, green, blue_row, p = _estimates(img, blue_position)
    h, w = p.shape
    c = p[1:-1, 1:-1]
    n, s, we, e = p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]
    diag_sum = p[:-2, :-2] + p[:-2, 2:] + p[2:, :-2] + p[2:, 2:]
    cross_sum = n + s + we + e
    colour_site = (diag_sum * np.where(~green & ~blue_row, _B2Y, _R2Y) + cross_sum * _G2Y
                   + c * 4 * np.where(blue_row, _B2Y, _R2Y))
    green_site = ((we + e) * 2 * np.where(blue_row, _B2Y, _R2Y)
                  + (n + s) * 2 * np.where(blue_row, _R2Y, _B2Y) + c * 4 * _G2Y)
    total = np.where(green, green_site, colour_site)
    return (total + (1 << 15)) >> 16


def _fill_edges(inner, h, w, channels, dtype):
    out = np.zeros((h, w) + ((channels,) if channels else ()), dtype)
    if h <= 2:
        return out
    if w > 2:
        out[1:-1, 1:-1] = inner
        out[1:-1, 0] = out[1:-1, 1]
        out[1:-1, -1] = out[1:-1, -2]
    out[0] = out[1]
    out[-1] = out[-2]
    return out


def debayer(img, *, algorithm="bilinear_ocv", blue_position=(0, 0)) -> np.ndarray:
    """Demosaic one ``(H, W)`` (or ``(H, W, 1)``) Bayer image (see the module docstring).

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` RGB (``(H, W, 1)`` for ``gray_ocv``), the input's dtype.

    Raises
    ------
    ValueError
        Not uint8 / uint16, not one channel, odd height or width, an unknown algorithm, a
        blue position outside the 2 x 2 tile.
    NotImplementedError
        ``edgeaware_ocv`` or ``vng_ocv``.
    """
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
    if algorithm in ("edgeaware_ocv", "vng_ocv"):
        raise NotImplementedError(f"debayer: algorithm {algorithm!r} is not implemented by "
                                  f"ndd yet; use 'bilinear_ocv' or 'gray_ocv'")
    if algorithm == "gray_ocv":
        inner = _gray(img, (by, bx)) if h > 2 and w > 2 else None
        return _fill_edges(None if inner is None else inner.astype(img.dtype), h, w, 0,
                           img.dtype)[:, :, None]
    if h > 2 and w > 2:
        r, g, b, *_ = _estimates(img, (by, bx))
        inner = np.stack([r, g, b], axis=-1).astype(img.dtype)
    else:
        inner = None
    return _fill_edges(inner, h, w, 3, img.dtype)


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
