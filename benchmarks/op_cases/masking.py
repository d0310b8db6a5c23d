"""Masking and noise ops: erase, grid_mask, paste, noise.gaussian / salt_and_pepper / shot."""

from op_cases import Case, images


def cases():
    imgs = lambda: images(8, 480, 640)  # noqa: E731
    return [
        Case("erase 8x~480x640x3 u8 2 regions", imgs,
             lambda m, b: m.erase(b, anchor=[50.0, 60.0, 200.0, 300.0],
                                  shape=[100.0, 120.0, 80.0, 90.0], fill_value=0.0)),
        Case("grid_mask 8x~480x640x3 u8", imgs,
             lambda m, b: m.grid_mask(b, tile=80, ratio=0.4, angle=0.3)),
        Case("paste 8x~480x640x3 u8 ratio 1.5", imgs,
             lambda m, b: m.paste(b, ratio=1.5, fill_value=0.0)),
        Case("noise.gaussian 8x~480x640x3 u8", imgs,
             lambda m, b: m.noise.gaussian(b, stddev=10.0)),
        Case("noise.salt_and_pepper 8x~480x640x3 u8", imgs,
             lambda m, b: m.noise.salt_and_pepper(b, prob=0.05)),
        Case("noise.shot 8x~480x640x3 u8", imgs,
             lambda m, b: m.noise.shot(b, factor=4.0)),
    ]
