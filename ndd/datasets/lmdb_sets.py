"""Caffe and Caffe2 LMDB databases: writers, and small datasets built from the sample photos
(for ``readers.Caffe`` / ``readers.Caffe2``, their tests, examples and benchmarks).

The writers put one protobuf record per sample (``runtime/readers/caffe_proto.py``) under
the key ``"%08d_<name>"`` (Caffe's ``convert_imageset`` form), so that LMDB's key order is the
order the samples were given in. Databases are written with the ``lmdb`` binding; the records
(not the database pages) are byte-identical for the same input.

:func:`build_lmdb_datasets` reads an image folder in ``readers.File``'s layout (default: a
fresh build of ``ndd.datasets.sample`` with ``num_images`` photos) and writes::

    root/caffe/        Datum(data=<JPEG>, encoded=True, label=<class index>)
    root/caffe2/       TensorProtos[STRING <JPEG>, INT32 <class index>]
    root/caffe2_multi/ TensorProtos[STRING <JPEG>, INT32 <indices: class, (class+1)%C>,
                                    FLOAT <width, height>, INT32 <bbox x0, y0, x1, y1>]
                       read with label_type=1, num_labels=C, additional_inputs=1, bbox=True

Command line: ``python -m ndd.datasets.lmdb_sets --root DIR [--num-images N]``.
"""
from __future__ import annotations

import argparse
import io
import os
import pathlib
import shutil

import lmdb
import numpy as np
from PIL import Image

from ndd.datasets.sample import build_sample_dataset
from runtime.readers import caffe_proto as pb
from runtime.readers.file_index import build_file_index

__all__ = ["write_caffe_lmdb", "write_caffe2_lmdb", "tensor_proto", "build_lmdb_datasets"]


def _key(k: int, name: str) -> bytes:
    return f"{k:08d}_{name}".encode()


def _write(path, items):
    """Write ``[(key, value bytes)]`` to a new LMDB database folder ``path``."""
    path = pathlib.Path(path)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    size = sum(len(k) + len(v) for k, v in items)
    env = lmdb.open(str(path), map_size=max(1 << 20, 4 * size + (1 << 16) * len(items)),
                    subdir=True, lock=True)
    try:
        with env.begin(write=True) as txn:
            for k, v in items:
                if not txn.put(k, v, overwrite=False):
                    raise ValueError(f"LMDB writer: duplicate key {k!r}")
    finally:
        env.close()
    return len(items)


def write_caffe_lmdb(path, samples, names=None) -> int:
    """Write Caffe records (``caffe.Datum``) to a new LMDB database (a folder).

    Parameters
    ----------
    path : str or os.PathLike
        The database folder (replaced if it exists).
    samples : iterable of (image, label)
        ``image``: encoded bytes (``encoded=True``), a uint8 array ``(H, W, C)`` (raw pixels,
        ``encoded=False``, stored in that order as DALI reads them), or None (no ``data``);
        ``label``: an int, or None (no ``label`` field).
    names : list of str, optional
        Key suffixes (default ``"sample"``); key ``k`` is ``"%08d_<name>"``.

    Returns
    -------
    int
        The number of records written.
    """
    items = []
    for k, (image, label) in enumerate(samples):
        d = pb.Datum()
        if isinstance(image, np.ndarray):
            if image.dtype != np.uint8 or image.ndim != 3:
                raise ValueError(f"write_caffe_lmdb: raw image {k} must be uint8 (H, W, C), "
                                 f"got {image.dtype} {image.shape}")
            d.height, d.width, d.channels = image.shape
            d.data = np.ascontiguousarray(image).tobytes()
            d.encoded = False
        elif image is not None:
            d.data = bytes(image)
            d.encoded = True
        if label is not None:
            d.label = int(label)
        items.append((_key(k, names[k] if names else "sample"), d.SerializeToString()))
    return _write(path, items)


