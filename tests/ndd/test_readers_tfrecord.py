"""ndd.readers.TFRecord: a dataset built from the sample photos, TensorFlow's reference file,
and DALI 2.4's CPU readers.TFRecord as the oracle."""
import os

import numpy as np
import pytest

import ndd
from ndd.tools.cli import main as cli_main

tfr = ndd.tfrecord
REFERENCE = "/work/shared/peer/data/extra/db/tfrecord/train"   # written by TensorFlow


@pytest.fixture
def photo_records(tmp_path, photo_jpegs, photos):
    """Two TFRecord shards of the sample photos (each photo twice), with DALI index files."""
    examples = [{"image/encoded": jpeg, "image/class/label": [k % 3],
                 "image/shape": list(photos[k % 3].shape),
                 "bbox": np.array([0.1, 0.2, 0.5, 0.9, 0.3, 0.3, 0.6, 0.6]) * (k + 1),
                 "name": f"photo{k}"}
                for k, jpeg in enumerate(photo_jpegs * 2)]
    paths, idx = [], []
    for s, part in enumerate([examples[:4], examples[4:]]):
        p, ip = str(tmp_path / f"shard{s}.tfrecord"), str(tmp_path / f"shard{s}.idx")
        assert tfr.write_tfrecord(p, part, ip) == len(part)
        paths.append(p)
        idx.append(ip)
    return paths, idx, examples


FEATURES = {
    "image/encoded": lambda: tfr.FixedLenFeature((), tfr.string, ""),
    "image/class/label": lambda: tfr.FixedLenFeature([1], tfr.int64, -1),
    "image/shape": lambda: tfr.FixedLenFeature([3], tfr.int64, 0),
    "bbox": lambda: tfr.VarLenFeature([4], tfr.float32, 0.0),
    "name": lambda: tfr.FixedLenFeature([], tfr.string, ""),
}


def _features(mod, names=None):
    out = {}
    for k in names or FEATURES:
        f = FEATURES[k]()
        # the same description in DALI's module: rebuild it from ours
        if mod is not tfr:
            dt = {0: mod.int64, 1: mod.string, 2: mod.float32}[f.dtype]
            f = mod.VarLenFeature(list(f.shape), dt, f.default_value) if f.var_len else \
                mod.FixedLenFeature(list(f.shape), dt, f.default_value)
        out[k] = f
    return out


def test_values_of_built_dataset(photo_records, photo_jpegs, photos):
    paths, idx, examples = photo_records
    r = ndd.readers.TFRecord(path=paths, index_path=idx, features=_features(tfr))
    batches = list(r.next_epoch(batch_size=4))
    assert [len(b["bbox"]) for b in batches] == [4, 2]
    assert list(batches[0]) == list(FEATURES)     # DALI: the order of `features`
    k = 0
    for b in batches:
        for j in range(len(b["bbox"])):
            ex = examples[k]
            assert np.asarray(b["image/encoded"].tensors[j]).tobytes() == ex["image/encoded"]
            assert np.asarray(b["image/class/label"].tensors[j]).tolist() == [k % 3]
            assert np.asarray(b["image/shape"].tensors[j]).tolist() == list(photos[k % 3].shape)
            np.testing.assert_array_equal(np.asarray(b["bbox"].tensors[j]),
                                          ex["bbox"].astype(np.float32).reshape(2, 4))
            assert np.asarray(b["name"].tensors[j]).tobytes() == f"photo{k}".encode()
            k += 1
    assert k == len(examples)
    # the encoded photos decode to the photos' shapes
    img = ndd.decoders.image(batches[0]["image/encoded"])
    assert [tuple(t.shape) for t in img.tensors][:3] == [p.shape for p in photos]


