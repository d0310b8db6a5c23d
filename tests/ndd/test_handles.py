"""ndd.Tensor / ndd.Batch: construction (copy vs wrap), metadata, slicing, sample selection,
iteration, operators and repr, checked against numpy (and the C library for math functions)."""
import ctypes
import ctypes.util

import numpy as np
import pytest

import ndd


def _np(x):
    return np.asarray(x)


def _c_float32(name, *args):
    """The C library's float32 function ``name + "f"`` (what DALI calls), element by element."""
    fn = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name + "f")
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float] * len(args)
    return np.array([fn(*(float(v) for v in vs)) for vs in zip(*args)], np.float32)


# ------------------------------------------------------------------ construction
def test_as_tensor_shares_numpy_memory_tensor_copies():
    a = np.arange(12, dtype=np.uint8).reshape(3, 4)
    wrapped = ndd.as_tensor(a)
    copied = ndd.tensor(a)
    assert np.shares_memory(_np(wrapped), a)
    assert not np.shares_memory(_np(copied), a)
    a[0, 0] = 99
    assert _np(wrapped)[0, 0] == 99
    assert _np(copied)[0, 0] == 0


def test_tensor_metadata():
    a = np.zeros((5, 7, 3), np.float32)
    t = ndd.tensor(a, layout="HWC")
    assert t.shape == (5, 7, 3)
    assert t.dtype is ndd.float32
    assert t.ndim == 3
    assert t.layout == "HWC"
    assert t.device.kind == "cpu"
    assert t.cpu() is t
    assert t.evaluate() is t
    assert ndd.tensor(a).layout is None


def test_tensor_dtype_conversion_rounds_half_away():
    t = ndd.tensor([0.5, 1.5, 2.5, -0.5, 300.0, -3.0], dtype=ndd.uint8)
    np.testing.assert_array_equal(_np(t), [1, 2, 3, 0, 255, 0])
    assert t.dtype is ndd.uint8


def test_python_scalars_and_lists_default_types():
    assert ndd.tensor(1.5).dtype is ndd.float32
    assert ndd.tensor([1, 2]).dtype is ndd.int32
    assert ndd.tensor(np.float64(1.0)).dtype is ndd.float64


def test_layout_mismatch_raises():
    with pytest.raises(ValueError, match="HWC"):
        ndd.tensor(np.zeros((2, 2)), layout="HWC")


def test_unconvertible_data_raises_type_error():
    with pytest.raises(TypeError, match="dict"):
        ndd.tensor({"a": 1})
    with pytest.raises((TypeError, ValueError), match="ragged"):
        ndd.tensor([[1, 2], [3]])


def test_gpu_without_gpu_raises_clearly():
    from runtime.device import gpu_available
    if gpu_available():
        pytest.skip("a GPU is present")
    t = ndd.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="(?i)gpu|cuda"):
        t.gpu()
    b = ndd.batch([[1, 2]])
    with pytest.raises(RuntimeError, match="(?i)gpu|cuda"):
        b.gpu()
    with pytest.raises(RuntimeError, match="(?i)gpu|cuda"):
        ndd.tensor([1], device="gpu")


def test_batch_copies_as_batch_wraps():
    samples = [np.arange(6, dtype=np.int16).reshape(2, 3), np.arange(3, dtype=np.int16)[None]]
    wrapped = ndd.as_batch(samples)
    copied = ndd.batch(samples)
    assert np.shares_memory(_np(wrapped.tensors[0]), samples[0])
    assert not np.shares_memory(_np(copied.tensors[0]), samples[0])
    assert wrapped.batch_size == 2 and len(wrapped) == 2
    assert wrapped.shape == [(2, 3), (1, 3)]
    assert wrapped.dtype is ndd.int16
    assert wrapped.ndim == 2


def test_batch_from_stacked_array():
    a = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    b = ndd.as_batch(a, layout="HW")
    assert b.batch_size == 4
    assert b.layout == "HW"
    for i in range(4):
        np.testing.assert_array_equal(_np(b.tensors[i]), a[i])


