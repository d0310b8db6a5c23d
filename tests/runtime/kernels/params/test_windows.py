"""Tests for runtime.kernels.params.windows (fixed and random crop windows)."""

import math

import numpy as np
import pytest

from runtime.kernels.params.windows import crop_size, crop_window, random_crop_window


# ---------------------------------------------------------------- fixed windows

@pytest.mark.parametrize("pos, expected", [
    # 5x7 image, 2x2 crop: margins 3 (rows) and 5 (cols)
    (0.0, (0, 0)),
    (0.5, (2, 3)),    # 1.5 -> 2, 2.5 -> 3 (halves away from zero)
    (1.0, (3, 5)),
    (0.25, (1, 1)),   # 0.75 -> 1, 1.25 -> 1
])
def test_anchor_hand_computed(pos, expected):
    assert crop_window((5, 7), crop=(2, 2), crop_pos_x=pos, crop_pos_y=pos) == expected + (2, 2)


def test_anchor_out_of_bounds_rounds_away_from_zero():
    # margins -3 and -3: 0.5 * -3 = -1.5 -> -2; 0.3 * -3 = -0.9 -> -1
    assert crop_window((5, 7), crop=(8, 10)) == (-2, -2, 8, 10)
    assert crop_window((5, 7), crop=(8, 10), crop_pos_x=0.3, crop_pos_y=0.3) == (-1, -1, 8, 10)
    assert crop_window((5, 7), crop=(8, 10), crop_pos_x=1.0, crop_pos_y=0.0) == (0, -3, 8, 10)


def test_anchor_uses_float32_position():
    # float32(0.7) * 5 = 3.49999994 -> 3 (DALI); exact 0.7 * 5 = 3.5 would give 4
    assert crop_window((7, 7), crop=(2, 2), crop_pos_x=0.7, crop_pos_y=0.7)[:2] == (3, 3)


def test_crop_size_rules():
    assert crop_size((5, 7), crop=(2.9, 2.1)) == (2, 2)       # truncation
    assert crop_size((5, 7), crop=3) == (3, 3)
    assert crop_size((5, 7), crop=(0, 2)) == (5, 2)          # 0 = whole extent
    assert crop_size((5, 7), crop_h=2.7, crop_w=3.2) == (2, 3)
    assert crop_size((5, 7)) == (5, 7)
    assert crop_window((5, 7)) == (0, 0, 5, 7)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(crop_h=3), ValueError, "crop_w"),
    (dict(crop=(2, 2), crop_h=3, crop_w=3), ValueError, "crop="),
    (dict(crop=(3,)), ValueError, "crop="),
    (dict(crop=(-1, 2)), ValueError, "crop[0]"),
    (dict(crop=("a", 2)), TypeError, "crop[0]"),
    (dict(crop=(2, 2), crop_pos_x=1.5), ValueError, "crop_pos_x"),
    (dict(crop=(2, 2), crop_pos_y=-0.1), ValueError, "crop_pos_y"),
])
def test_crop_window_errors(kwargs, exc, words):
    with pytest.raises(exc, match=words.replace("[", r"\[").replace("(", r"\(")):
        crop_window((5, 7), **kwargs)


