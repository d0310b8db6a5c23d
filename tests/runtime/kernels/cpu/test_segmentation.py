"""segmentation.select_masks / random_mask_pixel / random_object_bbox: independent references
(per-mask lists, a flood fill of face-connected pixels), the random ops' contracts and
reproducibility; DALI 2.4 oracle cases (exact where DALI is deterministic, the contract where
it is random)."""
from collections import deque

import numpy as np
import pytest

import ndd
from runtime.kernels.cpu.segmentation import random_mask_pixel, random_object_bbox, select_masks

POLYS = np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10], [1, 10, 13]], np.int32)
VERTS = np.arange(39, dtype=np.float32).reshape(13, 3)


def _select_reference(ids, polys, verts, reindex):
    by_mask = {}
    for mid, b, e in polys.tolist():
        by_mask.setdefault(mid, []).append(verts[b:e])
    out_p, out_v, n = [], [], 0
    for k, mid in enumerate(ids):
        for piece in by_mask[mid]:
            out_p.append([k if reindex else mid, n, n + len(piece)])
            out_v.extend(piece.tolist())
            n += len(piece)
    return out_p, out_v


@pytest.mark.parametrize("ids", [[1], [2, 0], [0, 1, 2], [1, 2]])
@pytest.mark.parametrize("reindex", [False, True])
def test_select_masks_matches_a_per_mask_reference(ids, reindex):
    p, v = select_masks(np.array(ids, np.int32), POLYS, VERTS, reindex_masks=reindex)
    want_p, want_v = _select_reference(ids, POLYS, VERTS, reindex)
    assert p.dtype == np.int32 and v.dtype == np.float32
    assert p.tolist() == want_p and v.tolist() == want_v


def test_select_masks_errors_and_batches():
    with pytest.raises(RuntimeError, match="mask_id 5 is not present"):
        select_masks(np.array([5], np.int32), POLYS, VERTS)
    with pytest.raises(RuntimeError, match="duplicated values. Got 0 repeated"):
        select_masks(np.array([0, 0], np.int32), POLYS, VERTS)
    with pytest.raises(RuntimeError, match="outside"):
        select_masks(np.array([0], np.int32), np.array([[0, 0, 20]], np.int32), VERTS)
    ids = ndd.batch([np.array([1], np.int32), np.array([2, 0], np.int32)])
    p, v = ndd.segmentation.select_masks(ids, ndd.batch([POLYS] * 2),
                                         ndd.batch([VERTS.astype(np.int32)] * 2),
                                         reindex_masks=True)
    assert np.asarray(p.tensors[1]).tolist() == [[0, 0, 3], [1, 3, 6]]
    assert np.asarray(v.tensors[0]).dtype == np.int32 and np.asarray(v.tensors[0]).shape == (7, 3)


# ------------------------------------------------------------------------ random_mask_pixel
MASK = np.zeros((20, 30), np.uint8)
MASK[3:5, 7:9] = 2
MASK[10, 20] = 1


@pytest.mark.parametrize("kw,allowed", [
    (dict(foreground=1), MASK > 0), (dict(foreground=1, value=2), MASK == 2),
    (dict(foreground=1, threshold=1.5), MASK > 1.5), (dict(foreground=0), MASK >= 0)])
def test_random_mask_pixel_picks_every_allowed_pixel_only(kw, allowed):
    seen = set()
    for seed in range(400 if kw["foreground"] else 60):
        c = random_mask_pixel(MASK, np.random.default_rng(seed), **kw)
        assert c.dtype == np.int64 and c.shape == (2,)
        assert allowed[tuple(c)]
        seen.add(tuple(c.tolist()))
    if kw["foreground"]:
        assert seen == {tuple(p) for p in np.argwhere(allowed).tolist()}


def test_random_mask_pixel_without_foreground_and_modes():
    empty = np.zeros((5, 6, 1), np.uint8)
    c = random_mask_pixel(empty, np.random.default_rng(0), foreground=1)
    assert c.shape == (3,) and (c < [5, 6, 1]).all()
    with pytest.raises(ValueError, match="mutually exclusive"):
        ndd.segmentation.random_mask_pixel(ndd.tensor(MASK), value=1, threshold=0.5)
    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            out = ndd.segmentation.random_mask_pixel(
                ndd.batch([MASK] * 5), foreground=ndd.batch([np.int32(k % 2) for k in range(5)]),
                rng=ndd.random.RNG(seed=4))
            res.append([np.asarray(t).tolist() for t in out.tensors])
    assert res[0] == res[1]
    assert all(MASK[tuple(c)] > 0 for c in res[0][1::2])


