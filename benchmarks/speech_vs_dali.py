"""The Jasper-style speech front end (examples/speech_loader.py ``features``): ndd's modes
against DALI 2.4's dynamic mode (eager and ``capture=True``) and pipeline mode.

Every runner reads the same NeMo manifest (``ndd.datasets.speech``, built with espeak-ng unless
``--data`` is given) unshuffled with the same batch size and thread count; an epoch's time covers
reading, decoding, the front end and evaluating the batch. A runner's epochs run back to back
(what it computes ahead across an epoch boundary is paid in its own epochs), then a pause;
``--rounds`` repeats that with the runners' order reversed each round.

    python benchmarks/speech_vs_dali.py --threads 2 --batch-size 16 --epochs 5
    python benchmarks/speech_vs_dali.py --repeat 5     # 400-sample epochs of the same 80 files

Prints samples/s per runner (min / median / max), the median ratio to DALI's capture mode and
the median CPU time of the process per sample (all its threads; on a machine others load, a
runner with more busy threads gets a larger share of the cores, so compare this column too).
"""

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from speech_loader import features  # noqa: E402

from ndd.datasets.speech import build_speech_dataset  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="speech set folder (default: build it)")
    p.add_argument("--num", type=int, default=80)
    p.add_argument("--repeat", type=int, default=1,
                   help="list every file this many times in the benchmark's manifest (longer "
                        "epochs: each mode's per-epoch start, e.g. compile mode's traced first "
                        "batch, is amortized as in a real training set)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1, help="untimed epochs before a runner's")
    p.add_argument("--rounds", type=int, default=2,
                   help="every runner's epochs this many times, the order reversed each time")
    p.add_argument("--pause", type=float, default=1.0,
                   help="seconds between two runners (their work ahead ends)")
    p.add_argument("--runners", default="ndd-eager,ndd-deferred,ndd-compile,dali-eager,"
                                        "dali-capture,dali-pipeline")
    return p.parse_args(argv)


class DynamicRunner:
    def __init__(self, name, api, manifest, batch_size, mode):
        self.name, self.api, self.mode, self.batch_size = name, api, mode, batch_size
        self.reader = api.readers.NemoAsr(manifest_filepaths=[manifest], sample_rate=16000.0,
                                          read_sample_rate=False, read_text=False)

    def epoch(self):
        kw = {"batch_size": self.batch_size}
        if self.mode == "compile":
            kw["compile"] = True
        elif self.mode == "capture":
            kw["capture"] = True
        ctx = self.api.EvalMode.deferred if self.mode in ("deferred", "compile") else \
            self.api.EvalMode.eager
        n, t0, c0 = 0, time.perf_counter(), time.process_time()
        with ctx:
            for (audio,) in self.reader.next_epoch(**kw):
                features(self.api, audio).evaluate()
                n += audio.batch_size
        return n, time.perf_counter() - t0, time.process_time() - c0


class PipelineRunner:
    def __init__(self, name, manifest, batch_size, threads):
        from nvidia.dali import fn, pipeline_def

        @pipeline_def(batch_size=batch_size, num_threads=threads, device_id=None,
                      exec_dynamic=True)
        def graph():
            audio = fn.readers.nemo_asr(manifest_filepaths=[manifest], sample_rate=16000.0,
                                        read_sample_rate=False, read_text=False,
                                        name="Reader")
            return features(fn, audio)

        self.name, self.batch_size = name, batch_size
        self.pipe = graph()
        self.pipe.build()
        self.samples = self.pipe.epoch_size("Reader")

    def epoch(self):
        steps = -(-self.samples // self.batch_size)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            self.pipe.run()
        return steps * self.batch_size, time.perf_counter() - t0, time.process_time() - c0


def main(argv=None):
    args = parse_args(argv)
    root = args.data or str(build_speech_dataset(num=args.num))
    manifest = os.path.join(root, "train_manifest.json")
    if args.repeat > 1:
        with open(manifest) as f:
            lines = [ln for ln in f.read().splitlines() if ln.strip()]
        manifest = os.path.join(tempfile.mkdtemp(prefix="speech_bench_"), "manifest.json")
        with open(manifest, "w") as f:
            f.write("\n".join(lines * args.repeat) + "\n")
    runners = []
    for name in args.runners.split(","):
        backend, mode = name.split("-", 1)
        try:
            if backend == "ndd":
                api = importlib.import_module("ndd")
                api.set_num_threads(args.threads)
                runners.append(DynamicRunner(name, api, manifest, args.batch_size, mode))
            elif mode == "pipeline":
                runners.append(PipelineRunner(name, manifest, args.batch_size, args.threads))
            else:
                api = importlib.import_module("nvidia.dali.experimental.dynamic")
                api.set_num_threads(args.threads)
                runners.append(DynamicRunner(name, api, manifest, args.batch_size, mode))
        except Exception as exc:  # noqa: BLE001 - a missing backend is reported, not fatal
            print(f"skipping {name}: {exc!r}")
    rates = {r.name: [] for r in runners}
    cpu = {r.name: [] for r in runners}
    # Each runner's epochs run back to back, as in training: what a runner computes ahead
    # across an epoch boundary (DALI's pipeline prefetch, ndd compile mode's early runs of the
    # next epoch's first batches) is paid within its own epochs.  Interleaving the runners
    # epoch by epoch would let that work run during another runner's timed epoch (free for
    # the one, a cost for the other).  A pause lets it end before the next runner begins;
    # the rounds alternate the runners' order.
    for rnd in range(args.rounds):
        order = runners if rnd % 2 == 0 else runners[::-1]
        for r in order:
            for e in range(args.warmup + args.epochs):
                n, secs, cpu_secs = r.epoch()
                if e >= args.warmup:
                    rates[r.name].append(n / secs)
                    cpu[r.name].append(cpu_secs * 1e3 / n)
            time.sleep(args.pause)
    ref = statistics.median(rates["dali-capture"]) if rates.get("dali-capture") else None
    print(f"speech front end: {manifest} ({args.repeat} x the files of {root}), batch "
          f"{args.batch_size}, threads {args.threads}, {args.epochs} epochs (+{args.warmup} "
          f"warm-up) x {args.rounds} rounds")
    for name, v in rates.items():
        med = statistics.median(v)
        vs = f"  x{med / ref:.2f} vs dali-capture" if ref else ""
        print(f"{name:>14s}: {min(v):8.1f} {med:8.1f} {max(v):8.1f} samples/s{vs}  "
              f"(CPU {statistics.median(cpu[name]):.3f} ms/sample)")


if __name__ == "__main__":
    main()
