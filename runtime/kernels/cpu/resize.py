"""CPU kernels of ``resize`` and ``random_resized_crop``: DALI's resampling (2D images).

Separable resampling: per output axis a banded matrix (source taps + weights, restricted to the
source pixels actually read) is built from DALI's filter definition and cached; each pass is one
torch sparse-CSR (or, for wide filters, dense) matrix product on a 2-D float32 view with that
axis as rows, so the work is proportional to taps x pixels.  Intermediate values
are float32, as in DALI's CPU kernel; integer outputs are rounded half away from zero and
saturated.  Filters live in :mod:`.resize_filters`, tap tables in :mod:`.resize_taps`; the
output size and source window come from :mod:`runtime.kernels.params.resize_geometry`.

uint8 linear/triangular fast paths (within 1 of the float32 path, :mod:`.resize_uint8`): both
windows integer (``random_resized_crop``, fixed sizes) -> torch's antialiased bilinear plus
exact edge lines (:func:`.resize_uint8.fast_uint8`); only W integer (portrait
``resize_shorter``) -> torch along W, a weighted sum of rows along H
(:func:`.resize_uint8.mixed_uint8`); a fractional W window (landscape
``resize_shorter``) and the other tent cases, 3 channels -> :func:`.resize_frac.frac_uint8`
(row sums on a pixel-transposed copy).  Their heavy work runs with the GIL released (single
torch calls on whole images, or a TorchScript function); the per-call numpy work is small
(a few lines).

Filter semantics (DALI 2.4 CPU ``resize``, checked against the operator):

* Each output pixel ``i`` maps to the source point ``c = origin + (i + 0.5) * scale`` where
  ``scale = (window_end - window_start) / out_size`` (negative when flipped).
* The filter is a lookup table (linearly interpolated) of the kernel shape, stretched to a
  width ``s`` (in source pixels) and centred at ``c``; taps are the integer source pixels whose
  centre ``j + 0.5`` falls inside the window; weights are normalised to sum to 1; taps outside
  the image repeat the edge pixel.
* Kernel widths ``s``: LINEAR 2 (tent); TRIANGULAR ``2 * max(r, 0.5)`` with ``r = in/out`` when
  antialiasing a downscale, else 1; GAUSSIAN ``exp(-x^2)`` on ``x in [-2, 2]`` stretched to
  ``max(1, 2r)``; CUBIC (Catmull-Rom, a = -0.5) ``2 * max(2, r)`` with ``r = 2 in/out`` when
  antialiasing, else 2; LANCZOS3 ``2 * max(3, r)`` with ``r = 3 in/out`` likewise.
* LINEAR with ``antialias`` used for a downscale is TRIANGULAR.  NN picks
  ``floor(origin + (i + 0.5) * scale)``, clamped; NN never antialiases.
* ``min_filter`` applies on an axis whose output is smaller than the source window, otherwise
  ``mag_filter``; ``interp_type`` sets both.

Functions here are thread-safe (module-level and cached tables are read-only) and start no
threads.  Registers the ``resize`` and ``random_resized_crop`` kernels.
"""
from __future__ import annotations

import numpy as np
import torch

from runtime.kernels.params.interp import INTERP_TYPES, interp_name
from runtime.kernels.params.layouts import hw_axes, meta_layout
from runtime.kernels.params.resize_geometry import (ResizeParams, resize_output_shape,
                                                    resize_size_args)
from runtime.kernels.params.windows import random_window
from runtime.kernels.registry import per_sample, register
from runtime.profile import measured

from .resize_frac import frac_uint8
from .resize_taps import axis_matrix, axis_taps
from .resize_uint8 import TORCH_KINDS, fast_uint8, mixed_uint8

__all__ = ["resample", "resample_part", "resize", "resize_sample", "separable",
           "INTERP_TYPES", "ResizeParams", "resize_output_shape"]

_f32 = np.float32

_IN_DTYPES = (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32)
_OUT_DTYPES = _IN_DTYPES
_IN_DTYPE_SET = frozenset(np.dtype(d) for d in _IN_DTYPES)
_LAYOUTS = ("HWC", "CHW", "HW")


def _transposed(a: np.ndarray) -> np.ndarray:
    """Contiguous copy of the 2-D transpose of ``a``."""
    return np.ascontiguousarray(a.T)


# --------------------------------------------------------------------------------------------
# Argument handling
# --------------------------------------------------------------------------------------------

