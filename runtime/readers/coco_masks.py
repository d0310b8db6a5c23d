"""COCO segmentations as pixel masks: polygons rasterised and RLEs decoded as the COCO API
(``maskApi``) does, which is what DALI 2.4's ``readers.COCO(pixelwise_masks=True)`` outputs.

- A polygon is rasterised on a 5x finer grid: its edges are walked point by point (rounded
  half up), the points where the walk crosses a pixel column's center are kept (moved back
  to the pixel grid), and the run lengths between them, in column-major order, are the mask.
- An RLE is ``{"counts": [...] or "compressed string", "size": [h, w]}``, runs of zeros and
  ones alternating from a run of zeros, column-major.
- The mask of an image (int32, (H, W, 1)) holds at every pixel the largest label of the
  objects covering it (0: none), i.e. the objects painted in ascending label order.
"""

from __future__ import annotations

import numpy as np

__all__ = ["polygon_runs", "decode_counts", "runs_to_mask", "segmentation_mask",
           "label_mask"]

_SCALE = 5


def polygon_runs(xy, h, w):
    """Column-major run lengths of polygon ``xy`` (flat ``[x0, y0, x1, y1, ...]``) on an
    ``h`` x ``w`` grid, as the COCO API rasterises it (in float64 and C's truncating int
    conversions, edge by edge in numpy), from the float32 values of the coordinates (as
    DALI reads them)."""
    # the coordinates as float32 first (DALI parses them so: 4.7 lands on 23, not 24)
    pts = np.asarray(xy, np.float32).astype(np.float64).reshape(-1, 2)
    fine = (_SCALE * pts + 0.5).astype(np.int64)        # C's (int): toward zero
    xs = np.append(fine[:, 0], fine[0, 0])
    ys = np.append(fine[:, 1], fine[0, 1])
    us, vs = [], []
    for j in range(len(pts)):       # every point of every edge on the fine grid
        x0, x1, y0, y1 = int(xs[j]), int(xs[j + 1]), int(ys[j]), int(ys[j + 1])
        dx, dy = abs(x1 - x0), abs(y0 - y1)
        flip = (dx >= dy and x0 > x1) or (dx < dy and y0 > y1)
        if flip:
            x0, x1, y0, y1 = x1, x0, y1, y0
        if dx >= dy:
            t = np.arange(dx + 1, dtype=np.int64)
            t = t[::-1] if flip else t
            slope = (y1 - y0) / dx if dx else 0.0
            us.append(t + x0)
            vs.append((y0 + slope * t + 0.5).astype(np.int64))
        else:
            t = np.arange(dy + 1, dtype=np.int64)
            t = t[::-1] if flip else t
            slope = (x1 - x0) / dy
            vs.append(t + y0)
            us.append((x0 + slope * t + 0.5).astype(np.int64))
    u, v = np.concatenate(us), np.concatenate(vs)
    # the crossings of pixel-column centers, moved back to the pixel grid
    prev_u, prev_v, u, v = u[:-1], v[:-1], u[1:], v[1:]
    moved = u != prev_u
    xd = (np.where(u < prev_u, u, u - 1).astype(np.float64) + 0.5) / _SCALE - 0.5
    keep = moved & (np.floor(xd) == xd) & (xd >= 0) & (xd <= w - 1)
    yd = (np.where(v < prev_v, v, prev_v).astype(np.float64) + 0.5) / _SCALE - 0.5
    yd = np.ceil(np.clip(yd, 0.0, float(h)))
    starts = np.sort(np.append(xd[keep].astype(np.int64) * h + yd[keep].astype(np.int64),
                               h * w))
    diffs = np.diff(starts, prepend=0).tolist()
    runs = [diffs[0]]
    j = 1
    while j < len(diffs):       # zero-length runs merge their neighbours
        if diffs[j] > 0:
            runs.append(diffs[j])
            j += 1
        else:
            j += 1
            if j < len(diffs):
                runs[-1] += diffs[j]
                j += 1
    return runs


def decode_counts(counts):
    """Run lengths of an RLE's ``counts``: a list of ints, or the COCO API's compressed
    string (6-bit groups, offset 48, differences to the run two places back)."""
    if not isinstance(counts, str):
        return [int(c) for c in counts]
    runs, p, s = [], 0, counts.encode()
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = s[p] - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(runs) > 2:
            x += runs[-2]
        runs.append(x)
    return runs


def runs_to_mask(runs, h, w):
    """bool (h, w) mask of column-major run lengths (zeros first)."""
    flat = np.zeros(h * w, bool)
    pos, value = 0, False
    for r in runs:
        if value:
            flat[pos:pos + r] = True
        pos += r
        value = not value
    return flat.reshape(w, h).T


def segmentation_mask(seg, h, w):
    """bool (h, w) mask of a COCO ``segmentation``: the union of its polygons, or its RLE.

    Raises
    ------
    ValueError
        An RLE whose ``size`` is not ``[h, w]`` or whose runs do not add up to ``h * w``.
    """
    if isinstance(seg, dict):
        size = list(seg.get("size", []))
        if size != [h, w]:
            raise ValueError(f"RLE size {size} differs from the image's [{h}, {w}]")
        runs = decode_counts(seg.get("counts", []))
        if sum(runs) != h * w:
            raise ValueError(f"RLE runs add up to {sum(runs)} pixels, the image has {h * w}")
        return runs_to_mask(runs, h, w)
    mask = np.zeros((h, w), bool)
    for poly in seg or []:
        mask |= runs_to_mask(polygon_runs(poly, h, w), h, w)
    return mask


def label_mask(objects, h, w):
    """int32 (h, w, 1): every pixel's largest label among ``objects`` ((label, segmentation)
    pairs) covering it, 0 elsewhere."""
    out = np.zeros((h, w), np.int32)
    for label, seg in objects:
        m = segmentation_mask(seg, h, w)
        np.maximum(out, np.where(m, np.int32(label), np.int32(0)), out=out)
    return out[:, :, None]
