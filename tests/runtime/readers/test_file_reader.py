"""Tests of the File reader core (runtime/readers): listing, sharding, epochs, state, prefetch.

Every file holds its own name as bytes, so each yielded sample identifies itself.
"""

import gc
import json
import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from runtime.readers.file_index import DEFAULT_FILE_FILTERS, parse_file_list
from runtime.readers.file_reader import FileReaderCore, ShardCountError, dataset_fingerprint
from runtime.readers.sharding import ShardSpec, epoch_order, shard_range, split_batches


def _write(path, content=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write((content if content is not None else os.path.basename(path)).encode())


def _names(encoded):
    return [bytes(e).decode() for e in encoded]


@pytest.fixture
def tree(tmp_path):
    """Class tree with hidden entries, an upper-case suffix and a non-image file."""
    root = tmp_path / "tree"
    for cls in ("dog", "cat", "bird"):
        for i in range(2):
            _write(str(root / cls / f"{cls}{i}.jpg"))
    _write(str(root / "cat" / "UP.JPG"))
    _write(str(root / "cat" / "notes.txt"))
    _write(str(root / "cat" / ".DS_Store"))
    _write(str(root / "dog" / "._dog0.jpg"))
    _write(str(root / ".ipynb_checkpoints" / "x.jpg"))
    _write(str(root / "loose.jpg"))
    return str(root)


@pytest.fixture
def ten(tmp_path):
    """Ten files '0'..'9' listed with `files`."""
    paths = []
    for i in range(10):
        p = str(tmp_path / "ten" / f"{i}.jpg")
        _write(p, str(i))
        paths.append(p)
    return paths


def _epoch_batches(reader, bs):
    return ["".join(_names(e)) for e, _ in reader.next_epoch(batch_size=bs)]


# -- listing ----------------------------------------------------------------------------------
def test_class_tree_labels_order_and_hidden_entries(tree):
    r = FileReaderCore(file_root=tree)
    rel = [os.path.relpath(p, tree) for p in r.files]
    # classes sorted (bird, cat, dog); files sorted inside; 'UP.JPG' < 'cat0' (byte order);
    # hidden files/folders, non-matching files and files at the root are not listed
    assert rel == ["bird/bird0.jpg", "bird/bird1.jpg", "cat/UP.JPG", "cat/cat0.jpg",
                   "cat/cat1.jpg", "dog/dog0.jpg", "dog/dog1.jpg"]
    assert r.labels.tolist() == [0, 0, 1, 1, 1, 2, 2]
    assert r.labels.dtype == np.int32
    assert len(r) == 7 and r.epoch_size() == 7
    enc, lab = next(iter(r.next_epoch()))
    assert enc.dtype == np.uint8 and enc.shape == (len("bird0.jpg"),)
    assert bytes(enc) == b"bird0.jpg"
    assert lab.dtype == np.int32 and lab.shape == (1,) and lab[0] == 0


def test_filters_case_sensitivity_and_dir_filters(tree, tmp_path):
    assert "*.webp" in DEFAULT_FILE_FILTERS and "*.jpg" in DEFAULT_FILE_FILTERS
    r = FileReaderCore(file_root=tree, case_sensitive_filter=True)
    assert not any(p.endswith("UP.JPG") for p in r.files)
    r = FileReaderCore(file_root=tree, file_filters="*.txt")
    assert [os.path.basename(p) for p in r.files] == ["notes.txt"]
    assert r.labels.tolist() == [1]  # class index stays the folder's index
    r = FileReaderCore(file_root=tree, dir_filters=["d*", "c*"])
    assert r.labels.tolist() == [0, 0, 0, 1, 1]  # cat=0, dog=1 among the filtered folders


def test_empty_class_folder_keeps_its_index(tmp_path):
    os.makedirs(tmp_path / "a")
    _write(str(tmp_path / "b" / "x.png"))
    assert FileReaderCore(file_root=str(tmp_path)).labels.tolist() == [1]


def test_file_root_errors(tmp_path):
    _write(str(tmp_path / "flat" / "img.jpg"))
    with pytest.raises(ValueError, match=r"flat.*no class sub-folders"):
        FileReaderCore(file_root=str(tmp_path / "flat"))
    with pytest.raises(ValueError, match=r"nope.*does not exist"):
        FileReaderCore(file_root=str(tmp_path / "nope"))
    _write(str(tmp_path / "empty" / "cls" / "readme.md"))
    with pytest.raises(ValueError, match=r"empty.*no file .*matches file_filters"):
        FileReaderCore(file_root=str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="needs `file_root`, `file_list` or `files`"):
        FileReaderCore()


def test_file_list_parsing_and_relative_paths(tmp_path):
    _write(str(tmp_path / "d" / "a.jpg"))
    _write(str(tmp_path / "d" / "sp ace.jpg"))
    _write(str(tmp_path / "d" / "sub" / "s.jpg"))
    lst = tmp_path / "d" / "list.txt"
    lst.write_text("a.jpg 5\n\nsp ace.jpg\t7\n  sub/s.jpg   -3  \n")
    r = FileReaderCore(file_list=str(lst))
    assert _names([e for e, _ in r.next_epoch()]) == ["a.jpg", "sp ace.jpg", "s.jpg"]
    assert r.labels.tolist() == [5, 7, -3]
    # relative to file_root when given
    other = tmp_path / "other.txt"
    other.write_text("sub/s.jpg 1\n")
    r = FileReaderCore(file_list=str(other), file_root=str(tmp_path / "d"))
    assert r.files == (os.path.join(str(tmp_path / "d"), "sub/s.jpg"),)


@pytest.mark.parametrize("line", ["a.jpg", "a.jpg x", "a.jpg 1.5", "# comment",
                                  "a.jpg 99999999999"])
def test_file_list_bad_line(tmp_path, line):
    _write(str(tmp_path / "a.jpg"))
    lst = tmp_path / "bad.txt"
    lst.write_text(f"a.jpg 0\n{line}\n")
    with pytest.raises(ValueError) as err:
        FileReaderCore(file_list=str(lst))
    msg = str(err.value)
    assert "bad.txt" in msg and "line 2" in msg and repr(line) in msg


def test_file_list_missing_file_and_empty(tmp_path):
    _write(str(tmp_path / "a.jpg"))
    lst = tmp_path / "l.txt"
    lst.write_text("a.jpg 0\ngone.jpg 1\n")
    with pytest.raises(ValueError, match=r"sample 1 .*gone\.jpg.*does not exist"):
        FileReaderCore(file_list=str(lst))
    lst.write_text("\n\n")
    with pytest.raises(ValueError, match="has no entries"):
        FileReaderCore(file_list=str(lst))
    with pytest.raises(ValueError, match="cannot be read"):
        FileReaderCore(file_list=str(tmp_path / "none.txt"))
    with pytest.raises(ValueError, match="mutually exclusive"):
        FileReaderCore(file_list=str(lst), files=["a.jpg"])


def test_files_and_labels(ten, tmp_path):
    r = FileReaderCore(files=ten[:3])
    assert r.labels.tolist() == [0, 1, 2]
    r = FileReaderCore(files=["1.jpg", "2.jpg"], labels=[9, -4],
                       file_root=str(tmp_path / "ten"))
    assert [(bytes(e), int(l[0])) for e, l in r.next_epoch()] == [(b"1", 9), (b"2", -4)]
    assert r.source_info(1).endswith("2.jpg")
    with pytest.raises(ValueError, match="`labels` has 1 entries but `files` has 2"):
        FileReaderCore(files=ten[:2], labels=[1])
    with pytest.raises(ValueError, match="`files` is empty"):
        FileReaderCore(files=[])
    with pytest.raises(ValueError, match=r"nope\.jpg"):
        FileReaderCore(files=[ten[0], str(tmp_path / "nope.jpg")])
    with pytest.raises(TypeError, match="`labels` must contain integers"):
        FileReaderCore(files=ten[:1], labels=["a"])


def test_argument_errors(ten):
    with pytest.raises(ValueError, match=r"`shard_id` 3 is out of range for num_shards=3"):
        FileReaderCore(files=ten, shard_id=3, num_shards=3)
    with pytest.raises(ValueError, match="`num_shards` must be >= 1; got 0"):
        FileReaderCore(files=ten, num_shards=0)
    with pytest.raises(ValueError, match="fewer than num_shards=11"):
        FileReaderCore(files=ten, num_shards=11)
    with pytest.raises(TypeError, match="`random_shuffle` must be a bool"):
        FileReaderCore(files=ten, random_shuffle=1)


def test_deferred_shard_check(ten, tmp_path):
    """defer_shard_check: the listing is checked at construction, the shard count at the first
    use of the shards (the front end raises it when the first epoch starts, as DALI)."""
    core = FileReaderCore(files=ten, num_shards=11, defer_shard_check=True)
    for use in (core.epoch_size, lambda: len(core), lambda: core.next_epoch(2), core.get_state):
        with pytest.raises(ShardCountError, match="10 sample.*fewer than num_shards=11"):
            use()
    assert issubclass(ShardCountError, ValueError)
    with pytest.raises(ValueError, match=r"nope\.jpg"):     # the listing: still at once
        FileReaderCore(files=[ten[0], str(tmp_path / "nope.jpg")], num_shards=11,
                       defer_shard_check=True)
    ok = FileReaderCore(files=ten, num_shards=10, defer_shard_check=True)
    assert len(ok) == 1
    with pytest.raises(ValueError, match="shuffle_after_epoch"):
        FileReaderCore(files=ten, shuffle_after_epoch=True, random_shuffle=True)
    r = FileReaderCore(files=ten)
    with pytest.raises(ValueError, match="`batch_size` must be >= 1; got 0"):
        r.next_epoch(batch_size=0)


# -- sharding and batching --------------------------------------------------------------------
def test_shard_range_hand_computed():
    assert [shard_range(k, 3, 10) for k in range(3)] == [(0, 3), (3, 6), (6, 10)]
    assert [shard_range(k, 4, 7) for k in range(4)] == [(0, 1), (1, 3), (3, 5), (5, 7)]
    assert shard_range(0, 1, 5) == (0, 5)


def test_batches_sharding_padding_hand_computed(ten):
    assert _epoch_batches(FileReaderCore(files=ten), 4) == ["0123", "4567", "89"]
    r = FileReaderCore(files=ten, pad_last_batch=True)
    assert [_epoch_batches(r, 4) for _ in range(2)] == [["0123", "4567", "8999"]] * 2
    r = FileReaderCore(files=ten, num_shards=3, shard_id=1, stick_to_shard=True,
                       pad_last_batch=True)
    assert len(r) == 4 and r.num_batches(3) == 2
    assert _epoch_batches(r, 3) == ["345", "555"]
    assert r.get_metadata()["epoch_size_padded"] == 12
    r = FileReaderCore(files=ten, num_shards=3, shard_id=2, stick_to_shard=True)
    assert [_epoch_batches(r, 3) for _ in range(2)] == [["678", "9"]] * 2
    # without stick_to_shard the shard advances every epoch
    r = FileReaderCore(files=ten, num_shards=3, shard_id=0)
    assert [_epoch_batches(r, 3) for _ in range(4)] == [["012"], ["345"], ["678", "9"], ["012"]]
    r = FileReaderCore(files=ten[:7], num_shards=4, shard_id=0, stick_to_shard=True,
                       pad_last_batch=True)
    assert _epoch_batches(r, 2) == ["00"]


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 23), bs=st.integers(1, 7), shards=st.integers(1, 5),
       shard=st.integers(0, 4), pad=st.booleans(), stick=st.booleans(),
       shuffle=st.booleans(), after=st.booleans(), seed=st.integers(0, 2**32))
