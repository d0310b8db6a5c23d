"""The pipelines of ``ndd bench``, written once against the dynamic-mode API and run on any
module that implements it (``ndd`` or ``nvidia.dali.experimental.dynamic``).

Each pipeline is ``fn(api, jpegs) -> Batch`` where ``jpegs`` is a batch of encoded images from
``api.readers.File``. Semantics and defaults are DALI's (ImageNet-style training / validation).
"""
from __future__ import annotations

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def train(api, jpegs):
    """Decode (RGB, HWC uint8) -> random_resized_crop 224x224 -> random mirror + normalize to
    CHW float32."""
    images = api.decoders.image(jpegs)
    images = api.random_resized_crop(images, size=(224, 224))
    flip = api.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5)
    return api.crop_mirror_normalize(images, mirror=flip, mean=MEAN, std=STD,
                                      dtype=api.float32, output_layout="CHW")


def val(api, jpegs):
    """Decode -> resize shorter side to 256 -> centre crop 224x224 + normalize to CHW float32."""
    images = api.decoders.image(jpegs)
    images = api.resize(images, resize_shorter=256)
    return api.crop_mirror_normalize(images, crop=(224, 224), mean=MEAN, std=STD,
                                     dtype=api.float32, output_layout="CHW")


def decode(api, jpegs):
    """Decode only (ragged HWC uint8)."""
    return api.decoders.image(jpegs)


PIPELINES = {"train": train, "val": val, "decode": decode}
