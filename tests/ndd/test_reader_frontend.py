"""ndd.readers.File front end: outputs (types, dtypes, shapes), epochs, hidden entries, errors."""
import json

import numpy as np
import pytest

import ndd

# image_folder (tests/conftest.py): cat/img0..2.jpg, dog/img0..1.jpg, plus hidden
# .ipynb_checkpoints/junk.jpg and cat/._img0.jpg that must be ignored.
EXPECTED = {("cat", "img0.jpg"): 0, ("cat", "img1.jpg"): 0, ("cat", "img2.jpg"): 0,
            ("dog", "img0.jpg"): 1, ("dog", "img1.jpg"): 1}


def _by_bytes(root):
    return {(root / c / f).read_bytes(): lab for (c, f), lab in EXPECTED.items()}


def test_batches_are_tuples_of_batches(image_folder):
    reader = ndd.readers.File(file_root=str(image_folder))
    assert len(reader) == 5
    ref = _by_bytes(image_folder)
    seen = []
    sizes = []
    for item in reader.next_epoch(batch_size=2):
        assert isinstance(item, tuple) and len(item) == 2
        enc, lab = item
        assert isinstance(enc, ndd.Batch) and isinstance(lab, ndd.Batch)
        assert enc.dtype is ndd.uint8 and enc.ndim == 1
        assert lab.dtype is ndd.int32
        sizes.append(enc.batch_size)
        for e, l in zip(enc.tensors[:], lab.tensors[:]):
            arr = np.asarray(l)
            assert arr.shape == (1,) and arr.dtype == np.int32
            data = np.asarray(e).tobytes()
            assert ref[data] == arr[0]
            seen.append(data)
    assert sizes == [2, 2, 1]
    assert sorted(seen) == sorted(ref)        # each file exactly once; hidden ones absent


def test_sample_mode_yields_tensors(image_folder):
    reader = ndd.readers.File(file_root=str(image_folder))
    ref = _by_bytes(image_folder)
    n = 0
    for enc, lab in reader.next_epoch():
        assert isinstance(enc, ndd.Tensor) and isinstance(lab, ndd.Tensor)
        assert lab.shape == (1,) and lab.dtype is ndd.int32
        assert ref[np.asarray(enc).tobytes()] == int(np.asarray(lab)[0])
        n += 1
    assert n == 5


def test_every_epoch_covers_every_sample_once(image_folder):
    reader = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=3)
    ref = _by_bytes(image_folder)
    for _ in range(3):
        got = [np.asarray(e).tobytes() for enc, _ in reader.next_epoch(batch_size=4)
               for e in enc.tensors[:]]
        assert sorted(got) == sorted(ref)


def test_batches_decode(image_folder, photos):
    reader = ndd.readers.File(file_root=str(image_folder))
    enc, lab = next(iter(reader.next_epoch(batch_size=3)))
    img = ndd.decoders.image(enc)
    assert img.layout == "HWC" and img.dtype is ndd.uint8
    assert sorted(img.shape) == sorted(p.shape for p in photos)


def test_missing_root_error_names_path(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises((ValueError, FileNotFoundError, RuntimeError)) as ei:
        r = ndd.readers.File(file_root=str(missing))
        next(iter(r.next_epoch(batch_size=1)))
    assert str(missing) in str(ei.value)


def test_empty_root_error_names_path(tmp_path):
    with pytest.raises((ValueError, FileNotFoundError, RuntimeError)) as ei:
        r = ndd.readers.File(file_root=str(tmp_path))
        next(iter(r.next_epoch(batch_size=1)))
    assert str(tmp_path) in str(ei.value)


def test_compile_without_batch_size_errors(image_folder):
    reader = ndd.readers.File(file_root=str(image_folder))
    with pytest.raises(ValueError, match="batch_size"):
        reader.next_epoch(compile=True)


def test_unknown_argument_rejected(image_folder):
    with pytest.raises(TypeError, match="bogus"):
        ndd.readers.File(file_root=str(image_folder), bogus=1)


def test_state_round_trip(image_folder):
    r1 = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=1)
    state = json.loads(json.dumps(r1.get_state()))
    first = [np.asarray(e).tobytes() for enc, _ in r1.next_epoch(batch_size=5)
             for e in enc.tensors[:]]
    r2 = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=1)
    r2.set_state(state)
    second = [np.asarray(e).tobytes() for enc, _ in r2.next_epoch(batch_size=5)
              for e in enc.tensors[:]]
    assert first == second
    with pytest.raises(RuntimeError, match="set_state"):
        r2.set_state(state)


