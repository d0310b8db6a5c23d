"""Per-image cost of eager ``crop_mirror_normalize``: batch path vs per-sample path.

The per-sample path is forced with ``out_of_bounds_policy="pad"`` (same work for windows inside
the image).  Reports wall ms/img and process CPU ms/img, 1 and 2 pool threads, train-like
(224x224 in, per-sample mirror) and val-like (256x341 in, centre 224x224 crop) batches of 32.

Run: ``python benchmarks/bench_cmn_batch.py``
"""
import time

import numpy as np
import torch

import ndd

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def run(imgs, flips, crop, policy, reps=15):
    kw = dict(mean=MEAN, std=STD, out_of_bounds_policy=policy)
    if crop:
        kw["crop"] = crop
    b = ndd.as_batch(imgs, layout="HWC")
    m = ndd.as_batch([np.array(f, np.int32) for f in flips])
    ndd.crop_mirror_normalize(b, mirror=m, **kw).evaluate()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(reps):
        ndd.crop_mirror_normalize(b, mirror=m, **kw).evaluate()
    n = reps * len(imgs)
    return (time.perf_counter() - t) / n * 1e3, (time.process_time() - c) / n * 1e3


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    cases = {"train": ([rng.integers(0, 256, (224, 224, 3), np.uint8) for _ in range(32)], None),
             "val": ([rng.integers(0, 256, (256, 341, 3), np.uint8) for _ in range(32)],
                     (224, 224))}
    for threads in (1, 2):
        ndd.set_num_threads(threads)
        for name, (imgs, crop) in cases.items():
            flips = rng.integers(0, 2, len(imgs)) if name == "train" else [0] * len(imgs)
            for path, policy in (("batch", "error"), ("per-sample", "pad")):
                wall, cpu = run(imgs, flips, crop, policy)
                print(f"threads={threads} {name:5s} {path:10s} wall {wall:.3f} ms/img, "
                      f"cpu {cpu:.3f} ms/img")


if __name__ == "__main__":
    main()
