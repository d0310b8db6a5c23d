"""Shards across epoch boundaries for the memory-mapped readers (TFRecord, MXNet,
Webdataset) against DALI 2.4: with stick_to_shard=False the shard moves every epoch, with
pad_last_batch the last batch repeats the shard's last sample; three epochs each, batches
that do not divide the shard."""
import io
import tarfile

import numpy as np
import pytest

import ndd
from runtime.readers.mxnet import write_recordio

tfr = ndd.tfrecord

CASES = [dict(num_shards=3, shard_id=1, pad_last_batch=True),
         dict(num_shards=2, shard_id=1, pad_last_batch=True, stick_to_shard=True),
         dict(num_shards=4, shard_id=3, pad_last_batch=True)]


def _epochs(reader, epochs, batch_size, outputs):
    out = []
    for _ in range(epochs):
        samples = []
        for b in reader.next_epoch(batch_size=batch_size):
            parts = [b[k] for k in outputs]
            samples += [tuple(np.asarray(t).tobytes() for t in s) for s in zip(*parts)]
        out.append(samples)
    return out


def _same(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        # ndd's last batch is short where DALI's goes on (docs/semantics.md)
        assert a and a == b[:len(a)]


@pytest.fixture
def data(tmp_path, photo_jpegs):
    blobs = [j + bytes([k]) for k, j in enumerate(photo_jpegs * 3)]      # 9 samples
    tf, ti = [], []
    for s, part in enumerate([blobs[:5], blobs[5:]]):
        p, ip = str(tmp_path / f"s{s}.tfrecord"), str(tmp_path / f"s{s}.idx")
        tfr.write_tfrecord(p, [{"img": b, "lab": [k]} for k, b in enumerate(part)], ip)
        tf.append(p)
        ti.append(ip)
    rec, rec_idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    write_recordio(rec, [(b, float(k)) for k, b in enumerate(blobs)], rec_idx)
    tar = str(tmp_path / "d.tar")
    with tarfile.open(tar, "w") as t:
        for k, b in enumerate(blobs):
            for ext, payload in (("jpg", b), ("cls", np.int32(k).tobytes())):
                info = tarfile.TarInfo(f"{k:04d}.{ext}")
                info.size = len(payload)
                t.addfile(info, io.BytesIO(payload))
    return dict(tfrecord=(tf, ti), mxnet=(rec, rec_idx), webdataset=tar)


@pytest.mark.oracle
@pytest.mark.parametrize("kw", CASES)
def test_tfrecord_epochs_match_dali(data, kw):
    dd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    dtf = pytest.importorskip("nvidia.dali.tfrecord")
    paths, idx = data["tfrecord"]

    def feats(m):
        return {"img": m.FixedLenFeature((), m.string, ""),
                "lab": m.FixedLenFeature([1], m.int64, -1)}
    ours = ndd.readers.TFRecord(path=paths, index_path=idx, features=feats(tfr), **kw)
    theirs = dd.readers.TFRecord(path=paths, index_path=idx, features=feats(dtf), **kw)
    _same(_epochs(ours, 3, 2, ["img", "lab"]), _epochs(theirs, 3, 2, ["img", "lab"]))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", CASES)
def test_mxnet_epochs_match_dali(data, kw):
    dd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    rec, idx = data["mxnet"]
    ours = ndd.readers.MXNet(path=rec, index_path=idx, **kw)
    theirs = dd.readers.MXNet(path=rec, index_path=idx, **kw)
    _same(_epochs(ours, 3, 2, [0, 1]), _epochs(theirs, 3, 2, [0, 1]))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", CASES)
def test_webdataset_epochs_match_dali(data, kw):
    dd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    tar = data["webdataset"]
    ours = ndd.readers.Webdataset(paths=tar, ext=["jpg", "cls"], **kw)
    theirs = dd.readers.Webdataset(paths=tar, ext=["jpg", "cls"], **kw)
    _same(_epochs(ours, 3, 2, [0, 1]), _epochs(theirs, 3, 2, [0, 1]))
