"""runtime/kernels/cpu/numpy_decode.py: .npy bytes -> arrays, checked against numpy.load."""
import io

import numpy as np
import pytest

from runtime.kernels.cpu.numpy_decode import decode_npy


def _npy(a, version=None) -> np.ndarray:
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return np.frombuffer(b.getvalue(), np.uint8)


ARRAYS = [
    np.arange(24, dtype=np.int16).reshape(2, 3, 4),
    np.asfortranarray(np.arange(35, dtype=np.float32).reshape(5, 7) / 3),
    np.arange(10, dtype="<i4") - 5,
    np.asfortranarray((np.arange(12, dtype="<f8") / 7).reshape(3, 4)),
    np.array([True, False, True]),
    np.float16(2.5) * np.ones((1, 1, 3), np.float16),
    np.array(7, np.uint64),
    np.zeros((0, 3), np.uint8),
    np.array([-128, 127], np.int8),
]


@pytest.mark.parametrize("arr", ARRAYS, ids=lambda a: f"{a.dtype.str}{a.shape}")
def test_matches_numpy_load(arr):
    data = _npy(arr)
    ref = np.load(io.BytesIO(data.tobytes()))
    out = decode_npy(data)
    assert out.dtype == ref.dtype.newbyteorder("=") and out.shape == ref.shape
    assert out.flags.c_contiguous and out.dtype.isnative
    np.testing.assert_array_equal(out, ref)


def test_reads_other_shapes_flat():
    arr = np.arange(6, dtype=np.int32)
    np.testing.assert_array_equal(decode_npy(_npy(arr).reshape(1, -1)), arr)


def test_decodes_from_a_view_inside_a_bigger_buffer():
    arr = np.arange(6, dtype=np.int32)
    blob = np.concatenate([np.zeros(3, np.uint8), _npy(arr), np.zeros(5, np.uint8)])
    np.testing.assert_array_equal(decode_npy(blob[3:-5]), arr)
    np.testing.assert_array_equal(decode_npy(blob[3:]), arr)     # trailing bytes ignored


@pytest.mark.parametrize("bad,match", [
    (np.frombuffer(b"not an npy file at all", np.uint8), "not a .npy file"),
    (_npy(np.arange(100, dtype=np.int32))[:200], "truncated"),
    (_npy(np.arange(3), version=(2, 0)), "version 2.0"),
    (_npy(np.zeros(3, np.complex64)), "unsupported dtype"),
    (_npy(np.zeros(3, dtype=[("a", "i4")])), "unsupported dtype"),
    (_npy(np.zeros(2, "U3")), "unsupported dtype"),
    (_npy(np.arange(3, dtype=">i4")), "Big Endian"),
])
def test_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        decode_npy(bad)
