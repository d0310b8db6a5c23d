"""Runtime core of ``ndd.readers.Numpy`` (DALI's ``fn.readers.numpy``, CPU).

A :class:`~runtime.readers.file_reader.FileReaderCore` (sharding, shuffling, padding,
epochs, prefetching and state are that class's) over a list of ``.npy`` files, whose loader
yields arrays: the whole array of every file, or a region of interest of it (only the
region's bytes are read; ``runtime/readers/npy.py``).

Listing (as DALI 2.4, observed): ``file_root`` alone lists the files matching
``file_filter`` (case-sensitive glob on the name) directly in ``file_root``, sorted, then
those of each immediate sub-folder, the folders sorted and the files in each sorted (deeper
folders are not visited). ``file_list`` holds one path per line, relative to ``file_root``
or else to the list's folder; ``files`` paths are relative to ``file_root`` when given.
Unlike DALI, hidden entries (names starting with '.') are skipped in the ``file_root`` mode,
as ``readers.File`` does (``docs/semantics.md``).

Region of interest (DALI's ``roi_*`` arguments): per axis of ``roi_axes`` (default: all
axes in order), start = ``roi_start`` or ``round(rel_roi_start * extent)``, end =
``roi_end``, ``start + roi_shape``, ``round(rel_roi_end * extent)`` or
``round(rel_start * extent + rel_shape * extent)`` (float32 products, rounded half away
from zero, as DALI); an axis without arguments is whole. ``out_of_bounds_policy``:
``"error"`` raises for a region outside the array, ``"trim_to_shape"`` clips it to the
array, ``"pad"`` fills the outside with ``fill_value``.
"""
from __future__ import annotations

import fnmatch
import os

import numpy as np

from runtime.readers.file_index import FileIndex, check_files_exist
from runtime.readers.file_reader import FileReaderCore
from runtime.readers.npy import read_header, read_region

__all__ = ["NumpyReaderCore", "RoiSpec", "index_numpy_files", "resolve_roi", "ROI_ARGS",
           "STATE_FORMAT"]

STATE_FORMAT = "ndd.readers.Numpy/1"
#: DALI's region-of-interest arguments of ``readers.numpy`` (tensor arguments there)
ROI_ARGS = ("roi_start", "rel_roi_start", "roi_end", "rel_roi_end", "roi_shape",
            "rel_roi_shape")
_POLICIES = ("error", "pad", "trim_to_shape")


def _paths(value, name):
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"`{name}` must be a string or a list of strings; got "
                        f"{value!r}") from None
    for v in items:
        if not isinstance(v, (str, os.PathLike)):
            raise TypeError(f"`{name}` must contain only strings; got {v!r} "
                            f"({type(v).__name__})")
    return [os.fspath(v) for v in items]


def index_numpy_files(file_root=None, file_list=None, files=None, file_filter="*.npy"):
    """List the files of a Numpy reader (see the module docstring for the rules).

    Returns
    -------
    FileIndex
        Paths in reading order, labels all 0 (the reader has no labels).

    Raises
    ------
    ValueError
        No source given, both ``files`` and ``file_list``, a missing folder or list, an
        empty dataset, or a listed path that is not a file (naming it).
    TypeError
        ``files`` or ``file_filter`` not strings.
    """
    if files is not None and file_list is not None:
        raise ValueError("readers.Numpy: `files` and `file_list` are mutually exclusive")
    if not isinstance(file_filter, str):
        raise TypeError(f"`file_filter` must be a string (a glob pattern); got "
                        f"{file_filter!r}")
    if files is not None:
        names = _paths(files, "files")
        root = None if file_root is None else os.fspath(file_root)
        paths = [n if root is None else os.path.join(root, n) for n in names]
        source = "files"
    elif file_list is not None:
        file_list = os.fspath(file_list)
        try:
            with open(file_list, encoding="utf-8") as f:
                lines = [ln.strip() for ln in f]
        except OSError as e:
            raise ValueError(f"`file_list` {file_list!r} cannot be read: "
                             f"{e.strerror or e}") from None
        base = os.fspath(file_root) if file_root is not None else \
            os.path.dirname(os.path.abspath(file_list))
        paths = [os.path.join(base, ln) for ln in lines if ln]
        source = f"file_list {file_list!r}"
    elif file_root is not None:
        root = os.fspath(file_root)
        if not os.path.isdir(root):
            raise ValueError(f"`file_root` {root!r} is not a directory")
        paths = []
        for folder in [root] + [os.path.join(root, d) for d in sorted(
                e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))]:
            names = sorted(e.name for e in os.scandir(folder)
                           if e.is_file() and not e.name.startswith(".")
                           and fnmatch.fnmatchcase(e.name, file_filter))
            paths += [os.path.join(folder, n) for n in names]
        source = f"file_root {root!r} (file_filter {file_filter!r})"
    else:
        raise ValueError("readers.Numpy: expected one of `file_root`, `files` or `file_list`")
    if not paths:
        raise ValueError(f"readers.Numpy: {source} lists no files")
    index = FileIndex(tuple(paths), np.zeros(len(paths), np.int32), source)
    check_files_exist(index)
    return index


