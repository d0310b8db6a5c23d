"""DALI 2.4's ``ndd.Tensor`` constructor and methods: ``Tensor(data, dtype, device, layout, batch,
index_in_batch, copy)``, ``to_device`` / ``cpu`` / ``gpu`` (no CUDA device here: RuntimeError)."""
import traceback

import numpy as np
import pytest
import torch

import ndd
from runtime.device import gpu_available

no_gpu = pytest.mark.skipif(gpu_available(), reason="checks the no-CUDA-device errors")
MODES = [ndd.EvalMode.eager, ndd.EvalMode.deferred, ndd.EvalMode.sync_cpu,
         ndd.EvalMode.sync_full]


def _dali_round_saturate(x, lo, hi):
    """float -> int as DALI: round half away from zero, then clamp (written independently)."""
    r = np.where(x >= 0, np.floor(x + 0.5), -np.floor(-x + 0.5))
    return np.clip(r, lo, hi)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_wraps_numpy_without_copy(mode):
    with mode:
        a = np.arange(6, dtype=np.int16).reshape(2, 3)
        t = ndd.Tensor(a)
        a[0, 0] = 99
        assert np.asarray(t)[0, 0] == 99
        assert t.dtype == ndd.int16 and t.shape == (2, 3) and t.layout is None
        assert t.device == ndd.Device("cpu")


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_copy_true_detaches(mode):
    with mode:
        a = np.arange(4, dtype=np.float32)
        t = ndd.Tensor(a, copy=True)
        a[0] = -1
        np.testing.assert_array_equal(np.asarray(t), [0, 1, 2, 3])


def test_python_data_defaults():
    assert ndd.Tensor([1, 2]).dtype == ndd.int32
    assert ndd.Tensor([1.5]).dtype == ndd.float32
    assert ndd.Tensor(True).dtype == ndd.bool
    assert ndd.Tensor(3).shape == ()
    np.testing.assert_array_equal(np.asarray(ndd.Tensor([[1, 2], [3, 4]])), [[1, 2], [3, 4]])


def test_torch_cpu_tensor_is_shared():
    src = torch.arange(5, dtype=torch.int64)
    t = ndd.Tensor(src)
    src[1] = 50
    assert t.dtype == ndd.int64
    assert np.asarray(t).tolist() == [0, 50, 2, 3, 4]


@pytest.mark.parametrize("dtype,lo,hi", [(ndd.uint8, 0, 255), (ndd.int8, -128, 127),
                                         (ndd.int16, -32768, 32767)])