def test_batch_mixed_dtypes_or_ndims_rejected():
    with pytest.raises(TypeError, match="dtype"):
        ndd.batch([np.zeros(2, np.uint8), np.zeros(2, np.float32)])
    with pytest.raises(ValueError, match="dimensions"):
        ndd.batch([np.zeros(2), np.zeros((2, 2))])
    with pytest.raises(ValueError):
        ndd.batch([])


def test_batch_dtype_argument():
    b = ndd.batch([[1.4, 2.6], [-1.5, 0.2]], dtype="int32")
    assert b.dtype is ndd.int32
    np.testing.assert_array_equal(_np(b.tensors[1]), [-2, 0])


# ------------------------------------------------------------------ sample selection
@pytest.fixture
def ragged():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
            for h, w in [(4, 5), (6, 3), (2, 8), (5, 5)]]


def test_tensors_int_slice_list(ragged):
    b = ndd.batch(ragged, layout="HWC")
    t = b.tensors[1]
    assert isinstance(t, ndd.Tensor)
    np.testing.assert_array_equal(_np(t), ragged[1])
    assert t.layout == "HWC"
    np.testing.assert_array_equal(_np(b.tensors[-1]), ragged[-1])
    sub = b.tensors[1:3]
    assert isinstance(sub, ndd.Batch) and sub.batch_size == 2
    np.testing.assert_array_equal(_np(sub.tensors[0]), ragged[1])
    picked = b.tensors[[3, 0]]
    assert picked.batch_size == 2 and picked.layout == "HWC"
    np.testing.assert_array_equal(_np(picked.tensors[0]), ragged[3])
    np.testing.assert_array_equal(_np(picked.tensors[1]), ragged[0])
    with pytest.raises(IndexError, match="4"):
        b.tensors[4]
    with pytest.raises(TypeError):
        b.tensors["a"]


def test_batch_getitem_names_tensors_and_slice(ragged):
    b = ndd.batch(ragged)
    with pytest.raises(TypeError) as ei:
        b[0]
    assert ".tensors" in str(ei.value) and ".slice" in str(ei.value)


def test_iteration_yields_tensors(ragged):
    b = ndd.batch(ragged)
    got = list(b)
    assert len(got) == 4
    for t, ref in zip(got, ragged):
        assert isinstance(t, ndd.Tensor)
        np.testing.assert_array_equal(_np(t), ref)


# ------------------------------------------------------------------ slicing
def test_tensor_slicing_matches_numpy():
    a = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    t = ndd.tensor(a, layout="HWC")
    for idx in [1, -1, (slice(None), 2), (slice(1, 3), slice(None, None, 2), 0),
                (Ellipsis, 1), (0, Ellipsis), (slice(None, None, -1),), (1, 2, 3)]:
        np.testing.assert_array_equal(_np(t[idx]), a[idx], err_msg=str(idx))
    assert t[0].layout == "WC"
    assert t[:, 0].layout == "HC"
    assert t[..., 0].layout == "HW"
    assert t[1:2].layout == "HWC"
    np.testing.assert_array_equal(_np(t[None]), a[None])


def test_tensor_slicing_errors():
    t = ndd.tensor(np.zeros((2, 3)))
    with pytest.raises(IndexError):
        t[0, 0, 0]
    with pytest.raises(IndexError):
        t[..., 0, ...]


def test_tensor_index_out_of_range():
    t = ndd.tensor(np.zeros((2, 3)))
    with pytest.raises((IndexError, ValueError)):
        t[5].evaluate()


def test_batch_slice_scalars_and_slices(ragged):
    b = ndd.batch(ragged, layout="HWC")
    s = b.slice[0]
    assert isinstance(s, ndd.Batch) and s.batch_size == 4
    assert s.layout == "WC"
    for i in range(4):
        np.testing.assert_array_equal(_np(s.tensors[i]), ragged[i][0])
    s2 = b.slice[1:, ::2, 2]
    assert s2.layout == "HW"
    for i in range(4):
        np.testing.assert_array_equal(_np(s2.tensors[i]), ragged[i][1:, ::2, 2])