def _as_list(value, name, kind):
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.ndim > 1 or arr.dtype.kind not in ("iu" if kind is int else "iuf"):
        raise TypeError(f"`{name}` must be {'an int' if kind is int else 'a float'} or a list "
                        f"of them; got {value!r}")
    return [kind(v) for v in arr.reshape(-1)]


class RoiSpec:
    """The region-of-interest arguments of a Numpy reader, checked.

    Parameters
    ----------
    roi_start, roi_end, roi_shape : int or list of int, optional
    rel_roi_start, rel_roi_end, rel_roi_shape : float or list of float, optional
    roi_axes : int or list of int, optional
    out_of_bounds_policy : {"error", "pad", "trim_to_shape"}
    fill_value : float

    Raises
    ------
    ValueError
        Exclusive arguments given together (DALI's pairs), an unknown policy.
    """

    def __init__(self, roi_start=None, rel_roi_start=None, roi_end=None, rel_roi_end=None,
                 roi_shape=None, rel_roi_shape=None, roi_axes=None,
                 out_of_bounds_policy="error", fill_value=0.0):
        self.start = _as_list(roi_start, "roi_start", int)
        self.rel_start = _as_list(rel_roi_start, "rel_roi_start", float)
        self.end = _as_list(roi_end, "roi_end", int)
        self.rel_end = _as_list(rel_roi_end, "rel_roi_end", float)
        self.shape = _as_list(roi_shape, "roi_shape", int)
        self.rel_shape = _as_list(rel_roi_shape, "rel_roi_shape", float)
        self.axes = _as_list(roi_axes, "roi_axes", int) or None
        if self.start is not None and self.rel_start is not None:
            raise ValueError("readers.Numpy: `roi_start` and `rel_roi_start` are mutually "
                             "exclusive")
        ends = [n for n, v in (("roi_end", self.end), ("rel_roi_end", self.rel_end),
                               ("roi_shape", self.shape), ("rel_roi_shape", self.rel_shape))
                if v is not None]
        if len(ends) > 1:
            raise ValueError(f"readers.Numpy: {' and '.join(f'`{n}`' for n in ends)} are "
                             f"mutually exclusive (give at most one of roi_end, rel_roi_end, "
                             f"roi_shape, rel_roi_shape)")
        if out_of_bounds_policy not in _POLICIES:
            raise ValueError(f"readers.Numpy: `out_of_bounds_policy` must be one of "
                             f"{', '.join(map(repr, _POLICIES))}; got {out_of_bounds_policy!r}")
        self.policy = out_of_bounds_policy
        self.fill_value = float(fill_value)

    @property
    def active(self) -> bool:
        """Whether any region argument was given (else whole arrays are read)."""
        return any(v is not None for v in (self.start, self.rel_start, self.end,
                                           self.rel_end, self.shape, self.rel_shape))


def _per_axis(values, n, name, path):
    if values is None:
        return None
    if len(values) == 1 and n > 1:
        return values * n
    if len(values) != n:
        raise ValueError(f"readers.Numpy: `{name}` has {len(values)} value(s), expected {n} "
                         f"(one per ROI axis) for {path!r}")
    return values


