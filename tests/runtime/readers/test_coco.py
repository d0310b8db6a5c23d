"""Tests of the COCO reader core (runtime/readers/coco.py): parsing, DALI's rules, errors.

The dataset is ``ndd.datasets.coco`` (real objects in scikit-image's photos); expected values
come from an independent walk over the JSON, and from DALI 2.4's CPU ``fn.readers.coco``
under ``@pytest.mark.oracle``.
"""

import copy
import json
import os

import numpy as np
import pytest

pytest.importorskip("skimage")      # the dataset's photos and segmentation (the "data" extra)

from ndd.datasets.coco import build_coco_dataset  # noqa: E402
from runtime.readers.coco import CocoReaderCore, parse_coco
from runtime.readers.coco_masks import (decode_counts, label_mask, polygon_runs, runs_to_mask,
                                        segmentation_mask)


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    return build_coco_dataset(tmp_path_factory.mktemp("coco"))


def _doc(coco):
    with open(coco["annotations_file"]) as f:
        return json.load(f)


def _expected(doc, *, ltrb=False, ratio=False, skip_empty=False, size_threshold=0.1,
              include_iscrowd=True, avoid_class_remapping=False):
    """Per image id: (boxes, labels) by a plain walk over the JSON, float32 scalar maths."""
    remap, nxt = {}, 1
    for c in doc["categories"]:
        remap[c["id"]] = c["id"] if avoid_class_remapping else nxt
        nxt += 1
    sizes = {im["id"]: (im["width"], im["height"]) for im in doc["images"]}
    out = {}
    for iid in sorted(sizes):
        boxes, labels = [], []
        for a in doc["annotations"]:
            if a["image_id"] != iid:
                continue
            x, y, w, h = a["bbox"]
            if w < size_threshold or h < size_threshold:
                continue
            if a["iscrowd"] and not include_iscrowd:
                continue
            b = [np.float32(v) for v in (x, y, w, h)]
            if ltrb:
                b[2], b[3] = b[0] + b[2], b[1] + b[3]
            if ratio:
                W, H = np.float32(sizes[iid][0]), np.float32(sizes[iid][1])
                b = [b[0] / W, b[1] / H, b[2] / W, b[3] / H]
            boxes.append(b)
            labels.append(remap[a["category_id"]])
        if skip_empty and not boxes:
            continue
        out[iid] = (np.array(boxes, np.float32).reshape(-1, 4), np.array(labels, np.int32))
    return out


def _read_all(core, batch_size=2):
    rows = []
    for outs in core.next_epoch(batch_size):
        rows.extend(zip(*outs))
    return rows


CASES = [dict(), dict(ltrb=True), dict(ratio=True), dict(ltrb=True, ratio=True),
         dict(skip_empty=True), dict(size_threshold=0.05), dict(size_threshold=40.0),
         dict(include_iscrowd=False), dict(avoid_class_remapping=True)]


@pytest.mark.parametrize("kw", CASES, ids=[",".join(f"{k}={v}" for k, v in c.items()) or
                                           "default" for c in CASES])
def test_boxes_labels_ids_match_an_independent_walk(coco, kw):
    doc = _doc(coco)
    want = _expected(doc, **kw)
    core = CocoReaderCore(file_root=coco["file_root"],
                          annotations_file=coco["annotations_file"], **kw)
    rows = _read_all(core)
    assert [int(r[5][0]) for r in rows] == list(want)
    names = {im["id"]: im["file_name"] for im in doc["images"]}
    for enc, boxes, labels, _, _, iid, mask in rows:
        assert mask is None
        wb, wl = want[int(iid[0])]
        assert boxes.dtype == np.float32 and boxes.shape == wb.shape
        assert np.array_equal(boxes, wb)
        assert labels.dtype == np.int32 and np.array_equal(labels, wl)
        with open(os.path.join(coco["file_root"], names[int(iid[0])]), "rb") as f:
            assert enc.tobytes() == f.read()


