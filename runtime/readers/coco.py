"""Runtime core of ``ndd.readers.COCO`` (DALI 2.4's ``fn.readers.coco``, CPU backend).

:func:`parse_coco` turns a COCO "instances" JSON file into a :class:`CocoIndex` (the images,
in reading order, with their boxes, labels and polygons already in the output format);
:class:`CocoReaderCore` reads it with the machinery of every reader (``FileReaderCore``:
sharding, shuffling, padding, prefetching, state).

DALI's rules, checked against DALI 2.4 (``tests/runtime/readers/test_coco.py``):

- Images are read ordered by image id (all of the file's ``images``, with or without
  annotations; ``skip_empty`` drops those left without any), or in the order of the
  ``images`` argument (file names, duplicates read again).
- An image's annotations keep their order in the file. An annotation is dropped when its box
  is narrower or lower than ``size_threshold`` pixels, or is a crowd one (``iscrowd=1``)
  without ``include_iscrowd``.
- Labels are the category ids remapped to ``1..K`` in the order the ``categories`` are
  listed, unless ``avoid_class_remapping``.
- Boxes are float32 ``[x, y, w, h]``; ``ltrb`` gives ``[l, t, r, b]`` (``r = x + w``), then
  ``ratio`` divides the x coordinates by the image width and the y ones by its height (the
  widths and heights of the JSON ``images``), all in float32.
- ``polygon_masks``: every polygon of an annotation's ``segmentation`` list becomes a row
  ``[mask index, first vertex, end vertex]`` (int32) of ``polygons``, its points rows of
  ``vertices`` (float32 ``[x, y]``, divided like the boxes under ``ratio``); an RLE
  segmentation (a dict, crowd objects) gives none.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from runtime.readers.coco_masks import label_mask
from runtime.readers.coco_meta import load_meta, save_meta
from runtime.readers.file_io import read_file
from runtime.readers.file_reader import FileReaderCore

__all__ = ["CocoIndex", "CocoReaderCore", "parse_coco", "STATE_FORMAT"]

STATE_FORMAT = "ndd.readers.COCO/1"


@dataclasses.dataclass(frozen=True)
class CocoIndex:
    """The dataset of a COCO reader, in reading order (one entry per sample).

    Attributes
    ----------
    paths : tuple of str
        Image file of every sample (``file_root`` joined with its ``file_name``).
    labels : numpy.ndarray
        int32, shape (N,): every sample's image id (what the dataset fingerprint of the
        reader state hashes next to the paths).
    source : str
        Where the list came from (for messages).
    boxes, classes, polygons, vertices : tuple of numpy.ndarray
        Per sample: float32 (M, 4), int32 (M,), int32 (P, 3), float32 (V, 2).
    masks : tuple or None
        With ``pixelwise_masks``, per sample ``(height, width, [(label, segmentation)...])``
        (rasterised when the sample is read, see ``coco_masks.py``); else None.
    names : tuple of str
        Every sample's ``file_name`` (as in the JSON).
    """

    paths: tuple
    labels: np.ndarray
    source: str
    boxes: tuple
    classes: tuple
    polygons: tuple
    vertices: tuple
    masks: tuple | None = None
    names: tuple = ()

    def __len__(self):
        return len(self.paths)


def _fail(ann_file, what):
    raise ValueError(f"readers.COCO: malformed annotations file {ann_file!r}: {what}")


def _number(value, ann_file, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(ann_file, f"{where} must be a number, got {value!r}")
    return value


def _load_json(ann_file):
    try:
        with open(ann_file, "rb") as f:
            doc = json.load(f)
    except OSError as e:
        raise RuntimeError(f"readers.COCO: cannot read the annotations file {ann_file!r}: "
                           f"{e.strerror or e}") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"readers.COCO: the annotations file {ann_file!r} is not valid "
                         f"JSON: {e}") from None
    if not isinstance(doc, dict):
        _fail(ann_file, f"expected a JSON object at the top level, got "
                        f"{type(doc).__name__}")
    for key in ("images", "categories"):
        if not isinstance(doc.get(key), list):
            _fail(ann_file, f"expected a list under {key!r}")
    if not isinstance(doc.get("annotations", []), list):
        _fail(ann_file, "expected a list under 'annotations'")
    return doc


def _images(doc, ann_file):
    """{image id: (file_name, width, height)}, in the file's order."""
    out = {}
    for k, im in enumerate(doc["images"]):
        if not isinstance(im, dict) or not isinstance(im.get("id"), int) or \
                isinstance(im.get("id"), bool):
            _fail(ann_file, f"images[{k}] has no integer 'id'")
        iid = im["id"]
        name = im.get("file_name")
        if not isinstance(name, str):
            _fail(ann_file, f"image id {iid} (images[{k}]) has no 'file_name' string")
        w = _number(im.get("width"), ann_file, f"the width of image id {iid}")
        h = _number(im.get("height"), ann_file, f"the height of image id {iid}")
        if iid in out:
            _fail(ann_file, f"image id {iid} is listed twice under 'images'")
        out[iid] = (name, w, h)
    return out


