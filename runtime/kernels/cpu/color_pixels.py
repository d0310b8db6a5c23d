"""The per-pixel loops of the colour ops, compiled with numba (:mod:`.jit`): one pass over the
image, GIL released, float32 arithmetic in a fixed order, DALI's rounding.

Two shapes of colour arithmetic cover ``brightness_contrast`` / ``brightness`` / ``contrast``
(:func:`scale_into`: ``v = float32(x) * mul + add``, the same for every element) and ``hsv`` /
``hue`` / ``saturation`` / ``color_twist`` / the float32 ``color_space_conversion`` s
(:func:`mat3_into`: ``v_i = ((m_i0 r + m_i1 g) + m_i2 b) [+ off_i]`` per pixel, summed in that
order). The loops read and write flat arrays with constant channel strides, so the compiler
vectorises them (a 256-entry table gather was slower than the vectorised arithmetic).

Conversion to the output type is that of ``cast`` (:mod:`.cast`): to an integer type round half
away from zero, saturate, NaN -> 0; to float32 / float64 the IEEE conversion. Output types the
loops do not write themselves (float16, bool, 64-bit integers) get the float32 values and then
``cast``.  Every function here writes one sample; the op kernels (:mod:`.color`) map them over
the batch on the pool threads.
"""
from __future__ import annotations

import sys

import numpy as np

from runtime.buffers import batch_views
from runtime.kernels.registry import sample_args
from runtime.threadpool import map_runs

from .cast import cast
from .jit import compiled

__all__ = ["scale_into", "scale_table", "mat3_into", "quantizer", "quantizers", "gray_into",
           "ycbcr_to_rgb_into", "luma_from_ycbcr_into", "grey_to_ycbcr_into", "reorder_into",
           "warm_up", "apply_scale", "apply_mat3", "into_batch"]

_F = np.float32

#: the uint32-word loops (:func:`gray_into`) read bytes in little-endian order
_LITTLE = sys.byteorder == "little"

#: output types the compiled loops convert to themselves (kind, and saturation bounds)
_DIRECT = {np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "uint32", "int32",
                                 "float32", "float64")}
#: input types the loops read directly (others are converted to float32 by numpy first)
_READ = {np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "uint32", "int32",
                               "float32", "float64")}


