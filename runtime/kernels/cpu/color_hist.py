"""Histogram-based colour ops on the CPU: ``equalize`` and ``clahe`` (uint8).

Both follow DALI 2.4's CPU operators, which are OpenCV's ``equalizeHist`` (per channel) and
``CLAHE`` (measured bit-exactly against them):

``equalize``: per channel, with ``hist`` the 256-bin histogram, ``i0`` the lowest value present
and ``n`` the pixel count: a single-valued channel stays as it is; otherwise value ``v`` maps to
``round(cumsum(hist)[v] - hist[i0]) * (255 / (n - hist[i0])))`` (float32 scale, rounded half to
even) and ``i0`` to 0.

``clahe`` (``tiles_x`` x ``tiles_y`` tiles): an image whose size is not a multiple of the tile
grid is extended by ``tiles_y - H % tiles_y`` rows and ``tiles_x - W % tiles_x`` columns (a
whole tile where an extent divides evenly, as OpenCV) at the bottom / right by mirroring
(``cb|abc``, OpenCV's ``REFLECT_101``) for the histograms; each tile's histogram is clipped at
``max(1, int(clip_limit * tile_area / 256))``, the clipped count spread evenly over the 256 bins (the remainder one each, every
``max(256 // remainder, 1)``-th bin from 0), and turned into a table ``round(cumsum * 255 /
tile_area)``; pixel ``(x, y)`` blends the tables of the four nearest tile centers bilinearly
(float32 weights ``x / tile_w - 0.5``, rounded half to even). 3-channel images with
``luma_only`` are processed on the L channel of CIE Lab (:mod:`.color_lab`); otherwise every
channel alone. ``bins`` is accepted and, as in DALI's CPU operator, not used (256).
Each image is one compiled pass per step (histograms of all channels at once, tables,
table lookup or blend), GIL released; the batch kernels write every sample into one recycled
batch buffer on the pool (:func:`.color_pixels.into_batch`).
Registers ``equalize`` and ``clahe``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.registry import register

from .color_lab import lab_to_rgb, rgb_to_lab
from .color_pixels import into_batch
from .jit import compiled

__all__ = ["equalize", "equalize_into", "equalize_channel", "clahe", "clahe_into",
           "clahe_channel", "clahe_planes_into", "warm_up"]


def _check_u8(img, op):
    img = np.asarray(img)
    if img.dtype != np.uint8:
        raise TypeError(f"{op} supports only uint8 input, got {img.dtype}")
    return img


def _build_equalize(njit):
    @njit
    def hists(flat, cn, hist):
        # hist (cn, 256) int64, zeroed; flat: the interleaved pixels
        n = flat.shape[0] // cn
        if cn == 3:
            h0, h1, h2 = hist[0], hist[1], hist[2]
            for p in range(n):
                h0[flat[3 * p]] += 1
                h1[flat[3 * p + 1]] += 1
                h2[flat[3 * p + 2]] += 1
        elif cn == 1:
            # two half histograms: consecutive equal values do not wait on each other
            h0 = hist[0]
            h1 = np.zeros(256, np.int64)
            half = n // 2
            for p in range(half):
                h0[flat[2 * p]] += 1
                h1[flat[2 * p + 1]] += 1
            for p in range(2 * half, n):
                h0[flat[p]] += 1
            for v in range(256):
                h0[v] += h1[v]
        else:
            for p in range(n):
                for c in range(cn):
                    hist[c, flat[p * cn + c]] += 1
        return hist

    @njit
    def luts_of(hist, n, luts):
        # the equalization table of each channel (see the module docstring)
        cn = hist.shape[0]
        for c in range(cn):
            h = hist[c]
            i0 = 0
            while h[i0] == 0:
                i0 += 1
            if h[i0] == n:
                luts[c, :] = i0
                continue
            scale = np.float32(255.0) / np.float32(n - h[i0])
            acc = 0
            for v in range(256):
                acc += h[v]
                if v <= i0:
                    luts[c, v] = 0
                else:
                    r = np.rint(np.float32(acc - h[i0]) * scale)
                    luts[c, v] = 0 if r < 0 else (255 if r > 255 else np.uint8(r))
        return luts

    @njit
    def equalize_flat(flat, cn, out):
        n = flat.shape[0] // cn
        if n == 0:
            return out
        hist = hists(flat, cn, np.zeros((cn, 256), np.int64))
        luts = luts_of(hist, n, np.empty((cn, 256), np.uint8))
        if cn == 3:
            l0, l1, l2 = luts[0], luts[1], luts[2]
            for p in range(n):
                out[3 * p] = l0[flat[3 * p]]
                out[3 * p + 1] = l1[flat[3 * p + 1]]
                out[3 * p + 2] = l2[flat[3 * p + 2]]
        else:
            for p in range(n):
                for c in range(cn):
                    out[p * cn + c] = luts[c, flat[p * cn + c]]
        return out
    return equalize_flat


_equalize_kernel = compiled(_build_equalize)


def equalize_into(img: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``equalize`` of one uint8 ``(H, W)`` or ``(H, W, C)`` image into ``out`` (same shape,
    uint8, C-contiguous); every channel alone (see the module docstring). Returns ``out``."""
    img = np.ascontiguousarray(img)
    cn = img.shape[2] if img.ndim == 3 else 1
    if img.size:
        _equalize_kernel()(img.reshape(-1), cn, out.reshape(-1))
    return out


