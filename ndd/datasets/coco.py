"""A small, reproducible COCO-format detection dataset made offline from photos in PyPI packages.

The photographs are scikit-image's (``skimage/data``, shipped in its wheel). The objects are
real ones:

- ``coins.png``: every coin found by classical segmentation (Sobel elevation map, watershed
  from dark/bright markers, hole filling, connected components); class ``small coin`` or
  ``large coin`` by area, the polygon is the region's traced contour (simplified), the box
  its bounding box. One extra *crowd* annotation (``iscrowd=1``, an uncompressed RLE of all
  coins of the bottom row) covers the bottom row.
- ``chelsea.png``, ``astronaut.png``, ``coffee.png``: boxes annotated once by hand
  (:data:`HAND_BOXES`, committed here as data), polygons are the boxes' corners; among them a
  tiny object (a flag star, 20x18 px) and one below DALI's default ``size_threshold`` (0.1 px
  wide: dropped by ``readers.COCO`` unless the threshold is lowered).
- ``brick.png``: an image without annotations (``skip_empty`` drops it).

Image ids and category ids are deliberately not contiguous and not in file order, and the
annotations are listed interleaved across images, so that a reader's ordering (by image id)
and class remapping (to ``1..K``) are exercised.

Layout written by :func:`build_coco_dataset`::

    root/images/<name>.jpg            (JPEG, Pillow quality 90)
    root/annotations/instances.json   (COCO "instances" format)

Command line: ``python -m ndd.datasets.coco [--root DIR]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import pathlib

import numpy as np
from PIL import Image

try:        # scikit-image (and its scipy): the "data" extra, which also ships the photos
    from scipy import ndimage as ndi
    from skimage import filters, measure, segmentation
except ImportError as exc:
    raise ImportError("ndd.datasets.coco needs scikit-image: pip install 'ndd[data]' (or "
                      "scikit-image)") from exc

from ndd.datasets.sample import default_root

__all__ = ["build_coco_dataset", "CATEGORIES", "HAND_BOXES", "IMAGES"]

#: Bump whenever the written files change.
BUILDER_VERSION = 1

#: (image id, file stem, source photo in skimage/data): ids out of file order on purpose.
IMAGES = (
    (42, "coins", "coins.png"),
    (7, "chelsea", "chelsea.png"),
    (1003, "astronaut", "astronaut.png"),
    (15, "coffee", "coffee.png"),
    (99, "brick", "brick.png"),
)

#: COCO categories: (id, name), listed out of id order on purpose.
CATEGORIES = (
    (18, "cat"), (3, "eye"), (5, "nose"), (1, "person"), (22, "face"), (9, "helmet"),
    (30, "flag"), (31, "star"), (44, "rocket"), (60, "cup"), (61, "saucer"), (62, "spoon"),
    (70, "small coin"), (71, "large coin"), (90, "speck"),
)

#: Boxes annotated by hand: (image id, category name, [x, y, width, height]) in pixels.
HAND_BOXES = (
    (7, "cat", [0, 0, 420, 300]),
    (7, "eye", [135, 85, 70, 65]),
    (7, "eye", [295, 108, 50, 58]),
    (7, "nose", [235, 220, 60, 45]),
    (1003, "person", [20, 15, 340, 497]),
    (1003, "face", [150, 30, 150, 130]),
    (1003, "helmet", [275, 340, 237, 172]),
    (1003, "flag", [0, 0, 95, 512]),
    (1003, "star", [25, 5, 20, 18]),
    (1003, "rocket", [350, 0, 120, 285]),
    (15, "cup", [170, 15, 230, 295]),
    (15, "saucer", [75, 65, 405, 325]),
    (15, "spoon", [320, 65, 95, 265]),
    (15, "speck", [300, 200, 0.08, 0.5]),
)

_COPY_ID_STEP = 10000    # image and annotation ids of copy c are shifted by c times this
_LARGE_COIN_AREA = 2000     # pixels: the bigger coins of the photo are above it
_MIN_REGION_AREA = 50       # segmentation specks below this are not objects


def _source(name: str) -> Image.Image:
    spec = importlib.util.find_spec("skimage")
    base = pathlib.Path(list(spec.submodule_search_locations)[0]) if spec else None
    if base is None or not (base / "data" / name).is_file():
        raise RuntimeError(f"build_coco_dataset: scikit-image's photo data/{name} was not "
                           f"found; install scikit-image (its wheel ships the photos)")
    return Image.open(base / "data" / name)


def _segment_coins(gray: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Coin masks (bool (H, W) each, ordered by their top-left corner) and the label map."""
    elevation = filters.sobel(gray)
    markers = np.zeros(gray.shape, np.uint8)
    markers[gray < 30] = 1          # background
    markers[gray > 150] = 2         # coin
    regions = ndi.binary_fill_holes(segmentation.watershed(elevation, markers) == 2)
    labels, n = ndi.label(regions)
    masks = [labels == i for i in range(1, n + 1)]
    return [m for m in masks if m.sum() >= _MIN_REGION_AREA], labels


def _polygon(mask: np.ndarray) -> list[float]:
    """The outer contour of ``mask`` as a flat COCO polygon ``[x0, y0, x1, y1, ...]``."""
    contour = max(measure.find_contours(np.pad(mask, 1).astype(np.float32), 0.5), key=len)
    contour = measure.approximate_polygon(contour, tolerance=1.0) - 1.0   # undo the pad
    xy = np.clip(contour[:, ::-1], 0, None)
    return [round(float(v), 2) for v in xy.reshape(-1)]


