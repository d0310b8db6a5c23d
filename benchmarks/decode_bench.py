"""Decode throughput: runtime.codecs.decode (nvImageCodec CPU) vs Pillow, 1 and 2 threads.

Builds ~200 JPEGs of ~400x400 from scikit-image's bundled photos (random crops, flips and
qualities), then decodes them all several times on a thread pool (one nvImageCodec decoder per
thread) and reports images/s. Run: ``python benchmarks/decode_bench.py [--count 200]``.
"""

import argparse
import io
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from PIL import Image

from runtime.codecs import decode


def make_jpegs(count, size=400, seed=0):
    """Return ``count`` JPEG byte strings, ~``size`` x ``size`` crops of real photos."""
    import skimage.data as sd
    photos = [sd.astronaut(), sd.coffee(), sd.chelsea(), sd.rocket(), sd.immunohistochemistry()]
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        img = photos[i % len(photos)]
        h, w = img.shape[:2]
        ch, cw = min(h, size + int(rng.integers(-40, 41))), min(w, size + int(rng.integers(-40, 41)))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        crop = img[y:y + ch, x:x + cw]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(crop)).save(buf, "JPEG", quality=int(rng.integers(80, 96)))
        out.append(buf.getvalue())
    return out


def pillow_decode(data):
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def ndd_decode(data):
    return decode(np.frombuffer(data, dtype=np.uint8))


def throughput(fn, jpegs, threads, repeats):
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fn, jpegs[:threads * 4]))  # warm-up: create per-thread decoders
        start = time.perf_counter()
        for _ in range(repeats):
            list(pool.map(fn, jpegs))
        elapsed = time.perf_counter() - start
    return len(jpegs) * repeats / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    jpegs = make_jpegs(args.count)
    mean_kb = np.mean([len(j) for j in jpegs]) / 1024
    print(f"{len(jpegs)} JPEGs, mean {mean_kb:.0f} KiB")
    for a, b in zip(jpegs[:20], jpegs[:20]):
        assert np.array_equal(ndd_decode(a), pillow_decode(b))
    for threads in (1, 2):
        for name, fn in (("runtime.codecs (nvImageCodec)", ndd_decode), ("Pillow", pillow_decode)):
            rate = throughput(fn, jpegs, threads, args.repeats)
            print(f"{name:32s} threads={threads}: {rate:7.0f} images/s")


if __name__ == "__main__":
    main()
