"""``debayer`` on the CPU: demosaicing of single-channel Bayer images (uint8 / uint16).

DALI 2.4's CPU operator is OpenCV's ``demosaicing``; ndd matches its ``bilinear_ocv`` (the
default) and ``gray_ocv`` results bit for bit (measured), written as one compiled integer loop:

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

from .jit import compiled

__all__ = ["debayer", "ALGORITHMS", "warm_up"]

#: DALI 2.4's CPU algorithms (``default_npp`` is GPU-only)
ALGORITHMS = ("bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv")


def _build(njit):
    @njit
    def rgb_row(up, mid, dn, o, w, site, own, planes):
        """bilinear RGB of one row's inner pixels: the three channels into ``planes`` (rows
        of the row's colour, green, the other colour; contiguous: vectorised), then
        interleaved into ``o`` (``own``, the output channel of the row's colour, a constant at
        each call)"""
        p0, p1, p2 = planes[0], planes[1], planes[2]
        for x in range(1, w - 1):
            c = np.int32(mid[x])
            hs = np.int32(mid[x - 1]) + np.int32(mid[x + 1])
            vs = np.int32(up[x]) + np.int32(dn[x])
            ds = (np.int32(up[x - 1]) + np.int32(up[x + 1]) + np.int32(dn[x - 1])
                  + np.int32(dn[x + 1]))
            at_site = (x & 1) == site
            p0[x] = c if at_site else (hs + 1) >> 1
            p1[x] = (hs + vs + 2) >> 2 if at_site else c
            p2[x] = (ds + 2) >> 2 if at_site else (vs + 1) >> 1
        for x in range(1, w - 1):       # unsigned indices: no negative-index wraparound
            ux = np.uint64(x)
            i = np.uint64(3) * ux
            o[i + np.uint64(own)] = p0[ux]
            o[i + np.uint64(1)] = p1[ux]
            o[i + np.uint64(2 - own)] = p2[ux]

    @njit
    def interior(p, by, bx, gray, out):
        """Bilinear RGB (or gray) of the pixels not on the edge, written into ``out``: per
        row, every pixel's neighbour sums, then the colour / green site formulas chosen by the
        column parity (one branch-free loop that LLVM vectorises)."""
        h, w = p.shape
        planes = np.empty((3, w), p.dtype)
        for y in range(1, h - 1):
            blue_row = (y % 2) == (1 + by) % 2
            kc, kd = (1868, 4899) if blue_row else (4899, 1868)
            own = 2 if blue_row else 0          # the output channel of the row's colour
            # colour sites: column parity (1 + bx) on blue rows, bx on red rows
            site = (1 + bx) % 2 if blue_row else bx % 2
            up, mid, dn = p[y - 1], p[y], p[y + 1]
            o = out[y].reshape(-1)
            if gray:
                for x in range(1, w - 1):
                    c = np.int64(mid[x])
                    hs = np.int64(mid[x - 1]) + np.int64(mid[x + 1])
                    vs = np.int64(up[x]) + np.int64(dn[x])
                    ds = (np.int64(up[x - 1]) + np.int64(up[x + 1]) + np.int64(dn[x - 1])
                          + np.int64(dn[x + 1]))
                    at_site = (x & 1) == site
                    v = ds * kd + (hs + vs) * 9617 + c * 4 * kc if at_site \
                        else hs * 2 * kc + vs * 2 * kd + c * 4 * 9617
                    o[x] = (v + 32768) >> 16
                continue
            if own == 0:
                rgb_row(up, mid, dn, o, w, site, 0, planes)
            else:
                rgb_row(up, mid, dn, o, w, site, 2, planes)
        return out
    return interior


_interior = compiled(_build)


def _fill_edges(out):
    """OpenCV's edge rule, in place: the first / last columns repeat their neighbours, then
    the first / last rows; 2 rows or fewer: zeros; 2 columns or fewer: zeros inside."""
    h, w = out.shape[:2]
    if h <= 2:
        out[...] = 0
        return out
    if w > 2:
        out[1:-1, 0] = out[1:-1, 1]
        out[1:-1, -1] = out[1:-1, -2]
    else:
        out[1:-1] = 0
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
    shape = (h, w, 1 if algorithm == "gray_ocv" else 3)
    if h > 2 and w > 2:     # every pixel written: the interior here, the edge below
        out = np.empty(shape, img.dtype)
        _interior()(np.ascontiguousarray(img), by, bx, algorithm == "gray_ocv", out)
    else:
        out = np.zeros(shape, img.dtype)
    return _fill_edges(out)


def warm_up() -> None:
    """Compile (or load from numba's cache) the demosaicing loop (uint8 and uint16)."""
    for dt in (np.uint8, np.uint16):
        debayer(np.zeros((4, 4), dt))


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
