"""CPU kernels of the image decoders and ``peek_image_shape``.

``decoders.image`` decodes every sample (nvImageCodec's CPU backend, Pillow as a fallback,
:mod:`runtime.codecs.image`); ``decoders.image_crop`` / ``image_slice`` /
``image_random_crop`` decode only a window of it (a region decode), placed as DALI's crop,
slice and random-crop decoders place it (:mod:`runtime.kernels.params`).  A sample with a
window is parsed once: the window is computed from its header and the decode reuses the
parsed stream.
"""
from __future__ import annotations

import numpy as np

from runtime.codecs.image import decode, parse_image, peek_shape
from runtime.kernels.params.slices import slice_roi
from runtime.kernels.params.windows import crop_args, crop_window, random_window, window_roi
from runtime.kernels.registry import register, sample_args
from runtime.storage import sample_name

__all__ = ["decode_kernel", "crop_roi", "random_roi"]


def decode_kernel(window_fn=None):
    """A batch kernel decoding every sample, or only its window.

    Parameters
    ----------
    window_fn : callable, optional
        ``window_fn((H, W), args, i) -> (y0, x0, y1, x1)``: the region of sample ``i``
        (``args`` its arguments) in its oriented image of ``H`` x ``W``; None decodes the
        whole image.
    """
    def kernel(ctx, inputs, args):
        data = inputs[0]

        def one(i):
            a = sample_args(ctx, args, i)
            name = sample_name(data, i)
            roi = None
            x = data[i]
            if window_fn is not None:
                x = parse_image(x, sample=name)     # the decode reuses the parsed header
                info = x.info()
                roi = window_fn((info.height, info.width), a, i)
            return decode(x, output_type=a.get("output_type", "RGB"), roi=roi,
                          dtype=a.get("dtype", "uint8"), sample=name,
                          adjust_orientation=a.get("adjust_orientation", True))
        return [ctx.pool.map(one, ctx.batch_size)]
    return kernel


def crop_roi(in_hw, a: dict, i: int):
    """The region of ``decoders.image_crop``: the crop window, which must lie inside."""
    return window_roi(crop_window(in_hw, **crop_args(a)), in_hw, "crop window")


def random_roi(in_hw, a: dict, i: int):
    """The region of ``decoders.image_random_crop``: sample ``i``'s random window."""
    y0, x0, h, w = random_window(in_hw, a, a["_seeds"], i)
    return (y0, x0, y0 + h, x0 + w)


register("decoders.image", "cpu")(decode_kernel(None))
register("decoders.image_crop", "cpu")(decode_kernel(crop_roi))
register("decoders.image_random_crop", "cpu")(decode_kernel(random_roi))


@register("decoders.image_slice", "cpu")
def image_slice(ctx, inputs, args):
    """``decoders.image_slice``: the slice window of every sample (its ``anchor`` / ``shape``
    inputs, one per sample or one for all, or the window arguments)."""
    data = inputs[0]
    anchors = inputs[1] if len(inputs) > 1 else None
    shapes = inputs[2] if len(inputs) > 2 else None

    def one(i):
        a = sample_args(ctx, args, i)
        name = sample_name(data, i)
        x = parse_image(data[i], sample=name)     # the decode reuses the parsed header
        info = x.info()
        anc = None if anchors is None else anchors[i if len(anchors) > 1 else 0].tolist()
        shp = None if shapes is None else shapes[i if len(shapes) > 1 else 0].tolist()
        roi = slice_roi((info.height, info.width), a, anc, shp)
        return decode(x, output_type=a.get("output_type", "RGB"), roi=roi,
                      dtype=a.get("dtype", "uint8"), sample=name,
                      adjust_orientation=a.get("adjust_orientation", True))
    return [ctx.pool.map(one, ctx.batch_size)]


@register("peek_image_shape", "cpu")
def peek_image_shape(ctx, inputs, args):
    """``peek_image_shape``: the (oriented) shape of every encoded sample, from its header;
    errors name the sample and, from a reader, its file (as the decoders' do)."""
    data = inputs[0]

    def one(i):
        a = sample_args(ctx, args, i)
        shape = peek_shape(data[i], sample=sample_name(data, i),
                           image_type=a.get("image_type", "RGB"),
                           adjust_orientation=a.get("adjust_orientation", True))
        return np.asarray(shape, dtype=a.get("dtype", "int64"))
    return [ctx.pool.map(one, ctx.batch_size)]