def _categories(doc, ann_file, avoid_class_remapping):
    """{category id: label}: 1..K in listed order, or the ids themselves."""
    out = {}
    for k, cat in enumerate(doc["categories"]):
        cid = cat.get("id") if isinstance(cat, dict) else None
        if not isinstance(cid, int) or isinstance(cid, bool):
            _fail(ann_file, f"categories[{k}] has no integer 'id'")
        if cid not in out:
            out[cid] = cid if avoid_class_remapping else len(out) + 1
    return out


def _polygons(seg, ann_file, where):
    """The polygons of a segmentation: a list of (V, 2) float32 arrays (none for RLE)."""
    if isinstance(seg, dict) or seg is None:
        return []
    if not isinstance(seg, list):
        _fail(ann_file, f"{where}: 'segmentation' must be a list of polygons or an RLE "
                        f"dict, got {type(seg).__name__}")
    out = []
    for p, poly in enumerate(seg):
        if not isinstance(poly, list) or len(poly) % 2 or \
                any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in poly):
            _fail(ann_file, f"{where}: polygon {p} of 'segmentation' must be a flat list of "
                            f"an even number of coordinates [x0, y0, x1, y1, ...]")
        out.append(np.asarray(poly, np.float32).reshape(-1, 2))
    return out


def parse_coco(annotations_file, file_root=None, *, images=None, ltrb=False, ratio=False,
               skip_empty=False, size_threshold=0.1, include_iscrowd=True,
               avoid_class_remapping=False, polygon_masks=False,
               pixelwise_masks=False, coordinate_ranges=False) -> CocoIndex:
    """Read a COCO instances JSON into the samples of a reader (DALI's rules: module doc).

    Parameters
    ----------
    annotations_file : str
    file_root : str, optional
        Folder the ``file_name`` of the images are relative to.
    images : list of str, optional
        File names to read, in this order (as they appear in the JSON).
    ltrb, ratio, skip_empty, size_threshold, include_iscrowd, avoid_class_remapping,
    polygon_masks, pixelwise_masks
        DALI's arguments of the same names.
    coordinate_ranges : bool, default False
        DALI's deprecated ``masks`` format: the polygon rows' ranges count coordinates
        (twice the vertex indices).

    Returns
    -------
    CocoIndex

    Raises
    ------
    RuntimeError
        The file cannot be read.
    ValueError
        Not JSON, or an image, category or annotation lacks what the reader needs (the
        message names the file, the annotation id and its image id), or ``images`` names a
        file the JSON does not list.
    """
    ann_file = os.fspath(annotations_file)
    doc = _load_json(ann_file)
    imgs = _images(doc, ann_file)
    cats = _categories(doc, ann_file, avoid_class_remapping)
    per_image = {iid: [] for iid in imgs}
    threshold = np.float32(size_threshold)
    for k, ann in enumerate(doc.get("annotations", [])):
        if not isinstance(ann, dict):
            _fail(ann_file, f"annotations[{k}] is not an object")
        aid, iid = ann.get("id", f"#{k}"), ann.get("image_id")
        where = f"annotation id {aid} (annotations[{k}]) of image id {iid}"
        if iid not in imgs:
            _fail(ann_file, f"{where}: no image with that id is listed under 'images'")
        bbox = ann.get("bbox")
        if not isinstance(bbox, list) or len(bbox) != 4 or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) for v in bbox):
            _fail(ann_file, f"{where}: 'bbox' must be a list of 4 numbers [x, y, width, "
                            f"height], got {bbox!r:.80}")
        if ann.get("category_id") not in cats:
            _fail(ann_file, f"{where}: category_id {ann.get('category_id')!r} is not listed "
                            f"under 'categories'")
        if ann.get("iscrowd", 0) and not include_iscrowd:
            continue
        if np.float32(bbox[2]) < threshold or np.float32(bbox[3]) < threshold:
            continue        # in float32, as DALI holds boxes and the threshold
        seg = ann.get("segmentation")
        polys = _polygons(seg, ann_file, where) if polygon_masks or pixelwise_masks else []
        if pixelwise_masks and isinstance(seg, dict) and not (
                isinstance(seg.get("counts"), (str, list)) and isinstance(seg.get("size"),
                                                                         list)):
            _fail(ann_file, f"{where}: an RLE 'segmentation' needs 'counts' (a list or a "
                            f"string) and 'size' ([height, width])")
        per_image[iid].append((bbox, cats[ann["category_id"]], polys if polygon_masks else [],
                               seg))

    if images is not None:
        by_name = {}
        for iid, (name, _, _) in imgs.items():
            by_name.setdefault(name, iid)
        order = []
        for name in images:
            if name not in by_name:
                raise ValueError(f"readers.COCO: `images` names {name!r}, which the "
                                 f"annotations file {ann_file!r} does not list")
            order.append(by_name[name])
    else:
        order = sorted(imgs)
    if skip_empty:
        order = [iid for iid in order if per_image[iid]]

    paths, boxes, classes, polygons, vertices, masks, names = [], [], [], [], [], [], []
    for iid in order:
        name, width, height = imgs[iid]
        anns = per_image[iid]
        names.append(name)
        paths.append(os.path.join(file_root, name) if file_root is not None else name)
        b = np.asarray([a[0] for a in anns], np.float32).reshape(-1, 4)
        if ltrb:
            b[:, 2:] += b[:, :2]
        scale = np.asarray([width, height, width, height], np.float32)
        if ratio:
            b /= scale
        boxes.append(b)
        classes.append(np.asarray([a[1] for a in anns], np.int32).reshape(-1))
        rows, verts, start = [], [], 0
        if pixelwise_masks:
            masks.append((int(height), int(width), [(a[1], a[3]) for a in anns]))
        for m, (_, _, polys, _) in enumerate(anns):
            for poly in polys:
                rows.append((m, start, start + len(poly)))
                verts.append(poly)
                start += len(poly)
        v = np.concatenate(verts).astype(np.float32) if verts else np.zeros((0, 2), np.float32)
        if ratio:
            v /= scale[:2]
        rows = np.asarray(rows, np.int32).reshape(-1, 3)
        if coordinate_ranges:
            rows[:, 1:] *= 2
        polygons.append(rows)
        vertices.append(v)
    return CocoIndex(paths=tuple(paths), labels=np.asarray(order, np.int32).reshape(-1),
                     source=f"annotations file {ann_file!r}", boxes=tuple(boxes),
                     classes=tuple(classes), polygons=tuple(polygons),
                     vertices=tuple(vertices), masks=tuple(masks) if pixelwise_masks else None,
                     names=tuple(names))


