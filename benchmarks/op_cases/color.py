"""Colour ops (existing): brightness_contrast, hsv, color_twist, saturation."""

from op_cases import Case, images


def cases():
    imgs = lambda: images(8, 480, 640)  # noqa: E731
    return [
        Case("brightness_contrast 8x~480x640x3 u8", imgs,
             lambda m, b: m.brightness_contrast(b, brightness=1.2, contrast=0.8)),
        Case("hsv 8x~480x640x3 u8", imgs,
             lambda m, b: m.hsv(b, hue=20.0, saturation=1.3, value=0.9)),
        Case("color_twist 8x~480x640x3 u8", imgs,
             lambda m, b: m.color_twist(b, hue=10.0, saturation=1.2, contrast=0.9,
                                        brightness=1.1)),
    ]
