"""runtime/readers/webdataset.py's components from memory maps against the pread path
(dont_use_mmap=True) and against the bytes written: dtypes, missing components, shuffled
batches over several archives, an index that does not match its archive, archives cut
short after listing (the same errors, no crash)."""
import io
import tarfile

import numpy as np
import pytest

from runtime.readers.webdataset import WebdatasetReaderCore, scan_tar


def _tar(path, members):
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))


def _archives(tmp_path, sizes, rng):
    paths, written = [], []
    for a, n in enumerate(sizes):
        members = []
        for k in range(n):
            key = f"a{a}/{k:04d}"
            img = rng.integers(0, 256, int(rng.integers(0, 2000)), np.uint8).tobytes()
            members.append((f"{key}.jpg", img))
            if k % 3 != 1:                          # some samples without a .cls
                members.append((f"{key}.cls", np.int32(k * 10 + a).tobytes()))
            members.append((f"{key}.f64", rng.normal(size=k % 4).tobytes()))
            written.append((img, np.int32(k * 10 + a).tobytes() if k % 3 != 1 else b""))
        p = str(tmp_path / f"w{a}.tar")
        _tar(p, members)
        paths.append(p)
    return paths, written


def _read(paths, mmap, epochs=1, **kw):
    core = WebdatasetReaderCore(paths=paths, ext=["jpg", "cls", "f64"],
                                dtypes=["uint8", "int32", "float64"],
                                dont_use_mmap=not mmap, **kw)
    return [[list(b) for b in core.next_epoch(4)] for _ in range(epochs)]


def _same(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_mapped_equals_pread_and_what_was_written(tmp_path):
    rng = np.random.default_rng(1)
    paths, written = _archives(tmp_path, [7, 3], rng)
    fast, slow = _read(paths, True, epochs=2), _read(paths, False, epochs=2)
    _same(fast, slow)
    got = [s for b in fast[0] for s in zip(*b)]
    assert [(i.tobytes(), c.tobytes()) for i, c, _ in got] == written
    assert all(f.dtype == np.float64 and f.flags.writeable for _, _, f in got)
    assert [c.dtype for _, c, _ in got] == [np.int32] * len(written)


def test_shuffled_over_archives_with_padding(tmp_path):
    rng = np.random.default_rng(2)
    paths, _ = _archives(tmp_path, [4, 5, 3], rng)
    kw = dict(random_shuffle=True, seed=2, num_shards=2, shard_id=1, pad_last_batch=True)
    _same(_read(paths, True, epochs=3, **kw), _read(paths, False, epochs=3, **kw))


def test_archive_cut_short_after_listing(tmp_path):
    rng = np.random.default_rng(3)
    paths, _ = _archives(tmp_path, [6], rng)
    cores = [WebdatasetReaderCore(paths=paths, ext=["jpg", "cls"], dont_use_mmap=not m)
             for m in (True, False)]
    data = open(paths[0], "rb").read()
    open(paths[0], "wb").write(data[:len(data) // 2])
    msgs = []
    for core in cores:
        with pytest.raises(RuntimeError) as info:
            for _ in core.next_epoch(4):
                pass
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and "w0.tar" in msgs[0] and "short read" in msgs[0]


def test_index_of_another_archive(tmp_path):
    rng = np.random.default_rng(4)
    paths, _ = _archives(tmp_path, [6, 2], rng)
    # a DALI v1.2 index of the first archive, given for the second (shorter) one
    ip = str(tmp_path / "w0.idx")
    listed = scan_tar(paths[0])
    with open(ip, "w") as f:
        f.write(f"v1.2 {len(listed)}\n")
        for key, comps in listed:
            f.write(" ".join(f"{e} {o} {n} {key}.{e}" for e, o, n in comps) + "\n")
    with pytest.raises(ValueError, match=r"w0.idx' line \d+ does not match .*w1.tar"):
        WebdatasetReaderCore(paths=paths[1:], index_paths=[ip], ext=["jpg", "cls"])
    # and for its own archive, the same samples as the listing
    a = WebdatasetReaderCore(paths=paths[:1], index_paths=[ip], ext=["jpg", "cls"])
    b = WebdatasetReaderCore(paths=paths[:1], ext=["jpg", "cls"])
    _same([list(x) for x in a.next_epoch(4)], [list(x) for x in b.next_epoch(4)])
