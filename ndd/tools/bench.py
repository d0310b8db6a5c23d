"""``ndd bench``: images/s of a pipeline in each evaluation mode (and DALI's), interleaved.

Every mode gets its own reader over the same folder (no shuffling, same batch size and thread
count). Epoch ``e`` of every mode runs before epoch ``e + 1`` of any mode, so slow drifts of the
machine affect all modes alike. An epoch's time covers reading, the pipeline and evaluating its
output (``Batch.evaluate()``); a compiled ndd epoch's also covers the next epoch's first batches
that compile mode runs early (``ndd/compile/early.py``), so that they are not done during another
mode's epoch. (DALI's pipeline mode likewise computes its prefetched iterations ahead; they are not
waited for, which can only favour DALI.)
"""
from __future__ import annotations

import contextlib
import inspect
import json
import os
import pathlib
import runpy
import statistics
import sys
import time

from tqdm import tqdm

import ndd
from ndd.compile import early
from ndd.datasets.sample import build_sample_dataset, default_root
from ndd.tools.args import UsageError
from ndd.tools.bench_floor import FloorRunner
from ndd.tools.bench_pipelines import PIPELINES
from ndd.tools.breakdown import Breakdown
from runtime.kernels.cpu.catalog import warm_up
from runtime.readers.file_index import build_file_index
from runtime.workers.pool import wait_ready