def _rle(mask: np.ndarray) -> dict:
    """COCO's uncompressed RLE of ``mask``: run lengths in column-major order, starting with
    a run of zeros."""
    flat = mask.T.reshape(-1).astype(np.int8)
    edges = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate([[0], edges, [flat.size]])
    counts = np.diff(bounds).tolist()
    if flat[0]:
        counts = [0] + counts
    return {"counts": [int(c) for c in counts], "size": [int(mask.shape[0]),
                                                          int(mask.shape[1])]}


def _box_of(mask: np.ndarray) -> list[float]:
    ys, xs = np.nonzero(mask)
    return [float(xs.min()), float(ys.min()), float(xs.max() - xs.min() + 1),
            float(ys.max() - ys.min() + 1)]


def _annotations() -> list[dict]:
    """Every annotation, before the interleaving and numbering."""
    cat_id = {name: cid for cid, name in CATEGORIES}
    anns = []
    coins, _ = _segment_coins(np.asarray(_source("coins.png").convert("L")))
    for mask in coins:
        area = int(mask.sum())
        anns.append(dict(image_id=42, category_id=cat_id["large coin" if area >
                                                         _LARGE_COIN_AREA else "small coin"],
                         bbox=_box_of(mask), area=float(area), iscrowd=0,
                         segmentation=[_polygon(mask)]))
    bottom = [m for m in coins if _box_of(m)[1] > 220]
    crowd = np.logical_or.reduce(bottom)
    anns.append(dict(image_id=42, category_id=cat_id["small coin"], bbox=_box_of(crowd),
                     area=float(crowd.sum()), iscrowd=1, segmentation=_rle(crowd)))
    for image_id, name, (x, y, w, h) in HAND_BOXES:
        corners = [x, y, x + w, y, x + w, y + h, x, y + h]
        anns.append(dict(image_id=image_id, category_id=cat_id[name], bbox=[x, y, w, h],
                         area=float(w * h), iscrowd=0, segmentation=[corners]))
    return anns


def _interleave(anns: list[dict]) -> list[dict]:
    """A fixed, seeded permutation (annotations of different images interleaved), numbered."""
    order = np.random.default_rng(2024).permutation(len(anns))
    out = []
    for k, i in enumerate(order.tolist()):
        out.append({"id": 500 + 3 * k, **anns[i]})
    return out


def build_coco_dataset(root=None, copies: int = 1) -> dict[str, pathlib.Path]:
    """Write the dataset (idempotent: the same bytes for the same package versions).

    Parameters
    ----------
    root : str or path-like, optional
        Output folder; default ``<ndd.datasets.sample.default_root()>/coco`` (``coco-xN``
        with ``copies=N``).
    copies : int, default 1
        How many times every image is listed (a larger set for loaders and benchmarks):
        copy ``c >= 1`` of an image is ``<stem>_<c>.jpg`` (the same JPEG bytes) with image id
        ``id + 10000 * c`` and the same annotations (their ids shifted likewise).

    Returns
    -------
    dict
        ``root``, ``file_root`` (the images folder) and ``annotations_file`` (the JSON).

    Raises
    ------
    RuntimeError
        scikit-image (which ships the photos) is not installed.
    """
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise ValueError(f"build_coco_dataset: copies must be a positive integer, got "
                         f"{copies!r}")
    if root is None:
        root = default_root() / ("coco" if copies == 1 else f"coco-x{copies}")
    root = pathlib.Path(root)
    images_dir, ann_dir = root / "images", root / "annotations"
    images_dir.mkdir(parents=True, exist_ok=True)
    ann_dir.mkdir(parents=True, exist_ok=True)
    images = []
    for image_id, stem, src in IMAGES:
        im = _source(src)
        im = im.convert("L" if im.mode in ("L", "I;16") else "RGB")
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=90, subsampling="4:2:0")
        for c in range(copies):
            name = f"{stem}.jpg" if c == 0 else f"{stem}_{c}.jpg"
            _write_if_changed(images_dir / name, buf.getvalue())
            images.append({"id": image_id + _COPY_ID_STEP * c, "file_name": name,
                           "width": im.size[0], "height": im.size[1]})
    anns = _interleave(_annotations())
    anns += [{**a, "id": a["id"] + _COPY_ID_STEP * c, "image_id": a["image_id"] +
              _COPY_ID_STEP * c} for c in range(1, copies) for a in anns]
    doc = {"info": {"description": "ndd COCO sample: scikit-image photos, real objects",
                    "version": BUILDER_VERSION},
           "licenses": [],
           "images": images,
           "categories": [{"id": cid, "name": name, "supercategory": "thing"}
                          for cid, name in CATEGORIES],
           "annotations": anns}
    ann_file = ann_dir / "instances.json"
    _write_if_changed(ann_file, json.dumps(doc, indent=1).encode())
    return {"root": root, "file_root": images_dir, "annotations_file": ann_file}


def _write_if_changed(path: pathlib.Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=None, help="output folder")
    parser.add_argument("--copies", type=int, default=1, help="list every image N times")
    args = parser.parse_args(argv)
    out = build_coco_dataset(args.root, args.copies)
    print(f"wrote {out['annotations_file']} and {len(IMAGES) * args.copies} images in "
          f"{out['file_root']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