def _out_dtype(dtype, in_dtype: np.dtype) -> np.dtype:
    if dtype is None:
        return in_dtype
    name = getattr(dtype, "name", None)
    try:
        if isinstance(name, str) and not isinstance(dtype, (np.dtype, type)):
            dt = np.dtype({"FLOAT": "float32", "UINT8": "uint8", "INT8": "int8",
                           "UINT16": "uint16", "INT16": "int16", "INT32": "int32"}
                          .get(name.upper(), name.lower()))
        elif isinstance(dtype, torch.dtype):
            dt = np.dtype(str(dtype).replace("torch.", ""))
        else:
            dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"resize: `dtype` must be a numpy/torch dtype or type name, "
                        f"got {dtype!r}") from exc
    if dt not in [np.dtype(d) for d in _OUT_DTYPES]:
        raise ValueError(f"resize: output `dtype` must be one of "
                         f"{[np.dtype(d).name for d in _OUT_DTYPES]}, got {dt.name!r}")
    return dt


def _to_output(res: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Float32 result -> ``dt``: integers round half away from zero and saturate.

    ``res`` (float32 numpy array) may be overwritten.
    """
    if dt.kind == "f":
        return res.astype(dt, copy=False)
    info = np.iinfo(dt)
    if dt.itemsize >= 4:    # float32 cannot hold the int32 limits exactly
        res = res.astype(np.float64)
    if info.min == 0:
        # non-negative results: half away from zero == floor(x + 0.5); the cast truncates
        np.add(res, 0.5, out=res)
        np.clip(res, 0, info.max, out=res)
    else:
        np.add(res, np.copysign(res.dtype.type(0.5), res), out=res)
        np.trunc(res, out=res)
        np.clip(res, info.min, info.max, out=res)
    return res.astype(dt)


def separable(hwc: np.ndarray, oh: int, ow: int, params: ResizeParams, kind_y: str,
               kind_x: str, antialias: bool, out_dt: np.dtype) -> np.ndarray:
    """Two 1-D passes (sparse/dense matrix products in float32) -> ``(oh, ow, C)`` ``out_dt``.

    Only the source window the filters read is touched.  Each pass multiplies a cached axis
    matrix by a 2-D array whose rows run along that axis (``(H, W*C)`` for the H pass,
    ``(W*C, H)`` for the W pass, channel-interleaved), so the data is transposed twice; the
    order is chosen to move the fewest elements.
    """
    in_h, in_w, chans = hwc.shape
    ylo, yhi, my = axis_matrix(in_h, oh, float(params.y0), float(params.y1), kind_y,
                                antialias, True, 1)
    xlo, xhi, mx = axis_matrix(in_w, ow, float(params.x0), float(params.x1), kind_x,
                                antialias, False, chans)
    hc, wc = yhi - ylo, xhi - xlo
    # elements moved by the transposes (the products cost about the same either way)
    h_first = oh * wc + oh * ow <= hc * wc + hc * ow
    crop = hwc[ylo:yhi, xlo:xhi].reshape(hc, wc * chans)
    if h_first:
        # H first: (hc, wc*C) -> (oh, wc*C) -> T -> (ow*C, oh) -> T -> (oh, ow*C)
        t = my @ torch.from_numpy(crop.astype(np.float32))
        t = mx @ torch.from_numpy(_transposed(t.numpy()))
        res = _transposed(_to_output(t.numpy(), out_dt))
    else:
        # W first: (hc, wc*C) -> T -> (ow*C, hc) -> T -> (hc, ow*C) -> (oh, ow*C)
        t = mx @ torch.from_numpy(_transposed(crop).astype(np.float32, copy=False))
        t = my @ torch.from_numpy(_transposed(t.numpy()))
        res = _to_output(t.numpy(), out_dt)
    return res.reshape(oh, ow, chans)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

@measured("resample")
def resample(image, params: ResizeParams, interp_type="linear", antialias=True, dtype=None,
             min_filter=None, mag_filter=None, layout="HWC", out_window=None) -> np.ndarray:
    """Resample one image onto the output grid described by ``params`` (DALI ``resize``).

    Parameters
    ----------
    image : numpy.ndarray
        One sample, layout ``layout``: ``HWC`` ``(H, W, C)``, ``CHW`` ``(C, H, W)`` or ``HW``.
        dtype uint8, int8, uint16, int16, int32 or float32.
    params : ResizeParams
        Output extent and source window from :func:`resize_output_shape` (must have been
        computed for this image's ``(H, W)``).
    interp_type : str or INTERP_* enum
        ``"nn"``, ``"linear"`` (default), ``"cubic"``, ``"lanczos3"``, ``"triangular"``,
        ``"gaussian"`` (DALI names such as ``"INTERP_CUBIC"`` and DALI enum values accepted).
        Sets both ``min_filter`` and ``mag_filter`` unless those are given.
    antialias : bool
        Widen the filter by the downscaling factor when an axis shrinks (default True, as in
        DALI).  Ignored for NN.
    dtype : numpy dtype, torch dtype, DALI type or str, optional
        Output element type (default: the input's).  Integer outputs are rounded half away
        from zero and saturated; float outputs keep the float32 result.
    min_filter, mag_filter : str or INTERP_* enum, optional
        Filter for axes that shrink / do not shrink; default ``interp_type``.
    layout : {"HWC", "CHW", "HW"}
        Layout of ``image``; the result has the same layout.
    out_window : tuple of int, optional
        ``(y0, x0, h, w)`` inside the ``(out_h, out_w)`` output: return only that part,
        bit-exact with slicing the full result (the uint8 tent paths compute just those
        output lines, e.g. a resize followed by a centre crop; other paths slice).

    Returns
    -------
    numpy.ndarray
        ``(out_h, out_w, C)`` / ``(C, out_h, out_w)`` / ``(out_h, out_w)`` of ``dtype``
        (``h`` x ``w`` with ``out_window``).

    Raises
    ------
    TypeError
        ``image`` not a numpy array; bad ``interp_type`` / ``dtype`` types.
    ValueError
        Unsupported dtype or layout, wrong number of dimensions, ``params`` computed for a
        different input extent, unknown interpolation names.
    """
    if not isinstance(image, np.ndarray):
        raise TypeError(f"resize: `image` must be a numpy.ndarray, got {type(image).__name__}")
    if not isinstance(params, ResizeParams):
        raise TypeError(f"resize: `params` must be a ResizeParams, got {type(params).__name__}")
    if layout not in _LAYOUTS:
        raise ValueError(f"resize: `layout` must be one of {_LAYOUTS}, got {layout!r}")
    if image.ndim != len(layout):
        raise ValueError(f"resize: layout {layout!r} needs a {len(layout)}-D image, got shape "
                         f"{image.shape}")
    if image.dtype not in _IN_DTYPE_SET:
        raise ValueError(f"resize: input dtype must be one of "
                         f"{[np.dtype(d).name for d in _IN_DTYPES]}, got {image.dtype.name!r}")
    out_dt = _out_dtype(dtype, image.dtype)
    kind = interp_name("interp_type", interp_type) or "linear"
    kind_min = interp_name("min_filter", min_filter) or kind
    kind_mag = interp_name("mag_filter", mag_filter) or kind

    hwc = image.transpose(1, 2, 0) if layout == "CHW" else (
        image[:, :, None] if layout == "HW" else image)
    in_h, in_w, chans = hwc.shape
    if (params.in_h, params.in_w) != (in_h, in_w) and (params.in_h or params.in_w):
        raise ValueError(f"resize: `params` were computed for input (H, W) = "
                         f"({params.in_h}, {params.in_w}) but the image is ({in_h}, {in_w})")
    oh, ow = params.out_h, params.out_w
    if out_window is not None:
        wy, wx, wh, ww = (int(v) for v in out_window)
        if not (0 <= wy and 0 <= wx and 0 < wh and 0 < ww and wy + wh <= oh and wx + ww <= ow):
            raise ValueError(f"resize: `out_window` {tuple(out_window)} must be a non-empty "
                             f"(y0, x0, h, w) box inside the output ({oh}, {ow})")
        out_window = (wy, wx, wh, ww) if (wh, ww) != (oh, ow) else None

    if oh == 0 or ow == 0 or in_h == 0 or in_w == 0 or chans == 0:
        res = np.zeros((oh, ow, chans), out_dt)
    else:
        kind_y = _axis_kind(oh, params.y0, params.y1, kind_min, kind_mag)
        kind_x = _axis_kind(ow, params.x0, params.x1, kind_min, kind_mag)
        if kind_y == "nn" and kind_x == "nn":  # pure nearest neighbour: a gather
            idx_y, _ = axis_taps(in_h, oh, params.y0, params.y1, "nn", False, True)
            idx_x, _ = axis_taps(in_w, ow, params.x0, params.x1, "nn", False, False)
            picked = hwc[idx_y[:, 0][:, None], idx_x[:, 0][None, :]]
            if picked.dtype == out_dt:
                res = np.ascontiguousarray(picked)
            else:
                res = _to_output(picked.astype(np.float32), out_dt)
            return _from_hwc(_window_of(res, out_window), layout)
        res = None
        if (hwc.dtype == np.uint8 and out_dt == np.uint8 and layout != "CHW"
                and (kind_y in TORCH_KINDS or kind_x in TORCH_KINDS)):
            res = fast_uint8(hwc, oh, ow, params, kind_y, kind_x, bool(antialias))
            if res is None:
                res = mixed_uint8(hwc, oh, ow, params, kind_y, kind_x, bool(antialias),
                                   out_window)
                if res is None:
                    res = frac_uint8(hwc, oh, ow, params, kind_y, kind_x, bool(antialias),
                                     out_window)
                if res is not None:
                    out_window = None       # computed for the window only
        if res is None:
            res = separable(hwc, oh, ow, params, kind_y, kind_x, bool(antialias), out_dt)

    return _from_hwc(_window_of(res, out_window), layout)


@measured("resample")
def resample_part(part: np.ndarray, origin, full_hw, params: ResizeParams,
                  interp_type="linear", antialias=True, dtype=None, min_filter=None,
                  mag_filter=None):
    """``resample(image, params, ...)`` of an HWC uint8 image known only in part, or ``None``.

    ``part`` holds the lines of ``image`` (of ``full_hw`` = ``(H, W)``) starting at ``origin``
    ``(y, x)`` (e.g. a region decode).  Only the uint8 linear/triangular fast path of
    :func:`resample` runs here (bit-exact with :func:`resample` on the whole image); ``None``
    means it does not apply (other filters or dtypes, fractional windows) or would read a line
    outside ``part``, and the caller resamples a full-size image instead.
    """
    if part.ndim != 3 or part.dtype != np.uint8 or _out_dtype(dtype, part.dtype) != np.uint8:
        return None
    if (params.in_h, params.in_w) != tuple(full_hw) and (params.in_h or params.in_w):
        raise ValueError(f"resize: `params` were computed for input (H, W) = "
                         f"({params.in_h}, {params.in_w}) but the image is {tuple(full_hw)}")
    oh, ow = params.out_h, params.out_w
    if not (oh and ow and part.shape[0] and part.shape[1] and part.shape[2]):
        return None
    kind = interp_name("interp_type", interp_type) or "linear"
    kind_min = interp_name("min_filter", min_filter) or kind
    kind_mag = interp_name("mag_filter", mag_filter) or kind
    kind_y = _axis_kind(oh, params.y0, params.y1, kind_min, kind_mag)
    kind_x = _axis_kind(ow, params.x0, params.x1, kind_min, kind_mag)
    return fast_uint8(part, oh, ow, params, kind_y, kind_x, bool(antialias), tuple(origin),
                       tuple(full_hw))


def _axis_kind(out_len: int, lo: float, hi: float, kind_min: str, kind_mag: str) -> str:
    """The filter of one axis: ``min_filter`` when it shrinks (output < window), else
    ``mag_filter`` (the window length as DALI computes it, in float32)."""
    win = abs(float(_f32(_f32(hi) - _f32(lo))))
    return kind_min if out_len < win else kind_mag


def _window_of(res: np.ndarray, window) -> np.ndarray:
    """``res[y0:y0 + h, x0:x0 + w]`` (HWC, C-contiguous) for ``window=(y0, x0, h, w)``."""
    if window is None:
        return res
    y0, x0, h, w = window
    return np.ascontiguousarray(res[y0:y0 + h, x0:x0 + w])


def _from_hwc(res: np.ndarray, layout: str) -> np.ndarray:
    if layout == "CHW":
        return np.ascontiguousarray(res.transpose(2, 0, 1))
    if layout == "HW":
        return res[:, :, 0]
    return res


def resize(image, layout="HWC", interp_type="linear", antialias=True, dtype=None,
           min_filter=None, mag_filter=None, **size_args) -> np.ndarray:
    """Resize one image like DALI's ``resize`` operator.

    Shorthand for ``resample(image, resize_output_shape((H, W), **size_args), ...)``.

    Parameters
    ----------
    image : numpy.ndarray
        One sample in ``layout`` (``HWC``, ``CHW`` or ``HW``).
    layout, interp_type, antialias, dtype, min_filter, mag_filter
        As in :func:`resample`.
    **size_args
        Keyword arguments of :func:`resize_output_shape` (``size``, ``resize_x``, ``resize_y``,
        ``resize_shorter``, ``resize_longer``, ``mode``, ``max_size``, ``roi_start``,
        ``roi_end``, ``roi_relative``, ``subpixel_scale``).

    Returns
    -------
    numpy.ndarray
        The resized image, same layout.

    Raises
    ------
    TypeError, ValueError
        As in :func:`resize_output_shape` and :func:`resample`; unknown keyword arguments.
    """
    if not isinstance(image, np.ndarray):
        raise TypeError(f"resize: `image` must be a numpy.ndarray, got {type(image).__name__}")
    if layout not in _LAYOUTS:
        raise ValueError(f"resize: `layout` must be one of {_LAYOUTS}, got {layout!r}")
    if image.ndim != len(layout):
        raise ValueError(f"resize: layout {layout!r} needs a {len(layout)}-D image, got shape "
                         f"{image.shape}")
    h_axis = layout.index("H")
    in_hw = (image.shape[h_axis], image.shape[h_axis + 1])
    try:
        params = resize_output_shape(in_hw, **size_args)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise TypeError(f"resize: unknown argument(s) {sorted(size_args)}; {exc}") from exc
        raise
    return resample(image, params, interp_type=interp_type, antialias=antialias, dtype=dtype,
                    min_filter=min_filter, mag_filter=mag_filter, layout=layout)


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------

def resize_sample(image, layout: str, a: dict, size_args: dict, params=None,
                  out_window=None) -> np.ndarray:
    """``resize`` of one sample: :func:`resample` on the grid ``size_args`` give.

    Parameters
    ----------
    image : numpy.ndarray
        The sample in ``layout`` (``HWC``, ``CHW``, ``HW``, or ``F`` + one of them: every
        frame resized alike).
    layout : str
    a : dict
        The node's filter and type arguments (``interp_type``, ``antialias``, ``dtype``,
        ``min_filter``, ``mag_filter``).
    size_args : dict
        Keyword arguments of :func:`resize_output_shape` (e.g. :func:`resize_size_args`).
    params : optional
        :func:`resize_output_shape`'s result for this sample when the caller has it already.
    out_window : tuple, optional
        ``(y0, x0, h, w)``: only that window of the result (:func:`resample`'s ``out_window``;
        not for sequences).
    """
    if layout.startswith("F"):      # a sequence: every frame alike
        frames = [resize_sample(f, layout[1:], a, size_args) for f in image]
        return np.stack(frames) if frames else np.empty((0,) + image.shape[1:], image.dtype)
    if params is None:
        h_axis, w_axis = hw_axes(layout)
        params = resize_output_shape((image.shape[h_axis], image.shape[w_axis]), **size_args)
    extra = {} if out_window is None else {"out_window": out_window}
    return resample(image, params, interp_type=a.get("interp_type", "linear"),
                    antialias=a.get("antialias", True), dtype=a.get("dtype"),
                    min_filter=a.get("min_filter"), mag_filter=a.get("mag_filter"), layout=layout,
                    **extra)


@register("resize", "cpu")
@per_sample
def resize_kernel(ctx, ins, a, i):
    """``resize``: :func:`resize_sample` of every sample with the node's size arguments."""
    return resize_sample(ins[0], meta_layout(ctx.in_metas[0]), a, resize_size_args(a))


@register("random_resized_crop", "cpu")
@per_sample
def random_resized_crop_kernel(ctx, ins, a, i):
    """``random_resized_crop``: sample ``i``'s random window
    (:func:`runtime.kernels.params.windows.random_window`) resized to ``size``."""
    layout = meta_layout(ctx.in_metas[0])
    img = ins[0]
    h_axis, w_axis = hw_axes(layout)
    y0, x0, h, w = random_window((img.shape[h_axis], img.shape[w_axis]), a, a["_seeds"], i)
    size_args = {"size": a["size"], "roi_start": (y0, x0), "roi_end": (y0 + h, x0 + w)}
    return resize_sample(img, layout, a, size_args)
