"""Train a small CNN on the sample photos with an ImageNet-style training loader.

Written against DALI's dynamic-mode API exactly as a DALI user would; ``--backend dali`` runs the
very same code on ``nvidia.dali.experimental.dynamic``.  Images are decoded on the CPU, randomly
resized-and-cropped to 224x224, randomly mirrored and normalized to CHW float32.

    python examples/train_loader.py                      # ndd, builds the sample data if needed
    python examples/train_loader.py --backend dali --threads 2 --steps 300 --compile

Prints the loss every ``--log-every`` steps and, at the end, the loader throughput (time spent
waiting for batches only) and the end-to-end throughput (loader + training step).
"""

import argparse
import importlib
import inspect
import time

import torch
from torch import nn

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
    p.add_argument("--data", default=None, help="image folder (default: build the sample data)")
    p.add_argument("--num-images", type=int, default=600, help="size of the built sample data")
    p.add_argument("--threads", type=int, default=None, help="ndd.set_num_threads(N)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch.set_num_threads for the model (1: leave cores to the loader)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="next_epoch(compile=True) (default: on for ndd, off for dali, whose "
                        "capture mode rejects random ops in this loop)")
    return _resolve_compile(p.parse_args(argv))


def epoch_kwargs(reader, batch_size, compile_):
    """Arguments of ``reader.next_epoch``: ndd spells capture mode ``compile``, DALI 2.4
    spells it ``capture``."""
    kwargs = {"batch_size": batch_size}
    if compile_:
        params = inspect.signature(reader.next_epoch).parameters
        if "compile" in params:
            kwargs["compile"] = True
        elif "capture" in params:
            kwargs["capture"] = True
        else:
            raise SystemExit("this backend's next_epoch has neither compile= nor capture=")
    return kwargs


def train_batches(ndd, reader, batch_size, compile_):
    """Yield (images NCHW float32, labels int64) torch tensors for one epoch."""
    for jpegs, labels in reader.next_epoch(**epoch_kwargs(reader, batch_size, compile_)):
        images = ndd.decoders.image(jpegs)
        images = ndd.random_resized_crop(images, size=(224, 224))
        flip = ndd.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5)
        images = ndd.crop_mirror_normalize(
            images, mirror=flip, mean=MEAN, std=STD, dtype=ndd.float32, output_layout="CHW"
        )
        yield images.torch(), labels.torch().reshape(-1).long()


def small_cnn(num_classes):
    """4x4 average pool (224 -> 56), three conv blocks (stride 2), global pool, linear.

    Deliberately tiny (~90 k weights, ~3 ms per image forward+backward on one CPU core) so
    that on a CPU the run measures the loader rather than the model.
    """

    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(
        nn.AvgPool2d(4), *block(3, 32), *block(32, 64), *block(64, 96),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(96, num_classes),
    )


def main(argv=None):
    args = parse_args(argv)
    ndd = importlib.import_module(BACKENDS[args.backend])
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    if args.threads is not None:
        ndd.set_num_threads(args.threads)
    ndd.random.set_seed(args.seed)
    data = args.data or str(build_sample_dataset(num_images=args.num_images))
    reader = ndd.readers.File(file_root=data, random_shuffle=True, seed=args.seed)
    num_classes = sum(1 for p in __import__("pathlib").Path(data).iterdir()
                      if p.is_dir() and not p.name.startswith("."))
    model = small_cnn(num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    print(f"backend={args.backend} data={data} classes={num_classes} batch={args.batch_size} "
          f"threads={args.threads} compile={args.compile}")

    step, images_seen, load_time, window = 0, 0, 0.0, []
    first_loss = last_loss = None
    start = time.perf_counter()
    while step < args.steps:
        batches = train_batches(ndd, reader, args.batch_size, args.compile)
        t0 = time.perf_counter()
        for images, labels in batches:
            load_time += time.perf_counter() - t0
            if step < args.steps:  # the epoch iterator must be consumed to its end
                loss = loss_fn(model(images), labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                images_seen += images.shape[0]
                window.append(loss.item())
                if step % args.log_every == 0 or step == args.steps:
                    avg = sum(window) / len(window)
                    first_loss = avg if first_loss is None else first_loss
                    last_loss, window = avg, []
                    print(f"step {step:5d}  loss {avg:.4f}")
            t0 = time.perf_counter()
    total = time.perf_counter() - start
    print(f"loader: {images_seen / load_time:.1f} images/s (time waiting for batches only)")
    print(f"end-to-end: {images_seen / total:.1f} images/s ({images_seen} images, {total:.1f} s)")
    print(f"loss: first window {first_loss:.4f} -> last window {last_loss:.4f}")
    return first_loss, last_loss


if __name__ == "__main__":
    main()
