"""DALI's preprocessed COCO annotations ("meta files"): what ``save_preprocessed_annotations``
writes and ``preprocessed_annotations`` reads, in DALI 2.4's layout (checked by reading files
DALI wrote and by DALI reading files ndd wrote, ``tests/runtime/readers/test_coco.py``).

One file per array, little-endian; every file but ``filenames.dat`` starts with a uint32
count, then the values:

================== ========================================================================
``boxes.dat``      count of floats, then float32 ``[.., 4]`` boxes of all images, as output
                   (after ``ltrb`` / ``ratio``)
``labels.dat``     count, int32 labels
``counts.dat``     number of images, int32 boxes per image
``offsets.dat``    number of images, int32 index of every image's first box
``filenames.dat``  the images' file names, one per line (no count)
``original_ids``   ``original_ids.dat`` (with ``image_ids`` only): count, int32 image ids
``polygon_*``      (with ``polygon_masks`` only) ``polygon_data.dat``: count of rows, int32
                   ``[mask, first vertex, end vertex]`` rows (vertex ranges per image);
                   ``polygon_offset.dat`` / ``polygons_count.dat``: count, int64 per image
``vertices*``      ``vertices.dat``: count of vertices, float32 ``[x, y]``;
                   ``vertices_offset.dat`` / ``vertices_count.dat``: count, int64 per image
================== ========================================================================
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["save_meta", "load_meta"]


def _write(folder, name, arr, dtype, count=None):
    """``count`` (default: the number of values) as uint32, then the values."""
    arr = np.ascontiguousarray(arr, dtype).reshape(-1)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(np.array([arr.size if count is None else count], "<u4").tobytes())
        f.write(arr.astype(np.dtype(dtype).newbyteorder("<")).tobytes())


def _per_image(parts, dtype, width):
    counts = np.array([len(p) for p in parts], np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    flat = np.concatenate([np.asarray(p, dtype).reshape(-1, width) for p in parts]) \
        if parts else np.zeros((0, width), dtype)
    return flat, counts, offsets


def save_meta(folder, names, index, *, polygons=False, image_ids=False,
              coordinate_ranges=False):
    """Write ``index`` (a ``CocoIndex``) to ``folder`` in DALI's layout.

    Parameters
    ----------
    folder : str
        Created when missing.
    names : sequence of str
        The file names of the samples (as in the JSON).
    polygons, image_ids : bool
        Also write the polygon and vertex files, the image ids.
    coordinate_ranges : bool
        The index' polygon ranges count coordinates (DALI's legacy ``masks``): saved as
        vertex ranges.
    """
    os.makedirs(folder, exist_ok=True)
    boxes, counts, offsets = _per_image(index.boxes, np.float32, 4)
    _write(folder, "boxes.dat", boxes, np.float32)
    _write(folder, "labels.dat", np.concatenate(index.classes) if len(index) else [],
           np.int32)
    _write(folder, "counts.dat", counts, np.int32)
    _write(folder, "offsets.dat", offsets, np.int32)
    with open(os.path.join(folder, "filenames.dat"), "wb") as f:
        f.write("".join(f"{n}\n" for n in names).encode())
    if image_ids:
        _write(folder, "original_ids.dat", index.labels, np.int32)
    if polygons:
        rows = [np.column_stack([r[:, 0], r[:, 1:] // (2 if coordinate_ranges else 1)])
                if len(r) else r for r in index.polygons]
        flat, pc, po = _per_image(rows, np.int32, 3)
        _write(folder, "polygon_data.dat", flat, np.int32, count=len(flat))   # rows
        _write(folder, "polygon_offset.dat", po, np.int64)
        _write(folder, "polygons_count.dat", pc, np.int64)
        verts, vc, vo = _per_image(index.vertices, np.float32, 2)
        _write(folder, "vertices.dat", verts, np.float32, count=len(verts))   # vertices
        _write(folder, "vertices_offset.dat", vo, np.int64)
        _write(folder, "vertices_count.dat", vc, np.int64)


def _read(folder, name, dtype, width=1):
    path = os.path.join(folder, name)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ValueError(f"readers.COCO: preprocessed annotations: cannot read {path!r} "
                         f"({e.strerror or e})") from None
    itemsize = np.dtype(dtype).itemsize
    if len(raw) < 4 or (len(raw) - 4) % itemsize:
        raise ValueError(f"readers.COCO: preprocessed annotations: {path!r} is truncated")
    count = int(np.frombuffer(raw[:4], "<u4")[0])
    values = np.frombuffer(raw[4:], np.dtype(dtype).newbyteorder("<")).astype(dtype)
    if values.size != count * width:
        raise ValueError(f"readers.COCO: preprocessed annotations: {path!r} says {count} "
                         f"entries but holds {values.size} values")
    return values.reshape(-1, width) if width > 1 else values


def load_meta(folder, *, polygons=False, image_ids=False, coordinate_ranges=False):
    """Read DALI's preprocessed annotations.

    Returns
    -------
    dict
        ``names`` (list of str), ``boxes``, ``classes``, ``polygons``, ``vertices`` (per
        image, as ``CocoIndex`` holds them) and ``ids`` (int32 (N,), or zeros without
        ``image_ids``).

    Raises
    ------
    ValueError
        A missing, truncated or inconsistent file, naming it (e.g. ``original_ids.dat``
        for ``image_ids`` when the annotations were saved without them).
    """
    folder = os.fspath(folder)
    boxes = _read(folder, "boxes.dat", np.float32).reshape(-1, 4)
    labels = _read(folder, "labels.dat", np.int32)
    counts = _read(folder, "counts.dat", np.int32)
    offsets = _read(folder, "offsets.dat", np.int32)
    try:
        with open(os.path.join(folder, "filenames.dat"), "rb") as f:
            names = f.read().decode().splitlines()
    except OSError as e:
        raise ValueError(f"readers.COCO: preprocessed annotations: cannot read "
                         f"{os.path.join(folder, 'filenames.dat')!r} ({e.strerror or e})") \
            from None
    n = len(names)
    if not len(counts) == len(offsets) == n or len(labels) != len(boxes) or \
            (n and int((offsets + counts).max()) > len(boxes)):
        raise ValueError(f"readers.COCO: preprocessed annotations in {folder!r} disagree: "
                         f"{n} file names, {len(counts)} counts, {len(offsets)} offsets, "
                         f"{len(boxes)} boxes, {len(labels)} labels")
    out = {"names": names,
           "boxes": [boxes[o:o + c].copy() for o, c in zip(offsets, counts)],
           "classes": [labels[o:o + c].copy() for o, c in zip(offsets, counts)],
           "ids": _read(folder, "original_ids.dat", np.int32) if image_ids
           else np.zeros(n, np.int32)}
    if image_ids and len(out["ids"]) != n:
        raise ValueError(f"readers.COCO: preprocessed annotations in {folder!r}: "
                         f"{len(out['ids'])} image ids for {n} images")
    if polygons:
        rows = _read(folder, "polygon_data.dat", np.int32, 3)
        po, pc = _read(folder, "polygon_offset.dat", np.int64), \
            _read(folder, "polygons_count.dat", np.int64)
        verts = _read(folder, "vertices.dat", np.float32, 2)
        vo, vc = _read(folder, "vertices_offset.dat", np.int64), \
            _read(folder, "vertices_count.dat", np.int64)
        if not len(po) == len(pc) == len(vo) == len(vc) == n:
            raise ValueError(f"readers.COCO: preprocessed annotations in {folder!r}: the "
                             f"polygon files do not describe {n} images")
        polys = [rows[o:o + c].copy() for o, c in zip(po, pc)]
        if coordinate_ranges:
            for p in polys:
                p[:, 1:] *= 2
        out["polygons"] = polys
        out["vertices"] = [verts[o:o + c].copy() for o, c in zip(vo, vc)]
    else:
        out["polygons"] = [np.zeros((0, 3), np.int32) for _ in range(n)]
        out["vertices"] = [np.zeros((0, 2), np.float32) for _ in range(n)]
    return out
