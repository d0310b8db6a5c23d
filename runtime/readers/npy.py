"""``.npy`` files: the header, and reading a whole array or a region of it.

The format (numpy's ``numpy/lib/format.py`` documents it, versions 1.0, 2.0 and 3.0):

* the magic ``b"\\x93NUMPY"``, one byte major and one byte minor version;
* the header length: little-endian uint16 (version 1) or uint32 (versions 2 and 3);
* the header: a Python dict literal (latin-1; UTF-8 in version 3) with the keys ``descr``
  (a dtype string such as ``'<f4'``), ``fortran_order`` (bool) and ``shape`` (tuple),
  padded with spaces and a newline so that the data starts at a multiple of 16 (64);
* the data: ``prod(shape)`` elements, C order or Fortran order.

Headers are parsed once per distinct header (:func:`header_of`). A region (:func:`read_region`) of a
C-order file reads only its bytes: with one ``pread``
when it is one contiguous run (the whole array included), else through a memory map (the
pages the region touches) or, without one, one ``pread`` per contiguous run. A whole
Fortran-order array is read with one ``pread``; a region of one is cut from the map. Big-endian data is
converted to the machine's byte order.
"""
from __future__ import annotations

import ast
import functools
import math
import mmap
import os
import re
import struct
from dataclasses import dataclass

import numpy as np

__all__ = ["NpyHeader", "parse_header", "header_of", "read_header", "read_region",
           "SUPPORTED_KINDS"]

_MAGIC = b"\x93NUMPY"
#: numpy dtype kinds a reader can output: bool, signed/unsigned integers, floats
SUPPORTED_KINDS = "biuf"


@dataclass(frozen=True)
class NpyHeader:
    """What an ``.npy`` header says.

    Attributes
    ----------
    dtype : numpy.dtype
        As stored (may be big-endian).
    shape : tuple of int
    fortran_order : bool
    data_offset : int
        Byte offset of the first element.
    """

    dtype: np.dtype
    shape: tuple
    fortran_order: bool
    data_offset: int

    @functools.cached_property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


# the header exactly as numpy's writer spells it (``format._write_array_header``)
_NUMPY_HEADER = re.compile(r"\{'descr': '([^'\\]*)', 'fortran_order': (True|False), "
                           r"'shape': \(((?:\d+, )*\d*|\d+,)\), \}\s*\Z")


def _numpy_written(text):
    """The dict of a header in numpy's own spelling (what ``ast.literal_eval`` gives, ~20x
    faster), or None for any other spelling (left to ``literal_eval``)."""
    m = _NUMPY_HEADER.match(text)
    if m is None:
        return None
    dims = m.group(3).replace(",", " ").split()
    return {"descr": m.group(1), "fortran_order": m.group(2) == "True",
            "shape": tuple(int(v) for v in dims)}