def test_dtype_conversion_rounds_and_saturates(dtype, lo, hi):
    x = np.array([[1.4, -2.5], [2.5, 300.7], [-0.5, 0.5]], dtype=np.float64)
    t = ndd.Tensor(x, dtype=dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(np.asarray(t), _dali_round_saturate(x, lo, hi))


def test_dtype_by_any_spelling():
    x = np.array([1, 2, 3], dtype=np.int32)
    for spec in (ndd.float64, "f64", "float64", np.float64, torch.float64):
        t = ndd.Tensor(x, dtype=spec)
        assert t.dtype == ndd.float64
        assert np.asarray(t).dtype == np.float64


def test_from_tensor_shares_and_stays_lazy():
    with ndd.EvalMode.deferred:
        base = ndd.Tensor(np.arange(4, dtype=np.int32))
        lazy = base * 3
        view = ndd.Tensor(lazy)
        assert lazy._value.data is None and view._value.data is None   # not computed
        np.testing.assert_array_equal(np.asarray(view), np.arange(4) * 3)


def test_from_tensor_with_conversion_and_layout():
    src = ndd.tensor(np.array([[0.6, 1.5], [2.5, -1.5]], np.float32), layout="HW")
    u = ndd.Tensor(src, dtype=ndd.int32)
    assert u.layout == "HW"                   # keeps the source's layout
    np.testing.assert_array_equal(np.asarray(u), [[1, 2], [3, -2]])
    v = ndd.Tensor(src, layout="AB")
    assert v.layout == "AB" and src.layout == "HW"
    np.testing.assert_array_equal(np.asarray(v), np.asarray(src))


def test_from_batch_stacks_samples():
    b = ndd.batch([np.full((2,), i, np.uint8) for i in range(3)], layout="X")
    t = ndd.Tensor(b)
    assert t.shape == (3, 2) and t.layout == "NX"
    np.testing.assert_array_equal(np.asarray(t), [[0, 0], [1, 1], [2, 2]])


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_batch_and_index_in_batch(mode):
    with mode:
        samples = [np.arange(n, dtype=np.int32) for n in (2, 3, 4)]
        b = ndd.batch(samples, layout="A")
        for i in range(3):
            t = ndd.Tensor(batch=b, index_in_batch=i)
            assert t.layout == "A"
            np.testing.assert_array_equal(np.asarray(t), samples[i])
        np.testing.assert_array_equal(np.asarray(ndd.Tensor(batch=b, index_in_batch=-1)),
                                      samples[-1])


def test_batch_argument_errors():
    b = ndd.batch([np.zeros(2), np.ones(2)])
    with pytest.raises(IndexError, match="index_in_batch 2"):
        ndd.Tensor(batch=b, index_in_batch=2)
    with pytest.raises(ValueError, match="must be a `Batch`"):
        ndd.Tensor(batch=np.zeros((2, 2)), index_in_batch=0)
    with pytest.raises(ValueError, match="Either data"):
        ndd.Tensor()


def test_layout_errors():
    with pytest.raises(ValueError, match="'ABC' has 3 letters but the data has 2"):
        ndd.Tensor(np.zeros((2, 3)), layout="ABC")
    with pytest.raises(ValueError, match="Layout must be a string"):
        ndd.Tensor(np.zeros((2, 3)), layout=2)


def test_to_device_cpu():
    t = ndd.Tensor(np.arange(3, dtype=np.int32))
    assert t.cpu() is t and t.to_device("cpu") is t and t.to_device(ndd.Device("cpu")) is t
    c = t.to_device("cpu", force_copy=True)
    assert c is not t
    np.asarray(t)[0] = 7      # the copy does not share memory
    np.testing.assert_array_equal(np.asarray(c), [0, 1, 2])


@no_gpu
def test_gpu_requests_fail_clearly_without_cuda():
    t = ndd.Tensor(np.arange(3))
    for call in (lambda: t.gpu(), lambda: t.gpu(0), lambda: t.to_device("gpu"),
                 lambda: t.to_device(ndd.Device("gpu", 0)),
                 lambda: ndd.Tensor(np.arange(3), device="gpu"),
                 lambda: ndd.Tensor(torch.zeros(2), device="gpu:0")):
        with pytest.raises(RuntimeError, match="no CUDA device"):
            call()


def test_properties_follow_numpy():
    a = np.zeros((4, 5, 3), np.uint16)
    t = ndd.Tensor(a, layout="HWC")
    assert (t.ndim, t.shape, t.size, t.itemsize, t.nbytes) == (a.ndim, a.shape, a.size,
                                                               a.itemsize, a.nbytes)
    assert t.dtype.bytes == a.itemsize


@pytest.mark.oracle
def test_constructor_matches_dali():
    dyn = pytest.importorskip("nvidia.dali.experimental.dynamic")
    cases = [([1, 2, 3], {}), ([[1.5, 2.5]], {}), (True, {}),
             (np.array([[1.4, -2.5], [2.5, 300.7]]), {"dtype": "u8"}),
             (np.array([[1.4, -2.5], [2.5, 300.7]]), {"dtype": "i8"}),
             (np.arange(6, dtype=np.int16).reshape(2, 3), {"layout": "AB"}),
             (np.arange(6, dtype=np.int16).reshape(2, 3), {"dtype": "f32", "layout": "AB"})]
    for data, kw in cases:
        ours = ndd.Tensor(data, **{k: ndd.dtype(v) if k == "dtype" else v
                                   for k, v in kw.items()})
        theirs = dyn.Tensor(data, **{k: dyn.dtype(v) if k == "dtype" else v
                                     for k, v in kw.items()})
        assert ours.dtype.name == theirs.dtype.name, (data, kw)
        assert ours.shape == theirs.shape and ours.layout == theirs.layout, (data, kw)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_cpu_tensor_has_no_cuda_array_interface():
    t = ndd.Tensor(np.arange(3))
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="not a GPU tensor"):
        t.__cuda_array_interface__


def _as_tensor_of_ragged(b):
    return ndd.as_tensor(b)   # the line the error must point at


