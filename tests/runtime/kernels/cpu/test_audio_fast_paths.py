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


def _speech_args(rng):
    f32 = np.float32
    wl = int(rng.choice([256, 320, 400]))
    return [
        {"preemph_coeff": float(rng.choice([0.97, 0.5, 0.0])), "_layout": "", "_out": f32,
         "border": str(rng.choice(["clamp", "zero", "reflect"]))},
        {"nfft": int(rng.choice([512, 1024])), "window_length": wl, "window_fn": None,
         "window_step": int(rng.choice([160, 100, 128])), "power": int(rng.choice([1, 2])),
         "center_windows": bool(rng.random() < 0.7), "reflect_padding": bool(rng.random() < 0.7),
         "layout": "ft", "_layout": "", "_out": f32},
        {"nfilter": int(rng.choice([40, 64, 128])), "sample_rate": 16000.0,
         "freq_low": float(rng.choice([0.0, 20.0])), "freq_high": float(rng.choice([0.0, 7600.0])),
         "mel_formula": str(rng.choice(["slaney", "htk"])), "normalize": bool(rng.random() < .5),
         "_layout": "ft", "_out": f32},
        {"multiplier": float(rng.choice([10.0, 20.0])), "reference": float(rng.choice([1.0, 2.5])),
         "cutoff_db": float(rng.choice([-80.0, -200.0])), "_layout": "ft", "_out": f32},
        {"axes": [int(rng.choice([0, 1]))], "axis_names": None, "mean": None, "stddev": None,
         "ddof": int(rng.choice([0, 1])), "epsilon": float(rng.choice([1e-5, 0.0])),
         "scale": None if rng.random() < .5 else 2.0, "shift": None if rng.random() < .5 else 0.5,
         "batch": False, "_layout": "ft", "_out": f32}]


class _Stage:
    def __init__(self, op, name, args):
        self.op, self.name, self.args, self.tensor_args = op, name, args, ()


@pytest.mark.parametrize("seed", range(12))
def test_speech_plan_equals_the_stages_one_by_one(seed):
    """fused.audio's compiled speech path (two compiled calls around the FFT) gives the bits of
    the stages' per-sample functions called one after another (what the unfused kernels
    call), for random arguments and signals down to a single sample; where it does not apply
    (the plan declines a sample) the kernel takes the stages one by one."""
    from runtime.kernels.cpu import fused_audio as fa
    rng = np.random.default_rng(seed)
    args = _speech_args(rng)
    chain = [_Stage(op, f"{op}#{k}", a) for k, (op, a) in enumerate(zip(fa.SPEECH_CHAIN, args))]
    static = {s.name: s.args for s in chain}
    plan = fa.SpeechPlan.build(chain, static)
    assert plan is not None
    done = 0
    for n in (1, 2, 7, 300, 1601, 16000, 37123):
        x = (rng.standard_normal(n) * rng.choice([1e-3, 0.3])).astype(np.float32)
        want = x
        for k, stage in enumerate(chain):
            a = static[stage.name]
            kw = {"out_key": f"fused.audio#{k}"} if k < 2 else {}
            want = fa.SAMPLE_FUNCTIONS[stage.op](want, a, a["_layout"], a["_out"], **kw)
        got = plan.run(x)
        if got is None:
            continue
        done += 1
        assert got.shape == want.shape and got.dtype == want.dtype == np.float32
        assert got.tobytes() == want.tobytes()
    assert done >= 3         # (1601 samples and more always have windows)


def test_speech_plan_declines_other_paths():
    from runtime.kernels.cpu import fused_audio as fa
    args = _speech_args(np.random.default_rng(0))
    chain = [_Stage(op, f"{op}#{k}", a) for k, (op, a) in enumerate(zip(fa.SPEECH_CHAIN, args))]
    static = {s.name: dict(s.args) for s in chain}
    assert fa.SpeechPlan.build(chain, static) is not None
    for stage, key, value in [(3, "reference", 0.0), (1, "layout", "tf"), (4, "mean", 0.5),
                              (0, "_out", np.float16)]:
        changed = {k: dict(v) for k, v in static.items()}
        changed[chain[stage].name][key] = value
        assert fa.SpeechPlan.build(chain, changed) is None
    plan = fa.SpeechPlan.build(chain, static)
    assert plan.run(np.zeros(100, np.float64)) is None          # not float32
    assert plan.run(np.zeros((100, 2), np.float32)) is None     # not 1-D
