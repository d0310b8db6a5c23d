"""Colour ops: brightness, contrast, brightness_contrast, hue, saturation, hsv, color_twist,
color_space_conversion; uint8 and float32 inputs, constant and per-sample arguments."""

import numpy as np

from op_cases import Case, images


def _per_sample(mod, n, lo, hi, seed):
    """A per-sample float32 argument (the same values for both backends)."""
    vals = np.random.default_rng(seed).uniform(lo, hi, n).astype(np.float32)
    return mod.as_batch([np.array(v, np.float32) for v in vals])


def _csc(mod, batch, src, dst):
    """``color_space_conversion`` with DALI's image type enum (ndd accepts the same names)."""
    if mod.__name__ == "ndd":
        return mod.color_space_conversion(batch, image_type=src, output_type=dst)
    from nvidia.dali import types
    return mod.color_space_conversion(batch, image_type=getattr(types.DALIImageType, src),
                                      output_type=getattr(types.DALIImageType, dst))


def cases():
    imgs = lambda: images(8, 480, 640)  # noqa: E731
    fimgs = lambda: images(8, 480, 640, dtype=np.float32)  # noqa: E731
    return [
        Case("brightness_contrast 8x~480x640x3 u8", imgs,
             lambda m, b: m.brightness_contrast(b, brightness=1.2, contrast=0.8)),
        Case("brightness_contrast 8x~480x640x3 f32", fimgs,
             lambda m, b: m.brightness_contrast(b, brightness=1.2, contrast=0.8)),
        Case("brightness_contrast per-sample u8", imgs,
             lambda m, b: m.brightness_contrast(b, brightness=_per_sample(m, 8, 0.6, 1.4, 1),
                                                contrast=_per_sample(m, 8, 0.6, 1.4, 2))),
        Case("brightness 8x~480x640x3 u8", imgs,
             lambda m, b: m.brightness(b, brightness=1.3, brightness_shift=0.05)),
        Case("contrast 8x~480x640x3 f32", fimgs,
             lambda m, b: m.contrast(b, contrast=1.4)),
        Case("hsv 8x~480x640x3 u8", imgs,
             lambda m, b: m.hsv(b, hue=20.0, saturation=1.3, value=0.9)),
        Case("hsv 8x~480x640x3 f32 -> f32", fimgs,
             lambda m, b: m.hsv(b, hue=20.0, saturation=1.3, value=0.9, dtype=m.float32)),
        Case("hsv per-sample u8", imgs,
             lambda m, b: m.hsv(b, hue=_per_sample(m, 8, -30, 30, 3),
                                saturation=_per_sample(m, 8, 0.5, 1.5, 4))),
        Case("hue 8x~480x640x3 u8", imgs, lambda m, b: m.hue(b, hue=25.0)),
        Case("saturation 8x~480x640x3 f32", fimgs,
             lambda m, b: m.saturation(b, saturation=0.6)),
        Case("color_twist 8x~480x640x3 u8", imgs,
             lambda m, b: m.color_twist(b, hue=10.0, saturation=1.2, contrast=0.9,
                                        brightness=1.1)),
        Case("color_twist 8x~480x640x3 f32", fimgs,
             lambda m, b: m.color_twist(b, hue=10.0, saturation=1.2, contrast=0.9,
                                        brightness=1.1)),
        Case("color_twist per-sample u8", imgs,
             lambda m, b: m.color_twist(b, hue=_per_sample(m, 8, -20, 20, 5),
                                        saturation=_per_sample(m, 8, 0.6, 1.4, 6),
                                        contrast=_per_sample(m, 8, 0.6, 1.4, 7),
                                        brightness=_per_sample(m, 8, 0.6, 1.4, 8))),
        Case("color_space_conversion RGB->YCbCr u8", imgs,
             lambda m, b: _csc(m, b, "RGB", "YCbCr")),
        Case("color_space_conversion YCbCr->BGR u8", imgs,
             lambda m, b: _csc(m, b, "YCbCr", "BGR")),
        Case("color_space_conversion RGB->GRAY u8", imgs,
             lambda m, b: _csc(m, b, "RGB", "GRAY")),
        Case("color_space_conversion RGB->BGR u8", imgs,
             lambda m, b: _csc(m, b, "RGB", "BGR")),
    ]
