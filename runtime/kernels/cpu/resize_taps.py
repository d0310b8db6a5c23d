"""Per-axis tap tables of DALI's ``resize`` (used by :mod:`.resize` and its fast paths).

Filter semantics (DALI 2.4 CPU ``resize``) are documented in :mod:`runtime.kernels.cpu.resize`,
the filters themselves live in :mod:`.resize_filters`.  Tables are cached
(``functools.lru_cache`` or a byte-bounded LRU) and read-only, so the functions here are
thread-safe; nothing here starts threads.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import torch

from runtime.kernels.caching import byte_lru_cache

from .resize_filters import Filter, make_filter

__all__ = ["axis_taps", "axis_matrix", "gather_taps", "AxisGather", "tent_plan", "TentPlan",
           "TENT_PLAN_BYTES", "tent_plan_cache_bytes"]

_f32 = np.float32

# torch warns once per process that sparse CSR support is "beta"; trigger that here, quietly,
# at import (single-threaded) rather than at the first resize.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.sparse_csr_tensor(torch.zeros(2, dtype=torch.int64), torch.zeros(0, dtype=torch.int64),
                            torch.zeros(0), size=(1, 1), check_invariants=False)


# --------------------------------------------------------------------------------------------
# Per-axis tap tables
# --------------------------------------------------------------------------------------------

_ARANGE = np.arange(1 << 16, dtype=np.float32)   # 0, 1, 2, ... (read-only source of x)
_ARANGE.setflags(write=False)


_KRANGE = np.arange(4096, dtype=np.intp)
_KRANGE.setflags(write=False)


@functools.lru_cache(maxsize=512)
def _axis_table(in_len: int, out_len: int, start: float, end: float, kind: str,
                antialias: bool, accumulate: bool):
    """Cached, read-only ``(idx, w)`` of one axis (arguments as :func:`axis_taps`)."""
    start32, end32 = _f32(start), _f32(end)
    scale = _f32(_f32(end32 - start32) / _f32(out_len))
    win = abs(float(_f32(end32 - start32)))
    flt = make_filter(kind, bool(antialias), win, out_len)
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


def _arrays_nbytes(arrays) -> int:
    return sum(getattr(a, "nbytes", 0) for a in arrays) + 256


def _plan_nbytes(plan) -> int:
    if plan is None:
        return 64
    return plan.rel.nbytes + plan.w.nbytes + 256


# Byte budgets of the two per-window-length caches of the random_resized_crop fast path: a few
# hundred window lengths x a few edge cuts, ~20 KB an entry; the budgets hold the common ones
# and keep worker memory flat (an entry-count bound let it grow ~3 MB per epoch as new
# window lengths kept arriving).
_REL_TAPS_BYTES = 12 << 20
TENT_PLAN_BYTES = 12 << 20


@byte_lru_cache(_REL_TAPS_BYTES, _arrays_nbytes)
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
    flt = make_filter(kind, bool(antialias), float(end32), out_len)
    first, w = _raw_taps(out_len, _f32(0), _f32(end32 / _f32(out_len)), flt)
    idx = first.astype(np.intp)[:, None] + np.arange(w.shape[1])
    return _frozen(idx, idx - int(idx[0, 0]), w, _edges(first, w.shape[1], 0, length))


def _arange_f32(n: int) -> np.ndarray:
    return _ARANGE[:n] if n <= _ARANGE.shape[0] else np.arange(n, dtype=np.float32)


def axis_taps(in_len: int, out_len: int, start: float, end: float, kind: str,
               antialias: bool, accumulate: bool = False):
    """Source indices ``(out_len, K)`` (clamped to the image) and float32 weights ``(out_len, K)``.

    Nearest neighbour gives ``K == 1`` with weight 1.  The arrays are cached and read-only.
    """
    return _axis_table(in_len, out_len, float(start), float(end), kind, bool(antialias),
                       bool(accumulate))


def _raw_taps(out_len: int, start32, scale, flt: Filter):
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
def axis_matrix(in_len: int, out_len: int, start: float, end: float, kind: str,
                 antialias: bool, accumulate: bool, chans: int):
    """Resampling matrix of one axis, restricted to the source range it reads.

    Returns ``(lo, hi, m)``: the filter reads only source pixels ``lo <= j < hi``, and ``m``
    (float32 torch tensor, sparse CSR, or dense when the filter is wide) has shape
    ``(out_len * chans, (hi - lo) * chans)``, channel-interleaved (``kron(m1, I_chans)``), so
    that ``m @ x`` resamples axis 0 of ``x`` (``((hi - lo) * chans, N)``).  Cached: centre
    crops and fixed-size resizes repeat the same tables; the tensors are never written to.
    """
    idx, w = axis_taps(in_len, out_len, start, end, kind, antialias, accumulate)
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




# --------------------------------------------------------------------------------------------
# Gather tables (torch) of the uint8 fast path
# --------------------------------------------------------------------------------------------


class AxisGather:
    """Taps of one axis as torch tensors, for gathers + weighted sums (cached, read-only).

    The axis reads source lines ``lo <= j < lo + n`` only (every tap; taps past the image edge
    are clamped into it).  ``idx`` holds the taps relative to ``lo`` and ``w`` their float32
    weights, laid out for the pass that uses them:

    * rows (axis 0 of an HWC image): ``idx`` ``(out * K,)`` int64, output-major, and ``w``
      ``(out, 1, K)``; the pass is ``bmm(w, rows[idx].view(out, K, -1))``;
    * cols (axis 1, channels interleaved): ``idx`` ``(K * out * C,)`` int64 flat positions
      ``tap * C + c`` within a row of the ``n`` source columns, tap-major, and ``w``
      ``(K, out * C)``; the pass is ``sum_k row[idx].view(K, out * C)[k] * w[k]``.

    ``edge`` (int64 tensor) lists the outputs whose taps may leave the window (a superset);
    ``idx_e``/``w_e`` are ``idx``/``w`` restricted to them.  Tensors must not be written to.
    """

    __slots__ = ("lo", "n", "idx", "w", "edge", "idx_e", "w_e")


def _layout(idx: np.ndarray, w: np.ndarray, chans: int, rows: bool):
    out_len, k = idx.shape
    if rows:
        t_idx = torch.from_numpy(np.ascontiguousarray(idx, dtype=np.int64).reshape(-1))
        t_w = torch.from_numpy(np.array(w, np.float32)).reshape(out_len, 1, k)
    else:
        flat = idx.T[:, :, None] * chans + np.arange(chans)          # (K, out, C)
        t_idx = torch.from_numpy(np.ascontiguousarray(flat, dtype=np.int64).reshape(-1))
        t_w = torch.from_numpy(np.repeat(np.ascontiguousarray(w.T, np.float32), chans, axis=1))
    return t_idx, t_w


def _gather(lo: int, idx: np.ndarray, w: np.ndarray, edge: np.ndarray, chans: int,
            rows: bool) -> AxisGather:
    g = AxisGather()
    g.lo, g.n = lo, int(idx.max()) + 1
    g.idx, g.w = _layout(idx, w, chans, rows)
    g.edge = torch.from_numpy(np.array(edge, np.int64))
    g.idx_e, g.w_e = _layout(idx[edge], w[edge], chans, rows)
    return g


@functools.lru_cache(maxsize=4096)
def _gather_shifted(length: int, out_len: int, kind: str, antialias: bool, chans: int,
                    rows: bool, cut_lo: int, cut_hi: int) -> AxisGather:
    """:class:`AxisGather` of an integer window of ``length`` whose taps run ``cut_lo`` /
    ``cut_hi`` lines past the start / end of the image; ``lo`` is relative to the first tap."""
    _, rel, w, edge = _rel_taps(length, out_len, kind, antialias)
    if cut_lo or cut_hi:
        rel = np.clip(rel - cut_lo, 0, int(rel.max()) - cut_lo - cut_hi)
    return _gather(cut_lo, rel, w, edge, chans, rows)


@functools.lru_cache(maxsize=4096)
def _rel_extent(length: int, out_len: int, kind: str, antialias: bool) -> tuple[int, int]:
    idx, rel, _, _ = _rel_taps(length, out_len, kind, antialias)
    return int(idx[0, 0]), int(rel.max()) + 1


def gather_taps(in_len: int, out_len: int, start: int, end: int, kind: str, antialias: bool,
                chans: int, rows: bool) -> AxisGather:
    """:class:`AxisGather` of the integer window ``[start, end)`` of one axis.

    Parameters
    ----------
    in_len, out_len : int
        Source and output extent along the axis (both > 0).
    start, end : int
        Source window, ``start < end``, with taps reaching into the image.
    kind : str
        Filter name (not ``"nn"``); ``antialias`` as in ``resample``.
    chans : int
        Channels (cols layout only).
    rows : bool
        Layout for the rows (H) pass, else for the cols (W) pass.

    Returns
    -------
    AxisGather
        Cached tables; ``lo`` is absolute.  The taps are those of the window ``[0, end -
        start)`` shifted by ``start`` (see :func:`_rel_taps`).
    """
    first, span = _rel_extent(end - start, out_len, kind, antialias)
    a = start + first
    cut_lo = -a if a < 0 else 0
    cut_hi = a + span - in_len if a + span > in_len else 0
    g = _gather_shifted(end - start, out_len, kind, antialias, chans, rows, cut_lo, cut_hi)
    if a == 0:
        return g
    res = AxisGather()
    res.lo, res.n, res.idx, res.w = a + g.lo, g.n, g.idx, g.w
    res.edge, res.idx_e, res.w_e = g.edge, g.idx_e, g.w_e
    return res


# --------------------------------------------------------------------------------------------
# Edge plans of the uint8 fast path (see runtime/kernels/cpu/resize_edges.py)
# --------------------------------------------------------------------------------------------


class TentPlan:
    """One axis of an integer window, for the exact edge lines of the uint8 fast path.

    The axis reads source lines ``lo <= j < lo + n`` (absolute ``lo`` from :func:`tent_plan`;
    taps past the image edge are clamped into it).  Cached and read-only:

    * ``rel`` int32 ``(out, K)``: every output's tap lines, relative to ``lo``;
    * ``w`` float32 ``(out, K)``: their weights (DALI's tent, normalised);
    * ``head`` / ``tail``: the outputs whose taps may leave the window are ``[0, head)`` and
      ``[tail, out)`` (a superset; ``head == tail == out`` when that is all of them).
    """

    __slots__ = ("n", "rel", "w", "head", "tail")


@byte_lru_cache(TENT_PLAN_BYTES, _plan_nbytes)
def _tent_plan_rel(length: int, out_len: int, kind: str, antialias: bool, cut_lo: int,
                   cut_hi: int) -> TentPlan:
    """:class:`TentPlan` of a window of ``length`` whose taps run ``cut_lo`` / ``cut_hi``
    lines past the start / end of the image."""
    _, rel, w, edge = _rel_taps(length, out_len, kind, antialias)
    top = int(rel[-1, -1])
    if cut_lo or cut_hi:
        rel = np.clip(rel - cut_lo, 0, top - cut_lo - cut_hi)
    m = edge.shape[0]
    head = m if m == out_len else int(np.count_nonzero(edge == _KRANGE[:m]))
    p = TentPlan()
    p.n = top + 1 - cut_lo - cut_hi
    p.rel = np.ascontiguousarray(rel, np.int32)
    p.w = np.ascontiguousarray(w, np.float32)
    p.rel.setflags(write=False)
    p.w.setflags(write=False)
    p.head, p.tail = head, out_len - (m - head)
    return p


def tent_plan(in_len: int, out_len: int, start: int, end: int, kind: str,
              antialias: bool) -> tuple[int, TentPlan]:
    """``(lo, plan)`` of the integer window ``[start, end)`` of one axis (see
    :class:`TentPlan`).

    Parameters
    ----------
    in_len, out_len : int
        Source and output extent along the axis (both > 0).
    start, end : int
        Source window, ``0 <= start < end <= in_len``.
    kind : str
        ``"linear"`` or ``"triangular"``; ``antialias`` as in ``resample``.

    Returns
    -------
    tuple
        ``lo`` (int, absolute first source line read) and the cached :class:`TentPlan`; the
        taps are those of the window ``[0, end - start)`` shifted by ``start`` (see
        :func:`_rel_taps`), edge-clamped to the image.
    """
    first, span = _rel_extent(end - start, out_len, kind, antialias)
    a = start + first
    cut_lo = -a if a < 0 else 0
    cut_hi = a + span - in_len if a + span > in_len else 0
    return a + cut_lo, _tent_plan_rel(end - start, out_len, kind, antialias, cut_lo, cut_hi)


def tent_plan_cache_bytes() -> int:
    """Bytes held by the cache of :func:`tent_plan` (at most :data:`TENT_PLAN_BYTES`)."""
    return _tent_plan_rel.cache.used
