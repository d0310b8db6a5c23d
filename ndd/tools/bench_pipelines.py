"""The pipelines of ``ndd bench``, written once against the dynamic-mode API and run on any
module that implements it (``ndd`` or ``nvidia.dali.experimental.dynamic``).

Each pipeline is ``fn(api, jpegs, rng=None) -> Batch`` where ``jpegs`` is a batch of encoded
images from ``api.readers.File`` and ``rng`` the runner's own ``api.random.RNG`` (None: the
thread's default generator; DALI's pipeline mode has its own seeds). Semantics and defaults are DALI's (ImageNet-style training / validation).
"""
from __future__ import annotations

from ndd._callsite import treat_as_user_code

# errors and ``ndd graph`` name these pipelines' lines, not the benchmark's
treat_as_user_code(__file__)

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _rng(rng) -> dict:
    """``rng=`` for the random ops when the runner brings its own generator."""
    return {} if rng is None else {"rng": rng}


def train(api, jpegs, rng=None):
    """Decode (RGB, HWC uint8) -> random_resized_crop 224x224 -> random mirror + normalize to
    CHW float32."""
    images = api.decoders.image(jpegs)
    images = api.random_resized_crop(images, size=(224, 224), **_rng(rng))
    flip = api.random.coin_flip(batch_size=jpegs.batch_size, probability=0.5, **_rng(rng))
    return api.crop_mirror_normalize(images, mirror=flip, mean=MEAN, std=STD,
                                      dtype=api.float32, output_layout="CHW")


def val(api, jpegs, rng=None):
    """Decode -> resize shorter side to 256 -> centre crop 224x224 + normalize to CHW float32."""
    images = api.decoders.image(jpegs)
    images = api.resize(images, resize_shorter=256)
    return api.crop_mirror_normalize(images, crop=(224, 224), mean=MEAN, std=STD,
                                     dtype=api.float32, output_layout="CHW")


def decode(api, jpegs, rng=None):
    """Decode only (ragged HWC uint8)."""
    return api.decoders.image(jpegs)


PIPELINES = {"train": train, "val": val, "decode": decode}