def test_epoch_coverage_property(n, bs, shards, shard, pad, stick, shuffle, after, seed):
    shards = min(shards, n)
    shard %= shards
    after = after and not (stick or shuffle)
    spec = ShardSpec(num_samples=n, num_shards=shards, shard_id=shard, stick_to_shard=stick,
                     pad_last_batch=pad, random_shuffle=shuffle, seed=seed,
                     shuffle_after_epoch=after, shuffle_after_epoch_seed=seed)
    per_shard = -(-n // shards)
    for epoch in range(3):
        k = shard if stick else (shard + epoch) % shards
        b, e = k * n // shards, (k + 1) * n // shards
        batches = split_batches(epoch_order(spec, epoch), bs, pad)
        flat = np.concatenate(batches).tolist()
        if after:  # a global permutation, then sharded: all shards together cover 0..n-1
            cover = set()
            for j in range(shards):
                s = ShardSpec(**{**spec.__dict__, "shard_id": j, "pad_last_batch": False,
                                 "stick_to_shard": True})
                cover |= set(epoch_order(s, epoch).tolist())
            assert cover == set(range(n))
        else:
            assert sorted(set(flat)) == list(range(b, e))
        unique = e - b
        assert len(set(flat)) == unique
        sizes = [len(x) for x in batches]
        assert all(s == bs for s in sizes[:-1])
        if pad:
            assert sizes[-1] == bs
            assert len(flat) == -(-per_shard // bs) * bs
            # everything after the first `unique` samples repeats the last real sample
            assert set(flat[unique:]) <= {flat[unique - 1]}
        else:
            assert len(flat) == unique and sorted(flat) == sorted(set(flat))
        if not shuffle and not after:
            assert flat[:unique] == list(range(b, e))


def test_shuffle_is_seeded_and_changes_every_epoch(ten):
    def orders(seed):
        r = FileReaderCore(files=ten, random_shuffle=True, seed=seed)
        return [_epoch_batches(r, 10)[0] for _ in range(3)]

    a, b = orders(7), orders(7)
    assert a == b
    assert len(set(a)) == 3  # each epoch differs
    assert all(sorted(x) == list("0123456789") for x in a)
    assert orders(8) != a
    r = FileReaderCore(files=ten, random_shuffle=True, seed=7, num_shards=2, shard_id=1,
                       stick_to_shard=True)
    assert all(sorted(_epoch_batches(r, 5)[0]) == list("56789") for _ in range(3))


# -- epoch rules ------------------------------------------------------------------------------
def test_break_then_next_epoch_errors_until_closed(ten):
    r = FileReaderCore(files=ten)
    for _ in r.next_epoch(batch_size=3):
        break
    with pytest.raises(RuntimeError, match=r"not fully consumed \(3 of 10.*close\(\)"):
        r.next_epoch(batch_size=3)
    r.close()  # ends the abandoned epoch 0
    it = r.next_epoch(batch_size=3)
    assert _names(next(it)[0]) == ["0", "1", "2"]
    it.close()
    assert _epoch_batches(r, 3) == ["012", "345", "678", "9"]
    assert r.get_state()["epoch"] == 3


def test_mode_and_batch_size_cannot_change(ten):
    r = FileReaderCore(files=ten)
    list(r.next_epoch(batch_size=4))
    with pytest.raises(ValueError, match="batch_size=4.*cannot change.*batch_size=5"):
        r.next_epoch(batch_size=5)
    with pytest.raises(RuntimeError, match="batch mode and cannot switch to sample mode"):
        r.next_epoch()
    r = FileReaderCore(files=ten)
    assert len(list(r.next_epoch())) == 10
    with pytest.raises(RuntimeError, match="sample mode and cannot switch to batch mode"):
        r.next_epoch(batch_size=2)


def test_last_batch_allows_next_epoch_without_stop_iteration(ten):
    r = FileReaderCore(files=ten)
    it = r.next_epoch(batch_size=5)
    next(it), next(it)
    assert _epoch_batches(r, 5) == ["01234", "56789"]


# -- state ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(random_shuffle=True, seed=3),
                                dict(num_shards=3, shard_id=2, pad_last_batch=True),
                                dict(shuffle_after_epoch=True, num_shards=2)])
