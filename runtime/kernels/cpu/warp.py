"""``warp_affine`` and ``rotate`` on the CPU: inverse-mapped sampling of images and sequences.

Semantics follow DALI 2.4 (measured on its CPU operators):

* output pixel ``(x, y)`` samples the input at ``M @ (x + 0.5, y + 0.5, 1)`` (``M`` a 2 x 3
  destination -> source map, ``(0, 0)`` the corner of the first pixel), computed in float32
  row by row in blocks of 256 pixels as DALI does (:func:`_source_points`);
* ``nn`` takes the pixel containing that point (``floor``); ``linear`` interpolates the four
  pixels around ``point - 0.5`` (float32 arithmetic: horizontally ``a (1 - fx) + b fx``, then
  ``top + (bottom - top) fy``);
* without ``fill_value`` the source coordinates are clamped (the border pixel repeats); with it,
  every tap outside the image reads ``fill_value``;
* the result is converted to the output type with ``cast``'s rules (round half away from zero,
  saturate).

With these, ``warp_affine`` matches DALI 2.4's CPU operator bit for bit; ``rotate`` differs
only by the float32 rounding of its matrix (see :mod:`runtime.kernels.params.warp`).
Registers ``warp_affine`` and ``rotate``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.params.warp import (affine_matrices, invert_affine, output_size,
                                         rotate_matrix, rotate_output_size)
from runtime.kernels.registry import per_sample, register

from .cast import cast, to_numpy_dtype
from .warp_sample_jit import SUPPORTED, affine_nearest, sampler, source_points as compiled_points

__all__ = ["fill_in_type", "sample_points", "warp_image", "warp_sample"]

_F = np.float32


#: DALI's CPU warp walks each output row in blocks of this many pixels (measured)
BLOCK = 256


def _source_points(m, out_hw):
    """The float32 source points of every output pixel, computed as DALI 2.4's CPU warp does
    (measured bit-exactly): row ``y`` starts at ``(M13 + M11 * 0.5) + M12 * (y + 0.5)``; it is
    walked in blocks of :data:`BLOCK` pixels, each block's start the previous one's plus
    ``M11 * BLOCK`` and every step to the right inside a block adding ``M11`` (``M21`` ... for
    the y coordinate), accumulated in float32 from left to right."""
    mm = np.asarray(m, dtype=np.float32)
    oh, ow = out_hw
    if oh and ow:       # the compiled walk: the same float32 additions, in the same order
        return compiled_points()(np.ascontiguousarray(mm[:2, :3]), oh, ow, BLOCK,
                                 np.empty((oh, ow), _F), np.empty((oh, ow), _F))
    return numpy_source_points(mm, out_hw)


def numpy_source_points(mm, out_hw):
    """:func:`_source_points` written with numpy accumulations (the reference of the
    compiled walk)."""
    oh, ow = out_hw
    y = np.arange(oh, dtype=_F) + _F(0.5)
    nb = -(-ow // BLOCK)
    out = []
    for r in (0, 1):
        if not ow:
            out.append(np.zeros((oh, 0), dtype=_F))
            continue
        starts = np.empty((oh, nb), dtype=_F)
        starts[:, 0] = (mm[r, 2] + mm[r, 0] * _F(0.5)) + mm[r, 1] * y
        starts[:, 1:] = mm[r, 0] * _F(BLOCK)
        starts = np.add.accumulate(starts, axis=1, dtype=_F)      # sequential, exact order
        steps = np.empty((oh, nb, BLOCK), dtype=_F)
        steps[:, :, 0] = starts
        steps[:, :, 1:] = mm[r, 0]
        pts = np.add.accumulate(steps, axis=2, dtype=_F)
        out.append(pts.reshape(oh, nb * BLOCK)[:, :ow])
    return out[0], out[1]


def _index(coord, n):
    """floor(coord) as an int64 index in [-2, n + 1]: further points behave like these, which
    stay outside the image even one tap to the right or below (linear)."""
    c = np.floor(np.nan_to_num(coord, nan=-2.0, posinf=n + 1, neginf=-2.0))
    return np.clip(c, -2, n + 1).astype(np.int64)


def _gather(img, yi, xi, fill):
    """``img[yi, xi]`` with coordinates clamped, or ``fill`` outside when it is given."""
    h, w = img.shape[:2]
    v = img[np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]
    if fill is None:
        return v
    outside = (yi < 0) | (yi >= h) | (xi < 0) | (xi >= w)
    if outside.any():
        v = v.copy()
        v[outside] = fill
    return v


def fill_in_type(value, dtype):
    """``value`` converted to ``dtype`` with ``cast``'s rules (round half away, saturate)."""
    return cast(np.array([value], dtype=np.float32), dtype)[0]


