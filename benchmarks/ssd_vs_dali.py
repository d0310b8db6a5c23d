"""The SSD300 training loader: ndd against DALI 2.4 on the same pipeline, side by side.

One pipeline function (``ssd_batch`` of ``examples/ssd_loader.py``: COCO -> random_bbox_crop ->
decoders.image_slice -> bb_flip -> resize 300x300 -> hsv -> brightness_contrast ->
crop_mirror_normalize -> box_encoder with the 8732 SSD300 anchors) runs in:

- ``ndd-compile``: ``reader.next_epoch(batch_size=N, compile=True)`` (also ``ndd-eager``,
  ``ndd-deferred``);
- ``dali-capture``: DALI 2.4 dynamic mode, ``reader.next_epoch(batch_size=N, capture=True)``
  (also ``dali-eager``);
- ``dali-pipeline``: DALI's pipeline mode, ``@pipeline_def`` with ``fn.readers.coco`` and the
  same function through a name shim onto ``nvidia.dali.fn`` (CPU operators, ``device_id=None``).

Same images (the COCO sample, each photo listed ``--copies`` times), batch size and threads for
all. Epochs are interleaved (the order rotates every round), so machine noise hits all alike;
each configuration first runs ``--warmup`` unmeasured epochs (tracing, numba, codecs).

    python benchmarks/ssd_vs_dali.py --threads 2 --batch-size 32 --copies 64 --epochs 5

Prints per configuration images/s over the measured epochs (min / median / max), the process CPU
time per image (all threads) and the median ratio to ``dali-capture``.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import time
import types as pytypes

_EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "ssd_loader.py"
_spec = importlib.util.spec_from_file_location("ssd_loader_example", _EXAMPLE)
ssd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ssd)

from ndd.datasets.coco import build_coco_dataset  # noqa: E402

CONFIGS = ("ndd-eager", "ndd-deferred", "ndd-compile", "dali-eager", "dali-capture",
           "dali-pipeline")
DEFAULT = "ndd-compile,dali-capture,dali-pipeline"
SEED = 1234


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default=DEFAULT,
                   help=f"comma-separated subset of {','.join(CONFIGS)} (default {DEFAULT})")
    p.add_argument("--copies", type=int, default=64,
                   help="list each of the 4 annotated photos N times (default 64: 256 images)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=5, help="measured epochs per configuration")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured epochs per configuration")
    p.add_argument("--json", default=None, help="also write the results to this file")
    return p.parse_args(argv)


def coco_kwargs(data):
    """The reader's arguments (the same for every configuration)."""
    return dict(file_root=str(data["file_root"]), annotations_file=str(data["annotations_file"]),
                ltrb=True, ratio=True, skip_empty=True, random_shuffle=True, seed=SEED)


class DynamicRunner:
    """ndd or DALI dynamic mode: one epoch of ``ssd_batch``, the three outputs taken as torch
    tensors (what a training loop consumes)."""

    def __init__(self, name, api, data, batch_size, mode):
        self.name, self.api, self.mode, self.batch_size = name, api, mode, batch_size
        self.reader = api.readers.COCO(**coco_kwargs(data))
        # its own generator: another configuration's draws between two epochs of a captured
        # loop would desynchronise DALI's capture ("the RNG was modified outside the loop")
        self.rng = api.random.RNG(seed=SEED)

    def _epoch_iter(self):
        kw = {"batch_size": self.batch_size}
        if self.mode in ("compile", "capture"):
            kw[self.mode] = True
        return self.reader.next_epoch(**kw)

    def epoch(self):
        n = 0
        ctx = self.api.EvalMode.deferred if self.mode == "deferred" else \
            contextlib.nullcontext()
        t0 = time.perf_counter()
        with ctx:
            for jpegs, boxes, labels in self._epoch_iter():
                images, enc, lab = ssd.ssd_batch(jpegs, boxes, labels, rng=self.rng,
                                                 nd=self.api)
                images.torch(), enc.torch(), lab.torch()
                n += jpegs.batch_size
        return n, time.perf_counter() - t0


