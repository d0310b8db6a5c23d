"""Data-parallel training on several processes, each reading its shard with an ndd reader.

    torchrun --nproc_per_node 2 examples/distributed_loader.py                  # sample photos
    torchrun --nproc_per_node 2 examples/distributed_loader.py --readers all \\
        --modes eager,compile --epochs 2 --save-at 3 --checkpoint /tmp/ckpt --report /tmp/log
    torchrun --nproc_per_node 2 examples/distributed_loader.py ... --resume     # continue

Every rank builds its reader with ``shard_id=rank, num_shards=world_size,
pad_last_batch=True`` (DALI's recipe: every shard is padded to ``ceil(N / world_size)``
samples and the last batch to the batch size by repeating the last sample, so every rank runs
the same number of steps and DistributedDataParallel's all-reduce never waits for a rank that
has run out), ``random_shuffle=True`` with one seed for all ranks (each permutes its own
shard) and ``stick_to_shard=False`` (the shards move on by one each epoch). The samples are
JPEGs with an id as label, in every format ndd reads (``readers.File(files=...,
labels=ids)``; the same files as a Caffe and a Caffe2 LMDB, a TFRecord file with its index,
a Webdataset tar (``<id>.jpg`` + ``<id>.id``, an int64), an MXNet RecordIO ``.rec`` + ``.idx``,
and ``.npy`` files holding the JPEG's bytes followed by the id as 8 bytes), decoded and resized
to 16x16 by ndd; the model is a linear layer over the mean colour, wrapped in DDP over the
gloo backend (CPU).

``--save-at K`` saves a checkpoint after global step K of each run (the reader's
``get_state()`` string, the model and optimizer, the epoch and step) to
``<checkpoint>.<reader>.<mode>.rank<r>.pt`` and goes on (periodic checkpoints), ``--stop-at K``
saves it and stops the run (a crash); ``--resume`` loads it into a fresh reader
(``set_state``) and model, and continues with the next batch. ``--report PREFIX``
writes ``PREFIX.rank<r>.json``: per run, the ids of every batch of every epoch, the batch
counts all ranks reported (all-gathered), and the final weights' sum.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib

import io
import tarfile

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import ndd
from ndd.datasets.lmdb_sets import write_caffe2_lmdb, write_caffe_lmdb
from ndd.datasets.sample import build_sample_dataset
from runtime.readers.mxnet import write_recordio

NUM_CLASSES = 4
SIZE = (16, 16)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None,
                   help="folder of .jpg files (default: build N sample photos)")
    p.add_argument("--work", default=None, help="folder for the built data and the LMDB")
    p.add_argument("--num-images", type=int, default=24)
    p.add_argument("--readers", default="file",
                   help="comma-separated, of: " + ", ".join(READERS) + "; or all")
    p.add_argument("--modes", default="eager", help="comma-separated: eager, compile")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="ndd.set_num_threads per rank")
    p.add_argument("--save-at", type=int, default=None,
                   help="save a checkpoint after this global step and go on")
    p.add_argument("--stop-at", type=int, default=None,
                   help="save a checkpoint after this global step and stop")
    p.add_argument("--checkpoint", default=None, help="checkpoint path prefix")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--report", default=None, help="per-rank JSON report path prefix")
    return p.parse_args(argv)


READERS = ("file", "caffe", "caffe2", "tfrecord", "webdataset", "mxnet", "numpy")


def _set_paths(work):
    """``{reader kind: its files under work}`` (``file`` reads the JPEGs themselves)."""
    return {"caffe": work / "caffe", "caffe2": work / "caffe2",
            "tfrecord": (work / "data.tfrecord", work / "data.tfrecord.idx"),
            "webdataset": work / "data.tar", "mxnet": (work / "data.rec", work / "data.idx"),
            "numpy": work / "npy"}


def _write_sets(work, files):
    """Each format's copy of ``files`` (sample ``k`` = ``files[k]``, id ``k``) under ``work``,
    where it is missing."""
    blobs = [pathlib.Path(f).read_bytes() for f in files]
    ids = range(len(blobs))
    sets = _set_paths(work)
    if not (sets["caffe"] / "data.mdb").exists():
        write_caffe_lmdb(sets["caffe"], list(zip(blobs, ids)))
    if not (sets["caffe2"] / "data.mdb").exists():
        write_caffe2_lmdb(sets["caffe2"], list(zip(blobs, ids)))
    if not sets["tfrecord"][1].exists():
        ndd.tfrecord.write_tfrecord(str(sets["tfrecord"][0]),
                                    [{"image": b, "label": [k]} for k, b in zip(ids, blobs)],
                                    str(sets["tfrecord"][1]))
    if not sets["webdataset"].exists():
        with tarfile.open(sets["webdataset"], "w") as tar:
            for k, b in zip(ids, blobs):
                for ext, payload in (("jpg", b), ("id", np.int64(k).tobytes())):
                    info = tarfile.TarInfo(f"{k:06d}.{ext}")
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
    if not sets["mxnet"][1].exists():
        write_recordio(str(sets["mxnet"][0]), [(b, float(k)) for k, b in zip(ids, blobs)],
                       str(sets["mxnet"][1]))
    if not sets["numpy"].exists():
        sets["numpy"].mkdir(parents=True)
        for k, b in zip(ids, blobs):        # a JPEG decoder stops at the image's end marker
            np.save(sets["numpy"] / f"{k:06d}.npy",
                    np.frombuffer(b + np.int64(k).tobytes(), np.uint8))


def prepare_data(args, rank):
    """``(jpeg paths, {reader kind: its files})``: rank 0 builds what is missing, the others
    wait."""
    work = pathlib.Path(args.work or os.environ.get("TMPDIR", "/tmp")) / "ndd-distributed"
    src = pathlib.Path(args.data) if args.data else work / "photos"
    if rank == 0:
        if not args.data:
            build_sample_dataset(src, num_images=args.num_images, progress=False)
        _write_sets(work, sorted(str(p) for p in src.rglob("*.jpg")))
    dist.barrier()
    return sorted(str(p) for p in src.rglob("*.jpg")), _set_paths(work)


def _ids(batch):
    """int64 ids ``(B,)`` of a Batch of 8-byte samples (or the last 8 bytes of each)."""
    return torch.tensor([int(np.asarray(t)[-8:].view(np.int64)[0]) for t in batch.tensors])


def make_reader(kind, files, sets, rank, world, seed):
    """The rank's sharded, shuffled reader of ``kind`` and a function of one of its batches
    giving ``(encoded images, ids int64 (B,))``; the ids are the sample ids 0..N-1."""
    common = dict(shard_id=rank, num_shards=world, pad_last_batch=True, random_shuffle=True,
                  seed=seed, stick_to_shard=False)

    def label_ids(labels):
        return labels.torch().reshape(-1).long()
    if kind == "file":
        return (ndd.readers.File(files=files, labels=list(range(len(files))), **common),
                lambda b: (b[0], label_ids(b[1])))
    if kind in ("caffe", "caffe2"):
        cls = ndd.readers.Caffe if kind == "caffe" else ndd.readers.Caffe2
        return cls(path=str(sets[kind]), **common), lambda b: (b[0], label_ids(b[1]))
    if kind == "tfrecord":
        tfr = ndd.tfrecord
        feats = {"image": tfr.FixedLenFeature((), tfr.string, ""),
                 "label": tfr.FixedLenFeature([1], tfr.int64, -1)}
        path, index = sets[kind]
        return (ndd.readers.TFRecord(path=str(path), index_path=str(index), features=feats,
                                     **common),
                lambda b: (b["image"], label_ids(b["label"])))
    if kind == "webdataset":
        return (ndd.readers.Webdataset(paths=str(sets[kind]), ext=["jpg", "id"], **common),
                lambda b: (b[0], _ids(b[1])))
    if kind == "mxnet":
        path, index = sets[kind]
        return (ndd.readers.MXNet(path=str(path), index_path=str(index), **common),
                lambda b: (b[0], label_ids(b[1])))
    if kind == "numpy":
        files_npy = sorted(str(p) for p in sets[kind].glob("*.npy"))
        return (ndd.readers.Numpy(files=files_npy, **common),
                lambda b: (b[0] if isinstance(b, tuple) else b,
                           _ids(b[0] if isinstance(b, tuple) else b)))
    raise SystemExit(f"unknown reader {kind!r} (expected one of {', '.join(READERS)})")


def batches(reader, unpack, batch_size, mode):
    """One epoch: ``(iterator, generator of (features float32 (B, 3), ids int64 (B,)))``."""
    it = reader.next_epoch(batch_size=batch_size, compile=mode == "compile")

    def gen():
        for batch in it:
            jpegs, ids = unpack(batch)
            images = ndd.resize(ndd.decoders.image(jpegs), size=SIZE)
            feats = images.torch().float().mean(dim=(1, 2)) / 255.0
            yield feats, ids
    return it, gen()


def run(kind, mode, args, files, sets, rank, world):
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(nn.Linear(3, NUM_CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = nn.CrossEntropyLoss()
    reader, unpack = make_reader(kind, files, sets, rank, world, args.seed)
    ckpt = (f"{args.checkpoint}.{kind}.{mode}.rank{rank}.pt" if args.checkpoint else None)
    epoch, step = 0, 0
    if args.resume:
        state = torch.load(ckpt, weights_only=False)
        reader.set_state(state["reader"])
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        epoch, step = state["epoch"], state["step"]
    log = {"epochs": {}, "counts": {}, "stopped": False}
    while epoch < args.epochs:
        it, gen = batches(reader, unpack, args.batch_size, mode)
        seen = log["epochs"].setdefault(str(epoch), [])
        for feats, ids in gen:
            loss = loss_fn(model(feats), ids % NUM_CLASSES)
            opt.zero_grad()
            loss.backward()             # DDP: all-reduce of the gradients across ranks
            opt.step()
            step += 1
            seen.append(ids.tolist())
            if step in (args.save_at, args.stop_at) and not args.resume:
                torch.save({"reader": reader.get_state(), "model": model.module.state_dict(),
                            "opt": opt.state_dict(), "epoch": epoch, "step": step}, ckpt)
                log["saved_at"] = step
            if step == args.stop_at and not args.resume:
                it.close()
                log["stopped"] = True
                break
        if log["stopped"]:
            break
        # equal batch counts on every rank (else DDP would have hung above)
        counts = [None] * world
        dist.all_gather_object(counts, len(seen))
        log["counts"][str(epoch)] = counts
        epoch += 1
    log["weights_sum"] = float(sum(p.detach().double().sum() for p in model.module.parameters()))
    log["steps"] = step
    return log


def main(argv=None):
    args = parse_args(argv)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    ndd.set_num_threads(args.threads)
    files, sets = prepare_data(args, rank)
    logs = {}
    kinds = READERS if args.readers == "all" else args.readers.split(",")
    for kind in kinds:
        for mode in args.modes.split(","):
            logs[f"{kind}.{mode}"] = log = run(kind, mode, args, files, sets, rank, world)
            if rank == 0:
                total = sum(len(b) for e in log["epochs"].values() for b in e)
                print(f"{kind:10s} {mode:8s} steps {log['steps']:3d}  samples on rank 0: "
                      f"{total}  batch counts per epoch: {log['counts']}  weights sum "
                      f"{log['weights_sum']:.6f}{'  (stopped)' if log['stopped'] else ''}")
    if args.report:
        pathlib.Path(f"{args.report}.rank{rank}.json").write_text(json.dumps(logs))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
