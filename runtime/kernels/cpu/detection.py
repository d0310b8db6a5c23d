"""Detection box ops on the CPU: ``coord_flip``, ``bbox_paste``, ``box_encoder``.

Semantics follow DALI 2.4's CPU operators, checked bit-exactly against them
(``tests/runtime/kernels/cpu/test_detection.py``):

- ``coord_flip``: every flipped coordinate ``c`` of a point becomes ``2 * center - c``
  (float32); the layout ("x", "xy", "xyz" by default) says which column is which axis.
- ``bbox_paste``: ``x' = x * s + paste_x * ((ratio - 1) * s)`` with ``s = 1 / ratio`` for
  corner coordinates, ``w' = w * s`` for the sizes of ``xywh`` boxes (float32, in this order).
- ``box_encoder``: SSD matching. Every anchor takes the box of highest IoU with it (the last
  such box); then every box takes its own best anchor (the last of highest IoU), later boxes
  winning such an anchor from earlier ones; an anchor is matched when its IoU passes
  ``criteria`` or it is some box's best anchor, else it is background (label 0, the anchor
  itself as the box). Outputs are in center form ``[cx, cy, w, h]`` (``cx = (l + r) * 0.5``);
  with ``offset``, SSD's normalized offsets of the centered boxes and anchors times
  ``scale``: ``((cx - acx) / aw - means[0]) / stds[0]``, ``(log(w / aw) - means[2]) /
  stds[2]`` (C's ``logf``), ... and zeros for background anchors.
Registers ``coord_flip``, ``bbox_paste`` and ``box_encoder``.
"""
from __future__ import annotations

import math

import numpy as np

from runtime.kernels.registry import per_sample, register

from .jit import compiled

__all__ = ["coord_flip", "bbox_paste", "box_encoder", "iou_matrix", "Anchors", "prepared_anchors",
           "warm_up"]

_F32 = np.float32


def coord_flip(coords, *, layout="", flip=(1, 0, 0), center=(0.5, 0.5, 0.5)):
    """Reflect points about a center (see the module docstring).

    Parameters
    ----------
    coords : numpy.ndarray
        float32, shape (N, D) with D in 1..3 (or (N*D,) flat when ``layout`` says D).
    layout : str
        Axis of each column, made of "x", "y", "z"; "" means "x", "xy" or "xyz" by D.
    flip : (int, int, int)
        Non-zero flips the x, y, z coordinate.
    center : (float, float, float)
        Flip centers of x, y, z.

    Returns
    -------
    numpy.ndarray
        float32, same shape.

    Raises
    ------
    ValueError
        A dtype other than float32, a shape that is not (N, D) with D in 1..3, or a layout
        that does not match D or has other letters.
    """
    coords = np.asarray(coords)
    if coords.dtype != np.float32:
        raise ValueError(f"coord_flip: expected float32 coordinates, got {coords.dtype}")
    if coords.ndim != 2 or not 1 <= coords.shape[1] <= 3:
        if not (coords.ndim == 1 and layout and coords.size % len(layout) == 0):
            raise ValueError(f"coord_flip: expected coordinates of shape (N, D) with D in "
                             f"1..3, got shape {coords.shape}")
    pts = coords.reshape(-1, len(layout)) if coords.ndim == 1 else coords
    dims = pts.shape[1]
    layout = layout or "xyz"[:dims]
    if len(layout) != dims or set(layout) - set("xyz") or len(set(layout)) != len(layout):
        raise ValueError(f"coord_flip: layout {layout!r} does not describe {dims} "
                         f"coordinate(s); expected distinct letters of 'xyz', one per column")
    out = pts.copy()
    for col, axis in enumerate(layout):
        k = "xyz".index(axis)
        if flip[k]:
            out[:, col] = _F32(2) * _F32(center[k]) - pts[:, col]
    return out.reshape(coords.shape)


