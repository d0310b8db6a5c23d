"""numpy / torch / DLPack interop: sharing vs copying, padding of ragged batches."""
import numpy as np
import pytest
import torch

import ndd


def test_tensor_torch_shares_memory_and_copy_does_not():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ndd.as_tensor(a)
    shared = t.torch()
    assert shared.dtype == torch.float32 and tuple(shared.shape) == (2, 3)
    assert shared.data_ptr() == a.ctypes.data
    shared[0, 0] = 42
    assert a[0, 0] == 42
    copied = t.torch(copy=True)
    copied[0, 1] = -1
    assert a[0, 1] == 1


def test_np_asarray_no_copy():
    a = np.arange(5, dtype=np.int16)
    t = ndd.as_tensor(a)
    assert np.shares_memory(np.asarray(t), a)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), a.astype(np.float64))


def test_dlpack_round_trip():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = ndd.as_tensor(a)
    assert t.__dlpack_device__() == (1, 0)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(x.numpy(), a)
    y = np.from_dlpack(t)
    np.testing.assert_array_equal(y, a)


def test_from_torch_without_copy():
    x = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    t = ndd.as_tensor(x)
    assert t.dtype is ndd.float32 and t.shape == (2, 4)
    assert np.asarray(t).ctypes.data == x.data_ptr()
    b = ndd.as_batch(x)
    assert b.batch_size == 2
    assert np.asarray(b.tensors[1]).ctypes.data == x.data_ptr() + 4 * 4
    c = ndd.tensor(x)
    assert np.asarray(c).ctypes.data != x.data_ptr()


def test_from_numpy_batch_without_copy():
    a = np.arange(24, dtype=np.uint8).reshape(4, 6)
    b = ndd.as_batch(a)
    assert np.shares_memory(np.asarray(b.tensors[2]), a)
    # a uniform batch backed by one array comes back without a copy
    tt = b.torch()
    assert tt.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(tt.numpy(), a)


def test_batch_torch_uniform_ragged_and_pad():
    s = [np.full((2, 3), 1, np.int32), np.full((2, 3), 2, np.int32)]
    u = ndd.batch(s).torch()
    assert tuple(u.shape) == (2, 2, 3) and u.dtype == torch.int32
    np.testing.assert_array_equal(u.numpy(), np.stack(s))
    r = ndd.batch([np.full((2, 3), 1, np.int32), np.full((4, 1), 2, np.int32)])
    with pytest.raises(ValueError, match="pad=True"):
        r.torch()
    p = r.torch(pad=True)
    ref = np.zeros((2, 4, 3), np.int32)
    ref[0, :2, :3] = 1
    ref[1, :4, :1] = 2
    np.testing.assert_array_equal(p.numpy(), ref)


def test_as_tensor_of_batch_pad():
    r = ndd.batch([np.ones((1, 2), np.float32), np.full((3, 1), 5, np.float32)], layout="HW")
    with pytest.raises(ValueError, match="pad"):
        ndd.as_tensor(r)
    t = ndd.as_tensor(r, pad=True)
    assert t.shape == (2, 3, 2) and t.layout == "NHW"
    ref = np.zeros((2, 3, 2), np.float32)
    ref[0, :1, :2] = 1
    ref[1, :3, :1] = 5
    np.testing.assert_array_equal(np.asarray(t), ref)


def test_bool_and_scalar_interop():
    t = ndd.tensor(np.array([True, False]))
    assert t.dtype is ndd.bool
    assert t.torch().dtype == torch.bool
    s = ndd.tensor(np.float32(2.5))
    assert float(s) == 2.5 and s.item() == 2.5
    assert int(ndd.tensor(np.int32(7))) == 7
    assert list(range(10))[ndd.tensor(np.int32(3))] == 3
    with pytest.raises(TypeError):
        list(range(3))[ndd.tensor(np.float32(1))]


def test_op_result_to_torch():
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    out = ndd.flip(ndd.tensor(img, layout="HWC"), horizontal=1).torch()
    np.testing.assert_array_equal(out.numpy(), img[:, ::-1])
    b = ndd.flip(ndd.batch([img, img]), horizontal=0, vertical=1).torch()
    np.testing.assert_array_equal(b.numpy(), np.stack([img[::-1]] * 2))
