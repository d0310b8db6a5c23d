"""Masking ops on the CPU: ``erase``, ``paste``, ``grid_mask``, ``jitter``, ``water``.

``erase`` follows DALI 2.4 (measured on its CPU operator): the coordinates of ``anchor`` and
``shape`` are grouped per region in the order of ``axis_names`` (default ``HW``) or ``axes``;
normalized values are multiplied by the sample's extent; ``centered_anchor`` moves the start
to ``anchor - shape / 2``; a region covers ``[floor(start), floor(start + shape))`` on each of
its axes, clipped to the sample, and the whole extent of every other axis. ``fill_value`` is
one value or one per channel, converted to the sample type with ``cast``'s rules (DALI
truncates and wraps; docs/semantics.md). Each region is one slice assignment: no per-pixel
Python.

``paste`` (DALI 2.4, measured): the canvas is ``max(floor(H * ratio), floor(min_canvas_size))``
by the same for ``W`` (float32 products), filled with ``fill_value`` (one value or one per
channel; ``cast``'s rounding, where DALI truncates and wraps), and the image is copied to the
corner ``floor(paste_y * (canvas_h - H)), floor(paste_x * (canvas_w - W))``.

``grid_mask`` (DALI 2.4, measured): integer pixel coordinates ``(x, y)`` (not centers) are
rotated and shifted in float32, ``u = x cos a - y sin a - shift_x``, ``v = x sin a + y cos a -
shift_y``; the pixel is zeroed in every channel when ``frac(u / tile) < ratio`` and
``frac(v / tile) < ratio`` (one whole-image mask, no per-pixel Python).

``jitter`` (DALI 2.4's operator is GPU-only; this follows its documented semantics): every
output pixel ``(x, y)`` copies input pixel ``(x + dx, y + dy)``, ``dx`` and ``dy`` whole-pixel
offsets drawn uniformly from ``[-(n // 2), n - 1 - n // 2]`` (``n = nDegree``) by the sample's
numpy generator (:func:`runtime.kernels.params.seeds.sample_rng`), or ``fill_value`` where that
lies outside the image.

``water`` (DALI 2.4, measured bit-exactly): output pixel ``(x, y)`` samples the input at
``(x + ampl_x sinf(freq_x y + phase_x), y + ampl_y cosf(freq_y x + phase_y))`` (float32) with
:func:`runtime.kernels.cpu.warp.sample_points` (nn: the pixel ``floor`` of the point).
Registers ``erase``, ``paste``, ``grid_mask``, ``jitter`` and ``water``.
"""
from __future__ import annotations

import functools

import numpy as np

from runtime.kernels.params.erase import erase_regions
from runtime.kernels.params.seeds import sample_rng
from runtime.kernels.registry import per_sample, register

from . import libm
from .color_pixels import into_batch
from .jit import compiled
from .warp import fill_in_type, sample_points

__all__ = ["erase", "erase_regions", "paste", "paste_geometry", "grid_mask",
           "grid_mask_into", "grid_mask_mask", "jitter", "water", "water_points"]


@functools.lru_cache(maxsize=256)
def _fill(value: float, dtype: np.dtype):
    """:func:`fill_in_type` of one value, memoised (the same fill recurs on every sample)."""
    return fill_in_type(value, dtype)


def _axes(layout, ndim, axes, axis_names):
    if axis_names is None and axes is None:
        axis_names = "HW"
    if axis_names is not None:
        if not layout:
            raise ValueError(f"axis_names {axis_names!r} needs an input with a layout")
        missing = [c for c in axis_names if c not in layout]
        if missing:
            raise ValueError(f"axis_names {axis_names!r} name axes missing from the "
                             f"input layout {layout!r}")
        return [layout.index(c) for c in axis_names]
    axes = [int(x) for x in np.ravel(axes)]
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ValueError(f"axis {ax} is out of range for {ndim}-D samples")
    return [ax % ndim for ax in axes]