def test_state_round_trip_continues_exactly(ten, kw):
    ref = FileReaderCore(files=ten, **kw)
    full = [_epoch_batches(ref, 3) for _ in range(3)]
    flat = [b for ep in full for b in ep]
    for consumed in (0, 2, len(full[0]), len(full[0]) + 1):
        r = FileReaderCore(files=ten, **kw)
        got, epochs = [], 0
        while len(got) < consumed:
            for enc, _ in r.next_epoch(batch_size=3):
                got.append("".join(_names(enc)))
                if len(got) == consumed:
                    break
            epochs += 1
        state = json.loads(json.dumps(r.get_state()))
        r2 = FileReaderCore(files=ten, **{**kw, "seed": 99} if "seed" in kw else kw)
        r2.set_state(state)
        rest = []
        while len(got) + len(rest) < len(flat):
            rest += _epoch_batches(r2, 3)
        assert got + rest == flat, (consumed, state)


def test_state_sample_mode_and_rules(ten):
    r = FileReaderCore(files=ten, random_shuffle=True, seed=5)
    it = r.next_epoch()
    first = [bytes(next(it)[0]) for _ in range(4)]
    state = r.get_state()
    rest = [bytes(e) for e, _ in it]
    r2 = FileReaderCore(files=ten, random_shuffle=True, seed=1)
    r2.set_state(state)
    assert [bytes(e) for e, _ in r2.next_epoch()] == rest
    assert sorted(first + rest) == sorted(str(i).encode() for i in range(10))
    with pytest.raises(RuntimeError, match="before the first next_epoch"):
        r2.set_state(state)
    r3 = FileReaderCore(files=ten, num_shards=2)
    with pytest.raises(ValueError, match=r"num_shards: state has 1, reader has 2"):
        r3.set_state(state)
    with pytest.raises(ValueError, match="not a File reader state"):
        r3.set_state({"epoch": 0})
    r4 = FileReaderCore(files=ten, random_shuffle=True, seed=5)
    r4.set_state(state)
    with pytest.raises(RuntimeError, match="sample mode"):
        r4.next_epoch(batch_size=2)