NDD_MODES = ("eager", "deferred", "compile")
COMPARES = ("dali", "torchvision")
RNG_SEED = 1234
PLOT_FORMATS = {".png", ".svg", ".pdf", ".jpg", ".jpeg"}   # matplotlib's savefig, by suffix
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".jp2"}


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _takes_rng(fn) -> bool:
    """Whether the pipeline function accepts an ``rng`` keyword."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "rng" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class Runner:
    """One benchmarked configuration: ``epoch()`` runs a full epoch, returns (images, seconds)."""

    def __init__(self, name, api, fn, data, batch_size, mode):
        self.name, self.api, self.fn, self.mode = name, api, fn, mode
        self.batch_size = batch_size
        self.reader = api.readers.File(file_root=data, random_shuffle=False)
        # Each runner draws from its own generator (same seed for all: the same windows and
        # flips in every mode).  With the thread's default one, the epochs of the other modes
        # would draw from it between two epochs of a captured loop, which DALI's capture
        # rejects ("the RNG was modified outside the loop").
        # A --script pipeline without an ``rng`` parameter draws from the default generator.
        self.rng = api.random.RNG(seed=RNG_SEED) if _takes_rng(fn) else None

    def _iterator(self):
        if self.mode == "compile":
            return self.reader.next_epoch(batch_size=self.batch_size, compile=True)
        if self.mode == "capture":
            return self.reader.next_epoch(batch_size=self.batch_size, capture=True)
        return self.reader.next_epoch(batch_size=self.batch_size)

    def epoch(self) -> tuple[int, float]:
        ctx = self.api.EvalMode.deferred if self.mode == "deferred" else contextlib.nullcontext()
        n = 0
        t0 = time.perf_counter()
        with ctx:
            for jpegs, _labels in self._iterator():
                out = self.fn(self.api, jpegs) if self.rng is None else \
                    self.fn(self.api, jpegs, rng=self.rng)
                if not hasattr(out, "evaluate"):
                    raise TypeError(f"the pipeline returned {type(out).__name__}; expected "
                                    f"a Batch (the result of an op called on jpegs)")
                out.evaluate()
                n += jpegs.batch_size
        if self.mode == "compile" and self.api.__name__ == "ndd":
            # the next epoch's first batches, begun early (ndd/compile/early.py), are this
            # epoch's work: they would otherwise run during another mode's timed epoch
            early.wait_all()
        return n, time.perf_counter() - t0


class _GraphAPI:
    """The dynamic-mode names a bench pipeline uses, mapped onto DALI's graph API
    (``nvidia.dali.fn``), so the same pipeline function defines a DALI pipeline."""

    def __init__(self, fn, types):
        import types as pytypes
        self.decoders = fn.decoders
        self.resize = fn.resize
        self.random_resized_crop = fn.random_resized_crop
        self.crop_mirror_normalize = fn.crop_mirror_normalize
        self.float32 = types.FLOAT
        # batch_size is an argument of dynamic-mode random ops only; the pipeline knows it.
        self.random = pytypes.SimpleNamespace(
            coin_flip=lambda batch_size=None, **kw: fn.random.coin_flip(**kw))


class PipelineRunner:
    """DALI's pipeline mode (``@pipeline_def``, its own prefetching executor) running the same
    pipeline function through :class:`_GraphAPI`; an epoch is ``ceil(images / batch)``
    iterations of ``Pipeline.run()``, counted as the images in them."""

    def __init__(self, name, fn, data, batch_size, num_threads):
        from nvidia.dali import fn as dfn
        from nvidia.dali import pipeline_def, types
        api = _GraphAPI(dfn, types)

        @pipeline_def(batch_size=batch_size, num_threads=num_threads, device_id=None,
                      exec_dynamic=True)
        def graph():
            jpegs, labels = dfn.readers.file(file_root=data, random_shuffle=False,
                                             name="Reader")
            jpegs.batch_size = batch_size
            return fn(api, jpegs), labels

        self.name = name
        self.batch_size = batch_size
        self.pipe = graph()
        self.pipe.build()
        self.images = self.pipe.epoch_size("Reader")

    def epoch(self) -> tuple[int, float]:
        steps = -(-self.images // self.batch_size)
        t0 = time.perf_counter()
        for _ in range(steps):
            self.pipe.run()
        return steps * self.batch_size, time.perf_counter() - t0


def _image_count(folder) -> int:
    return sum(1 for p in pathlib.Path(folder).rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)


def _data_folder(ns) -> str:
    if ns.data is not None:
        if not os.path.isdir(ns.data):
            raise UsageError(f"--data {ns.data!r} is not a folder")
        if _image_count(ns.data) == 0:
            raise UsageError(f"--data {ns.data!r} has no image files "
                             f"({', '.join(sorted(IMAGE_SUFFIXES))})")
        try:        # what readers.File(file_root=...) will list (class sub-folders)
            build_file_index(file_root=ns.data)
        except (ValueError, OSError) as exc:
            raise UsageError(f"--data: {exc}") from None
        return ns.data
    suffix = "" if ns.photos == "progressive-heavy" else f"-{ns.photos}"
    root = default_root() / f"bench-{ns.num_images}{suffix}"
    return str(build_sample_dataset(root=root, num_images=ns.num_images, progress=True,
                                    mix=ns.photos))


def _pipeline(ns):
    if ns.script is None:
        return ns.pipeline, PIPELINES[ns.pipeline]
    if not os.path.isfile(ns.script):
        raise UsageError(f"--script {ns.script!r} not found")
    try:
        fn = runpy.run_path(ns.script).get("pipeline")
    except Exception as exc:  # noqa: BLE001 - the user's script: one line, not a traceback
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise UsageError(f"--script {ns.script!r} could not be run{where}: "
                         f"{type(exc).__name__}: {exc}") from None
    if not callable(fn):
        raise UsageError(f"--script {ns.script!r} must define pipeline(api, jpegs) -> Batch")
    return os.path.basename(ns.script), fn


def validate(ns) -> tuple[list[str], list[str]]:
    """Check the numeric options and split --mode / --compare; raises UsageError."""
    modes = _split(ns.mode)
    bad = [m for m in modes if m not in NDD_MODES]
    if bad or not modes:
        raise UsageError(f"unknown --mode {','.join(bad) or repr(ns.mode)}; expected a "
                         f"comma-separated subset of {','.join(NDD_MODES)}")
    compare = _split(ns.compare)
    bad = [c for c in compare if c not in COMPARES]
    if bad:
        raise UsageError(f"unknown --compare {','.join(bad)}; expected a comma-separated subset "
                         f"of {','.join(COMPARES)}")
    for name in ("batch_size", "epochs"):
        if getattr(ns, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(ns, name)}")
    if ns.warmup < 0:
        raise UsageError(f"--warmup must be >= 0, got {ns.warmup}")
    if ns.threads is not None and ns.threads < 1:
        raise UsageError(f"--threads must be >= 1, got {ns.threads}")
    for opt in ("json", "plot"):    # checked now, not after the whole benchmark ran
        path = getattr(ns, opt, None)
        if path is not None:
            folder = os.path.dirname(os.path.abspath(path))
            if not path or path.endswith(("/", os.sep)) or os.path.isdir(path) or \
                    not os.path.isdir(folder) or not os.access(folder, os.W_OK):
                raise UsageError(f"--{opt} {path!r}: cannot write there (expected a file path in "
                                 f"an existing, writable folder)")
    if ns.plot is not None and os.path.splitext(ns.plot)[1].lower() not in PLOT_FORMATS:
        raise UsageError(f"--plot {ns.plot!r}: the file name must end in one of "
                         f"{', '.join(sorted(PLOT_FORMATS))} (the image format)")
    return list(dict.fromkeys(modes)), list(dict.fromkeys(compare))


def make_runners(ns, modes, compare, data, fn):
    """Runners for the ndd modes, then DALI's (eager, capture, pipeline) when asked and
    installed."""
    if ns.threads is not None:
        ndd.set_num_threads(ns.threads)
    runners = [Runner(m, ndd, fn, data, ns.batch_size, m) for m in modes]
    # Load the compiled kernels now (numba import, machine code from its cache): otherwise the
    # first timed epoch of the first mode pays for it when --warmup is 0.
    warm_up()
    if {"deferred", "compile"} & set(modes):
        # Fused nodes run on process lanes once their workers are up: start them now so the
        # timed epochs measure the steady state, not the workers' start.
        wait_ready(ndd.get_num_threads())
    skipped = {}
    if "dali" in compare:
        try:
            import nvidia.dali.experimental.dynamic as dali
        except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
            skipped["dali"] = f"not installed ({type(exc).__name__}: {exc})"
        else:
            if ns.threads is not None:
                dali.set_num_threads(ns.threads)
            runners.append(Runner("dali-eager", dali, fn, data, ns.batch_size, "eager"))
            runners.append(Runner("dali-capture", dali, fn, data, ns.batch_size, "capture"))
            try:
                runners.append(PipelineRunner("dali-pipeline", fn, data, ns.batch_size,
                                              ns.threads or ndd.get_num_threads()))
            except Exception as exc:  # noqa: BLE001 - the other modes still run
                skipped["dali-pipeline"] = f"could not build ({type(exc).__name__}: {exc})"
    if "torchvision" in compare:
        skipped["torchvision"] = "not supported by this version of ndd bench"
        try:
            import torchvision  # noqa: F401
        except ImportError:
            skipped["torchvision"] = "not installed"
    return runners, skipped


def _floor_runner(ns, fn, data, skipped):
    """The kernel floor's runner for ``--floor`` (None: not asked, or not possible: then
    ``skipped["floor"]`` says why)."""
    if not getattr(ns, "floor", False):
        return None
    try:
        return FloorRunner(fn, data, ns.batch_size, ns.threads or ndd.get_num_threads(),
                           RNG_SEED, with_rng=_takes_rng(fn))
    except (ValueError, RuntimeError) as exc:
        skipped["floor"] = str(exc)
        return None


def floor_line(summary: dict) -> str:
    """compile mode's median as a fraction of the floor's (issue 20's goal: 90 %)."""
    fl = summary["floor"]["median"]
    if "compile" not in summary or not fl:
        return f"floor: {fl:.1f} img/s (no compile mode to compare)"
    return (f"compile / floor: {100 * summary['compile']['median'] / fl:.0f}% "
            f"(floor {fl:.1f} img/s: the same kernels, images and processes as a tight loop)")


def floor_cpu_line(compile_procs: dict, floor_cpu: float) -> str:
    """CPU per image of compile mode (all its processes, from ``--breakdown``) against the
    floor's (its workers): the same comparison in CPU, which a busy machine moves less."""
    comp = sum(cols.get("cpu", 0.0) for cols in compile_procs.values())
    frac = f"{100 * 1e3 * floor_cpu / comp:.0f}%" if comp else "-"
    return (f"CPU per image: compile {comp:.3f} ms (all processes), floor "
            f"{1e3 * floor_cpu:.3f} ms: floor / compile {frac}")


def summarize(results: dict[str, list[float]]) -> dict:
    """min / median / max images/s per mode and each median relative to the first mode's."""
    out = {}
    base = None
    for name, rates in results.items():
        if not rates:
            continue
        med = statistics.median(rates)
        base = med if base is None else base
        out[name] = {"images_per_s": rates, "min": min(rates), "median": med,
                     "max": max(rates), "ratio": med / base if base else float("nan")}
    return out


def format_table(summary: dict) -> str:
    first = next(iter(summary), "-")
    lines = [f"{'mode':<14s} {'min img/s':>10s} {'median img/s':>13s} {'max img/s':>10s} "
             f"{'vs ' + first:>14s}"]
    for name, s in summary.items():
        lines.append(f"{name:<14s} {s['min']:>10.1f} {s['median']:>13.1f} {s['max']:>10.1f} "
                     f"{s['ratio']:>13.2f}x")
    return "\n".join(lines)


def plot(summary: dict, path: str, title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7, 3.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    names = list(summary)
    med = [summary[n]["median"] for n in names]
    err = [[summary[n]["median"] - summary[n]["min"] for n in names],
           [summary[n]["max"] - summary[n]["median"] for n in names]]
    ax.bar(names, med, yerr=err, color="#74c0fc", capsize=4)
    ax.set_ylabel("images/s (median, min-max)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def run(ns) -> int:
    """Run ``ndd bench`` from parsed arguments; returns the exit status."""
    modes, compare = validate(ns)
    name, fn = _pipeline(ns)
    data = _data_folder(ns)
    runners, skipped = make_runners(ns, modes, compare, data, fn)
    floor = _floor_runner(ns, fn, data, skipped)
    if floor is not None:
        runners.append(floor)
    for what, why in skipped.items():
        print(f"ndd bench: skipping {what}: {why}", file=sys.stderr)
    results = {r.name: [] for r in runners}
    failed = {}
    breakdown = Breakdown() if getattr(ns, "breakdown", False) else None
    total = (ns.warmup + ns.epochs) * len(runners)
    with tqdm(total=total, desc=f"bench {name}", unit="epoch", file=sys.stderr) as bar:
        for e in range(ns.warmup + ns.epochs):
            for r in runners:
                if r.name in failed:
                    bar.update(1)
                    continue
                bar.set_postfix_str(f"{r.name} epoch {e + 1}")
                counted = breakdown is not None and e >= ns.warmup and r.name in NDD_MODES
                try:
                    if counted:
                        breakdown.start()
                    n, secs = r.epoch()
                    if counted:
                        breakdown.stop(r.name, n)
                except Exception as exc:  # noqa: BLE001 - reported, other modes go on
                    if counted:
                        breakdown.stop(r.name, 0)
                    failed[r.name] = f"{type(exc).__name__}: {exc}"
                    if "RNG" in str(exc) and getattr(r, "rng", True) is None:
                        failed[r.name] += (" (hint: give pipeline() an rng=None parameter "
                                           "and pass rng=rng to its random ops: each mode "
                                           "then draws from its own generator)")
                    bar.update(1)
                    continue
                if e >= ns.warmup:
                    results[r.name].append(n / secs)
                bar.update(1)
    for what, why in failed.items():
        print(f"ndd bench: {what} failed: {why}", file=sys.stderr)
    summary = summarize(results)
    if not summary:
        print("ndd bench: no mode finished an epoch; nothing to report", file=sys.stderr)
        return 1
    print(f"pipeline={name} data={data} images={_image_count(data)} batch={ns.batch_size} "
          f"threads={ns.threads or 'default'} epochs={ns.epochs} (+{ns.warmup} warmup)")
    print(format_table(summary))
    if "floor" in summary:
        print(floor_line(summary))
        if breakdown is not None and "compile" in breakdown.rows:
            print(floor_cpu_line(breakdown.as_dict()["compile"],
                                 floor.cpu_per_image(ns.epochs)))
    if floor is not None:
        floor.close()
    if breakdown is not None:
        print(breakdown.table())
    if ns.json:
        doc = {"pipeline": name, "data": data, "batch_size": ns.batch_size,
               "threads": ns.threads, "epochs": ns.epochs, "warmup": ns.warmup,
               "results": summary, "skipped": skipped, "failed": failed}
        if breakdown is not None:
            doc["breakdown"] = breakdown.as_dict()
        with open(ns.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
    if ns.plot and summary:
        plot(summary, ns.plot, f"ndd bench {name}, batch {ns.batch_size}")
    ndd_failed = [m for m in failed if m in NDD_MODES]
    return 1 if ndd_failed else 0