def test_dataset_has_the_cases_it_promises(coco):
    doc = _doc(coco)
    anns = doc["annotations"]
    per_image = {im["id"]: [a for a in anns if a["image_id"] == im["id"]] for im in doc["images"]}
    assert any(not v for v in per_image.values())                      # an empty image
    assert any(a["iscrowd"] for a in anns)                              # a crowd object
    assert any(a["bbox"][2] < 0.1 for a in anns)                        # below size_threshold
    assert any(a["bbox"][2] * a["bbox"][3] < 400 and a["bbox"][2] >= 1 for a in anns)  # tiny
    assert len(per_image[42]) > 20                                      # segmented coins
    assert sum(1 for v in per_image.values() if len({a["category_id"] for a in v}) > 2) >= 2
    ids = [im["id"] for im in doc["images"]]
    assert ids != sorted(ids)


def test_dataset_builder_is_reproducible(coco, tmp_path):
    again = build_coco_dataset(tmp_path / "again")
    with open(again["annotations_file"], "rb") as a, open(coco["annotations_file"], "rb") as b:
        assert a.read() == b.read()
    for name in os.listdir(coco["file_root"]):
        with open(os.path.join(again["file_root"], name), "rb") as a, \
                open(os.path.join(coco["file_root"], name), "rb") as b:
            assert a.read() == b.read()


def test_coin_boxes_enclose_their_polygons(coco):
    for a in _doc(coco)["annotations"]:
        if a["image_id"] != 42 or a["iscrowd"]:
            continue
        xy = np.asarray(a["segmentation"][0]).reshape(-1, 2)
        x, y, w, h = a["bbox"]
        assert xy[:, 0].min() >= x - 1 and xy[:, 0].max() <= x + w
        assert xy[:, 1].min() >= y - 1 and xy[:, 1].max() <= y + h


