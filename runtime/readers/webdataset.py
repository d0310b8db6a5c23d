"""Runtime core of ``ndd.readers.Webdataset`` (DALI's ``fn.readers.webdataset``).

A webdataset is one or more tar archives; a sample is a run of consecutive regular-file
members sharing a key, the member name up to the first '.' of its last path component (the
rest is the component's extension: ``"s/d.x.jpg"`` is key ``"s/d"``, extension
``"x.jpg"``). Each output takes the first component (in archive order) whose extension is
one of its ``ext`` alternatives (``"jpg;png"``), compared case-insensitively unless
``case_sensitive_extensions``. A sample without a component of some output: an empty
output (``missing_component_behavior`` ``"empty"`` or ``""``), left out (``"skip"``), or an
error (``"error"``). Members whose last component starts with '.' and non-regular members
(folders, links) are not read.

Index files (optional; DALI's ``wds2idx``): a first line ``v1.2 <samples>`` (or ``v1.1``),
then one line per sample of ``ext offset size name`` (v1.1: ``ext offset size``) per
component, ``offset`` of the member's data. Without one the archive is listed with
``tarfile``.
"""
from __future__ import annotations

import os
import tarfile

import numpy as np

from runtime.readers.file_index import FileIndex
from runtime.readers.file_reader import FileReaderCore
from runtime.readers.mapped import MappedFiles

__all__ = ["WebdatasetReaderCore", "STATE_FORMAT", "split_name", "scan_tar", "read_wds_index"]

STATE_FORMAT = "ndd.readers.Webdataset/1"
_BEHAVIORS = ("", "empty", "skip", "error")


def split_name(name):
    """``(key, extension)`` of a member name (first '.' of the last component)."""
    base = name.rfind("/") + 1
    dot = name.find(".", base)
    if dot < 0:
        return name, ""
    return name[:dot], name[dot + 1:]


def _group(members):
    """Samples of ``(name, offset, size)`` members: runs of one key, hidden ones dropped."""
    samples, last = [], None
    for name, off, size in members:
        key, ext = split_name(name)
        if key == "" or key.endswith("/"):        # the last component starts with '.'
            continue
        if key != last:
            samples.append((key, []))
            last = key
        samples[-1][1].append((ext, off, size))
    return samples


