"""Compile mode's plan recipes (ndd/compile/replay.py ``PlanRecipe``): a batch whose batch
sizes were compiled before gets the same plan built on its own values instead of a compile;
the results equal eager execution's, bit for bit, over epochs with a short last batch, with
CSE aliases and fused nodes; random calls and IR checking keep compiling every batch."""
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
    assert len(got) == len(eager) == 8
    for g, e in zip(got, eager):
        assert len(g) == len(e)
        for x, y in zip(g, e):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes()
    template = r.compile_template
    assert sorted(len(k[0]) for k in template.plan_recipes) == [len(template.entries)] * 2
    plan = template.last_plan
    assert [s.node.op for s in plan.steps].count("fused.audio") == 1


def test_checked_or_random_bodies_compile_every_batch(manifest, monkeypatch):
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
    compiles.clear()
    before = pipeline.options()["check"]
    pipeline.set_options(check=False)
    try:
        r = _reader(manifest)
        with ndd.EvalMode.deferred:
            for (a,) in r.next_epoch(batch_size=3, compile=True):
                ndd.noise.gaussian(_front(a), stddev=0.1).evaluate()
    finally:
        pipeline.set_options(check=before)
    assert len(compiles) == 3
