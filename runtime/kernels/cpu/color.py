"""CPU kernels of the color ops: ``brightness_contrast``, ``hsv`` and their single-purpose
forms ``brightness``, ``contrast``, ``hue``, ``saturation``, plus ``color_twist``.

``brightness_contrast`` follows DALI 2.4 bit for bit (measured): in float32,
``out = in * (b * c) + (shift * range + b * (center - c * center))``, then ``cast`` to the output
type; ``range`` is 1 for float outputs and the type's maximum otherwise, ``center`` defaults to
``(max + 1) / 2`` of an integer input type (128 for uint8) and 0.5 for floats.
``hsv`` is a 3 x 3 linear map of RGB (:func:`hsv_matrix`), applied in float32 as DALI does;
its matrix agrees with DALI's to float32 rounding (not bit for bit: docs/semantics.md).
``brightness`` / ``contrast`` are ``brightness_contrast`` with the other factor 1 (bit-exact
with DALI, measured); ``hue`` / ``saturation`` are ``hsv`` with the output type defaulting to the
input's; ``color_twist`` is :func:`color_twist` (one affine map, DALI's composition, measured).
``color_space_conversion`` is :func:`color_space_conversion` (uint8; bit-exact with DALI on
every tested pixel, see its docstring).
The pixels are computed by the compiled loops of :mod:`.color_pixels` (one vectorised pass per
image, the float32 operations in the order given here); the kernels write every sample into
one recycled batch buffer (:func:`.color_pixels.into_batch`). Registers all eight.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.registry import register

from .cast import cast, to_numpy_dtype
from .color_pixels import (apply_mat3, apply_scale, gray_into, grey_to_ycbcr_into, into_batch,
                           luma_from_ycbcr_into, mat3_into, reorder_into, ycbcr_to_rgb_into)

__all__ = ["brightness_contrast", "default_center", "output_range", "hsv", "hsv_matrix",
           "color_twist", "color_twist_params", "brightness_contrast_params",
           "color_space_conversion", "CHANNELS"]

_F = np.float32


def default_center(dtype) -> float:
    """``contrast_center``'s default for an input type."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return (int(np.iinfo(dt).max) + 1) / 2
    return 0.5


def output_range(dtype) -> float:
    """What ``brightness_shift`` 1.0 means in an output type."""
    dt = np.dtype(dtype)
    return float(np.iinfo(dt).max) if dt.kind in "iu" else 1.0


def brightness_contrast(x, *, brightness=1.0, brightness_shift=0.0, contrast=1.0,
                        contrast_center=None, dtype=None, out=None):
    """Adjust one sample (see the module docstring).

    Returns
    -------
    numpy.ndarray
        Same shape; ``dtype`` (default: the input's).
    """
    x = np.asarray(x)
    out_dt = x.dtype if dtype is None else to_numpy_dtype(dtype)
    mul, add = brightness_contrast_params(x.dtype, out_dt, brightness, brightness_shift,
                                          contrast, contrast_center)
    return apply_scale(x, mul, add, out_dt, out)


@register("brightness_contrast", "cpu")
@into_batch()
def brightness_contrast_kernel(ctx, x, a, out):
    """``brightness_contrast`` of sample ``i``."""
    return brightness_contrast(
        x, brightness=a.get("brightness", 1.0), brightness_shift=a.get("brightness_shift",
                                                                            0.0),
        contrast=a.get("contrast", 1.0), contrast_center=a.get("contrast_center"),
        dtype=ctx.out_metas[0].dtype, out=out)


# ------------------------------------------------------------------------------------- hsv
#: RGB -> YIQ (NTSC); its inverse maps back. DALI 2.4's hsv uses this pair (its matrices agree
#: with these to float32 rounding: see docs/semantics.md)
RGB_TO_YIQ = ((0.299, 0.587, 0.114),
              (0.596, -0.274, -0.321),
              (0.211, -0.523, 0.311))