def test_state_names_the_dataset(ten, tmp_path):
    """``dataset`` is a fingerprint of the paths below their common folder, their order and
    labels: a moved copy matches, other names, order or labels do not; a state of the earlier
    format (no ``dataset``) is still accepted."""
    r = FileReaderCore(files=ten)
    it = r.next_epoch(batch_size=4)
    next(it)
    state = r.get_state()
    rest = ["".join(_names(e)) for e, _ in it]
    fp = state["dataset"]
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert dataset_fingerprint(ten, np.arange(10, dtype=np.int32)) == fp
    moved = [p.replace(os.sep + "ten" + os.sep, os.sep + "elsewhere" + os.sep) for p in ten]
    for src, dst in zip(ten, moved):
        _write(dst, open(src).read())
    relative = [os.path.relpath(p) for p in moved]
    for files in (moved, relative):
        r2 = FileReaderCore(files=files)
        r2.set_state(state)
        assert _epoch_batches(r2, 4) == rest
    for files, labels in ((ten[::-1], None), (ten, [0] * 10)):
        with pytest.raises(ValueError, match="different dataset: its file list"):
            FileReaderCore(files=files, labels=labels).set_state(state)
    other = [os.path.join(os.path.dirname(p), "x" + os.path.basename(p)) for p in ten]
    for p in other:
        _write(p)
    with pytest.raises(ValueError, match=f"different dataset.*{fp}"):
        FileReaderCore(files=other).set_state(state)
    earlier = {k: v for k, v in state.items() if k != "dataset"}
    r3 = FileReaderCore(files=other)
    r3.set_state(earlier)        # written before the fingerprint existed: not checked
    assert len(_epoch_batches(r3, 4)) == 2