def sample_points(img, sx, sy, *, interp="linear", fill_value=None, dtype=None, op="warp"):
    """Sample one image at float32 source points (``(0, 0)`` the corner of the first pixel).

    Parameters
    ----------
    img : numpy.ndarray
        ``(H, W, C)`` or ``(H, W)``, any numeric dtype.
    sx, sy : numpy.ndarray
        float32 ``(out_h, out_w)`` source x and y of every output pixel.
    interp : {"nn", "linear"}
        ``nn``: the pixel containing the point; ``linear``: the four pixels around
        ``point - 0.5``, horizontally ``a (1 - fx) + b fx``, then ``top + (bottom - top) fy``
        (float32; DALI's order of operations, measured).
    fill_value : float or None
        Value of every tap outside the image; None clamps the coordinates.
    dtype : dtype-like or None
        Output type (default: the input's), converted with ``cast``'s rules.
    op : str
        The op named in errors.

    Returns
    -------
    numpy.ndarray
        ``(out_h, out_w[, C])`` of ``dtype``.

    Raises
    ------
    ValueError
        An interpolation other than ``nn`` / ``linear``.
    """
    img = np.asarray(img)
    out_dtype = img.dtype if dtype is None else dtype
    h, w = img.shape[:2]
    if interp not in ("nn", "linear"):
        raise ValueError(f"argument 'interp_type': {interp!r} is not supported by {op}; use nn "
                         f"or linear (as DALI's CPU operator)")
    if h == 0 or w == 0:            # nothing to sample: every point is outside
        out = np.zeros(sx.shape + img.shape[2:], dtype=np.float32)
        out[...] = 0.0 if fill_value is None else fill_value
        return cast(out, out_dtype)
    fast = _compiled_sample(img, sx, sy, interp, fill_value, out_dtype)
    if fast is not None:
        return fast
    if interp == "nn":
        fill = None if fill_value is None else fill_in_type(fill_value, img.dtype)
        out = _gather(img, _index(sy, h), _index(sx, w), fill)
        return cast(out, out_dtype)
    fx = sx - _F(0.5)
    fy = sy - _F(0.5)
    x0f, y0f = np.floor(fx), np.floor(fy)
    ax, ay = fx - x0f, fy - y0f
    if img.ndim == 3:
        ax, ay = ax[..., None], ay[..., None]
    x0, y0 = _index(x0f, w), _index(y0f, h)
    src = img.astype(_F, copy=False)
    fill = None if fill_value is None else _F(fill_value)
    a = _gather(src, y0, x0, fill)
    b = _gather(src, y0, x0 + 1, fill)
    c = _gather(src, y0 + 1, x0, fill)
    d = _gather(src, y0 + 1, x0 + 1, fill)
    one = _F(1)
    top = a * (one - ax) + b * ax
    bottom = c * (one - ax) + d * ax
    return cast(top + (bottom - top) * ay, out_dtype)


