"""CPU resampling kernel of DALI's ``resize`` operator (2D images, one sample per call).

Separable resampling: per output axis a banded matrix (source taps + weights, restricted to the
source pixels actually read) is built from DALI's filter definition and cached; each pass is one
torch sparse-CSR (or, for wide filters, dense) matrix product on a 2-D float32 view with that
axis as rows, so the work is proportional to taps x pixels.  Intermediate values
are float32, as in DALI's CPU kernel; integer outputs are rounded half away from zero and
saturated.  Filter and tap tables live in :mod:`.resize_taps`.

uint8 linear/triangular fast paths (within 1 of the float32 path): both windows integer
(``random_resized_crop``, fixed sizes) -> torch's antialiased bilinear plus exact edge lines
(:func:`_fast_uint8`); only W integer (portrait ``resize_shorter``) -> torch along W, a
weighted sum of rows along H (:func:`_mixed_uint8`); a fractional W window (landscape
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
threads.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from .resize_frac import bag_taps, bag_taps_window, frac_uint8, row_table, rows_pass_u8
from .resize_params import ResizeParams, resize_output_shape
from .resize_taps import (_LUTS, _Filter, _axis_matrix, _axis_taps,  # noqa: F401
                          _make_filter, gather_taps, tent_plan)
from .resize_edges import fix_edges

__all__ = ["resample", "resize", "INTERP_TYPES", "ResizeParams", "resize_output_shape"]

_f32 = np.float32

INTERP_TYPES = ("nn", "linear", "cubic", "lanczos3", "triangular", "gaussian")
# DALI's DALIInterpType numbering, so that DALI/ndd enums given as ints are understood.
_INTERP_BY_NUMBER = {0: "nn", 1: "linear", 2: "cubic", 3: "lanczos3", 4: "triangular",
                     5: "gaussian"}
_INTERP_ALIASES = {"nearest": "nn", "bilinear": "linear", "bicubic": "cubic",
                   "lanczos": "lanczos3", "triangle": "triangular"}

_IN_DTYPES = (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32)
_OUT_DTYPES = _IN_DTYPES
_IN_DTYPE_SET = frozenset(np.dtype(d) for d in _IN_DTYPES)
_LAYOUTS = ("HWC", "CHW", "HW")


def _transposed(a: np.ndarray) -> np.ndarray:
    """Contiguous copy of the 2-D transpose of ``a``."""
    return np.ascontiguousarray(a.T)


# --------------------------------------------------------------------------------------------
# Fast path: uint8 linear/triangular via torch's antialiased bilinear, edges recomputed exactly
# --------------------------------------------------------------------------------------------
# torch's ``interpolate(mode="bilinear", antialias=True)`` samples output ``i`` of a window of
# ``L`` source pixels at ``(i + 0.5) * L / n`` with a tent of radius ``max(L / n, 1)``: DALI's
# LINEAR/TRIANGULAR filter for a window with integer ends.  It differs only where the tent
# leaves the window (torch trims and renormalises, DALI reads the pixels beyond the window,
# edge-replicated at the image border), so those output lines are recomputed with DALI's taps
# (one compiled call, :mod:`.resize_edges`).  torch keeps a uint8 intermediate between its
# passes (error < 0.5 before the final rounding, filters non-negative), so results are
# within 1 of the float32 path.

_TORCH_KINDS = ("linear", "triangular")


def _torchable(kind: str, start: float, end: float, in_len: int, out_len: int,
               antialias: bool) -> bool:
    return (kind in _TORCH_KINDS and float(start).is_integer() and float(end).is_integer()
            and 0 <= start < end <= in_len and (antialias or out_len >= end - start))


def _script(fn):
    """``torch.jit.script(fn)`` (its ops then run in C++ with the GIL released), else ``fn``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.jit.script(fn)
    except Exception:       # TorchScript missing or unable to compile: eager is equivalent
        return fn