def parse_header(head: bytes, path: str = "<bytes>") -> NpyHeader:
    """Parse the header at the start of ``head`` (the first bytes of a file, at least the
    whole header).

    Raises
    ------
    ValueError
        Naming ``path`` and the byte offset: not an ``.npy`` file, an unknown version, a
        truncated or malformed header, or a dtype the readers do not output (objects,
        structured records, strings, complex numbers, dates).
    """
    if len(head) < 10 or head[:6] != _MAGIC:
        raise ValueError(f"{path!r}: not a .npy file (expected the magic b'\\x93NUMPY' at "
                         f"offset 0, got {bytes(head[:6])!r})")
    major, minor = head[6], head[7]
    if major == 1:
        (hlen,), start = struct.unpack_from("<H", head, 8), 10
    elif major in (2, 3):
        if len(head) < 12:
            raise ValueError(f"{path!r}: truncated .npy header (file of {len(head)} bytes)")
        (hlen,), start = struct.unpack_from("<I", head, 8), 12
    else:
        raise ValueError(f"{path!r}: unsupported .npy format version {major}.{minor} at "
                         f"offset 6 (expected 1.0, 2.0 or 3.0)")
    if len(head) < start + hlen:
        raise ValueError(f"{path!r}: truncated .npy header: {hlen} bytes announced at offset "
                         f"{start}, the file has {len(head) - start}")
    text = bytes(head[start:start + hlen]).decode("utf-8" if major == 3 else "latin-1")
    d = _numpy_written(text)
    if d is None:
        try:
            d = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            d = None
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise ValueError(f"{path!r}: malformed .npy header at offset {start}: expected a dict "
                         f"of 'descr', 'fortran_order' and 'shape', got {text.strip()[:100]!r}")
    shape, fortran = d["shape"], d["fortran_order"]
    if not isinstance(shape, tuple) or not all(isinstance(s, int) and s >= 0 for s in shape) \
            or not isinstance(fortran, bool):
        raise ValueError(f"{path!r}: malformed .npy header at offset {start}: shape="
                         f"{shape!r}, fortran_order={fortran!r}")
    try:
        dtype = np.dtype(d["descr"]) if isinstance(d["descr"], str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in SUPPORTED_KINDS or dtype.fields is not None or \
            dtype.subdtype is not None or dtype.itemsize > 8:
        raise ValueError(f"{path!r}: unsupported dtype {d['descr']!r} in the .npy header "
                         f"(supported: bool, int8..int64, uint8..uint64, float16, float32, "
                         f"float64)")
    return NpyHeader(dtype, shape, fortran, start + hlen)


def header_of(head, path: str = "<bytes>") -> NpyHeader:
    """:func:`parse_header` of ``head`` (bytes or a uint8 array), remembered by the header's
    bytes: the files of a dataset mostly share one header (same dtype and shape), which is
    then parsed once. Errors are not remembered."""
    key = None
    if len(head) >= 12 and bytes(head[:6]) == _MAGIC:
        end = 10 + int(head[8]) + 256 * int(head[9]) if head[6] == 1 else \
            12 + struct.unpack_from("<I", bytes(head[8:12]))[0]
        if end <= len(head):
            key = bytes(head[:end])
            found = _HEADERS.get(key)
            if found is not None:
                return found
    header = parse_header(key if key is not None else bytes(head), path)
    if key is not None:
        if len(_HEADERS) >= _HEADERS_KEPT:
            _HEADERS.clear()
        _HEADERS[key] = header
    return header


_HEADERS = {}
_HEADERS_KEPT = 256


def read_header(fd, path: str) -> NpyHeader:
    """The header of the open file ``fd`` (read with ``pread``; the file position is not
    used)."""
    head = os.pread(fd, 4096, 0)
    if len(head) >= 12 and head[:6] == _MAGIC and head[6] in (2, 3):
        need = 12 + struct.unpack_from("<I", head, 8)[0]
        if need > len(head):
            head = os.pread(fd, need, 0)
    return header_of(head, path)


def _native(arr):
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and not _LITTLE):
        return arr.astype(arr.dtype.newbyteorder("="))
    return arr


_LITTLE = np.little_endian


def _check_size(fd, header, path):
    size = os.fstat(fd).st_size
    if size < header.data_offset + header.nbytes:
        raise ValueError(f"{path!r}: truncated .npy data: the header (shape {header.shape}, "
                         f"dtype {header.dtype.str}) needs {header.nbytes} bytes from offset "
                         f"{header.data_offset}, the file has {size - header.data_offset}")


def _runs(shape, start, end):
    """Contiguous runs of the C-order region ``[start, end)``: ``(first axis of a run,
    elements per run)``; a run covers the axes from the first one whose extent is partial
    (or the outermost), all axes after it being whole."""
    k = len(shape) - 1
    while k > 0 and start[k] == 0 and end[k] == shape[k]:
        k -= 1
    run = (end[k] - start[k]) * math.prod(shape[k + 1:])
    return k, run


def _pread_region(fd, header, start, end, path):
    """The C-order region read with one ``pread`` per contiguous run."""
    shape, item = header.shape, header.dtype.itemsize
    out_shape = tuple(e - s for s, e in zip(start, end))
    out = np.empty(out_shape, header.dtype)
    if out.size == 0:
        return out
    k, run = _runs(shape, start, end)
    if k == 0:      # one contiguous run (e.g. the whole array): one pread
        off = header.data_offset + start[0] * math.prod(shape[1:]) * item
        got = os.preadv(fd, [memoryview(out.reshape(-1).view(np.uint8))], off)
        if got != run * item:
            raise ValueError(f"{path!r}: short read at offset {off} ({got} of {run * item} "
                             f"bytes)")
        return out
    strides = np.cumprod((list(shape[1:]) + [1])[::-1], dtype=np.int64)[::-1]
    flat = memoryview(out.reshape(-1).view(np.uint8))
    outer = [range(s, e) for s, e in zip(start[:k], end[:k])]
    base = int(np.dot(strides[k:], start[k:])) if k < len(shape) else 0
    nb = run * item
    for i, idx in enumerate(np.ndindex(*[len(r) for r in outer]) if outer else [()]):
        elem = base + sum(int(strides[a]) * (start[a] + j) for a, j in enumerate(idx))
        off = header.data_offset + elem * item
        got = os.preadv(fd, [flat[i * nb:(i + 1) * nb]], off)
        if got != nb:
            raise ValueError(f"{path!r}: short read at offset {off} ({got} of {nb} bytes)")
    return out