def _compiled_sample(img, sx, sy, interp, fill_value, out_dtype):
    """:func:`sample_points` by the compiled loop (same arithmetic), or None where that loop
    does not apply (other types, a type change, non-finite points)."""
    if img.dtype.type not in SUPPORTED or np.dtype(to_numpy_dtype(out_dtype)) != img.dtype \
            or img.ndim not in (2, 3) or sx.dtype != _F or sy.dtype != _F:
        return None
    if not (np.isfinite(sx).all() and np.isfinite(sy).all()):
        return None
    src = np.ascontiguousarray(img if img.ndim == 3 else img[:, :, None])
    out = np.empty(sx.shape + (src.shape[2],), img.dtype)
    is_int = img.dtype.kind in "iu"
    info = np.iinfo(img.dtype) if is_int else None
    has_fill = fill_value is not None
    fill_nn = fill_in_type(fill_value, img.dtype) if has_fill else img.dtype.type(0)
    fill_lin = _F(fill_value) if has_fill else _F(0)
    sampler()(src, np.ascontiguousarray(sx), np.ascontiguousarray(sy), out,
              interp == "linear", has_fill, fill_nn, fill_lin, is_int,
              float(info.min) if is_int else 0.0, float(info.max) if is_int else 0.0)
    return out if img.ndim == 3 else out[:, :, 0]


def warp_image(img, m, out_hw, *, interp="linear", fill_value=None, dtype=None):
    """Warp one image through the destination -> source map ``m``.

    Parameters
    ----------
    img : numpy.ndarray
        ``(H, W, C)`` or ``(H, W)``, any numeric dtype.
    m : sequence
        2 x 3 destination -> source affine map (see the module docstring).
    out_hw : tuple of int
        Output ``(height, width)``.
    interp, fill_value, dtype
        As :func:`sample_points`.

    Returns
    -------
    numpy.ndarray
        ``(out_h, out_w[, C])`` of ``dtype``.
    """
    if interp == "nn":
        fast = _compiled_nearest(np.asarray(img), m, out_hw, fill_value, dtype)
        if fast is not None:
            return fast
    sx, sy = _source_points(m, out_hw)
    return sample_points(img, sx, sy, interp=interp, fill_value=fill_value, dtype=dtype,
                         op="warp_affine and rotate")


#: matrix entries below this size keep every point of the walk finite (|point| < 2^100 * (3 +
#: width + height)), the condition of the compiled sampler
_POINT_BOUND = np.float32(2.0 ** 100)


def _compiled_nearest(img, m, out_hw, fill_value, dtype):
    """``nn`` :func:`warp_image` by the row-wise compiled sampler, which computes the points
    of :func:`_source_points` row by row (the same float32 walk) and samples as
    :func:`sample_points`'s compiled loop does; None where that loop would not apply (other
    types, a type change, an empty image or output, points that could be infinite)."""
    out_dtype = img.dtype if dtype is None else np.dtype(to_numpy_dtype(dtype))
    oh, ow = out_hw
    if img.dtype.type not in SUPPORTED or out_dtype != img.dtype or img.ndim not in (2, 3) \
            or 0 in img.shape[:2] or not oh or not ow or oh + ow > 1 << 20:
        return None
    mm = np.ascontiguousarray(np.asarray(m, dtype=np.float32)[:2, :3])
    if not (np.abs(mm) < _POINT_BOUND).all():       # (NaN compares False)
        return None
    src = np.ascontiguousarray(img if img.ndim == 3 else img[:, :, None])
    out = np.empty((oh, ow, src.shape[2]), img.dtype)
    has_fill = fill_value is not None
    fill_nn = fill_in_type(fill_value, img.dtype) if has_fill else img.dtype.type(0)
    affine_nearest()(src, mm, BLOCK, out, has_fill, fill_nn)
    return out if img.ndim == 3 else out[:, :, 0]