# Most multiply-adds the edge fix may take per image; above it (tiny outputs of big windows,
# where nearly every line is an edge line) the separable paths are cheaper.
_EDGE_WORK_LIMIT = 4 << 20


def _fast_uint8(hwc: np.ndarray, oh: int, ow: int, params: ResizeParams, kind_y: str,
                kind_x: str, antialias: bool, origin=(0, 0), full_hw=None):
    """uint8 HWC result via torch, or ``None`` unless both axes qualify (see above).

    torch's antialiased bilinear (one call, GIL released) does the whole window; the output
    lines whose taps leave the window (1-4 per side, from the cached :class:`TentPlan` of
    each axis) are then recomputed in float32 with DALI's edge-clamped taps
    (:func:`runtime.kernels.cpu.resize_edges.fix_edges`, compiled, GIL released).  A
    fractional window on either axis, or an edge fix costlier than ``_EDGE_WORK_LIMIT``
    (tiny outputs of big windows), return ``None``.

    ``hwc`` may be a part of the image: the lines at ``origin`` ``(y, x)`` of an image of
    ``full_hw`` (the whole image when omitted); ``None`` is then also returned when the
    computation reads a line outside the part.  Only coordinates shift: the torch call sees
    the same window pixels and the edge lines the same taps, so the bits are those of the
    whole image.
    """
    in_h, in_w = full_hw if full_hw is not None else hwc.shape[:2]
    chans = hwc.shape[2]
    py0, py1, px0, px1 = params.y0, params.y1, params.x0, params.x1
    if not (_torchable(kind_y, py0, py1, in_h, oh, antialias)
            and _torchable(kind_x, px0, px1, in_w, ow, antialias)):
        return None
    y0, y1, x0, x1 = int(py0), int(py1), int(px0), int(px1)
    oy, ox = origin
    if (oh, ow) == (y1 - y0, x1 - x0):      # scale 1: DALI's tent is the identity
        if not (oy <= y0 and y1 <= oy + hwc.shape[0] and ox <= x0 and x1 <= ox + hwc.shape[1]):
            return None
        return np.array(hwc[y0 - oy:y1 - oy, x0 - ox:x1 - ox])
    ylo, py = tent_plan(in_h, oh, y0, y1, kind_y, antialias)
    xlo, px = tent_plan(in_w, ow, x0, x1, kind_x, antialias)
    edge_y, edge_x = py.head + oh - py.tail, px.head + ow - px.tail
    if (edge_y * ow + edge_x * oh) * chans * py.w.shape[1] * px.w.shape[1] > _EDGE_WORK_LIMIT:
        return None
    if oy or ox or hwc.shape[:2] != (in_h, in_w):
        # every line read (torch's window, the edge taps' lines) must lie in the part
        if not (oy <= min(y0, ylo) and max(y1, ylo + py.n) <= oy + hwc.shape[0]
                and ox <= min(x0, xlo) and max(x1, xlo + px.n) <= ox + hwc.shape[1]):
            return None
        y0, y1, ylo, x0, x1, xlo = y0 - oy, y1 - oy, ylo - oy, x0 - ox, x1 - ox, xlo - ox
    if not hwc.flags.c_contiguous:
        hwc = np.ascontiguousarray(hwc)
    res = np.empty((oh, ow, chans), np.uint8)
    # out= a CHW view of the HWC buffer (channels-last strides, which the kernel keeps)
    torch._C._nn._upsample_bilinear2d_aa(
        torch.from_numpy(hwc[y0:y1, x0:x1]).permute(2, 0, 1).unsqueeze(0), [oh, ow], False,
        None, None, out=torch.from_numpy(res).permute(2, 0, 1).unsqueeze(0))
    if edge_y or edge_x:
        fix_edges(hwc, ylo, xlo, py, px, res)
    return res


# torch.from_numpy warns once per process on read-only arrays (which we only ever read): use
# up that warning here, quietly, at import (single-threaded).
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _ro = np.zeros(1, np.uint8)
    _ro.setflags(write=False)
    torch.from_numpy(_ro)
    del _ro