def test_state_is_a_string_and_the_earlier_dict_still_works(image_folder):
    r1 = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=1)
    it = r1.next_epoch(batch_size=2)
    next(it)
    state = r1.get_state()
    assert type(state) is str and state.startswith("ndd.readers.File/2;epoch=0;position=2;")
    rest = [np.asarray(e).tobytes() for enc, _ in it for e in enc.tensors[:]]
    legacy = {"type": "ndd.readers.File", "core": r1._core.get_state()}   # earlier get_state()
    legacy["core"].update(epoch=0, position=2)
    del legacy["core"]["dataset"]      # earlier versions had no dataset fingerprint
    for given in (state, state.encode("ascii"), json.loads(json.dumps(legacy))):
        r2 = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=1)
        r2.set_state(given)
        assert [np.asarray(e).tobytes() for enc, _ in r2.next_epoch(batch_size=2)
                for e in enc.tensors[:]] == rest
    with pytest.raises(TypeError, match="state must be a str"):
        ndd.readers.File(file_root=str(image_folder)).set_state(3)


def test_sample_dataset_labels(sample_dataset):
    reader = ndd.readers.File(file_root=str(sample_dataset))
    classes = sorted(p.name for p in sample_dataset.iterdir()
                     if p.is_dir() and not p.name.startswith("."))
    files = sorted(str(p.relative_to(sample_dataset)) for p in sample_dataset.rglob("*")
                   if p.is_file() and p.parent != sample_dataset and not p.name.startswith("."))
    by_bytes = {(sample_dataset / f).read_bytes(): classes.index(f.split("/")[0]) for f in files}
    total = 0
    for enc, lab in reader.next_epoch(batch_size=16):
        for e, l in zip(enc.tensors[:], lab.tensors[:]):
            assert by_bytes[np.asarray(e).tobytes()] == int(np.asarray(l)[0])
            total += 1
    assert total == len(files) == len(reader)


# -- direct calls, max_batch_size, metadata, shards (DALI 2.4's Reader) ------------------------
def _files_of(enc):
    return [np.asarray(e).tobytes() for e in enc.tensors[:]]


def test_calling_a_reader_reads_the_next_batch(image_folder):
    kw = dict(file_root=str(image_folder), random_shuffle=True, seed=2)
    ref = ndd.readers.File(**kw)
    epochs = [[_files_of(enc) for enc, _ in ref.next_epoch(batch_size=2)] for _ in range(2)]
    assert epochs[0] != epochs[1]
    reader = ndd.readers.File(**kw)
    got = []
    for _ in range(6):                       # 3 batches an epoch (2, 2, 1), two epochs
        enc, lab = reader(batch_size=2)
        assert isinstance(enc, ndd.Batch) and isinstance(lab, ndd.Batch)
        assert lab.dtype is ndd.int32
        got.append(_files_of(enc))
    assert got == epochs[0] + epochs[1]
    with pytest.raises(ValueError, match="batch_size=3 differs"):
        reader(batch_size=3)
    with pytest.raises(RuntimeError, match="Cannot mix"):
        reader.next_epoch(batch_size=2)


def test_calling_a_reader_without_batch_size_reads_one_sample(image_folder):
    reader = ndd.readers.File(file_root=str(image_folder))
    ref = [(np.asarray(e).tobytes(), int(np.asarray(l)[0]))
           for e, l in ndd.readers.File(file_root=str(image_folder)).next_epoch()]
    got = []
    for _ in range(len(ref) + 1):
        enc, lab = reader()
        assert isinstance(enc, ndd.Tensor) and isinstance(lab, ndd.Tensor)
        got.append((np.asarray(enc).tobytes(), int(np.asarray(lab)[0])))
    assert got == ref + ref[:1]              # then the next epoch starts
    other = ndd.readers.File(file_root=str(image_folder))
    next(iter(other.next_epoch(batch_size=5)))
    with pytest.raises(RuntimeError, match="Cannot mix"):
        other(batch_size=5)


def test_state_of_a_called_reader_restores(image_folder):
    reader = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=3)
    reader(batch_size=2)
    state = reader.get_state()
    rest = [_files_of(reader(batch_size=2)[0]) for _ in range(2)]
    fresh = ndd.readers.File(file_root=str(image_folder), random_shuffle=True, seed=3)
    fresh.set_state(state)
    assert [_files_of(enc) for enc, _ in fresh.next_epoch(batch_size=2)] == rest


def test_constructor_batch_size_is_the_default_and_the_limit(image_folder):
    reader = ndd.readers.File(3, file_root=str(image_folder))
    sizes = [enc.batch_size for enc, _ in reader.next_epoch()]
    assert sizes == [3, 2]
    small = ndd.readers.File(4, file_root=str(image_folder))
    assert [enc.batch_size for enc, _ in small.next_epoch(batch_size=2)] == [2, 2, 1]
    with pytest.raises(ValueError, match="larger than the `max_batch_size` 4"):
        ndd.readers.File(4, file_root=str(image_folder)).next_epoch(batch_size=5)
    with pytest.raises(ValueError, match="larger than the `max_batch_size` 4"):
        ndd.readers.File(4, file_root=str(image_folder))(batch_size=5)
    called = ndd.readers.File(4, file_root=str(image_folder))
    assert isinstance(called()[0], ndd.Tensor)           # reader() is a sample (DALI's)
    assert ndd.readers.File(4, file_root=str(image_folder))(batch_size=4)[0].batch_size == 4