def _matmul(a, b):
    """3 x 3 product in Python floats, summed in index order (no BLAS: the same bits on every
    CPU)."""
    return tuple(tuple(a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j]
                       for j in range(3)) for i in range(3))


def _inverse(m):
    """3 x 3 inverse by cofactors in Python floats (no LAPACK)."""
    (a, b, c), (d, e, f), (g, h, i) = m
    cof = ((e * i - f * h, c * h - b * i, b * f - c * e),
           (f * g - d * i, a * i - c * g, c * d - a * f),
           (d * h - e * g, b * g - a * h, a * e - b * d))
    det = a * cof[0][0] + b * cof[1][0] + c * cof[2][0]
    return tuple(tuple(v / det for v in row) for row in cof)


YIQ_TO_RGB = _inverse(RGB_TO_YIQ)


def hsv_matrix(hue=0.0, saturation=1.0, value=1.0) -> np.ndarray:
    """The float32 3 x 3 RGB matrix of an hsv adjustment: to YIQ, the IQ plane rotated by
    ``-hue`` degrees and scaled by ``saturation``, everything by ``value``, back to RGB
    (computed in double with the C library's ``cos`` / ``sin``, rounded once)."""
    r = math.radians(float(hue))
    c, s = math.cos(r), math.sin(r)
    k, v = float(saturation), float(value)
    h = ((v, 0.0, 0.0), (0.0, v * k * c, v * k * s), (0.0, -v * k * s, v * k * c))
    return np.array(_matmul(_matmul(YIQ_TO_RGB, h), RGB_TO_YIQ), dtype=np.float32)


def hsv(x, *, hue=0.0, saturation=1.0, value=1.0, dtype=None, out=None):
    """Adjust hue, saturation and value of one RGB sample (channels last).

    ``out_i = M_i0 r + M_i1 g + M_i2 b`` in float32, summed in that order (DALI's), with
    ``M = hsv_matrix(...)``, then converted to ``dtype`` (default: the input's) with ``cast``.

    Raises
    ------
    ValueError
        Not 3 channels.
    """
    x = np.asarray(x)
    if x.shape[-1] != 3:
        raise ValueError(f"hsv expects RGB images (3 channels), got {x.shape[-1]} channels")
    return apply_mat3(x, hsv_matrix(hue, saturation, value), None,
                      x.dtype if dtype is None else to_numpy_dtype(dtype), out=out)


@register("hsv", "cpu")
@into_batch()
def hsv_kernel(ctx, x, a, out):
    """``hsv`` of sample ``i``."""
    return hsv(x, hue=a.get("hue", 0.0), saturation=a.get("saturation", 1.0),
               value=a.get("value", 1.0), dtype=ctx.out_metas[0].dtype, out=out)


@register("brightness", "cpu")
@into_batch()
def brightness_kernel(ctx, x, a, out):
    """``brightness`` of sample ``i``: ``brightness_contrast`` with ``contrast`` 1."""
    return brightness_contrast(x, brightness=a.get("brightness", 1.0),
                               brightness_shift=a.get("brightness_shift", 0.0),
                               dtype=ctx.out_metas[0].dtype, out=out)


@register("contrast", "cpu")
@into_batch()
def contrast_kernel(ctx, x, a, out):
    """``contrast`` of sample ``i``: ``brightness_contrast`` with ``brightness`` 1."""
    return brightness_contrast(x, contrast=a.get("contrast", 1.0),
                               contrast_center=a.get("contrast_center"),
                               dtype=ctx.out_metas[0].dtype, out=out)


@register("hue", "cpu")
@into_batch()
def hue_kernel(ctx, x, a, out):
    """``hue`` of sample ``i``: ``hsv`` with only ``hue`` (``image_type`` is not used, as in
    DALI 2.4, which treats every input as RGB)."""
    return hsv(x, hue=a.get("hue", 0.0), dtype=ctx.out_metas[0].dtype, out=out)