def erase(img, anchor=None, shape=None, *, layout="HWC", axes=None, axis_names=None,
          normalized=False, normalized_anchor=False, normalized_shape=False,
          centered_anchor=False, fill_value=None, out=None):
    """``erase`` of one sample.

    Parameters
    ----------
    img : numpy.ndarray
        Any shape; numeric dtype.
    anchor, shape : sequence of float or None
        The regions (see :func:`erase_regions`); None for both erases nothing.
    layout : str
        The sample's layout (names ``axis_names`` and the channel axis ``C``).
    axes, axis_names, normalized, normalized_anchor, normalized_shape, centered_anchor :
        As DALI's ``erase`` arguments (``axis_names`` wins; both None means ``HW``).
    fill_value : float or sequence of float or None
        One value, or one per channel; default 0.
    out : numpy.ndarray, optional
        Where to write the result (``img``'s shape and dtype; e.g. a view of a batch buffer).

    Returns
    -------
    numpy.ndarray
        A copy of ``img`` (``out`` when given) with the regions filled.

    Raises
    ------
    ValueError
        Bad axes, region coordinates or a per-channel fill that does not match the channels.
    """
    img = np.asarray(img)
    ax = _axes(layout, img.ndim, axes, axis_names)
    regions = erase_regions(img.shape, anchor, shape, ax,
                            normalized_anchor=bool(normalized or normalized_anchor),
                            normalized_shape=bool(normalized or normalized_shape),
                            centered_anchor=bool(centered_anchor))
    fills = [0.0] if fill_value is None else [float(v) for v in np.ravel(fill_value)]
    if out is None:
        out = img.copy()
    else:
        np.copyto(out, img)
    if not regions:
        return out
    if len(fills) > 1:
        c = layout.find("C") if layout else -1
        if c < 0 or img.shape[c] != len(fills):
            raise ValueError("Multi-channel fill value does not match the number of "
                             f"channels in the input ({len(fills)} values for layout "
                             f"{layout!r}, shape {img.shape})")
        vals = np.array([_fill(v, img.dtype) for v in fills], img.dtype)
        bshape = [1] * img.ndim
        bshape[c] = len(fills)
        for idx in regions:
            region = out[idx]
            sub = list(bshape)
            sub[c] = region.shape[c]
            ci = idx[c].indices(img.shape[c])
            region[...] = vals[ci[0]:ci[1]].reshape(sub)
    else:
        v = _fill(fills[0], img.dtype)
        for idx in regions:
            out[idx] = v
    return out


@register("erase", "cpu")
@into_batch()
def erase_kernel(ctx, x, a, out):
    """``erase`` of one sample into its view of the batch buffer."""
    erase(x, a.get("anchor"), a.get("shape"), layout=ctx.in_metas[0].layout or "",
          axes=a.get("axes"), axis_names=a.get("axis_names"), normalized=a.get("normalized"),
          normalized_anchor=a.get("normalized_anchor"),
          normalized_shape=a.get("normalized_shape"), centered_anchor=a.get("centered_anchor"),
          fill_value=a.get("fill_value"), out=out)


_F = np.float32


def paste_geometry(h, w, *, ratio, paste_x=0.5, paste_y=0.5, min_canvas_size=0.0):
    """The canvas ``(height, width)`` and the image's ``(top, left)`` of ``paste``.

    Raises
    ------
    ValueError
        ``ratio`` below 1, or ``paste_x`` / ``paste_y`` outside ``[0, 1]``.
    """
    ratio, px, py = _F(ratio), _F(paste_x), _F(paste_y)
    if not ratio >= 1:
        raise ValueError(f"ratio of less than 1 is not supported (got {float(ratio)})")
    for name, v in (("paste_x", px), ("paste_y", py)):
        if not 0 <= v <= 1:
            raise ValueError(f"{name} must be in range [0, 1] (got {float(v)})")
    least = int(np.floor(_F(min_canvas_size or 0.0)))
    oh = max(int(np.floor(_F(h) * ratio)), least)
    ow = max(int(np.floor(_F(w) * ratio)), least)
    top = int(np.floor(py * _F(oh - h)))
    left = int(np.floor(px * _F(ow - w)))
    return (oh, ow), (top, left)


def paste(img, *, ratio, fill_value, paste_x=0.5, paste_y=0.5, min_canvas_size=0.0):
    """``paste`` of one ``(H, W, C)`` uint8 image.

    Parameters
    ----------
    img : numpy.ndarray
        ``(H, W, C)`` uint8.
    ratio, paste_x, paste_y, min_canvas_size : float
        As DALI's ``paste`` (see :func:`paste_geometry`).
    fill_value : sequence of float
        One value, or at least ``C`` values (the first ``C`` are used).

    Returns
    -------
    numpy.ndarray
        ``(canvas_h, canvas_w, C)`` uint8.

    Raises
    ------
    ValueError
        Bad geometry, or fewer fill values than channels.
    """
    img = np.asarray(img)
    h, w, c = img.shape
    (oh, ow), (top, left) = paste_geometry(h, w, ratio=ratio, paste_x=paste_x,
                                           paste_y=paste_y, min_canvas_size=min_canvas_size)
    fills = [float(v) for v in np.ravel(fill_value)]
    if len(fills) == 1:
        fills = fills * c
    if len(fills) < c:
        raise ValueError(f"{len(fills)} fill values for {c}-channel images")
    vals = np.array([fill_in_type(v, img.dtype) for v in fills[:c]], img.dtype)
    out = np.empty((oh, ow, c), img.dtype)
    out[...] = vals
    out[top:top + h, left:left + w] = img
    return out


