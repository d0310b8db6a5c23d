"""uint8 tent resampling for fractional source windows (``resize_shorter`` with ``subpixel_scale``).

Used by :func:`runtime.kernels.cpu.resize.resample` when the W window has a fractional end,
so that torch's antialiased kernel (integer windows only) cannot do the W pass: the
``resize_shorter=256`` of a landscape photo keeps an integer H window but gets a fractional W
one.  Gathers along the contiguous W axis are slow in torch/numpy, so both passes are
weighted sums of whole *rows* (``torch.embedding_bag`` with per-tap weights: DALI's
edge-clamped taps and float32 weights from :func:`axis_taps`), and the W pass runs on a
pixel-transposed copy:

1. H pass on the source region the filters read -> ``(oh, wc, 3)`` uint8: torch's
   antialiased bilinear when the H window is integer (the lines whose taps leave the window
   recomputed with DALI's taps, as in ``resize_uint8.fast_uint8``), else a row sum;
2. pixel transpose -> ``(wc, oh, 4)`` uint8 (one unaligned 4-byte load per 3-byte pixel;
   the 4th byte belongs to the next pixel and is carried along unused);
3. W pass = row sum of that -> ``(ow, oh, 4)`` uint8;
4. transpose back as int32 pixels and drop the 4th byte -> ``(oh, ow, 3)`` uint8.

Semantics are DALI 2.4's (see :mod:`.resize`); each pass accumulates in float32 and rounds half
up to uint8 (tent weights are non-negative and sum to 1, so no clamping is needed): the uint8
intermediate is within 0.5 of the float32 one, which keeps results within 1 of the float32
path (:func:`runtime.kernels.cpu.resize.separable`).  Deterministic (sequential sums).  The
per-call buffers are private and the cached tap tables read-only, so the functions are
thread-safe; the heavy steps are single torch/numpy calls, which run without the GIL.
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np
import torch

from runtime.kernels.caching import ByteLRU

from .resize_taps import axis_taps, gather_taps

__all__ = ["frac_uint8", "rows_pass_u8", "row_table", "bag_taps", "bag_taps_window", "Bags",
           "bag_taps_uncached", "BAG_CACHE", "pixel_transpose", "unpack_transpose"]

_TENT_KINDS = ("linear", "triangular")

# Per-thread scratch buffers, reused from call to call: fresh multi-megabyte arrays cost page
# faults on every call (glibc returns freed large blocks to the kernel).  Intermediates only;
# results are always fresh arrays.  Buffers above _SCRATCH_KEEP bytes are not kept.
_SCRATCH_KEEP = 16 << 20
_local = threading.local()


def _scratch(slot: int, shape, dtype) -> np.ndarray:
    """An uninitialised ``shape`` array of ``dtype`` in the calling thread's buffer ``slot``."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > _SCRATCH_KEEP:
        return np.empty(shape, dtype)
    bufs = getattr(_local, "bufs", None)
    if bufs is None:
        bufs = _local.bufs = [None] * 4
    buf = bufs[slot]
    if buf is None or buf.nbytes < nbytes:
        buf = bufs[slot] = np.empty(max(nbytes, 1 << 16), np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


#: bag tables of :func:`bag_taps` (about 20-60 KB per image size at resize_shorter=256)
BAG_CACHE = ByteLRU(64 << 20)


def bag_taps(in_len: int, out_len: int, start: float, end: float, kind: str,
             antialias: bool, accumulate: bool):
    """Taps of one axis as embedding bags, restricted to the lines they read (cached, LRU
    bounded to 64 MB; see :func:`bag_taps_uncached` for the parameters)."""
    key = (in_len, out_len, start, end, kind, antialias, accumulate)
    res = BAG_CACHE.get(key)
    if res is None:
        res = bag_taps_uncached(in_len, out_len, start, end, kind, antialias, accumulate)
        b = res[2]
        BAG_CACHE.put(key, res, b.idx.nbytes + b.w.nbytes + b.offsets.nbytes + 256)
    return res


def bag_taps_window(in_len: int, out_len: int, start: float, end: float, kind: str,
                    antialias: bool, accumulate: bool, o0: int, o1: int):
    """:func:`bag_taps` of the output lines ``o0 <= i < o1`` only (the same taps and weights,
    restricted to the source lines those outputs read; cached like :func:`bag_taps`)."""
    if (o0, o1) == (0, out_len):
        return bag_taps(in_len, out_len, start, end, kind, antialias, accumulate)
    key = (in_len, out_len, start, end, kind, antialias, accumulate, o0, o1)
    res = BAG_CACHE.get(key)
    if res is None:
        lo, _, full = bag_taps(in_len, out_len, start, end, kind, antialias, accumulate)
        taps = full.idx.shape[0] // out_len        # K taps + the bias tap per bag
        idx = full.idx.numpy().reshape(out_len, taps)[o0:o1, :-1]
        w = full.w.numpy().reshape(out_len, taps)[o0:o1, :-1]
        first, last = int(idx.min()), int(idx.max())
        res = (lo + first, last + 1 - first, Bags(idx - first, w, last + 1 - first))
        b = res[2]
        BAG_CACHE.put(key, res, b.idx.nbytes + b.w.nbytes + b.offsets.nbytes + 256)
    return res


def bag_taps_uncached(in_len: int, out_len: int, start: float, end: float, kind: str,
                      antialias: bool, accumulate: bool):
    """Taps of one axis as embedding bags, restricted to the lines they read.

    Parameters
    ----------
    in_len, out_len : int
        Source and output extent along the axis (> 0).
    start, end : float
        Source window (fractional or flipped allowed).
    kind : str
        Filter name (not ``"nn"``); ``antialias`` as in ``resample``.
    accumulate : bool
        True for the rows (H) axis (DALI's row-position arithmetic; see :func:`axis_taps`).

    Returns
    -------
    tuple
        ``(lo, n, bags)``: the taps read source lines ``lo <= j < lo + n`` (edge-clamped),
        ``bags`` a :class:`Bags` indexing lines relative to ``lo``, with the bias line ``n``.
    """
    idx, w = axis_taps(in_len, out_len, start, end, kind, antialias, accumulate)
    lo = int(idx.min())
    n = int(idx.max()) + 1 - lo
    return lo, n, Bags(idx - lo, w, n)


class Bags:
    """``out_len`` embedding bags of ``K`` taps plus a bias tap (read-only tensors).

    ``idx`` (``out_len * (K + 1)``,) int64 row indices, output-major, each bag ending with
    the index of the bias line (all 0.5 in the table) at weight 1, so that truncating the
    sums to uint8 rounds half up; ``w`` the float32 weights; ``offsets`` the bag starts.
    """

    __slots__ = ("idx", "w", "offsets")

    def __init__(self, idx: np.ndarray, w: np.ndarray, bias_line: int):
        out_len, taps = idx.shape
        bidx = np.empty((out_len, taps + 1), np.int64)
        bidx[:, :-1] = idx
        bidx[:, -1] = bias_line
        bw = np.ones(bidx.shape, np.float32)
        bw[:, :-1] = w
        self.idx = torch.from_numpy(bidx.reshape(-1))
        self.w = torch.from_numpy(bw.reshape(-1))
        self.offsets = torch.arange(0, out_len * (taps + 1), taps + 1, dtype=torch.int64)


@functools.lru_cache(maxsize=512)
def _edge_bags(in_len: int, out_len: int, start: int, end: int, kind: str, antialias: bool):
    """Outputs of the integer window ``[start, end)`` whose taps may leave it (cached).

    Returns ``(edge, rows, bags)``: ``edge`` int64 array of output lines (a superset, from
    :func:`gather_taps`), ``rows`` the (clamped, absolute) source lines they read, ``bags``
    (:class:`Bags`) indexing into ``rows``.  Arrays are read-only.
    """
    edge = gather_taps(in_len, out_len, start, end, kind, antialias, 1, True).edge.numpy()
    idx, w = axis_taps(in_len, out_len, float(start), float(end), kind, antialias, True)
    rows, inv = np.unique(idx[edge], return_inverse=True)
    bags = Bags(inv.reshape(edge.shape[0], idx.shape[1]), w[edge], rows.shape[0])
    edge, rows = np.array(edge, np.intp), rows.astype(np.intp)
    edge.setflags(write=False)
    rows.setflags(write=False)
    return edge, rows, bags


def row_table(rows_u8: np.ndarray, scratch: bool = False) -> np.ndarray:
    """``(n, ...)`` uint8 rows (any strides) -> ``(n + 1, L)`` float32 table (``L``
    elements per row) whose last row, the bias line, is 0.5; ``scratch``: in the calling
    thread's scratch buffer (valid until its next ``row_table(..., True)``)."""
    n = rows_u8.shape[0]
    shape = (n + 1, rows_u8[0].size if n else 0)
    table = _scratch(0, shape, np.float32) if scratch else np.empty(shape, np.float32)
    np.copyto(table[:n].reshape(rows_u8.shape), rows_u8, casting="unsafe")
    table[n] = 0.5
    return table


def rows_pass_u8(table: np.ndarray, bags: Bags, out: np.ndarray) -> np.ndarray:
    """Weighted sums of rows of ``table``, rounded half up into the uint8 ``out``.

    Parameters
    ----------
    table : numpy.ndarray
        ``(n + 1, L)`` float32 from :func:`row_table` (row ``n`` the bias line).
    bags : Bags
        ``out_len`` bags from :func:`bag_taps` (non-negative weights summing to 1, plus the
        bias tap).
    out : numpy.ndarray
        ``(out_len, L)`` uint8 (any strides), written.

    Returns
    -------
    numpy.ndarray
        ``out``.
    """
    acc = torch.embedding_bag(torch.from_numpy(table), bags.idx, bags.offsets, False, 0,
                              False, bags.w)[0]
    # float -> uint8 truncates (sums + 0.5 lie in [0.5, 256)); numpy's cast is vectorised
    # where torch's saturating one is several times slower
    np.copyto(out, acc.numpy(), casting="unsafe")
    return out


def pixel_transpose(flat: np.ndarray, h: int, w: int) -> np.ndarray:
    """``(h, w, 3)`` uint8 pixels stored in ``flat`` (length ``>= h * w * 3 + 1``) ->
    ``(w, h)`` int32 (a scratch buffer): each element is the pixel's 3 bytes plus the next
    byte in ``flat``."""
    src = np.ndarray((h, w), np.int32, buffer=flat, strides=(w * 3, 3))
    dst = _scratch(3, (w, h), np.int32)
    np.copyto(dst, src.T)
    return dst


def unpack_transpose(quads: np.ndarray) -> np.ndarray:
    """``(w, h, 4)`` uint8 -> fresh ``(h, w, 3)`` uint8: transpose the pixels, drop the 4th
    byte (uses scratch buffer 1).

    The transpose moves whole int32 pixels; the 4th byte of each is then set to the first
    byte of the next pixel, so that storing every pixel as 4 bytes at a 3-byte stride writes
    each byte with the same value whichever store lands last.
    """
    w, h = quads.shape[0], quads.shape[1]
    # torch's 2-D transpose copy is blocked: steadier than numpy's when ``h`` (often 256)
    # makes the source rows a power-of-two bytes apart
    px = _scratch(1, (h, w), np.int32)
    torch.from_numpy(px).copy_(torch.from_numpy(quads.view(np.int32).reshape(w, h)).t())
    b = px.view(np.uint8).reshape(h * w, 4)
    b[:-1, 3] = b[1:, 0]
    flat = np.empty(h * w * 3 + 1, np.uint8)
    dst = np.ndarray((h * w,), np.int32, buffer=flat, strides=(3,))
    np.copyto(dst, px.reshape(-1))
    return flat[:h * w * 3].reshape(h, w, 3)


def _aa_rows(src: torch.Tensor, oh: int, out: torch.Tensor) -> None:
    """torch's antialiased bilinear of the uint8 HWC ``src`` along H only, into ``out``."""
    torch._C._nn._upsample_bilinear2d_aa(src.permute(2, 0, 1).unsqueeze(0),
                                         [oh, src.shape[1]], False, None, None,
                                         out=out.permute(2, 0, 1).unsqueeze(0))


def _tent_rows(hwc: np.ndarray, y0: int, y1: int, xlo: int, wc: int, kind: str,
               antialias: bool, out: np.ndarray) -> None:
    """H pass of the integer window ``[y0, y1)`` on columns ``[xlo, xlo + wc)`` into ``out``
    (``(oh, wc * 3)`` uint8).

    torch's antialiased bilinear samples an integer window like DALI's tent (see
    :func:`runtime.kernels.cpu.resize_uint8.fast_uint8`) except where the taps leave the window;
    those output rows are recomputed with DALI's (edge-clamped) taps.
    """
    oh = out.shape[0]
    cols = hwc[:, xlo:xlo + wc]
    _aa_rows(_torch_view(cols[y0:y1]), oh, torch.from_numpy(out).view(oh, wc, 3))
    edge, rows, bags = _edge_bags(hwc.shape[0], oh, y0, y1, kind, antialias)
    if edge.shape[0]:
        fixed = np.empty((edge.shape[0], wc * 3), np.uint8)
        out[edge] = rows_pass_u8(row_table(cols[rows]), bags, fixed)


def _torch_view(a: np.ndarray) -> torch.Tensor:
    if min(a.strides) < 0:                  # torch views need non-negative strides
        a = np.ascontiguousarray(a)
    return torch.from_numpy(a)


def frac_uint8(hwc: np.ndarray, oh: int, ow: int, params, kind_y: str, kind_x: str,
               antialias: bool, out_window=None):
    """Resample a 3-channel uint8 HWC image with tent filters; ``None`` if not applicable.

    Parameters
    ----------
    hwc : numpy.ndarray
        ``(H, W, 3)`` uint8 source (any strides; only the region the filters read is used).
    oh, ow : int
        Output extent (> 0).
    params : ResizeParams
        Source window ``y0, y1, x0, x1`` (fractional and flipped windows allowed).
    kind_y, kind_x : str
        Filter per axis; only ``"linear"`` / ``"triangular"`` are handled here.
    antialias : bool
        As in ``resample``.
    out_window : tuple of int, optional
        ``(oy0, ox0, ch, cw)``: compute only these output pixels (each output line is a sum
        over its own taps, so the result is exactly that part of the full output).

    Returns
    -------
    numpy.ndarray or None
        ``(oh, ow, 3)`` (``(ch, cw, 3)`` with ``out_window``) uint8 (DALI 2.4 ``resize``
        semantics, within 1 of the float32 path), or ``None`` when the filters or channel
        count are not handled here.
    """
    in_h, in_w, chans = hwc.shape
    if chans != 3 or kind_y not in _TENT_KINDS or kind_x not in _TENT_KINDS:
        return None
    aa = bool(antialias)
    oy0, ox0, ch, cw = out_window if out_window is not None else (0, 0, oh, ow)
    xlo, wc, xbags = bag_taps_window(in_w, ow, float(params.x0), float(params.x1), kind_x,
                                     aa, False, ox0, ox0 + cw)
    y0, y1 = float(params.y0), float(params.y1)
    # H pass -> (ch, wc, 3) uint8, with one spare byte for the 4-byte loads below
    mid_flat = _scratch(1, (ch * wc * 3 + 1,), np.uint8)
    mid = mid_flat[:-1].reshape(ch, wc * 3)
    if (y0.is_integer() and y1.is_integer() and 0 <= y0 < y1 <= in_h
            and (aa or oh >= y1 - y0)):
        if ch == oh:
            _tent_rows(hwc, int(y0), int(y1), xlo, wc, kind_y, aa, mid)
        else:       # torch computes every row of the integer window: keep the wanted ones
            full = np.empty((oh, wc * 3), np.uint8)
            _tent_rows(hwc, int(y0), int(y1), xlo, wc, kind_y, aa, full)
            mid[:] = full[oy0:oy0 + ch]
    else:
        ylo, hc, ybags = bag_taps_window(in_h, oh, y0, y1, kind_y, aa, True, oy0, oy0 + ch)
        rows_pass_u8(row_table(hwc[ylo:ylo + hc, xlo:xlo + wc], True), ybags, mid)
    # W pass on the pixel-transposed copy: rows are source columns, (ch, 4) bytes each
    cols = pixel_transpose(mid_flat, ch, wc).view(np.uint8)
    quads = _scratch(2, (cw, ch * 4), np.uint8)
    rows_pass_u8(row_table(cols, True), xbags, quads)
    return unpack_transpose(quads.reshape(cw, ch, 4))