class CocoReaderCore(FileReaderCore):
    """Reads (encoded image, boxes, labels, polygons, vertices, image id) per sample.

    Parameters
    ----------
    file_root : str
        Folder of the images (required, as DALI's without preprocessed annotations).
    annotations_file : str
        COCO instances JSON.
    images, ltrb, ratio, skip_empty, size_threshold, include_iscrowd, avoid_class_remapping,
    polygon_masks, pixelwise_masks
        See :func:`parse_coco` (``polygon_masks`` and ``pixelwise_masks`` exclude each other).
    preprocessed_annotations : str, optional
        Read DALI's preprocessed annotation files from this folder instead of
        ``annotations_file`` (``coco_meta.py``).
    save_preprocessed_annotations : bool, default False
        Write them, to ``save_preprocessed_annotations_dir``, when the dataset is listed.
    image_ids : bool, default False
        The image ids are saved (and read) with the preprocessed annotations.
    **kwargs
        The sharding, shuffling, padding and prefetching arguments of ``FileReaderCore``.

    The loader yields per batch ``(encoded, boxes, labels, polygons, vertices, image_ids,
    masks)`` (lists of arrays: uint8 (size,), float32 (M, 4), int32 (M,), int32 (P, 3),
    float32 (V, 2), int32 (1,), int32 (H, W, 1) or None without ``pixelwise_masks``), plus
    the dataset indices when asked.
    """

    kind = "COCO reader"
    state_format = STATE_FORMAT

    def __init__(self, *, file_root=None, annotations_file=None, images=None, ltrb=False,
                 ratio=False, skip_empty=False, size_threshold=0.1, include_iscrowd=True,
                 avoid_class_remapping=False, polygon_masks=False, pixelwise_masks=False,
                 coordinate_ranges=False, preprocessed_annotations=None,
                 save_preprocessed_annotations=False, save_preprocessed_annotations_dir=None,
                 image_ids=False, lazy_init=False, defer_shard_check=False, **kwargs):
        if preprocessed_annotations:
            given = dict(annotations_file=annotations_file, ltrb=ltrb, ratio=ratio,
                         skip_empty=skip_empty, size_threshold=size_threshold != 0.1,
                         images=images is not None,
                         pixelwise_masks=pixelwise_masks,
                         save_preprocessed_annotations=save_preprocessed_annotations)
            for key, value in given.items():
                if value:       # DALI's words (a RuntimeError there too)
                    raise RuntimeError(f"When reading data from preprocessed annotation "
                                       f"files, \"{key}\" is not supported.")
        elif not annotations_file:
            raise ValueError("readers.COCO: `annotations_file` (the COCO instances JSON) or "
                             "`preprocessed_annotations` (a folder of DALI's preprocessed "
                             "annotations) is required")
        if save_preprocessed_annotations and not save_preprocessed_annotations_dir:
            raise ValueError("readers.COCO: `save_preprocessed_annotations=True` needs "
                             "`save_preprocessed_annotations_dir`, the folder to write to")
        if save_preprocessed_annotations and pixelwise_masks:
            raise ValueError("readers.COCO: preprocessed annotations cannot hold pixelwise "
                             "masks (DALI's files have no segmentations); drop one of "
                             "`pixelwise_masks`, `save_preprocessed_annotations`")
        if file_root is None:
            raise ValueError("readers.COCO: `file_root` (the folder of the images) is "
                             "required")
        if isinstance(images, (str, os.PathLike)):
            images = [os.fspath(images)]
        for key, value in dict(ltrb=ltrb, ratio=ratio, skip_empty=skip_empty,
                               include_iscrowd=include_iscrowd,
                               avoid_class_remapping=avoid_class_remapping,
                               polygon_masks=polygon_masks,
                               pixelwise_masks=pixelwise_masks,
                               coordinate_ranges=coordinate_ranges).items():
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"readers.COCO: `{key}` must be a bool; got {value!r}")
        if isinstance(size_threshold, bool) or not isinstance(size_threshold,
                                                               (int, float, np.number)):
            raise TypeError(f"readers.COCO: `size_threshold` must be a number; got "
                            f"{size_threshold!r}")
        self._meta_args = dict(
            load=os.fspath(preprocessed_annotations) if preprocessed_annotations else None,
            save=os.fspath(save_preprocessed_annotations_dir) if save_preprocessed_annotations
            else None, image_ids=bool(image_ids))
        self._coco_args = dict(
            annotations_file=os.fspath(annotations_file) if annotations_file else None,
            file_root=os.fspath(file_root),
            images=None if images is None else [os.fspath(p) for p in images],
            ltrb=bool(ltrb), ratio=bool(ratio), skip_empty=bool(skip_empty),
            size_threshold=float(size_threshold), include_iscrowd=bool(include_iscrowd),
            avoid_class_remapping=bool(avoid_class_remapping),
            polygon_masks=bool(polygon_masks), pixelwise_masks=bool(pixelwise_masks),
            coordinate_ranges=bool(coordinate_ranges))
        if polygon_masks and pixelwise_masks:
            raise ValueError("readers.COCO: `polygon_masks` and `pixelwise_masks` exclude "
                             "each other (as in DALI); enable one")
        super().__init__(lazy_init=True, **kwargs)
        self.list_now(lazy_init, defer_shard_check)

    def build_index(self):
        """The COCO dataset listing: :func:`parse_coco`, or DALI's preprocessed annotations;
        saved as those when asked."""
        a, meta = self._coco_args, self._meta_args
        if meta["load"] is not None:
            m = load_meta(meta["load"], polygons=a["polygon_masks"],
                          image_ids=meta["image_ids"],
                          coordinate_ranges=a["coordinate_ranges"])
            return CocoIndex(
                paths=tuple(os.path.join(a["file_root"], n) for n in m["names"]),
                labels=m["ids"], source=f"preprocessed annotations in {meta['load']!r}",
                boxes=tuple(m["boxes"]), classes=tuple(m["classes"]),
                polygons=tuple(m["polygons"]), vertices=tuple(m["vertices"]),
                names=tuple(m["names"]))
        index = parse_coco(**a)
        if meta["save"] is not None:
            save_meta(meta["save"], index.names, index, polygons=a["polygon_masks"],
                      image_ids=meta["image_ids"], coordinate_ranges=a["coordinate_ranges"])
        return index

    def make_loader(self, index, with_indices):
        def load(indices):
            out = ([], [], [], [], [], [], [])
            cache = {}
            for i in indices.tolist():
                if i in cache:      # a padding repeat: same content, separate buffers
                    data = cache[i].copy()
                else:
                    data = cache[i] = read_file(index.paths[i])
                out[0].append(data)
                out[1].append(index.boxes[i].copy())
                out[2].append(index.classes[i].copy())
                out[3].append(index.polygons[i].copy())
                out[4].append(index.vertices[i].copy())
                out[5].append(index.labels[i:i + 1].copy())
                out[6].append(None if index.masks is None else self._mask(index, i))
            return (*out, indices.tolist()) if with_indices else out

        return load

    def _mask(self, index, i):
        """The pixelwise mask of sample ``i``; a bad RLE names the file and the image."""
        h, w, objects = index.masks[i]
        try:
            return label_mask(objects, h, w)
        except ValueError as e:
            raise ValueError(f"readers.COCO: malformed annotations file "
                             f"{self._coco_args['annotations_file']!r}: image id "
                             f"{int(index.labels[i])}: {e}") from None