def read_region(path, start=None, end=None, *, use_mmap=True, header=None):
    """Read the array of an ``.npy`` file, or its region ``[start, end)``.

    Parameters
    ----------
    path : str
    start, end : sequence of int, optional
        Per axis, ``0 <= start <= end <= shape`` (the caller resolves the ROI arguments and
        the out-of-bounds policy); None: the whole array.
    use_mmap : bool, default True
        Map the file and copy a region of several runs out of the map (a region that is one
        contiguous run, e.g. the whole array, is read with one ``pread``); False: one
        ``pread`` per contiguous run of a C-order file (DALI's ``dont_use_mmap``).
    header : NpyHeader, optional
        The file's header when already known (``cache_header_information``).

    Returns
    -------
    (numpy.ndarray, NpyHeader)
        The region, C-contiguous, in the machine's byte order, and the header.

    Raises
    ------
    RuntimeError
        The file cannot be opened or read (naming it).
    ValueError
        A bad header or truncated data (naming the file and the offset).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise RuntimeError(f"Numpy reader: cannot read {path!r}: {e.strerror or e}") from e
    try:
        if header is None:
            header = read_header(fd, path)
        _check_size(fd, header, path)
        shape = header.shape
        if start is None and shape and not header.fortran_order and header.nbytes:
            # the whole of a C-order array: one pread into the output
            out = np.empty(shape, header.dtype)
            got = os.preadv(fd, [out.reshape(-1).view(np.uint8)], header.data_offset)
            if got != header.nbytes:
                raise ValueError(f"{path!r}: short read at offset {header.data_offset} ({got} "
                                 f"of {header.nbytes} bytes)")
            return _native(out), header
        if start is None:
            start, end = (0,) * len(shape), tuple(shape)
        start, end = tuple(int(s) for s in start), tuple(int(e) for e in end)
        if header.nbytes == 0 or any(e <= s for s, e in zip(start, end)):
            out = np.empty(tuple(max(e - s, 0) for s, e in zip(start, end)), header.dtype)
        elif not shape:         # a 0-d array: one element
            out = _pread_region(fd, NpyHeader(header.dtype, (1,), False, header.data_offset),
                                (0,), (1,), path).reshape(())
        elif header.fortran_order and start == (0,) * len(shape) and end == tuple(shape):
            # a whole Fortran-order array: its bytes read at once, then put in C order
            raw = _pread_region(fd, NpyHeader(header.dtype, (math.prod(shape),), False,
                                              header.data_offset),
                                (0,), (math.prod(shape),), path)
            out = np.ascontiguousarray(raw.reshape(shape, order="F"))
        elif not header.fortran_order and (not use_mmap or
                                           _runs(shape, start, end)[0] == 0):
            # one contiguous run (the whole array, or whole rows of the outermost axis) or
            # no map wanted: read with pread (faster than faulting the map's pages in)
            out = _pread_region(fd, header, start, end, path)
        elif header.fortran_order or use_mmap:
            with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
                arr = np.frombuffer(m, header.dtype, math.prod(shape),
                                    header.data_offset)
                arr = arr.reshape(shape, order="F" if header.fortran_order else "C")
                # a copy in C order: nothing of the map is kept once it is closed
                out = np.array(arr[tuple(slice(s, e) for s, e in zip(start, end))],
                               order="C", copy=True)
                del arr
        else:
            out = _pread_region(fd, header, start, end, path)
        return _native(out), header
    except OSError as e:
        raise RuntimeError(f"Numpy reader: cannot read {path!r}: {e.strerror or e}") from e
    finally:
        os.close(fd)