@register("saturation", "cpu")
@into_batch()
def saturation_kernel(ctx, x, a, out):
    """``saturation`` of sample ``i``: ``hsv`` with only ``saturation``."""
    return hsv(x, saturation=a.get("saturation", 1.0), dtype=ctx.out_metas[0].dtype, out=out)


def color_twist(x, *, hue=0.0, saturation=1.0, brightness=1.0, contrast=1.0, dtype=None,
                out=None):
    """Hue, saturation, contrast and brightness of one RGB sample (channels last) in one affine
    map, composed as DALI 2.4 does (measured on its CPU operator):
    ``out_i = (M_i0 r + M_i1 g + M_i2 b) + off`` in float32, with ``M = hsv_matrix(hue,
    saturation, 1) * (brightness * contrast)`` (the product in double, rounded once) and
    ``off = brightness * (center - contrast * center)`` in float32, ``center`` being 0.5 for a
    float input and 128 for every integer input type (DALI's, measured: int16 and int32 too,
    unlike ``contrast``'s default center); then ``cast`` to
    ``dtype`` (default: the input's). The hsv matrix maps grey to grey (up to the 0.001 by
    which the NTSC I and Q rows miss summing to 0), so this is, nearly, contrast about
    ``center`` and brightness applied after hue and saturation.

    Raises
    ------
    ValueError
        Not 3 channels.
    """
    x = np.asarray(x)
    if x.shape[-1] != 3:
        raise ValueError(f"color_twist expects RGB images (3 channels), got {x.shape[-1]} "
                         f"channels")
    m, off = color_twist_params(x.dtype, hue, saturation, brightness, contrast)
    return apply_mat3(x, m, np.full(3, off, _F), x.dtype if dtype is None
                      else to_numpy_dtype(dtype), out=out)


def color_twist_params(in_dtype, hue=0.0, saturation=1.0, brightness=1.0, contrast=1.0):
    """``(M, off)`` of :func:`color_twist`: the float32 3 x 3 matrix and the float32 offset
    added to every channel."""
    b, c = float(brightness), float(contrast)
    m = (hsv_matrix(hue, saturation, 1.0).astype(np.float64) * (b * c)).astype(_F)
    cc = _F(0.5 if np.dtype(in_dtype).kind == "f" else 128.0)
    return m, _F(b) * (cc - _F(c) * cc)


def brightness_contrast_params(in_dtype, out_dtype, brightness=1.0, brightness_shift=0.0,
                               contrast=1.0, contrast_center=None):
    """``(mul, add)`` float32 of :func:`brightness_contrast`: ``out = cast(x * mul + add)``."""
    center = default_center(in_dtype) if contrast_center is None else contrast_center
    b, c, cc = _F(brightness), _F(contrast), _F(center)
    return b * c, _F(brightness_shift) * _F(output_range(out_dtype)) + b * (cc - c * cc)


@register("color_twist", "cpu")
@into_batch()
def color_twist_kernel(ctx, x, a, out):
    """``color_twist`` of sample ``i``."""
    return color_twist(x, hue=a.get("hue", 0.0), saturation=a.get("saturation", 1.0),
                       brightness=a.get("brightness", 1.0), contrast=a.get("contrast", 1.0),
                       dtype=ctx.out_metas[0].dtype, out=out)


# --------------------------------------------------------------- color_space_conversion
#: channels of each color space
CHANNELS = {"RGB": 3, "BGR": 3, "YCbCr": 3, "GRAY": 1}

#: full-range luma / chroma weights of ITU-R BT.601 (Kr = 0.299, Kb = 0.114), per output row
_LUMA = (0.299, 0.587, 0.114)
_CB = (-0.16873589, -0.33126411, 0.5)
_CR = (0.5, -0.41868759, -0.08131241)
#: BT.601 studio range: luma spans 219 of 255 codes (16..235), chroma 224 (16..240)
_Y_SCALE, _C_SCALE = 219 / 255, 224 / 255


