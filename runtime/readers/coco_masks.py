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

import math

import numpy as np

__all__ = ["polygon_runs", "decode_counts", "runs_to_mask", "segmentation_mask",
           "label_mask"]

_SCALE = 5


def polygon_runs(xy, h, w):
    """Column-major run lengths of polygon ``xy`` (flat ``[x0, y0, x1, y1, ...]``) on an
    ``h`` x ``w`` grid, as the COCO API rasterises it."""
    k = len(xy) // 2
    xs = [int(_SCALE * float(xy[2 * j]) + 0.5) for j in range(k)]
    ys = [int(_SCALE * float(xy[2 * j + 1]) + 0.5) for j in range(k)]
    xs.append(xs[0])
    ys.append(ys[0])
    us, vs = [], []
    for j in range(k):          # every point of every edge on the fine grid
        x0, x1, y0, y1 = xs[j], xs[j + 1], ys[j], ys[j + 1]
        dx, dy = abs(x1 - x0), abs(y0 - y1)
        flip = (dx >= dy and x0 > x1) or (dx < dy and y0 > y1)
        if flip:
            x0, x1, y0, y1 = x1, x0, y1, y0
        if dx >= dy:
            slope = (y1 - y0) / dx if dx else 0.0
            for d in range(dx + 1):
                t = dx - d if flip else d
                us.append(t + x0)
                vs.append(int(y0 + slope * t + 0.5))
        else:
            slope = (x1 - x0) / dy
            for d in range(dy + 1):
                t = dy - d if flip else d
                vs.append(t + y0)
                us.append(int(x0 + slope * t + 0.5))
    cols, rows = [], []
    for j in range(1, len(us)):  # the crossings of pixel-column centers, on the pixel grid
        if us[j] == us[j - 1]:
            continue
        xd = float(us[j] if us[j] < us[j - 1] else us[j] - 1)
        xd = (xd + 0.5) / _SCALE - 0.5
        if math.floor(xd) != xd or xd < 0 or xd > w - 1:
            continue
        yd = float(vs[j] if vs[j] < vs[j - 1] else vs[j - 1])
        yd = (yd + 0.5) / _SCALE - 0.5
        yd = 0.0 if yd < 0 else (float(h) if yd > h else yd)
        cols.append(int(xd))
        rows.append(int(math.ceil(yd)))
    starts = sorted([c * h + r for c, r in zip(cols, rows)] + [h * w])
    diffs, prev = [], 0
    for s in starts:
        diffs.append(s - prev)
        prev = s
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