def test_get_metadata_takes_a_batch_size(image_folder):
    reader = ndd.readers.File(2, file_root=str(image_folder), num_shards=2, shard_id=1,
                              pad_last_batch=True)
    want = {"epoch_size": 5, "epoch_size_padded": 6, "number_of_shards": 2, "shard_id": 1,
            "pad_last_batch": 1, "stick_to_shard": 0}
    assert reader.get_metadata() == want == reader.get_metadata(batch_size=2)
    with pytest.raises(ValueError, match="max_batch_size"):
        reader.get_metadata(batch_size=3)


def test_more_shards_than_samples_fail_when_the_epoch_starts(image_folder):
    reader = ndd.readers.File(file_root=str(image_folder), num_shards=6)   # 5 samples
    for start in (lambda: reader.next_epoch(), lambda: reader(batch_size=2),
                  lambda: reader.get_metadata()):
        with pytest.raises(RuntimeError, match=r'Assert on "num_shards_ <= Size\(\)" failed: '
                                               r'The number of input samples: 5') as ei:
            start()
        assert "fewer than num_shards=6" in str(ei.value)
    with pytest.raises(ValueError, match="does not exist|not found|no such"):
        ndd.readers.File(file_root=str(image_folder / "missing"), num_shards=6)


def test_set_state_type_error_names_reader_state(image_folder):
    with pytest.raises(TypeError, match="ReaderState") as ei:
        ndd.readers.File(file_root=str(image_folder)).set_state(42)
    assert "got int" in str(ei.value)


@pytest.mark.oracle
def test_reader_calls_and_shards_like_dali(image_folder, tmp_path):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    files = [str(image_folder / c / f) for c, f in sorted(EXPECTED)]
    for lib in (dalidyn, ndd):
        reader = lib.readers.File(2, files=files)
        enc, lab = reader(batch_size=2)
        assert enc.batch_size == 2 and isinstance(enc, lib.Batch)
        assert [int(np.asarray(t)[0]) for t in lab.tensors] == [0, 1]
        enc, lab = reader(batch_size=2)
        assert [int(np.asarray(t)[0]) for t in lab.tensors] == [2, 3]
        one = lib.readers.File(files=files)
        e, l = one()
        assert isinstance(e, lib.Tensor) and int(np.asarray(l)[0]) == 0
        assert int(np.asarray(one()[1])[0]) == 1
        batched = lib.readers.File(2, files=files)
        assert isinstance(next(iter(batched.next_epoch()))[0], lib.Batch)
        meta = lib.readers.File(files=files, num_shards=2).get_metadata(batch_size=2)
        assert meta == {"epoch_size": 5, "epoch_size_padded": 5, "number_of_shards": 2,
                        "shard_id": 0, "pad_last_batch": 0, "stick_to_shard": 0}
        many = lib.readers.File(files=files, num_shards=9)
        with pytest.raises(RuntimeError, match=r'num_shards_ <= Size\(\)" failed: The number '
                                               r'of input samples: 5'):
            tuple(many.next_epoch())
        with pytest.raises(TypeError, match="ReaderState"):
            lib.readers.File(files=files).set_state(42)


def test_next_epoch_takes_dalis_ctx_argument(image_folder):
    ref = [_files_of(e) for e, _ in ndd.readers.File(file_root=str(image_folder))
           .next_epoch(batch_size=2)]
    reader = ndd.readers.File(file_root=str(image_folder))
    ctx = ndd.EvalContext()
    assert [_files_of(e) for e, _ in reader.next_epoch(2, ctx)] == ref
    assert [_files_of(e) for e, _ in reader.next_epoch(batch_size=2, ctx=None)] == ref
    with pytest.raises(TypeError, match="ctx must be an ndd.EvalContext"):
        reader.next_epoch(2, "cpu")


def test_close_ends_the_epoch_of_direct_calls(image_folder):
    kw = dict(file_root=str(image_folder), random_shuffle=True, seed=5)
    ref = ndd.readers.File(**kw)
    epochs = [[_files_of(e) for e, _ in ref.next_epoch(batch_size=2)] for _ in range(2)]
    assert epochs[0] != epochs[1]
    reader = ndd.readers.File(**kw)
    assert _files_of(reader(batch_size=2)[0]) == epochs[0][0]
    reader.close()
    assert [_files_of(reader(batch_size=2)[0]) for _ in range(3)] == epochs[1]
