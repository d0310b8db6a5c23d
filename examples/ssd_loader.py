"""Train a tiny SSD-style detector on the COCO sample with an SSD300 training loader.

The loader is NVIDIA's SSD300 recipe written against DALI's dynamic-mode API:
``readers.COCO`` (relative ``ltrb`` boxes) -> ``random_bbox_crop`` (IoU thresholds
0..0.9, scaling 0.3..1, aspect ratio 0.5..2) -> ``decoders.image_slice`` of the crop window ->
``bb_flip`` on a coin flip -> ``resize`` to 300x300 -> ``hsv`` and ``brightness_contrast`` with
random per-sample arguments -> ``crop_mirror_normalize`` (the same coin flip mirrors) ->
``box_encoder`` against the 8732 SSD300 anchors. The detector is a few convolutions with a class
and a box head per SSD feature map (38, 19, 10, 5, 3, 1), trained on the CPU.

    python examples/ssd_loader.py --mode compile --steps 300
    python examples/ssd_loader.py --mode eager --steps 20 --batch-size 8
    ndd graph examples/ssd_loader.py --mode compile --steps 4 --copies 2 --batch-size 4

``--mode``: ``eager`` (each op runs as it is called), ``deferred`` (``EvalMode.deferred``: the
batch's graph is compiled when it is consumed), ``compile`` (``next_epoch(compile=True)``: the
first batch is traced, later ones are replayed ahead of time). Prints the loss every
``--log-every`` steps, then the loader's images/s (time waiting for batches only) and the
end-to-end images/s.
"""

import argparse
import contextlib
import importlib
import itertools
import math
import time

import torch
from torch import nn

import ndd
from ndd.datasets.coco import build_coco_dataset

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
MODES = ("eager", "deferred", "compile")

#: SSD300: feature map sizes, their strides in pixels, the box scales (pixels of a 300x300
#: input; one more than the maps) and the extra aspect ratios of each map.
FEATURE_MAPS = (38, 19, 10, 5, 3, 1)
STEPS = (8, 16, 32, 64, 100, 300)
SCALES = (21, 45, 99, 153, 207, 261, 315)
ASPECT_RATIOS = ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))


def boxes_per_location():
    """Anchors per feature-map cell: 2 squares plus 2 per extra aspect ratio (4, 6, 6, 6, 4, 4)."""
    return tuple(2 + 2 * len(r) for r in ASPECT_RATIOS)


def ssd300_anchors(fig_size=300):
    """The 8732 SSD300 default boxes as a flat list of relative ``[l, t, r, b]`` values.

    For feature map ``k`` (``f`` cells a side, cell size ``fig_size / STEPS[k]`` relative to
    the image), the sizes are the square ``s_k = SCALES[k] / fig_size``, the square
    ``sqrt(s_k * s_{k+1})`` and ``(s_k sqrt(a), s_k / sqrt(a))`` plus its transpose for each
    extra aspect ratio ``a``; each size is placed at every cell center ``((j + 0.5) / fk,
    (i + 0.5) / fk)``, row by row. Centers and sizes are clipped to [0, 1] before the
    conversion to corners. Order: maps, then sizes, then cells (the order of the heads' outputs
    in :class:`TinySSD`).

    Returns
    -------
    list of float
        ``8732 * 4`` values.
    """
    out = []
    for k, (f, step) in enumerate(zip(FEATURE_MAPS, STEPS)):
        fk = fig_size / step
        s1, s2 = SCALES[k] / fig_size, SCALES[k + 1] / fig_size
        sizes = [(s1, s1), (math.sqrt(s1 * s2),) * 2]
        for a in ASPECT_RATIOS[k]:
            w, h = s1 * math.sqrt(a), s1 / math.sqrt(a)
            sizes += [(w, h), (h, w)]
        for w, h in sizes:
            for i, j in itertools.product(range(f), repeat=2):
                cx, cy = (j + 0.5) / fk, (i + 0.5) / fk
                cx, cy, w_, h_ = (min(max(v, 0.0), 1.0) for v in (cx, cy, w, h))
                out += [cx - 0.5 * w_, cy - 0.5 * h_, cx + 0.5 * w_, cy + 0.5 * h_]
    return out


ANCHORS = ssd300_anchors()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=MODES, default="compile")
    p.add_argument("--copies", type=int, default=32,
                   help="list each of the sample's 5 photos N times (default 32)")
    p.add_argument("--threads", type=int, default=None, help="ndd.set_num_threads(N)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch.set_num_threads for the model (1: leave cores to the loader)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--log-every", type=int, default=25)
    return p.parse_args(argv)


def make_reader(data, seed=0):
    """``readers.COCO`` as SSD reads it: relative ``ltrb`` boxes, images with objects only."""
    return ndd.readers.COCO(file_root=str(data["file_root"]),
                            annotations_file=str(data["annotations_file"]), ltrb=True,
                            ratio=True, skip_empty=True, random_shuffle=True, seed=seed)


def types_of(nd):
    """The enums of dynamic-mode module ``nd``: ``ndd.types``, or for DALI
    ``nvidia.dali.types`` (its dynamic mode has no ``types`` attribute)."""
    return getattr(nd, "types", None) or importlib.import_module("nvidia.dali.types")


