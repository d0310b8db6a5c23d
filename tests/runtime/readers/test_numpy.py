"""runtime/readers/npy.py and numpy_reader.py: headers, regions, listing, the core."""
import os
import struct

import numpy as np
import pytest

from runtime.readers.npy import parse_header, read_region
from runtime.readers.numpy_reader import NumpyReaderCore, RoiSpec, index_numpy_files, \
    resolve_roi

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64"]


def _write_npy(path, arr, version):
    """An .npy file written by hand (not by numpy.save), in the given format version."""
    descr = arr.dtype.str if arr.dtype != bool else "|b1"
    fortran = arr.flags.f_contiguous and not arr.flags.c_contiguous
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {arr.shape!r}, }}"
    pre = 10 if version == 1 else 12
    pad = (-(pre + len(text) + 1)) % 64
    head = (text + " " * pad + "\n").encode("latin-1")
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]))
        f.write(struct.pack("<H" if version == 1 else "<I", len(head)))
        f.write(head)
        f.write(arr.tobytes(order="F" if fortran else "C"))


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_and_version(tmp_path, dtype, version):
    rng = np.random.default_rng(len(dtype) + version)
    arr = (rng.integers(0, 100, (3, 4, 5)) % (2 if dtype == "bool" else 100)).astype(dtype)
    p = str(tmp_path / "a.npy")
    _write_npy(p, arr, version)
    out, header = read_region(p)
    assert out.dtype == np.dtype(dtype) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.load(p))
    np.testing.assert_array_equal(out, arr)
    assert header.data_offset % 64 == 0


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("use_mmap", [True, False])
def test_order_endianness_and_regions(tmp_path, order, endian, use_mmap):
    arr = np.arange(4 * 5 * 6, dtype=endian + "i4").reshape(4, 5, 6)
    arr = np.asfortranarray(arr) if order == "F" else arr
    p = str(tmp_path / "a.npy")
    np.save(p, arr)
    whole, h = read_region(p, use_mmap=use_mmap)
    assert h.fortran_order == (order == "F")
    assert whole.dtype == np.dtype("=i4") and whole.dtype.isnative
    np.testing.assert_array_equal(whole, np.arange(120).reshape(4, 5, 6))
    for start, end in [((1, 2, 3), (3, 4, 5)), ((0, 0, 0), (4, 5, 6)), ((2, 0, 0), (3, 5, 6)),
                       ((0, 1, 0), (4, 2, 6)), ((1, 1, 1), (1, 3, 3)), ((3, 4, 5), (4, 5, 6))]:
        out, _ = read_region(p, start, end, use_mmap=use_mmap)
        ref = np.load(p)[tuple(slice(s, e) for s, e in zip(start, end))]
        np.testing.assert_array_equal(out, ref)
        assert out.flags.c_contiguous and out.flags.writeable


def test_pread_reads_only_the_region(tmp_path, monkeypatch):
    arr = np.arange(10 * 100, dtype=np.float64).reshape(10, 100)
    p = str(tmp_path / "a.npy")
    np.save(p, arr)
    calls = []
    real = os.preadv

    def spy(fd, bufs, off):
        calls.append((off, sum(len(b) for b in bufs)))
        return real(fd, bufs, off)

    monkeypatch.setattr(os, "preadv", spy)
    out, h = read_region(p, (2, 10), (5, 14), use_mmap=False)
    np.testing.assert_array_equal(out, arr[2:5, 10:14])
    # three runs of 4 float64 each, at the rows' offsets
    assert calls == [(h.data_offset + 8 * (r * 100 + 10), 32) for r in (2, 3, 4)]
    calls.clear()
    read_region(p, (2, 0), (5, 100), use_mmap=False)   # whole rows: one run
    assert calls == [(h.data_offset + 8 * 200, 8 * 300)]
    calls.clear()
    out, _ = read_region(p)      # the whole array, even with the map allowed: one pread
    np.testing.assert_array_equal(out, arr)
    assert calls == [(h.data_offset, arr.nbytes)]
    calls.clear()
    out, _ = read_region(p, (2, 10), (5, 14))   # several runs, map allowed: no pread
    np.testing.assert_array_equal(out, arr[2:5, 10:14])
    assert calls == []


def test_scalar_and_empty_arrays(tmp_path):
    for arr in [np.array(3.5), np.zeros((0, 4), np.int16), np.zeros((2, 0), np.uint8)]:
        p = str(tmp_path / "a.npy")
        np.save(p, arr)
        out, _ = read_region(p)
        assert out.shape == arr.shape and out.dtype == arr.dtype
        np.testing.assert_array_equal(out, arr)


def test_bad_files_name_file_and_offset(tmp_path):
    p = str(tmp_path / "bad.npy")
    open(p, "wb").write(b"PK\x03\x04 not numpy")
    with pytest.raises(ValueError, match=r"bad\.npy.*not a \.npy file.*offset 0"):
        read_region(p)
    np.save(p, np.arange(100))
    data = open(p, "rb").read()
    open(p, "wb").write(data[:-8])
    with pytest.raises(ValueError, match=r"bad\.npy.*truncated .npy data"):
        read_region(p)
    np.save(p, np.array(["ab", "c"]))
    with pytest.raises(ValueError, match=r"unsupported dtype '<U2'"):
        read_region(p)
    np.save(p, np.zeros(2, [("a", "i4"), ("b", "f4")]))
    with pytest.raises(ValueError, match="unsupported dtype"):
        read_region(p)
    open(p, "wb").write(b"\x93NUMPY\x04\x00" + b"\0" * 8)
    with pytest.raises(ValueError, match="version 4.0 at offset 6"):
        read_region(p)
    with pytest.raises(ValueError, match="malformed"):
        parse_header(b"\x93NUMPY\x01\x00\x08\x00{'a': 1}")
    with pytest.raises(RuntimeError, match="missing.npy"):
        read_region(str(tmp_path / "missing.npy"))


