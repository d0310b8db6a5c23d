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