@register("paste", "cpu")
@per_sample
def paste_kernel(ctx, ins, a, i):
    """``paste`` of every sample."""
    return paste(ins[0], ratio=a["ratio"], fill_value=a["fill_value"],
                 paste_x=a.get("paste_x", 0.5), paste_y=a.get("paste_y", 0.5),
                 min_canvas_size=a.get("min_canvas_size", 0.0))


def _grid_params(tile, ratio, angle, shift_x, shift_y):
    """float32 ``(cos, sin, tile, ratio, shift_x, shift_y)`` of ``grid_mask`` (C's ``cosf`` /
    ``sinf``).

    Raises
    ------
    ValueError
        A non-positive ``tile``.
    """
    tile = int(np.ravel(tile)[0]) if np.ndim(tile) else int(tile)
    if tile <= 0:
        raise ValueError(f"Tile argument must be positive (got {tile})")
    a = np.array([angle], _F)
    c, s = libm.unary("cos", a, _F)[0], libm.unary("sin", a, _F)[0]   # C's cosf / sinf
    return c, s, _F(tile), _F(ratio), _F(shift_x), _F(shift_y)


def grid_mask_mask(h, w, *, tile=100, ratio=0.5, angle=0.0, shift_x=0.0, shift_y=0.0):
    """The ``(h, w)`` bool mask of the pixels ``grid_mask`` zeroes.

    Raises
    ------
    ValueError
        A non-positive ``tile``.
    """
    c, s, t, r, sx, sy = _grid_params(tile, ratio, angle, shift_x, shift_y)
    xs = np.arange(w, dtype=_F)
    ys = np.arange(h, dtype=_F)[:, None]
    u = (xs * c - ys * s - sx) / t
    v = (xs * s + ys * c - sy) / t
    return (u - np.floor(u) < r) & (v - np.floor(v) < r)


def _build_grid(njit):
    @njit
    def grid_copy(src, out, h, w, pix, c, s, t, r, sx, sy):
        # src, out: the images' bytes (h * w * pix); out = src with the bytes of every masked
        # pixel zeroed (0 in every numeric type). Per row: the float32 operations of
        # grid_mask_mask for every pixel (a vectorised loop), the keep mask spread over the
        # pixel's bytes, and one masked copy.
        keep = np.empty(w, np.uint8)
        kb = np.empty(w * pix, np.uint8)
        n = w * pix
        for y in range(h):
            yf = np.float32(y)
            ys, yc = yf * s, yf * c
            for x in range(w):
                xf = np.float32(x)
                u = (xf * c - ys - sx) / t
                v = (xf * s + yc - sy) / t
                masked = (u - np.floor(u) < r) & (v - np.floor(v) < r)
                keep[x] = 0 if masked else 255
            if pix == 3:
                for x in range(w):
                    k = keep[x]
                    kb[3 * x] = k
                    kb[3 * x + 1] = k
                    kb[3 * x + 2] = k
            else:
                for x in range(w):
                    for j in range(pix):
                        kb[x * pix + j] = keep[x]
            srow = src[y * n:(y + 1) * n]
            orow = out[y * n:(y + 1) * n]
            for j in range(n):
                orow[j] = srow[j] & kb[j]
        return out
    return grid_copy


_grid_kernel = compiled(_build_grid)


def grid_mask_into(img, out, *, tile=100, ratio=0.5, angle=0.0, shift_x=0.0, shift_y=0.0):
    """``grid_mask`` of one ``(H, W, C)`` image written into ``out`` (same shape and dtype,
    C-contiguous; one compiled pass over the pixels). Returns ``out``.

    Raises
    ------
    ValueError
        A non-positive ``tile``.
    """
    img = np.ascontiguousarray(img)
    params = _grid_params(tile, ratio, angle, shift_x, shift_y)
    if out.size:
        h, w = img.shape[:2]
        _grid_kernel()(img.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8), h, w,
                       out.nbytes // (h * w), *params)
    return out


def grid_mask(img, *, tile=100, ratio=0.5, angle=0.0, shift_x=0.0, shift_y=0.0):
    """``grid_mask`` of one ``(H, W, C)`` image.

    Parameters
    ----------
    img : numpy.ndarray
        ``(H, W, C)``, any numeric dtype but float64.
    tile, ratio, angle, shift_x, shift_y :
        As DALI's ``grid_mask``: integer pixel coordinates ``(x, y)`` rotated and shifted in
        float32 (see :func:`grid_mask_mask`).

    Returns
    -------
    numpy.ndarray
        A copy of ``img``, zero at the masked pixels.
    """
    img = np.asarray(img)
    return grid_mask_into(img, np.empty(img.shape, img.dtype), tile=tile, ratio=ratio,
                          angle=angle, shift_x=shift_x, shift_y=shift_y)


