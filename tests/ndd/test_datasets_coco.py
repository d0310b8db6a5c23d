"""ndd.datasets.coco.build_coco_dataset(copies=N): every photo listed N times, ids shifted,
annotations copied, files byte-identical; readers.COCO reads them all."""
import json

import pytest

import ndd

pytest.importorskip("skimage")
from ndd.datasets.coco import IMAGES, build_coco_dataset  # noqa: E402


def test_copies_list_every_photo_again(tmp_path):
    one = build_coco_dataset(tmp_path / "one")
    three = build_coco_dataset(tmp_path / "three", copies=3)
    d1 = json.loads(one["annotations_file"].read_text())
    d3 = json.loads(three["annotations_file"].read_text())
    assert len(d3["images"]) == 3 * len(d1["images"]) == 3 * len(IMAGES)
    assert len(d3["annotations"]) == 3 * len(d1["annotations"])
    assert len({im["id"] for im in d3["images"]}) == len(d3["images"])
    assert len({a["id"] for a in d3["annotations"]}) == len(d3["annotations"])
    by_id = {im["id"]: im for im in d3["images"]}
    for a in d3["annotations"]:
        assert a["image_id"] in by_id
    for im in d1["images"]:
        stem = im["file_name"][:-4]
        for c in (1, 2):
            copy = by_id[im["id"] + 10000 * c]
            assert copy["file_name"] == f"{stem}_{c}.jpg"
            assert (three["file_root"] / copy["file_name"]).read_bytes() == \
                (one["file_root"] / im["file_name"]).read_bytes()
            orig = sorted((a["category_id"], a["bbox"]) for a in d1["annotations"]
                          if a["image_id"] == im["id"])
            again = sorted((a["category_id"], a["bbox"]) for a in d3["annotations"]
                           if a["image_id"] == copy["id"])
            assert orig == again
    # copies=1 writes exactly the default dataset
    assert d1 == json.loads(build_coco_dataset(tmp_path / "again", copies=1)
                            ["annotations_file"].read_text())
    with pytest.raises(ValueError, match="positive integer"):
        build_coco_dataset(tmp_path / "bad", copies=0)
    reader = ndd.readers.COCO(file_root=str(three["file_root"]),
                              annotations_file=str(three["annotations_file"]), skip_empty=True)
    n = sum(j.batch_size for j, _, _ in reader.next_epoch(batch_size=5))
    assert n == 3 * (len(IMAGES) - 1)       # the brick photo has no annotations
