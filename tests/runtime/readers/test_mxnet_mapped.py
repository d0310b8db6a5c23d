"""runtime/readers/mxnet.py's batches from memory maps against its per-record pread path
(dont_use_mmap=True) and against what was written: one- and multi-part records, several
labels, shuffled batches across files, padding, and broken files (the same errors)."""
import re
import struct

import numpy as np
import pytest

from runtime.readers import mxnet as mx

MAGIC = struct.pack("<I", 0xCED7230A)


def _samples(rng, n, start=0):
    out = []
    for k in range(start, start + n):
        img = rng.integers(0, 256, int(rng.integers(0, 300)), np.uint8).tobytes()
        if k % 5 == 2:
            img = b"ab" + MAGIC + img + MAGIC[:2] + b"\0\0" + MAGIC   # several parts
        label = [k, -k / 4, 0.5] if k % 7 == 3 else k / 2
        out.append((img, label))
    return out


def _files(tmp_path, sizes, rng):
    paths, idx, samples = [], [], []
    for s, n in enumerate(sizes):
        part = _samples(rng, n, len(samples))
        p, ip = str(tmp_path / f"p{s}.rec"), str(tmp_path / f"p{s}.idx")
        mx.write_recordio(p, part, ip)
        paths.append(p)
        idx.append(ip)
        samples += part
    return paths, idx, samples


def _read(paths, idx, mmap, epochs=1, batch=4, **kw):
    core = mx.MXNetReaderCore(path=paths, index_path=idx, dont_use_mmap=not mmap, **kw)
    return [[list(b) for b in core.next_epoch(batch)] for _ in range(epochs)]


def _same(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_mapped_batches_equal_pread_and_what_was_written(tmp_path):
    rng = np.random.default_rng(1)
    paths, idx, samples = _files(tmp_path, [9, 3], rng)
    fast, slow = _read(paths, idx, True, epochs=2), _read(paths, idx, False, epochs=2)
    _same(fast, slow)
    got = [s for batch in fast[0] for s in zip(*batch)]
    assert len(got) == len(samples)
    for (img, lab), (want_img, want_lab) in zip(got, samples):
        assert img.dtype == np.uint8 and img.tobytes() == want_img and img.flags.writeable
        assert lab.dtype == np.float32
        assert lab.tolist() == np.atleast_1d(np.float32(want_lab)).tolist()


def test_shuffled_across_files_with_padding(tmp_path):
    rng = np.random.default_rng(2)
    paths, idx, _ = _files(tmp_path, [4, 5, 2], rng)
    kw = dict(random_shuffle=True, seed=5, num_shards=3, shard_id=2, pad_last_batch=True)
    _same(_read(paths, idx, True, epochs=3, **kw), _read(paths, idx, False, epochs=3, **kw))


def _error(paths, idx, mmap, **kw):
    core = mx.MXNetReaderCore(path=paths, index_path=idx, dont_use_mmap=not mmap, **kw)
    with pytest.raises(RuntimeError) as info:
        for _ in core.next_epoch(4):
            pass
    return str(info.value)


def test_broken_files_give_the_same_errors(tmp_path):
    rng = np.random.default_rng(3)
    paths, idx, _ = _files(tmp_path, [6], rng)
    good = open(paths[0], "rb").read()
    offs = [int(line.split()[1]) for line in open(idx[0])]
    cases = [(offs[4], b"\0\0\0\0", "bad magic"),            # the index no longer matches
             (offs[3] + 4, struct.pack("<I", 1 << 29 | 10), "truncated record|continuation|bad magic"),
             (offs[1] + 4, struct.pack("<I", 10**6), "truncated record"),
             (offs[2] + 8, struct.pack("<I", 10**5), "header announces")]
    for at, patch, what in cases:
        data = bytearray(good)
        data[at:at + len(patch)] = patch
        open(paths[0], "wb").write(bytes(data))
        msgs = [_error(paths, idx, mmap) for mmap in (True, False)]
        assert msgs[0] == msgs[1], msgs
        assert "p0.rec" in msgs[0] and re.search(what, msgs[0]), msgs[0]
    open(paths[0], "wb").write(good[:offs[5] + 20])       # cut inside the last record
    msgs = [_error(paths, idx, mmap) for mmap in (True, False)]
    assert msgs[0] == msgs[1] and "truncated record" in msgs[0]


def test_a_file_cut_short_after_listing(tmp_path):
    rng = np.random.default_rng(4)
    paths, idx, _ = _files(tmp_path, [6], rng)
    core = mx.MXNetReaderCore(path=paths, index_path=idx)
    assert sum(len(b[0]) for b in core.next_epoch(4)) == 6
    data = open(paths[0], "rb").read()
    open(paths[0], "wb").write(data[:len(data) // 2])
    with pytest.raises(RuntimeError, match=r"p0.rec.*truncated record"):
        for _ in core.next_epoch(4):
            pass


def test_one_part_one_label_records_skip_the_pread_path(tmp_path, monkeypatch):
    paths = [str(tmp_path / "a.rec")]
    idx = [str(tmp_path / "a.idx")]
    mx.write_recordio(paths[0], [(bytes([k]) * (k + 1), float(k)) for k in range(7)], idx[0])

    def no(*args, **kw):
        raise AssertionError("the pread path was used")
    monkeypatch.setattr(mx, "_read_one", no)
    got = [(i.tobytes(), float(lab[0])) for b in _read(paths, idx, True)[0]
           for i, lab in zip(*b)]
    assert got == [(bytes([k]) * (k + 1), float(k)) for k in range(7)]


def test_usual_batches_equal_the_checked_batch_path(tmp_path, monkeypatch):
    # one-part one-label records (labels with odd bits: a NaN payload, -0.0, a subnormal)
    paths, idx = [str(tmp_path / "u.rec")], [str(tmp_path / "u.idx")]
    odd = struct.unpack("<f", struct.pack("<I", 0x7FA00001))[0]
    labels = [odd, -0.0, 1e-45, 3.0, -7.5, 2.0 ** 100, 0.0]
    rng = np.random.default_rng(6)
    mx.write_recordio(paths[0], [(rng.integers(0, 256, int(rng.integers(0, 90)),
                                               np.uint8).tobytes(), lab) for lab in labels],
                      idx[0])
    calls = []
    real = mx._usual_batch
    monkeypatch.setattr(mx, "_usual_batch", lambda *a: calls.append(1) or real(*a))
    usual = _read(paths, idx, True, epochs=2, batch=3)
    assert calls
    monkeypatch.setattr(mx, "_usual_batch", lambda *a: None)
    _same(usual, _read(paths, idx, True, epochs=2, batch=3))
    _same(usual, _read(paths, idx, False, epochs=2, batch=3))