def _graph_shim(fn, types):
    """The dynamic-mode names ``ssd_batch`` uses, mapped onto DALI's graph API: ``batch_size``
    and ``rng`` are dynamic-mode arguments (a pipeline knows its batch size and seeds its
    operators itself), dropped here."""

    def op(f):
        def call(*args, batch_size=None, rng=None, **kw):
            return f(*args, **kw)
        return call

    names = ("random_bbox_crop", "bb_flip", "resize", "hsv", "brightness_contrast",
             "crop_mirror_normalize", "box_encoder")
    shim = pytypes.SimpleNamespace(**{n: op(getattr(fn, n)) for n in names})
    shim.decoders = pytypes.SimpleNamespace(image_slice=op(fn.decoders.image_slice))
    shim.random = pytypes.SimpleNamespace(coin_flip=op(fn.random.coin_flip),
                                          uniform=op(fn.random.uniform))
    shim.float32, shim.types = types.FLOAT, types
    return shim


class PipelineRunner:
    """DALI's pipeline mode on the same function; an epoch is ``ceil(images / batch)``
    iterations of ``Pipeline.run()``."""

    def __init__(self, name, data, batch_size, threads):
        from nvidia.dali import fn, pipeline_def, types
        shim = _graph_shim(fn, types)

        @pipeline_def(batch_size=batch_size, num_threads=threads, device_id=None, seed=SEED,
                      exec_dynamic=True)
        def graph():
            jpegs, boxes, labels = fn.readers.coco(**coco_kwargs(data), name="Reader")
            jpegs.batch_size = batch_size
            return ssd.ssd_batch(jpegs, boxes, labels, nd=shim)

        self.name, self.batch_size = name, batch_size
        self.pipe = graph()
        self.pipe.build()
        self.images = self.pipe.epoch_size("Reader")

    def epoch(self):
        steps = -(-self.images // self.batch_size)
        t0 = time.perf_counter()
        for _ in range(steps):
            self.pipe.run()
        return steps * self.batch_size, time.perf_counter() - t0


def make_runners(names, data, batch_size, threads):
    runners = []
    mods = {}
    for name in names:
        lib, mode = name.split("-")
        try:
            if lib not in mods:
                mods[lib] = importlib.import_module(
                    "ndd" if lib == "ndd" else "nvidia.dali.experimental.dynamic")
                mods[lib].set_num_threads(threads)
            if mode == "pipeline":
                runners.append(PipelineRunner(name, data, batch_size, threads))
            else:
                runners.append(DynamicRunner(name, mods[lib], data, batch_size, mode))
        except Exception as exc:  # noqa: BLE001 - a missing backend is skipped, with the reason
            print(f"skipping {name}: {exc!r}")
    return runners


def run(ns):
    names = [c.strip() for c in ns.configs.split(",") if c.strip()]
    bad = [c for c in names if c not in CONFIGS]
    if bad:
        raise SystemExit(f"unknown --configs {','.join(bad)}; expected of {','.join(CONFIGS)}")
    data = build_coco_dataset(copies=ns.copies)
    runners = make_runners(names, data, ns.batch_size, ns.threads)
    print(f"ssd300 loader: {4 * ns.copies} images, batch {ns.batch_size}, threads "
          f"{ns.threads}, {ns.epochs} epochs (+{ns.warmup} warm-up), cpu {os.cpu_count()}")
    for r in runners:
        for _ in range(ns.warmup):
            r.epoch()
    rates = {r.name: [] for r in runners}
    cpu = {r.name: [] for r in runners}
    for k in range(ns.epochs):
        order = runners[k % len(runners):] + runners[:k % len(runners)]
        for r in order:
            c0 = time.process_time()
            n, sec = r.epoch()
            cpu[r.name].append((time.process_time() - c0) / n * 1e3)
            rates[r.name].append(n / sec)
    print(f"{'config':15s} {'min img/s':>10s} {'median':>10s} {'max':>10s} {'cpu ms/img':>11s}"
          f" {'vs dali-capture':>16s}")
    ref = statistics.median(rates["dali-capture"]) if rates.get("dali-capture") else None
    result = {}
    for name, v in rates.items():
        med = statistics.median(v)
        rel = f"{med / ref:.2f}x" if ref else "-"
        print(f"{name:15s} {min(v):10.1f} {med:10.1f} {max(v):10.1f} "
              f"{statistics.median(cpu[name]):11.2f} {rel:>16s}")
        result[name] = {"img_s": v, "median": med, "cpu_ms_per_img": cpu[name]}
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump({"args": vars(ns), "results": result}, f, indent=1)
    return result


def main(argv=None):
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