@pytest.mark.oracle
def test_anchor_matches_dali_grid():
    dali = pytest.importorskip("nvidia.dali")  # noqa: F841
    import nvidia.dali.experimental.dynamic as dalidyn
    H = W = 31
    img = np.arange(H * W, dtype=np.float32).reshape(H, W, 1)
    t = dalidyn.as_tensor(img, layout="HWC")
    for c in (1, 6, 13, 40):
        for p in (0.1, 0.35, 0.45, 0.7, 0.95, 1 / 3):
            r = np.asarray(dalidyn.crop(t, crop=(c, c + 1), crop_pos_x=p, crop_pos_y=1 - p,
                                        out_of_bounds_policy="pad", fill_values=-1))[..., 0]
            ys, xs = np.nonzero(r >= 0)
            v = int(r[ys[0], xs[0]])
            dali_anchor = (v // W - ys[0], v % W - xs[0])
            y0, x0, _, _ = crop_window((H, W), crop=(c, c + 1), crop_pos_x=p, crop_pos_y=1 - p)
            assert (y0, x0) == dali_anchor, (c, p)


# ---------------------------------------------------------------- random windows

def _draw(hw, n, seed=0, **kw):
    rng = np.random.default_rng(seed)
    return np.array([random_crop_window(hw, rng, **kw) for _ in range(n)])


def test_random_windows_inside_and_in_range():
    H, W = 480, 640
    win = _draw((H, W), 5000)
    y0, x0, h, w = win.T
    assert (y0 >= 0).all() and (x0 >= 0).all()
    assert (y0 + h <= H).all() and (x0 + w <= W).all()
    ratio = w / h
    assert (ratio >= 3 / 4 - 1e-9).all() and (ratio <= 4 / 3 + 1e-9).all()
    frac = h * w / (H * W)
    # rounding w and h to integers moves the area by at most ~1%
    assert frac.min() >= 0.08 * 0.98 and frac.max() <= 1.0


def test_random_area_uniform_where_every_draw_fits():
    # on a 480x640 image every area <= 0.5 fits for any allowed ratio, so the
    # area fraction is uniform there: equal-width bins hold equal counts
    win = _draw((480, 640), 5000, seed=1)
    frac = win[:, 2] * win[:, 3] / (480 * 640)
    counts, _ = np.histogram(frac, bins=4, range=(0.1, 0.46))
    assert counts.min() > 0.8 * counts.mean() and counts.max() < 1.2 * counts.mean()


def test_random_aspect_log_uniform():
    # square image, small areas: every draw accepted, log(w/h) ~ U(log 3/4, log 4/3)
    win = _draw((1000, 1000), 5000, seed=2, random_area=(0.1, 0.3))
    logr = np.log(win[:, 3] / win[:, 2])
    assert abs(logr.mean()) < 0.01
    counts, _ = np.histogram(logr, bins=4, range=(math.log(3 / 4), math.log(4 / 3)))
    assert counts.min() > 0.85 * counts.mean() and counts.max() < 1.15 * counts.mean()


def test_random_position_uniform():
    win = _draw((200, 300), 4000, seed=3, random_area=(0.1, 0.2))
    y0, x0, h, w = win.T
    u = x0 / (300 - w)
    v = y0 / (200 - h)
    assert abs(u.mean() - 0.5) < 0.03 and abs(v.mean() - 0.5) < 0.03
    assert u.min() < 0.02 and u.max() > 0.98


def test_random_deterministic_for_seed():
    a = _draw((100, 150), 50, seed=7)
    b = _draw((100, 150), 50, seed=7)
    c = _draw((100, 150), 50, seed=8)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_random_too_wide_and_too_tall_images():
    # 10x1000: no window with w/h <= 4/3 reaches 8% of the area -> full height,
    # widest allowed ratio: w = int(10 * 4/3) = 13
    win = _draw((10, 1000), 200)
    assert (win[:, 2] == 10).all() and (win[:, 3] == 13).all() and (win[:, 0] == 0).all()
    assert win[:, 1].max() > 900  # x uniform over 0..987
    win = _draw((1000, 10), 200)
    assert (win[:, 3] == 10).all() and (win[:, 2] == 13).all()


def test_random_fallback_after_attempts():
    # 3x3 image, ratio in [1.1, 1.2]: integer windows never have such a ratio,
    # so every attempt fails; fallback: W/H = 1 < 1.1 -> w = 3, h = int(3 / 1.1) = 2
    win = _draw((3, 3), 100, random_aspect_ratio=(1.1, 1.2), random_area=(0.5, 1.0))
    assert (win[:, 2] == 2).all() and (win[:, 3] == 3).all()
    assert set(win[:, 0]) == {0, 1} and (win[:, 1] == 0).all()
    # same, area in [0.2, 0.5]: attempts give 1 or 2 pixel sides (ratios 1, 2, 1/2),
    # fallback 2x3 (area 6) scaled to 0.5 * 9 = 4.5: sides * sqrt(0.75) -> 1x2
    win = _draw((3, 3), 100, random_aspect_ratio=(1.1, 1.2), random_area=(0.2, 0.5))
    assert (win[:, 2] == 1).all() and (win[:, 3] == 2).all()


def test_random_tiny_and_empty_images():
    assert random_crop_window((1, 1), np.random.default_rng(0)) == (0, 0, 1, 1)
    assert random_crop_window((0, 5), np.random.default_rng(0)) == (0, 0, 0, 0)


def _reference_window(H, W, rng, area, ar, attempts):
    """The documented draw, with a generator call for the attempts and one for the position."""
    lo, hi = area
    max_w, max_h = max(1, int(H * ar[1])), max(1, int(W / ar[0]))
    if H * max_w < H * W * lo:
        h, w = H, max_w
    elif W * max_h < H * W * lo:
        h, w = max_h, W
    else:
        u = rng.random(2 * attempts)
        for s, r in u.reshape(-1, 2):
            t = (lo + (hi - lo) * s) * H * W
            ratio = math.exp(math.log(ar[0]) + (math.log(ar[1]) - math.log(ar[0])) * r) \
                if ar[1] > ar[0] else ar[0]
            w = max(1, int(math.sqrt(t * ratio) + 0.5))
            h = max(1, int(math.sqrt(t / ratio) + 0.5))
            if w <= W and h <= H and ar[0] <= w / h <= ar[1]:
                break
        else:
            ratio = W / H
            h, w = (H, max_w) if ratio > ar[1] else (max_h, W) if ratio < ar[0] else (H, W)
            scale = min(1.0, hi * H * W / (w * h))
            w, h = max(1, int(w * math.sqrt(scale))), max(1, int(h * math.sqrt(scale)))
    h, w = min(h, H), min(w, W)
    ux, uy = rng.random(2)
    return int(uy * (H - h + 1)), int(ux * (W - w + 1)), h, w


def test_random_window_draws_as_two_generator_calls():
    # the attempts and the position come from one generator call: the same numbers as two
    # calls, and the generator is left where two calls leave it
    rng = np.random.default_rng(3)
    for k in range(3000):
        H, W = int(rng.integers(1, 700)), int(rng.integers(1, 700))
        if k % 5 == 0:
            H = int(rng.integers(1, 6))         # too wide / too tall / fallback cases
        area = (float(rng.uniform(0.01, 1.0)), 1.0)
        ar = (3 / 4, 4 / 3) if k % 2 else (float(rng.uniform(0.1, 1)), float(rng.uniform(1, 8)))
        attempts = int(rng.integers(1, 12))
        seed = int(rng.integers(0, 2 ** 63))
        g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
        got = random_crop_window((H, W), g1, random_area=area, random_aspect_ratio=ar,
                                 num_attempts=attempts)
        assert got == _reference_window(H, W, g2, area, ar, attempts)
        assert g1.random() == g2.random()


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(random_area=(0.5, 0.1)), ValueError, "random_area"),
    (dict(random_area=(0.0, 0.5)), ValueError, "random_area"),
    (dict(random_area=(0.5, 1.5)), ValueError, "random_area"),
    (dict(random_aspect_ratio=(2.0, 1.0)), ValueError, "random_aspect_ratio"),
    (dict(random_aspect_ratio=(1, 2, 3)), ValueError, "random_aspect_ratio"),
    (dict(num_attempts=0), ValueError, "num_attempts"),
])
def test_random_errors(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        random_crop_window((10, 10), np.random.default_rng(0), **kwargs)
    with pytest.raises(TypeError, match="rng"):
        random_crop_window((10, 10), 123)


def _ks(a, b):
    grid = np.sort(np.concatenate([a, b]))
    ca = np.searchsorted(np.sort(a), grid, side="right") / a.size
    cb = np.searchsorted(np.sort(b), grid, side="right") / b.size
    return np.abs(ca - cb).max()


@pytest.mark.oracle
@pytest.mark.parametrize("hw", [(480, 640), (300, 100)])
def test_random_distribution_matches_dali(hw):
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as dalidyn
    n = 2000
    shapes = dalidyn.as_batch([np.array(hw, np.int64)] * n)
    anchor, shape = dalidyn.random_crop_generator(shapes, rng=dalidyn.random.RNG(1234))
    d_hw = np.stack([np.asarray(s) for s in shape.tensors]).astype(np.float64)
    d_anchor = np.stack([np.asarray(a) for a in anchor.tensors])
    assert (d_anchor >= 0).all() and (d_anchor + d_hw <= np.array(hw)).all()
    ours = _draw(hw, n, seed=5).astype(np.float64)
    area = hw[0] * hw[1]
    # two-sample Kolmogorov-Smirnov statistics (critical value ~0.062 at 0.1%)
    assert _ks(d_hw[:, 0] * d_hw[:, 1] / area, ours[:, 2] * ours[:, 3] / area) < 0.07
    assert _ks(np.log(d_hw[:, 1] / d_hw[:, 0]), np.log(ours[:, 3] / ours[:, 2])) < 0.07
