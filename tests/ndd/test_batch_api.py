"""DALI 2.4's ``ndd.Batch`` constructor and methods: ``Batch(tensors, dtype, device, layout, copy)``,
``Batch.broadcast``, ``select``, ``to_device`` / ``cpu`` / ``gpu`` (no CUDA device here:
RuntimeError)."""
import io

import numpy as np
import pytest
import torch
from PIL import Image
from skimage import data as skimage_data

import ndd
from runtime.device import gpu_available

no_gpu = pytest.mark.skipif(gpu_available(), reason="checks the no-CUDA-device errors")
MODES = [ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu,
         ndd.EvalMode.sync_full]


def _samples(b):
    return [np.asarray(t) for t in b.tensors]


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_from_list_of_tensors(mode):
    with mode:
        parts = [np.arange(n, dtype=np.int32).reshape(1, n) for n in (2, 3)]
        ts = [ndd.Tensor(p, layout="AB") for p in parts]
        b = ndd.Batch(ts)
        assert b.batch_size == 2 and b.layout == "AB" and b.dtype == ndd.int32
        assert b.shape == [(1, 2), (1, 3)]
        for got, want in zip(_samples(b), parts):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_from_lazy_tensors_computes_them(mode):
    with mode:
        t = ndd.Tensor(np.array([1, 2, 3], np.int32))
        b = ndd.Batch([t + 1, t * 2])
        assert _samples(b)[0].tolist() == [2, 3, 4] and _samples(b)[1].tolist() == [2, 4, 6]


def test_device_and_dtype_arguments():
    b = ndd.Batch([np.array([0.5, 1.5, -2.5])], dtype=ndd.int16, device="cpu", layout="X")
    assert b.device == ndd.Device("cpu") and b.dtype == ndd.int16 and b.layout == "X"
    # DALI's cast: round half away from zero
    assert _samples(b)[0].tolist() == [1, 2, -3]


def test_view_and_copy():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    view, copied = ndd.Batch(a), ndd.Batch(a, copy=True)
    a[0, 0] = 42
    assert _samples(view)[0][0] == 42
    assert _samples(copied)[0][0] == 0
    assert view.shape == [(3,), (3,)]


def test_from_batch_shares_or_converts():
    b = ndd.batch([np.array([1, 2], np.uint8), np.array([3], np.uint8)], layout="A")
    same = ndd.Batch(b)
    assert same._value is b._value          # shared, not computed again
    f = ndd.Batch(b, dtype=ndd.float32)
    assert f.dtype == ndd.float32 and f.layout == "A"
    assert [s.tolist() for s in _samples(f)] == [[1.0, 2.0], [3.0]]


def test_from_iterable():
    b = ndd.Batch(np.full((2,), i, np.int8) for i in range(3))
    assert b.batch_size == 3 and [s.tolist() for s in _samples(b)] == [[0, 0], [1, 1], [2, 2]]


def test_from_torch_tensor_and_list():
    b = ndd.Batch(torch.arange(6, dtype=torch.int64).reshape(3, 2))
    assert b.batch_size == 3 and b.dtype == ndd.int64
    c = ndd.Batch([torch.ones(2, dtype=torch.float32), torch.zeros(2, dtype=torch.float32)])
    assert [s.tolist() for s in _samples(c)] == [[1.0, 1.0], [0.0, 0.0]]


def test_empty_list():
    with pytest.raises(ValueError, match="Element type must be specified"):
        ndd.Batch([])
    with pytest.raises(ValueError, match="Element type must be specified"):
        ndd.batch([])
    e = ndd.batch([], dtype=ndd.int32)
    assert (e.batch_size, e.shape, e.ndim, e.dtype, e.layout) == (0, [], 0, ndd.int32, None)
    assert list(e) == [] and len(e) == 0


