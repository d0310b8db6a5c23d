"""runtime/readers/tfrecord_fast.py: the batch loader on memory maps gives the arrays and the
errors of the per-record path (dont_use_mmap=True: pread + google.protobuf), and values
that match what was written (independently of both)."""
import os
import struct

import numpy as np
import pytest

from runtime.readers import tfrecord_fast
from runtime.readers.tfrecord import encode_example, frame_record, write_tfrecord
from runtime.readers.tfrecord_reader import Feature, TFRecordReaderCore

I64, STR, F32 = 0, 1, 2


def _examples(rng, n, start=0):
    out = []
    for k in range(start, start + n):
        ex = {"img": rng.integers(0, 256, int(rng.integers(0, 500)), np.uint8).tobytes(),
              "lab": [k],
              "box": rng.normal(size=4 * int(rng.integers(0, 4))).astype(np.float32),
              "shape": rng.integers(-5, 2**40, 3).tolist()}
        if k % 4 == 3:
            del ex["box"]                       # a VarLenFeature missing: empty
        out.append(ex)
    return out


FEATS = {"img": Feature(False, (), STR, ""), "lab": Feature(False, (1,), I64, -1),
         "box": Feature(True, (4,), F32, 0.0), "shape": Feature(False, (3,), I64, 0),
         "stored": Feature.as_stored(), "lab_raw": Feature.as_stored()}


def _shards(tmp_path, sizes, rng):
    paths, idx, examples = [], [], []
    for s, n in enumerate(sizes):
        ex = _examples(rng, n, len(examples))
        for e in ex:
            e["lab_raw"] = e["lab"]
        p, ip = str(tmp_path / f"s{s}.tfrecord"), str(tmp_path / f"s{s}.idx")
        write_tfrecord(p, ex, ip)
        paths.append(p)
        idx.append(ip)
        examples += ex
    return paths, idx, examples


def _epochs(paths, idx, feats, epochs=1, **kw):
    out = {}
    for mmap in (True, False):
        core = TFRecordReaderCore(path=paths, index_path=idx, features=feats,
                                  dont_use_mmap=not mmap, **kw)
        out[mmap] = [[list(b) for b in core.next_epoch(5)] for _ in range(epochs)]
    return out[True], out[False]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            _same(x, y)
        else:
            assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
            assert x.tobytes() == y.tobytes()


def test_same_arrays_as_per_record_path_and_as_written(tmp_path):
    rng = np.random.default_rng(5)
    paths, idx, examples = _shards(tmp_path, [7, 1, 6], rng)
    fast, slow = _epochs(paths, idx, FEATS, epochs=2)
    _same(fast, slow)
    got = [s for batch in fast[0] for s in zip(*batch)]
    assert len(got) == len(examples)
    for (img, lab, box, shape, stored, lab_raw), ex in zip(got, examples):
        assert img.dtype == np.uint8 and img.tobytes() == ex["img"] and img.flags.writeable
        assert lab.tolist() == ex["lab"] and lab.dtype == np.int64
        want = np.asarray(ex.get("box", np.zeros(0)), np.float32).reshape(-1, 4)
        assert box.dtype == np.float32 and box.tobytes() == want.tobytes()
        assert box.shape == want.shape
        assert shape.tolist() == ex["shape"]
        assert stored.dtype == np.uint8 and stored.size == 0      # not in the records
        assert lab_raw.tolist() == ex["lab"]


def test_clean_records_take_the_compiled_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(11)
    paths, idx, examples = _shards(tmp_path, [5, 4], rng)
    core = TFRecordReaderCore(path=paths, index_path=idx, features=FEATS, random_shuffle=True,
                              seed=2)

    def no(*args, **kw):
        raise AssertionError(f"the per-record path was used: {args[:2]}")
    monkeypatch.setattr(tfrecord_fast, "read_one", no)
    monkeypatch.setattr(tfrecord_fast, "_rows", no)     # features missing in some: columns
    for _ in range(2):      # the data CRCs checked in the first epoch only
        labs = [int(v[0]) for b in core.next_epoch(4) for v in b[1]]
        assert sorted(labs) == list(range(9))
    assert core._verified.all()


def test_shuffled_batches_across_files_and_padding(tmp_path):
    rng = np.random.default_rng(6)
    paths, idx, examples = _shards(tmp_path, [5, 4, 3], rng)
    kw = dict(random_shuffle=True, seed=3, num_shards=5, shard_id=4, pad_last_batch=True)
    fast, slow = _epochs(paths, idx, FEATS, epochs=3, **kw)
    _same(fast, slow)
    labs = [int(v[0]) for e in fast for b in e for v in b[1]]
    assert len(labs) == 3 * 5 and set(labs) <= set(range(12))


def test_scalar_and_fixed_shapes(tmp_path):
    p, ip = str(tmp_path / "a.tfrecord"), str(tmp_path / "a.idx")
    write_tfrecord(p, [{"x": [float(k)], "m": list(range(6 * k, 6 * k + 6)), "e": b""}
                       for k in range(4)], ip)
    feats = {"x": Feature(False, (), F32), "m": Feature(False, (2, 3), I64),
             "e": Feature(False, (), STR, "")}
    fast, slow = _epochs([p], [ip], feats)
    _same(fast, slow)
    x, m, e = fast[0][0]
    assert [v.shape for v in x] == [()] * 4 and [float(v) for v in x] == [0, 1, 2, 3]
    assert m[2].tolist() == [[12, 13, 14], [15, 16, 17]]
    assert all(v.size == 0 and v.dtype == np.uint8 for v in e)


