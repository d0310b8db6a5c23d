"""The benchmark pipelines, written once against the DALI dynamic-mode API.

Every function takes the API module as ``mod`` (``ndd`` or ``nvidia.dali.experimental.dynamic``)
so the same code measures both backends.  Semantics follow DALI's operator documentation.
"""

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def train_pipeline(mod, jpegs, batch_size, rng=None):
    """ImageNet training augmentation of one batch.

    Parameters
    ----------
    mod : module
        The dynamic-mode API module.
    jpegs : Batch
        Encoded images (uint8, 1-D per sample), as yielded by ``readers.File``.
    batch_size : int
        Number of samples in ``jpegs`` (random ops need it explicitly).
    rng : RNG, optional
        Explicit random generator; omitted (the thread-local default is used) when None.

    Returns
    -------
    Batch
        float32, layout "CHW", 3x224x224 per sample: decode -> random_resized_crop(224) ->
        random mirror (p=0.5) -> normalize with the ImageNet mean / std (0..255 scale).
    """
    extra = {} if rng is None else {"rng": rng}
    images = mod.decoders.image(jpegs)
    images = mod.random_resized_crop(images, size=(224, 224), **extra)
    flip = mod.random.coin_flip(batch_size=batch_size, probability=0.5, **extra)
    return mod.crop_mirror_normalize(
        images, mirror=flip, mean=MEAN, std=STD, dtype=mod.float32, output_layout="CHW"
    )


def val_pipeline(mod, jpegs):
    """ImageNet validation preprocessing of one batch.

    Parameters
    ----------
    mod : module
        The dynamic-mode API module.
    jpegs : Batch
        Encoded images, as yielded by ``readers.File``.

    Returns
    -------
    Batch
        float32, layout "CHW", 3x224x224 per sample: decode -> resize shorter side to 256
        (antialiased linear, DALI's default) -> center crop 224 -> normalize.
    """
    images = mod.decoders.image(jpegs)
    images = mod.resize(images, resize_shorter=256)
    return mod.crop_mirror_normalize(images, crop=(224, 224), mean=MEAN, std=STD)


PIPELINES = {"train": train_pipeline, "val": val_pipeline}