def test_state_shards_and_calls(photo_records):
    paths, idx, _ = photo_records
    feats = _features(tfr, ["name"])
    r = ndd.readers.TFRecord(path=paths, index_path=idx, features=feats, random_shuffle=True,
                             seed=3)
    it = r.next_epoch(batch_size=2)
    first = next(it)
    state = r.get_state()
    assert state.startswith("ndd.readers.TFRecord/")
    rest = [np.asarray(t).tobytes() for b in it for t in b["name"].tensors]
    r2 = ndd.readers.TFRecord(path=paths, index_path=idx, features=feats, random_shuffle=True,
                              seed=3)
    r2.set_state(state)
    assert [np.asarray(t).tobytes() for b in r2.next_epoch(batch_size=2)
            for t in b["name"].tensors] == rest
    seen = sorted([np.asarray(t).tobytes() for t in first["name"].tensors] + rest)
    assert seen == sorted(f"photo{k}".encode() for k in range(6))
    # shards: 2 of 2 cover the dataset
    names = []
    for s in range(2):
        rs = ndd.readers.TFRecord(path=paths, index_path=idx, features=feats, num_shards=2,
                                  shard_id=s)
        names += [np.asarray(d["name"]).tobytes() for d in rs.next_epoch()]
    assert names == [f"photo{k}".encode() for k in range(6)]
    sample = ndd.readers.TFRecord(path=paths, index_path=idx, features=feats)()
    assert np.asarray(sample["name"]).tobytes() == b"photo0"


def test_compile_mode_hands_out_dicts(photo_records):
    paths, idx, examples = photo_records
    feats = _features(tfr, ["image/class/label", "bbox"])

    def run(compile):
        r = ndd.readers.TFRecord(path=paths, index_path=idx, features=feats)
        out = []
        for d in r.next_epoch(batch_size=4, compile=compile):
            assert list(d) == ["image/class/label", "bbox"]
            out.append(np.asarray(ndd.as_tensor(d["image/class/label"] * 3 + 1)))
        # compiled: the first batch was traced into a template the later ones replay
        assert (r.compile_template not in (None, False)) == compile
        return out
    eager, comp = run(False), run(True)
    assert len(eager) == len(comp) == 2
    for e, c in zip(eager, comp):
        np.testing.assert_array_equal(e, c)
    assert np.concatenate(comp).ravel().tolist() == [(k % 3) * 3 + 1 for k in range(6)]


def test_errors_name_file_and_offset(photo_records, tmp_path):
    paths, idx, _ = photo_records
    feats = _features(tfr, ["name"])
    # an index of the other shard: the record lengths do not match
    bad = ndd.readers.TFRecord(path=paths[0], index_path=idx[1], features=feats)
    with pytest.raises((RuntimeError, ValueError), match=r"shard0.tfrecord.*shard1.idx"):
        list(bad.next_epoch(batch_size=2))
    data = bytearray(open(paths[0], "rb").read())
    off = int(open(idx[0]).read().split()[2])       # record 1
    data[off + 40] ^= 0xFF
    open(paths[0], "wb").write(bytes(data))
    r = ndd.readers.TFRecord(path=paths, index_path=idx, features=feats)
    with pytest.raises(RuntimeError, match=rf"shard0.tfrecord.*offset {off}: corrupt record"):
        list(r.next_epoch(batch_size=2))
    with pytest.raises(RuntimeError, match="holds a bytes_list.*described as int64"):
        list(ndd.readers.TFRecord(path=paths[1:], index_path=idx[1:], features={
            "name": tfr.FixedLenFeature([1], tfr.int64, 0)}).next_epoch())
    with pytest.raises(ValueError, match="index_path"):
        ndd.readers.TFRecord(path=paths, features=feats)
    with pytest.raises(ValueError, match="cannot be read"):
        ndd.readers.TFRecord(path=paths, index_path=[idx[0], str(tmp_path / "no.idx")],
                             features=feats)
    with pytest.raises(TypeError, match="VarLenFeature takes"):
        tfr.VarLenFeature(tfr.int64)


@pytest.mark.skipif(not os.path.exists(REFERENCE), reason="peer data absent")
def test_reference_file():
    feats = {"image/encoded": tfr.FixedLenFeature((), tfr.string, ""),
             "image/class/label": tfr.FixedLenFeature([1], tfr.int64, -1)}
    r = ndd.readers.TFRecord(path=REFERENCE, index_path=REFERENCE + ".idx", features=feats)
    assert len(r) == 16
    out = list(r.next_epoch(batch_size=16))[0]
    sizes = [int(ln.split()[1]) for ln in open(REFERENCE + ".idx") if ln.strip()]
    for t, size in zip(out["image/encoded"].tensors, sizes):
        assert np.asarray(t)[:2].tolist() == [0xFF, 0xD8] and t.shape[0] < size