# ----------------------------------------------------------------------- random_object_bbox
def _flood_boxes(mask, label):
    """Boxes [start, end) of the 4-connected (face-connected) blobs of ``label``: BFS."""
    seen = np.zeros(mask.shape, bool)
    boxes = []
    for start in map(tuple, np.argwhere(mask == label)):
        if seen[start]:
            continue
        q, pts = deque([start]), []
        seen[start] = True
        while q:
            p = q.popleft()
            pts.append(p)
            for ax in range(mask.ndim):
                for d in (-1, 1):
                    n = list(p)
                    n[ax] += d
                    n = tuple(n)
                    if 0 <= n[ax] < mask.shape[ax] and not seen[n] and mask[n] == label:
                        seen[n] = True
                        q.append(n)
        pts = np.array(pts)
        boxes.append((tuple(pts.min(0)), tuple(pts.max(0) + 1)))
    return boxes


LABELS = np.zeros((10, 12), np.int32)
LABELS[1, 1] = 1
LABELS[2, 2] = 1            # diagonal: a separate blob
LABELS[5:8, 5:9] = 2
LABELS[0:2, 9:12] = 3
LABELS[9, 0:3] = 3


def _box(start, end):
    return tuple(start.tolist()), tuple(end.tolist())


def test_random_object_bbox_returns_a_blob_of_the_chosen_class():
    every = {c: _flood_boxes(LABELS, c) for c in (1, 2, 3)}
    assert len(every[1]) == 2 and len(every[3]) == 2
    seen = set()
    for seed in range(200):
        s, e, c = random_object_bbox(LABELS, np.random.default_rng(seed))
        assert _box(s, e) in every[c]
        seen.add((c, _box(s, e)))
    assert seen == {(c, b) for c, bs in every.items() for b in bs}


def test_random_object_bbox_filters_and_fallbacks():
    rng = np.random.default_rng
    s, e, c = random_object_bbox(LABELS, rng(0), threshold=[3, 3])
    assert (c, _box(s, e)) == (2, ((5, 5), (8, 9)))
    for seed in range(30):      # k_largest=1 of class 3: the 2x3 box, not the 1x3 one
        s, e, c = random_object_bbox(LABELS, rng(seed), classes=[3], k_largest=1)
        assert (c, _box(s, e)) == (3, ((0, 9), (2, 12)))
        s, e, c = random_object_bbox(LABELS, rng(seed), ignore_class=True, k_largest=1)
        assert (c, _box(s, e)) == (2, ((5, 5), (8, 9)))
        s, e, c = random_object_bbox(LABELS, rng(seed), classes=[1, 2], class_weights=[0, 1])
        assert c == 2
    whole = ((0, 0), (10, 12))
    s, e, c = random_object_bbox(LABELS, rng(0), foreground_prob=0.0)
    assert (c, _box(s, e)) == (0, whole)
    s, e, c = random_object_bbox(np.zeros((4, 5), np.uint8), rng(0))
    assert (c, _box(s, e)) == (0, ((0, 0), (4, 5)))
    s, e, c = random_object_bbox(LABELS, rng(0), threshold=[20, 20])
    assert (c, _box(s, e)) == (0, whole)
    s, e, c = random_object_bbox(LABELS, rng(0), classes=[0, 2])     # 0 is a class: bg -1
    assert c in (0, 2)
    counts = {c: 0 for c in (1, 2, 3)}
    for seed in range(600):
        counts[random_object_bbox(LABELS, rng(seed))[2]] += 1
    assert all(150 < n < 250 for n in counts.values())      # classes drawn uniformly


