"""GPU Tensors and Batches on the fake GPU (``runtime/gpu/fake.py``): held in device arrays,
``.gpu()`` / ``.cpu()``, wrapping device arrays without copies, device inferred from inputs,
conversions, DLPack and ``__cuda_array_interface__`` ordered after the producing stream, and the
path ``device="gpu"`` call -> placement -> GPU kernel -> launch on the lane's stream."""
from __future__ import annotations

import re

import numpy as np
import pytest

import ndd
from ndd._invoke import invoke
from runtime.device import use_api
from runtime.gpu import state
from runtime.gpu.fake import FakeApi, FakeArray
from runtime.storage import DeviceSamples
from tests.runtime.gpu._fake_ops import fake_ops


@pytest.fixture
def fake():
    api = FakeApi()
    with use_api(api), fake_ops():
        yield api
    assert api.violations == []


def _device_array(api, host):
    """A device array of the fake GPU holding ``host`` (as a user's cupy array would)."""
    arr = api.array(api.alloc(host.nbytes), 0, host.shape, host.dtype)
    arr.host[...] = host
    return arr


def test_gpu_and_cpu_round_trip_exactly(fake):
    rng = np.random.default_rng(0)
    samples = [rng.integers(0, 255, (h, 3, 3), dtype=np.uint8) for h in (2, 5, 1)]
    b = ndd.batch(samples, layout="HWC")
    g = b.gpu()
    assert g.device == ndd.Device("gpu", 0) and g.layout == "HWC" and g.dtype == ndd.uint8
    assert isinstance(g._value.data, DeviceSamples) and g.shape == [s.shape for s in samples]
    back = g.cpu()
    assert back.device.kind == "cpu"
    for got, want in zip(back.tensors, samples):
        np.testing.assert_array_equal(np.asarray(got), want)
    t = ndd.tensor(np.arange(5, dtype=np.int32)).gpu()
    assert t.device.kind == "gpu" and np.asarray(t.cpu()).tolist() == [0, 1, 2, 3, 4]
    assert g.gpu() is g and back.cpu() is back


def test_constructors_on_the_gpu(fake):
    t = ndd.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="gpu", layout="HW")
    assert t.device.kind == "gpu" and t.layout == "HW" and t.shape == (2, 3)
    assert ndd.Tensor(t) ._value is t._value                     # shared, no conversion
    c = ndd.tensor(t)                                            # a copy on the same GPU
    assert c.device.kind == "gpu" and c._value is not t._value
    assert fake.memory_of(c._value.data[0]) is not fake.memory_of(t._value.data[0])
    np.testing.assert_array_equal(np.asarray(c.cpu()), np.arange(6).reshape(2, 3))
    b = ndd.Batch([np.ones(3, np.int16), np.zeros(2, np.int16)], device="gpu:0")
    assert b.device.kind == "gpu" and b.shape == [(3,), (2,)]
    empty = ndd.batch([], dtype=ndd.float32, device="gpu")
    assert empty.device.kind == "gpu" and empty.batch_size == 0
    with pytest.raises(RuntimeError, match="gpu:3.*does not exist"):
        ndd.tensor([1], device="gpu:3")


def test_device_arrays_are_wrapped_without_copies(fake):
    host = np.arange(12, dtype=np.uint8).reshape(3, 4)
    arr = _device_array(fake, host)
    t = ndd.as_tensor(arr)                                       # device inferred: the GPU
    assert t.device.kind == "gpu" and t.dtype == ndd.uint8
    assert fake.memory_of(t._value.data[0]) is arr.mem           # a view, not a copy
    b = ndd.as_batch(arr, layout="W")                            # leading dim = samples
    assert b.batch_size == 3 and b.layout == "W"
    assert all(s.mem is arr.mem for s in b._value.data)
    items = ndd.as_batch([_device_array(fake, host[0]), ndd.tensor(host[1]).gpu()])
    assert items.device.kind == "gpu" and items.shape == [(4,), (4,)]
    np.testing.assert_array_equal(np.asarray(items.cpu().tensors[1]), host[1])
    with pytest.raises(ValueError, match="different numbers of dimensions"):
        ndd.as_batch([arr, ndd.tensor(host[0]).gpu()])
    with pytest.raises(TypeError, match="host data among GPU samples"):
        ndd.as_batch([arr, host])


def test_conversions_of_gpu_data_follow_dalis_cast(fake):
    arr = _device_array(fake, np.array([2.5, -0.5, 300.0, -7.2], np.float32))
    t = ndd.as_tensor(arr, dtype=ndd.uint8)
    assert t.device.kind == "gpu"
    assert np.asarray(t.cpu()).tolist() == [3, 0, 255, 0]
    i = ndd.as_tensor(arr, dtype=ndd.int8, device="cpu")
    assert i.device.kind == "cpu" and np.asarray(i).tolist() == [3, -1, 127, -7]


