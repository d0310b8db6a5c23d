"""Deferred (compiled, fused) vs eager execution of the standard train and val pipelines.

Both modes see the same photos (``build_sample_dataset(root, num_images)``), batch size and
thread pool (``ndd`` executor with ``--threads`` workers); repeats are interleaved batch by
batch (eager, deferred, then deferred, eager, ...) so that machine noise hits both alike. For
each pipeline the min and the median epoch time per batch of each mode are printed with the
ratio eager/deferred (> 1: deferred is faster), and the ratio of the sums of per-batch best
times (the least noisy figure on a shared machine). torch intra-op threads are set to 1, as in the runtime.

    python benchmarks/deferred_vs_eager.py [--images 300] [--batch 32] [--threads 2] [--reps 5]

Pipelines: train = decode -> random_resized_crop(224) -> crop_mirror_normalize(mirror=coin_flip);
val = decode -> resize(resize_shorter=256) -> crop_mirror_normalize(crop=(224, 224)).
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
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


def one_batch(fn, mode, enc):
    """Seconds to run ``fn`` on one batch in EvalMode ``mode`` (outputs as torch)."""
    t0 = time.perf_counter()
    with mode:
        fn(ndd.as_batch(enc)).torch()
    return time.perf_counter() - t0


def measure(fn, batches, reps):
    """Interleaved repeats: per repeat and batch, eager then deferred (order alternating).

    Returns ``{mode: (epoch seconds per repeat, per-batch minima)}``.
    """
    modes = (("eager", ndd.EvalMode.eager), ("deferred", ndd.EvalMode.deferred))
    ndd.random.set_seed(0)
    for _, m in modes:       # warm-up (imports, pool, plan cache, resize tables)
        for enc in batches[:2]:
            one_batch(fn, m, enc)
    epochs = {k: [0.0] * reps for k, _ in modes}
    best = {k: [float("inf")] * len(batches) for k, _ in modes}
    for r in range(reps):
        for b, enc in enumerate(batches):
            for k, m in (modes if r % 2 == 0 else modes[::-1]):
                dt = one_batch(fn, m, enc)
                epochs[k][r] += dt
                best[k][b] = min(best[k][b], dt)
    return {k: (epochs[k], best[k]) for k, _ in modes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--root", default="/tmp/ndd-sample-bench")
    ap.add_argument("--only", choices=("train", "val"), default=None)
    opt = ap.parse_args()
    torch.set_num_threads(1)
    ndd.set_num_threads(opt.threads)
    root = build_sample_dataset(opt.root, num_images=opt.images, progress=False)
    files = sorted(pathlib.Path(root).rglob("*.jpg"))[:opt.images]
    enc = [np.fromfile(f, dtype=np.uint8) for f in files]
    batches = [enc[i:i + opt.batch] for i in range(0, len(enc) - opt.batch + 1, opt.batch)]
    print(f"{len(enc)} images, batch {opt.batch}, {len(batches)} batches, "
          f"{opt.threads} threads, {opt.reps} interleaved repeats")
    for name, fn in (("train", train), ("val", val)):
        if opt.only and name != opt.only:
            continue
        res = measure(fn, batches, opt.reps)
        nb = len(batches)
        (te, be), (td, bd) = res["eager"], res["deferred"]
        me, md = statistics.median(te) / nb, statistics.median(td) / nb
        print(f"{name}: eager min {min(te) / nb * 1e3:.1f} / median {me * 1e3:.1f} ms/batch, "
              f"deferred min {min(td) / nb * 1e3:.1f} / median {md * 1e3:.1f} ms/batch; "
              f"deferred speed-up: min {min(te) / min(td):.2f}x, median {me / md:.2f}x, "
              f"per-batch best {sum(be) / sum(bd):.2f}x")

if __name__ == "__main__":
    main()