def test_constructor_errors():
    b = ndd.batch([np.zeros(2)])
    with pytest.raises(TypeError, match="Unexpected element type"):
        ndd.Batch([b, b])
    with pytest.raises(TypeError, match="Got `None` at index 1"):
        ndd.Batch([np.zeros(2), None])
    with pytest.raises(ValueError, match="Cannot create a batch from a scalar"):
        ndd.Batch(np.float32(3))
    with pytest.raises(TypeError, match="different dtypes"):
        ndd.Batch([np.zeros(2, np.uint8), np.zeros(2, np.int8)])
    with pytest.raises(ValueError, match="different numbers of dimensions"):
        ndd.Batch([np.zeros(2), np.zeros((2, 2))])


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_broadcast(mode):
    with mode:
        sample = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
        b = ndd.Batch.broadcast(sample, 4)
        assert b.batch_size == 4 and b.shape == [(2, 3)] * 4 and b.dtype == ndd.int32
        for s in _samples(b):
            np.testing.assert_array_equal(s, sample)
        sample[0, 0] = 100           # the batch holds its own copy
        assert _samples(b)[0][0, 0] == 1
        # arithmetic on a broadcast batch: every sample as numpy computes it
        for s in _samples(b * 2 + 1):
            np.testing.assert_array_equal(s, np.array([[3, 5, 7], [9, 11, 13]]))


def test_broadcast_arguments():
    b = ndd.Batch.broadcast([1, 2, 3], batch_size=2)
    assert b.dtype == ndd.int32 and b.shape == [(3,), (3,)]
    f = ndd.Batch.broadcast(np.array([0.4, 2.5]), 3, dtype=ndd.uint8)
    assert f.dtype == ndd.uint8 and all(s.tolist() == [0, 3] for s in _samples(f))
    t = ndd.Batch.broadcast(ndd.tensor(np.zeros((2, 2), np.float32), layout="HW"), 2)
    assert t.layout == "HW"
    assert ndd.Batch.broadcast(np.ones(2), 0).batch_size == 0
    with pytest.raises(ValueError, match="Cannot broadcast a Batch"):
        ndd.Batch.broadcast(b, 2)
    with pytest.raises(ValueError, match="batch_size must be >= 0"):
        ndd.Batch.broadcast(np.ones(2), -1)


def test_select():
    parts = [np.arange(n) for n in (1, 2, 3, 4)]
    b = ndd.batch(parts)
    assert b.select(...) is b
    t = b.select(2)
    assert isinstance(t, ndd.Tensor) and np.asarray(t).tolist() == parts[2].tolist()
    assert np.asarray(b.select(-1)).tolist() == parts[3].tolist()
    s = b.select(slice(1, 4, 2))
    assert isinstance(s, ndd.Batch) and s.shape == [(2,), (4,)]
    r = b.select([3, 0])
    assert r.shape == [(4,), (1,)]     # in the order asked for (docs/semantics.md)
    with pytest.raises(IndexError):
        b.select(4)


def test_to_device_cpu():
    b = ndd.batch([np.arange(3, dtype=np.int32)])
    assert b.cpu() is b and b.to_device("cpu") is b
    c = b.to_device("cpu", force_copy=True)
    assert c is not b
    _samples(b)[0][0] = 9
    assert _samples(c)[0].tolist() == [0, 1, 2]


@no_gpu
def test_gpu_requests_fail_clearly_without_cuda():
    b = ndd.batch([np.arange(3)])
    for call in (lambda: b.gpu(), lambda: b.to_device("gpu:0"),
                 lambda: ndd.Batch([np.arange(3)], device="gpu"),
                 lambda: ndd.Batch.broadcast(np.arange(3), 2, device="gpu"),
                 lambda: ndd.batch([], dtype=ndd.int32, device="gpu")):
        with pytest.raises(RuntimeError, match="no CUDA device"):
            call()


@pytest.mark.oracle
def test_matches_dali():
    dyn = pytest.importorskip("nvidia.dali.experimental.dynamic")
    for mod in (ndd, dyn):
        b = mod.Batch.broadcast([1, 2, 3], 3)
        e = mod.Batch([], dtype=mod.int32)
        lst = mod.Batch([mod.Tensor(np.zeros((2, 2), np.uint8), layout="HW"),
                         mod.Tensor(np.ones((1, 2), np.uint8), layout="HW")])
        got = (b.dtype.name, b.shape, e.batch_size, e.shape, e.ndim, lst.layout, lst.shape,
               [np.asarray(t).tolist() for t in lst.tensors])
        if mod is ndd:
            ours = got
        else:
            assert ours == got


def test_tensors_view_methods():
    parts = [np.full((2,), i, np.int32) for i in range(3)]
    b = ndd.batch(parts)
    view = b.tensors
    assert len(view) == 3 and view[:] is b
    listed = view.tolist()
    assert all(isinstance(t, ndd.Tensor) for t in listed)
    assert [np.asarray(t).tolist() for t in listed] == [p.tolist() for p in parts]
    assert np.asarray(view.select(1)).tolist() == [1, 1]
    assert view.select([2, 1]).shape == [(2,), (2,)]
    assert view.as_batch() is b or view.as_batch()._value is b._value
    c = view.as_batch(copy=True)
    _samples(b)[0][0] = 50
    assert _samples(c)[0].tolist() == [0, 0]