def bbox_paste(boxes, *, ratio, paste_x=0.5, paste_y=0.5, ltrb=False):
    """Boxes of an image pasted on a ``ratio`` times larger canvas (see the module docstring).

    Parameters
    ----------
    boxes : numpy.ndarray
        float32, relative coordinates, any shape whose size is a multiple of 4.
    ratio : float
        Canvas size over image size, at least 1.
    paste_x, paste_y : float
        Where the image goes: 0 left/top, 1 right/bottom.
    ltrb : bool
        ``[l, t, r, b]`` boxes instead of ``[x, y, w, h]``.

    Returns
    -------
    numpy.ndarray
        float32, same shape.

    Raises
    ------
    ValueError
        ``ratio`` below 1, paste positions outside [0, 1], or a size not a multiple of 4.
    """
    boxes = np.asarray(boxes)
    if boxes.dtype != np.float32:
        raise ValueError(f"bbox_paste: expected float32 boxes, got {boxes.dtype}")
    if boxes.size % 4:
        raise ValueError(f"bbox_paste: bounding boxes are groups of 4 coordinates; got "
                         f"{boxes.size} values (shape {boxes.shape})")
    if not ratio >= 1:
        raise ValueError(f"bbox_paste: `ratio` must be at least 1; got {ratio}")
    for name, v in (("paste_x", paste_x), ("paste_y", paste_y)):
        if not 0 <= v <= 1:
            raise ValueError(f"bbox_paste: `{name}` must be within [0, 1]; got {v}")
    r = _F32(ratio)
    scale = _F32(1) / r
    margin = r - _F32(1)
    shift = margin * scale
    px, py = _F32(paste_x) * shift, _F32(paste_y) * shift
    b = boxes.reshape(-1, 4)
    out = np.empty_like(b)
    out[:, 0] = b[:, 0] * scale + px
    out[:, 1] = b[:, 1] * scale + py
    if ltrb:
        out[:, 2] = b[:, 2] * scale + px
        out[:, 3] = b[:, 3] * scale + py
    else:
        out[:, 2] = b[:, 2] * scale
        out[:, 3] = b[:, 3] * scale
    return out.reshape(boxes.shape)


class Anchors:
    """Anchors prepared once for many samples: ``ltrb`` float32 (M, 4), its columns
    contiguous (``cols``, (4, M)), areas and center form."""

    __slots__ = ("ltrb", "cols", "area", "center")

    def __init__(self, ltrb):
        self.ltrb = np.ascontiguousarray(ltrb, np.float32).reshape(-1, 4)
        self.cols = np.ascontiguousarray(self.ltrb.T)
        l, t, r, b = self.cols
        self.area = (r - l) * (b - t)
        self.center = _center(self.ltrb)

    def __len__(self):
        return len(self.ltrb)


def iou_matrix(boxes, anchors):
    """IoU of every box with every anchor, float32 (N, M); both ``[l, t, r, b]``
    (``anchors``: an array or :class:`Anchors`)."""
    a = anchors if isinstance(anchors, Anchors) else Anchors(anchors)
    l = np.maximum(boxes[:, None, 0], a.cols[0][None, :])
    t = np.maximum(boxes[:, None, 1], a.cols[1][None, :])
    r = np.minimum(boxes[:, None, 2], a.cols[2][None, :])
    b = np.minimum(boxes[:, None, 3], a.cols[3][None, :])
    inter = np.maximum(r - l, _F32(0)) * np.maximum(b - t, _F32(0))
    area_b = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    union = area_b[:, None] + a.area[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / union, _F32(0))
    return iou.astype(np.float32, copy=False)


def _build_match(njit):
    @njit
    def match(boxes, cols, area, best_box, best_iou, best_anchor):
        """SSD matching without the (N, M) IoU matrix: per anchor its best box (the last of
        equal IoUs), per box its best anchor (likewise); the IoU in float32 exactly as
        :func:`iou_matrix` computes it."""
        n = boxes.shape[0]
        m = cols.shape[1]
        zero = np.float32(0)
        box_best = np.full(n, np.float32(-1))
        for j in range(m):
            al, at, ar, ab = cols[0, j], cols[1, j], cols[2, j], cols[3, j]
            best = np.float32(-1)
            arg = 0
            for i in range(n):
                bl, bt, br, bb = boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3]
                iw = min(br, ar) - max(bl, al)
                ih = min(bb, ab) - max(bt, at)
                inter = max(iw, zero) * max(ih, zero)
                union = ((br - bl) * (bb - bt) + area[j]) - inter
                iou = inter / union if union > zero else zero
                if iou >= best:
                    best = iou
                    arg = i
                if iou >= box_best[i]:
                    box_best[i] = iou
                    best_anchor[i] = j
            best_box[j] = arg
            best_iou[j] = best

    return match


