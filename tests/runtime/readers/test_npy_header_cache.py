"""runtime/readers/npy.py's header_of: headers remembered by their bytes give what
parse_header gives, for every distinct header; broken headers still raise each time."""
import io

import numpy as np
import pytest

from runtime.readers.npy import header_of, parse_header, read_region


def _npy(arr, version=None):
    f = io.BytesIO()
    if version is None:
        np.save(f, arr)
    else:
        np.lib.format.write_array(f, arr, version=version)
    return f.getvalue()


def test_remembered_headers_equal_parsed_ones():
    arrays = [np.zeros((2, 3), np.int16), np.zeros((3, 2), np.int16), np.zeros(5, ">f8"),
              np.asfortranarray(np.zeros((2, 3), np.uint8)), np.zeros((), np.bool_)]
    for _ in range(2):          # the second round from memory
        for arr in arrays:
            for version in (None, (2, 0)):
                data = _npy(arr, version)
                got = header_of(data, "x.npy")
                assert got == parse_header(data, "x.npy")
                assert got.shape == arr.shape and got.dtype == arr.dtype
                assert got.fortran_order == (arr.ndim > 1 and arr.flags.f_contiguous
                                             and not arr.flags.c_contiguous)
                # the header alone, or with a uint8 array of the file
                assert header_of(np.frombuffer(data, np.uint8), "x.npy") == got


def test_broken_headers_raise_every_time():
    data = bytearray(_npy(np.zeros(3, np.float32)))
    data[20:26] = b"XXXXXX"      # inside the dict literal
    for _ in range(2):
        with pytest.raises(ValueError, match="x.npy.*malformed .npy header"):
            header_of(bytes(data), "x.npy")
    with pytest.raises(ValueError, match="not a .npy file"):
        header_of(b"\x93NUMPX" + bytes(20), "x.npy")


def test_files_sharing_a_header_read_their_own_data(tmp_path):
    paths = []
    for k in range(3):
        p = str(tmp_path / f"{k}.npy")
        np.save(p, np.full((4, 5), k, np.int32))
        paths.append(p)
    for k, p in enumerate(paths):
        out, h = read_region(p)
        assert out.tolist() == np.full((4, 5), k).tolist() and out.flags.writeable
