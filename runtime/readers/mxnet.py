"""MXNet RecordIO (``.rec`` + ``.idx``): the record framing, the image record header, index
files, a writer, and the runtime core of ``ndd.readers.MXNet`` (DALI's
``fn.readers.mxnet``).

Framing (dmlc-core's ``recordio``): every part of a record is

    uint32 magic 0xced7230a | uint32 lrec | payload (lrec & (2**29 - 1) bytes) |
    zero padding to a multiple of 4 bytes

all little-endian; ``lrec >> 29`` is the continuation flag ``cflag``: 0 a whole record,
1 its first part, 2 a middle part, 3 its last part. The writer splits a record where the
magic word occurs (4-aligned) in its data and drops it; the reader joins the parts putting
the magic word back between them.

Image records (MXNet's ``ImageRecordIO`` / ``recordio.pack``): a 24-byte header
``uint32 flag | float32 label | uint64 id | uint64 id2``; when ``flag > 0``, ``flag``
float32 labels follow it (and ``label`` is unused); the rest is the encoded image.

Index files (``im2rec.py``, DALI's ``rec2idx``): one ``"key<TAB>offset"`` line per record,
``offset`` that of the record's first part in the ``.rec`` file. DALI takes one index for
all of ``path``, its offsets into the files' concatenation, and reads the records sorted by
offset whatever the line order (measured); ndd also takes one index per file.

Outputs per sample (DALI 2.4, measured): the encoded image (uint8, 1-D) and the label
(float32; shape ``(1,)`` when ``flag == 0``, ``(flag,)`` otherwise).
"""
from __future__ import annotations

import os
import struct

import numpy as np

from runtime.readers.file_index import FileIndex
from runtime.readers.file_io import path_list
from runtime.readers.file_reader import FileReaderCore
from runtime.readers.mapped import MappedFiles

__all__ = ["MAGIC", "frame_record", "pack_image", "unpack_image", "join_record",
           "read_index", "write_recordio", "MXNetReaderCore", "STATE_FORMAT"]

MAGIC = 0xCED7230A
STATE_FORMAT = "ndd.readers.MXNet/1"
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_LEN_MASK = (1 << 29) - 1
_HEADER = struct.Struct("<IfQQ")


def _part(cflag, data):
    pad = -len(data) % 4
    return _MAGIC_BYTES + struct.pack("<I", cflag << 29 | len(data)) + data + b"\0" * pad


