"""Per-sample Python overhead and 2-thread scaling of the eager train/val resize steps.

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
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