def test_ops_on_the_gpu_equal_the_cpu_kernels(fake):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    vals = ndd.batch([np.float32(v) for v in (0.5, -1.0, 2.0, 3.5)])
    cpu = invoke("gputest.add", (ndd.batch(xs),), {"value": vals}, device="cpu")
    want = [np.asarray(s) for s in cpu.tensors]
    gpu = invoke("gputest.add", (ndd.batch(xs),), {"value": vals}, device="gpu")   # eager
    assert gpu.device.kind == "gpu"
    for got, w in zip(gpu.cpu().tensors, want):
        np.testing.assert_array_equal(np.asarray(got), w)
    inferred = invoke("gputest.scale", (gpu,), {"factor": 2.0})        # the input's device
    assert inferred.device.kind == "gpu"
    for got, w in zip(inferred.cpu().tensors, want):
        np.testing.assert_array_equal(np.asarray(got), w * np.float32(2))
    with ndd.EvalMode.deferred:
        g = ndd.batch(xs).gpu()
        out = invoke("gputest.sum", (invoke("gputest.add", (g,), {"value": vals}),
                                     invoke("gputest.scale", (g,), {"factor": 2.0})), {})
        got = [np.asarray(s) for s in out.cpu().tensors]
    for r, x, w in zip(got, xs, want):
        np.testing.assert_array_equal(r, w + x * np.float32(2))
    lanes = {s for s, w in fake.log if "launch" in w}
    assert len(lanes) >= 2             # the two branches ran on two lane streams


def test_dlpack_and_cai_are_ordered_after_the_producer(fake):
    t = ndd.tensor(np.arange(4, dtype=np.float32), device="gpu")
    samples = t._value.data
    t.__dlpack__(stream=0x1234)
    consumer = fake.external_stream(0x1234)
    assert (consumer.name, f"wait e{samples.ready.id}") in fake.log
    cai = t.__cuda_array_interface__
    assert cai["stream"] == state.current().lane_stream(0, 0).handle
    assert cai["shape"] == (4,) and cai["typestr"] == "<f4"
    assert t.__dlpack_device__() == (2, 0)
    with pytest.raises(TypeError, match="not a CPU tensor"):
        np.asarray(t)


def test_selection_repr_and_scalars_on_the_gpu(fake):
    b = ndd.batch([np.full((2,), k, np.int32) for k in range(4)]).gpu()
    sub = b.tensors[1:3]
    assert sub.device.kind == "gpu" and isinstance(sub._value.data, DeviceSamples)
    assert [np.asarray(s).tolist() for s in sub.cpu().tensors] == [[1, 1], [2, 2]]
    one = ndd.tensor(np.float32(2.5), device="gpu")
    assert one.item() == 2.5 and float(one) == 2.5 and bool(one)
    assert re.search(r"\[1 1\].*device=gpu:0", repr(b.tensors[1]), re.S)


def test_numpy_reader_on_the_gpu(fake, tmp_path):
    for i in range(3):
        np.save(tmp_path / f"{i}.npy", np.full((2, 2), i, np.int16))
    reader = ndd.readers.Numpy(file_root=str(tmp_path), device="gpu")
    (batch,), = list(reader.next_epoch(batch_size=3))
    assert batch.device.kind == "gpu"
    assert sorted(int(np.asarray(t)[0, 0]) for t in batch.cpu().tensors) == [0, 1, 2]


def test_streams_on_the_fake_gpu(fake):
    s = ndd.stream()
    assert s.device_id == 0 and isinstance(s.handle, int)
    s.synchronize()
    assert ("host", f"sync {fake.external_stream(s.handle).name}") in fake.log


def test_a_gpu_batch_as_one_tensor(fake):
    samples = [np.full((2, 3), k, np.float32) for k in range(3)]
    b = ndd.batch(samples, layout="HW").gpu()
    t = ndd.as_tensor(b)
    assert t.device.kind == "gpu" and t.shape == (3, 2, 3) and t.layout == "NHW"
    assert t._value.data[0].mem is b._value.data[0].mem          # a view of the batch's block
    np.testing.assert_array_equal(np.asarray(t.cpu()), np.stack(samples))
    ragged = ndd.batch([np.ones((1, 2), np.int32), np.ones((2, 1), np.int32)]).gpu()
    with pytest.raises(ValueError, match="pad=True"):
        ndd.as_tensor(ragged)
    padded = ndd.tensor(ragged, pad=True)
    assert padded.device.kind == "gpu"
    np.testing.assert_array_equal(np.asarray(padded.cpu()), [[[1, 1], [0, 0]], [[1, 0], [1, 0]]])