def _frames_layout(layout, ndim):
    """Whether samples are sequences (``FHWC``); checks the layout."""
    lay = layout or {2: "HW", 3: "HWC", 4: "FHWC"}.get(ndim, "")
    if lay in ("HW", "HWC") and ndim == len(lay):
        return False
    if lay == "FHWC" and ndim == 4:
        return True
    if lay in ("DHWC", "FDHWC"):
        raise ValueError(f"volumetric data (layout {lay!r}) is not supported by ndd's "
                         f"warp_affine / rotate yet")
    raise ValueError(f"expected layout HWC (or HW) images or FHWC sequences, got layout "
                     f"{layout!r} with {ndim} dimensions")


def warp_sample(x, layout, m, out_hw, **kw):
    """:func:`warp_image` of an image, or of every frame of an ``FHWC`` sequence (``m`` one
    matrix, or a list of one per frame)."""
    x = np.asarray(x)
    if _frames_layout(layout, x.ndim):
        per_frame = m if isinstance(m, list) else [m] * len(x)
        frames = [warp_image(f, mf, out_hw, **kw) for f, mf in zip(x, per_frame)]
        if not frames:
            return np.zeros((0, *out_hw, x.shape[-1]),
                            dtype=to_numpy_dtype(kw.get("dtype") or x.dtype))
        return np.stack(frames)
    return warp_image(x, m, out_hw, **kw)


def _hw(x, layout):
    x = np.asarray(x)
    return x.shape[1:3] if _frames_layout(layout, x.ndim) else x.shape[:2]


def _options(ctx, a):
    return {"interp": a.get("interp_type", "linear"), "fill_value": a.get("fill_value"),
            "dtype": ctx.out_metas[0].dtype}


@register("warp_affine", "cpu")
@per_sample
def warp_affine(ctx, ins, a, i):
    """``warp_affine``: the matrix from the ``mtx`` input or the ``matrix`` argument."""
    layout = ctx.in_metas[0].layout
    if len(ins) > 1:
        raw = ins[1]
    elif a.get("matrix") is not None:
        raw = a["matrix"]
    else:
        raise ValueError("warp_affine needs a transform: the 'matrix' argument or the 'mtx' "
                         "input")
    x = np.asarray(ins[0])
    m = affine_matrices(raw, len(x) if _frames_layout(layout, x.ndim) else None)
    if not a.get("inverse_map", True):
        m = [invert_affine(mf) for mf in m] if isinstance(m, list) else invert_affine(m)
    hw = tuple(int(s) for s in _hw(ins[0], layout))
    return warp_sample(ins[0], layout, m, output_size(a.get("size"), hw), **_options(ctx, a))


@register("rotate", "cpu")
@per_sample
def rotate(ctx, ins, a, i):
    """``rotate``: counter-clockwise by ``angle`` degrees about the image center (one angle per
    frame of a sequence when the argument has one value per frame)."""
    layout = ctx.in_metas[0].layout
    x = np.asarray(ins[0])
    frames = len(x) if _frames_layout(layout, x.ndim) else None
    angles = a["angle"]
    angles = list(np.asarray(angles, dtype=np.float64).reshape(-1).tolist())
    if len(angles) != 1 and len(angles) != frames:
        more = f" or {frames} (one per frame)" if frames is not None else ""
        raise ValueError(f"argument 'angle' must be one number per sample{more}, got "
                         f"{len(angles)} values")
    hw = tuple(int(s) for s in _hw(x, layout))
    if a.get("size"):
        out_hw = output_size(a["size"], hw)
    elif a.get("keep_size", False):
        out_hw = hw
    else:       # per-frame angles: a canvas that holds every frame's (DALI, measured)
        sizes = [rotate_output_size(hw, ang) for ang in angles]
        out_hw = (max(s[0] for s in sizes), max(s[1] for s in sizes))
    if len(angles) == 1:
        m = rotate_matrix(angles[0], hw, out_hw)
    else:
        m = [rotate_matrix(ang, hw, out_hw) for ang in angles]
    return warp_sample(ins[0], layout, m, out_hw, **_options(ctx, a))
