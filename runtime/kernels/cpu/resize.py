"""CPU resampling kernel of DALI's ``resize`` operator (2D images, one sample per call).

Separable resampling: per output axis a banded matrix (source taps + weights, restricted to the
source pixels actually read) is built from DALI's filter definition and cached; each pass is one
torch sparse-CSR (or, for wide filters, dense) matrix product on a 2-D float32 view with that
axis as rows, so the work is proportional to taps x pixels.  Intermediate values
are float32, as in DALI's CPU kernel; integer outputs are rounded half away from zero and
saturated.

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

import functools
import math
import warnings

import numpy as np
import torch

from .resize_params import ResizeParams, resize_output_shape

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


# --------------------------------------------------------------------------------------------
# Filter lookup tables (built once, read-only)
# --------------------------------------------------------------------------------------------

def _cubic_window(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x).astype(np.float32)
    x2 = ax * ax
    x3 = x2 * ax
    near = _f32(1.5) * x3 - _f32(2.5) * x2 + _f32(1.0)
    far = _f32(-0.5) * x3 + _f32(2.5) * x2 - _f32(4.0) * ax + _f32(2.0)
    return np.where(ax >= 2, _f32(0), np.where(ax > 1, far, near)).astype(np.float32)


def _lanczos_window(x: np.ndarray, a: float) -> np.ndarray:
    x = x.astype(np.float64)
    out = np.sinc(x) * np.sinc(x / a)
    out[np.abs(x) >= a] = 0.0
    return out.astype(np.float32)


def _lut_x(n: int, half_range: float) -> np.ndarray:
    i = np.arange(n, dtype=np.float32)
    return (_f32(2 * half_range) * (i - _f32((n - 1) * 0.5)) / _f32(n - 1)).astype(np.float32)


# name -> (table, initial support width the table is defined over)
_LUTS = {
    "triangular": (np.array([0.0, 1.0, 0.0], np.float32), None),
    "gaussian": (np.exp(-np.square(_lut_x(65, 2.0))).astype(np.float32), None),
    "lanczos3": (_lanczos_window(_lut_x(193, 3.0), 3.0), 6.0),
    "cubic": (_cubic_window(_lut_x(129, 2.0)), 4.0),
}
for _table, _ in _LUTS.values():
    _table.setflags(write=False)
# torch warns once per process that sparse CSR support is "beta"; trigger that here, quietly,
# at import (single-threaded) rather than at the first resize.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.sparse_csr_tensor(torch.zeros(2, dtype=torch.int64), torch.zeros(0, dtype=torch.int64),
                            torch.zeros(0), size=(1, 1), check_invariants=False)


class _Filter:
    """A lookup-table filter stretched to a given width (DALI's ResamplingFilter).

    ``values``/``slopes`` are the table (then zeros) and its forward differences, so that the
    filter at table coordinate ``p >= 0`` is ``values[i] + (p - i) * slopes[i]``, ``i =
    floor(p)`` (clamped into the zero tail): DALI's linear interpolation of the table, zero
    beyond it.  ``taps`` is ``arange(support)`` as float32.
    """

    __slots__ = ("values", "slopes", "cap", "scale", "anchor", "support", "taps", "tent")

    def __init__(self, name: str, width: float):
        table, first_width = _LUTS[name]
        n = table.shape[0]
        scale = _f32((n - 1) * 0.5)
        anchor = _f32(1.0)
        for w in ((first_width,) if first_width else ()) + (width,):
            new_scale = _f32(_f32(n - 1) / _f32(w))
            anchor = _f32(_f32(anchor * scale) / new_scale)
            scale = new_scale
        self.values, self.slopes = _TAILS[name]
        self.cap = self.values.shape[0] - 1
        self.scale = scale
        self.anchor = anchor
        self.support = int(math.ceil(_f32(_f32(n - 1) / scale)))
        self.taps = np.arange(self.support, dtype=np.float32)
        self.tent = name == "triangular"

    def __call__(self, pos: np.ndarray) -> np.ndarray:
        """Evaluate at non-negative table coordinates ``pos`` (float32 array, may be reused).

        The table ``[0, 1, 0]`` (triangular) is ``max(0, min(p, 2 - p))``: bit for bit the
        interpolated table (``p - 1`` and ``2 - p`` are exact for ``1 <= p < 2``).
        """
        if self.tent:
            d = np.subtract(_f32(2), pos)
            np.minimum(pos, d, out=d)
            return np.maximum(d, _f32(0), out=d)
        fl = np.floor(pos)
        d = pos - fl
        i0 = fl.astype(np.intp)
        np.minimum(i0, self.cap, out=i0)
        d *= self.slopes.take(i0)
        d += self.values.take(i0)
        return d


def _tails(table: np.ndarray):
    values = np.concatenate([table, np.zeros(2, np.float32)]).astype(np.float32)
    slopes = np.zeros_like(values)
    slopes[:-1] = values[1:] - values[:-1]
    values.setflags(write=False)
    slopes.setflags(write=False)
    return values, slopes


_TAILS = {name: _tails(table) for name, (table, _) in _LUTS.items()}


@functools.lru_cache(maxsize=1024)
def _make_filter(kind: str, antialias: bool, in_size: float, out_size: int) -> _Filter | None:
    """DALI's filter choice for one axis; ``None`` means nearest neighbour (cached)."""
    aa = bool(antialias) and in_size > out_size
    ratio = _f32(_f32(in_size) / _f32(out_size)) if out_size else _f32(1)
    if kind == "nn":
        return None
    if kind == "linear":
        if aa:
            return _Filter("triangular", max(_f32(1), _f32(2) * ratio))
        return _Filter("triangular", _f32(2))
    if kind == "triangular":
        radius = ratio if aa else _f32(1)
        return _Filter("triangular", max(_f32(1), _f32(2) * radius))
    if kind == "gaussian":
        radius = ratio if aa else _f32(1)
        sigma = _f32(float(radius * _f32(0.5)) / math.sqrt(2.0))
        return _Filter("gaussian", max(_f32(1), _f32(_f32(4 * math.sqrt(2.0)) * sigma)))
    if kind == "cubic":
        radius = _f32(2) * ratio if aa else _f32(2)
        return _Filter("cubic", _f32(2) * max(_f32(2), _f32(radius)))
    if kind == "lanczos3":
        radius = _f32(3) * ratio if aa else _f32(3)
        return _Filter("lanczos3", _f32(2) * max(_f32(3), _f32(radius)))
    raise ValueError(f"resize: unknown interpolation {kind!r}")


# --------------------------------------------------------------------------------------------
# Per-axis tap tables
# --------------------------------------------------------------------------------------------

_ARANGE = np.arange(1 << 16, dtype=np.float32)   # 0, 1, 2, ... (read-only source of x)
_ARANGE.setflags(write=False)


class _Taps:
    """Taps of one integer window (see :func:`_window_taps`); arrays never written to.

    ``idx``/``w``: clamped source indices and float32 weights ``(out_len, K)``; the filter
    reads source ``lo <= j < hi``; ``rel`` is ``idx - lo``; ``edge``: the outputs whose taps
    may leave the window (a superset).
    """

    __slots__ = ("idx", "w", "rel", "edge", "lo", "hi")


_KRANGE = np.arange(4096, dtype=np.intp)
_KRANGE.setflags(write=False)


@functools.lru_cache(maxsize=512)
def _axis_table(in_len: int, out_len: int, start: float, end: float, kind: str,
                antialias: bool, accumulate: bool):
    """Cached, read-only ``(idx, w)`` of one axis (arguments as :func:`_axis_taps`)."""
    start32, end32 = _f32(start), _f32(end)
    scale = _f32(_f32(end32 - start32) / _f32(out_len))
    win = abs(float(_f32(end32 - start32)))
    flt = _make_filter(kind, bool(antialias), win, out_len)
    if flt is None:
        # DALI's NN: columns use ``origin + (x + 0.5) * scale``; rows accumulate
        # ``sy = origin + 0.5 * scale; sy += scale`` in float32 (which rounds differently).
        if accumulate:
            steps = np.full(out_len, scale, np.float32)
            steps[0] = _f32(start32 + _f32(_f32(0.5) * scale))
            src_f = np.cumsum(steps, dtype=np.float32)
        else:
            src_f = (start32 + (_arange_f32(out_len) + _f32(0.5)) * scale).astype(np.float32)
        src = np.floor(src_f).astype(np.int64)
        idx = np.clip(src, 0, in_len - 1)[:, None]
        return _frozen(idx, np.ones((out_len, 1), np.float32))
    first, w = _raw_taps(out_len, start32, scale, flt)
    k = w.shape[1]
    f0, f1 = int(first[0]), int(first[-1])
    src = first.astype(np.intp)[:, None] + (_KRANGE[:k] if k <= 4096 else np.arange(k))
    if min(f0, f1) < 0:
        np.maximum(src, 0, out=src)
    if max(f0, f1) + k > in_len:
        np.minimum(src, in_len - 1, out=src)
    return _frozen(src, w)


def _frozen(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _edges(first: np.ndarray, k: int, start, end) -> np.ndarray:
    """Outputs whose ``k`` taps from ``first`` (non-decreasing) may leave ``[start, end)``.

    A prefix and a suffix; a superset of the outputs with nonzero weights outside (harmless:
    those lines are recomputed exactly).
    """
    out_len = first.shape[0]
    n_lo = int(np.searchsorted(first, _f32(start)))
    n_hi = int(np.searchsorted(first, _f32(end - k), side="right"))
    if n_hi <= n_lo:
        return np.arange(out_len)
    return np.concatenate([np.arange(n_lo), np.arange(n_hi, out_len)])


@functools.lru_cache(maxsize=2048)
def _rel_taps(length: int, out_len: int, kind: str, antialias: bool):
    """Taps of an integer window ``[0, length)`` (unclamped), cached: ``(idx, rel, w, edge)``.

    ``idx`` ``(out_len, K)`` source indices relative to the window start (may run outside
    ``[0, length)``), ``rel`` is ``idx - idx[0, 0]``, ``w`` the float32 weights, ``edge`` the
    outputs whose taps may leave the window (a superset).  A window ``[s, s + length)`` has
    taps ``idx + s`` with the same weights up to float32 rounding of the sample positions
    (DALI computes them from ``s``), so random windows of a few hundred sizes share a few
    hundred tables.
    """
    end32 = _f32(length)
    flt = _make_filter(kind, bool(antialias), float(end32), out_len)
    first, w = _raw_taps(out_len, _f32(0), _f32(end32 / _f32(out_len)), flt)
    idx = first.astype(np.intp)[:, None] + np.arange(w.shape[1])
    return _frozen(idx, idx - int(idx[0, 0]), w, _edges(first, w.shape[1], 0, length))


def _window_taps(in_len: int, out_len: int, start: int, end: int, kind: str,
                 antialias: bool) -> _Taps:
    """:class:`_Taps` of the integer window ``[start, end)`` from :func:`_rel_taps`."""
    idx, rel, w, edge = _rel_taps(end - start, out_len, kind, antialias)
    t = _Taps.__new__(_Taps)
    lo, hi = int(idx[0, 0]) + start, int(idx[-1, -1]) + start + 1
    t.idx = idx + start
    if lo >= 0 and hi <= in_len:
        t.rel, t.lo, t.hi = rel, lo, hi
    else:
        np.maximum(t.idx, 0, out=t.idx)
        np.minimum(t.idx, in_len - 1, out=t.idx)
        t.lo, t.hi = max(lo, 0), min(hi, in_len)
        t.rel = t.idx - t.lo
    t.w, t.edge = w, edge
    return t


def _arange_f32(n: int) -> np.ndarray:
    return _ARANGE[:n] if n <= _ARANGE.shape[0] else np.arange(n, dtype=np.float32)


def _axis_taps(in_len: int, out_len: int, start: float, end: float, kind: str,
               antialias: bool, accumulate: bool = False):
    """Source indices ``(out_len, K)`` (clamped to the image) and float32 weights ``(out_len, K)``.

    Nearest neighbour gives ``K == 1`` with weight 1.  The arrays are cached and read-only.
    """
    return _axis_table(in_len, out_len, float(start), float(end), kind, bool(antialias),
                       bool(accumulate))


def _raw_taps(out_len: int, start32, scale, flt: _Filter):
    """Unclamped first source index ``(out_len,)`` int64 and weights ``(out_len, K)``."""
    origin = _f32(start32 + _f32(_f32(_f32(_f32(0.5) * scale) - _f32(0.5)) - flt.anchor))
    first = _arange_f32(out_len) * scale
    first += origin
    first_idx = np.ceil(first)
    first -= first_idx
    first *= _f32(-1)                                   # frac = first_idx - first
    pos = first[:, None] + flt.taps
    pos *= flt.scale
    w = flt(pos)
    total = w.sum(axis=1, dtype=np.float32, keepdims=True)
    np.divide(w, total, out=w, where=total != 0)
    return first_idx.astype(np.int64), w


def _banded(idx: np.ndarray, w: np.ndarray, in_len: int):
    """Taps -> ``(first, wts)``: output ``i`` reads ``wts[i, k]`` of source ``first[i] + k``.

    The (edge-clamped) taps of each row are re-expressed on ``K' = min(K, in_len)`` distinct,
    consecutive source pixels inside the image (repeated edge taps are summed), so that every
    row of the matrix has the same number of entries.
    """
    out_len, taps = idx.shape
    keff = min(taps, in_len)
    first = np.clip(idx[:, 0], 0, in_len - keff)
    flat = idx - first[:, None]
    flat += (np.arange(out_len, dtype=np.int64) * keff)[:, None]
    wts = np.bincount(flat.ravel(), weights=w.ravel(), minlength=out_len * keff)
    return first, wts.astype(np.float32).reshape(out_len, keff)


@functools.lru_cache(maxsize=256)
def _axis_matrix(in_len: int, out_len: int, start: float, end: float, kind: str,
                 antialias: bool, accumulate: bool, chans: int):
    """Resampling matrix of one axis, restricted to the source range it reads.

    Returns ``(lo, hi, m)``: the filter reads only source pixels ``lo <= j < hi``, and ``m``
    (float32 torch tensor, sparse CSR, or dense when the filter is wide) has shape
    ``(out_len * chans, (hi - lo) * chans)``, channel-interleaved (``kron(m1, I_chans)``), so
    that ``m @ x`` resamples axis 0 of ``x`` (``((hi - lo) * chans, N)``).  Cached: centre
    crops and fixed-size resizes repeat the same tables; the tensors are never written to.
    """
    idx, w = _axis_taps(in_len, out_len, start, end, kind, antialias, accumulate)
    first, wts = _banded(idx, w, in_len)
    keff = wts.shape[1]
    lo, hi = int(first.min()), int(first.max()) + keff
    span = hi - lo
    cols = (first - lo)[:, None] + np.arange(keff)            # (out_len, keff), distinct
    if chans == 1 and keff * 4 >= span:
        dense = np.zeros((out_len, span), np.float32)
        dense[np.arange(out_len)[:, None], cols] = wts
        return lo, hi, torch.from_numpy(dense)
    c = np.arange(chans)
    kcols = (cols[:, None, :] * chans + c[None, :, None]).ravel()    # (out, chans, keff)
    kvals = np.repeat(wts[:, None, :], chans, axis=1).ravel()
    crow = np.arange(0, out_len * chans * keff + 1, keff, dtype=np.int64)
    m = torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(kcols),
                                torch.from_numpy(kvals), size=(out_len * chans, span * chans),
                                check_invariants=False)
    return lo, hi, m


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
# (a few large torch ops, which release the GIL).  torch keeps a uint8 intermediate between
# its passes (error < 0.5 before the final rounding, filters non-negative), so results are
# within 1 of the float32 path.

_TORCH_KINDS = ("linear", "triangular")
_aa_out = torch.ops.aten._upsample_bilinear2d_aa.out


def _torchable(kind: str, start: float, end: float, in_len: int, out_len: int,
               antialias: bool) -> bool:
    return (kind in _TORCH_KINDS and float(start).is_integer() and float(end).is_integer()
            and 0 <= start < end <= in_len and (antialias or out_len >= end - start))


def _along0(tp: _Taps, data: np.ndarray) -> np.ndarray:
    """Resample axis 0 of the 2-D float32 ``data`` (rows ``tp.lo..tp.hi``) with ``tp``."""
    out_len, k = tp.rel.shape
    g = np.take(data, tp.rel.ravel(), axis=0).reshape(out_len, k, -1)
    return np.einsum("ok,okx->ox", tp.w, g)


def _exact_lines(hwc: np.ndarray, ty: _Taps, rows, tx: _Taps, cols) -> np.ndarray:
    """DALI's float32 result at output ``rows`` (all columns) or ``cols`` (all rows).

    ``hwc``: the uint8 image; ``rows``/``cols``: int array of output indices, the other
    ``None``.  Returns float32 ``(len(rows), out_w, C)`` or ``(out_h, len(cols), C)`` plus 0.5
    (in [0, 256): storing it into uint8 truncates, i.e. rounds half up).  Linear/triangular
    (non-negative) filters only.  The few edge lines are
    resampled first along their own axis, then along the other with :func:`_along0`.
    """
    chans = hwc.shape[2]
    if cols is None:
        iy, wy = ty.idx[rows], ty.w[rows]                          # (m, Ky)
        m, ky = iy.shape
        wc = tx.hi - tx.lo
        g = hwc[iy.ravel(), tx.lo:tx.hi].astype(np.float32)       # (m*Ky, Wc, C)
        t = np.einsum("mk,mkx->mx", wy, g.reshape(m, ky, -1))     # (m, Wc*C)
        t = t.reshape(m, wc, chans).transpose(1, 0, 2).reshape(wc, -1)
        res = _along0(tx, t).reshape(-1, m, chans).transpose(1, 0, 2)
    else:
        ix, wx = tx.idx[cols], tx.w[cols]                          # (n, Kx)
        n, kx = ix.shape
        hc = ty.hi - ty.lo
        g = hwc[ty.lo:ty.hi, ix.ravel()].astype(np.float32)       # (Hc, n*Kx, C)
        t = np.einsum("nk,hnkc->hnc", wx, g.reshape(hc, n, kx, chans))
        res = _along0(ty, t.reshape(hc, -1)).reshape(-1, n, chans)
    # tent weights are >= 0 and sum to 1: the result lies in [0, 255] (up to rounding), so
    # adding 0.5 and truncating on assignment to uint8 rounds half up without clamping
    res += _f32(0.5)
    return res


def _fast_uint8(hwc: np.ndarray, oh: int, ow: int, params: ResizeParams, kind_y: str,
                kind_x: str, antialias: bool):
    """uint8 HWC result via torch, or ``None`` unless both axes qualify (see above).

    A fractional window on either axis goes to :func:`_separable`: measured on 200 photos
    (``resize_shorter=256``), its cached sparse matrices beat torch on the integer axis plus
    gathers on the other (1.2-1.3 vs 1.45-1.8 ms warm, about equal cold).
    """
    in_h, in_w, chans = hwc.shape
    py0, py1, px0, px1 = params.y0, params.y1, params.x0, params.x1
    if not (_torchable(kind_y, py0, py1, in_h, oh, antialias)
            and _torchable(kind_x, px0, px1, in_w, ow, antialias)):
        return None
    y0, y1, x0, x1 = int(py0), int(py1), int(px0), int(px1)
    if not hwc.flags.writeable:     # torch.from_numpy warns on read-only arrays
        hwc = hwc.copy()
    src = torch.from_numpy(hwc)
    if (oh, ow) == (y1 - y0, x1 - x0):      # scale 1: DALI's tent is the identity
        return np.array(hwc[y0:y1, x0:x1])
    ty = _window_taps(in_h, oh, y0, y1, kind_y, antialias)
    tx = _window_taps(in_w, ow, x0, x1, kind_x, antialias)
    # the out= form with a channels-last buffer: the result is already HWC in memory
    out = torch.empty((1, chans, oh, ow), dtype=torch.uint8, memory_format=torch.channels_last)
    _aa_out(src[y0:y1, x0:x1].permute(2, 0, 1).unsqueeze(0), [oh, ow], False, None, None,
            out=out)
    res = out[0].permute(1, 2, 0).numpy()
    if len(ty.edge):
        res[ty.edge] = _exact_lines(hwc, ty, ty.edge, tx, None)
    if len(tx.edge):
        res[:, tx.edge] = _exact_lines(hwc, ty, None, tx, tx.edge)
    return res


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
    crop = hwc[ylo:yhi, xlo:xhi].reshape(hc, wc * chans)
    # elements moved by the transposes (the products cost about the same either way)
    if oh * wc + oh * ow <= hc * wc + hc * ow:
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
             min_filter=None, mag_filter=None, layout="HWC") -> np.ndarray:
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

    Returns
    -------
    numpy.ndarray
        ``(out_h, out_w, C)`` / ``(C, out_h, out_w)`` / ``(out_h, out_w)`` of ``dtype``.

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

    if oh == 0 or ow == 0 or in_h == 0 or in_w == 0 or chans == 0:
        res = np.zeros((oh, ow, chans), out_dt)
    else:
        def kind_of(out_len, lo, hi):
            win = abs(float(_f32(_f32(hi) - _f32(lo))))
            return kind_min if out_len < win else kind_mag
        kind_y = kind_of(oh, params.y0, params.y1)
        kind_x = kind_of(ow, params.x0, params.x1)
        if kind_y == "nn" and kind_x == "nn":  # pure nearest neighbour: a gather
            idx_y, _ = _axis_taps(in_h, oh, params.y0, params.y1, "nn", False, True)
            idx_x, _ = _axis_taps(in_w, ow, params.x0, params.x1, "nn", False, False)
            picked = hwc[idx_y[:, 0][:, None], idx_x[:, 0][None, :]]
            if picked.dtype == out_dt:
                res = np.ascontiguousarray(picked)
            else:
                res = _to_output(picked.astype(np.float32), out_dt)
            return _from_hwc(res, layout)
        res = None
        if (hwc.dtype == np.uint8 and out_dt == np.uint8 and layout != "CHW"
                and (kind_y in _TORCH_KINDS or kind_x in _TORCH_KINDS)):
            res = _fast_uint8(hwc, oh, ow, params, kind_y, kind_x, bool(antialias))
        if res is None:
            res = _separable(hwc, oh, ow, params, kind_y, kind_x, bool(antialias), out_dt)

    return _from_hwc(res, layout)


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