def _error(paths, idx, feats, mmap, **kw):
    core = TFRecordReaderCore(path=paths, index_path=idx, features=feats,
                              dont_use_mmap=not mmap, **kw)
    with pytest.raises(RuntimeError) as info:
        for _ in core.next_epoch(4):
            pass
    return str(info.value)


@pytest.mark.parametrize("case", ["missing", "type", "count", "varlen_str"])
def test_feature_errors_are_those_of_the_per_record_path(tmp_path, case):
    p, ip = str(tmp_path / "a.tfrecord"), str(tmp_path / "a.idx")
    recs = [{"v": [1, 2]}, {"v": [3, 4]}, {"w": [1.5]}, {"v": [1]}]
    write_tfrecord(p, recs, ip)
    feats = {"missing": {"v": Feature(False, (2,), I64), "w": Feature(False, (1,), F32)},
             "type": {"w": Feature(False, (1,), I64, 0)},
             "count": {"v": Feature(False, (2,), I64, 0)},
             "varlen_str": {"v": Feature(True, None, STR)}}[case]
    fast = _error([p], [ip], feats, True)
    assert fast == _error([p], [ip], feats, False)
    assert "a.tfrecord" in fast and "offset" in fast


def test_corrupt_and_mismatched_records(tmp_path):
    rng = np.random.default_rng(7)
    paths, idx, _ = _shards(tmp_path, [6], rng)
    data = bytearray(open(paths[0], "rb").read())
    offs = [int(line.split()[0]) for line in open(idx[0])]
    good = bytes(data)
    for where, what in [(offs[3] + 20, "corrupt record: the CRC of the data"),
                        (offs[2] + 9, "the CRC of the length"),
                        (offs[4] + 2, "index entry says")]:
        data = bytearray(good)
        data[where] ^= 0x40
        open(paths[0], "wb").write(bytes(data))
        msgs = [_error(paths, idx, FEATS, mmap) for mmap in (True, False)]
        assert msgs[0] == msgs[1] and what in msgs[0], msgs
    # a record whose protobuf is malformed, its CRCs right (rewritten in place)
    bad_msg = encode_example({"img": b"abc"})[:-1]
    rec = frame_record(bad_msg)
    open(paths[0], "wb").write(rec)
    open(idx[0], "w").write(f"0 {len(rec)}\n")
    msgs = [_error(paths, idx, {"img": Feature(False, (), STR, "")}, mmap)
            for mmap in (True, False)]
    assert msgs[0] == msgs[1] and "not a valid tf.train.Example" in msgs[0]


def test_index_of_another_file_and_a_truncated_file(tmp_path):
    rng = np.random.default_rng(8)
    paths, idx, _ = _shards(tmp_path, [6, 6], rng)
    msgs = [_error(paths[:1], idx[1:], FEATS, mmap) for mmap in (True, False)]
    assert msgs[0] == msgs[1] and "s0.tfrecord" in msgs[0] and "s1.idx" in msgs[0]
    core = TFRecordReaderCore(path=paths[:1], index_path=idx[:1], features=FEATS)
    data = open(paths[0], "rb").read()
    open(paths[0], "wb").write(data[:len(data) // 2])   # shrinks after the listing
    with pytest.raises(RuntimeError, match=r"s0.tfrecord.*truncated|s0.tfrecord.*index entry"):
        for _ in core.next_epoch(4):
            pass


def test_a_record_with_a_bad_crc_is_reported_in_batch_order(tmp_path):
    # two bad records in one batch, from two files: the first in batch order is reported
    rng = np.random.default_rng(9)
    paths, idx, _ = _shards(tmp_path, [4, 4], rng)
    for p in paths:
        data = bytearray(open(p, "rb").read())
        data[-6] ^= 1          # the last record's data
        open(p, "wb").write(bytes(data))
    msgs = [_error(paths, idx, FEATS, mmap, random_shuffle=True, seed=1)
            for mmap in (True, False)]
    assert msgs[0] == msgs[1]


def test_empty_example_and_unknown_fields_take_the_general_path(tmp_path):
    p, ip = str(tmp_path / "a.tfrecord"), str(tmp_path / "a.idx")
    unknown = encode_example({"v": [5]}) + bytes([7 << 3 | 0, 1])   # + field 7 (varint)
    recs = [frame_record(b""), frame_record(unknown), frame_record(encode_example({"v": [6]}))]
    open(p, "wb").write(b"".join(recs))
    with open(ip, "w") as f:
        off = 0
        for r in recs:
            f.write(f"{off} {len(r)}\n")
            off += len(r)
    feats = {"v": Feature(False, (1,), I64, -1)}
    fast, slow = _epochs([p], [ip], feats)
    _same(fast, slow)
    assert [int(v[0]) for v in fast[0][0][0]] == [-1, 5, 6]
    assert struct.unpack("<Q", recs[0][:8])[0] == 0


def test_crc_checked_again_after_the_file_changed(tmp_path):
    rng = np.random.default_rng(10)
    paths, idx, _ = _shards(tmp_path, [4], rng)
    core = TFRecordReaderCore(path=paths, index_path=idx, features=FEATS)
    first = [list(b) for b in core.next_epoch(4)]
    data = bytearray(open(paths[0], "rb").read())
    data[-6] ^= 1                                  # the last record's data
    open(paths[0], "wb").write(bytes(data))
    st = os.stat(paths[0])
    os.utime(paths[0], ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(RuntimeError, match="s0.tfrecord.*corrupt record: the CRC of the data"):
        for _ in core.next_epoch(4):
            pass
    assert len(first[0][0]) == 4