_match_kernel = compiled(_build_match)


def _build_logf(njit):
    @njit
    def logf_into(x, out):
        for k in range(x.size):
            out[k] = math.log(x[k])     # numba lowers a float32 math.log to C's logf

    return logf_into


_logf_kernel = compiled(_build_logf)


def _logf(x):
    """C's ``logf`` of every element (what DALI's ``std::log(float)`` computes; numpy's
    float32 SIMD loops round differently, see ``libm.py``)."""
    x = np.ascontiguousarray(x, np.float32).reshape(-1)
    out = np.empty_like(x)
    _logf_kernel()(x, out)
    return out


def warm_up() -> None:
    """Compile (or load from numba's cache) ``box_encoder``'s matching loop and the ``logf``
    loop of its offsets."""
    _logf(np.ones(1, np.float32))
    one = Anchors(np.array([[0, 0, 1, 1]], np.float32))
    _match_kernel()(np.array([[0, 0, 1, 1]], np.float32), one.cols, one.area,
                    np.empty(1, np.int64), np.empty(1, np.float32), np.empty(1, np.int64))


def _center(b):
    """``[l, t, r, b]`` -> ``[cx, cy, w, h]`` in float32."""
    half = _F32(0.5)
    return np.stack([(b[:, 0] + b[:, 2]) * half, (b[:, 1] + b[:, 3]) * half,
                     b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)


def box_encoder(boxes, labels, anchors, *, criteria=0.5, offset=False, scale=1.0,
                means=(0.0, 0.0, 0.0, 0.0), stds=(1.0, 1.0, 1.0, 1.0)):
    """SSD box encoding (see the module docstring).

    Parameters
    ----------
    boxes : numpy.ndarray
        float32 (N, 4) ``[l, t, r, b]``.
    labels : numpy.ndarray
        int32 (N,) or (N, 1).
    anchors : numpy.ndarray or Anchors
        float32 (M, 4) ``[l, t, r, b]`` (or prepared once with :class:`Anchors`).
    criteria : float
        IoU threshold in [0, 1].
    offset : bool
        Output normalized offsets instead of boxes.
    scale : float
    means, stds : 4 floats

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        float32 (M, 4) encoded boxes and (M,) labels (DALI's shape, also for (N, 1) labels).

    Raises
    ------
    ValueError
        Shapes that are not (N, 4) / (N,) with matching N, or ``criteria`` outside [0, 1].
    """
    boxes = np.asarray(boxes, np.float32)
    labels = np.asarray(labels)
    if boxes.size == 0:
        boxes = boxes.reshape(0, 4)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"box_encoder: expected boxes of shape (N, 4), got {boxes.shape}")
    flat_labels = labels.reshape(-1)
    if flat_labels.size != boxes.shape[0]:
        raise ValueError(f"box_encoder: {boxes.shape[0]} boxes but {flat_labels.size} labels")
    if not 0 <= criteria <= 1:
        raise ValueError(f"box_encoder: `criteria` must be within [0, 1]; got {criteria}")
    prepared = anchors if isinstance(anchors, Anchors) else Anchors(anchors)
    anchors = prepared.ltrb
    m = anchors.shape[0]
    out_boxes = anchors.copy()
    matched = np.zeros(m, bool)
    out_labels = np.zeros(m, flat_labels.dtype if flat_labels.size else np.int32)
    if boxes.shape[0]:
        best_box, best_iou = np.empty(m, np.int64), np.empty(m, np.float32)
        best_anchor = np.empty(boxes.shape[0], np.int64)
        _match_kernel()(np.ascontiguousarray(boxes), prepared.cols, prepared.area, best_box,
                        best_iou, best_anchor)
        # per box: its best anchor, the last of equal IoUs, later boxes winning (DALI)
        for i, j in enumerate(best_anchor.tolist()):
            best_box[j] = i
            best_iou[j] = _F32(2)
        matched = best_iou > _F32(criteria)
        out_boxes[matched] = boxes[best_box[matched]]
        out_labels[matched] = flat_labels[best_box[matched]]
    enc = _center(out_boxes)
    if offset:
        s = _F32(scale)
        anc = prepared.center * s
        box = enc * s
        mean, std = np.asarray(means, np.float32), np.asarray(stds, np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):   # zero-area anchors: as DALI
            enc = _offsets(box, anc, mean, std)
        enc[~matched] = 0       # background anchors: zero offsets (DALI)
    return enc.astype(np.float32, copy=False), out_labels