def test_random_object_bbox_outputs_by_format():
    m = ndd.batch([LABELS] * 4)
    a, s = ndd.segmentation.random_object_bbox(m, rng=ndd.random.RNG(seed=1))
    b, cls = ndd.segmentation.random_object_bbox(m, format="box", output_class=True,
                                                 rng=ndd.random.RNG(seed=1))
    st, en = ndd.segmentation.random_object_bbox(m, format="start_end",
                                                 rng=ndd.random.RNG(seed=1))
    for k in range(4):
        aa, ss, bb = (np.asarray(t.tensors[k]) for t in (a, s, b))
        assert aa.dtype == np.int32 and bb.tolist() == aa.tolist() + (aa + ss).tolist()
        assert np.asarray(st.tensors[k]).tolist() == aa.tolist()
        assert np.asarray(en.tensors[k]).tolist() == (aa + ss).tolist()
        assert np.asarray(cls.tensors[k]).shape == ()
    with pytest.raises(ValueError, match="ignore_class"):
        ndd.segmentation.random_object_bbox(m, ignore_class=True, output_class=True)
    m3 = np.zeros((4, 5, 6), np.uint8)
    m3[1:3, 2:4, 0:5] = 7
    b, c = ndd.segmentation.random_object_bbox(ndd.tensor(m3), format="box", output_class=True)
    assert np.asarray(b).tolist() == [1, 2, 0, 3, 4, 5] and int(np.asarray(c)) == 7


# ----------------------------------------------------------------------------- DALI oracle
def _dali():
    return pytest.importorskip("nvidia.dali.experimental.dynamic")


@pytest.mark.oracle
@pytest.mark.parametrize("ids,reindex", [([1], False), ([2, 0], True), ([2, 0], False),
                                         ([0, 1, 2], True)])
def test_select_masks_matches_dali(ids, reindex):
    dali = _dali()
    polys = POLYS[:3]           # one polygon per mask (DALI keeps only a mask's last one)
    out = [ndd.segmentation.select_masks(ndd.tensor(np.array(ids, np.int32)), ndd.tensor(polys),
                                         ndd.tensor(VERTS[:10]), reindex_masks=reindex),
           dali.segmentation.select_masks(dali.tensor(np.array(ids, np.int32)),
                                          dali.tensor(polys), dali.tensor(VERTS[:10]),
                                          reindex_masks=reindex)]
    for a, b in zip(*out):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(format="box", output_class=True),
                                dict(threshold=[3, 3], output_class=True),
                                dict(classes=[1, 3], output_class=True),
                                dict(ignore_class=True, format="start_end")])
def test_random_object_bbox_contract_as_dali(kw):
    """Both return, for every sample, a blob of the returned class (DALI's draws differ)."""
    dali = _dali()
    every = {c: _flood_boxes(LABELS, c) for c in (1, 2, 3)}
    for mod in (ndd, dali):
        outs = mod.segmentation.random_object_bbox(mod.batch([LABELS] * 8), **kw)
        cols = [[np.asarray(t) for t in o.tensors] for o in outs]
        for k in range(8):
            if kw.get("format") == "box":
                s, e = cols[0][k][:2], cols[0][k][2:]
            elif kw.get("format") == "start_end":
                s, e = cols[0][k], cols[1][k]
            else:
                s, e = cols[0][k], cols[0][k] + cols[1][k]
            assert cols[0][k].dtype == np.int32
            box = _box(s, e)
            if kw.get("output_class"):
                c = int(cols[-1][k])
                assert box in every[c]
                if "threshold" in kw:
                    assert c == 2
                if "classes" in kw:
                    assert c in kw["classes"]
            else:
                assert any(box in bs for bs in every.values())


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(foreground=1), dict(foreground=1, value=2),
                                dict(foreground=1, threshold=1.5)])
def test_random_mask_pixel_contract_as_dali(kw):
    dali = _dali()
    for mod in (ndd, dali):
        out = mod.segmentation.random_mask_pixel(mod.batch([MASK] * 8), **kw)
        for t in out.tensors:
            c = np.asarray(t)
            assert c.dtype == np.int64 and c.shape == (2,)
            v = MASK[tuple(c)]
            assert v == kw["value"] if "value" in kw else v > kw.get("threshold", 0)


def test_random_object_bbox_same_in_every_mode_and_after_an_rng_restore():
    def run(rng):
        out = ndd.segmentation.random_object_bbox(ndd.batch([LABELS] * 6), format="box",
                                                  output_class=True, rng=rng)
        return [[np.asarray(t).tolist() for t in o.tensors] for o in out]

    res = []
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu):
        with mode:
            res.append(run(ndd.random.RNG(seed=8)))
    assert res[0] == res[1] == res[2]
    rng = ndd.random.RNG(seed=3)
    run(rng)
    state = rng.get_state()
    want = run(rng)
    again = ndd.random.RNG(seed=0)
    again.set_state(state)
    assert run(again) == want
