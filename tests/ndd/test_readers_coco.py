"""``ndd.readers.COCO``: outputs, iteration modes, state, arguments, against DALI 2.4's
dynamic-mode ``readers.COCO`` and an independent reading of the JSON."""

import json
import warnings

import numpy as np
import pytest

import ndd
pytest.importorskip("skimage")      # the dataset's photos and segmentation (the "data" extra)

from ndd.datasets.coco import build_coco_dataset  # noqa: E402


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    return build_coco_dataset(tmp_path_factory.mktemp("coco-front"))


def _args(coco, **kw):
    return dict(file_root=str(coco["file_root"]), annotations_file=str(coco["annotations_file"]),
                **kw)


def _np(batch):
    return [np.asarray(t) for t in batch]


def _epoch(reader, batch_size=2, **kw):
    """All samples of one epoch: a list (per output) of lists of numpy arrays."""
    cols = None
    for outs in reader.next_epoch(batch_size=batch_size, **kw):
        cols = cols or [[] for _ in outs]
        for c, b in zip(cols, outs):
            c.extend(_np(b))
    return cols


def test_outputs_and_their_kinds(coco):
    r = ndd.readers.COCO(**_args(coco))
    outs = next(iter(r.next_epoch(batch_size=2)))
    assert len(outs) == 3 and all(isinstance(o, ndd.Batch) for o in outs)
    assert [o.dtype for o in outs] == [ndd.uint8, ndd.float32, ndd.int32]
    r = ndd.readers.COCO(**_args(coco, polygon_masks=True, image_ids=True))
    outs = next(iter(r.next_epoch(batch_size=2)))
    assert [o.dtype for o in outs] == [ndd.uint8, ndd.float32, ndd.int32, ndd.int32,
                                       ndd.float32, ndd.int32]
    assert [a.tolist() for a in _np(outs[5])] == [[7], [15]]


def test_images_decode_to_the_json_sizes(coco):
    with open(coco["annotations_file"]) as f:
        sizes = {im["id"]: (im["height"], im["width"]) for im in json.load(f)["images"]}
    r = ndd.readers.COCO(**_args(coco, image_ids=True))
    for images, boxes, labels, ids in r.next_epoch(batch_size=3):
        decoded = ndd.decoders.image(images)
        for img, iid, b in zip(_np(decoded), _np(ids), _np(boxes)):
            h, w = sizes[int(iid[0])]
            assert img.shape == (h, w, 3)
            if len(b):      # every kept box lies inside its image
                assert (b[:, 0] >= 0).all() and (b[:, 0] + b[:, 2] <= w).all()
                assert (b[:, 1] >= 0).all() and (b[:, 1] + b[:, 3] <= h).all()


def test_sample_mode_and_direct_calls(coco):
    r = ndd.readers.COCO(**_args(coco, image_ids=True))
    ids = [int(np.asarray(s[3])[0]) for s in r.next_epoch()]
    assert ids == [7, 15, 42, 99, 1003]
    r = ndd.readers.COCO(**_args(coco, image_ids=True))
    assert [int(np.asarray(r()[3])[0]) for _ in range(6)] == [7, 15, 42, 99, 1003, 7]


def test_modes_give_identical_batches(coco):
    def run(**kw):
        r = ndd.readers.COCO(**_args(coco, ltrb=True, ratio=True, random_shuffle=True,
                                     seed=11, image_ids=True))
        out = []
        for epoch in range(2):
            for images, boxes, labels, ids in r.next_epoch(batch_size=2, **kw):
                decoded = ndd.decoders.image(images)
                out.append([_np(x) for x in (decoded, boxes * 2.0 + 1.0, labels, ids)])
        return out

    eager, compiled = run(), run(compile=True)
    assert len(eager) == len(compiled) == 6
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            assert all(np.array_equal(p, q) and p.dtype == q.dtype for p, q in zip(x, y))


