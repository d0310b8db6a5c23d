"""The audio fusion rules (compiler/fusion_rules_audio.py) and the ``fused.audio`` kernel
(runtime/kernels/cpu/fused_audio.py): the speech front end becomes one node whose results are
bit-identical with the unfused ops (sync_cpu), on odd lengths, integer and float signals,
silent samples and per-sample arguments; refusals carry their reason."""
import numpy as np
import pytest

import ndd
from compiler.pipeline import set_options
from ndd._evaluate import last_plan
from runtime.kernels.cpu import fused_audio

N = 5


def _signals(dtype=np.float32, seed=0):
    """Bursts of noise and tones between silences, odd lengths; sample 3 is all silence."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(N):
        n = 3001 + 977 * i
        t = np.arange(n) / 16000.0
        x = 0.3 * np.sin(2 * np.pi * (180 + 40 * i) * t) + 0.05 * rng.standard_normal(n)
        x[: 400 + 150 * i] = 0.0
        x[n - 300:] = 0.0
        if i == 3:
            x[:] = 0.0
        out.append((x * 32000).astype(np.int16) if dtype == np.int16
                   else x.astype(np.float32))
    return out


def _run(fn, mode, data, **kw):
    set_options(disable=())
    with mode:
        out = fn(ndd.as_batch(data), **kw)
        res = [np.asarray(out.tensors[i]) for i in range(out.batch_size)]
        plan = last_plan() if mode is ndd.EvalMode.deferred else None
    return res, plan


def _same(fn, data, fused_from=None, **kw):
    """Runs ``fn`` eagerly and deferred: the same bits; returns the deferred plan."""
    eager, _ = _run(fn, ndd.EvalMode.sync_cpu, data, **kw)
    got, plan = _run(fn, ndd.EvalMode.deferred, data, **kw)
    for e, g in zip(eager, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_array_equal(e.view(np.uint8), g.view(np.uint8))   # bit for bit
    if fused_from is not None:
        fused = [s.node for s in plan.steps if s.node.op == "fused.audio"]
        assert len(fused) == 1, plan.notes
        assert fused[0].meta["fused_from"] == fused_from
    return plan


def _front_end(b, coeff=0.97, layout="ft", norm_axes=(1,)):
    begin, length = ndd.nonsilent_region(b, cutoff_db=-60.0, window_length=256,
                                         reset_interval=8192)
    a = ndd.slice(b, begin, length, axes=[0])
    a = ndd.preemphasis_filter(a, preemph_coeff=coeff)
    s = ndd.spectrogram(a, nfft=512, window_length=320, window_step=160, layout=layout)
    m = ndd.mel_filter_bank(s, sample_rate=16000.0, nfilter=40)
    d = ndd.to_decibels(m, multiplier=10.0, reference=1.0, cutoff_db=-80.0)
    return ndd.normalize(d, axes=norm_axes, epsilon=1e-5)


JASPER = ["nonsilent_region", "slice", "preemphasis_filter", "spectrogram", "mel_filter_bank",
          "to_decibels", "normalize"]


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_the_speech_front_end_is_one_node_and_bit_exact(dtype):
    plan = _same(_front_end, _signals(dtype), JASPER)
    assert [s.node.op for s in plan.steps] == ["fused.audio"]
    applied = [m for k, m in plan.notes if k == "fuse" and m.startswith("applied")]
    assert [m.split(":")[0] for m in applied] == [
        "applied slice->audio", "applied region->audio", "applied audio->audio",
        "applied audio->audio", "applied audio->audio", "applied audio->normalize"]


def test_a_region_read_elsewhere_stays_its_own_node():
    """nonsilent_region joins the chain only when its begin and length feed that slice alone:
    a length another op also reads keeps it apart (refusal noted); the same bits either way."""
    def fn(b):
        begin, length = ndd.nonsilent_region(b, cutoff_db=-50.0, window_length=64,
                                             reset_interval=256)
        a = ndd.preemphasis_filter(ndd.slice(b, begin, length, axes=[0]))
        s = ndd.spectrogram(a, nfft=128, window_length=100, window_step=50)
        return s * ndd.cast(length, dtype=ndd.float32)
    plan = _same(fn, _signals(), ["slice", "preemphasis_filter", "spectrogram"])
    assert "nonsilent_region" in [s.node.op for s in plan.steps]
    assert any("refused region->audio" in m and "also read by" in m for k, m in plan.notes)


def test_tf_layout_normalized_over_time_and_per_sample_coefficients():
    coeff = ndd.as_batch([np.float32(0.9 + 0.02 * i) for i in range(N)])
    _same(lambda b: _front_end(b, coeff=coeff, layout="tf", norm_axes=(0,)), _signals(),
          JASPER)


def test_normalize_arguments_and_per_sample_mean_with_axes():
    mean = ndd.as_batch([np.full((40, 1), 0.5 * i - 3, np.float32) for i in range(N)])

    def fn(b, **kw):
        s = ndd.spectrogram(b, window_length=255, window_step=97, power=1,
                            center_windows=False)
        m = ndd.mel_filter_bank(s, sample_rate=8000.0, nfilter=40, mel_formula="htk",
                                freq_low=60.0, freq_high=3800.0, normalize=False)
        d = ndd.to_decibels(m, multiplier=20.0, cutoff_db=-70.0)
        return ndd.normalize(d, **kw)
    data = _signals()
    _same(fn, data, ["spectrogram", "mel_filter_bank", "to_decibels", "normalize"],
          axes=(1,), ddof=1, scale=2.5, shift=-1.0, epsilon=0.5)
    _same(fn, data, ["spectrogram", "mel_filter_bank", "to_decibels", "normalize"],
          axis_names="f")
    _same(fn, data, ["spectrogram", "mel_filter_bank", "to_decibels", "normalize"],
          axes=(1,), mean=mean, stddev=3.0)


def test_mfcc_chain_with_lifter():
    def fn(b):
        s = ndd.spectrogram(ndd.preemphasis_filter(b, border="zero"), nfft=256,
                            window_length=201, window_step=80)
        m = ndd.mel_filter_bank(s, sample_rate=16000.0, nfilter=32)
        return ndd.mfcc(ndd.to_decibels(m), n_mfcc=13, lifter=22.0, normalize=True)
    _same(fn, _signals(), ["preemphasis_filter", "spectrogram", "mel_filter_bank",
                           "to_decibels", "mfcc"])


def _refusals(plan, rule):
    return [m for k, m in plan.notes if k == "fuse" and m.startswith(f"refused {rule}")]


def test_refusals_name_their_reason():
    def pad_slice(b):
        a = ndd.slice(b, 100, 5000, axes=[0], out_of_bounds_policy="pad")
        return ndd.spectrogram(ndd.preemphasis_filter(a))
    plan = _same(pad_slice, _signals(), ["preemphasis_filter", "spectrogram"])
    assert any("out_of_bounds_policy='pad'" in m for m in _refusals(plan, "slice->audio"))

    def converting_slice(b):
        return ndd.preemphasis_filter(ndd.slice(b, 10, 2000, axes=[0], dtype=ndd.float32))
    plan = _same(converting_slice, _signals(np.int16))
    assert any("dtype=" in m for m in _refusals(plan, "slice->audio"))

    def batch_norm(b):
        m = ndd.mel_filter_bank(ndd.spectrogram(b), nfilter=20, sample_rate=16000.0)
        return ndd.normalize(ndd.to_decibels(m), batch=True, axes=(1,))
    plan = _same(batch_norm, _signals(),
                 ["spectrogram", "mel_filter_bank", "to_decibels"])
    assert any("batch=True" in m for m in _refusals(plan, "audio->normalize"))

    stddev = ndd.as_batch([np.full((20, 1), 1.0 + i, np.float32) for i in range(N)])

    def guessed_axes(b):
        m = ndd.mel_filter_bank(ndd.spectrogram(b), nfilter=20, sample_rate=16000.0)
        return ndd.normalize(m, stddev=stddev, mean=0.0)
    plan = _same(guessed_axes, _signals(), ["spectrogram", "mel_filter_bank"])
    assert any("sample 0" in m for m in _refusals(plan, "audio->normalize"))

    def after_normalize(b):
        return ndd.to_decibels(ndd.normalize(ndd.spectrogram(b), axes=(1,)))
    plan = _same(after_normalize, _signals(), ["spectrogram", "normalize"])
    assert any("normalize ends" in m for m in _refusals(plan, "audio->audio"))


def test_the_window_is_read_in_place(monkeypatch):
    seen = []
    pre = fused_audio.SAMPLE_FUNCTIONS["preemphasis_filter"]

    def spy(x, a, layout, dtype, **kw):
        seen.append(x)
        return pre(x, a, layout, dtype, **kw)
    monkeypatch.setitem(fused_audio.SAMPLE_FUNCTIONS, "preemphasis_filter", spy)
    plan_run = fused_audio.SpeechPlan.run

    def plan_spy(self, x):      # the speech chain's compiled path gets the window too
        seen.append(x)
        return plan_run(self, x)
    monkeypatch.setattr(fused_audio.SpeechPlan, "run", plan_spy)
    data = _signals()
    _run(_front_end, ndd.EvalMode.deferred, data)
    assert len(seen) == N
    assert sum(any(np.shares_memory(v, x) for x in data) for v in seen) >= N - 1


def test_a_window_out_of_bounds_raises_the_slice_error():
    def fn(b):
        return ndd.preemphasis_filter(ndd.slice(b, 100, 10 ** 6, axes=[0]))
    data = _signals()
    with pytest.raises(ValueError, match="out of the bounds"):
        _run(fn, ndd.EvalMode.sync_cpu, data)
    with pytest.raises(ValueError, match="out of the bounds"):
        _run(fn, ndd.EvalMode.deferred, data)


def test_fractional_and_per_sample_windows():
    """A relative (float) window and a per-sample integer one: the general window path."""
    anchors = ndd.as_batch([np.array([0.1 + 0.05 * i], np.float32) for i in range(N)])
    shapes = ndd.as_batch([np.array([0.5], np.float32)] * N)

    def relative(b):
        return ndd.spectrogram(ndd.preemphasis_filter(ndd.slice(b, anchors, shapes, axes=[0])),
                               window_length=128, window_step=64)
    _same(relative, _signals(), ["slice", "preemphasis_filter", "spectrogram"])

    def trimmed(b):
        a = ndd.slice(b, 2000, 3000, axes=[0], out_of_bounds_policy="trim_to_shape")
        return ndd.to_decibels(ndd.spectrogram(a, window_length=64, window_step=32))
    _same(trimmed, _signals(), ["slice", "spectrogram", "to_decibels"])