def test_polygons_and_vertices(coco):
    doc = _doc(coco)
    idx = parse_coco(coco["annotations_file"], coco["file_root"], polygon_masks=True,
                     ratio=True)
    sizes = {im["id"]: (im["width"], im["height"]) for im in doc["images"]}
    for k, iid in enumerate(idx.labels.tolist()):
        anns = [a for a in doc["annotations"] if a["image_id"] == iid and a["bbox"][2] >= 0.1
                and a["bbox"][3] >= 0.1]
        rows, verts = [], []
        for m, a in enumerate(anns):
            if isinstance(a["segmentation"], dict):
                continue                                # RLE: no polygon
            for poly in a["segmentation"]:
                rows.append([m, len(verts), len(verts) + len(poly) // 2])
                W, H = sizes[iid]
                verts.extend([np.float32(poly[j]) / np.float32(W),
                              np.float32(poly[j + 1]) / np.float32(H)]
                             for j in range(0, len(poly), 2))
        assert idx.polygons[k].dtype == np.int32 and idx.polygons[k].tolist() == rows
        assert idx.vertices[k].dtype == np.float32
        assert np.array_equal(idx.vertices[k], np.array(verts, np.float32).reshape(-1, 2))


def test_images_argument_orders_and_repeats(coco):
    idx = parse_coco(coco["annotations_file"], coco["file_root"],
                     images=["coffee.jpg", "chelsea.jpg", "coffee.jpg"])
    assert idx.labels.tolist() == [15, 7, 15]
    assert [os.path.basename(p) for p in idx.paths] == ["coffee.jpg", "chelsea.jpg",
                                                        "coffee.jpg"]
    with pytest.raises(ValueError, match="nothere.jpg"):
        parse_coco(coco["annotations_file"], coco["file_root"], images=["nothere.jpg"])


def test_shards_shuffle_and_state(coco):
    args = dict(file_root=coco["file_root"], annotations_file=coco["annotations_file"])
    ids = [[int(r[5][0]) for r in _read_all(CocoReaderCore(num_shards=2, shard_id=s, **args))]
           for s in (0, 1)]
    assert sorted(ids[0] + ids[1]) == [7, 15, 42, 99, 1003] and not set(ids[0]) & set(ids[1])
    shuffled = CocoReaderCore(random_shuffle=True, seed=3, **args)
    first = [int(r[5][0]) for r in _read_all(shuffled, 1)]
    assert sorted(first) == [7, 15, 42, 99, 1003]
    core = CocoReaderCore(random_shuffle=True, seed=3, **args)
    it = core.next_epoch(1)
    got = [int(next(it)[5][0][0]) for _ in range(2)]
    state = core.get_state()
    it.close()
    fresh = CocoReaderCore(random_shuffle=True, seed=3, **args)
    fresh.set_state(state)
    assert got + [int(r[5][0]) for r in _read_all(fresh, 1)] == first
    other = CocoReaderCore(random_shuffle=True, seed=3, skip_empty=True, **args)
    with pytest.raises(ValueError, match="different"):
        other.set_state(state)


def _bad(tmp_path, coco, edit, name="bad.json"):
    doc = copy.deepcopy(_doc(coco))
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _first(doc, image_id):
    return next(a for a in doc["annotations"] if a["image_id"] == image_id)


@pytest.mark.parametrize("edit, words", [
    (lambda d: _first(d, 7).pop("bbox"), "'bbox' must be a list of 4 numbers"),
    (lambda d: _first(d, 7).update(bbox=[1, 2, 3]), "'bbox' must be a list of 4 numbers"),
    (lambda d: _first(d, 7).update(category_id=12345), "category_id 12345"),
    (lambda d: _first(d, 7).update(segmentation=[[1, 2, 3]]), "even number of coordinates"),
], ids=["no-bbox", "bbox3", "bad-category", "odd-polygon"])
def test_malformed_annotations_name_file_annotation_and_image(tmp_path, coco, edit, words):
    path = _bad(tmp_path, coco, edit)
    aid = _first(_doc(coco), 7)["id"]
    with pytest.raises(ValueError) as e:
        parse_coco(path, coco["file_root"], polygon_masks=True)
    msg = str(e.value)
    assert path in msg and words in msg and f"annotation id {aid}" in msg and \
        "image id 7" in msg


def test_unknown_image_id_and_bad_files(tmp_path, coco):
    path = _bad(tmp_path, coco, lambda d: _first(d, 7).update(image_id=555))
    with pytest.raises(ValueError, match="image id 555: no image with that id"):
        parse_coco(path, coco["file_root"])
    path = _bad(tmp_path, coco, lambda d: d["images"][0].pop("width"))
    with pytest.raises(ValueError, match="width of image id"):
        parse_coco(path, coco["file_root"])
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_coco(str(tmp_path / "broken.json"), coco["file_root"])
    with pytest.raises(RuntimeError, match="cannot read the annotations file"):
        parse_coco(str(tmp_path / "absent.json"), coco["file_root"])
    with pytest.raises(ValueError, match="annotations_file"):
        CocoReaderCore(file_root=coco["file_root"])
    path = _bad(tmp_path, coco, lambda d: d["images"][1].update(file_name="gone.jpg"))
    core = CocoReaderCore(file_root=coco["file_root"], annotations_file=path)
    with pytest.raises(RuntimeError, match="gone.jpg"):
        _read_all(core, 5)


# ---------------------------------------------------------------------------- DALI oracle
def dali_coco(file_root, annotations_file, **kw):
    """Every sample of DALI 2.4's CPU ``fn.readers.coco`` (unshuffled), as numpy arrays."""
    fn = pytest.importorskip("nvidia.dali.fn")
    from nvidia.dali import pipeline_def

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        if annotations_file:
            kw["annotations_file"] = str(annotations_file)
        return tuple(fn.readers.coco(file_root=str(file_root), name="r", **kw))

    p = pipe()
    p.build()
    n = p.reader_meta("r")["epoch_size"]
    return [[np.array(o[0]) for o in p.run()] for _ in range(n)]


ORACLE_CASES = CASES + [dict(polygon_masks=True), dict(polygon_masks=True, ratio=True),
                        dict(pixelwise_masks=True, include_iscrowd=False),
                        dict(pixelwise_masks=True, include_iscrowd=False, skip_empty=True,
                             size_threshold=40.0),
                        dict(polygon_masks=True, ltrb=True, skip_empty=True,
                             include_iscrowd=False)]


@pytest.mark.oracle
@pytest.mark.parametrize("kw", ORACLE_CASES, ids=[",".join(f"{k}={v}" for k, v in c.items())
                                                  or "default" for c in ORACLE_CASES])
def test_matches_dali(coco, kw):
    want = dali_coco(coco["file_root"], coco["annotations_file"], image_ids=True, **kw)
    core = CocoReaderCore(file_root=coco["file_root"],
                          annotations_file=coco["annotations_file"], **kw)
    rows = _read_all(core, 3)
    assert len(rows) == len(want)
    for got, ref in zip(rows, want):
        enc, boxes, labels, polys, verts, iid, mask = got
        mine = [enc, boxes, labels] + ([polys, verts] if kw.get("polygon_masks") else []) + \
            ([mask] if kw.get("pixelwise_masks") else []) + [iid]
        for a, b in zip(mine, ref):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b)


@pytest.mark.oracle
def test_images_argument_matches_dali(coco):
    names = ["coffee.jpg", "chelsea.jpg", "coffee.jpg", "brick.jpg"]
    want = dali_coco(coco["file_root"], coco["annotations_file"], image_ids=True,
                     images=names)
    idx = parse_coco(coco["annotations_file"], coco["file_root"], images=names)
    assert [int(w[3][0]) for w in want] == idx.labels.tolist()
    for k, w in enumerate(want):
        assert np.array_equal(w[1], idx.boxes[k]) and np.array_equal(w[2], idx.classes[k])


# --------------------------------------------------------------------------- pixelwise masks
def _compress(counts):
    """The COCO API's compressed RLE string, written from its description: every count
    (less the count two places back, from the fourth on) in little-endian 5-bit groups, bit
    0x20 marking "more follows", offset by 48."""
    out = []
    for i, x in enumerate(counts):
        x = x - counts[i - 2] if i > 2 else x
        while True:
            c = x & 0x1F
            x >>= 5
            done = x == -1 if c & 0x10 else x == 0
            out.append(chr((c if done else c | 0x20) + 48))
            if done:
                break
    return "".join(out)


def test_rectangles_rasterise_to_their_pixels():
    for x, y, w, h in [(0, 0, 5, 3), (2, 1, 4, 4), (1, 2, 7, 1)]:
        m = runs_to_mask(polygon_runs([x, y, x + w, y, x + w, y + h, x, y + h], 10, 12), 10, 12)
        want = np.zeros((10, 12), bool)
        want[y:y + h, x:x + w] = True
        assert np.array_equal(m, want)


def test_masks_paint_the_largest_label_and_decode_rles(coco):
    doc = _doc(coco)
    crowd = next(a for a in doc["annotations"] if a["iscrowd"])
    seg = crowd["segmentation"]
    h, w = seg["size"]
    plain = segmentation_mask(seg, h, w)
    assert plain.sum() == crowd["area"]
    ys, xs = np.nonzero(plain)
    x, y, bw, bh = crowd["bbox"]
    assert (xs.min(), ys.min(), xs.max() + 1 - xs.min(), ys.max() + 1 - ys.min()) == \
        (x, y, bw, bh)
    packed = {"counts": _compress(seg["counts"]), "size": seg["size"]}
    assert decode_counts(packed["counts"]) == seg["counts"]
    assert np.array_equal(segmentation_mask(packed, h, w), plain)
    # largest label wins: two overlapping rectangles
    m = label_mask([(5, [[0, 0, 4, 0, 4, 4, 0, 4]]), (2, [[2, 2, 6, 2, 6, 6, 2, 6]])], 8, 8)
    assert m.shape == (8, 8, 1) and m.dtype == np.int32
    assert m[3, 3, 0] == 5 and m[5, 5, 0] == 2 and m[7, 7, 0] == 0
    with pytest.raises(ValueError, match="RLE size"):
        segmentation_mask(seg, h + 1, w)


def test_pixelwise_masks_bad_rle_names_file_and_image(tmp_path, coco):
    def edit(d):
        crowd = next(a for a in d["annotations"] if a["iscrowd"])
        crowd["segmentation"]["counts"] = crowd["segmentation"]["counts"][:-3]
    path = _bad(tmp_path, coco, edit)
    core = CocoReaderCore(file_root=coco["file_root"], annotations_file=path,
                          pixelwise_masks=True, images=["coins.jpg"])
    with pytest.raises(ValueError, match=r"bad\.json.*image id 42: RLE runs add up"):
        _read_all(core, 1)


@pytest.mark.oracle
def test_pixelwise_masks_with_crowd_match_dali_but_for_the_rle(coco):
    """DALI 2.4 leaves RLE segmentations out of its masks (docs/semantics.md): the masks
    are DALI's wherever the crowd RLE alone does not cover a pixel, and the crowd's label
    there."""
    want = dali_coco(coco["file_root"], coco["annotations_file"], pixelwise_masks=True,
                     image_ids=True)
    rows = _read_all(CocoReaderCore(file_root=coco["file_root"],
                                    annotations_file=coco["annotations_file"],
                                    pixelwise_masks=True), 2)
    crowd = next(a for a in _doc(coco)["annotations"] if a["iscrowd"])
    for row, ref in zip(rows, want):
        mask, iid = row[6], int(row[5][0])
        assert mask.shape == ref[3].shape and mask.dtype == ref[3].dtype
        differ = mask != ref[3]
        if iid != crowd["image_id"]:
            assert not differ.any()
            continue
        rle = segmentation_mask(crowd["segmentation"], *mask.shape[:2])[:, :, None]
        assert differ.any() and not (differ & ~rle).any()
        assert (ref[3][differ] == 0).all() and (mask[differ] == row[2][
            [k for k, b in enumerate(row[1].tolist()) if b == crowd["bbox"]][0]]).all()


# ---------------------------------------------------------------- preprocessed annotations
def _meta_files(folder):
    return {f: (folder / f).read_bytes() for f in sorted(os.listdir(folder))}


def test_preprocessed_annotations_round_trip(tmp_path, coco):
    args = dict(file_root=coco["file_root"], polygon_masks=True)
    saved = CocoReaderCore(annotations_file=coco["annotations_file"], ltrb=True, ratio=True,
                           skip_empty=True, image_ids=True, save_preprocessed_annotations=True,
                           save_preprocessed_annotations_dir=str(tmp_path / "meta"), **args)
    files = _meta_files(tmp_path / "meta")
    assert set(files) == {"boxes.dat", "labels.dat", "counts.dat", "offsets.dat",
                          "filenames.dat", "original_ids.dat", "polygon_data.dat",
                          "polygon_offset.dat", "polygons_count.dat", "vertices.dat",
                          "vertices_offset.dat", "vertices_count.dat"}
    # the layout read independently: a uint32 count, then the values
    counts = np.frombuffer(files["counts.dat"], "<i4")
    assert counts[0] == 4 and counts[1:].tolist() == [len(b) for b in
                                                     saved._dataset().boxes]
    assert files["filenames.dat"].decode().splitlines() == list(saved._dataset().names)
    boxes = np.frombuffer(files["boxes.dat"][4:], "<f4").reshape(-1, 4)
    assert np.array_equal(boxes, np.concatenate(saved._dataset().boxes))
    loaded = CocoReaderCore(preprocessed_annotations=str(tmp_path / "meta"), image_ids=True,
                            **args)
    for a, b in zip(_read_all(saved), _read_all(loaded)):
        assert all(np.array_equal(x, y) for x, y in zip(a[:6], b[:6]))
    CocoReaderCore(annotations_file=coco["annotations_file"], save_preprocessed_annotations=True,
                   save_preprocessed_annotations_dir=str(tmp_path / "meta2"), **args)
    with pytest.raises(ValueError, match="original_ids.dat"):     # saved without image ids
        CocoReaderCore(file_root=coco["file_root"], preprocessed_annotations=str(
            tmp_path / "meta2"), image_ids=True)
    (tmp_path / "meta" / "labels.dat").write_bytes(files["labels.dat"][:-4])
    with pytest.raises(ValueError, match="labels.dat"):
        CocoReaderCore(file_root=coco["file_root"], preprocessed_annotations=str(
            tmp_path / "meta"))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(polygon_masks=True, image_ids=True),
                                dict(ltrb=True, ratio=True, skip_empty=True, image_ids=True,
                                     polygon_masks=True)])
