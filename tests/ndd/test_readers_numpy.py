"""ndd.readers.Numpy: against numpy.load, and against DALI 2.4's CPU readers.Numpy."""
import itertools
import os

import numpy as np
import pytest

import ndd
from ndd._stream import cuda_device_count


@pytest.fixture
def data(tmp_path):
    """A file_root tree of mixed shapes, dtypes and orders, and a folder of same-typed files."""
    root = tmp_path / "root"
    (root / "b").mkdir(parents=True)
    (root / "a").mkdir()
    rng = np.random.default_rng(7)
    arrays = {
        "z.npy": rng.integers(-99, 99, (2, 3)).astype(np.int16),
        "b/x.npy": np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
        "a/f.npy": np.asfortranarray(rng.random((3, 4), dtype=np.float32)),
        "a/g.npy": rng.random((5,)).astype(np.float64),
        "a/h.npy": np.array([[True, False, True]]),
    }
    for name, arr in arrays.items():
        np.save(root / name, arr)
    same = tmp_path / "same"
    same.mkdir()
    for i in range(7):
        np.save(same / f"{i:02d}.npy", (rng.random((6, 5, 4)) * 100).astype(np.float32))
    return root, same


def _arrays(out):
    return [np.asarray(t) for t in out]


def test_samples_match_numpy_load(data):
    root, _ = data
    r = ndd.readers.Numpy(file_root=str(root))
    got = [np.asarray(t) for (t,) in r.next_epoch()]
    order = ["z.npy", "a/f.npy", "a/g.npy", "a/h.npy", "b/x.npy"]  # root first, then folders
    assert len(got) == len(order)
    for g, name in zip(got, order):
        ref = np.load(root / name)
        assert g.dtype == ref.dtype and g.shape == ref.shape
        np.testing.assert_array_equal(g, ref)


def test_batches_roi_and_state(data):
    _, same = data
    files = sorted(str(p) for p in same.iterdir())
    r = ndd.readers.Numpy(files=files, roi_start=[1, 2], roi_shape=[3, 2], roi_axes=[0, 2])
    batches = [b for (b,) in r.next_epoch(batch_size=3)]
    assert [len(b) for b in batches] == [3, 3, 1]
    assert batches[0].dtype == ndd.float32
    got = [np.asarray(t) for b in batches for t in b]
    for g, f in zip(got, files):
        np.testing.assert_array_equal(g, np.load(f)[1:4, :, 2:4])
    # state in the middle of an epoch: a fresh reader continues from the next batch
    r = ndd.readers.Numpy(files=files, random_shuffle=True, seed=5)
    it = r.next_epoch(batch_size=2)
    first = next(it)[0]
    state = r.get_state()
    assert state.startswith("ndd.readers.Numpy/")
    rest = [np.asarray(t) for (b,) in it for t in b]
    r2 = ndd.readers.Numpy(files=files, random_shuffle=True, seed=5)
    r2.set_state(state)
    again = [np.asarray(t) for (b,) in r2.next_epoch(batch_size=2) for t in b]
    assert len(again) == len(rest) == 5
    for a, b in zip(again, rest):
        np.testing.assert_array_equal(a, b)
    seen = {np.asarray(t).tobytes() for t in first} | {a.tobytes() for a in rest}
    assert seen == {np.load(f).tobytes() for f in files}
    with pytest.raises(ValueError, match="Numpy state"):
        ndd.readers.File(files=files).set_state(state)


