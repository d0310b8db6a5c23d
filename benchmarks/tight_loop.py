"""The kernel floor of ``ndd bench``'s pipelines: the kernels compile mode runs (nvImageCodec's
region decode of the exact random_resized_crop / resize windows, the uint8 resample, the
normalize into CHW float32) called directly in a loop over the same images, windows and flips,
on the same number of processes, without graph, per-sample Python or messages between samples
(:mod:`ndd.tools.bench_floor`).  Prints img/s per epoch and the median.

``ndd bench --floor`` times the same floor interleaved with the modes and prints compile
mode's fraction of it (issue 20: at least 90 %).

Usage::

    python benchmarks/tight_loop.py --pipeline train --threads 2 --epochs 4 [--data DIR]
"""
from __future__ import annotations

import argparse
import statistics
import sys

import ndd
from ndd.datasets.sample import build_sample_dataset, default_root
from ndd.tools.bench import RNG_SEED
from ndd.tools.bench_floor import FloorRunner
from ndd.tools.bench_pipelines import PIPELINES


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", choices=("train", "val"), default="train")
    p.add_argument("--data", default=None, help="image folder (default: the bench photos)")
    p.add_argument("--num-images", type=int, default=256)
    p.add_argument("--photos", default="imagenet", choices=("imagenet", "progressive-heavy"))
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="worker processes (default: 2)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--warmup", type=int, default=1)
    ns = p.parse_args(argv)
    data = ns.data
    if data is None:
        suffix = "" if ns.photos == "progressive-heavy" else f"-{ns.photos}"
        data = str(build_sample_dataset(root=default_root() / f"bench-{ns.num_images}{suffix}",
                                        num_images=ns.num_images, mix=ns.photos))
    ndd.set_num_threads(ns.threads)
    runner = FloorRunner(PIPELINES[ns.pipeline], data, ns.batch_size, ns.threads, RNG_SEED)
    rates = []
    try:
        for e in range(ns.warmup + ns.epochs):
            n, secs = runner.epoch()
            if e >= ns.warmup:
                rates.append(n / secs)
                print(f"epoch {e - ns.warmup + 1}: {n} images, {n / secs:.1f} img/s")
    finally:
        runner.close()
    print(f"floor {ns.pipeline}: median {statistics.median(rates):.1f} img/s "
          f"(min {min(rates):.1f}, max {max(rates):.1f}; {ns.threads} processes, batch "
          f"{ns.batch_size}, {data}); worker CPU {1e3 * runner.cpu_per_image(ns.epochs):.3f} "
          f"ms per image")
    return 0


if __name__ == "__main__":
    sys.exit(main())