def equalize_channel(ch: np.ndarray) -> np.ndarray:
    """Histogram equalization of one uint8 channel (see the module docstring)."""
    ch = np.asarray(ch)
    return equalize_into(ch.reshape(ch.size, 1), np.empty((ch.size, 1), np.uint8)) \
        .reshape(ch.shape)


def equalize(img) -> np.ndarray:
    """``equalize`` of one ``(H, W)`` or ``(H, W, C)`` uint8 image, each channel alone.

    Raises
    ------
    TypeError
        Not uint8.
    """
    img = _check_u8(img, "equalize")
    return equalize_into(img, np.empty(img.shape, np.uint8))


def _build_clahe(njit):
    @njit
    def mirror_101(n, m):
        # indices 0 .. m - 1 of an extent n grown at the end by mirroring (cb|abc)
        idx = np.empty(m, np.int64)
        period = 2 * n - 2
        for i in range(m):
            if n == 1:
                idx[i] = 0
            else:
                j = i % period
                idx[i] = j if j < n else period - j
        return idx

    @njit
    def tile_luts(src, cn, nch, h, w, tiles_y, tiles_x, limit):
        # the tables (nch, tiles_y, tiles_x * 256) float32 of channels 0 .. nch - 1 of the
        # interleaved image (all their histograms in one pass over the pixels)
        eh, ew = h, w
        if h % tiles_y or w % tiles_x:
            eh, ew = h + tiles_y - h % tiles_y, w + tiles_x - w % tiles_x
        ry, rx = mirror_101(h, eh), mirror_101(w, ew)
        th, tw = eh // tiles_y, ew // tiles_x
        area = th * tw
        hist = np.zeros((nch, tiles_y, tiles_x * 256), np.int64)
        for y in range(eh):
            row = ry[y] * w
            ty = y // th
            for t in range(tiles_x):
                for c in range(nch):
                    ht = hist[c, ty, t * 256:(t + 1) * 256]
                    for x in range(t * tw, (t + 1) * tw):
                        ht[src[np.uint64((row + rx[x]) * cn + c)]] += 1
        luts = np.empty((nch, tiles_y, tiles_x * 256), np.float32)
        scale = np.float32(255.0) / np.float32(area)
        for c in range(nch):
            for ty in range(tiles_y):
                for tx in range(tiles_x):
                    hh = hist[c, ty, tx * 256:(tx + 1) * 256]
                    if limit > 0:
                        clipped = 0
                        for v in range(256):
                            if hh[v] > limit:
                                clipped += hh[v] - limit
                                hh[v] = limit
                        each, rest = clipped // 256, clipped % 256
                        for v in range(256):
                            hh[v] += each
                        if rest:
                            step = max(256 // rest, 1)
                            v = 0
                            while rest > 0 and v < 256:
                                hh[v] += 1
                                v += step
                                rest -= 1
                    acc = 0
                    for v in range(256):
                        acc += hh[v]
                        r = np.rint(np.float32(acc) * scale)
                        luts[c, ty, tx * 256 + v] = 0 if r < 0 else (255 if r > 255 else r)
        return luts, th, tw

    @njit
    def clahe_planes(src, cn, nch, h, w, tiles_y, tiles_x, limit, out):
        # CLAHE of channels 0 .. nch - 1 of the interleaved uint8 image src (flat), each
        # alone, into the same channels of out (flat; may be src)
        luts, th, tw = tile_luts(src, cn, nch, h, w, tiles_y, tiles_x, limit)
        inv_tw = np.float32(1.0) / np.float32(tw)
        inv_th = np.float32(1.0) / np.float32(th)
        half = np.float32(0.5)
        one = np.float32(1.0)
        # the column weights and table offsets are the same on every row: computed once
        o1s = np.empty(w, np.int64)
        o2s = np.empty(w, np.int64)
        xas = np.empty(w, np.float32)
        xa1s = np.empty(w, np.float32)
        for x in range(w):
            txf = np.float32(x) * inv_tw - half
            tx1 = np.int64(np.floor(txf))
            xa = txf - np.float32(tx1)
            xas[x], xa1s[x] = xa, one - xa
            o2s[x] = min(tx1 + 1, tiles_x - 1) * 256
            o1s[x] = max(tx1, 0) * 256
        for y in range(h):
            tyf = np.float32(y) * inv_th - half
            ty1 = np.int64(np.floor(tyf))
            ya = tyf - np.float32(ty1)
            ya1 = one - ya
            ty2 = min(ty1 + 1, tiles_y - 1)
            ty1 = max(ty1, 0)
            base = y * w * cn
            for c in range(nch):
                top, bot = luts[c, ty1], luts[c, ty2]
                for x in range(w):
                    xa, xa1 = xas[x], xa1s[x]
                    i = np.uint64(base + x * cn + c)      # indices are never negative:
                    v = np.uint64(src[i])                 # unsigned, no wrap-around tests
                    j1, j2 = np.uint64(o1s[x]) + v, np.uint64(o2s[x]) + v
                    res = (top[j1] * xa1 + top[j2] * xa) * ya1 \
                        + (bot[j1] * xa1 + bot[j2] * xa) * ya
                    r = np.rint(res)
                    out[i] = 0 if r < 0 else (255 if r > 255 else np.uint8(r))
        return out
    return clahe_planes


_clahe_kernel = compiled(_build_clahe)


def _clip_count(clip_limit: float, tiles_x: int, tiles_y: int, h: int, w: int) -> int:
    """OpenCV's clip limit in pixels per bin of a tile (0: no clipping)."""
    if not clip_limit > 0.0:
        return 0
    th = (h + (tiles_y - h % tiles_y if h % tiles_y or w % tiles_x else 0)) // tiles_y
    tw = (w + (tiles_x - w % tiles_x if h % tiles_y or w % tiles_x else 0)) // tiles_x
    return max(int(float(np.float32(clip_limit)) * (th * tw) / 256), 1)


def clahe_planes_into(img: np.ndarray, out: np.ndarray, nch: int, tiles_x: int, tiles_y: int,
                      clip_limit: float) -> np.ndarray:
    """CLAHE of the first ``nch`` channels of one uint8 ``(H, W, C)`` image, each alone,
    written to the same channels of ``out`` (uint8 ``(H, W, C)``, C-contiguous; may be the
    image itself). Returns ``out``."""
    img = np.ascontiguousarray(img)
    h, w, cn = img.shape
    if h == 0 or w == 0:
        return out
    limit = _clip_count(clip_limit, tiles_x, tiles_y, h, w)
    _clahe_kernel()(img.reshape(-1), cn, int(nch), h, w, tiles_y, tiles_x, limit,
                    out.reshape(-1))
    return out


def clahe_channel(ch: np.ndarray, tiles_x: int, tiles_y: int, clip_limit: float) -> np.ndarray:
    """CLAHE of one uint8 ``(H, W)`` channel (see the module docstring)."""
    ch = np.asarray(ch)
    out = np.empty(ch.shape + (1,), np.uint8)
    return clahe_planes_into(ch[:, :, None], out, 1, tiles_x, tiles_y, clip_limit)[:, :, 0]


def _clahe_checks(img, tiles_x, tiles_y):
    img = _check_u8(img, "clahe")
    if tiles_x <= 0 or tiles_y <= 0:
        raise ValueError(f"clahe: tiles_x and tiles_y must be positive, got {tiles_x} and "
                         f"{tiles_y}")
    if img.ndim not in (2, 3):
        raise ValueError("clahe expects HW (grayscale) or HWC (color) input layout.")
    c = 1 if img.ndim == 2 else img.shape[2]
    if c not in (1, 3):
        raise ValueError(f"clahe supports 1 or 3 channels, got {c}")
    return img


def clahe_into(img, out, *, tiles_x: int, tiles_y: int, clip_limit: float,
               luma_only: bool = True) -> np.ndarray:
    """``clahe`` of one ``(H, W)`` or ``(H, W, C)`` uint8 image (``C`` 1 or 3) into ``out``
    (uint8, the input's shape, C-contiguous). Returns ``out``.

    Raises
    ------
    TypeError
        Not uint8.
    ValueError
        Tiles not positive, or a channel count other than 1 and 3.
    """
    img = _clahe_checks(img, tiles_x, tiles_y)
    args = (int(tiles_x), int(tiles_y), float(clip_limit))
    src = img if img.ndim == 3 else img[:, :, None]
    dst = out if out.ndim == 3 else out[:, :, None]
    if src.shape[2] == 3 and luma_only:
        lab = rgb_to_lab(src)
        clahe_planes_into(lab, lab, 1, *args)     # L alone; every pixel read before written
        lab_to_rgb(lab, dst)
    else:
        clahe_planes_into(src, dst, src.shape[2], *args)
    return out


def clahe(img, *, tiles_x: int, tiles_y: int, clip_limit: float, luma_only: bool = True):
    """``clahe`` of one ``(H, W)`` or ``(H, W, C)`` uint8 image (``C`` 1 or 3).

    Raises
    ------
    TypeError
        Not uint8.
    ValueError
        Tiles not positive, or a channel count other than 1 and 3.
    """
    img = _clahe_checks(img, tiles_x, tiles_y)
    return clahe_into(img, np.empty(img.shape, np.uint8), tiles_x=tiles_x, tiles_y=tiles_y,
                      clip_limit=clip_limit, luma_only=luma_only)


def warm_up() -> None:
    """Compile (or load from numba's cache) the CLAHE, equalize and Lab loops."""
    clahe(np.zeros((2, 2, 3), np.uint8), tiles_x=1, tiles_y=1, clip_limit=2.0)
    clahe_channel(np.zeros((2, 2), np.uint8), 1, 1, 2.0)
    equalize(np.zeros((2, 2, 1), np.uint8))


def _frames(ctx):
    lay = ctx.in_metas[0].layout or ""
    return lay.startswith("F")


@register("equalize", "cpu")
@into_batch()
def equalize_kernel(ctx, x, a, out):
    """``equalize`` of one sample into its view of the batch buffer (every frame of a
    sequence alone)."""
    x = _check_u8(x, "equalize")
    if _frames(ctx):
        for f in range(len(x)):
            equalize_into(x[f], out[f])
    else:
        equalize_into(x, out)


@register("clahe", "cpu")
@into_batch()
def clahe_kernel(ctx, x, a, out):
    """``clahe`` of one sample into its view of the batch buffer."""
    clahe_into(x, out, tiles_x=a["tiles_x"], tiles_y=a["tiles_y"], clip_limit=a["clip_limit"],
               luma_only=a.get("luma_only", True))
