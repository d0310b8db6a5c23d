"""``bb_flip`` on the CPU: mirror boxes in relative (0..1) coordinates.

Semantics follow DALI 2.4 (measured bit-exactly): boxes are groups of 4 consecutive values;
``xywh`` boxes go through ``ltrb`` (``r = x + w``, ``b = y + h``), a flip maps ``(l, r)`` to
``(1 - r, 1 - l)`` (``(t, b)`` likewise), and ``w = r - l``, ``h = b - t`` come back, in float32,
so even an unflipped ``xywh`` box may change its size by an ulp, as in DALI.
``random_bbox_crop`` draws windows as DALI's operator describes (a threshold, or no crop, drawn
uniformly; extents uniform in ``scaling`` within the ``aspect_ratio`` range; the anchor uniform),
from per-sample numpy generators: the values differ from DALI's streams.
``bbox_rotate`` follows DALI 2.4's CPU operator step by step in float32 (corners centered on
the image, rotated by ``(x cos + y sin, -x sin + y cos)``, moved onto the canvas, their bounding
box, the ``fixed`` / ``halfway`` size correction, clipping, removal by remaining area,
normalization by the reciprocal canvas size).
Registers ``bb_flip``, ``random_bbox_crop`` and ``bbox_rotate``.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.params.seeds import sample_rng
from runtime.kernels.params.warp import rotate_output_size
from runtime.kernels.registry import per_sample, register

__all__ = ["bb_flip", "random_bbox_crop", "bbox_rotate"]

_ONE = np.float32(1)


def bb_flip(boxes, *, horizontal=1, vertical=0, ltrb=False):
    """Flip boxes (see the module docstring).

    Parameters
    ----------
    boxes : numpy.ndarray
        float32, any shape whose size is a multiple of 4 (usually ``(N, 4)``).
    horizontal, vertical : int
        Non-zero flips.
    ltrb : bool
        ``[l, t, r, b]`` boxes instead of ``[x, y, w, h]``.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype.

    Raises
    ------
    ValueError
        A size that is not a multiple of 4.
    """
    boxes = np.asarray(boxes)
    if boxes.size % 4:
        raise ValueError(f"bounding boxes are groups of 4 coordinates; got {boxes.size} values "
                         f"(shape {boxes.shape})")
    b = boxes.reshape(-1, 4)
    left, top = b[:, 0], b[:, 1]
    right, bottom = (b[:, 2], b[:, 3]) if ltrb else (b[:, 0] + b[:, 2], b[:, 1] + b[:, 3])
    if horizontal:
        left, right = _ONE - right, _ONE - left
    if vertical:
        top, bottom = _ONE - bottom, _ONE - top
    if ltrb:
        out = np.stack([left, top, right, bottom], axis=1)
    else:
        out = np.stack([left, top, right - left, bottom - top], axis=1)
    return out.astype(boxes.dtype, copy=False).reshape(boxes.shape)


@register("bb_flip", "cpu")
@per_sample
def bb_flip_kernel(ctx, ins, a, i):
    """``bb_flip`` of sample ``i``."""
    return bb_flip(ins[0], horizontal=a.get("horizontal", 1), vertical=a.get("vertical", 0),
                   ltrb=a.get("ltrb", False))


# ------------------------------------------------------------------------ random_bbox_crop
#: windows tried before giving up when no outcome can end the search (no ``allow_no_crop``,
#: ``total_num_attempts`` unlimited): DALI would loop for ever
MAX_TRIES = 10_000
#: drawn thresholds whose windows are drawn and judged in one numpy pass
ROUNDS = 4


def _to_ltrb(b, layout):
    if layout == "xyXY":
        return b.copy()
    out = b.copy()
    out[:, 2] = b[:, 0] + b[:, 2]
    out[:, 3] = b[:, 1] + b[:, 3]
    return out


def _from_ltrb(b, layout):
    if layout == "xyXY":
        return b
    out = b.copy()
    out[:, 2] = b[:, 2] - b[:, 0]
    out[:, 3] = b[:, 3] - b[:, 1]
    return out


def _overlaps(boxes, win):
    """``(intersection area, box area)`` of every box with the window ``(x0, y0, x1, y1)``."""
    iw = np.clip(np.minimum(boxes[:, 2], win[2]) - np.maximum(boxes[:, 0], win[0]), 0, None)
    ih = np.clip(np.minimum(boxes[:, 3], win[3]) - np.maximum(boxes[:, 1], win[1]), 0, None)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return iw * ih, area


def _kept(boxes, win, prune):
    if prune is None:
        cx = (boxes[:, 0] + boxes[:, 2]) / 2
        cy = (boxes[:, 1] + boxes[:, 3]) / 2
        return (cx >= win[0]) & (cx <= win[2]) & (cy >= win[1]) & (cy <= win[3])
    inter, area = _overlaps(boxes, win)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(area > 0, inter / area, 0.0)
    return (frac >= prune) & (inter > 0)


def _wh(values, layout, name):
    values = tuple(int(v) for v in np.asarray(values).reshape(-1).tolist())
    if len(values) != 2:
        raise ValueError(f"argument '{name}' must give 2 extents for 2-D boxes, got "
                         f"{list(values)}")
    order = layout or "WH"
    if sorted(order) != ["H", "W"]:
        raise ValueError(f"shape_layout must be 'WH' or 'HW', got {layout!r}")
    return (values[order.index("W")], values[order.index("H")])


def random_bbox_crop(boxes, labels, rng, a):
    """One sample of ``random_bbox_crop`` (see its schema): ``(anchor, shape, boxes[, labels]
    [, indices])``.

    Raises
    ------
    ValueError
        Bad boxes or arguments, or no valid window within :data:`MAX_TRIES` tries.
    """
    boxes = np.asarray(boxes, dtype=np.float32)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"expected 2-D boxes of 4 coordinates (N x 4), got shape "
                         f"{boxes.shape}")
    layout = a.get("bbox_layout") or ("xyXY" if a.get("ltrb", True) else "xyWH")
    if layout not in ("xyXY", "xyWH"):
        raise ValueError(f"bbox_layout {layout!r} is not supported by ndd (2-D boxes: 'xyXY' "
                         f"or 'xyWH')")
    b = _to_ltrb(boxes.astype(np.float64), layout)
    if b.size and (b.min() < 0 or b.max() > 1 or (b[:, 2] < b[:, 0]).any()
                   or (b[:, 3] < b[:, 1]).any()):
        raise ValueError("boxes must lie in [0, 1] (relative coordinates) with start <= end")
    lo_s, hi_s = a.get("scaling", (1.0, 1.0))
    lo_a, hi_a = a.get("aspect_ratio", (1.0, 1.0))
    thresholds = list(a.get("thresholds", (0.0,)))
    fixed = a.get("crop_shape") is not None
    in_wh = _wh(a["input_shape"], a.get("shape_layout"), "input_shape") \
        if a.get("input_shape") is not None else None
    if fixed:
        if in_wh is None:
            raise ValueError("crop_shape needs input_shape (to scale the boxes)")
        crop_wh = _wh(a["crop_shape"], a.get("shape_layout"), "crop_shape")
        if crop_wh[0] > in_wh[0] or crop_wh[1] > in_wh[1]:
            raise ValueError(f"crop_shape {crop_wh} (W, H) exceeds input_shape {in_wh}")
    options = thresholds + ([None] if a.get("allow_no_crop", True) and not fixed else [])
    limit = a.get("total_num_attempts", -1)
    tries = 0

    def result(win, anchor, shape):
        keep = _kept(b, win, a.get("bbox_prune_threshold")) if win is not None else \
            np.ones(len(b), bool)
        kb = b[keep]
        if win is not None:
            w, h = win[2] - win[0], win[3] - win[1]
            kb = np.stack([(kb[:, 0] - win[0]) / w, (kb[:, 1] - win[1]) / h,
                           (kb[:, 2] - win[0]) / w, (kb[:, 3] - win[1]) / h], axis=1)
            kb = np.clip(kb, 0.0, 1.0)
        out = [np.asarray(anchor, np.float32), np.asarray(shape, np.float32),
               _from_ltrb(kb, layout).astype(np.float32).reshape(-1, 4)]
        if labels is not None:
            out.append(np.asarray(labels)[keep].copy())
        if a.get("output_bbox_indices", False):
            out.append(np.flatnonzero(keep).astype(np.int32))
        return tuple(out)

    no_crop = (None, (0.0, 0.0), (1.0, 1.0))
    attempts = max(1, a.get("num_attempts", 1))
    kind = a.get("threshold_type", "iou")
    every = a.get("all_boxes_above_threshold", True)
    while True:
        # ROUNDS drawn thresholds and their attempts' windows are drawn and judged together;
        # then the rounds are walked in order (the first valid window of a round wins)
        picks = rng.integers(len(options), size=ROUNDS).tolist()
        n = ROUNDS * attempts
        if fixed:
            x0 = rng.integers(0, in_wh[0] - crop_wh[0] + 1, size=n)
            y0 = rng.integers(0, in_wh[1] - crop_wh[1] + 1, size=n)
            wins = np.stack([x0 / in_wh[0], y0 / in_wh[1], (x0 + crop_wh[0]) / in_wh[0],
                             (y0 + crop_wh[1]) / in_wh[1]], axis=1)
            valid = np.ones(n, bool)
        else:
            w, h = rng.uniform(lo_s, hi_s, n), rng.uniform(lo_s, hi_s, n)
            ratio = (w * in_wh[0]) / (h * in_wh[1]) if in_wh else w / h
            valid = (lo_a <= ratio) & (ratio <= hi_a)
            x0, y0 = rng.uniform(0, 1 - w), rng.uniform(0, 1 - h)
            wins = np.stack([x0, y0, x0 + w, y0 + h], axis=1)
        thr = np.repeat([np.inf if options[p] is None else options[p] for p in picks], attempts)
        above = _metrics(b, wins, kind) >= thr[:, None]            # (n, boxes)
        ok = valid & (above.all(axis=1) if every else (above.any(axis=1) | (len(b) == 0)))
        for r, p in enumerate(picks):
            if options[p] is None:
                return result(*no_crop)
            sl = slice(r * attempts, (r + 1) * attempts)
            # attempt j starts with ``tries + j`` tries made: the limits end the search there
            starts = tries + np.arange(attempts)
            blocked = starts >= MAX_TRIES
            if limit >= 0:
                blocked |= starts >= limit
            stop = np.flatnonzero(ok[sl] | blocked)
            if stop.size == 0:
                tries += attempts
                continue
            j = int(stop[0])
            if ok[sl][j] and not blocked[j]:
                k = r * attempts + j
                win = tuple(float(v) for v in wins[k])
                if fixed:
                    return result(win, (int(x0[k]), int(y0[k])), crop_wh)
                return result(win, (win[0], win[1]), (float(w[k]), float(h[k])))
            if 0 <= limit <= tries + j:
                return result(*no_crop)
            raise ValueError(f"random_bbox_crop: no window met the thresholds in {tries + j} "
                             f"tries; allow_no_crop, lower thresholds or set "
                             f"total_num_attempts")


def _metrics(boxes, wins, kind):
    """IoU (``kind="iou"``) or the box's fraction inside (``"overlap"``) of every window
    (rows of ``wins``, ``(x0, y0, x1, y1)``) with every box: float64 (windows, boxes)."""
    bx = boxes[None, :, :]
    wn = wins[:, None, :]
    iw = np.clip(np.minimum(bx[..., 2], wn[..., 2]) - np.maximum(bx[..., 0], wn[..., 0]), 0,
                 None)
    ih = np.clip(np.minimum(bx[..., 3], wn[..., 3]) - np.maximum(bx[..., 1], wn[..., 1]), 0,
                 None)
    inter = iw * ih
    area = (bx[..., 2] - bx[..., 0]) * (bx[..., 3] - bx[..., 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "overlap":
            return np.where(area > 0, inter / area, 0.0)
        union = area + (wn[..., 2] - wn[..., 0]) * (wn[..., 3] - wn[..., 1]) - inter
        return np.where(union > 0, inter / union, 0.0)


@register("random_bbox_crop", "cpu")
@per_sample
def random_bbox_crop_kernel(ctx, ins, a, i):
    """``random_bbox_crop`` of sample ``i`` (its own generator from the node's seeds)."""
    return random_bbox_crop(ins[0], ins[1] if len(ins) > 1 else None,
                            sample_rng(a["_seeds"], i), a)


# ----------------------------------------------------------------------------- bbox_rotate
def _shape_wh(shape, layout):
    """(W, H) of ``input_shape`` in ``layout`` order ("HW" by default; extra axes allowed)."""
    shape = [int(v) for v in np.asarray(shape).reshape(-1).tolist()]
    layout = layout or "HW"
    if "H" not in layout or "W" not in layout:
        raise ValueError(f"shape_layout must contain 'H' and 'W', got {layout!r}")
    hi, wi = layout.index("H"), layout.index("W")
    if len(shape) < max(hi, wi) + 1:
        raise ValueError(f"`input_shape` {shape} has fewer dimensions than `shape_layout` "
                         f"{layout!r}")
    return shape[wi], shape[hi]


def rotation_canvas(in_wh, angle, keep_size=False, size=None):
    """(W, H) of the canvas the rotated image lies on: the input's (``keep_size``), ``size``
    (H, W, floored) or ``rotate``'s own (:func:`rotate_output_size`)."""
    if keep_size:
        return in_wh
    if size is not None:
        size = np.asarray(size, np.float64).reshape(-1)
        if size.size != 2:
            raise ValueError(f"`size` must be 2 values (H, W), got {size.tolist()}")
        return math.floor(size[1]), math.floor(size[0])
    h, w = rotate_output_size((in_wh[1], in_wh[0]), angle)
    return w, h


def bbox_rotate(boxes, labels=None, *, angle, input_shape, shape_layout="HW", ltrb=True,
                normalized=True, keep_size=False, size=None, mode="expand",
                remove_threshold=0.1):
    """Boxes of an image rotated by ``angle`` degrees (see the module docstring).

    Parameters
    ----------
    boxes : numpy.ndarray
        float32 (N, 4), ``[l, t, r, b]`` (``ltrb``) or ``[x, y, w, h]``; relative
        (``normalized``) or pixels.
    labels : numpy.ndarray, optional
        int32 (N,) or (N, 1): the kept boxes' labels are returned too.
    angle : float
    input_shape : sequence of int
        The image's shape in ``shape_layout`` order.
    keep_size, size, mode, remove_threshold
        As the ``bbox_rotate`` schema.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, numpy.ndarray)
        float32 (M, 4) kept boxes in the input's format, on the rotated canvas; with labels,
        also the kept labels (same dtype and number of dimensions).

    Raises
    ------
    ValueError
        Boxes that are not (N, 4) float32, labels not matching them, a bad ``input_shape``.
    """
    f = np.float32
    boxes = np.asarray(boxes)
    if boxes.dtype != np.float32:
        raise ValueError(f"bbox_rotate: expected float32 boxes, got {boxes.dtype}")
    if boxes.size == 0:
        boxes = boxes.reshape(0, 4)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"bbox_rotate: expected boxes of shape (N, 4), got {boxes.shape}")
    in_w, in_h = _shape_wh(input_shape, shape_layout)
    rad = f(angle) * f(math.pi / 180)
    out_w, out_h = rotation_canvas((in_w, in_h), float(angle), keep_size, size)
    c, s = f(math.cos(float(rad))), f(math.sin(float(rad)))
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    if not ltrb:
        x2, y2 = x2 + x1, y2 + y1
    xs = np.stack([x1, x2, x1, x2], axis=1)
    ys = np.stack([y1, y1, y2, y2], axis=1)
    w_, h_ = f(in_w), f(in_h)
    if normalized:
        xs, ys = (xs - f(0.5)) * w_, (ys - f(0.5)) * h_
    else:
        xs, ys = xs - w_ / f(2), ys - h_ / f(2)
    old_w, old_h = xs[:, 1] - xs[:, 0], ys[:, 2] - ys[:, 0]
    rx = xs * c + ys * s
    ry = -xs * s + ys * c
    rx, ry = rx + f(out_w) / f(2), ry + f(out_h) / f(2)
    out = np.stack([rx.min(1), ry.min(1), rx.max(1), ry.max(1)], axis=1).astype(f)
    if mode != "expand":
        new_w, new_h = out[:, 2] - out[:, 0], out[:, 3] - out[:, 1]
        flipped = (old_w < old_h) ^ (new_w < new_h)
        dw = (new_w - np.where(flipped, old_h, old_w)) * f(0.5)
        dh = (new_h - np.where(flipped, old_w, old_h)) * f(0.5)
        if mode == "halfway":
            dw, dh = dw * f(0.5), dh * f(0.5)
        out[:, 0] += dw
        out[:, 1] += dh
        out[:, 2] -= dw
        out[:, 3] -= dh
    old_area = (out[:, 2] - out[:, 0]) * (out[:, 3] - out[:, 1])
    lim = np.array([out_w, out_h, out_w, out_h], f)
    out = np.clip(out, f(0), lim)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = (out[:, 2] - out[:, 0]) * (out[:, 3] - out[:, 1]) / old_area
    keep = frac >= f(remove_threshold)       # a box of no area (0 / 0) is removed, as in DALI
    out = out[keep]
    if not ltrb:
        out[:, 2] -= out[:, 0]
        out[:, 3] -= out[:, 1]
    if normalized:
        out = out * np.array([f(1) / f(out_w), f(1) / f(out_h)] * 2, f)
    out = np.ascontiguousarray(out, f)
    if labels is None:
        return out
    labels = np.asarray(labels)
    if labels.shape[:1] != boxes.shape[:1]:
        raise ValueError(f"bbox_rotate: {boxes.shape[0]} boxes but labels of shape "
                         f"{labels.shape}")
    return out, labels[keep].copy()


@register("bbox_rotate", "cpu")
@per_sample
def bbox_rotate_kernel(ctx, ins, a, i):
    """``bbox_rotate`` of sample ``i``."""
    return bbox_rotate(ins[0], ins[1] if len(ins) > 1 else None, angle=float(
        np.asarray(a["angle"]).reshape(-1)[0]), input_shape=a["input_shape"],
        shape_layout=a.get("shape_layout") or "HW",
        ltrb=(a.get("bbox_layout") or "xyXY") == "xyXY",
        normalized=a.get("bbox_normalized", True), keep_size=a.get("keep_size", False),
        size=a.get("size"), mode=a.get("mode", "expand"),
        remove_threshold=a.get("remove_threshold", 0.1))