def test_lazy_batch_tensors_stay_lazy():
    with ndd.EvalMode.deferred:
        b = ndd.batch([np.arange(3, dtype=np.int32)] * 2) + 1
        ts = b.tensors.tolist()
        assert b._value.data is None and len(ts) == 2
        assert b.tensors[:] is b
        assert np.asarray(ts[1]).tolist() == [1, 2, 3]


def test_torch_copy_false():
    a = np.arange(6, dtype=np.int32).reshape(3, 2)
    b = ndd.as_batch(a)                      # samples are consecutive views of one buffer
    t = b.torch(copy=False)
    a[0, 0] = 9
    assert t[0, 0].item() == 9               # shares memory
    separate = ndd.batch([np.zeros(2, np.int32), np.ones(2, np.int32)])
    with pytest.raises(ValueError, match="without a copy"):
        separate.torch(copy=False)
    assert separate.torch().tolist() == [[0, 0], [1, 1]]
    one = ndd.batch([np.arange(3, dtype=np.int16)])
    assert one.torch(copy=False).tolist() == [[0, 1, 2]]


@pytest.fixture(scope="module")
def small_photos(tmp_path_factory):
    """2 classes x 3 JPEGs of odd sizes cut from a real photo (skimage)."""
    img = skimage_data.coffee()
    root = tmp_path_factory.mktemp("photos_batch_api")
    for c in range(2):
        (root / f"c{c}").mkdir()
        for k in range(3):
            h, w = 40 + 7 * k + c, 50 + 5 * k
            buf = io.BytesIO()
            Image.fromarray(img[10 * k:10 * k + h, 20 * c:20 * c + w]).save(buf, "JPEG")
            (root / f"c{c}" / f"{k}.jpg").write_bytes(buf.getvalue())
    return str(root)


def _constructors_body(jpegs, labels):
    imgs = ndd.resize(ndd.decoders.image(jpegs), size=(12, 10))
    n = jpegs.batch_size
    offset = ndd.Batch.broadcast(np.uint8(7), n)            # a Python-built batch operand
    shifted = ndd.Batch(imgs) + offset                       # Batch(batch) shares the value
    first = ndd.Tensor(batch=shifted, index_in_batch=0)
    as_f32 = ndd.Tensor(first, dtype=ndd.float32)
    return (shifted.torch().clone(), torch.from_numpy(np.array(as_f32)),
            shifted.select(slice(1, None)).torch().clone(), imgs.torch().clone())


@pytest.mark.parametrize("compile", [False, True])
def test_constructors_in_loops_equal_sync(small_photos, compile):
    def run(compile_, mode):
        reader = ndd.readers.File(file_root=small_photos, random_shuffle=True, seed=3)
        out = []
        with mode:
            for _ in range(2):
                for jpegs, labels in reader.next_epoch(batch_size=2, compile=compile_):
                    out.append(_constructors_body(jpegs, labels))
        return out

    ref = run(False, ndd.EvalMode.sync_cpu)
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        got = run(compile, mode)
        assert len(got) == len(ref) == 6
        for a, b in zip(got, ref):
            for x, y in zip(a, b):
                assert torch.equal(x, y)
    for shifted, first, rest, imgs in ref:    # what the body computes, by numpy
        want = imgs.numpy() + np.uint8(7)     # uint8 + uint8 stays uint8 (wraps), as DALI
        assert shifted.dtype == torch.uint8
        np.testing.assert_array_equal(shifted.numpy(), want)
        np.testing.assert_array_equal(first.numpy(), want[0].astype(np.float32))
        np.testing.assert_array_equal(rest.numpy(), want[1:])


def test_batch_of_tensors_view_shares_the_batch():
    with ndd.EvalMode.deferred:
        b = ndd.batch([np.arange(2, dtype=np.int32), np.arange(3, dtype=np.int32)]) * 2
        c = ndd.Batch(b.tensors)
        assert c._value is b._value and b._value.data is None
        assert [s.tolist() for s in _samples(c)] == [[0, 2], [0, 2, 4]]