def quantizer(dtype):
    """``(mode, lo, hi)`` of an output type the loops write: mode 0 float (``lo``, ``hi``
    unused), 1 an integer type of up to 16 bits (bounds as float32: exact), 2 a 32-bit integer
    type (bounds as float64)."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if dt.itemsize <= 2:
            return 1, _F(info.min), _F(info.max)
        return 2, float(info.min), float(info.max)
    return 0, _F(0), _F(0)


def quantizers(njit):
    """``(q16, q32)``: compiled float32 -> integer conversions of ``cast`` (built with the
    caller's ``njit``; shared by these loops and :mod:`.fused_color`)."""
    half, zero = _F(0.5), _F(0.0)

    @njit
    def q16(v, lo, hi):
        # float32 v -> cast()'s integer for a type of <= 16 bits, all in float32 / int32 (the
        # compiler vectorises it): NaN -> 0, saturate, then round half away from zero from the
        # exact fraction v - trunc(v)
        v = v if v == v else zero
        v = v if v > lo else lo
        v = v if v < hi else hi
        t = np.int32(v)
        f = v - np.float32(t)
        return t + np.int32(f >= half) - np.int32(f <= -half)

    @njit
    def q32(v, lo, hi):
        # the same for 32-bit types in float64 (bounds beyond float32's exact integers): the
        # result's truncation (the store's conversion) is the integer; a float32 plus 0.5 is
        # exact in float64
        d = np.float64(v)
        d = d if d == d else 0.0
        d = d if d > lo else lo
        d = d if d < hi else hi
        return d + (0.5 if d >= 0.0 else -0.5)

    return q16, q32


@compiled
def _kernels(njit):
    """The compiled loops (one build)."""
    q16, q32 = quantizers(njit)

    @njit
    def scale(src, mul, add, mode, lo, hi, out):
        n = src.size
        if mode == 1:
            lo16, hi16 = np.float32(lo), np.float32(hi)
            for k in range(n):
                out[k] = q16(np.float32(src[k]) * mul + add, lo16, hi16)
        elif mode == 2:
            for k in range(n):
                out[k] = q32(np.float32(src[k]) * mul + add, lo, hi)
        else:
            for k in range(n):
                out[k] = np.float32(src[k]) * mul + add

    @njit
    def mat3_run(src, m, off, mode, lo, hi, out, i0, i2):
        m00, m01, m02 = m[0, 0], m[0, 1], m[0, 2]
        m10, m11, m12 = m[1, 0], m[1, 1], m[1, 2]
        m20, m21, m22 = m[2, 0], m[2, 1], m[2, 2]
        o0, o1, o2 = off[0], off[1], off[2]
        lo16, hi16 = np.float32(lo), np.float32(hi)
        n = src.size // 3
        if mode == 1:
            for k in range(n):
                j = 3 * k
                r = np.float32(src[j + i0])
                g = np.float32(src[j + 1])
                b = np.float32(src[j + i2])
                out[j] = q16(m00 * r + m01 * g + m02 * b + o0, lo16, hi16)
                out[j + 1] = q16(m10 * r + m11 * g + m12 * b + o1, lo16, hi16)
                out[j + 2] = q16(m20 * r + m21 * g + m22 * b + o2, lo16, hi16)
        elif mode == 2:
            for k in range(n):
                j = 3 * k
                r = np.float32(src[j + i0])
                g = np.float32(src[j + 1])
                b = np.float32(src[j + i2])
                out[j] = q32(m00 * r + m01 * g + m02 * b + o0, lo, hi)
                out[j + 1] = q32(m10 * r + m11 * g + m12 * b + o1, lo, hi)
                out[j + 2] = q32(m20 * r + m21 * g + m22 * b + o2, lo, hi)
        else:
            for k in range(n):
                j = 3 * k
                r = np.float32(src[j + i0])
                g = np.float32(src[j + 1])
                b = np.float32(src[j + i2])
                out[j] = m00 * r + m01 * g + m02 * b + o0
                out[j + 1] = m10 * r + m11 * g + m12 * b + o1
                out[j + 2] = m20 * r + m21 * g + m22 * b + o2

    @njit
    def mat3(src, m, off, bgr, mode, lo, hi, out):
        # out_i = ((m_i0 r + m_i1 g) + m_i2 b) + off_i in float32; an offset of -0.0 adds
        # nothing (x + -0.0 == x for every x, -0.0 included); the channel offsets as literal
        # constants in each call (so the interleaved loads vectorise)
        if bgr:
            mat3_run(src, m, off, mode, lo, hi, out, 2, 0)
        else:
            mat3_run(src, m, off, mode, lo, hi, out, 0, 2)

    @njit
    def gray_run(src, out, i0, i2):
        for k in range(src.size // 3):
            j = 3 * k
            acc = (np.int32(src[j + i0]) * 9798 + np.int32(src[j + 1]) * 19235
                   + np.int32(src[j + i2]) * 3735 + 16384)
            out[k] = acc >> 15

    @njit
    def gray(src, bgr, out):
        # the channel offsets as literal constants in each call (interleaved loads that
        # vectorise; offsets only known at run time made them gathers)
        if bgr:
            gray_run(src, out, 2, 0)
        else:
            gray_run(src, out, 0, 2)

    m8, s8, s16, s24 = np.uint32(255), np.uint32(8), np.uint32(16), np.uint32(24)

    @njit
    def luma_u32(r, g, b):
        return (r * np.uint32(9798) + g * np.uint32(19235) + b * np.uint32(3735)
                + np.uint32(16384)) >> np.uint32(15)

    @njit
    def bytes4(w, q):
        # pixels 4q .. 4q + 3 as twelve uint32 bytes (three little-endian words)
        x, y, z = w[3 * q], w[3 * q + 1], w[3 * q + 2]
        return (x & m8, (x >> s8) & m8, (x >> s16) & m8, x >> s24, y & m8, (y >> s8) & m8,
                (y >> s16) & m8, y >> s24, z & m8, (z >> s8) & m8, (z >> s16) & m8, z >> s24)

    @njit
    def gray_words(w, bgr, o):
        # four pixels per step: three uint32 words in, one out (the bytes taken apart with
        # shifts and masks vectorise well; the stride-3 byte loads of gray_run did not). The
        # weights stay literal constants in each loop (passed as values they were not folded
        # and the loop ran at half the speed).
        if bgr:
            for q in range(o.size):
                a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 = bytes4(w, q)
                o[q] = (luma_u32(a2, a1, a0) | (luma_u32(a5, a4, a3) << s8)
                        | (luma_u32(a8, a7, a6) << s16) | (luma_u32(a11, a10, a9) << s24))
        else:
            for q in range(o.size):
                a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 = bytes4(w, q)
                o[q] = (luma_u32(a0, a1, a2) | (luma_u32(a3, a4, a5) << s8)
                        | (luma_u32(a6, a7, a8) << s16) | (luma_u32(a9, a10, a11) << s24))

    @njit
    def ycc_px(src, j, inv_y, kr, kgb, kgr, kb, lo, hi):
        y = inv_y * (np.float32(src[j]) - np.float32(16.0))
        cb = np.float32(src[j + 1]) - np.float32(128.0)
        cr = np.float32(src[j + 2]) - np.float32(128.0)
        return (q16(y + kr * cr, lo, hi), q16(y - kgb * cb - kgr * cr, lo, hi),
                q16(y + kb * cb, lo, hi))

    @njit
    def ycbcr_rgb(src, inv_y, kr, kgb, kgr, kb, bgr, out):
        # stores at constant offsets in each loop (vectorisable)
        lo, hi = np.float32(0.0), np.float32(255.0)
        if bgr:
            for k in range(src.size // 3):
                j = 3 * k
                r, g, b = ycc_px(src, j, inv_y, kr, kgb, kgr, kb, lo, hi)
                out[j] = b
                out[j + 1] = g
                out[j + 2] = r
        else:
            for k in range(src.size // 3):
                j = 3 * k
                r, g, b = ycc_px(src, j, inv_y, kr, kgb, kgr, kb, lo, hi)
                out[j] = r
                out[j + 1] = g
                out[j + 2] = b

    @njit
    def grey_ycc(src, table, out):
        for k in range(src.size):
            out[3 * k] = table[src[k]]
            out[3 * k + 1] = 128
            out[3 * k + 2] = 128

    @njit
    def luma(src, inv_y, out):
        c16 = np.float32(16.0)
        lo, hi = np.float32(0.0), np.float32(255.0)
        for k in range(src.size // 3):
            j = 3 * k
            out[k] = q16(inv_y * (np.float32(src[j]) - c16), lo, hi)

    @njit
    def reorder(src, order, out):
        c = out.shape[1]
        for k in range(src.shape[0]):
            for j in range(c):
                out[k, j] = src[k, order[j]]

    @njit
    def swap3(src, out):
        for k in range(src.size // 3):
            j = 3 * k
            a, b, c = src[j], src[j + 1], src[j + 2]
            out[j] = c
            out[j + 1] = b
            out[j + 2] = a

    @njit
    def grey3(src, out):
        for k in range(src.size):
            v = src[k]
            out[3 * k] = v
            out[3 * k + 1] = v
            out[3 * k + 2] = v

    return {"scale": scale, "mat3": mat3, "gray": gray, "gray_words": gray_words,
            "ycbcr_rgb": ycbcr_rgb, "luma": luma, "reorder": reorder, "swap3": swap3,
            "grey3": grey3, "grey_ycc": grey_ycc}


def _flat_input(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    return x if x.dtype in _READ else x.astype(_F)


def scale_table(mul, add, dtype) -> np.ndarray:
    """``cast(float32(v) * mul + add, dtype)`` for ``v = 0..255`` (numpy, the loop's own
    arithmetic)."""
    return cast(np.arange(256, dtype=_F) * _F(mul) + _F(add), dtype)


def scale_into(x: np.ndarray, mul, add, out: np.ndarray) -> None:
    """``out = cast(float32(x) * mul + add)`` (``mul``, ``add`` float32), any shape, ``out``
    C-contiguous with ``x``'s shape."""
    k = _kernels()
    mul, add = _F(mul), _F(add)
    src = _flat_input(x).reshape(-1)
    if out.dtype in _DIRECT:
        mode, lo, hi = quantizer(out.dtype)
        k["scale"](src, mul, add, mode, float(lo), float(hi), out.reshape(-1))
    else:
        tmp = np.empty(src.shape, _F)
        k["scale"](src, mul, add, 0, 0.0, 0.0, tmp)
        out.reshape(-1)[...] = cast(tmp, out.dtype)


def apply_scale(x, mul, add, dtype, out=None) -> np.ndarray:
    """:func:`scale_into` into ``out`` (given: ``x``'s shape, ``dtype``, C-contiguous) or a new
    array; returns it."""
    x = np.asarray(x)
    out = np.empty(x.shape, np.dtype(dtype)) if out is None else out
    scale_into(x, mul, add, out)
    return out


#: "no offset": x + -0.0 is x for every float32 x (-0.0 included), unlike x + 0.0
_NO_OFF = np.full(3, -0.0, _F)


def mat3_into(x: np.ndarray, m, off, out: np.ndarray, *, bgr: bool = False) -> None:
    """``out_i = cast(((m_i0 r + m_i1 g) + m_i2 b) + off_i)`` per pixel (float32; ``off`` None
    adds nothing), ``x`` and ``out`` with 3 channels last, ``out`` C-contiguous.
    ``bgr``: the input's channels are B, G, R."""
    k = _kernels()
    src = _flat_input(x).reshape(-1)
    m = np.ascontiguousarray(m, dtype=_F)
    o = _NO_OFF if off is None else np.ascontiguousarray(off, dtype=_F).reshape(3)
    if out.dtype in _DIRECT:
        mode, lo, hi = quantizer(out.dtype)
        k["mat3"](src, m, o, bgr, mode, float(lo), float(hi), out.reshape(-1))
    else:
        tmp = np.empty(src.shape, _F)
        k["mat3"](src, m, o, bgr, 0, 0.0, 0.0, tmp)
        out.reshape(-1)[...] = cast(tmp, out.dtype)


def apply_mat3(x, m, off, dtype, *, bgr=False, out=None) -> np.ndarray:
    """:func:`mat3_into` into ``out`` (given: ``x``'s shape, ``dtype``, C-contiguous) or a new
    array; returns it."""
    x = np.asarray(x)
    out = np.empty(x.shape, np.dtype(dtype)) if out is None else out
    mat3_into(x, m, off, out, bgr=bgr)
    return out


def into_batch(out_shape=None):
    """Decorator: ``fn(ctx, x, args, out)`` (one sample ``x``, its arguments, the array to
    write) becomes a batch kernel whose outputs are views of ONE recycled buffer
    (:func:`runtime.buffers.batch_views`: its pages stay mapped and warm from batch to batch,
    where a fresh array per sample faults every page in again). ``out_shape(x, args)`` gives a
    sample's output shape (default: the input's); the dtype is the node's output dtype."""
    def deco(fn):
        def kernel(ctx, inputs, args):
            images, n = inputs[0], ctx.batch_size
            xs = [np.asarray(images[i] if len(images) > 1 else images[0]) for i in range(n)]
            per = [sample_args(ctx, args, i) for i in range(n)]
            shapes = [tuple(x.shape) if out_shape is None else out_shape(x, a)
                      for x, a in zip(xs, per)]
            dt = np.dtype(ctx.out_metas[0].dtype)
            outs = batch_views(shapes, dt)

            # one pool task per thread, each a run of consecutive samples
            map_runs(ctx.pool, n, lambda i: fn(ctx, xs[i], per[i], outs[i]))
            return [outs]
        kernel.__name__ = getattr(fn, "__name__", "kernel")
        kernel.__doc__ = fn.__doc__
        return kernel
    return deco


def gray_into(x: np.ndarray, out: np.ndarray, *, bgr: bool = False) -> None:
    """uint8 luma ``(9798 r + 19235 g + 3735 b + 2^14) >> 15`` of uint8 ``(..., 3)`` ``x``
    into uint8 ``(..., 1)`` ``out`` (whole groups of four pixels by the uint32-word loop, on
    little-endian machines; the rest by the byte loop: the same integers either way)."""
    src, dst = np.ascontiguousarray(x).reshape(-1), out.reshape(-1)
    k = _kernels()
    nq = dst.size // 4 if _LITTLE else 0
    if nq:
        # whole groups of four pixels as uint32 words (little-endian byte order)
        k["gray_words"](src[:12 * nq].view(np.uint32), bgr, dst[:4 * nq].view(np.uint32))
    if dst.size > 4 * nq:
        k["gray"](src[12 * nq:], bgr, dst[4 * nq:])


def ycbcr_to_rgb_into(x: np.ndarray, consts, out: np.ndarray, *, bgr: bool = False) -> None:
    """uint8 YCbCr -> RGB (or BGR): ``y = inv_y (Y - 16)``, ``r = y + kr cr``,
    ``g = y - kgb cb - kgr cr``, ``b = y + kb cb`` in float32, ``consts = (inv_y, kr, kgb, kgr,
    kb)`` float32."""
    inv_y, kr, kgb, kgr, kb = (_F(c) for c in consts)
    _kernels()["ycbcr_rgb"](np.ascontiguousarray(x).reshape(-1), inv_y, kr, kgb, kgr, kb,
                            bgr, out.reshape(-1))


def luma_from_ycbcr_into(x: np.ndarray, inv_y, out: np.ndarray) -> None:
    """uint8 ``cast(inv_y * (Y - 16))`` of uint8 YCbCr ``(..., 3)`` into ``(..., 1)``."""
    _kernels()["luma"](np.ascontiguousarray(x).reshape(-1), _F(inv_y), out.reshape(-1))


def grey_to_ycbcr_into(x: np.ndarray, mul, add, out: np.ndarray) -> None:
    """uint8 grey ``(..., 1)`` -> YCbCr ``(..., 3)``: ``Y = cast(x * mul + add)`` (float32,
    through :func:`scale_table`), Cb = Cr = 128."""
    _kernels()["grey_ycc"](np.ascontiguousarray(x).reshape(-1), scale_table(mul, add, np.uint8),
                           out.reshape(-1))


def reorder_into(x: np.ndarray, order, out: np.ndarray) -> None:
    """``out[..., j] = x[..., order[j]]`` (channel reversal, grey to three channels)."""
    x = np.ascontiguousarray(x)
    src, dst = x.reshape(-1, x.shape[-1]), out.reshape(-1, out.shape[-1])
    k = _kernels()
    if tuple(order) == (2, 1, 0) and src.shape[1] == 3:
        k["swap3"](src.reshape(-1), dst.reshape(-1))
    elif tuple(order) == (0, 0, 0) and src.shape[1] == 1:
        k["grey3"](src.reshape(-1), dst.reshape(-1))
    else:
        k["reorder"](src, np.asarray(order, np.int64), dst)


def warm_up() -> None:
    """Compile (or load) the loops now, for the common types (uint8 and float32 in, uint8 and
    float32 out)."""
    for dt in (np.uint8, np.float32):
        x = np.zeros((2, 2, 3), dt)
        for odt in (np.uint8, np.float32):
            apply_scale(x, 1.0, 0.0, odt)
            apply_mat3(x, np.eye(3), None, odt)
            apply_mat3(x, np.eye(3), np.zeros(3), odt)