def ssd_batch(jpegs, boxes, labels, anchors=ANCHORS, rng=None, nd=ndd):
    """The SSD300 augmentation of one batch; the random ops draw from ``rng`` (an
    ``ndd.random.RNG``; default: the thread's generator, ``ndd.random.set_seed``).

    ``nd`` is the dynamic-mode module (``ndd``, or DALI 2.4's
    ``nvidia.dali.experimental.dynamic``: the code is the same).

    Returns
    -------
    (Batch, Batch, Batch)
        Images float32 CHW 3x300x300 (normalized), encoded boxes float32 (8732, 4) (center
        form ``[cx, cy, w, h]``, relative) and their labels int32 (8732,) per sample.
    """
    n = jpegs.batch_size
    types = types_of(nd)
    anchor, shape, boxes, labels = nd.random_bbox_crop(
        boxes, labels, aspect_ratio=[0.5, 2.0], thresholds=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9],
        scaling=[0.3, 1.0], bbox_layout="xyXY", allow_no_crop=True, num_attempts=50, rng=rng)
    images = nd.decoders.image_slice(jpegs, anchor, shape, output_type=types.RGB)
    flip = nd.random.coin_flip(batch_size=n, probability=0.5, rng=rng)
    boxes = nd.bb_flip(boxes, ltrb=True, horizontal=flip)
    images = nd.resize(images, resize_x=300, resize_y=300,
                       min_filter=types.INTERP_TRIANGULAR)
    saturation = nd.random.uniform(batch_size=n, range=[0.5, 1.5], rng=rng)
    contrast = nd.random.uniform(batch_size=n, range=[0.5, 1.5], rng=rng)
    brightness = nd.random.uniform(batch_size=n, range=[0.875, 1.125], rng=rng)
    hue = nd.random.uniform(batch_size=n, range=[-18.0, 18.0], rng=rng)
    images = nd.hsv(images, hue=hue, saturation=saturation)
    images = nd.brightness_contrast(images, brightness=brightness, contrast=contrast)
    images = nd.crop_mirror_normalize(images, crop=(300, 300), mean=MEAN, std=STD,
                                      mirror=flip, dtype=nd.float32, output_layout="CHW")
    boxes, labels = nd.box_encoder(boxes, labels, criteria=0.5, anchors=anchors)
    return images, boxes, labels


def ssd_batches(reader, batch_size, mode, rng=None):
    """Yield ``(images, boxes, labels)`` torch tensors, (N, 3, 300, 300) float32,
    (N, 8732, 4) float32 and (N, 8732) int64, for one epoch in ``mode``."""
    compile_ = mode == "compile"
    with ndd.EvalMode.deferred if mode == "deferred" else contextlib.nullcontext():
        for jpegs, boxes, labels in reader.next_epoch(batch_size=batch_size, compile=compile_):
            images, boxes, labels = ssd_batch(jpegs, boxes, labels, rng=rng)
            yield images.torch(), boxes.torch(), labels.torch().long()


class TinySSD(nn.Module):
    """A few strided convolutions down to the six SSD300 maps (38 .. 1), a 3x3 class head and
    box head on each; outputs ``(N, 8732, classes)`` scores and ``(N, 8732, 4)`` offsets in
    the anchors' order (map, box size, cell)."""

    def __init__(self, num_classes, width=24):
        super().__init__()

        def down(cin, cout, stride=2):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU())

        # 300 -> 75 (pool 4) -> 38, then 19, 10, 5, 3, 1
        self.stem = nn.Sequential(nn.AvgPool2d(4), down(3, width))
        self.downs = nn.ModuleList([down(width, width) for _ in range(4)] +
                                   [nn.Sequential(nn.Conv2d(width, width, 3), nn.ReLU())])
        self.num_classes = num_classes
        self.heads = nn.ModuleList(nn.Conv2d(width, k * (num_classes + 4), 3, 1, 1)
                                   for k in boxes_per_location())

    def forward(self, x):
        maps = [self.stem(x)]
        for d in self.downs:
            maps.append(d(maps[-1]))
        outs = []
        for f, head, k in zip(maps, self.heads, boxes_per_location()):
            y = head(f)                                      # (N, k * (C + 4), H, W)
            n, _, h, w = y.shape
            y = y.reshape(n, k, self.num_classes + 4, h * w).permute(0, 1, 3, 2)
            outs.append(y.reshape(n, k * h * w, self.num_classes + 4))
        y = torch.cat(outs, 1)
        return y[..., :self.num_classes], y[..., self.num_classes:]


def ssd_loss(scores, offsets, boxes, labels):
    """Cross entropy over all anchors plus smooth L1 of the matched anchors' boxes (the
    encoder's center-form boxes are the regression targets)."""
    cls = nn.functional.cross_entropy(scores.reshape(-1, scores.shape[-1]), labels.reshape(-1))
    pos = labels > 0
    if not pos.any():
        return cls
    return cls + nn.functional.smooth_l1_loss(offsets[pos], boxes[pos])


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    if args.threads is not None:
        ndd.set_num_threads(args.threads)
    ndd.random.set_seed(args.seed)
    data = build_coco_dataset(copies=args.copies)
    reader = make_reader(data, args.seed)
    num_classes = 16        # 15 categories (remapped to 1..15) + background 0
    model = TinySSD(num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    print(f"mode={args.mode} data={data['root']} batch={args.batch_size} "
          f"threads={args.threads} anchors={len(ANCHORS) // 4}")

    step, images_seen, load_time, window = 0, 0, 0.0, []
    start = time.perf_counter()
    while step < args.steps:
        t0 = time.perf_counter()
        for images, boxes, labels in ssd_batches(reader, args.batch_size, args.mode):
            load_time += time.perf_counter() - t0
            if step < args.steps:  # the epoch iterator must be consumed to its end
                loss = ssd_loss(*model(images), boxes, labels)
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


if __name__ == "__main__":
    main()