def test_state_string_restores_the_next_batch(coco):
    args = _args(coco, random_shuffle=True, seed=5, image_ids=True)
    full = [int(i[0]) for i in _epoch(ndd.readers.COCO(**args), 1)[3]]
    r = ndd.readers.COCO(**args)
    it = r.next_epoch(batch_size=1)
    head = [int(np.asarray(next(it)[3])[0][0]) for _ in range(2)]
    state = r.get_state()
    assert isinstance(state, str) and state.startswith("ndd.readers.COCO/")
    it.close()
    fresh = ndd.readers.COCO(**args)
    fresh.set_state(state)
    assert head + [int(i[0]) for i in _epoch(fresh, 1)[3]] == full
    with pytest.raises(ValueError):
        ndd.readers.File(file_root=str(coco["root"])).set_state(state)


def test_shards_and_padding(coco):
    got = []
    for s in range(2):
        r = ndd.readers.COCO(**_args(coco, num_shards=2, shard_id=s, pad_last_batch=True,
                                     image_ids=True))
        assert r.get_metadata()["epoch_size_padded"] == 6
        got.append([int(i[0]) for i in _epoch(r, 2)[3]])
    # DALI's shard ranges [floor(i*N/k), floor((i+1)*N/k)), padded to ceil(N/k) = 3, then
    # the last batch padded to 2 by repeating the last sample
    assert got == [[7, 15, 15, 15], [42, 99, 1003, 1003]]


def test_arguments(coco):
    with pytest.warns(DeprecationWarning, match="save_img_ids"):
        r = ndd.readers.COCO(**_args(coco, save_img_ids=True))
    assert len(next(iter(r.next_epoch(batch_size=1)))) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ndd.readers.COCO(**_args(coco, ltrb=None, skip_cached_images=True))
    assert len(_epoch(r)[0]) == 5
    with pytest.raises(RuntimeError, match='preprocessed annotation files, "ltrb" is not '
                                           'supported'):
        ndd.readers.COCO(file_root=str(coco["file_root"]), preprocessed_annotations="/x",
                         ltrb=True)
    with pytest.warns(DeprecationWarning, match="masks"):
        legacy = ndd.readers.COCO(**_args(coco, masks=True))
    modern = ndd.readers.COCO(**_args(coco, polygon_masks=True))
    old_rows, new_rows = _epoch(legacy)[3], _epoch(modern)[3]
    assert [r.tolist() for r in old_rows] == [
        [[m, 2 * a, 2 * b] for m, a, b in r.tolist()] for r in new_rows]
    with pytest.raises(ValueError, match="exclude each other"):
        ndd.readers.COCO(**_args(coco, pixelwise_masks=True, polygon_masks=True))
    with pytest.raises(TypeError, match="unexpected argument.*file_list"):
        ndd.readers.COCO(**_args(coco, file_list="x"))
    with pytest.raises(ValueError, match="device"):
        ndd.readers.COCO(**_args(coco), device="gpu")
    with pytest.raises(ValueError, match="malformed annotations file"):
        bad = coco["root"] / "bad.json"
        bad.write_text(json.dumps({"images": [{"id": 1}], "categories": []}))
        ndd.readers.COCO(file_root=str(coco["file_root"]), annotations_file=str(bad))
    r = ndd.readers.COCO(**_args(coco, num_shards=9))
    with pytest.raises(RuntimeError, match="num_shards"):
        r.next_epoch(batch_size=1)


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(ratio=True, ltrb=True, polygon_masks=True),
                                dict(skip_empty=True, include_iscrowd=False, size_threshold=0.01,
                                     avoid_class_remapping=True),
                                dict(num_shards=2, shard_id=1, pad_last_batch=True),
                                dict(masks=True, ratio=True),
                                dict(pixelwise_masks=True, include_iscrowd=False)],
                         ids=["default", "ratio-ltrb-polygons", "filters", "shard-padded",
                              "legacy-masks", "pixelwise"])