def test_ragged_batch_to_tensor_errors_point_at_the_call():
    b = ndd.batch([[1, 2], [3]])
    with ndd.EvalMode.sync_cpu:
        with pytest.raises(ValueError, match="different shapes") as sync:
            _as_tensor_of_ragged(b)
    assert sync.value.__cause__ is None
    for mode in (ndd.EvalMode.eager, ndd.EvalMode.deferred):
        with mode:
            with pytest.raises(ValueError) as later:
                _as_tensor_of_ragged(b)
        cause = later.value.__cause__
        assert cause is not None and str(cause) == str(later.value) == str(sync.value)
        last = traceback.extract_tb(cause.__traceback__)[-1]
        assert last.filename == __file__ and "the line the error must point at" in last.line
    padded = ndd.as_tensor(b, pad=True)
    np.testing.assert_array_equal(np.asarray(padded), [[1, 2], [3, 0]])


def test_item():
    assert ndd.Tensor(np.array([[2.5]], np.float32)).item() == 2.5
    assert ndd.Tensor(7).item() == 7 and isinstance(ndd.Tensor(7).item(), int)
    with pytest.raises(ValueError, match="Tensor has 3 elements, expected 1"):
        ndd.Tensor([1, 2, 3]).item()


def test_array_protocol_copy_rules():
    a = np.arange(4, dtype=np.int32)
    t = ndd.Tensor(a)
    assert np.asarray(t) is a or np.shares_memory(np.asarray(t), a)
    assert not np.shares_memory(np.array(t, copy=True), a)
    f = np.asarray(t, dtype=np.float64)
    assert f.dtype == np.float64 and f.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="copy=False"):
        np.array(t, dtype=np.float64, copy=False)
    assert np.shares_memory(np.array(t, copy=False), a)


ENUM_CASES = [("INTERP_CUBIC", "InterpType"), ("INTERP_LINEAR", "InterpType"),
              ("YCbCr", "ImageType"), ("GRAY", "ImageType"), ("INT32", "DataType"),
              ("FLOAT", "DataType")]


@pytest.mark.parametrize("member,type_name", ENUM_CASES)
def test_enum_values_make_enum_typed_tensors(member, type_name):
    value = getattr(ndd.types, member)
    want = getattr(ndd, type_name)
    for t in (ndd.Tensor(value), ndd.Tensor(int(value), dtype=want),
              ndd.Tensor(value, dtype=want)):
        assert t.dtype == want and t.shape == ()
        as_int = ndd.tensor(t, dtype=ndd.int32)
        assert as_int.dtype == ndd.int32 and as_int.item() == int(value)
    b = ndd.Batch([value, value])
    assert b.dtype == want and ndd.batch(b, dtype=ndd.int32).tensors[1].item() == int(value)
    assert ndd.Batch([int(value)] * 3, dtype=want).dtype == want


def test_enum_type_errors():
    with pytest.raises(TypeError, match="needs integer enum values"):
        ndd.Tensor(1.5, dtype=ndd.InterpType)
    with pytest.raises(TypeError, match="different dtypes"):
        ndd.Batch([ndd.types.INT32, 3])
    assert ndd.Tensor(ndd.types.GRAY, dtype=ndd.uint8).dtype == ndd.uint8


@pytest.mark.oracle
@pytest.mark.parametrize("member,type_name", ENUM_CASES)
def test_enum_tensors_match_dali(member, type_name):
    dyn = pytest.importorskip("nvidia.dali.experimental.dynamic")
    dali_types = pytest.importorskip("nvidia.dali.types")
    value = getattr(dali_types, member)          # DALI's own enum member, as DALI code passes
    ours, theirs = ndd.Tensor(value), dyn.Tensor(value)
    assert ours.dtype.name == theirs.dtype.name == type_name
    assert ndd.tensor(ours, dtype=ndd.int32).item() == \
        dyn.tensor(theirs, dtype=dyn.int32).item()
    ob, tb = ndd.Batch([value, value]), dyn.Batch([value, value])
    assert ob.dtype.name == tb.dtype.name


def test_enum_tensors_in_ops():
    t = ndd.Tensor(ndd.types.GRAY)
    assert ndd.cast(t, dtype=ndd.float32).item() == float(int(ndd.types.GRAY))
    with pytest.raises(TypeError, match="ImageType"):
        (t + 1).evaluate()
