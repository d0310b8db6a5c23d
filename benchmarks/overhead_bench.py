"""Per-call overhead of ndd's op calls against DALI 2.4, and per-sample Python overhead and
2-thread scaling of the eager train/val resize steps.

Run: ``python benchmarks/overhead_bench.py calls [--reps R] [--calls K] [--profile MODE]``:
op calls per second on a batch of 8 small uint8 HWC images (48x64x3) for view ops, in eager and
deferred mode, ndd and DALI 2.4's dynamic mode side by side (backends alternate, median of R
repeats of K calls each; the batches are built before the clock starts):

* ``expand_dims`` / ``reinterpret``: one call, then ``evaluate()`` (what ``ops_vs_dali.py``
  times per call);
* ``chain8``: eight view calls in a row (expand_dims, squeeze, reinterpret, ...), then one
  ``evaluate()`` of the last (a small front end's ops per batch).

``--profile eager|deferred`` prints ndd's cProfile (cumulative time) of the expand_dims loop.

Run: ``python benchmarks/overhead_bench.py [N]``.  For N photos (decoded samples of
``/tmp/ndd-sample`` when present, else scikit-image photos resized to ~400x390) it times

* ``rrc``: ``random_crop_window`` + ``resize_output_shape(size=224, roi)`` + ``resample``
  (uint8 HWC, linear antialias), one new seed per sample (the training crop);
* ``window``: ``random_crop_window`` alone;
* ``val``: ``resize_output_shape(resize_shorter=256)`` + ``resample``;

on 1 and 2 threads (``ThreadPoolExecutor.map`` over the samples, one call per sample) and
prints milliseconds of wall time per image (minimum over repeats: the machine may be shared),
the process-CPU/wall ratio of that best repeat (~1.9 on 2 threads means they scale), and the
Python-level function calls per sample (cProfile).  torch intra-op threads are set to 1.
"""
import cProfile
import glob
import pstats
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from runtime.kernels.cpu.resize import resample
from runtime.kernels.params.resize_geometry import resize_output_shape
from runtime.kernels.params.windows import random_crop_window

torch.set_num_threads(1)


def _images(n):
    files = sorted(glob.glob("/tmp/ndd-sample/**/*.jpg", recursive=True))[:n]
    if files:
        from runtime.codecs.image import decode
        return [decode(np.fromfile(f, dtype=np.uint8)) for f in files]
    from skimage import data
    photos = [data.astronaut(), data.chelsea(), data.coffee()]
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        img = photos[i % 3]
        h, w = int(rng.integers(300, 480)), int(rng.integers(300, 480))
        ys = np.linspace(0, img.shape[0] - 1, h).round().astype(int)
        xs = np.linspace(0, img.shape[1] - 1, w).round().astype(int)
        out.append(np.ascontiguousarray(img[ys][:, xs]))
    return out


def rrc(img, seed):
    rng = np.random.default_rng(seed)
    y0, x0, h, w = random_crop_window(img.shape[:2], rng)
    p = resize_output_shape(img.shape[:2], size=(224, 224), roi_start=(y0, x0),
                            roi_end=(y0 + h, x0 + w))
    return resample(img, p)


def window(img, seed):
    return random_crop_window(img.shape[:2], np.random.default_rng(seed))


def val(img, seed):
    return resample(img, resize_output_shape(img.shape[:2], resize_shorter=256))


def _run(fn, imgs, threads, reps):
    best = (float("inf"), 0.0)
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(fn, imgs[:10], range(10)))
        for rep in range(reps):
            # new seeds every repeat: new random windows (as in training)
            seeds = range((rep + 1) * len(imgs), (rep + 2) * len(imgs))
            t, c = time.perf_counter(), time.process_time()
            list(ex.map(fn, imgs, seeds))
            dt, dc = time.perf_counter() - t, time.process_time() - c
            best = min(best, (dt, dc / dt))
    return 1e3 * best[0] / len(imgs), best[1]


def _calls(fn, imgs):
    prof = cProfile.Profile()
    prof.enable()
    for i, img in enumerate(imgs):
        fn(img, i)
    prof.disable()
    return pstats.Stats(prof).total_calls / len(imgs)


_SHAPE = (48, 64, 3)