# --------------------------------------------------------------------------------------------
# Argument handling
# --------------------------------------------------------------------------------------------

def _interp_name(arg_name: str, value) -> str:
    if value is None:
        return None
    if value.__class__ is str and value in INTERP_TYPES:     # the common case, quickly
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key.startswith("interp_"):
            key = key[len("interp_"):]
        key = _INTERP_ALIASES.get(key, key)
        if key in INTERP_TYPES:
            return key
        raise ValueError(f"resize: `{arg_name}` must be one of {INTERP_TYPES} (or a DALI "
                         f"INTERP_* enum), got {value!r}")
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return _interp_name(arg_name, name)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if int(value) in _INTERP_BY_NUMBER:
            return _INTERP_BY_NUMBER[int(value)]
        raise ValueError(f"resize: `{arg_name}` enum value must be 0..5, got {value!r}")
    raise TypeError(f"resize: `{arg_name}` must be a string or an INTERP_* enum, got "
                    f"{value!r} ({type(value).__name__})")


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


def _tent_cols(src: torch.Tensor, a: int, b: int, out_w: int, lo: int, n: int,
               w: torch.Tensor, edge: torch.Tensor, idx_e: torch.Tensor,
               w_e: torch.Tensor) -> torch.Tensor:
    """uint8 HWC ``src`` resampled along W only, with torch's tent: ``(H, out_w, C)`` uint8.

    The integer window ``[a, b)`` of the W axis goes to ``out_w`` with torch's antialiased
    bilinear (uint8 result); the edge columns ``edge`` are recomputed with DALI's taps
    (``lo``, ``n``, ``idx_e``, ``w_e`` of a cols :class:`AxisGather`; ``w`` gives K) and
    rounded half up.
    """
    h, wd, chans = src.shape[0], src.shape[1], src.shape[2]
    mid = torch.empty([h, out_w, chans], dtype=torch.uint8)
    torch._C._nn._upsample_bilinear2d_aa(src[:, a:b].permute(2, 0, 1).unsqueeze(0),
                                         [h, out_w], False, None, None,
                                         out=mid.permute(2, 0, 1).unsqueeze(0))
    m = edge.shape[0]
    if m > 0:
        g = src.view(h, wd * chans)[:, lo * chans:(lo + n) * chans].index_select(1, idx_e)
        v = g.float().view(h, w.shape[0], m * chans).mul_(w_e).sum(1)
        mid.index_copy_(1, edge, v.add_(0.5).to(torch.uint8).view(h, m, chans))
    return mid


_tent_cols_scripted = _script(_tent_cols)


def _mixed_uint8(hwc: np.ndarray, oh: int, ow: int, params: ResizeParams, kind_y: str,
                 kind_x: str, antialias: bool, out_window=None):
    """uint8 HWC result when only the W axis suits torch's tent, else None.

    This is ``resize_shorter`` of a portrait image with ``subpixel_scale``: W keeps its
    integer window, H gets a fractional one.  W goes first (:func:`_tent_cols`, uint8
    intermediate), then H is a weighted sum of contiguous rows with DALI's taps
    (:func:`.resize_frac.rows_pass_u8`, an embedding bag; no transposes).  torch's uint8
    intermediate (error < 0.5, tent weights non-negative) keeps results within 1 of the
    float32 path, as in :func:`_fast_uint8`.  ``out_window=(oy0, ox0, ch, cw)``: only those
    output rows go through the H pass (and only the source rows they read through the W
    pass), giving exactly ``full[oy0:oy0 + ch, ox0:ox0 + cw]``.
    """
    in_h, in_w, chans = hwc.shape
    if (not hwc.flags.c_contiguous or kind_y not in _TORCH_KINDS
            or _torchable(kind_y, params.y0, params.y1, in_h, oh, antialias)
            or not _torchable(kind_x, params.x0, params.x1, in_w, ow, antialias)):
        return None
    oy0, ox0, ch, cw = out_window if out_window is not None else (0, 0, oh, ow)
    a, b = int(params.x0), int(params.x1)
    g = gather_taps(in_w, ow, a, b, kind_x, antialias, chans, False)
    lo, n, bags = bag_taps_window(in_h, oh, float(params.y0), float(params.y1), kind_y,
                                  antialias, True, oy0, oy0 + ch)
    # only the rows the H taps read go through the W pass
    mid = _tent_cols_scripted(torch.from_numpy(hwc[lo:lo + n]), a, b, ow, g.lo, g.n, g.w,
                              g.edge, g.idx_e, g.w_e)
    res = np.empty((ch, ow, chans), np.uint8)
    rows_pass_u8(row_table(mid.numpy(), True), bags, res.reshape(ch, ow * chans))
    return res if cw == ow else np.ascontiguousarray(res[:, ox0:ox0 + cw])


