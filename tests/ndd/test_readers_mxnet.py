"""ndd.readers.MXNet: RecordIO files built from the sample photos (runtime.readers.mxnet's
writer, its layout checked in tests/runtime/readers/test_mxnet.py), and DALI 2.4's CPU
readers.MXNet as the oracle."""
import os
import struct

import numpy as np
import pytest

import ndd
from runtime.readers.mxnet import write_recordio

MAGIC = struct.pack("<I", 0xCED7230A)


def _samples(photo_jpegs):
    """(image bytes, label) of each photo twice: scalar labels, label vectors, and one image
    holding the magic word (a multi-part record)."""
    out = []
    for k, jpeg in enumerate(photo_jpegs * 2):
        label = float(k % 3) if k % 2 == 0 else [k, 0.5 * k, -1.0]
        out.append((jpeg, label))
    out.append((b"\xff\xd8" + b"\0\0" + MAGIC + b"body" + MAGIC + b"end", [7.0, 8.0]))
    return out


@pytest.fixture
def rec_files(tmp_path, photo_jpegs):
    samples = _samples(photo_jpegs)
    paths, idx = [], []
    for s, part in enumerate([samples[:4], samples[4:]]):
        p, ip = str(tmp_path / f"part{s}.rec"), str(tmp_path / f"part{s}.idx")
        assert write_recordio(p, part, ip) == len(part)
        paths.append(p)
        idx.append(ip)
    return paths, idx, samples


def _joint_index(paths, idx, out, reverse=False):
    """DALI's form: one index over the files' concatenation (offsets shifted by the sizes of
    the files before), lines optionally in reverse order."""
    lines, base, k = [], 0, 0
    for p, ip in zip(paths, idx):
        for line in open(ip).read().split("\n"):
            if line.strip():
                lines.append(f"{k}\t{int(line.split()[1]) + base}")
                k += 1
        base += os.path.getsize(p)
    if reverse:
        lines = lines[::-1]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return [str(out)]


def _expected_label(label):
    return np.atleast_1d(np.asarray(label, np.float32))


def _flat(reader, **kw):
    out = []
    for images, labels in reader.next_epoch(**kw):
        out += [(np.asarray(i).tobytes(), np.asarray(lab)) for i, lab in
                zip(images.tensors, labels.tensors)]
    return out


def test_values_of_built_dataset(rec_files, tmp_path):
    paths, idx, samples = rec_files
    r = ndd.readers.MXNet(path=paths, index_path=idx)
    batches = list(r.next_epoch(batch_size=4))
    assert [len(b[0]) for b in batches] == [4, 3]
    got = [(np.asarray(i), np.asarray(lab)) for im, la in batches
           for i, lab in zip(im.tensors, la.tensors)]
    assert len(got) == len(samples) == 7
    for (img, lab), (jpeg, label) in zip(got, samples):
        assert img.dtype == np.uint8 and img.ndim == 1 and img.tobytes() == jpeg
        want = _expected_label(label)
        assert lab.dtype == np.float32 and lab.shape == want.shape
        np.testing.assert_array_equal(lab, want)
    assert len(r) == 7
    img, lab = ndd.readers.MXNet(path=paths[1], index_path=idx[1])()
    assert np.asarray(img).tobytes() == samples[4][0]
    # DALI's form: one index over both files, lines in any order (read sorted by offset)
    joint = _joint_index(paths, idx, tmp_path / "joint.idx", reverse=True)
    assert [i for i, _ in _flat(ndd.readers.MXNet(path=paths, index_path=joint),
                                batch_size=3)] == [s[0] for s in samples]


def test_state_shards_and_calls(rec_files):
    paths, idx, samples = rec_files
    r = ndd.readers.MXNet(path=paths, index_path=idx, random_shuffle=True, seed=5)
    it = r.next_epoch(batch_size=2)
    first = next(it)
    state = r.get_state()
    assert state.startswith("ndd.readers.MXNet/")
    rest = [(np.asarray(i).tobytes(), np.asarray(lab).tolist()) for b in it
            for i, lab in zip(b[0].tensors, b[1].tensors)]
    r2 = ndd.readers.MXNet(path=paths, index_path=idx, random_shuffle=True, seed=5)
    r2.set_state(state)
    assert [(i, lab.tolist()) for i, lab in _flat(r2, batch_size=2)] == rest
    seen = sorted([np.asarray(i).tobytes() for i in first[0].tensors] + [i for i, _ in rest])
    assert seen == sorted(s[0] for s in samples)
    with pytest.raises(ValueError):
        ndd.readers.File(files=[paths[0]]).set_state(state)
    images = []
    for s in range(3):
        rs = ndd.readers.MXNet(path=paths, index_path=idx, num_shards=3, shard_id=s)
        images += [i for i, _ in _flat(rs, batch_size=2)]
    assert images == [s[0] for s in samples]