# ------------------------------------------------------------------ DALI 2.4 oracle
def _dali(**kw):
    dd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    return dd.readers.TFRecord(**kw)


def _compare(ours, theirs, batch_size):
    a = [{k: [np.asarray(t) for t in v] for k, v in b.items()}
         for b in ours.next_epoch(batch_size=batch_size)]
    b = [{k: [np.asarray(t) for t in v] for k, v in d.items()}
         for d in theirs.next_epoch(batch_size=batch_size)]
    assert len(a) == len(b) and a
    for x, y in zip(a, b):
        assert list(x) == list(y)
        for k in x:
            # ndd's last batch is short where DALI's goes on (docs/semantics.md)
            assert 0 <= len(y[k]) - len(x[k])
            for u, v in zip(x[k], y[k]):
                assert u.dtype == v.dtype and u.shape == v.shape, k
                np.testing.assert_array_equal(u, v)


@pytest.mark.oracle
def test_oracle_built_dataset(photo_records):
    dtf = pytest.importorskip("nvidia.dali.tfrecord")
    paths, idx, _ = photo_records
    _compare(ndd.readers.TFRecord(path=paths, index_path=idx, features=_features(tfr)),
             _dali(path=paths, index_path=idx, features=_features(dtf)), 3)


@pytest.mark.oracle
@pytest.mark.skipif(not os.path.exists(REFERENCE), reason="peer data absent")
@pytest.mark.parametrize("kw", [dict(), dict(num_shards=3, shard_id=1, pad_last_batch=True)])
def test_oracle_reference_file(kw):
    dtf = pytest.importorskip("nvidia.dali.tfrecord")

    def feats(m):
        return {"image/encoded": m.FixedLenFeature((), m.string, ""),
                "image/class/label": m.FixedLenFeature([1], m.int64, -1),
                "image/height": m.VarLenFeature([1], m.int64, -1),
                "image/width": m.FixedLenFeature([], m.int64, -1)}
    args = dict(path=[REFERENCE], index_path=[REFERENCE + ".idx"], **kw)
    _compare(ndd.readers.TFRecord(features=feats(tfr), **args),
             _dali(features=feats(dtf), **args), 4)


def test_tfrecord_index_command(photo_records, tmp_path, capsys):
    paths, idx, _ = photo_records
    out = str(tmp_path / "again.idx")
    assert cli_main(["tfrecord-index", paths[1], out]) == 0
    assert open(out).read() == open(idx[1]).read()      # the builder's own offsets
    assert "2 record(s)" in capsys.readouterr().err
    assert cli_main(["tfrecord-index", paths[1]]) == 2
    assert cli_main(["tfrecord-index", str(tmp_path / "none"), out]) == 1
    assert "error" in capsys.readouterr().err


@pytest.mark.oracle
def test_dali_feature_objects_are_read_as_stored(photo_records):
    dtf = pytest.importorskip("nvidia.dali.tfrecord")
    paths, idx, examples = photo_records
    r = ndd.readers.TFRecord(path=paths, index_path=idx, features={
        "image/encoded": dtf.FixedLenFeature((), dtf.string, ""),
        "image/shape": dtf.FixedLenFeature([3], dtf.int64, -1),
        "bbox": dtf.VarLenFeature(dtf.float32, 0.0),
        "absent": dtf.FixedLenFeature([1], dtf.int64, -1)})
    d = next(iter(r.next_epoch(batch_size=2)))
    assert np.asarray(d["image/encoded"].tensors[1]).tobytes() == examples[1]["image/encoded"]
    assert d["image/shape"].dtype == ndd.int64 and d["image/shape"].shape == [(3,), (3,)]
    np.testing.assert_array_equal(np.asarray(d["bbox"].tensors[0]),
                                  examples[0]["bbox"].astype(np.float32))
    assert d["absent"].shape == [(0,), (0,)]