def test_batch_slice_with_per_sample_batch_indices(ragged):
    b = ndd.batch(ragged, layout="HWC")
    stops = ndd.batch([np.int32(s.shape[0] // 2) for s in ragged])
    starts = ndd.batch([np.int32(0), np.int32(1), np.int32(0), np.int32(2)])
    out = b.slice[starts:stops]
    assert out.batch_size == 4
    for i, s in enumerate(ragged):
        lo, hi = [0, 1, 0, 2][i], s.shape[0] // 2
        np.testing.assert_array_equal(_np(out.tensors[i]), s[lo:hi])
    at = ndd.batch([np.int32(i % 2) for i in range(4)])
    col = b.slice[:, at]
    assert col.layout == "HC"
    for i, s in enumerate(ragged):
        np.testing.assert_array_equal(_np(col.tensors[i]), s[:, i % 2])


@pytest.mark.parametrize("mode", ["eager", "deferred", "sync_cpu"])
def test_batch_slice_with_per_sample_steps(ragged, mode):
    """DALI 2.4's Batch.slice docstring: start, stop and step may each be a Batch (one per
    sample); a zero step of one sample is that sample's error."""
    b = ndd.batch(ragged, layout="HWC")
    steps = [1, 2, -1, 3]
    with getattr(ndd.EvalMode, mode):
        out = b.slice[ndd.batch([np.int32(0), np.int32(1), np.int32(-1), np.int32(0)]):
                      :ndd.batch([np.int32(v) for v in steps]), 1]
        for i, s in enumerate(ragged):
            lo = [0, 1, -1, 0][i]
            np.testing.assert_array_equal(_np(out.tensors[i]), s[lo::steps[i], 1])
        assert out.layout == "HC"
        with pytest.raises(ValueError, match="sample 1: slice step cannot be zero"):
            # raised at the call under sync_cpu, at evaluate() under eager/deferred
            b.slice[::ndd.batch([np.int32(v) for v in (1, 0, 1, 1)])].evaluate()


def test_integer_indices_on_every_axis_give_0d_samples():
    """DALI: ``xy.slice[0]`` of 1-D samples is a batch of scalars (shape ()), usable where a
    per-sample scalar argument is expected (the usage guide's ``crop_pos_x=xy.slice[0]``)."""
    xy = ndd.batch([np.array([0.25, 0.75], np.float32), np.array([1.0, 0.0], np.float32)])
    x = xy.slice[0]
    assert x.shape == [(), ()] and x.ndim == 0
    assert [float(np.asarray(t)) for t in x.tensors] == [0.25, 1.0]
    assert tuple(x.torch().shape) == (2,)
    assert ndd.tensor([4, 5, 6])[1].shape == () and int(ndd.tensor([4, 5, 6])[1]) == 5
    assert np.asarray(ndd.tensor([[1, 2]])[0, 1]).shape == ()
    img = np.arange(8 * 10 * 3, dtype=np.uint8).reshape(8, 10, 3)
    out = ndd.crop(ndd.batch([img, img], layout="HWC"), crop=(4, 4), crop_pos_x=x,
                   crop_pos_y=xy.slice[1])
    # sample 0: x0 = round(0.25 * (10 - 4)) = round(1.5) = 2, y0 = round(0.75 * (8 - 4)) = 3;
    # sample 1: x0 = round(1.0 * 6) = 6, y0 = 0
    np.testing.assert_array_equal(_np(out.tensors[0]), img[3:7, 2:6])
    np.testing.assert_array_equal(_np(out.tensors[1]), img[0:4, 6:10])


def test_0d_samples_convert_to_numpy():
    """``np.asarray`` of a 0-d sample of any op (comparison, cast, random with an integer
    dtype) is a 0-d array."""
    cmp = ndd.batch([1.0, 2.0]) < 1.5
    assert [np.asarray(t).item() for t in cmp.tensors] == [True, False]
    u8 = ndd.cast(ndd.batch([1, 300]), dtype=ndd.uint8)
    got = [np.asarray(t) for t in u8.tensors]
    assert [(a.shape, a.dtype) for a in got] == [((), np.uint8)] * 2 and int(got[0]) == 1
    flips = ndd.random.coin_flip(batch_size=3, probability=1.0, dtype=ndd.bool)
    assert [np.asarray(t).item() for t in flips.tensors] == [True] * 3


def test_per_sample_index_batch_size_mismatch(ragged):
    b = ndd.batch(ragged)
    bad = ndd.batch([np.int32(0)] * 3)
    with pytest.raises(ValueError, match="batch size"):
        b.slice[bad]


# ------------------------------------------------------------------ operators
def test_operators_match_numpy_int():
    a = np.array([[-7, 3], [11, -991]], np.int32)
    c = np.array([[2, -2], [5, 30]], np.int32)
    ta, tc = ndd.tensor(a), ndd.tensor(c)
    np.testing.assert_array_equal(_np(ta + tc), a + c)
    np.testing.assert_array_equal(_np(ta - tc), a - c)
    np.testing.assert_array_equal(_np(ta * tc), a * c)
    np.testing.assert_array_equal(_np(-ta), -a)
    np.testing.assert_array_equal(_np(ta & tc), a & c)
    np.testing.assert_array_equal(_np(ta | tc), a | c)
    np.testing.assert_array_equal(_np(ta ^ tc), a ^ c)
    # DALI: integer // and % truncate toward zero
    np.testing.assert_array_equal(_np(ta // tc), np.trunc(a / c).astype(np.int32))
    np.testing.assert_array_equal(_np(ta % tc), np.fmod(a, c))
    tdiv = ta / tc
    assert tdiv.dtype is ndd.float32
    # exact: small ints are exact in float32, and the float64 quotient rounded to float32 is
    # the correctly rounded float32 quotient (53 >= 2 x 24 + 2 bits: no double rounding)
    np.testing.assert_array_equal(_np(tdiv), (a / c).astype(np.float32))


def test_comparisons_give_bool():
    a = np.array([1, 5, 3], np.uint8)
    t = ndd.tensor(a)
    for op, ref in [(t < 3, a < 3), (t <= 3, a <= 3), (t > 3, a > 3), (t >= 3, a >= 3),
                    (t == 3, a == 3), (t != 3, a != 3), (3 < t, 3 < a)]:
        assert op.dtype is ndd.bool
        np.testing.assert_array_equal(_np(op), ref)


def test_promotion_hand_cases():
    u8 = ndd.tensor(np.array([250, 10], np.uint8))
    r = u8 + 10
    assert r.dtype is ndd.int32
    np.testing.assert_array_equal(_np(r), [260, 20])
    w = u8 + u8          # wraps in uint8 (DALI)
    assert w.dtype is ndd.uint8
    np.testing.assert_array_equal(_np(w), [244, 20])
    assert (u8 * 1.5).dtype is ndd.float32
    assert (ndd.tensor(np.int8([1])) + 1).dtype is ndd.int32
    assert (ndd.tensor(np.float64([1])) + ndd.tensor(np.float32([1]))).dtype is ndd.float64


def test_reverse_operators():
    a = np.array([1.0, 2.0, 4.0], np.float32)
    t = ndd.tensor(a)
    # exact: every result (9, 8, 6; 8, 4, 2; 2, 4, 16) is a float32 number
    np.testing.assert_array_equal(_np(10 - t), 10 - a)
    np.testing.assert_array_equal(_np(8 / t), 8 / a)
    np.testing.assert_array_equal(_np(2 ** t), 2 ** a)


def test_batch_operators_per_sample(ragged):
    b = ndd.batch(ragged)
    out = b.slice[..., 0] - b.slice[..., 1]
    assert isinstance(out, ndd.Batch)
    for i, s in enumerate(ragged):
        np.testing.assert_array_equal(_np(out.tensors[i]),
                                      s[..., 0].astype(np.int32) - s[..., 1].astype(np.int32)
                                      if out.dtype is ndd.int32 else s[..., 0] - s[..., 1])


def test_batch_and_tensor_operand_broadcast():
    b = ndd.batch([np.array([1, 2], np.float32), np.array([3, 4], np.float32)])
    t = ndd.tensor(np.array([10, 20], np.float32))
    out = b + t
    assert isinstance(out, ndd.Batch)
    np.testing.assert_array_equal(_np(out.tensors[1]), [13, 24])


def test_math_functions_against_numpy_and_the_c_library():
    a = np.array([0.25, 1.0, 4.0, 9.0], np.float32)
    t = ndd.tensor(a)
    # exact: sqrt, floor and ceil are correctly rounded, numpy's too
    for name, ref in [("sqrt", np.sqrt), ("floor", np.floor), ("ceil", np.ceil)]:
        out = getattr(ndd.math, name)(t)
        assert out.dtype is ndd.float32, name
        np.testing.assert_array_equal(_np(out), ref(a), err_msg=name)
    # exact: these are the C library's float32 functions, as in DALI (numpy's own float32 ones
    # differ from them per CPU, by 1 ulp for some of these inputs here)
    for name in ("exp", "log", "log2", "sin", "tanh", "cbrt"):
        out = getattr(ndd.math, name)(t)
        assert out.dtype is ndd.float32, name
        np.testing.assert_array_equal(_np(out), _c_float32(name, a), err_msg=name)
    # rsqrt is 1 / sqrt(x), both correctly rounded float32 operations
    np.testing.assert_array_equal(_np(ndd.math.rsqrt(t)), np.float32(1) / np.sqrt(a))
    np.testing.assert_array_equal(_np(ndd.math.atan2(t, t + 1)), _c_float32("atan2", a, a + 1))
    np.testing.assert_array_equal(_np(ndd.math.min(t, 2.0)), np.minimum(a, 2))
    np.testing.assert_array_equal(_np(ndd.math.max(t, 2.0)), np.maximum(a, 2))


def test_math_int_input_gives_float32_and_clamp_int32():
    u8 = ndd.tensor(np.array([4, 9, 255], np.uint8))
    s = ndd.math.sqrt(u8)
    assert s.dtype is ndd.float32
    # exact: the uint8 values convert exactly and float32 sqrt is correctly rounded
    np.testing.assert_array_equal(_np(s), np.sqrt(np.float32([4, 9, 255])))
    c = ndd.math.clamp(u8, 50, 200)
    assert c.dtype is ndd.int32
    np.testing.assert_array_equal(_np(c), [50, 50, 200])
    assert ndd.math.abs(ndd.tensor(np.int16([-3]))).dtype is ndd.int16


def test_operator_of_scalars_only_gives_a_0d_tensor():
    r = ndd.math.max(1, 3)
    assert r.dtype == ndd.int32 and r.shape == () and int(_np(r)) == 3
    assert ndd.math.sqrt(4.0).dtype == ndd.float32


# ------------------------------------------------------------------ repr
def test_repr_readable(ragged):
    t = ndd.tensor(np.array([[1, 2], [3, 4]], np.uint8), layout="HW")
    r = repr(t)
    assert r.startswith("Tensor(") and "dtype=uint8" in r and 'layout="HW"' in r
    assert "[3 4]" in r
    lines = r.splitlines()
    assert lines[1].index("[[") + 1 == lines[2].index("[3"), r   # rows aligned
    rb = repr(ndd.batch(ragged, layout="HWC"))
    assert "batch_size=4" in rb and "uint8" in rb and "HWC" in rb


def test_numpy_scalar_on_the_left_gives_a_batch():
    """``np.float32(0.5) * batch`` is a Batch with the reflected op's values (DALI), not a
    numpy array built by iterating over the samples."""
    f = np.arange(4, dtype=np.float32)
    b = ndd.batch([f, f + 1])
    for got, want in ((np.float32(0.5) * b, [0.5 * f, 0.5 * (f + 1)]),
                      (np.int32(1) - b, [1 - f, 1 - (f + 1)]),
                      (np.float32(2) + b, [2 + f, 3 + f])):
        assert isinstance(got, ndd.Batch) and got.dtype == ndd.float32
        for t, w in zip(got.tensors, want):
            np.testing.assert_array_equal(_np(t), w.astype(np.float32))
    u8 = ndd.batch([np.array([1, 200], np.uint8)])
    got = np.int32(300) - u8        # a typed numpy scalar keeps its type: int32 (DALI)
    assert got.dtype == ndd.int32 and _np(got.tensors[0]).tolist() == [299, 100]


def test_tensor_size_itemsize_nbytes():
    """DALI's Tensor attributes: elements, bytes per element, bytes."""
    t = ndd.tensor(np.zeros((2, 3), np.float32))
    assert (t.size, t.itemsize, t.nbytes) == (6, 4, 24)
    s = ndd.tensor(np.uint16(7))
    assert (s.size, s.itemsize, s.nbytes) == (1, 2, 2)
    img = ndd.batch([np.zeros((5, 4, 3), np.uint8)]).tensors[0]
    assert (img.size, img.nbytes) == (60, 60)


def test_tensor_of_a_batch_stacks_a_copy():
    """DALI: ``ndd.tensor(batch)`` is one tensor with a leading sample dimension (a copy)."""
    x = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    b = ndd.batch([x[0], x[1]], layout="HW")
    t = ndd.tensor(b)
    assert t.shape == (2, 3, 4) and t.layout == "NHW"
    np.testing.assert_array_equal(_np(t), x)
    arr = _np(t)
    arr[0, 0, 0] = 99                       # a copy: the batch keeps its data
    assert _np(b.tensors[0])[0, 0] == 0
    ragged = ndd.batch([np.ones(2, np.float32), np.ones(3, np.float32)])
    with pytest.raises(ValueError, match="pad=True"):
        ndd.tensor(ragged)
    np.testing.assert_array_equal(_np(ndd.tensor(ragged, pad=True)), [[1, 1, 0], [1, 1, 1]])


def test_math_functions_of_python_scalars_give_tensors():
    """DALI: ``ndd.math.sqrt(4.0)`` is a 0-d float32 Tensor (scalars take their default
    types: float -> float32, int -> int32)."""
    r = ndd.math.sqrt(4.0)
    assert isinstance(r, ndd.Tensor) and r.dtype == ndd.float32 and float(_np(r)) == 2.0
    c = ndd.math.clamp(5, 0, 3)
    assert c.dtype == ndd.int32 and int(_np(c)) == 3
    # exact: the C library's atan2f (as DALI) gives pi / 4 correctly rounded to float32
    assert float(_np(ndd.math.atan2(1.0, 1.0))) == np.float32(np.pi / 4)


def test_an_int_scalar_outside_int32_is_an_overflow_error_too():
    """DALI raises OverflowError for ``images + 2**40``; ndd's error is a ValueError and an
    OverflowError, naming the op."""
    b = ndd.batch([np.zeros((2, 2), np.uint8)])
    with pytest.raises(OverflowError, match="arithmetic: .*out of range for int32"):
        b + 2 ** 40
    with pytest.raises(ValueError):
        ndd.tensor(np.zeros(2, np.uint8)) - 2 ** 40


def test_batch_torch_positional_arguments_are_dalis_copy_then_pad():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = ndd.as_batch(x)
    shared, copied = b.torch(), b.torch(True)
    assert shared.data_ptr() == x.ctypes.data and copied.data_ptr() != x.ctypes.data
    ragged = ndd.batch([np.ones(2, np.float32), np.ones(3, np.float32)])
    with pytest.raises(ValueError, match="pad=True"):
        ragged.torch(True)
    assert tuple(ragged.torch(False, True).shape) == (2, 3)