def _round(x):
    """std::round: half away from zero."""
    return int(np.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def resolve_roi(roi: RoiSpec, shape, path):
    """The region ``(start, end)`` of an array of ``shape`` (may reach outside the array:
    the caller applies the policy).

    Raises
    ------
    ValueError
        A ROI axis outside the array's dimensions, argument lengths that do not match the
        axes, or an end before the start (naming the file).
    """
    nd = len(shape)
    axes = list(range(nd)) if roi.axes is None else roi.axes
    for a in axes:
        if not -nd <= a < nd:
            raise ValueError(f"readers.Numpy: `roi_axes` {roi.axes} names axis {a}, but "
                             f"{path!r} has {nd} dimension(s)")
    axes = [a % nd for a in axes]
    n = len(axes)
    start, end = [0] * nd, list(shape)
    st, rst = _per_axis(roi.start, n, "roi_start", path), \
        _per_axis(roi.rel_start, n, "rel_roi_start", path)
    en, ren = _per_axis(roi.end, n, "roi_end", path), \
        _per_axis(roi.rel_end, n, "rel_roi_end", path)
    sh, rsh = _per_axis(roi.shape, n, "roi_shape", path), \
        _per_axis(roi.rel_shape, n, "rel_roi_shape", path)
    f32 = np.float32
    for i, a in enumerate(axes):
        ext = f32(shape[a])
        anchor_f = None
        if st is not None:
            start[a] = st[i]
        elif rst is not None:
            anchor_f = f32(rst[i]) * ext
            start[a] = _round(anchor_f)
        if en is not None:
            end[a] = en[i]
        elif ren is not None:
            end[a] = _round(f32(ren[i]) * ext)
        elif sh is not None:
            end[a] = start[a] + sh[i]
        elif rsh is not None:
            base = anchor_f if anchor_f is not None else f32(start[a])
            end[a] = _round(base + f32(rsh[i]) * ext)
        if end[a] < start[a]:
            raise ValueError(f"readers.Numpy: the region of {path!r} ends before it starts on "
                             f"axis {a}: start {start[a]}, end {end[a]}")
    return start, end


def _load_one(path, roi, use_mmap, header):
    if not roi.active:
        return read_region(path, use_mmap=use_mmap, header=header)
    if header is None:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            header = read_header(fd, path)
        finally:
            os.close(fd)
    shape = header.shape
    start, end = resolve_roi(roi, shape, path)
    inside = all(0 <= s and e <= d for s, e, d in zip(start, end, shape))
    if inside:
        return read_region(path, start, end, use_mmap=use_mmap, header=header)
    if roi.policy == "error":
        # DALI's words first (a RuntimeError there too), then which file and region
        raise RuntimeError(f"Slice can't be placed out of bounds with current policy: the "
                           f"region [{start}, {end}) is outside the array of shape "
                           f"{list(shape)} in {path!r} (out_of_bounds_policy='error'; use "
                           f"'pad' or 'trim_to_shape')")
    cs = [min(max(s, 0), d) for s, d in zip(start, shape)]
    ce = [max(min(e, d), c) for e, d, c in zip(end, shape, cs)]
    part, header = read_region(path, cs, ce, use_mmap=use_mmap, header=header)
    if roi.policy == "trim_to_shape":
        return part, header
    out = np.full([e - s for s, e in zip(start, end)],
                  np.array(roi.fill_value).astype(part.dtype), part.dtype)
    dst = tuple(slice(c - s, c - s + (f - c)) for s, c, f in zip(start, cs, ce))
    out[dst] = part
    return out, header


class NumpyReaderCore(FileReaderCore):
    """Reads ``.npy`` arrays (whole or a region), sharded and shuffled as ``FileReaderCore``.

    Parameters
    ----------
    file_root, file_list, files, file_filter
        The dataset (:func:`index_numpy_files`).
    roi_start, rel_roi_start, roi_end, rel_roi_end, roi_shape, rel_roi_shape, roi_axes,
    out_of_bounds_policy, fill_value
        The region of interest (:class:`RoiSpec`).
    cache_header_information : bool, default False
        Keep each file's parsed header (files must not change meanwhile).
    dont_use_mmap : bool, default False
        Read regions with ``pread`` per contiguous run instead of a memory map.
    use_o_direct : bool, default False
        Accepted for compatibility (reads go through the page cache); as DALI, only with
        ``dont_use_mmap=True``.
    **kwargs
        Sharding, shuffling, padding, prefetching: those of ``FileReaderCore``.
    """

    kind = "Numpy reader"
    state_format = STATE_FORMAT

    def __init__(self, *, file_root=None, file_list=None, files=None, file_filter="*.npy",
                 roi_start=None, rel_roi_start=None, roi_end=None, rel_roi_end=None,
                 roi_shape=None, rel_roi_shape=None, roi_axes=None,
                 out_of_bounds_policy="error", fill_value=0.0,
                 cache_header_information=False, dont_use_mmap=False, use_o_direct=False,
                 lazy_init=False, defer_shard_check=False, **kwargs):
        self.roi = RoiSpec(roi_start, rel_roi_start, roi_end, rel_roi_end, roi_shape,
                           rel_roi_shape, roi_axes, out_of_bounds_policy, fill_value)
        for flag, name in ((cache_header_information, "cache_header_information"),
                           (dont_use_mmap, "dont_use_mmap"), (use_o_direct, "use_o_direct"),
                           (lazy_init, "lazy_init")):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError(f"`{name}` must be a bool; got {flag!r}")
        if use_o_direct and not dont_use_mmap:
            # DALI's words (a RuntimeError when its reader starts; here at construction)
            raise ValueError("Cannot use use_o_direct with ``dont_use_mmap=False``: give "
                             "dont_use_mmap=True too")
        self._use_mmap = not dont_use_mmap
        self._headers = {} if cache_header_information else None
        super().__init__(lazy_init=True, **kwargs)
        self._listing_args = dict(file_root=file_root, file_list=file_list, files=files,
                                  file_filter=file_filter)
        self.list_now(lazy_init, defer_shard_check)

    def build_index(self):
        return index_numpy_files(**self._listing_args)

    def make_loader(self, index, with_indices):
        paths, roi, use_mmap, headers = index.paths, self.roi, self._use_mmap, self._headers
        whole = not roi.active

        def load(indices):
            arrays, cache = [], {}
            for i in indices.tolist():
                if i in cache:      # a padding repeat: same content, separate buffer
                    arrays.append(cache[i].copy())
                    continue
                header = headers.get(paths[i]) if headers is not None else None
                try:
                    arr, header = read_region(paths[i], use_mmap=use_mmap, header=header) \
                        if whole else _load_one(paths[i], roi, use_mmap, header)
                except ValueError as e:     # a bad file or ROI: DALI's readers raise
                    raise RuntimeError(str(e)) from e   # RuntimeError while reading
                if headers is not None:
                    headers[paths[i]] = header
                cache[i] = arr
                arrays.append(arr)
            if with_indices:
                return arrays, indices.tolist()
            return (arrays,)

        return load