def test_matches_dali_dynamic(coco, kw):
    dyn = pytest.importorskip("nvidia.dali.experimental.dynamic")
    kw = dict(kw, image_ids=True)
    # batches of 1: DALI's short last batch is filled from the next epoch, ndd's stays short
    # (docs/semantics.md, readers.File)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)      # `masks`
        want = _epoch(dyn.readers.COCO(**_args(coco, **kw)), 1)
        got = _epoch(ndd.readers.COCO(**_args(coco, **kw)), 1)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def _ssd_like_anchors():
    """A small grid of square and wide anchors, ``[l, t, r, b]`` relative (float32 exact)."""
    out = []
    for fy in range(4):
        for fx in range(4):
            cx, cy = (fx + 0.5) / 4, (fy + 0.5) / 4
            for w, h in ((0.25, 0.25), (0.5, 0.25), (0.6, 0.6)):
                out += [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
    return out


def test_detection_chain_is_identical_in_eager_and_compile_mode(coco):
    """COCO -> decode, boxes -> bb_flip -> bbox_paste -> box_encoder: the batches of both
    modes bit for bit (the box ops run inside the compiled graph)."""
    anchors = _ssd_like_anchors()

    def run(**kw):
        r = ndd.readers.COCO(**_args(coco, ltrb=True, ratio=True, random_shuffle=True, seed=2))
        out = []
        for _ in range(2):
            for images, boxes, labels in r.next_epoch(batch_size=2, **kw):
                decoded = ndd.decoders.image(images)
                flipped = ndd.bb_flip(boxes, ltrb=True, horizontal=1)
                pasted = ndd.bbox_paste(flipped, ratio=1.5, paste_x=0.2, ltrb=True)
                enc, lab = ndd.box_encoder(pasted, labels, anchors=anchors, criteria=0.4,
                                           offset=True, scale=300.0)
                out.append([_np(x) for x in (decoded, pasted, enc, lab)])
        return out

    eager, compiled = run(), run(compile=True)
    assert len(eager) == len(compiled) == 6
    for a, b in zip(eager, compiled):
        for x, y in zip(a, b):
            assert all(p.dtype == q.dtype and np.array_equal(p, q) for p, q in zip(x, y))
    # the encoding is that of the kernel on the same boxes (an anchor per output row)
    assert all(e.shape == (len(anchors) // 4, 4) for e in eager[0][2])


def test_preprocessed_annotations_through_the_reader(coco, tmp_path):
    meta = tmp_path / "meta"
    with pytest.warns(DeprecationWarning, match="dump_meta_files"):
        saver = ndd.readers.COCO(**_args(coco, ratio=True, image_ids=True,
                                         dump_meta_files=True,
                                         dump_meta_files_path=str(meta)))
    assert (meta / "original_ids.dat").is_file()
    with pytest.warns(DeprecationWarning, match="meta_files_path"):
        loader = ndd.readers.COCO(file_root=str(coco["file_root"]), meta_files_path=str(meta),
                                  image_ids=True, lazy_init=True)
    for a, b in zip(_epoch(saver), _epoch(loader)):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ValueError, match="save_preprocessed_annotations_dir"):
        ndd.readers.COCO(**_args(coco, save_preprocessed_annotations=True))


def test_state_in_compile_mode_restores_the_next_batch(coco):
    """A state taken inside a compiled epoch (batches read ahead are not counted) restores
    to the batch the loop body would have got next."""
    args = _args(coco, random_shuffle=True, seed=21, image_ids=True)

    def ids(outs):
        return [int(i[0]) for i in _np(outs[3])]

    full = []
    r = ndd.readers.COCO(**args)
    for epoch in range(2):
        for outs in r.next_epoch(batch_size=1, compile=True):
            full.append(ids((outs[0], outs[1], outs[2], outs[3] + 0)))
    r = ndd.readers.COCO(**args)
    it = r.next_epoch(batch_size=1, compile=True)
    head = []
    for outs in it:
        head.append(ids((outs[0], outs[1], outs[2], outs[3] + 0)))
        if len(head) == 3:
            state = r.get_state()
            break
    it.close()
    fresh = ndd.readers.COCO(**args)
    fresh.set_state(state)
    rest = []
    for epoch in range(2):
        for outs in fresh.next_epoch(batch_size=1, compile=True):
            rest.append(ids((outs[0], outs[1], outs[2], outs[3] + 0)))
    assert head + rest[:len(full) - 3] == full
