"""Read throughput of ndd's readers against DALI 2.4's, on the same files and threads.

    python benchmarks/readers_vs_dali.py [--num-images 256] [--batch-size 32] [--threads 2]
                                         [--repeats 5] [--readers file,tfrecord,...]

Builds one dataset per format from the same sample photos (``ndd.datasets.sample``) under
``--work`` (default ``$TMPDIR/ndd-readers-bench``; a folder ``n<num-images>`` per size): the JPEG folder (``readers.File``), a
TFRecord file + DALI index (``image`` bytes, ``label`` int64), a Webdataset tar
(``jpg``/``cls``), an MXNet ``.rec`` + ``.idx``, Caffe and Caffe2 LMDBs, and ``.npy`` files
(each photo's bytes, repeated to 64 x 64 x 3) for ``readers.Numpy``. Each run reads one whole epoch,
unshuffled, batch ``--batch-size``, and forces every output batch (``.evaluate()``); the
first epoch of each reader is a warm-up. ndd and DALI alternate run by run (interleaved) and
the table gives the median (and best) of ``--repeats`` epochs in samples/s for each, the
ratio of the medians, and the process's CPU time per sample (all threads; steadier than wall
time on a shared machine).
Prints a Markdown table (``docs/benchmarks.md``, "Readers").
"""
from __future__ import annotations

import argparse
import io
import os
import pathlib
import statistics
import tarfile
import time

import numpy as np

import ndd
from ndd.datasets.lmdb_sets import write_caffe2_lmdb, write_caffe_lmdb
from ndd.datasets.sample import build_sample_dataset
from runtime.readers.file_index import build_file_index
from runtime.readers.mxnet import write_recordio
from runtime.readers.tfrecord import write_tfrecord

READERS = ("file", "tfrecord", "webdataset", "mxnet", "caffe", "caffe2", "numpy")


def build(work: pathlib.Path, num_images: int) -> dict:
    """The per-format datasets of ``num_images`` sample photos: reader arguments by name,
    without the TFRecord ``features`` (they differ between ndd and DALI, see ``reader``)."""
    photos = build_sample_dataset(work / "photos", num_images=num_images, progress=False)
    index = build_file_index(file_root=str(photos))
    paths, labels = list(index.paths), [int(v) for v in index.labels]
    data = [pathlib.Path(p).read_bytes() for p in paths]
    tf = work / "data.tfrecord"
    if not tf.exists():
        write_tfrecord(tf, [{"image": d, "label": [lab]} for d, lab in zip(data, labels)],
                       work / "data.tfrecord.idx")
    tar = work / "data.tar"
    if not tar.exists():
        with tarfile.open(tar, "w") as t:
            for k, (d, lab) in enumerate(zip(data, labels)):
                for ext, payload in (("jpg", d), ("cls", str(lab).encode())):
                    info = tarfile.TarInfo(f"{k:06d}.{ext}")
                    info.size = len(payload)
                    t.addfile(info, io.BytesIO(payload))
    rec = work / "data.rec"
    if not rec.exists():
        write_recordio(rec, list(zip(data, labels)), work / "data.idx")
    if not (work / "caffe" / "data.mdb").exists():
        write_caffe_lmdb(work / "caffe", zip(data, labels))
    if not (work / "caffe2" / "data.mdb").exists():
        write_caffe2_lmdb(work / "caffe2", ([d, np.int32(lab)] for d, lab in zip(data, labels)))
    npy = work / "npy"
    if not npy.exists():
        npy.mkdir()
        for k, d in enumerate(data):
            arr = np.resize(np.frombuffer(d, np.uint8), (64, 64, 3))
            np.save(npy / f"{k:06d}.npy", arr)
    return {
        "file": dict(files=paths, labels=labels),
        "tfrecord": dict(path=[str(tf)], index_path=[str(work / "data.tfrecord.idx")]),
        "webdataset": dict(paths=[str(tar)], ext=["jpg", "cls"]),
        "mxnet": dict(path=[str(rec)], index_path=[str(work / "data.idx")]),
        "caffe": dict(path=[str(work / "caffe")]),
        "caffe2": dict(path=[str(work / "caffe2")]),
        "numpy": dict(file_root=str(npy), file_filter="*.npy"),
    }