def scan_tar(path):
    """The samples of a tar archive: ``[(key, [(ext, data offset, size), ...])]``.

    Raises
    ------
    ValueError
        Not a readable tar archive (naming it).
    """
    try:
        with tarfile.open(path, "r:") as tf:
            every = list(tf)
            end = max((m.offset_data + -(-m.size // 512) * 512 for m in every), default=0)
            members = [(m.name, m.offset_data, m.size) for m in every if m.isreg()]
        with open(path, "rb") as f:
            f.seek(end)
            rest = f.read()
    except (tarfile.TarError, OSError) as e:
        raise ValueError(f"Webdataset archive {path!r} cannot be read as a tar file: {e}") \
            from None
    # after the last member a tar file holds only zero blocks: anything else is a member
    # header tarfile stopped at (a truncated or corrupt archive)
    if rest.strip(b"\0"):
        raise ValueError(f"Webdataset archive {path!r}: truncated or corrupt tar member "
                         f"header at offset {end} (after {len(every)} member(s))")
    return _group(members)


def read_wds_index(index_path, tar_path):
    """The samples listed by a DALI index file (v1.1 or v1.2), checked against the size of
    the archive.

    Raises
    ------
    ValueError
        A malformed index, a sample count other than the header's, or a component past the
        end of the archive (naming both files).
    """
    try:
        with open(index_path) as f:
            lines = [ln.split() for ln in f.read().split("\n")]
    except OSError as e:
        raise ValueError(f"Webdataset index {index_path!r} cannot be read: "
                         f"{e.strerror or e}") from None
    size = os.path.getsize(tar_path)
    if not lines or len(lines[0]) != 2 or lines[0][0] not in ("v1.1", "v1.2") or \
            not lines[0][1].isdigit():
        raise ValueError(f"Webdataset index {index_path!r}: expected a first line 'v1.2 "
                         f"<samples>' (or v1.1), got {' '.join(lines[0]) if lines else ''!r}")
    width = 4 if lines[0][0] == "v1.2" else 3
    samples = []
    for i, parts in enumerate(lines[1:], start=2):
        if not parts:
            continue
        if len(parts) % width:
            raise ValueError(f"Webdataset index {index_path!r} line {i}: expected groups of "
                             f"{'ext offset size name' if width == 4 else 'ext offset size'}")
        comps, key = [], None
        for j in range(0, len(parts), width):
            ext, off, n = parts[j], parts[j + 1], parts[j + 2]
            if not (off.isdigit() and n.isdigit()):
                raise ValueError(f"Webdataset index {index_path!r} line {i}: offset and size "
                                 f"must be decimal integers, got {off!r} {n!r}")
            off, n = int(off), int(n)
            if off + n > size:
                raise ValueError(f"Webdataset index {index_path!r} line {i} does not match "
                                 f"{tar_path!r}: component {ext!r} ends at {off + n}, past "
                                 f"the end of the archive ({size} bytes)")
            if width == 4 and key is None:
                key = split_name(parts[j + 3])[0]
            comps.append((ext, off, n))
        samples.append((key if key is not None else f"#{len(samples)}", comps))
    if len(samples) != int(lines[0][1]):
        raise ValueError(f"Webdataset index {index_path!r} announces {lines[0][1]} samples "
                         f"but lists {len(samples)}")
    return samples


class WebdatasetReaderCore(FileReaderCore):
    """Reads the components of the samples of tar archives.

    Parameters
    ----------
    paths : str or list of str
    ext : str or list of str
        One extension set per output, alternatives separated by ';'.
    index_paths : str or list of str, optional
        One index per archive.
    missing_component_behavior : {"", "empty", "skip", "error"}, default ""
    dtypes : list of numpy dtype names, optional
        One per output (default uint8); a component's size must be a multiple of the
        item size.
    case_sensitive_extensions : bool, default True
    dont_use_mmap : bool, default False
        Read components with ``pread`` instead of from memory maps of the archives (as
        DALI; the same results).
    use_o_direct : bool
        Accepted for compatibility.
    **kwargs
        Sharding, shuffling, padding, prefetching: those of ``FileReaderCore``.
    """

    kind = "Webdataset reader"
    state_format = STATE_FORMAT

    def __init__(self, *, paths=None, ext=None, index_paths=None,
                 missing_component_behavior="", dtypes=None, case_sensitive_extensions=True,
                 dont_use_mmap=False, use_o_direct=False, lazy_init=False,
                 defer_shard_check=False, **kwargs):
        self.paths = _strs(paths, "paths")
        self.index_paths = None if index_paths is None else _strs(index_paths, "index_paths")
        if self.index_paths is not None and len(self.index_paths) != len(self.paths):
            raise ValueError(f"readers.Webdataset: {len(self.paths)} archive(s) but "
                             f"{len(self.index_paths)} index file(s); expected one per archive")
        exts = _strs(ext, "ext")
        if not isinstance(case_sensitive_extensions, (bool, np.bool_)):
            raise TypeError(f"`case_sensitive_extensions` must be a bool; got "
                            f"{case_sensitive_extensions!r}")
        self.case_sensitive = bool(case_sensitive_extensions)
        self.ext_sets = [[e if self.case_sensitive else e.lower() for e in x.split(";")]
                         for x in exts]
        if missing_component_behavior not in _BEHAVIORS:
            raise ValueError(f"readers.Webdataset: `missing_component_behavior` must be "
                             f"'empty', 'skip' or 'error'; got {missing_component_behavior!r}")
        self.missing = missing_component_behavior or "empty"
        if dtypes is None:
            dtypes = ["uint8"] * len(exts)
        if len(dtypes) != len(exts):
            raise ValueError(f"readers.Webdataset: {len(dtypes)} dtype(s) for {len(exts)} "
                             f"output(s); give one dtype per `ext` entry")
        self.dtypes = [np.dtype(d) for d in dtypes]
        #: components are read with ``pread`` instead of from memory maps
        self.dont_use_mmap = bool(dont_use_mmap)
        self._maps = MappedFiles(self.paths)
        self._samples = None
        super().__init__(lazy_init=True, **kwargs)
        self.list_now(lazy_init, defer_shard_check)

    def _match(self, comps):
        """Per output, the first matching component ``(offset, size, ext)`` or None."""
        out = []
        for alts in self.ext_sets:
            hit = None
            for ext, off, n in comps:
                if (ext if self.case_sensitive else ext.lower()) in alts:
                    hit = (off, n, ext)
                    break
            out.append(hit)
        return out

    def build_index(self):
        samples, names = [], []
        for ti, tar in enumerate(self.paths):
            listed = scan_tar(tar) if self.index_paths is None else \
                read_wds_index(self.index_paths[ti], tar)
            for key, comps in listed:
                hits = self._match(comps)
                if any(h is None for h in hits):
                    if self.missing == "skip":
                        continue
                    if self.missing == "error":
                        miss = [";".join(a) for a, h in zip(self.ext_sets, hits) if h is None]
                        raise RuntimeError(     # DALI's type and first words
                            f'Underful sample detected at tar file at "{tar}": sample '
                            f'{key!r} has no component for ext {", ".join(map(repr, miss))} '
                            f'(its components: {", ".join(repr(c[0]) for c in comps)}); '
                            f'missing_component_behavior="error"')
                samples.append((ti, hits))
                names.append(f"{tar}:{key}")
        if not samples:
            raise ValueError(f"readers.Webdataset: the archives {self.paths} hold no samples "
                             f"with the components {[';'.join(a) for a in self.ext_sets]}")
        self._samples = samples
        return FileIndex(tuple(names), np.zeros(len(names), np.int32),
                         f"Webdataset archives {self.paths}")

    def make_loader(self, index, with_indices):
        samples, paths, dtypes, names = self._samples, self.paths, self.dtypes, index.paths
        maps = None if self.dont_use_mmap else self._maps

        itemsizes = [dt.itemsize for dt in dtypes]
        raw = [dt == np.uint8 for dt in dtypes]

        def load(indices):
            outs = [[] for _ in dtypes]
            fds, bufs = {}, {}
            try:
                for i in indices.tolist():
                    ti, hits = samples[i]
                    buf = bufs.get(ti)
                    if buf is None:
                        buf = bufs[ti] = _mapped(maps, paths, ti)
                    size = buf.size
                    for k, hit in enumerate(hits):
                        if hit is None:
                            outs[k].append(np.zeros(0, dtypes[k]))
                            continue
                        off, n, ext = hit
                        if off + n <= size:             # from the map
                            data = None
                        else:                           # pread: past the end (or no map)
                            data = _pread(fds, paths, ti, n, off)
                            if len(data) != n:
                                raise RuntimeError(
                                    f"Webdataset {paths[ti]!r}: short read of component "
                                    f"{ext!r} of {names[i]!r} at offset {off} ({len(data)} "
                                    f"of {n} bytes)")
                        if n % itemsizes[k]:
                            dt = dtypes[k]
                            raise RuntimeError(
                                f"Webdataset {paths[ti]!r}: component {ext!r} of "
                                f"{names[i]!r} has {n} bytes, not a multiple of the "
                                f"{dt.itemsize}-byte {dt.name} of output {k}")
                        if data is None:
                            a = buf[off:off + n].copy()
                            outs[k].append(a if raw[k] else a.view(dtypes[k]))
                        else:
                            outs[k].append(np.frombuffer(data, dtypes[k]).copy())
            finally:
                for fd in fds.values():
                    os.close(fd)
            if with_indices:
                return outs + [indices.tolist()]
            return tuple(outs)

        return load


_NO_MAP = np.zeros(0, np.uint8)


def _mapped(maps, paths, ti):
    """The map of archive ``ti`` (``maps`` None: an empty array, everything by ``pread``)."""
    if maps is None:
        return _NO_MAP
    try:
        return maps.get(ti)
    except OSError as e:
        raise RuntimeError(f"Webdataset reader: cannot read {paths[ti]!r}: "
                           f"{e.strerror or e}") from e


def _pread(fds, paths, ti, n, off):
    """``n`` bytes of archive ``ti`` at ``off`` (fewer at its end); ``fds``: open descriptors
    by archive number."""
    if ti not in fds:
        try:
            fds[ti] = os.open(paths[ti], os.O_RDONLY)
        except OSError as e:
            raise RuntimeError(f"Webdataset reader: cannot read {paths[ti]!r}: "
                               f"{e.strerror or e}") from e
    return os.pread(fds[ti], n, off)


def _strs(value, name):
    if value is None:
        raise ValueError(f"readers.Webdataset: `{name}` is required")
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    out = [os.fspath(v) for v in value]
    if not out:
        raise ValueError(f"readers.Webdataset: `{name}` is empty")
    return out
