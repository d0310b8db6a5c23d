"""Edge lines of the uint8 tent fast path (``resize_uint8.fast_uint8``), compiled with numba.

torch's antialiased bilinear resamples an integer window in one call, but it drops the taps
that fall outside the window (and renormalises), where DALI reads the pixels there (clamped to
the image).  The 1-4 output lines per side whose taps leave the window are recomputed here
with DALI's taps: ``out = trunc(sum_t w_t * (sum_q v_q * src[line_t, col_q]) + 0.5)``, the
inner sum along the axis that is not at its edge, both in float32, taps in table order.

Two calls of one compiled loop fix the four sides of an image (rows, then columns as the rows
of the transposed arrays, so the corners come from the column pass), with the GIL released:
a few microseconds of call overhead instead of the ~20 numpy/torch calls of the table-based
version it replaced (embedding bag + matrix product; the whole fast path of a train sample
went from ~0.40 to ~0.30 ms).

The kernel is compiled with numba on first use (:mod:`.jit`).
"""
from __future__ import annotations

import numpy as np

from .jit import compiled
from .resize_taps import tent_plan

__all__ = ["fix_edges", "warm_up"]


@compiled
def _edge_rows(njit):
    """Recompute the edge rows of ``out`` (see :func:`fix_edges`); with everything
    transposed (H <-> W) the same loop recomputes the edge columns."""

    @njit
    def edge_rows(src, lo_a, lo_b, ra, wa, rb, wb, head, tail, out):
        # out[i, j] for the edge rows i (outside [head, tail)) of axis a, every j of axis b:
        # sum_t wa[i, t] * (sum_q wb[j, q] * src[lo_a + ra[i, t], lo_b + rb[j, q]])
        na, nb, chans = out.shape
        ka = ra.shape[1]
        kb = rb.shape[1]
        zero = np.float32(0.0)
        half = np.float32(0.5)
        for k in range(head + na - tail):
            i = k if k < head else tail + k - head
            for j in range(nb):
                for c in range(chans):
                    acc = zero
                    for t in range(ka):
                        line = lo_a + ra[i, t]
                        s = zero
                        for q in range(kb):
                            s += wb[j, q] * np.float32(src[line, lo_b + rb[j, q], c])
                        acc += wa[i, t] * s
                    out[i, j, c] = np.uint8(acc + half)

    return edge_rows


def fix_edges(src: np.ndarray, ylo: int, xlo: int, ytaps, xtaps, out: np.ndarray) -> None:
    """Overwrite the edge lines of ``out`` with DALI's edge-clamped taps.

    Parameters
    ----------
    src : numpy.ndarray
        uint8 ``(H, W, C)`` source, C-contiguous.
    ylo, xlo : int
        Source row / column that tap index 0 refers to (``tent_plan``'s ``lo``).
    ytaps, xtaps : TentPlan
        Per axis (:class:`runtime.kernels.cpu.resize_taps.TentPlan`): ``rel`` int32
        ``(out, k)`` tap lines relative to ``lo``, ``w`` float32 ``(out, k)`` weights,
        ``head``/``tail``: outputs ``[head, tail)`` are interior (left untouched).
    out : numpy.ndarray
        uint8 ``(out_h, out_w, C)``, written in place.
    """
    kernel = _edge_rows()
    if ytaps.head or ytaps.tail < out.shape[0]:
        kernel(src, ylo, xlo, ytaps.rel, ytaps.w, xtaps.rel, xtaps.w, ytaps.head, ytaps.tail,
               out)
    if xtaps.head or xtaps.tail < out.shape[1]:      # the columns: rows of the transpose
        kernel(src.transpose(1, 0, 2), xlo, ylo, xtaps.rel, xtaps.w, ytaps.rel, ytaps.w,
               xtaps.head, xtaps.tail, out.transpose(1, 0, 2))


def warm_up() -> None:
    """Compile (or load) the kernel now (both array layouts): a tiny 4x4 -> 2x2 case."""
    src = np.zeros((4, 4, 1), np.uint8)
    lo, p = tent_plan(4, 2, 0, 4, "linear", True)
    fix_edges(src, lo, lo, p, p, np.zeros((2, 2, 1), np.uint8))