def frame_record(data: bytes) -> bytes:
    """The framed parts of one record holding ``data`` (split at 4-aligned magic words, as
    dmlc-core's writer)."""
    data = bytes(data)
    if len(data) > _LEN_MASK:
        raise ValueError(f"RecordIO: a record of {len(data)} bytes is over the format's "
                         f"limit of {_LEN_MASK}")
    words = np.frombuffer(data[:len(data) // 4 * 4], "<u4")
    cuts = (np.flatnonzero(words == MAGIC) * 4).tolist()
    if not cuts:
        return _part(0, data)
    pieces, start = [], 0
    for c in cuts:
        pieces.append(data[start:c])
        start = c + 4
    pieces.append(data[start:])
    out = [_part(1, pieces[0])]
    out += [_part(2, p) for p in pieces[1:-1]]
    out.append(_part(3, pieces[-1]))
    return b"".join(out)


def pack_image(image: bytes, label, id=0, id2=0) -> bytes:
    """An image record's payload: the header, the labels, the image bytes. ``label``: a
    number (``flag`` 0) or a sequence of numbers (``flag = len(label)``, as MXNet's
    ``recordio.pack`` with an array label)."""
    if np.ndim(label) == 0:
        head = _HEADER.pack(0, float(label), id, id2)
        return head + bytes(image)
    lab = np.asarray(label, "<f4").ravel()
    return _HEADER.pack(lab.size, 0.0, id, id2) + lab.tobytes() + bytes(image)


def unpack_image(payload, where: str = "RecordIO record"):
    """``(image uint8 1-D, label float32)`` of an image record's payload.

    Raises
    ------
    ValueError
        A payload shorter than its header and labels (naming ``where``).
    """
    if len(payload) < _HEADER.size:
        raise ValueError(f"{where}: the record holds {len(payload)} bytes, less than the "
                         f"{_HEADER.size}-byte image header")
    flag, label, _, _ = _HEADER.unpack_from(payload)
    start = _HEADER.size
    if flag == 0:
        lab = np.array([label], np.float32)
    else:
        end = start + 4 * flag
        if end > len(payload):
            raise ValueError(f"{where}: the header announces {flag} labels ({4 * flag} "
                             f"bytes), past the end of the record ({len(payload)} bytes)")
        lab = np.frombuffer(payload, "<f4", flag, start).astype(np.float32)
        start = end
    return np.frombuffer(payload, np.uint8, len(payload) - start, start).copy(), lab


def join_record(buf, offset: int, path: str, index_path: str | None = None):
    """The data of the record whose first part starts ``buf`` (read from ``path`` at
    ``offset``), its parts joined; returns ``(data, bytes consumed)``: bytes, or for a
    one-part record in a memoryview ``buf`` a view into it (no copy).

    Raises
    ------
    ValueError
        A bad magic word (an index that does not match the file, or a corrupt file), a part
        running past the end of ``buf``, or parts out of sequence, naming the file and the
        offset of the part.
    """
    pos, parts, n = 0, [], len(buf)
    idx = f" (index {index_path!r})" if index_path else ""
    while True:
        at = offset + pos
        if pos + 8 > n:
            raise ValueError(f"RecordIO {path!r}: truncated record at offset {at}: "
                             f"{n - pos} byte(s) left, a part header needs 8{idx}")
        magic, lrec = struct.unpack_from("<II", buf, pos)
        if magic != MAGIC:
            what = "the index does not match the file" if pos == 0 else "corrupt record"
            raise ValueError(f"RecordIO {path!r}: bad magic 0x{magic:08x} at offset {at} "
                             f"(expected 0x{MAGIC:08x}): {what}{idx}")
        cflag, ln = lrec >> 29, lrec & _LEN_MASK
        if pos + 8 + ln > n:
            raise ValueError(f"RecordIO {path!r}: truncated record at offset {at}: the part "
                             f"announces {ln} bytes, {n - pos - 8} are left{idx}")
        expect = (0, 1) if not parts else (2, 3)
        if cflag not in expect:
            raise ValueError(f"RecordIO {path!r}: part at offset {at} has continuation flag "
                             f"{cflag}, expected {' or '.join(map(str, expect))}{idx}")
        parts.append(buf[pos + 8:pos + 8 + ln])     # a view when buf is a memoryview
        pos += 8 + ln + (-ln % 4)
        if cflag in (0, 3):
            data = parts[0] if len(parts) == 1 else _MAGIC_BYTES.join(parts)
            return data, min(pos, n)


def read_index(index_path, data_path, size=None):
    """``[offset]`` of the records an ``.idx`` file lists (in its line order), checked
    against the data's size (``size``, default that of the file ``data_path``; a list of
    files with ``size`` their total for an index over their concatenation).

    Raises
    ------
    ValueError
        An unreadable or malformed index, an offset past the end of ``data_path`` (naming
        both files).
    """
    index_path = os.fspath(index_path)
    if isinstance(data_path, (list, tuple)):
        data_path = [os.fspath(p) for p in data_path]
    else:
        data_path = os.fspath(data_path)
    try:
        with open(index_path) as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise ValueError(f"MXNet index {index_path!r} cannot be read: {e.strerror or e}") \
            from None
    if size is None:
        try:
            size = os.path.getsize(data_path)
        except OSError as e:
            raise ValueError(f"RecordIO file {data_path!r} cannot be read: "
                             f"{e.strerror or e}") from None
    out = []
    for i, line in enumerate(lines):
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) != 2:
                raise ValueError
            off = int(parts[1])
            if off < 0:
                raise ValueError
        except ValueError:
            raise ValueError(f"MXNet index {index_path!r} line {i + 1}: expected 'key offset' "
                             f"(offset a decimal >= 0), got {line!r}") from None
        if off + 8 > size:
            raise ValueError(f"MXNet index {index_path!r} line {i + 1} (offset {off}) does "
                             f"not match {data_path!r}: past the end of the file "
                             f"({size} bytes)")
        out.append(off)
    return out


def write_recordio(path, samples, index_path=None) -> int:
    """Write image records ``(image bytes, label[, id])`` to a ``.rec`` file, and its
    ``.idx`` (``"key<TAB>offset"``, keys 0, 1, ...) when ``index_path`` is given; returns
    the number of records. ``label``: a number or a sequence (see :func:`pack_image`)."""
    lines, off = [], 0
    with open(path, "wb") as f:
        for k, s in enumerate(samples):
            image, label = s[0], s[1]
            rec = frame_record(pack_image(image, label, s[2] if len(s) > 2 else k))
            f.write(rec)
            lines.append(f"{k}\t{off}\n")
            off += len(rec)
    if index_path is not None:
        with open(index_path, "w") as f:
            f.writelines(lines)
    return len(lines)



class MXNetReaderCore(FileReaderCore):
    """Reads ``(image, label)`` of every record of RecordIO files.

    Parameters
    ----------
    path : str or list of str
        ``.rec`` files (samples: their records in file order, as the indices list them).
    index_path : str or list of str
        One ``.idx`` file per ``.rec`` file.
    dont_use_mmap : bool, default False
        Read records with ``pread`` one by one instead of from memory maps of the files (as
        DALI; the same results).
    use_o_direct : bool
        Accepted for compatibility.
    **kwargs
        Sharding, shuffling, padding, prefetching: those of ``FileReaderCore``.
    """

    kind = "MXNet reader"
    state_format = STATE_FORMAT

    def __init__(self, *, path=None, index_path=None, dont_use_mmap=False, use_o_direct=False,
                 lazy_init=False, defer_shard_check=False, **kwargs):
        #: records are read with ``pread`` one by one instead of from memory maps
        self.dont_use_mmap = bool(dont_use_mmap)
        self.paths = path_list(path, "path", "readers.MXNet")
        self.index_paths = path_list(index_path, "index_path", "readers.MXNet")
        if len(self.index_paths) not in (1, len(self.paths)):
            raise ValueError(f"readers.MXNet: {len(self.paths)} RecordIO file(s) but "
                             f"{len(self.index_paths)} index file(s); expected one index "
                             f"(DALI's form: offsets into the files' concatenation) or one "
                             f"per file")
        super().__init__(lazy_init=True, **kwargs)
        self._records = None
        self.list_now(lazy_init, defer_shard_check)

    def build_index(self):
        sizes = []
        for p in self.paths:
            try:
                sizes.append(os.path.getsize(p))
            except OSError as e:
                raise ValueError(f"RecordIO file {p!r} cannot be read: {e.strerror or e}") \
                    from None
        if len(self.index_paths) == 1 and len(self.paths) > 1:
            # DALI's form: one index, offsets into the files' concatenation
            starts = np.cumsum([0] + sizes).tolist()
            per_file = [[] for _ in self.paths]
            for off in read_index(self.index_paths[0], self.paths, starts[-1]):
                fi = int(np.searchsorted(starts, off, side="right")) - 1
                per_file[fi].append(off - starts[fi])
        else:
            per_file = [read_index(ip, p) for p, ip in zip(self.paths, self.index_paths)]
        recs, names = [], []
        for fi, (p, offs) in enumerate(zip(self.paths, per_file)):
            offs = sorted(offs)             # DALI reads the records in file order
            ends = sorted(set(offs)) + [sizes[fi]]
            nxt = {o: ends[k + 1] for k, o in enumerate(ends[:-1])}
            for off in offs:
                recs.append((fi, off, nxt[off] - off))
                names.append(f"{p}@{off}")
        if not recs:
            raise ValueError(f"readers.MXNet: the index files {self.index_paths} list no "
                             f"records")
        self._records = recs
        table = np.array(recs, np.int64).reshape(-1, 3)
        #: (file number, offset, bytes to the next record) of every record, int64 arrays
        self._record_table = (table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy())
        self._maps = MappedFiles(self.paths)
        return FileIndex(tuple(names), np.zeros(len(names), np.int32),
                         f"RecordIO files {self.paths}")

    def make_loader(self, index, with_indices):
        records, paths, ipaths = self._records, self.paths, self.index_paths
        maps = None if self.dont_use_mmap else self._maps

        def load(indices):
            images, labels, fds = [], [], {}
            try:
                if maps is not None:
                    images, labels = _mapped_batch(indices, self._record_table, maps,
                                                   paths, ipaths, fds)
                else:
                    for i in indices.tolist():
                        img, lab = _read_one(fds, records[i], paths, ipaths)
                        images.append(img)
                        labels.append(lab)
            finally:
                for fd in fds.values():
                    os.close(fd)
            if with_indices:
                return [images, labels, indices.tolist()]
            return images, labels

        return load


def _read_one(fds, record, paths, ipaths):
    """``(image, label)`` of one record read with ``pread`` (``fds``: open descriptors by
    file number), its parts joined and its header checked.

    Raises
    ------
    RuntimeError
        Naming the file and the offset: a bad magic word, parts out of sequence, a record
        or header cut short.
    """
    fi, off, size = record
    if fi not in fds:
        try:
            fds[fi] = os.open(paths[fi], os.O_RDONLY)
        except OSError as e:
            raise RuntimeError(f"MXNet reader: cannot read {paths[fi]!r}: "
                               f"{e.strerror or e}") from e
    try:
        buf = os.pread(fds[fi], size, off)
        data, _ = join_record(memoryview(buf), off, paths[fi],
                              ipaths[min(fi, len(ipaths) - 1)])
        return unpack_image(data, f"RecordIO {paths[fi]!r}, record at offset {off}")
    except ValueError as e:     # DALI's readers raise RuntimeError
        raise RuntimeError(str(e)) from e


_OFFS16 = np.arange(16)


_HEAD4 = struct.Struct("<4I")


def _usual_batch(buf, offs, sizes):
    """``(images, labels)`` of records of one mapped file that are all in the usual form
    (one part, an image header of flag 0: one label), as :func:`_mapped_batch` gives them;
    None when any is not (the caller's checks then name it)."""
    end = buf.size
    images, bits = [], []
    unpack = _HEAD4.unpack_from
    for off, size in zip(offs, sizes):
        if size < 32 or off + size > end:
            return None
        magic, lrec, flag, label = unpack(buf, off)     # part header, image header
        if magic != MAGIC or lrec > _LEN_MASK or flag or lrec < _HEADER.size or \
                lrec + 8 > size:
            return None
        images.append(buf[off + 32:off + 8 + lrec].copy())
        bits.append(label)
    # the label's bits as stored: float32 (1,) views of one batch array
    return images, list(np.array(bits, np.uint32).view(np.float32).reshape(-1, 1))


def _mapped_batch(indices, table, maps, paths, ipaths, fds):
    """``(images, labels)`` of a batch read from memory maps of the files: the part and image
    headers of all its records checked at once; a record outside the common form (several
    parts, several labels, a header that does not check) read by :func:`_read_one` (the same
    arrays, or its error). One label a record: float32 ``(1,)`` views of one batch array,
    the bits as stored (as DALI copies them)."""
    rec_file, rec_off, rec_size = table
    files, offs, sizes = rec_file[indices], rec_off[indices], rec_size[indices]
    if files.size and files.min() == files.max():
        fi = int(files[0])
        try:
            buf = maps.get(fi)
        except OSError as e:
            raise RuntimeError(f"MXNet reader: cannot read {paths[fi]!r}: "
                               f"{e.strerror or e}") from e
        got = _usual_batch(buf, offs.tolist(), sizes.tolist())
        if got is not None:
            return got
    ok = np.zeros(indices.size, bool)
    heads = np.zeros((indices.size, 16), np.uint8)
    bufs = {}
    single = bool((files == files[0]).all())
    for fi in [int(files[0])] if single else np.unique(files).tolist():
        try:
            bufs[fi] = buf = maps.get(fi)
        except OSError as e:
            raise RuntimeError(f"MXNet reader: cannot read {paths[fi]!r}: "
                               f"{e.strerror or e}") from e
        sel = np.arange(files.size) if single else np.flatnonzero(files == fi)
        sel = sel[(offs[sel] + sizes[sel] <= buf.size) & (sizes[sel] >= 32)]
        heads[sel] = buf[offs[sel, None] + _OFFS16]
        ok[sel] = True
    words = heads.view("<u4")          # magic, cflag << 29 | length, flag, label
    n = (words[:, 1] & _LEN_MASK).astype(np.int64)
    ok &= (words[:, 0] == MAGIC) & (words[:, 1] >> 29 == 0) & (words[:, 2] == 0)
    ok &= (n >= _HEADER.size) & (n + 8 <= sizes)
    labels = list(heads[:, 12:16].copy().view("<f4").astype(np.float32))
    images = []
    good = ok.tolist()
    for b, (fi, off, ln) in enumerate(zip(files.tolist(), offs.tolist(), n.tolist())):
        if good[b]:
            images.append(bufs[fi][off + 32:off + 8 + ln].copy())
        else:
            img, labels[b] = _read_one(fds, (fi, off, int(sizes[b])), paths, ipaths)
            images.append(img)
    return images, labels
