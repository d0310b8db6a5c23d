"""Tests of resize's geometry (runtime/kernels/params/resize_geometry.py): output sizes and
source windows computed by hand, and the size-argument errors."""
import numpy as np
import pytest

from runtime.kernels.params.resize_geometry import (SIZE_ARGS, resize_output_shape,
                                                    resize_size_args)


# ------------------------------------------------------------------ output shapes (by hand)

@pytest.mark.parametrize("in_hw, kwargs, expected", [
    ((480, 640), dict(resize_shorter=256), (256, 341)),           # 341.33 -> 341
    ((480, 640), dict(resize_longer=320), (240, 320)),
    ((720, 1280), dict(size=(480, 640), mode="not_larger"), (360, 640)),      # DALI doc example
    ((480, 640), dict(size=(1080, 1920), mode="not_smaller"), (1440, 1920)),  # DALI doc example
    ((600, 1200), dict(size=800, mode="not_smaller", max_size=1400), (700, 1400)),  # doc example
    ((100, 375), dict(resize_y=50), (50, 188)),                     # 187.5 rounds half up
    ((100, 200), dict(resize_x=50), (25, 50)),
    ((100, 200), dict(resize_y=50, mode="stretch"), (50, 200)),
    ((100, 200), dict(size=(0, 0)), (100, 200)),                     # nothing given: keep
    ((100, 200), dict(size=(-50, 100)), (50, 100)),                  # negative flips
    ((100, 200), dict(size=(300, 0), max_size=(0, 250)), (300, 250)),
    ((100, 200), dict(size=(10, 10), roi_start=(10, 20), roi_end=(30, 60)), (10, 10)),
    ((100, 200), dict(resize_shorter=10, roi_start=(0.1, 0.1), roi_end=(0.3, 0.9),
                      roi_relative=True), (10, 80)),
    ((0, 5), dict(size=(2, 2)), (0, 2)),                              # empty input stays empty
    ((7, 9), dict(size=(0.2, 0.2)), (1, 1)),                          # at least 1 pixel
])
def test_output_shape(in_hw, kwargs, expected):
    assert resize_output_shape(in_hw, **kwargs).out_hw == expected


def test_subpixel_scale_window():
    # 10 -> 4.5 rounds to 5: with subpixel_scale the window grows by 5/4.5 about its centre.
    p = resize_output_shape((10, 10), size=(4.5, 10))
    assert p.out_hw == (5, 10)
    # the window is kept in float32 (DALI's): 5 -+ 5 * 5 / 4.5 = -5/9, 95/9, rounded once
    assert p.y0 == np.float32(-5 / 9)
    assert p.y1 == np.float32(95 / 9)
    q = resize_output_shape((10, 10), size=(4.5, 10), subpixel_scale=False)
    assert (q.y0, q.y1) == (0.0, 10.0)


def test_flipped_roi_window():
    p = resize_output_shape((10, 20), size=(5, 5), roi_start=(8, 2), roi_end=(2, 12))
    assert (p.y0, p.y1, p.x0, p.x1) == (8.0, 2.0, 2.0, 12.0)


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(), ValueError, "exactly one"),
    (dict(size=(2, 2), resize_shorter=3), ValueError, "exactly one"),
    (dict(resize_x=2, resize_longer=3), ValueError, "exactly one"),
    (dict(resize_shorter=3, mode="stretch"), ValueError, "mode"),
    (dict(size=(2, 2), mode="fill"), ValueError, "mode"),
    (dict(size=(2, 2), roi_start=(0, 0)), ValueError, "roi_start"),
    (dict(size=(2, 2, 2)), ValueError, "size"),
    (dict(size="big"), TypeError, "size"),
    (dict(size=(2, float("nan"))), ValueError, "size"),
    (dict(max_size=(1, 2, 3), size=4), ValueError, "max_size"),
])
def test_size_argument_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        resize_output_shape((10, 10), **kwargs)


def test_size_args_are_those_given():
    a = {"size": (3, 4), "mode": None, "interp_type": "cubic", "max_size": 7}
    assert resize_size_args(a) == {"size": (3, 4), "max_size": 7}
    assert set(resize_size_args({k: 1 for k in SIZE_ARGS})) == set(SIZE_ARGS)