def _offsets(box, anc, mean, std):
    """SSD's normalized offsets of centered boxes against centered anchors."""
    return np.stack([((box[:, 0] - anc[:, 0]) / anc[:, 2] - mean[0]) / std[0],
                     ((box[:, 1] - anc[:, 1]) / anc[:, 3] - mean[1]) / std[1],
                     (_logf(box[:, 2] / anc[:, 2]) - mean[2]) / std[2],
                     (_logf(box[:, 3] / anc[:, 3]) - mean[3]) / std[3]], axis=1)


@register("coord_flip", "cpu")
@per_sample
def coord_flip_kernel(ctx, ins, a, i):
    """``coord_flip`` of sample ``i``."""
    return coord_flip(ins[0], layout=a.get("layout") or "",
                      flip=(a.get("flip_x", 1), a.get("flip_y", 0), a.get("flip_z", 0)),
                      center=(a.get("center_x", 0.5), a.get("center_y", 0.5),
                              a.get("center_z", 0.5)))


@register("bbox_paste", "cpu")
@per_sample
def bbox_paste_kernel(ctx, ins, a, i):
    """``bbox_paste`` of sample ``i``."""
    return bbox_paste(ins[0], ratio=a["ratio"], paste_x=a.get("paste_x", 0.5),
                      paste_y=a.get("paste_y", 0.5), ltrb=a.get("ltrb", False))


_prepared: dict[int, tuple] = {}    # id(anchors tuple) -> (the tuple, its Anchors)
_PREPARED_SIZE = 8


def prepared_anchors(values) -> Anchors:
    """:class:`Anchors` of an ``anchors`` argument (a tuple of floats), kept by the tuple's
    identity: the front end converts an equal list to the same tuple object, so SSD's 8732
    anchors are prepared once, not per batch. The tuple is held with them, so its id is not
    reused while the entry lives."""
    hit = _prepared.get(id(values))
    if hit is not None and hit[0] is values:
        return hit[1]
    anchors = Anchors(np.asarray(values, np.float32))
    if len(_prepared) >= _PREPARED_SIZE:
        try:
            del _prepared[next(iter(_prepared))]
        except (StopIteration, KeyError, RuntimeError):
            pass
    _prepared[id(values)] = (values, anchors)
    return anchors


@register("box_encoder", "cpu")
def box_encoder_kernel(ctx, inputs, args):
    """``box_encoder`` of a batch: the anchors prepared once, the samples on the pool."""
    anchors = prepared_anchors(args["anchors"])
    kw = dict(criteria=args.get("criteria", 0.5), offset=args.get("offset", False),
              scale=args.get("scale", 1.0), means=args.get("means") or (0.0, 0.0, 0.0, 0.0),
              stds=args.get("stds") or (1.0, 1.0, 1.0, 1.0))
    boxes, labels = inputs

    def one(i):
        return box_encoder(boxes[i] if len(boxes) > 1 else boxes[0],
                           labels[i] if len(labels) > 1 else labels[0], anchors, **kw)

    results = ctx.pool.map(one, ctx.batch_size)
    return [[r[0] for r in results], [r[1] for r in results]]
