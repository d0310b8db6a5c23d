"""The speech front end's fast paths (runtime/kernels/cpu/audio.py, audio_jit.py): the
moving mean square's returned maximum is numpy's ``max`` of its output (NaN included), and
``nonsilent_region`` with it equals an independent numpy computation of the window powers."""
from __future__ import annotations

import numpy as np
import pytest

from runtime.kernels.cpu import audio
from runtime.kernels.cpu.audio_jit import moving_mean_square

RNG = np.random.default_rng(23)


@pytest.mark.parametrize("n,window", [(1, 1), (2, 2), (7, 3), (300, 256), (5000, 64)])
@pytest.mark.parametrize("poison", [None, "nan_mid", "nan_first", "inf_last"])
def test_moving_mean_square_returns_numpys_max(n, window, poison):
    x = (RNG.standard_normal(n) * 3).astype(np.float32)
    if poison == "nan_mid":
        x[n // 2] = np.nan
    elif poison == "nan_first":
        x[0] = np.nan
    elif poison == "inf_last":
        x[-1] = np.inf
    out = np.empty(n - window + 1, np.float32)
    top = np.float32(moving_mean_square()(x, window, n, out))
    want = out.max()
    if np.isnan(want):
        assert np.isnan(top)
    else:
        assert top.view(np.int32) == want.view(np.int32)


def test_nonsilent_region_against_numpy_window_powers():
    x = np.zeros(6000, np.float32)
    x[1500:4100] = (RNG.standard_normal(2600) * 0.5).astype(np.float32)
    x[700] = 0.02                       # a faint click, below the cutoff
    wl = 128
    begin, length = audio.nonsilent_region(x, -40.0, 0.0, wl, -1)
    sq = x.astype(np.float64) ** 2
    power = np.convolve(sq, np.ones(wl), "valid") / wl
    keep = np.flatnonzero(power >= power.max() * 10 ** (-40 / 10))
    assert (begin, length) == (keep[0], keep[-1] + wl - keep[0])
    # all silent: the reference (largest power) is 0, so every window reaches the threshold 0
    assert audio.nonsilent_region(np.zeros(50, np.float32), -60.0, 0.0, 16, -1) == (0, 50)


def _running_mean_square(x, window, reset):
    """The running float32 sum written out one step at a time (numpy float32 scalars): from
    scratch at windows 0, reset, 2 * reset, ... (every window when reset <= 0), else the
    previous sum plus ``new * new - old * old``."""
    f32 = np.float32
    n_out = len(x) - window + 1
    run = reset if reset > 0 else 1
    factor = f32(1.0) / f32(window)
    out = np.empty(n_out, np.float32)
    s = f32(0.0)
    for j in range(n_out):
        if j % run == 0:
            s = f32(0.0)
            for k in range(j, j + window):
                s = f32(s + f32(x[k] * x[k]))
        else:
            new, old = x[j + window - 1], x[j - 1]
            s = f32(s + f32(f32(new * new) - f32(old * old)))
        out[j] = f32(s * factor)
    return out


@pytest.mark.parametrize("n,window,reset", [
    (1, 1, 1), (9, 2, 2), (64, 4, 8), (100, 3, 0), (100, 5, -5),      # every window alone
    (257, 16, 32), (700, 8, 96), (700, 8, 88), (1000, 10, 40),       # 2 .. 25 runs, short last
    (1000, 10, 250), (1000, 10, 10 ** 6), (3001, 32, 512), (65, 64, 64)])
def test_moving_mean_square_bits_equal_one_running_sum(n, window, reset):
    """The runs summed in lockstep give the bits of the running sum done one step at a time,
    for every run count (1, 2, 3, 4, 5 and more, the last one short or not)."""
    rng = np.random.default_rng(n * 7 + window)
    x = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 300.0], n)).astype(np.float32)
    out = np.full(n - window + 1, np.nan, np.float32)
    top = np.float32(moving_mean_square()(x, window, reset, out))
    want = _running_mean_square(x, window, reset)
    assert out.view(np.int32).tolist() == want.view(np.int32).tolist()
    assert top.view(np.int32) == want.max().view(np.int32)
