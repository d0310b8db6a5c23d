"""``multi_paste`` on the CPU: regions of source images pasted onto zero canvases.

Semantics (DALI 2.4's operator, observed on its CPU backend): region ``k`` of output sample
``i`` comes from sample ``in_ids[k]`` of the one input (or, without ``in_ids``, sample ``i`` of
input ``k``); it starts at ``in_anchors[k]`` (``floor(in_anchors_rel * source extent)`` in
float32; default 0) and spans ``shapes[k]`` (``ceil(shapes_rel * source extent)``; default
to the source's end), and lands at ``out_anchors[k]`` (``floor(out_anchors_rel * canvas
extent)``; default 0). The canvas is ``output_size`` (H, W), by default the inputs' common
shape; regions are pasted in order, later ones over earlier ones; values are converted to
``dtype`` as ``cast`` does (rounding half away from zero, saturating). A region outside its
source or the canvas is an error (DALI's words). HWC samples (FHWC: every frame alike).

Registers ``multi_paste``.
"""
from __future__ import annotations

import numpy as np

from runtime.kernels.cpu.cast import cast, to_numpy_dtype
from runtime.kernels.registry import register, sample_args

__all__ = ["multi_paste"]

_F32 = np.float32


def _pairs(v, k, name):
    """(k, 2) int64 of a per-region argument (None: not given)."""
    if v is None:
        return None
    arr = np.asarray(v)
    if arr.size != 2 * k:
        raise ValueError(f"multi_paste: `{name}` must give 2 values for each of the {k} "
                         f"regions, got shape {arr.shape}")
    return arr.reshape(k, 2)


def _hw(x):
    return np.asarray(x.shape[-3:-1], np.int64)


def _fmt(v):
    return " x ".join(str(int(t)) for t in v)


def multi_paste(sources, canvas_hw, *, dtype=None, in_anchors=None, in_anchors_rel=None,
                shapes=None, shapes_rel=None, out_anchors=None, out_anchors_rel=None):
    """One output sample.

    Parameters
    ----------
    sources : list of numpy.ndarray
        The K regions' source images, HWC (or FHWC), one dtype and channel count.
    canvas_hw : (int, int)
    dtype : dtype-like, optional
    in_anchors, shapes, out_anchors : array-like (K, 2) of int, optional
    in_anchors_rel, shapes_rel, out_anchors_rel : array-like (K, 2) of float, optional

    Returns
    -------
    numpy.ndarray
        The canvas, ``(..., H, W, C)`` of ``dtype``.

    Raises
    ------
    ValueError
        A region outside its source or the canvas, mismatched channels, bad argument shapes.
    """
    k = len(sources)
    if not k:
        raise ValueError("multi_paste: no source (give in_ids or inputs)")
    ref = sources[0]
    out_dt = to_numpy_dtype(dtype) if dtype is not None else ref.dtype
    canvas_hw = np.asarray(canvas_hw, np.int64).reshape(-1)
    out = np.zeros(ref.shape[:-3] + (int(canvas_hw[0]), int(canvas_hw[1]), ref.shape[-1]),
                   out_dt)
    in_a, in_r = _pairs(in_anchors, k, "in_anchors"), _pairs(in_anchors_rel, k, "in_anchors_rel")
    sh_a, sh_r = _pairs(shapes, k, "shapes"), _pairs(shapes_rel, k, "shapes_rel")
    out_a, out_r = (_pairs(out_anchors, k, "out_anchors"),
                    _pairs(out_anchors_rel, k, "out_anchors_rel"))
    for j, src in enumerate(sources):
        if src.ndim != ref.ndim or src.shape[-1] != ref.shape[-1] or \
                src.shape[:-3] != ref.shape[:-3]:
            raise ValueError(f"multi_paste: region {j}'s source has shape {src.shape}; "
                             f"expected the channels and frames of {ref.shape}")
        hw = _hw(src)
        if in_a is not None:
            a0 = in_a[j].astype(np.int64)
        elif in_r is not None:
            a0 = np.floor(in_r[j].astype(_F32) * hw.astype(_F32)).astype(np.int64)
        else:
            a0 = np.zeros(2, np.int64)
        if sh_a is not None:
            ext = sh_a[j].astype(np.int64)
        elif sh_r is not None:
            ext = np.ceil(sh_r[j].astype(_F32) * hw.astype(_F32)).astype(np.int64)
        else:
            ext = hw - a0
        if out_a is not None:
            o0 = out_a[j].astype(np.int64)
        elif out_r is not None:
            o0 = np.floor(out_r[j].astype(_F32) * canvas_hw.astype(_F32)).astype(np.int64)
        else:
            o0 = np.zeros(2, np.int64)
        if (a0 < 0).any() or (ext < 0).any() or (a0 + ext > hw).any():
            raise ValueError(f"The pasted region must be within input sample. Got input "
                             f"anchor: {_fmt(a0)}, pasted region shape: {_fmt(ext)}, input "
                             f"shape: {_fmt(hw)}, for the region at index {j}")
        if (o0 < 0).any() or (o0 + ext > canvas_hw).any():
            raise ValueError(f"The pasted region must be within output bounds. Got output "
                             f"anchor: {_fmt(o0)}, pasted region shape: {_fmt(ext)}, output "
                             f"shape: {_fmt(canvas_hw)}, for the region at index {j}")
        piece = src[..., a0[0]:a0[0] + ext[0], a0[1]:a0[1] + ext[1], :]
        out[..., o0[0]:o0[0] + ext[0], o0[1]:o0[1] + ext[1], :] = \
            piece if piece.dtype == out_dt else cast(piece, out_dt)
    return out