def test_preprocessed_annotations_are_dalis_files(tmp_path, coco, kw):
    """ndd writes the bytes DALI writes, and each reads the other's files."""
    (tmp_path / "dali").mkdir()         # DALI writes into an existing folder only
    dali_coco(coco["file_root"], coco["annotations_file"], save_preprocessed_annotations=True,
              save_preprocessed_annotations_dir=str(tmp_path / "dali"), **kw)
    CocoReaderCore(file_root=coco["file_root"], annotations_file=coco["annotations_file"],
                   save_preprocessed_annotations=True,
                   save_preprocessed_annotations_dir=str(tmp_path / "ndd"), **kw)
    assert _meta_files(tmp_path / "ndd") == _meta_files(tmp_path / "dali")
    load = {k: v for k, v in kw.items() if k in ("polygon_masks", "image_ids")}
    want = dali_coco(coco["file_root"], "", preprocessed_annotations=str(tmp_path / "ndd"),
                     **load)
    got = _read_all(CocoReaderCore(file_root=coco["file_root"],
                                   preprocessed_annotations=str(tmp_path / "dali"), **load))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        mine = [g[0], g[1], g[2]] + ([g[3], g[4]] if load.get("polygon_masks") else []) + \
            ([g[5]] if load.get("image_ids") else [])
        assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(mine, w))


