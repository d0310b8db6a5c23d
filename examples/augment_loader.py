"""Train the small CNN of ``train_loader.py`` with a modern classification augmentation.

The loader, written against DALI's dynamic-mode API: ``readers.File`` -> ``decoders.image`` ->
``random_resized_crop`` (224x224) -> ``rotate`` by a small random angle (canvas kept) ->
Gaussian blur with a random sigma, applied on a coin flip (the blurred and the original image
mixed by the per-sample 0 / 1 flag) -> colour jitter: ``color_twist`` with random per-sample
brightness, contrast and saturation, ``hsv`` with a random hue -> ``crop_mirror_normalize``
(random mirror, ImageNet mean / std, CHW float32) -> random erasing (``erase``: one region of
random place and size per image, of zero size on about half of them). Every random argument is
per sample (``ndd.random.uniform`` / ``coin_flip``).

    python examples/augment_loader.py                       # compile mode, 300 steps
    python examples/augment_loader.py --mode eager --steps 20
    ndd graph examples/augment_loader.py --steps 4 --iterations 3

``--mode``: ``eager`` (each op runs as it is called), ``deferred`` (``EvalMode.deferred``: the
batch's graph is compiled when it is consumed), ``compile`` (``next_epoch(compile=True)``: the
first batch is traced, later ones are replayed ahead of time). In deferred and compile mode the
colour chain ``color_twist -> hsv -> crop_mirror_normalize`` is fused into one pass per image
(``fused.color``; ``--explain`` prints the compiled plan). Prints the loss every
``--log-every`` steps, then the loader's images/s (time waiting for batches only) and the
end-to-end images/s.
"""

import argparse
import contextlib
import importlib.util
import pathlib
import time

import torch
from torch import nn

import ndd
from ndd.datasets.sample import build_sample_dataset

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
MODES = ("eager", "deferred", "compile")

_TRAIN = pathlib.Path(__file__).resolve().parent / "train_loader.py"
_spec = importlib.util.spec_from_file_location("train_loader_example", _TRAIN)
train_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_loader)
small_cnn = train_loader.small_cnn      # the same model as train_loader.py


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=MODES, default="compile")
    p.add_argument("--data", default=None, help="image folder (default: build the sample data)")
    p.add_argument("--num-images", type=int, default=600, help="size of the built sample data")
    p.add_argument("--size", type=int, default=224, help="output height and width")
    p.add_argument("--threads", type=int, default=None, help="ndd.set_num_threads(N)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch.set_num_threads for the model (1: leave cores to the loader)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--explain", action="store_true",
                   help="print the compiled plan of the last batch (deferred / compile)")
    return p.parse_args(argv)


def augment(jpegs, size=224, rng=None, nd=ndd):
    """The augmentation of one batch of encoded images; the random ops draw from ``rng`` (an
    ``ndd.random.RNG``; default: the thread's generator, ``ndd.random.set_seed``).

    Returns
    -------
    Batch
        float32 CHW ``(3, size, size)`` per sample, normalized with the ImageNet mean / std.
    """
    n = jpegs.batch_size

    def uniform(lo, hi, shape=None):
        kw = {} if shape is None else {"shape": shape}
        return nd.random.uniform(batch_size=n, range=[lo, hi], rng=rng, **kw)

    def coin(p=0.5):
        return nd.random.coin_flip(batch_size=n, probability=p, rng=rng)

    images = nd.decoders.image(jpegs)
    images = nd.random_resized_crop(images, size=(size, size), rng=rng)
    images = nd.rotate(images, angle=uniform(-10.0, 10.0), keep_size=True, fill_value=0)
    # Gaussian blur on a coin flip: blurred * b + original * (1 - b), b in {0, 1} per sample
    # (int32 arithmetic: exact), back to uint8
    blur = coin(0.3)
    blurred = nd.gaussian_blur(images, sigma=uniform(0.1, 2.0))
    images = nd.cast(blurred * blur + images * (1 - blur), dtype=nd.uint8)
    # colour jitter (torchvision's ColorJitter(0.4, 0.4, 0.4, 0.1)-like ranges)
    images = nd.color_twist(images, brightness=uniform(0.6, 1.4), contrast=uniform(0.6, 1.4),
                            saturation=uniform(0.6, 1.4))
    images = nd.hsv(images, hue=uniform(-18.0, 18.0))
    images = nd.crop_mirror_normalize(images, mirror=coin(), mean=MEAN, std=STD,
                                      dtype=nd.float32, output_layout="CHW")
    # random erasing: one region per image, normalized; about half of them of zero size
    erase_shape = uniform(0.1, 0.4, shape=[2]) * nd.cast(coin(0.5), dtype=nd.float32)
    return nd.erase(images, anchor=uniform(0.0, 0.7, shape=[2]), shape=erase_shape,
                    normalized=True, axis_names="HW", fill_value=0.0)


def augment_batches(reader, batch_size, mode, size=224, rng=None):
    """Yield ``(images, labels)`` torch tensors, (N, 3, size, size) float32 and (N,) int64,
    for one epoch in ``mode``."""
    compile_ = mode == "compile"
    with ndd.EvalMode.deferred if mode == "deferred" else contextlib.nullcontext():
        for jpegs, labels in reader.next_epoch(batch_size=batch_size, compile=compile_):
            images = augment(jpegs, size=size, rng=rng)
            yield images.torch(), labels.torch().reshape(-1).long()


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    if args.threads is not None:
        ndd.set_num_threads(args.threads)
    ndd.random.set_seed(args.seed)
    data = args.data or str(build_sample_dataset(num_images=args.num_images))
    reader = ndd.readers.File(file_root=data, random_shuffle=True, seed=args.seed)
    num_classes = sum(1 for p in pathlib.Path(data).iterdir()
                      if p.is_dir() and not p.name.startswith("."))
    model = small_cnn(num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    print(f"mode={args.mode} data={data} classes={num_classes} batch={args.batch_size} "
          f"threads={args.threads}")

    step, images_seen, load_time, window = 0, 0, 0.0, []
    start = time.perf_counter()
    while step < args.steps:
        t0 = time.perf_counter()
        for images, labels in augment_batches(reader, args.batch_size, args.mode, args.size):
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
                    print(f"step {step:5d}  loss {sum(window) / len(window):.4f}")
                    window = []
            t0 = time.perf_counter()
    total = time.perf_counter() - start
    print(f"loader: {images_seen / load_time:.1f} images/s (time waiting for batches only)")
    print(f"end-to-end: {images_seen / total:.1f} images/s ({images_seen} images, {total:.1f} s)")
    if args.explain and args.mode != "eager":
        print(ndd.explain())


if __name__ == "__main__":
    main()