def test_direct_calls_compile_and_errors(data, tmp_path):
    _, same = data
    files = sorted(str(p) for p in same.iterdir())
    r = ndd.readers.Numpy(files=files)
    (t,) = r()
    np.testing.assert_array_equal(np.asarray(t), np.load(files[0]))
    (t,) = r()
    np.testing.assert_array_equal(np.asarray(t), np.load(files[1]))
    r = ndd.readers.Numpy(files=files, max_batch_size=7)
    (b,) = r(batch_size=4)
    (b,) = r(batch_size=4)   # the rest of epoch 0: 3 samples (docs/semantics.md)
    assert len(b) == 3
    np.testing.assert_array_equal(np.asarray(b.tensors[2]), np.load(files[6]))
    # compile mode gives the same values as eager
    eager = [np.asarray(ndd.as_tensor(x * 2 + 1)) for (x,) in
             ndd.readers.Numpy(files=files).next_epoch(batch_size=3)]
    comp = [np.asarray(ndd.as_tensor(x * 2 + 1)) for (x,) in
            ndd.readers.Numpy(files=files).next_epoch(batch_size=3, compile=True)]
    assert len(eager) == len(comp) == 3
    for e, c in zip(eager, comp):
        np.testing.assert_array_equal(e, c)
    # the dataset is listed at the first use, as DALI's backend is created then
    r = ndd.readers.Numpy(files=[str(tmp_path / "nope.npy")])
    with pytest.raises(ValueError, match="nope.npy"):
        r.next_epoch()
    with pytest.raises(TypeError, match="unexpected argument.*file_filters"):
        ndd.readers.Numpy(files=files, file_filters="*.npy")
    with pytest.raises(ValueError, match="mutually exclusive"):
        ndd.readers.Numpy(files=files, roi_end=[1], roi_shape=[1])
    with pytest.raises(ValueError, match="Cannot use use_o_direct with ``dont_use_mmap=False``"):
        ndd.readers.Numpy(files=files, use_o_direct=True)
    (t,), = list(ndd.readers.Numpy(files=files[:1], use_o_direct=True,
                                   dont_use_mmap=True).next_epoch())
    np.testing.assert_array_equal(np.asarray(t), np.load(files[0]))
    with pytest.raises(RuntimeError, match="out of bounds.*00.npy"):
        next(iter(ndd.readers.Numpy(files=files, roi_end=[9]).next_epoch()))
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not an array")
    with pytest.raises(RuntimeError, match="bad.npy.*not a .npy file"):
        next(iter(ndd.readers.Numpy(files=[str(bad)]).next_epoch()))
    mixed = ndd.readers.Numpy(files=[files[0], str(data[0] / "z.npy")])
    with pytest.raises(ValueError, match="one dtype"):
        next(iter(mixed.next_epoch(batch_size=2)))


def test_tensor_arguments():
    r = ndd.readers.Numpy(files=["unused.npy"], roi_start=ndd.tensor(0),
                          roi_shape=ndd.tensor([10]))
    assert r._init_args["roi_start"] == 0 and r._init_args["roi_shape"] == [10]
    assert "roi_start" in r._tensor_arg_names and "roi_start" not in r._raw_tensor_args
    assert r._raw_tensor_args == {"roi_shape": [10]}


# ------------------------------------------------------------------ DALI 2.4 oracle
def _dali_epoch(batch_size=None, **kw):
    dd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    r = dd.readers.Numpy(**kw)
    if batch_size is None:
        return [np.asarray(t) for (t,) in r.next_epoch()]
    return [[np.asarray(t) for t in b] for (b,) in r.next_epoch(batch_size=batch_size)]


def _ndd_epoch(batch_size=None, **kw):
    r = ndd.readers.Numpy(**kw)
    if batch_size is None:
        return [np.asarray(t) for (t,) in r.next_epoch()]
    return [[np.asarray(t) for t in b] for (b,) in r.next_epoch(batch_size=batch_size)]


def _prefix(ours, dali, batch_size):
    """One epoch in batches: ours ends with a short batch where DALI's last batch goes on
    into the next samples (docs/semantics.md, readers.File): the samples match up to ours."""
    ours = [x for b in ours for x in b]
    dali = [x for b in dali for x in b]
    assert 0 <= len(dali) - len(ours) < batch_size
    _same(ours, dali[:len(ours)])


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            _same(x, y)
        else:
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)


@pytest.mark.oracle
def test_oracle_file_root_order_and_values(data):
    root, _ = data
    _same(_ndd_epoch(file_root=str(root)), _dali_epoch(file_root=str(root)))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [
    dict(roi_start=[1, 1], roi_end=[2, 3], roi_axes=[1, 2]),
    dict(roi_start=[1, -1], roi_end=[2, 3], roi_axes=[1, 2], out_of_bounds_policy="pad",
         fill_value=7),
    dict(roi_start=[-2, 3], roi_shape=[9, 4], roi_axes=[2, 0],
         out_of_bounds_policy="trim_to_shape"),
    dict(roi_start=1, roi_end=2),
    dict(rel_roi_start=[0.4], rel_roi_shape=[0.5], roi_axes=[2]),
    dict(rel_roi_start=[0.25, 0.1], rel_roi_end=[0.8, 0.7], roi_axes=[0, 1]),
])
def test_oracle_regions(data, kw):
    root, _ = data
    files = [str(root / "b/x.npy"), str(root / "a/f.npy")] if "rel_roi_end" in kw else \
        [str(root / "b/x.npy")]
    _same(_ndd_epoch(files=files, **kw), _dali_epoch(files=files, **kw))


