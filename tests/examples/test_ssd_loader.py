"""examples/ssd_loader.py: the SSD300 loader gives the same batches in every mode and after a
checkpoint restore; its anchors are SSD300's."""
import importlib.util
import math
import pathlib

import numpy as np
import pytest

import ndd

pytest.importorskip("skimage")
from ndd.datasets.coco import build_coco_dataset  # noqa: E402

_PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ssd_loader.py"
_spec = importlib.util.spec_from_file_location("ssd_loader_example", _PATH)
ssd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ssd)

BATCH = 4


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return build_coco_dataset(tmp_path_factory.mktemp("ssd-coco"), copies=2)  # 8 with objects


def _run(data, mode, seed=5, epochs=1):
    rng = ndd.random.RNG(seed=seed)
    reader = ssd.make_reader(data, seed=seed)
    out = []
    for _ in range(epochs):
        for images, boxes, labels in ssd.ssd_batches(reader, BATCH, mode, rng=rng):
            out.append((images.numpy().copy(), boxes.numpy().copy(), labels.numpy().copy()))
    return out


def test_anchors_are_ssd300s():
    a = np.asarray(ssd.ANCHORS, np.float64).reshape(-1, 4)
    assert a.shape == (8732, 4)
    # centers and sizes are clipped to [0, 1] (the corners may lie outside, as in SSD)
    centers, sizes = (a[:, :2] + a[:, 2:]) / 2, a[:, 2:] - a[:, :2]
    assert centers.min() > 0 and centers.max() <= 1 and (sizes > 0).all() and sizes.max() <= 1
    # first anchor: the 38x38 map's first cell (center 4/300), the square of size 21/300
    c, s = 0.5 / (300 / 8), 21 / 300
    np.testing.assert_allclose(a[0], [c - s / 2, c - s / 2, c + s / 2, c + s / 2])
    # the last: the 1x1 map's box of scale 261/300 and aspect ratio 1/2, its height clipped
    w = 261 / 300 / math.sqrt(2)
    np.testing.assert_allclose(a[-1], [0.5 - w / 2, 0, 0.5 + w / 2, 1])
    counts = [f * f * k for f, k in zip(ssd.FEATURE_MAPS, ssd.boxes_per_location())]
    assert counts == [5776, 2166, 600, 150, 36, 4]


def test_batches_are_bit_identical_in_every_mode(data):
    eager = _run(data, "eager")
    assert len(eager) == 2
    for images, boxes, labels in eager:
        assert images.shape == (BATCH, 3, 300, 300) and images.dtype == np.float32
        assert boxes.shape == (BATCH, 8732, 4) and labels.shape == (BATCH, 8732)
        assert (labels > 0).any(axis=1).all()      # every image keeps an object
        assert 0 <= labels.min() and labels.max() <= 15
    # the random ops did something: not every image is the unflipped, uncropped resize
    assert len({e[0].tobytes() for e in eager}) == 2
    for mode in ("deferred", "compile"):
        got = _run(data, mode)
        assert len(got) == len(eager)
        for (gi, gb, gl), (ei, eb, el) in zip(got, eager):
            np.testing.assert_array_equal(gi, ei, err_msg=mode)
            np.testing.assert_array_equal(gb, eb, err_msg=mode)
            np.testing.assert_array_equal(gl, el, err_msg=mode)


def _coco(data, **kw):
    return ndd.readers.COCO(file_root=str(data["file_root"]),
                            annotations_file=str(data["annotations_file"]), ltrb=True,
                            ratio=True, skip_empty=True, random_shuffle=True, seed=11,
                            enable_checkpointing=True, **kw)


def _arrays(batches):
    return [tuple(x.numpy().copy() for x in b) for b in batches]


def test_random_ops_reproduce_after_a_checkpoint_restore(data, tmp_path):
    """A checkpoint of the reader and the RNG taken after the first batch restores into fresh
    objects that produce exactly the batches the original went on to produce."""
    reader, rng = _coco(data), ndd.random.RNG(seed=11)
    ck = ndd.checkpoint.Checkpoint()
    ck.register(reader, "reader")
    ck.register(rng, "rng")
    it = ssd.ssd_batches(reader, BATCH, "eager", rng=rng)
    next(it)
    ck.collect()
    ck.save(str(tmp_path / "ssd_{seq:04d}.json"))
    want = _arrays(it) + _arrays(ssd.ssd_batches(reader, BATCH, "eager", rng=rng))

    fresh, rng2 = _coco(data), ndd.random.RNG()
    ck2 = ndd.checkpoint.Checkpoint()
    ck2.load(str(tmp_path / "ssd_{seq:04d}.json"))
    ck2.register(fresh, "reader")
    ck2.register(rng2, "rng")
    got = [b for _ in range(2) for b in _arrays(ssd.ssd_batches(fresh, BATCH, "eager",
                                                                 rng=rng2))]
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)
