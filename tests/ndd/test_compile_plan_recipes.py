"""Compile mode's plan recipes (ndd/compile/replay.py ``PlanRecipe``): a batch whose batch
sizes were compiled before gets the same plan built on its own values instead of a compile;
the results equal eager execution's, bit for bit, over epochs with a short last batch, with
CSE aliases and fused nodes, random calls with each batch's own seeds; IR checking keeps
compiling every batch."""
from __future__ import annotations

import json

import numpy as np
import pytest

import ndd
import ndd.compile.early as early
import ndd.compile.replay as replay
from compiler import pipeline

sf = pytest.importorskip("soundfile")
RNG = np.random.default_rng(8)
LENGTHS = [3000, 5200, 800, 4100, 6000, 2500, 3900, 7000, 1200, 4400]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    root = tmp_path_factory.mktemp("recipes")
    lines = []
    for i, n in enumerate(LENGTHS):
        x = (RNG.standard_normal(n) * 3000).astype(np.int16)
        x[: n // 5] = 0
        path = root / f"a{i}.{'flac' if i % 3 == 0 else 'wav'}"
        sf.write(path, x, 16000, subtype="PCM_16")
        lines.append(json.dumps({"audio_filepath": str(path), "duration": n / 16000}))
    m = root / "manifest.json"
    m.write_text("\n".join(lines) + "\n")
    return str(m)


def _front(audio):
    begin, length = ndd.nonsilent_region(audio, cutoff_db=-60.0, window_length=64,
                                         reset_interval=256)
    a = ndd.preemphasis_filter(ndd.slice(audio, begin, length, axes=[0]))
    s = ndd.spectrogram(a, nfft=256, window_length=200, window_step=80)
    d = ndd.to_decibels(ndd.mel_filter_bank(s, sample_rate=16000.0, nfilter=20),
                        reference=1.0, cutoff_db=-80.0)
    twice = ndd.normalize(d, axes=[1]) + ndd.normalize(d, axes=[1])     # CSE: one normalize
    return twice * 0.5


def _reader(manifest):
    return ndd.readers.NemoAsr(manifest_filepaths=[manifest], read_sample_rate=False,
                               read_text=False)


def _epochs(reader, compile, epochs=2):
    out = []
    ctx = ndd.EvalMode.deferred if compile else ndd.EvalMode.eager
    with ctx:
        for _ in range(epochs):
            kw = {"compile": True} if compile else {}
            for (a,) in reader.next_epoch(batch_size=3, **kw):
                out.append([np.asarray(t).copy() for t in _front(a).evaluate().tensors])
    return out


@pytest.fixture
def unchecked():
    before = pipeline.options()["check"]
    pipeline.set_options(check=False)
    yield
    pipeline.set_options(check=before)


def _assert_bit_equal(got, eager, batches):
    """every batch's outputs equal eager's: dtype, shape and bytes"""
    assert len(got) == len(eager) == batches
    for g, e in zip(got, eager):
        assert len(g) == len(e)
        for x, y in zip(g, e):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes()


def test_recipes_replace_compiles_and_keep_the_bits(manifest, unchecked, monkeypatch):
    compiles = []
    real = replay.compile_graph

    def counting(graph, *a, **k):
        compiles.append(len(graph.nodes))
        return real(graph, *a, **k)
    monkeypatch.setattr(replay, "compile_graph", counting)
    eager = _epochs(_reader(manifest), compile=False)
    r = _reader(manifest)
    got = _epochs(r, compile=True)
    # epoch 1: batch 0 traced, batches 1-2 (3 samples) one compile, the short last one one;
    # epoch 2: none (both batch sizes have their recipe)
    assert len(compiles) == 2
    _assert_bit_equal(got, eager, batches=8)
    template = r.compile_template
    assert sorted(len(k[0]) for k in template.plan_recipes) == [len(template.entries)] * 2
    plan = template.last_plan
    assert [s.node.op for s in plan.steps].count("fused.audio") == 1


def test_checked_bodies_compile_every_batch(manifest, monkeypatch):
    compiles = []
    real = replay.compile_graph
    # this epoch's batches only: not the next epoch's begun early (ndd/compile/early.py),
    # here or by an earlier test's reader
    monkeypatch.setattr(ndd.compile.epoch, "early_allowed", lambda *a: False)
    early.wait_all(timeout=30)
    monkeypatch.setattr(replay, "compile_graph",
                        lambda g, *a, **k: compiles.append(1) or real(g, *a, **k))
    assert pipeline.options()["check"]          # the suite checks the IR
    _epochs(_reader(manifest), compile=True, epochs=1)
    assert len(compiles) == 3                   # batches 1, 2, 3 (0 is traced)


def _noisy_epochs(reader, compile, epochs=2):
    """Two random calls per batch (their seeds per batch): the noise on the front end's
    output and a coin flip scaling it."""
    rng = ndd.random.RNG(seed=77)
    out = []
    ctx = ndd.EvalMode.deferred if compile else ndd.EvalMode.eager
    with ctx:
        for _ in range(epochs):
            kw = {"compile": True} if compile else {}
            for (a,) in reader.next_epoch(batch_size=3, **kw):
                x = ndd.noise.gaussian(_front(a), stddev=0.1, rng=rng)
                flip = ndd.random.coin_flip(batch_size=a.batch_size, probability=0.5,
                                            rng=rng)
                out.append([np.asarray(t).copy() for t in (x * flip).evaluate().tensors])
    return out


def test_random_bodies_get_recipes_with_each_batch_s_seeds(manifest, unchecked, monkeypatch):
    compiles = []
    real = replay.compile_graph
    monkeypatch.setattr(ndd.compile.epoch, "early_allowed", lambda *a: False)
    early.wait_all(timeout=30)
    monkeypatch.setattr(replay, "compile_graph",
                        lambda g, *a, **k: compiles.append(1) or real(g, *a, **k))
    eager = _noisy_epochs(_reader(manifest), compile=False)
    r = _reader(manifest)
    got = _noisy_epochs(r, compile=True)
    # epoch 1: batch 0 traced, batches 1-2 one compile, the short last one one; epoch 2: none
    assert len(compiles) == 2
    _assert_bit_equal(got, eager, batches=8)
    # the batches differ (their own seeds, not the recorded batch's)
    assert got[1][0].tobytes() != got[5][0].tobytes()
    template = r.compile_template
    recipes = [v for v in template.plan_recipes.values() if v]
    assert len(recipes) == 2
    assert all(any(step[-1] is not None for step in rec.steps) for rec in recipes)


def test_seeds_not_found_as_a_step_s_own_give_no_recipe(manifest, unchecked, monkeypatch):
    """A plan whose step carries a random call's seeds in another object (copied, merged)
    compiles every batch: the recipe could not give it the batch's own seeds."""
    real = replay.compile_graph

    def copying(graph, *a, **k):
        plan = real(graph, *a, **k)
        for step in plan.steps:
            if "_seeds" in step.node.args:
                step.node.args["_seeds"] = list(step.node.args["_seeds"])     # a copy
        return plan
    compiles = []
    monkeypatch.setattr(ndd.compile.epoch, "early_allowed", lambda *a: False)
    early.wait_all(timeout=30)
    monkeypatch.setattr(replay, "compile_graph",
                        lambda g, *a, **k: compiles.append(1) or copying(g, *a, **k))
    r = _reader(manifest)
    _noisy_epochs(r, compile=True)
    assert len(compiles) == 7       # epoch 1: batches 1-3 (0 is traced); epoch 2: all four
    assert not any(r.compile_template.plan_recipes.values())