# -- prefetch and read errors -----------------------------------------------------------------
def _prefetch_threads(name):
    return [t for t in threading.enumerate() if t.name == f"ndd-File reader '{name}'"]


def test_prefetch_thread_stops_on_close_and_gc(ten):
    r = FileReaderCore(files=ten, name="pf", prefetch_queue_depth=2)
    it = r.next_epoch(batch_size=1)
    next(it)
    assert _prefetch_threads("pf")
    it.close()
    assert not _prefetch_threads("pf")
    it = r.next_epoch(batch_size=1)
    next(it)
    del it
    gc.collect()
    assert not _prefetch_threads("pf")
    with pytest.raises(RuntimeError, match="not fully consumed"):
        r.next_epoch(batch_size=1)


def test_read_error_raised_in_consumer_with_path(ten):
    r = FileReaderCore(files=ten)
    os.remove(ten[5])
    it = r.next_epoch(batch_size=2)
    assert _names(next(it)[0]) == ["0", "1"]
    next(it)
    with pytest.raises(RuntimeError, match=r"cannot read .*5\.jpg"):
        next(it)
    _write(ten[5], "5")
    assert _epoch_batches(r, 2) == ["01", "23", "45", "67", "89"]  # the failed epoch ended


def test_read_file_whole_writable_and_exact(tmp_path):
    from runtime.readers.file_io import read_file
    data = bytes(range(256)) * 301 + b"tail"           # 77,060 bytes: several pages
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    arr = read_file(str(path))
    assert arr.dtype == np.uint8 and arr.shape == (len(data),) and arr.tobytes() == data
    arr[0] = 7                                          # the sample is the caller's to modify
    assert path.read_bytes() == data
    path.write_bytes(b"")
    assert read_file(str(path)).shape == (0,)
    with pytest.raises(RuntimeError, match=r"cannot read .*f\.bin.*directory"):
        os.remove(path)
        os.mkdir(path)
        read_file(str(path))


