"""Geometry and new colour ops: rotate, warp_affine, sphere, water, jitter (GPU-only in DALI),
experimental.warp_perspective, experimental.remap (GPU-only in DALI), equalize, clahe, debayer,
jpeg_compression_distortion."""

import numpy as np

from op_cases import Case, images

_PERSP = np.array([[0.95, 0.05, 8.0], [-0.03, 1.02, -5.0], [2e-5, 1e-5, 1.0]], np.float32)
_AFFINE = np.array([[0.95, 0.05, 8.0], [-0.03, 1.02, -5.0]], np.float32)


def _nn(m):
    """INTERP_NN of the backend (DALI's dynamic module has no ``types``)."""
    if hasattr(m, "types"):
        return m.types.INTERP_NN
    from nvidia.dali import types
    return types.INTERP_NN


def _bayer(n=8, h=480, w=640):
    rng = np.random.default_rng(1)
    return [rng.integers(0, 256, (h - 8 * i, w - 6 * i), dtype=np.uint8) for i in range(n)], "HW"


def _maps(m, b):
    h, w = 480, 640
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    mx = (xs + 3.0 * np.sin(ys / 20.0)).astype(np.float32)
    my = (ys + 2.0 * np.cos(xs / 15.0)).astype(np.float32)
    return m.experimental.remap(b, m.as_batch([mx] * 8), m.as_batch([my] * 8))


def cases():
    imgs = lambda: images(8, 480, 640)  # noqa: E731
    same = lambda: images(8, 480, 640, vary=False)  # noqa: E731
    return [
        Case("rotate 8x~480x640x3 u8 17deg linear", imgs,
             lambda m, b: m.rotate(b, angle=17.0)),
        Case("rotate 8x~480x640x3 u8 keep_size nn", imgs,
             lambda m, b: m.rotate(b, angle=-33.0, keep_size=True,
                                   interp_type=_nn(m))),
        Case("warp_affine 8x~480x640x3 u8 linear", imgs,
             lambda m, b: m.warp_affine(b, matrix=_AFFINE)),
        Case("sphere 8x~480x640x3 u8", imgs, lambda m, b: m.sphere(b)),
        Case("water 8x~480x640x3 u8", imgs, lambda m, b: m.water(b)),
        Case("jitter 8x~480x640x3 u8", imgs, lambda m, b: m.jitter(b)),
        Case("warp_perspective 8x~480x640x3 u8 linear", imgs,
             lambda m, b: m.experimental.warp_perspective(b, matrix=_PERSP)),
        Case("warp_perspective 8x~480x640x3 u8 nn", imgs,
             lambda m, b: m.experimental.warp_perspective(b, matrix=_PERSP,
                                                          interp_type=_nn(m))),
        Case("remap 8x480x640x3 u8 linear", same, _maps),
        Case("equalize 8x~480x640x3 u8", imgs, lambda m, b: m.equalize(b)),
        Case("clahe 8x~480x640x3 u8 8x8 per channel", imgs,
             lambda m, b: m.clahe(b, tiles_x=8, tiles_y=8, clip_limit=2.0, luma_only=False)),
        Case("clahe 8x~480x640x3 u8 8x8 luma", imgs,
             lambda m, b: m.clahe(b, tiles_x=8, tiles_y=8, clip_limit=2.0)),
        Case("debayer 8x~480x640 u8 bilinear", _bayer,
             lambda m, b: m.debayer(b, blue_position=[0, 0])),
        Case("jpeg_compression_distortion 8x~480x640x3 q50", imgs,
             lambda m, b: m.jpeg_compression_distortion(b, quality=50)),
    ]
