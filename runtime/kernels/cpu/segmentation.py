"""Segmentation ops on the CPU: ``segmentation.select_masks``, ``random_mask_pixel`` and
``random_object_bbox``.

Semantics (DALI 2.4's operators, observed on its CPU backend):

- ``select_masks``: the output lists the selected masks in the order of ``mask_ids``; each
  mask's polygons keep their input order, their vertices are copied after the previous ones
  and the polygon ranges renumbered; with ``reindex_masks`` a mask's id becomes its position
  in ``mask_ids``. A selected id absent from the polygons, or repeated, is an error (DALI's
  words). DALI 2.4 keeps only the last polygon of a mask made of several; ndd keeps all of
  them (``docs/semantics.md``).
- ``random_mask_pixel``: foreground pixels equal ``value`` or exceed ``threshold`` (default
  0); with ``foreground`` a pixel uniform among them (any pixel when there is none), else any
  pixel; int64 coordinates, one per axis.
- ``random_object_bbox``: objects are blobs of face-connected pixels of one label
  (``scipy.ndimage.label``'s default structure); with probability ``foreground_prob`` a class
  is drawn by its weight among those left, its blobs are filtered by ``threshold`` (every
  extent at least that), ordered by decreasing box volume (then scan order) and cut to
  ``k_largest``, and one is drawn uniformly; a class without such a blob is dropped and
  another drawn. Otherwise, or when nothing qualifies, the whole input (class: the
  background). ``ignore_class`` draws among all classes' blobs at once.

Registers ``segmentation.select_masks``, ``segmentation.random_mask_pixel`` and
``segmentation.random_object_bbox``.
"""
from __future__ import annotations

import numpy as np
from scipy import ndimage

from runtime.kernels.params.seeds import sample_rng
from runtime.kernels.registry import per_sample, register

__all__ = ["select_masks", "random_mask_pixel", "object_boxes", "random_object_bbox"]


def select_masks(mask_ids, polygons, vertices, *, reindex_masks=False):
    """The polygons and vertices of the selected masks (see the module docstring).

    Parameters
    ----------
    mask_ids : numpy.ndarray
        int32 (K,): the masks to keep, in output order.
    polygons : numpy.ndarray
        int32 (P, 3): ``[mask id, first vertex, one past the last vertex]``.
    vertices : numpy.ndarray
        (V, D), any dtype.
    reindex_masks : bool

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        int32 (P', 3) polygons and (V', D) vertices (the input's dtype).

    Raises
    ------
    RuntimeError
        A repeated or absent mask id, or a polygon range outside the vertices.
    """
    ids = np.asarray(mask_ids).reshape(-1).astype(np.int64)
    polys = np.asarray(polygons)
    verts = np.asarray(vertices)
    if polys.size == 0:
        polys = polys.reshape(0, 3)
    if polys.ndim != 2 or polys.shape[1] != 3:
        raise RuntimeError(f"select_masks: polygons must be of shape (P, 3), got {polys.shape}")
    if verts.ndim != 2:
        raise RuntimeError(f"select_masks: vertices must be of shape (V, D), got {verts.shape}")
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise RuntimeError(f"mask_ids should not have duplicated values. Got "
                           f"{int(uniq[counts > 1][0])} repeated.")
    bad = (polys[:, 1] < 0) | (polys[:, 2] < polys[:, 1]) | (polys[:, 2] > len(verts))
    if bad.any():
        p = polys[np.flatnonzero(bad)[0]].tolist()
        raise RuntimeError(f"select_masks: polygon {p} refers to vertices outside the "
                           f"{len(verts)} given")
    out_polys, pieces, start = [], [], 0
    for k, mid in enumerate(ids.tolist()):
        rows = np.flatnonzero(polys[:, 0] == mid)
        if rows.size == 0:
            raise RuntimeError(f"Selected mask_id {mid} is not present in the input.")
        for r in rows.tolist():
            b, e = int(polys[r, 1]), int(polys[r, 2])
            out_polys.append((k if reindex_masks else mid, start, start + e - b))
            pieces.append(verts[b:e])
            start += e - b
    out_v = np.concatenate(pieces) if pieces else verts[:0]
    return np.asarray(out_polys, np.int32).reshape(-1, 3), np.ascontiguousarray(out_v)


@register("segmentation.select_masks", "cpu")
@per_sample
def select_masks_kernel(ctx, ins, a, i):
    """``select_masks`` of sample ``i``."""
    return select_masks(ins[0], ins[1], ins[2], reindex_masks=a.get("reindex_masks", False))


def random_mask_pixel(mask, rng, *, foreground=0, threshold=None, value=None):
    """A random pixel of ``mask`` (see the module docstring): int64 coordinates (ndim,)."""
    mask = np.asarray(mask)
    if mask.size == 0:
        raise ValueError(f"random_mask_pixel: the mask is empty (shape {mask.shape})")
    if foreground:
        fg = mask == value if value is not None else mask > (0.0 if threshold is None
                                                             else threshold)
        flat = np.flatnonzero(fg)
        if flat.size:
            k = int(flat[int(rng.integers(flat.size))])
            return np.asarray(np.unravel_index(k, mask.shape), np.int64)
    k = int(rng.integers(mask.size))
    return np.asarray(np.unravel_index(k, mask.shape), np.int64)