@register("grid_mask", "cpu")
@into_batch()
def grid_mask_kernel(ctx, x, a, out):
    """``grid_mask`` of one sample into its view of the batch buffer."""
    grid_mask_into(x, out, tile=a.get("tile", 100), ratio=a.get("ratio", 0.5),
                   angle=a.get("angle", 0.0), shift_x=a.get("shift_x", 0.0),
                   shift_y=a.get("shift_y", 0.0))


def jitter(img, rng, *, n_degree=2, fill_value=0.0, mask=1):
    """``jitter`` of one ``(H, W, C)`` image.

    Parameters
    ----------
    img : numpy.ndarray
        ``(H, W, C)``, any numeric dtype.
    rng : numpy.random.Generator
        The sample's generator: ``dy`` then ``dx``, each ``(H, W)`` integers.
    n_degree : int
        DALI's ``nDegree`` (at least 1).
    fill_value : float
        Value where the source lies outside the image (``cast``'s conversion).
    mask : int
        0: return a copy of ``img`` (no numbers drawn).

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``img``.

    Raises
    ------
    ValueError
        ``n_degree`` below 1.
    """
    img = np.asarray(img)
    n = int(n_degree)
    if n < 1:
        raise ValueError(f"nDegree must be at least 1; got {n}")
    if not int(np.ravel(mask)[0] if np.ndim(mask) else mask):
        return img.copy()
    h, w = img.shape[:2]
    lo = -(n // 2)
    dy = rng.integers(lo, lo + n, size=(h, w))
    dx = rng.integers(lo, lo + n, size=(h, w))
    sy = np.arange(h)[:, None] + dy
    sx = np.arange(w)[None, :] + dx
    inside = (sy >= 0) & (sy < h) & (sx >= 0) & (sx < w)
    out = img[np.clip(sy, 0, h - 1), np.clip(sx, 0, w - 1)]
    out[~inside] = fill_in_type(0.0 if fill_value is None else fill_value, img.dtype)
    return out


@register("jitter", "cpu")
@per_sample
def jitter_kernel(ctx, ins, a, i):
    """``jitter`` of sample ``i``."""
    return jitter(ins[0], sample_rng(a["_seeds"], i), n_degree=a.get("nDegree", 2),
                  fill_value=a.get("fill_value", 0.0), mask=a.get("mask", 1))


_FREQ = 2 * np.pi / 128     # DALI's default frequency


def water_points(h, w, *, ampl_x=10.0, ampl_y=10.0, freq_x=_FREQ, freq_y=_FREQ, phase_x=0.0,
                 phase_y=0.0):
    """float32 source coordinates ``(sx, sy)`` (each ``(h, w)``, pixel-index space) of
    ``water``: ``sx = x + ampl_x sin(freq_x y + phase_x)``, ``sy = y + ampl_y cos(freq_y x +
    phase_y)`` with C's ``sinf`` / ``cosf``."""
    xs = np.arange(w, dtype=_F)
    ys = np.arange(h, dtype=_F)
    wx = _F(ampl_x) * libm.unary("sin", _F(freq_x) * ys + _F(phase_x), _F)
    wy = _F(ampl_y) * libm.unary("cos", _F(freq_y) * xs + _F(phase_y), _F)
    return xs[None, :] + wx[:, None], ys[:, None] + wy[None, :]


def water(img, *, interp="nn", fill_value=0.0, mask=1, **wave):
    """``water`` of one ``(H, W, C)`` image (``wave``: :func:`water_points`' arguments).

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``img``.

    Raises
    ------
    ValueError
        An interpolation other than ``nn`` / ``linear``.
    """
    img = np.asarray(img)
    if not int(np.ravel(mask)[0] if np.ndim(mask) else mask):
        return img.copy()
    sx, sy = water_points(img.shape[0], img.shape[1], **wave)
    # the points go to sample_points unchanged for both interpolations (measured on DALI:
    # nn takes floor(s), linear blends around s - 0.5)
    fill = fill_in_type(0.0 if fill_value is None else fill_value, img.dtype)
    return sample_points(img, sx, sy, interp=interp, fill_value=float(fill), op="water")


@register("water", "cpu")
@per_sample
def water_kernel(ctx, ins, a, i):
    """``water`` of every sample."""
    wave = {k: a[k] for k in ("ampl_x", "ampl_y", "freq_x", "freq_y", "phase_x", "phase_y")
            if a.get(k) is not None}
    return water(ins[0], interp=a.get("interp_type", "nn"), fill_value=a.get("fill_value"),
                 mask=a.get("mask", 1), **wave)
