"""Filters: gaussian_blur, laplacian, filter, experimental.median_blur / dilate / erode.

DALI 2.4 has ``median_blur``, ``dilate`` and ``erode`` on the GPU only: their DALI side fails
on a CPU-only machine (the script reports the case as failed and goes on).
"""

import numpy as np

from op_cases import Case, images

_SHARPEN = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
_BOX5 = np.full((5, 5), 1 / 25, np.float32)


def cases():
    u8 = lambda: images(8, 480, 640)  # noqa: E731
    f32 = lambda: images(8, 480, 640, dtype=np.float32)  # noqa: E731
    return [
        Case("gaussian_blur 8x~480x640x3 u8 sigma 2", u8,
             lambda m, b: m.gaussian_blur(b, sigma=2.0)),
        Case("gaussian_blur 8x~480x640x3 f32 window 5", f32,
             lambda m, b: m.gaussian_blur(b, window_size=5)),
        Case("laplacian 8x~480x640x3 u8 window 3", u8,
             lambda m, b: m.laplacian(b)),
        Case("laplacian 8x~480x640x3 f32 window 5 normalized", f32,
             lambda m, b: m.laplacian(b, window_size=5, normalized_kernel=True)),
        Case("filter 8x~480x640x3 u8 3x3 sharpen", u8,
             lambda m, b: m.filter(b, m.as_tensor(_SHARPEN))),
        Case("filter 8x~480x640x3 f32 5x5 box wrap", f32,
             lambda m, b: m.filter(b, m.as_tensor(_BOX5), border="wrap")),
        Case("experimental.median_blur 8x~480x640x3 u8 3x3", u8,
             lambda m, b: m.experimental.median_blur(b)),
        Case("experimental.dilate 8x~480x640x3 u8 3x3", u8,
             lambda m, b: m.experimental.dilate(b)),
        Case("experimental.erode 8x~480x640x3 u8 5x5", u8,
             lambda m, b: m.experimental.erode(b, mask_size=5)),
    ]