@register("multi_paste", "cpu")
def multi_paste_kernel(ctx, inputs, args):
    """``multi_paste`` of a batch: the sources of each output sample gathered by ``in_ids``
    (one input) or by input index, the canvases built on the pool."""
    by_ids = args.get("in_ids") is not None or "in_ids" in ctx.tensor_arg_names
    if not by_ids:
        shapes = {tuple(np.shape(x)) for inp in inputs for x in inp}
    else:
        shapes = {tuple(np.shape(x)) for x in inputs[0]}

    def one(i):
        a = sample_args(ctx, args, i)
        if by_ids:
            ids = np.asarray(a["in_ids"], np.int64).reshape(-1)
            data = inputs[0]
            bad = [int(t) for t in ids if not 0 <= t < len(data)]
            if bad:
                raise ValueError(f"multi_paste: in_ids {bad} outside the batch of "
                                 f"{len(data)} samples")
            sources = [np.asarray(data[t]) for t in ids]
        else:
            sources = [np.asarray(inp[i] if len(inp) > 1 else inp[0]) for inp in inputs]
        size = a.get("output_size")
        if size is None:
            if len(shapes) != 1:
                s = sorted(shapes)
                raise ValueError(f"If the `output_size` is not specified, all the input "
                                 f"samples must have the same shape. Got samples of different "
                                 f"shapes: {_fmt(s[0])} and {_fmt(s[1])}.")
            size = next(iter(shapes))[-3:-1]
        if not sources:         # nothing pasted: a zero canvas with the input's channels
            ref = np.asarray(inputs[0][0])
            dt = to_numpy_dtype(a["dtype"]) if a.get("dtype") else ref.dtype
            hw = np.asarray(size, np.int64).reshape(-1)
            return np.zeros(ref.shape[:-3] + (int(hw[0]), int(hw[1]), ref.shape[-1]), dt)
        return multi_paste(sources, size, dtype=a.get("dtype"),
                           in_anchors=a.get("in_anchors"),
                           in_anchors_rel=a.get("in_anchors_rel"),
                           shapes=a.get("shapes"), shapes_rel=a.get("shapes_rel"),
                           out_anchors=a.get("out_anchors"),
                           out_anchors_rel=a.get("out_anchors_rel"))
    return [ctx.pool.map(one, ctx.batch_size)]