@pytest.mark.oracle
def test_oracle_relative_rounding(tmp_path):
    p = str(tmp_path / "ten.npy")
    np.save(p, np.arange(10))
    for s, sh in itertools.product([0.05, 0.15, 0.25, 0.35, 0.45], [0.05, 0.15, 0.26, 0.34]):
        _same(_ndd_epoch(files=[p], rel_roi_start=[s], rel_roi_shape=[sh]),
              _dali_epoch(files=[p], rel_roi_start=[s], rel_roi_shape=[sh]))
    for s, e in itertools.product([0.05, 0.15, 0.35], [0.45, 0.55, 0.75]):
        _same(_ndd_epoch(files=[p], rel_roi_start=[s], rel_roi_end=[e]),
              _dali_epoch(files=[p], rel_roi_start=[s], rel_roi_end=[e]))


@pytest.mark.oracle
@pytest.mark.parametrize("kw", [
    dict(num_shards=3, shard_id=2, pad_last_batch=True),
    dict(num_shards=2, shard_id=0, stick_to_shard=True, pad_last_batch=True),
])
def test_oracle_shards_and_batches(data, kw):
    _, same = data
    files = sorted(str(p) for p in same.iterdir())
    dd = pytest.importorskip("nvidia.dali.experimental.dynamic")
    ours, theirs = ndd.readers.Numpy(files=files, **kw), dd.readers.Numpy(files=files, **kw)
    for _ in range(3):      # three epochs: the shard moves unless stick_to_shard
        _same([[np.asarray(t) for t in b] for (b,) in ours.next_epoch(batch_size=2)],
              [[np.asarray(t) for t in b] for (b,) in theirs.next_epoch(batch_size=2)])


@pytest.mark.oracle
@pytest.mark.parametrize("shard_id", [0, 1, 2])
def test_oracle_shards_first_epoch(data, shard_id):
    _, same = data
    files = sorted(str(p) for p in same.iterdir())
    kw = dict(files=files, num_shards=3, shard_id=shard_id)
    _prefix(_ndd_epoch(batch_size=2, **kw), _dali_epoch(batch_size=2, **kw), 2)
    _same(_ndd_epoch(**kw), _dali_epoch(**kw))


@pytest.mark.oracle
def test_oracle_file_list(data, tmp_path):
    _, same = data
    lst = tmp_path / "same" / "list.txt"
    lst.write_text("03.npy\n01.npy\n05.npy\n")
    _prefix(_ndd_epoch(file_list=str(lst), batch_size=2),
            _dali_epoch(file_list=str(lst), batch_size=2), 2)
    _same(_ndd_epoch(file_list=str(lst)), _dali_epoch(file_list=str(lst)))
    _same(_ndd_epoch(file_root=str(same), files=["06.npy", "00.npy"]),
          _dali_epoch(file_root=str(same), files=["06.npy", "00.npy"]))


def test_big_endian_is_converted(tmp_path):
    p = str(tmp_path / "be.npy")
    np.save(p, np.arange(6, dtype=">u2").reshape(2, 3))
    (t,), = list(ndd.readers.Numpy(files=[p]).next_epoch())
    assert np.asarray(t).dtype == np.uint16
    np.testing.assert_array_equal(np.asarray(t), np.arange(6).reshape(2, 3))
    assert os.path.getsize(p) > 0


def test_gpu_without_cuda_fails_clearly():
    if cuda_device_count():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
        ndd.readers.Numpy(files=["x.npy"], device="gpu")


@pytest.mark.oracle
def test_oracle_fortran_regions_scalars_empty_bool(tmp_path):
    f, s, e, b = (str(tmp_path / n) for n in ("f.npy", "s.npy", "e.npy", "b.npy"))
    np.save(f, np.asfortranarray(np.arange(60, dtype=np.float64).reshape(3, 4, 5)))
    np.save(s, np.array(3.5, np.float32))
    np.save(e, np.zeros((0, 3), np.int16))
    np.save(b, np.array([[True, False, True]]))
    for kw in [dict(files=[f], roi_start=[1, 1], roi_end=[3, 4], roi_axes=[0, 2]),
               dict(files=[f], roi_start=[-1, 1], roi_end=[3, 7], roi_axes=[0, 2],
                    out_of_bounds_policy="pad", fill_value=2.5),
               dict(files=[s]), dict(files=[e]),
               dict(files=[b], roi_start=[1], roi_axes=[1])]:
        _same(_ndd_epoch(**kw), _dali_epoch(**kw))
