"""ImageNet-style validation loader over the sample photos: resize shorter side to 256, center
crop 224x224, normalize to CHW float32.

Written against DALI's dynamic-mode API exactly as a DALI user would; ``--backend dali`` runs the
very same code on ``nvidia.dali.experimental.dynamic``.

    python examples/val_loader.py                          # ndd, builds the val split if needed
    python examples/val_loader.py --backend dali --threads 2 --epochs 3
"""

import argparse
import importlib
import inspect
import pathlib
import time

import torch

from ndd.datasets.sample import build_sample_dataset

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
BACKENDS = {"ndd": "ndd", "dali": "nvidia.dali.experimental.dynamic"}


def _resolve_compile(args):
    if args.compile is None:
        args.compile = args.backend == "ndd"
    return args


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=sorted(BACKENDS), default="ndd")
    p.add_argument("--data", default=None, help="image folder (default: build the val split)")
    p.add_argument("--num-images", type=int, default=200, help="size of the built val split")
    p.add_argument("--threads", type=int, default=None, help="ndd.set_num_threads(N)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="next_epoch(compile=True) (default: on for ndd, off for dali, whose "
                        "capture mode rejects random ops in this loop)")
    return _resolve_compile(p.parse_args(argv))


def epoch_kwargs(reader, batch_size, compile_):
    """ndd spells capture mode ``compile=True``; DALI 2.4 spells it ``capture=True``."""
    kwargs = {"batch_size": batch_size}
    if compile_:
        params = inspect.signature(reader.next_epoch).parameters
        kwargs["compile" if "compile" in params else "capture"] = True
    return kwargs


def main(argv=None):
    args = parse_args(argv)
    ndd = importlib.import_module(BACKENDS[args.backend])
    torch.set_num_threads(1)
    if args.threads is not None:
        ndd.set_num_threads(args.threads)
    data = args.data or str(build_sample_dataset(num_images=args.num_images, split="val"))
    reader = ndd.readers.File(file_root=data)
    print(f"backend={args.backend} data={data} batch={args.batch_size} threads={args.threads}")
    rates = []
    for epoch in range(args.epochs):
        seen, checksum = 0, 0.0
        start = time.perf_counter()
        for jpegs, labels in reader.next_epoch(**epoch_kwargs(reader, args.batch_size,
                                                               args.compile)):
            images = ndd.decoders.image(jpegs)
            images = ndd.resize(images, resize_shorter=256)
            images = ndd.crop_mirror_normalize(images, crop=(224, 224), mean=MEAN, std=STD)
            x, y = images.torch(), labels.torch()
            assert x.shape[1:] == (3, 224, 224) and x.dtype == torch.float32, x.shape
            seen += x.shape[0]
            checksum += float(x[:, :, 112, 112].sum()) + float(y.sum())
        elapsed = time.perf_counter() - start
        rates.append(seen / elapsed)
        print(f"epoch {epoch}: {seen} images in {elapsed:.2f} s = {rates[-1]:.1f} images/s "
              f"(checksum {checksum:.3f})")
    n_classes = sum(1 for p in pathlib.Path(data).iterdir() if p.is_dir())
    print(f"classes={n_classes} best {max(rates):.1f} images/s")
    return rates


if __name__ == "__main__":
    main()
