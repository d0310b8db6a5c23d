"""uint8 linear/triangular fast paths of the CPU ``resize`` (used by :func:`.resize.resample`).

* both windows integer (``random_resized_crop``, fixed sizes): torch's antialiased bilinear
  plus exact edge lines (:func:`fast_uint8`);
* only W integer (portrait ``resize_shorter``): torch along W, a weighted sum of rows along H
  (:func:`mixed_uint8`).

(A fractional W window goes to :func:`.resize_frac.frac_uint8`.)  Results are within 1 of the
float32 path of :func:`.resize.resample`; their heavy work runs with the GIL released (single
torch calls on whole images, or a TorchScript function).
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from runtime.kernels.params.resize_geometry import ResizeParams

from .resize_edges import fix_edges
from .resize_frac import bag_taps_window, row_table, rows_pass_u8
from .resize_taps import gather_taps, tent_plan

__all__ = ["fast_uint8", "mixed_uint8", "torchable", "TORCH_KINDS"]

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

#: the filters torch's antialiased bilinear reproduces on integer windows
TORCH_KINDS = ("linear", "triangular")


def torchable(kind: str, start: float, end: float, in_len: int, out_len: int,
              antialias: bool) -> bool:
    """Whether torch's tent resamples the window ``[start, end)`` of one axis as DALI does:
    a linear/triangular filter, integer ends inside the image, antialiased or not shrinking."""
    return (kind in TORCH_KINDS and float(start).is_integer() and float(end).is_integer()
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


def fast_uint8(hwc: np.ndarray, oh: int, ow: int, params: ResizeParams, kind_y: str,
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
    if not (torchable(kind_y, py0, py1, in_h, oh, antialias)
            and torchable(kind_x, px0, px1, in_w, ow, antialias)):
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


def mixed_uint8(hwc: np.ndarray, oh: int, ow: int, params: ResizeParams, kind_y: str,
                kind_x: str, antialias: bool, out_window=None):
    """uint8 HWC result when only the W axis suits torch's tent, else None.

    This is ``resize_shorter`` of a portrait image with ``subpixel_scale``: W keeps its
    integer window, H gets a fractional one.  W goes first (:func:`_tent_cols`, uint8
    intermediate), then H is a weighted sum of contiguous rows with DALI's taps
    (:func:`.resize_frac.rows_pass_u8`, an embedding bag; no transposes).  torch's uint8
    intermediate (error < 0.5, tent weights non-negative) keeps results within 1 of the
    float32 path, as in :func:`fast_uint8`.  ``out_window=(oy0, ox0, ch, cw)``: only those
    output rows go through the H pass (and only the source rows they read through the W
    pass), giving exactly ``full[oy0:oy0 + ch, ox0:ox0 + cw]``.
    """
    in_h, in_w, chans = hwc.shape
    if (not hwc.flags.c_contiguous or kind_y not in TORCH_KINDS
            or torchable(kind_y, params.y0, params.y1, in_h, oh, antialias)
            or not torchable(kind_x, params.x0, params.x1, in_w, ow, antialias)):
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