def reader(lib, name: str, kwargs: dict, batch_size: int):
    """``lib.readers.<Name>(**kwargs)`` (``lib``: ndd or DALI's dynamic module)."""
    cls = {"file": "File", "tfrecord": "TFRecord", "webdataset": "Webdataset",
           "mxnet": "MXNet", "caffe": "Caffe", "caffe2": "Caffe2", "numpy": "Numpy"}[name]
    kwargs = dict(kwargs)
    if name == "tfrecord":
        feats = lib.tfrecord if hasattr(lib, "tfrecord") else None
        if feats is None:
            import nvidia.dali.tfrecord as feats  # noqa: PLC0415 (DALI only, at run time)
        kwargs["features"] = {"image": feats.FixedLenFeature((), feats.string, ""),
                              "label": feats.FixedLenFeature([1], feats.int64, -1)}
    return getattr(lib.readers, cls)(max_batch_size=batch_size, **kwargs)


def epoch_seconds(rd, batch_size: int) -> tuple[float, int, float]:
    """Seconds to read one epoch with every output evaluated, the samples read, and the CPU
    seconds the process (all its threads) spent meanwhile."""
    n = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    for outs in rd.next_epoch(batch_size=batch_size):
        if isinstance(outs, dict):
            outs = tuple(outs.values())
        elif not isinstance(outs, tuple):
            outs = (outs,)
        for b in outs:
            b.evaluate()
        n += outs[0].batch_size
    return time.perf_counter() - t0, n, time.process_time() - c0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-images", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--readers", default=",".join(READERS))
    p.add_argument("--work", default=None)
    p.add_argument("--no-dali", action="store_true")
    args = p.parse_args(argv)

    ndd.set_num_threads(args.threads)
    libs = {"ndd": ndd}
    if not args.no_dali:
        import nvidia.dali.experimental.dynamic as dali  # noqa: PLC0415
        dali.set_num_threads(args.threads)
        libs["DALI"] = dali
    # one folder per dataset size: the files are built once and reused (an earlier run's
    # files of another size would otherwise be read under this size's name)
    work = pathlib.Path(args.work or os.environ.get("TMPDIR", "/tmp")) / "ndd-readers-bench" \
        / f"n{args.num_images}"
    work.mkdir(parents=True, exist_ok=True)
    sets = build(work, args.num_images)
    rows = []
    for name in args.readers.split(","):
        readers = {k: reader(lib, name, sets[name], args.batch_size) for k, lib in libs.items()}
        rates, cpu = {k: [] for k in libs}, {k: [] for k in libs}
        for k, rd in readers.items():
            epoch_seconds(rd, args.batch_size)                  # warm-up
        for _ in range(args.repeats):
            for k, rd in readers.items():                       # interleaved
                sec, n, cpu_sec = epoch_seconds(rd, args.batch_size)
                rates[k].append(n / sec)
                cpu[k].append(cpu_sec / n * 1e6)
        med = {k: statistics.median(v) for k, v in rates.items()}
        best = {k: max(v) for k, v in rates.items()}
        us = {k: statistics.median(v) for k, v in cpu.items()}
        rows.append((name, med, best, us))
        print(f"{name:11s} " + "  ".join(f"{k} median {med[k]:7.0f}/s best {best[k]:7.0f}/s "
                                         f"cpu {us[k]:5.1f} us" for k in libs), flush=True)
    print()
    print(f"{args.num_images} samples, batch {args.batch_size}, {args.threads} threads, "
          f"{args.repeats} interleaved epochs each; samples/s median (best), CPU time of the "
          f"process per sample (median)")
    print()
    print("| reader | ndd samples/s | DALI 2.4 samples/s | ndd / DALI | ndd CPU us | "
          "DALI CPU us |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, med, best, us in rows:
        if "DALI" in med:
            print(f"| {name} | {med['ndd']:.0f} ({best['ndd']:.0f}) | {med['DALI']:.0f} "
                  f"({best['DALI']:.0f}) | {med['ndd'] / med['DALI']:.2f} | {us['ndd']:.1f} | "
                  f"{us['DALI']:.1f} |")
        else:
            print(f"| {name} | {med['ndd']:.0f} ({best['ndd']:.0f}) | - | - | "
                  f"{us['ndd']:.1f} | - |")


if __name__ == "__main__":
    main()