@pytest.mark.oracle
def test_random_polygons_rasterise_as_dali(tmp_path, coco):
    """Polygons of every shape (concave, self-crossing, partly outside the image, sub-pixel)
    on a small image: the masks equal DALI's pixel for pixel."""
    rng = np.random.default_rng(8)
    w, h = 64, 48
    anns = []
    for k in range(60):
        n = int(rng.integers(3, 9))
        cx, cy = rng.uniform(-5, w + 5), rng.uniform(-5, h + 5)
        r = rng.uniform(0.3, 25)
        poly = np.column_stack([cx + rng.uniform(-r, r, n), cy + rng.uniform(-r, r, n)])
        poly = np.round(poly, 2).reshape(-1).tolist()
        anns.append({"id": k + 1, "image_id": 1, "category_id": 1 + k % 5, "iscrowd": 0,
                     "bbox": [1, 1, 2, 2], "area": 4.0, "segmentation": [poly]})
    doc = {"images": [{"id": 1, "file_name": "chelsea.jpg", "width": w, "height": h}],
           "categories": [{"id": c, "name": str(c)} for c in range(1, 6)],
           "annotations": anns}
    for k in range(0, 60, 6):         # one object per run of 6 alone on its own image
        path = tmp_path / f"poly{k}.json"
        part = dict(doc, annotations=anns[k:k + 6])
        path.write_text(json.dumps(part))
        want = dali_coco(coco["file_root"], path, pixelwise_masks=True)[0][3]
        got = _read_all(CocoReaderCore(file_root=coco["file_root"], annotations_file=path,
                                       pixelwise_masks=True), 1)[0][6]
        assert got.shape == want.shape == (h, w, 1)
        assert np.array_equal(got, want), f"annotations {k}..{k + 5}"