def _separable(hwc: np.ndarray, oh: int, ow: int, params: ResizeParams, kind_y: str,
               kind_x: str, antialias: bool, out_dt: np.dtype) -> np.ndarray:
    """Two 1-D passes (sparse/dense matrix products in float32) -> ``(oh, ow, C)`` ``out_dt``.

    Only the source window the filters read is touched.  Each pass multiplies a cached axis
    matrix by a 2-D array whose rows run along that axis (``(H, W*C)`` for the H pass,
    ``(W*C, H)`` for the W pass, channel-interleaved), so the data is transposed twice; the
    order is chosen to move the fewest elements.
    """
    in_h, in_w, chans = hwc.shape
    ylo, yhi, my = _axis_matrix(in_h, oh, float(params.y0), float(params.y1), kind_y,
                                antialias, True, 1)
    xlo, xhi, mx = _axis_matrix(in_w, ow, float(params.x0), float(params.x1), kind_x,
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
    kind = _interp_name("interp_type", interp_type) or "linear"
    kind_min = _interp_name("min_filter", min_filter) or kind
    kind_mag = _interp_name("mag_filter", mag_filter) or kind

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
            idx_y, _ = _axis_taps(in_h, oh, params.y0, params.y1, "nn", False, True)
            idx_x, _ = _axis_taps(in_w, ow, params.x0, params.x1, "nn", False, False)
            picked = hwc[idx_y[:, 0][:, None], idx_x[:, 0][None, :]]
            if picked.dtype == out_dt:
                res = np.ascontiguousarray(picked)
            else:
                res = _to_output(picked.astype(np.float32), out_dt)
            return _from_hwc(_window_of(res, out_window), layout)
        res = None
        if (hwc.dtype == np.uint8 and out_dt == np.uint8 and layout != "CHW"
                and (kind_y in _TORCH_KINDS or kind_x in _TORCH_KINDS)):
            res = _fast_uint8(hwc, oh, ow, params, kind_y, kind_x, bool(antialias))
            if res is None:
                res = _mixed_uint8(hwc, oh, ow, params, kind_y, kind_x, bool(antialias),
                                   out_window)
                if res is None:
                    res = frac_uint8(hwc, oh, ow, params, kind_y, kind_x, bool(antialias),
                                     out_window)
                if res is not None:
                    out_window = None       # computed for the window only
        if res is None:
            res = _separable(hwc, oh, ow, params, kind_y, kind_x, bool(antialias), out_dt)

    return _from_hwc(_window_of(res, out_window), layout)


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
    kind = _interp_name("interp_type", interp_type) or "linear"
    kind_min = _interp_name("min_filter", min_filter) or kind
    kind_mag = _interp_name("mag_filter", mag_filter) or kind
    kind_y = _axis_kind(oh, params.y0, params.y1, kind_min, kind_mag)
    kind_x = _axis_kind(ow, params.x0, params.x1, kind_min, kind_mag)
    return _fast_uint8(part, oh, ow, params, kind_y, kind_x, bool(antialias), tuple(origin),
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