def tensor_proto(value):
    """A ``caffe2.TensorProto`` of ``value``: bytes -> STRING (encoded image); uint8 array
    of 2 or 3 dims -> BYTE (raw image, ``dims`` its shape); float -> FLOAT, int32 -> INT32,
    int64 -> INT64 (1-D); Python ints -> INT32, floats -> FLOAT."""
    if isinstance(value, (bytes, bytearray)):
        return pb.TensorProto(data_type=pb.STRING, string_data=[bytes(value)])
    arr = np.asarray(value)
    if arr.dtype == np.uint8 and arr.ndim in (2, 3):
        return pb.TensorProto(data_type=pb.BYTE, dims=list(arr.shape),
                              byte_data=np.ascontiguousarray(arr).tobytes())
    arr = arr.ravel()
    if arr.dtype.kind == "f":
        return pb.TensorProto(data_type=pb.FLOAT, float_data=arr.astype(np.float32).tolist())
    if arr.dtype == np.int64 and isinstance(value, (np.ndarray, np.generic)):
        return pb.TensorProto(data_type=pb.INT64, int64_data=arr.tolist())
    if arr.dtype.kind in "iub":
        return pb.TensorProto(data_type=pb.INT32, int32_data=arr.astype(np.int32).tolist())
    raise ValueError(f"tensor_proto: cannot store a {arr.dtype} value")


def write_caffe2_lmdb(path, records, names=None) -> int:
    """Write Caffe2 records (``caffe2.TensorProtos``) to a new LMDB database (a folder).

    Parameters
    ----------
    path : str or os.PathLike
        The database folder (replaced if it exists).
    records : iterable of sequences
        Per record, its tensors in order, each a value :func:`tensor_proto` takes or a
        ``TensorProto`` itself.
    names : list of str, optional
        Key suffixes, as :func:`write_caffe_lmdb`.

    Returns
    -------
    int
    """
    items = []
    for k, tensors in enumerate(records):
        msg = pb.TensorProtos()
        for t in tensors:
            msg.protos.append(t if isinstance(t, pb.TensorProto) else tensor_proto(t))
        items.append((_key(k, names[k] if names else "sample"), msg.SerializeToString()))
    return _write(path, items)


def build_lmdb_datasets(root, source=None, num_images=24) -> dict:
    """Write the Caffe and Caffe2 databases of an image folder (see the module docstring).

    Parameters
    ----------
    root : str or os.PathLike
        Folder receiving ``caffe/``, ``caffe2/`` and ``caffe2_multi/`` (replaced if present).
    source : str or os.PathLike, optional
        Image folder with one sub-folder per class (``readers.File``'s ``file_root``; the
        labels are the indices of the sorted class names). Default: the sample photos,
        ``ndd.datasets.sample.build_sample_dataset(root / "photos", num_images)``.
    num_images : int, default 24
        Photos of the default source.

    Returns
    -------
    dict
        ``{"caffe": path, "caffe2": path, "caffe2_multi": path, "num_labels": C,
        "samples": [(file path, label)]}`` in key order.
    """
    root = pathlib.Path(root)
    if source is None:
        source = build_sample_dataset(root / "photos", num_images=num_images, progress=False)
    index = build_file_index(file_root=os.fspath(source))
    paths, labels = list(index.paths), index.labels.tolist()
    num_labels = max(labels) + 1
    names = [os.path.basename(p) for p in paths]
    data = [pathlib.Path(p).read_bytes() for p in paths]
    write_caffe_lmdb(root / "caffe", zip(data, labels), names)
    write_caffe2_lmdb(root / "caffe2", ([d, np.int32(lab)] for d, lab in zip(data, labels)),
                      names)
    multi = []
    for d, lab in zip(data, labels):
        w, h = Image.open(io.BytesIO(d)).size
        multi.append([d, np.array([lab, (lab + 1) % num_labels], np.int32),
                      np.array([w, h], np.float32),
                      np.array([w // 4, h // 4, w - w // 4, h - h // 4], np.int32)])
    write_caffe2_lmdb(root / "caffe2_multi", multi, names)
    return {"caffe": root / "caffe", "caffe2": root / "caffe2",
            "caffe2_multi": root / "caffe2_multi", "num_labels": num_labels,
            "samples": list(zip(paths, labels))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ndd.datasets.lmdb_sets",
                                 description="Caffe/Caffe2 LMDB databases of the sample photos")
    ap.add_argument("--root", required=True)
    ap.add_argument("--source", default=None, help="image folder (default: sample photos)")
    ap.add_argument("--num-images", type=int, default=24)
    a = ap.parse_args(argv)
    out = build_lmdb_datasets(a.root, a.source, a.num_images)
    print(f"{len(out['samples'])} samples, {out['num_labels']} classes: "
          f"{out['caffe']}, {out['caffe2']}, {out['caffe2_multi']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
