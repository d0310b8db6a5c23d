"""Throughput of the train and val pipelines: ndd against DALI dynamic mode, interleaved.

Both backends read the same sample photos with the same batch size and thread count; epochs
alternate between backends (order flipped every epoch) so that machine noise hits both alike.
A backend that cannot be imported or fails while running is skipped with a message.

    python benchmarks/eager_vs_dali.py --threads 2 --batch-size 32 --num-images 1000 --epochs 5

Prints, per pipeline and backend, images/s over the measured epochs (min / median / max), the
process CPU time per image (all threads; steadier than wall time on a busy machine) and the
median ratio ndd / DALI.
"""

import argparse
import importlib
import inspect
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pipelines import train_pipeline, val_pipeline  # noqa: E402

from ndd.datasets.sample import build_sample_dataset  # noqa: E402

BACKENDS = {"ndd": "ndd", "dali": "nvidia.dali.experimental.dynamic"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="ndd,dali")
    p.add_argument("--pipelines", default="train,val")
    p.add_argument("--data", default=None, help="image folder (default: build sample data)")
    p.add_argument("--num-images", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=4, help="measured epochs per backend")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured epochs per backend")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compile", action="store_true", help="next_epoch(compile=True)")
    p.add_argument("--json", default=None, help="also write the results to this file")
    return p.parse_args(argv)


def load_backend(name, threads):
    """Import a backend and set its thread count; None (with a message) when it fails."""
    try:
        mod = importlib.import_module(BACKENDS[name])
        mod.set_num_threads(threads)
        mod.readers.File  # noqa: B018 - fail here, not mid-benchmark
        return mod
    except Exception as exc:  # a half-built backend may raise anything
        print(f"skipping backend {name!r}: cannot import/configure it: {exc!r}")
        return None


def next_epoch(reader, batch_size, compile_):
    kwargs = {"batch_size": batch_size}
    if compile_:
        params = inspect.signature(reader.next_epoch).parameters
        kwargs["compile" if "compile" in params else "capture"] = True
    return reader.next_epoch(**kwargs)


class Runner:
    """One backend running one pipeline over one reader (created once, reused per epoch)."""

    def __init__(self, mod, pipeline, data, args):
        self.mod, self.pipeline, self.args = mod, pipeline, args
        shuffle = pipeline == "train"
        self.reader = mod.readers.File(file_root=data, random_shuffle=shuffle, seed=args.seed)
        self.rng = mod.random.RNG(seed=args.seed) if shuffle else None

    def epoch(self):
        """Run one epoch; returns (images, wall seconds, process CPU seconds)."""
        images = 0
        wall, cpu = time.perf_counter(), time.process_time()
        for jpegs, _labels in next_epoch(self.reader, self.args.batch_size, self.args.compile):
            if self.pipeline == "train":
                out = train_pipeline(self.mod, jpegs, jpegs.batch_size, self.rng)
            else:
                out = val_pipeline(self.mod, jpegs)
            images += out.torch().shape[0]
        return images, time.perf_counter() - wall, time.process_time() - cpu


def run(args):
    data = args.data or str(build_sample_dataset(num_images=args.num_images))
    mods = {n: load_backend(n, args.threads) for n in args.backends.split(",")}
    mods = {n: m for n, m in mods.items() if m is not None}
    results = {}
    for pipeline in args.pipelines.split(","):
        runners = {}
        for name, mod in mods.items():
            try:
                runners[name] = Runner(mod, pipeline, data, args)
            except Exception as exc:
                print(f"skipping {name}/{pipeline}: reader construction failed: {exc!r}")
        samples = {name: [] for name in runners}
        for epoch in range(args.warmup + args.epochs):
            order = list(runners) if epoch % 2 == 0 else list(reversed(runners))
            for name in order:
                if name not in runners:
                    continue
                try:
                    n, wall, cpu = runners[name].epoch()
                except Exception as exc:
                    print(f"skipping {name}/{pipeline}: failed in epoch {epoch}: {exc!r}")
                    del runners[name]
                    samples.pop(name)
                    continue
                if epoch >= args.warmup:
                    samples[name].append((n / wall, 1000.0 * cpu / n))
        results[pipeline] = samples
    return data, results


def report(args, data, results):
    print(f"\ndata={data} batch={args.batch_size} threads={args.threads} "
          f"epochs={args.epochs} (+{args.warmup} warmup) compile={args.compile}")
    header = (f"{'pipeline':8} {'backend':7} {'min':>8} {'median':>8} {'max':>8} "
              f"{'cpu ms/img':>10} {'ndd/dali':>9}")
    print(header + "\n" + "-" * len(header))
    table = []
    for pipeline, samples in results.items():
        medians = {n: statistics.median(r for r, _ in s) for n, s in samples.items() if s}
        ratio = medians["ndd"] / medians["dali"] if {"ndd", "dali"} <= set(medians) else None
        for name, s in samples.items():
            if not s:
                continue
            rates = [r for r, _ in s]
            cpu = statistics.median(c for _, c in s)
            row = dict(pipeline=pipeline, backend=name, min=min(rates), median=medians[name],
                       max=max(rates), cpu_ms_per_image=cpu, ratio=ratio)
            table.append(row)
            ratio_txt = f"{ratio:9.2f}" if ratio is not None and name == "ndd" else " " * 9
            print(f"{pipeline:8} {name:7} {min(rates):8.1f} {medians[name]:8.1f} "
                  f"{max(rates):8.1f} {cpu:10.2f} {ratio_txt}")
    print("(images/s; wall-clock numbers are noisy on a shared machine, compare cpu ms/img)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "rows": table}, f, indent=1)
    return table


def main(argv=None):
    args = parse_args(argv)
    data, results = run(args)
    return report(args, data, results)


if __name__ == "__main__":
    main()