def _roi(shape, **kw):
    return resolve_roi(RoiSpec(**kw), shape, "x.npy")


def test_resolve_roi():
    assert _roi((4, 5, 6)) == ([0, 0, 0], [4, 5, 6])
    assert _roi((4, 5, 6), roi_start=[1, 2, 3], roi_end=[2, 3, 4]) == ([1, 2, 3], [2, 3, 4])
    assert _roi((4, 5, 6), roi_start=[1, 2], roi_shape=[2, 2], roi_axes=[2, 0]) == \
        ([2, 0, 1], [4, 5, 3])
    assert _roi((4, 5, 6), roi_start=1, roi_axes=[-1]) == ([0, 0, 1], [4, 5, 6])
    # relative: float32 products rounded half away from zero; shape: rounded end
    assert _roi((10,), rel_roi_start=[0.25], rel_roi_shape=[0.26]) == ([3], [5])
    assert _roi((10,), rel_roi_start=[0.05], rel_roi_end=[0.45]) == ([1], [5])
    assert _roi((10,), rel_roi_start=[0.35], rel_roi_shape=[0.05]) == ([4], [4])
    with pytest.raises(ValueError, match="mutually exclusive"):
        RoiSpec(roi_end=[1], roi_shape=[1])
    with pytest.raises(ValueError, match="mutually exclusive"):
        RoiSpec(roi_start=[1], rel_roi_start=[0.1])
    with pytest.raises(ValueError, match="out_of_bounds_policy"):
        RoiSpec(out_of_bounds_policy="wrap")
    with pytest.raises(ValueError, match="2 value.*expected 3"):
        _roi((4, 5, 6), roi_start=[1, 2])
    with pytest.raises(ValueError, match="axis 3"):
        _roi((4, 5, 6), roi_start=[1], roi_axes=[3])
    with pytest.raises(ValueError, match="ends before it starts"):
        _roi((4,), roi_start=[3], roi_end=[1])


def _tree(tmp_path):
    root = tmp_path / "root"
    for sub in ["", "b", "a", "a/deep", ".hidden"]:
        (root / sub).mkdir(parents=True, exist_ok=True)
    names = ["m.npy", "A.npy", "a/q.npy", "a/b.npy", "a/deep/k.npy", "b/t.npy", "b/u.NPY",
             ".h.npy", ".hidden/x.npy", "b/n.txt"]
    for i, n in enumerate(names):
        np.save(str(root / n) + ("" if n.endswith(".npy") else ".npy"), np.array([i]))
        if not n.endswith(".npy"):
            os.rename(str(root / n) + ".npy", str(root / n))
    return root


def test_listing(tmp_path):
    root = _tree(tmp_path)
    rel = [os.path.relpath(p, root) for p in index_numpy_files(file_root=str(root)).paths]
    assert rel == ["A.npy", "m.npy", "a/b.npy", "a/q.npy", "b/t.npy"]
    rel = [os.path.relpath(p, root) for p in
           index_numpy_files(file_root=str(root), file_filter="*.NPY").paths]
    assert rel == ["b/u.NPY"]
    lst = tmp_path / "list.txt"
    lst.write_text("root/b/t.npy\n\nroot/m.npy\n")
    assert [os.path.relpath(p, tmp_path) for p in index_numpy_files(file_list=str(lst)).paths] \
        == ["root/b/t.npy", "root/m.npy"]
    assert index_numpy_files(file_root=str(root), files=["m.npy"]).paths == \
        (os.path.join(str(root), "m.npy"),)
    with pytest.raises(ValueError, match="does not exist"):
        index_numpy_files(files=[str(root / "nope.npy")])
    with pytest.raises(ValueError, match="mutually exclusive"):
        index_numpy_files(files=["a"], file_list=str(lst))
    with pytest.raises(ValueError, match="lists no files"):
        index_numpy_files(file_root=str(root), file_filter="*.zzz")


def test_core_shards_pad_and_policies(tmp_path):
    files = []
    for i in range(5):
        p = str(tmp_path / f"{i}.npy")
        np.save(p, np.full((3, 4), i, np.int32) + np.arange(12).reshape(3, 4))
        files.append(p)
    core = NumpyReaderCore(files=files, num_shards=2, shard_id=1, pad_last_batch=True)
    batches = list(core.next_epoch(2))
    got = [int(a[0, 0]) for b in batches for a in b[0]]
    assert got == [2, 3, 4, 4]      # shard 1 of 2 over 5: [2, 5), padded to 3, batch to 4
    core = NumpyReaderCore(files=files, roi_start=[1, 3], roi_end=[4, 6],
                           out_of_bounds_policy="pad", fill_value=-1)
    (arr,), = next(core.next_epoch(1))[:1]
    ref = np.full((3, 3), -1, np.int32)
    ref[:2, :1] = (np.arange(12).reshape(3, 4))[1:, 3:]
    np.testing.assert_array_equal(arr, ref)
    core = NumpyReaderCore(files=files, roi_start=[1, 3], roi_end=[4, 6],
                           out_of_bounds_policy="trim_to_shape")
    (arr,), = next(core.next_epoch(1))[:1]
    np.testing.assert_array_equal(arr, np.arange(12).reshape(3, 4)[1:, 3:])
    core = NumpyReaderCore(files=files, roi_start=[1, 3], roi_end=[4, 6])
    with pytest.raises(RuntimeError, match=r"out of bounds.*outside the array of shape \[3, 4\] in .*0\.npy"):
        next(core.next_epoch(1))