def _view_calls(m):
    """name -> fn(batch) -> handle to evaluate, written once against the shared API."""
    def chain8(b):
        x = m.expand_dims(b, axes=0, new_axis_names="F")
        x = m.squeeze(x, axis_names="F")
        x = m.reinterpret(x, shape=(_SHAPE[0], _SHAPE[1] * 3))
        x = m.reinterpret(x, shape=_SHAPE, layout="HWC")
        x = m.expand_dims(x, axes=0, new_axis_names="F")
        x = m.squeeze(x, axis_names="F")
        x = m.reinterpret(x, rel_shape=(1, 1, 1))
        return m.expand_dims(x, axes=0, new_axis_names="F")
    return {
        "expand_dims": lambda b: m.expand_dims(b, axes=0, new_axis_names="F"),
        "reinterpret": lambda b: m.reinterpret(b, shape=(_SHAPE[0], _SHAPE[1] * 3)),
        "chain8": chain8,
    }


def _time_calls(m, fn, mode, k, prof=None):
    """Seconds per iteration (op calls + evaluate) over ``k`` iterations in ``mode`` (profiled
    by ``prof`` when given)."""
    arrays = [np.full(_SHAPE, i, np.uint8) for i in range(8)]
    batches = [m.as_batch(arrays, layout="HWC") for _ in range(k)]
    with getattr(m.EvalMode, mode):
        if prof is not None:
            prof.enable()
        t = time.perf_counter()
        for b in batches:
            fn(b).evaluate()
        dt = time.perf_counter() - t
        if prof is not None:
            prof.disable()
        return dt / k


def calls_main(argv):
    import argparse
    import statistics
    p = argparse.ArgumentParser(prog="overhead_bench.py calls")
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--profile", choices=("eager", "deferred"))
    a = p.parse_args(argv)
    import ndd
    mods = {"ndd": ndd}
    try:
        import nvidia.dali.experimental.dynamic as dali
        mods["dali"] = dali
    except Exception as exc:  # noqa: BLE001 - DALI is optional: ndd alone is still measured
        print(f"DALI 2.4 not available ({exc!r}): ndd only")
    for m in mods.values():
        m.set_num_threads(a.threads)
    if a.profile:
        fn = _view_calls(ndd)["expand_dims"]
        _time_calls(ndd, fn, a.profile, 50)
        prof = cProfile.Profile()
        _time_calls(ndd, fn, a.profile, a.calls, prof)
        pstats.Stats(prof).sort_stats("cumtime").print_stats(40)
        return
    print(f"batch of 8 x {_SHAPE} uint8, {a.calls} iterations x {a.reps} repeats, "
          f"{a.threads} threads; us per iteration (median), calls/s, DALI/ndd")
    for mode in ("eager", "deferred"):
        for name in _view_calls(ndd):
            fns = {b: _view_calls(m)[name] for b, m in mods.items()}
            times = {b: [] for b in mods}
            for b, m in mods.items():       # warm-up
                _time_calls(m, fns[b], mode, 30)
            for r in range(a.reps):
                order = list(mods) if r % 2 == 0 else list(reversed(list(mods)))
                for b in order:
                    times[b].append(_time_calls(mods[b], fns[b], mode, a.calls))
            med = {b: statistics.median(t) * 1e6 for b, t in times.items()}
            ncalls = 8 if name == "chain8" else 1
            line = f"{mode:8s} {name:12s}" + "".join(
                f"  {b} {us:7.1f} us ({ncalls * 1e6 / us:7.0f} calls/s)" for b, us in med.items())
            if "dali" in med:
                line += f"  DALI/ndd {med['dali'] / med['ndd']:.2f}"
            print(line, flush=True)


def main(n=200, reps=7):
    imgs = _images(n)
    for name, fn in (("rrc", rrc), ("window", window), ("val", val)):
        line = [f"{name:7s}"]
        for threads in (1, 2):
            ms, ratio = _run(fn, imgs, threads, reps)
            line.append(f"{threads} thr: {ms:.3f} ms/img (cpu/wall {ratio:.2f})")
        line.append(f"{_calls(fn, imgs):.0f} calls/img")
        print("  ".join(line))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "calls":
        calls_main(sys.argv[2:])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