def _ycbcr_weights():
    """float32 ``(3, 3)`` weights (each ``scale * c`` computed in double and rounded once: DALI's
    weights; rounding ``scale`` first differs from it at a few ties per million pixels) and
    offsets of RGB -> YCbCr, summed ``((w0 r + w1 g) + w2 b) + off``."""
    w = np.array([[_Y_SCALE * c for c in _LUMA], [_C_SCALE * c for c in _CB],
                  [_C_SCALE * c for c in _CR]]).astype(_F)
    return w, np.array([16, 128, 128], _F)


_YCC_W, _YCC_OFF = _ycbcr_weights()
_INV_Y, _INV_C = _F(255 / 219), _F(255 / 224)
#: y scale, then the float32 products inv_c * k of the chroma terms of YCbCr -> RGB
_YCC_TO_RGB = (_INV_Y, _INV_C * _F(1.402), _INV_C * _F(0.34413629), _INV_C * _F(0.71413629),
               _INV_C * _F(1.772))


def color_space_conversion(x, image_type: str, output_type: str, out=None) -> np.ndarray:
    """Convert one uint8 sample (channels last, any leading dimensions) between color spaces.

    RGB <-> BGR reverses the channels, GRAY -> RGB / BGR repeats the one channel; RGB / BGR ->
    GRAY is BT.601 luma in 15-bit fixed point; YCbCr is BT.601's studio range (Y 16..235,
    Cb / Cr 16..240 around 128), converted in float32 and rounded to nearest with saturation;
    GRAY <-> YCbCr scales luma by 219 / 255 (and back) with chroma 128. Source: DALI 2.4's CPU
    ``color_space_conversion`` (every formula and its rounding measured against it on a million
    random pixels: no difference).

    Parameters
    ----------
    x : numpy.ndarray
        uint8, ``(..., C)`` with ``C`` the channels of ``image_type``.
    image_type, output_type : str
        ``RGB``, ``BGR``, ``GRAY`` or ``YCbCr`` (``compiler.ops.color.CSC_CONVERSIONS``).

    Returns
    -------
    numpy.ndarray
        uint8, ``(..., C_out)``.

    Raises
    ------
    ValueError
        The channel count does not match ``image_type`` (DALI's words: "Expected 3. Got 1"), or
        an unsupported conversion.
    """
    x = np.asarray(x)
    want = CHANNELS.get(image_type)
    if want is None or output_type not in CHANNELS or image_type == output_type:
        raise ValueError(f"conversion not supported: {image_type} to {output_type}")
    if x.shape[-1] != want:
        raise ValueError(f"color_space_conversion: image_type {image_type} has {want} channels: "
                         f"Expected {want}. Got {x.shape[-1]}")
    if out is None:
        out = np.empty(x.shape[:-1] + (CHANNELS[output_type],), np.uint8)
    if image_type == "YCbCr":
        if output_type == "GRAY":
            luma_from_ycbcr_into(x, _INV_Y, out)
        else:
            ycbcr_to_rgb_into(x, _YCC_TO_RGB, out, bgr=output_type == "BGR")
    elif image_type == "GRAY":
        if output_type == "YCbCr":
            grey_to_ycbcr_into(x, _F(_Y_SCALE), _F(16), out)
        else:
            reorder_into(x, (0, 0, 0), out)
    elif output_type == "GRAY":
        gray_into(x, out, bgr=image_type == "BGR")
    elif output_type == "YCbCr":
        mat3_into(x, _YCC_W, _YCC_OFF, out, bgr=image_type == "BGR")
    else:
        reorder_into(x, (2, 1, 0), out)
    return out


@register("color_space_conversion", "cpu")
@into_batch(lambda x, a: tuple(x.shape[:-1]) + (CHANNELS[a["output_type"]],))
def color_space_conversion_kernel(ctx, x, a, out):
    """``color_space_conversion`` of sample ``i``."""
    color_space_conversion(x, a["image_type"], a["output_type"], out)