def test_compile_mode_equals_eager(rec_files):
    paths, idx, samples = rec_files
    # scalar-label records only: one label shape per batch
    p = paths[0].replace("part0", "scalars")
    ip = p[:-3] + "idx"
    write_recordio(p, [(s[0], float(k)) for k, s in enumerate(samples)], ip)

    def run(compile):
        r = ndd.readers.MXNet(path=p, index_path=ip)
        out = []
        for images, labels in r.next_epoch(batch_size=3, compile=compile):
            out.append(np.asarray(ndd.as_tensor(labels * 2 + 1)))
        assert (r.compile_template not in (None, False)) == compile
        return out
    eager, comp = run(False), run(True)
    assert len(eager) == len(comp) == 3
    for e, c in zip(eager, comp):
        np.testing.assert_array_equal(e, c)
    assert np.concatenate(comp).ravel().tolist() == [2 * k + 1 for k in range(7)]


def test_errors_name_file_and_offset(rec_files, tmp_path):
    paths, idx, _ = rec_files
    # the other file's index: its offsets fall inside this file's records
    bad = ndd.readers.MXNet(path=paths[0], index_path=idx[1])
    with pytest.raises(RuntimeError, match=r"part0.rec.*bad magic .* at offset \d+ .*index "
                                           r"does not match the file .*part1.idx"):
        list(bad.next_epoch(batch_size=2))
    # truncated: the last record cut short
    data = open(paths[0], "rb").read()
    last = int(open(idx[0]).read().split()[-1])
    cut = tmp_path / "cut.rec"
    cut.write_bytes(data[:last + 20])
    r = ndd.readers.MXNet(path=str(cut), index_path=idx[0])
    with pytest.raises(RuntimeError, match=rf"cut.rec'.*truncated record at offset {last}"):
        list(r.next_epoch(batch_size=4))
    with pytest.raises(ValueError, match="index_path"):
        ndd.readers.MXNet(path=paths)
    with pytest.raises(ValueError, match="one index .* or one per file"):
        ndd.readers.MXNet(path=paths * 2, index_path=idx)
    with pytest.raises(ValueError, match="cannot be read"):
        ndd.readers.MXNet(path=paths, index_path=[idx[0], str(tmp_path / "no.idx")])
    with pytest.raises(TypeError, match="unexpected argument.*features"):
        ndd.readers.MXNet(path=paths, index_path=idx, features={})


def _dali_flat(**kw):
    dd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    r = dd.readers.MXNet(**kw)
    out = []
    for images, labels in r.next_epoch(batch_size=3):
        out += [(np.asarray(i).tobytes(), np.asarray(lab)) for i, lab in
                zip(images, labels)]
    return out


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [dict(), dict(num_shards=2, shard_id=1),
                                dict(num_shards=3, shard_id=2, pad_last_batch=True)])
def test_oracle_built_dataset(rec_files, tmp_path, kw):
    paths, idx, _ = rec_files
    # DALI takes one index for all files; its line order does not matter
    joint = _joint_index(paths, idx, tmp_path / "joint.idx", reverse=bool(kw))
    ours = _flat(ndd.readers.MXNet(path=paths, index_path=joint, **kw), batch_size=3)
    if not kw:      # one index per file (ndd) reads as the joint one
        assert [i for i, _ in ours] == [i for i, _ in _flat(
            ndd.readers.MXNet(path=paths, index_path=idx), batch_size=3)]
    theirs = _dali_flat(path=paths, index_path=joint, **kw)
    # ndd's last batch is short where DALI's goes on (docs/semantics.md)
    assert ours and len(theirs) >= len(ours)
    for (a, la), (b, lb) in zip(ours, theirs):
        assert a == b
        assert la.dtype == lb.dtype and la.shape == lb.shape
        np.testing.assert_array_equal(la, lb)