def test_read_all_takes_what_the_file_holds_not_its_stat_size():
    from runtime.readers.file_io import read_all
    # a pipe reports size 0 and holds more (like /proc files); a file that shrank holds less
    payload = os.urandom(200_000)
    for stat_size, held in ((0, payload), (len(payload) + 500, payload), (1000, payload[:10])):
        r, w = os.pipe()
        writer = threading.Thread(target=lambda: (os.write(w, held), os.close(w)))
        writer.start()
        try:
            got = read_all(r, stat_size)
        finally:
            writer.join()
            os.close(r)
        assert got.tobytes() == held


def test_return_indices(ten):
    r = FileReaderCore(files=ten, num_shards=2, shard_id=1, stick_to_shard=True)
    (enc, lab, idx), = list(r.next_epoch(batch_size=5, return_indices=True))
    assert idx == [5, 6, 7, 8, 9] and [r.source_info(i) for i in idx] == ten[5:]


def test_parse_file_list_direct(tmp_path):
    lst = tmp_path / "l.txt"
    lst.write_text("x y.jpg 3\n")
    index = parse_file_list(str(lst))
    assert index.paths == (os.path.join(str(tmp_path), "x y.jpg"),)
    assert index.labels.tolist() == [3]


# -- DALI oracle ------------------------------------------------------------------------------
def _dali_epoch(bs, **kw):
    """One DALI epoch as lists of (bytes, label), label dtype and shape."""
    dali = pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    del dali
    r = dalidyn.readers.File(**kw)
    out, meta = [], None
    for enc, lab in r.next_epoch(batch_size=bs):
        for e, l in zip(enc.tensors, lab.tensors):
            e, l = np.asarray(e), np.asarray(l)
            meta = (e.dtype, e.ndim, l.dtype, l.shape)
            out.append((bytes(e), int(l[0])))
    return out, meta


def _ours(bs, **kw):
    return [(bytes(e), int(l[0])) for es, ls in FileReaderCore(**kw).next_epoch(batch_size=bs)
            for e, l in zip(es, ls)]


@pytest.mark.oracle
def test_oracle_class_tree_and_label_dtype(tmp_path):
    root = tmp_path / "t"
    for cls in ("b", "a b", "a", "B"):
        for name in ("x.jpg", "Y.JPEG", "z.png", "w.txt"):
            _write(str(root / cls / name), f"{cls}/{name}")
    os.makedirs(root / "empty")
    dali, meta = _dali_epoch(12, file_root=str(root))
    assert meta == (np.uint8, 1, np.int32, (1,))
    assert _ours(12, file_root=str(root)) == dali
    dali, _ = _dali_epoch(4, file_root=str(root), file_filters=["*.jpg"],
                          case_sensitive_filter=True)
    assert _ours(4, file_root=str(root), file_filters=["*.jpg"],
                 case_sensitive_filter=True) == dali


@pytest.mark.oracle
def test_oracle_file_list(tmp_path):
    for name in ("a.jpg", "sp ace.jpg", "sub/s.jpg"):
        _write(str(tmp_path / "d" / name))
    lst = tmp_path / "d" / "l.txt"
    lst.write_text("a.jpg 5\n\nsp ace.jpg\t7\nsub/s.jpg 2\n")
    assert _ours(3, file_list=str(lst)) == _dali_epoch(3, file_list=str(lst))[0]
    lst2 = tmp_path / "l2.txt"
    lst2.write_text("sub/s.jpg 1\na.jpg 0\n")
    kw = dict(file_list=str(lst2), file_root=str(tmp_path / "d"))
    assert _ours(2, **kw) == _dali_epoch(2, **kw)[0]


@pytest.mark.oracle
@pytest.mark.parametrize("n,shards,bs,pad", [(10, 3, 3, True), (10, 3, 2, True),
                                             (11, 4, 3, False), (7, 4, 2, True)])
def test_oracle_shards_stick_to_shard(ten, tmp_path, n, shards, bs, pad):
    files = [str(tmp_path / f"s{i}.jpg") for i in range(n)]
    for i, f in enumerate(files):
        _write(f, f"s{i}")
    for k in range(shards):
        kw = dict(files=files, num_shards=shards, shard_id=k, stick_to_shard=True,
                  pad_last_batch=pad)
        ours = _ours(bs, **kw)
        dali, _ = _dali_epoch(bs, **kw)
        # without padding DALI 2.4 fills the last batch from the next epoch: compare the shard
        assert ours == dali[:len(ours)]
        b, e = shard_range(k, shards, n)
        assert len(ours) == (-(-(-(-n // shards)) // bs) * bs if pad else e - b)
