"""Deferred (compiled, fused) vs eager execution of the standard train and val pipelines.

Same images, batch size and thread pool for both modes; runs are interleaved (eager, deferred,
eager, ...) and the median time per batch is reported with the ratio eager/deferred (>1 means
deferred is faster). torch intra-op threads are set to 1 as in the runtime.

    python benchmarks/deferred_vs_eager.py [--images 32] [--batch 16] [--reps 5]
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time

import numpy as np
import torch

import ndd
from ndd.datasets.sample import build_sample_dataset

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def train(b):
    img = ndd.decoders.image(b)
    img = ndd.random_resized_crop(img, size=(224, 224))
    flip = ndd.random.coin_flip(batch_size=b.batch_size)
    return ndd.crop_mirror_normalize(img, mirror=flip, mean=MEAN, std=STD)


def val(b):
    img = ndd.decoders.image(b)
    img = ndd.resize(img, resize_shorter=256)
    return ndd.crop_mirror_normalize(img, crop=(224, 224), mean=MEAN, std=STD)


def one_epoch(fn, mode, batches):
    t0 = time.perf_counter()
    with mode:
        for enc in batches:
            fn(ndd.as_batch(enc)).torch()
    return (time.perf_counter() - t0) / len(batches)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--root", default=None)
    opt = ap.parse_args()
    torch.set_num_threads(1)
    root = opt.root or str(pathlib.Path(tempfile.gettempdir()) / "ndd_bench_ds")
    root = build_sample_dataset(root, num_images=opt.images, progress=False)
    files = sorted(pathlib.Path(root).rglob("*.jpg"))[:opt.images]
    enc = [np.fromfile(f, dtype=np.uint8) for f in files]
    batches = [enc[i:i + opt.batch] for i in range(0, len(enc) - opt.batch + 1, opt.batch)]
    for name, fn in (("train", train), ("val", val)):
        ndd.random.set_seed(0)
        one_epoch(fn, ndd.EvalMode.deferred, batches[:1])   # warm-up (imports, pool)
        one_epoch(fn, ndd.EvalMode.eager, batches[:1])
        te, td = [], []
        for _ in range(opt.reps):
            te.append(one_epoch(fn, ndd.EvalMode.eager, batches))
            td.append(one_epoch(fn, ndd.EvalMode.deferred, batches))
        me, md = statistics.median(te), statistics.median(td)
        print(f"{name}: eager {me * 1e3:.1f} ms/batch, deferred {md * 1e3:.1f} ms/batch, "
              f"deferred speed-up {me / md:.2f}x (batch {opt.batch}, {len(batches)} batches)")


if __name__ == "__main__":
    main()