def _scalar(v, default=None):
    if v is None:
        return default
    return np.asarray(v).reshape(-1)[0].item()


@register("segmentation.random_mask_pixel", "cpu")
@per_sample
def random_mask_pixel_kernel(ctx, ins, a, i):
    """``random_mask_pixel`` of sample ``i``."""
    return random_mask_pixel(ins[0], sample_rng(a["_seeds"], i),
                             foreground=_scalar(a.get("foreground"), 0),
                             threshold=_scalar(a.get("threshold")),
                             value=_scalar(a.get("value")))


def object_boxes(mask, label):
    """Boxes of the blobs of ``label`` in ``mask``: int64 (B, 2, ndim) ``[start, end)``, in
    scan order of the blobs' first pixels."""
    blobs, n = ndimage.label(mask == label)
    if n == 0:
        return np.zeros((0, 2, mask.ndim), np.int64)
    slices = ndimage.find_objects(blobs)
    return np.asarray([[[s.start for s in sl], [s.stop for s in sl]] for sl in slices],
                      np.int64)


def _filtered(boxes, threshold, k_largest):
    return boxes[_kept_indices(boxes, threshold, k_largest)]


def random_object_bbox(mask, rng, *, background=None, classes=None, class_weights=None,
                       foreground_prob=1.0, ignore_class=False, k_largest=None,
                       threshold=None):
    """``(start, end, label)`` of a random object of ``mask`` (see the module docstring):
    int64 arrays (ndim,) and the object's label (the background for the whole input)."""
    mask = np.asarray(mask)
    if classes is not None:
        classes = [int(c) for c in np.asarray(classes).reshape(-1).tolist()]
    if class_weights is not None:
        class_weights = [float(w) for w in np.asarray(class_weights).reshape(-1).tolist()]
        if classes is None:
            classes = list(range(1, len(class_weights) + 1))
        if len(class_weights) != len(classes):
            raise ValueError(f"random_object_bbox: {len(classes)} classes but "
                             f"{len(class_weights)} class_weights")
        if any(w < 0 for w in class_weights):
            raise ValueError(f"random_object_bbox: class_weights must not be negative, got "
                             f"{class_weights}")
    if background is None:
        background = 0
        while classes is not None and background in classes:
            background -= 1
    whole = (np.zeros(mask.ndim, np.int64), np.asarray(mask.shape, np.int64), background)
    if foreground_prob < 1 and not rng.uniform() < foreground_prob:
        return whole
    if classes is None:
        classes = [int(c) for c in np.unique(mask).tolist() if c != background]
    weights = class_weights if class_weights is not None else [1.0] * len(classes)
    if ignore_class:
        found = [(c, b) for c in classes for b in object_boxes(mask, c)]
        if not found:
            return whole
        labels = np.asarray([c for c, _ in found])
        boxes = np.stack([b for _, b in found])
        idx = _kept_indices(boxes, threshold, k_largest)
        boxes, labels = boxes[idx], labels[idx]
        if not len(boxes):
            return whole
        k = int(rng.integers(len(boxes)))
        return boxes[k, 0], boxes[k, 1], int(labels[k])
    left = [(c, w) for c, w in zip(classes, weights) if w > 0]
    while left:
        w = np.asarray([w for _, w in left], np.float64)
        j = int(rng.choice(len(left), p=w / w.sum()))
        cls = left[j][0]
        boxes = _filtered(object_boxes(mask, cls), threshold, k_largest)
        if len(boxes):
            k = int(rng.integers(len(boxes)))
            return boxes[k, 0], boxes[k, 1], cls
        del left[j]
    return whole


def _kept_indices(boxes, threshold, k_largest):
    """Indices of ``boxes`` (B, 2, ndim) passing ``threshold``, the ``k_largest`` by volume."""
    idx = np.arange(len(boxes))
    if threshold is not None:
        t = np.broadcast_to(np.asarray(threshold, np.int64).reshape(-1), boxes.shape[2:])
        idx = idx[((boxes[:, 1] - boxes[:, 0]) >= t).all(axis=1)]
    if k_largest is not None and len(idx) > k_largest:
        volume = np.prod(boxes[idx, 1] - boxes[idx, 0], axis=1)
        idx = idx[np.argsort(-volume, kind="stable")[:k_largest]]
    return idx


@register("segmentation.random_object_bbox", "cpu")
@per_sample
def random_object_bbox_kernel(ctx, ins, a, i):
    """``random_object_bbox`` of sample ``i``: the outputs ``format`` and ``output_class``
    ask for."""
    start, end, label = random_object_bbox(
        ins[0], sample_rng(a["_seeds"], i), background=_scalar(a.get("background")),
        classes=a.get("classes"), class_weights=a.get("class_weights"),
        foreground_prob=_scalar(a.get("foreground_prob"), 1.0),
        ignore_class=a.get("ignore_class", False), k_largest=a.get("k_largest"),
        threshold=a.get("threshold"))
    start, end = start.astype(np.int32), end.astype(np.int32)
    fmt = a.get("format", "anchor_shape")
    if fmt == "box":
        outs = [np.concatenate([start, end])]
    elif fmt == "start_end":
        outs = [start, end]
    else:
        outs = [start, (end - start).astype(np.int32)]
    if a.get("output_class", False):
        outs.append(np.asarray(label, np.int32))
    return tuple(outs) if len(outs) > 1 else outs[0]