@pytest.mark.oracle
def test_size_threshold_compares_in_float32_as_dali(tmp_path, coco):
    # 0.099999999 < 0.1 in float64, but the same float32: DALI keeps it
    widths = [0.1, 0.099999999, 0.09999999, 0.10000001, 0.1000000015, 2.0000001, 1.9999999,
              1.99999999]
    doc = {"images": [{"id": 1, "file_name": "chelsea.jpg", "width": 451, "height": 300}],
           "categories": [{"id": 1, "name": "a"}],
           "annotations": [{"id": k, "image_id": 1, "category_id": 1, "iscrowd": 0,
                            "bbox": [1, 1, w, 5], "area": 1.0}
                           for k, w in enumerate(widths)]}
    path = tmp_path / "thr.json"
    path.write_text(json.dumps(doc))
    for thr in (0.1, 2.0, 0.09999999):
        want = dali_coco(coco["file_root"], path, size_threshold=thr)[0][1]
        got = parse_coco(path, coco["file_root"], size_threshold=thr).boxes[0]
        assert np.array_equal(got, want)
        if thr == 0.1:
            assert np.float32(0.099999999) in got[:, 2]


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(ltrb=True), dict(ratio=True), dict(ltrb=True, ratio=True)])
def test_random_boxes_convert_as_dali(tmp_path, coco, kw):
    rng = np.random.default_rng(9)
    doc = {"images": [{"id": 1, "file_name": "chelsea.jpg", "width": 451, "height": 300},
                      {"id": 2, "file_name": "coffee.jpg", "width": 601, "height": 399}],
           "categories": [{"id": 1, "name": "a"}], "annotations": []}
    for k in range(400):
        x, y = rng.uniform(0, 400, 2)
        w, h = rng.uniform(0.2, 200, 2)
        doc["annotations"].append({"id": k, "image_id": 1 + k % 2, "category_id": 1,
                                   "iscrowd": 0, "area": 1.0,
                                   "bbox": [float(v) for v in (x, y, w, h)]})
    path = tmp_path / "boxes.json"
    path.write_text(json.dumps(doc))
    want = dali_coco(coco["file_root"], path, **kw)
    idx = parse_coco(path, coco["file_root"], **kw)
    for k, w in enumerate(want):
        assert np.array_equal(idx.boxes[k], w[1])
