"""CUDA-graph capture and replay of a plan's GPU part (``runtime/gpu/capture.py``) on the fake
GPU: replays equal eager runs on new data, nothing is allocated during capture, other lanes fork
from and rejoin the origin stream, a launch that differs from the captured one runs eagerly,
results of one replay survive the next ones."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.ops  # noqa: F401 - the schemas
from compiler.ir import Graph, Node, Value, ValueMeta
from compiler.pipeline import compile_graph
from compiler.types import CPU, Device
from runtime import executor
from runtime.gpu import capture
from runtime.kernels.registry import KERNELS
from tests.runtime.gpu._fake_ops import fake_ops

GPU = Device("gpu", 0)


@pytest.fixture
def graphs(fake):
    with fake_ops():
        capture.set_enabled(True)
        try:
            yield fake
        finally:
            capture.set_enabled(False)


def _leaf(samples):
    return Value(ValueMeta("float32", samples[0].ndim, "", CPU, len(samples)), data=list(samples))


def _node(op, inputs, args=None, tensor_args=None):
    return Node(op, inputs, dict(args or {}), tensor_args, [inputs[0].meta.with_(device=GPU)],
                device=GPU, callsite=f"t.py:{op}")


def _run(xs, vals, factor=3.0):
    """``add(x, value=vals) + scale(x, factor)`` on two lanes; returns the result's samples."""
    x = _leaf(xs)
    a = _node("gputest.add", [x], {}, {"value": _leaf([np.asarray(v) for v in vals])})
    b = _node("gputest.scale", [x], {"factor": factor})
    c = _node("gputest.sum", [a.outputs[0], b.outputs[0]])
    executor.run_plan(compile_graph(Graph.from_outputs([c.outputs[0]]), max_lanes=2))
    return c.outputs[0].data


def _expected(xs, vals, factor=3.0):
    return [(x + np.float32(v)) + x * np.float32(factor) for x, v in zip(xs, vals)]


def _batches(k, rng):
    return [([rng.standard_normal((2, 5)).astype(np.float32) for _ in range(4)],
             rng.uniform(-3, 3, 4).astype(np.float32)) for _ in range(k)]


def test_off_by_default():
    assert capture.enabled() is False and capture.cache() is None


def test_replay_equals_eager_on_new_data(graphs):
    batches = _batches(7, np.random.default_rng(0))
    kept = []
    for xs, vals in batches:
        out = _run(xs, vals)
        kept.append(out)
        for got, want in zip(out, _expected(xs, vals)):
            np.testing.assert_array_equal(got.get(), want)
    stats = capture.cache().stats
    assert stats["warmup"] == 1 and stats["capture"] == 2 and stats["replay"] == 4
    assert stats["fallback"] == 0
    for out, (xs, vals) in zip(kept, batches):     # later replays overwrote nothing handed out
        for got, want in zip(out, _expected(xs, vals)):
            np.testing.assert_array_equal(got.get(), want)
    assert graphs.violations == []


def test_nothing_is_allocated_during_capture(graphs):
    for xs, vals in _batches(3, np.random.default_rng(1)):
        _run(xs, vals)
    log = graphs.log
    begins = [i for i, (_, w) in enumerate(log) if w == "begin capture"]
    ends = [i for i, (_, w) in enumerate(log) if w.startswith("end capture")]
    assert len(begins) == 2 and len(ends) == 2
    for b, e in zip(begins, ends):
        inside = [w for _, w in log[b:e]]
        assert not any(w.startswith(("alloc", "pinned", "sync")) for w in inside), inside
        assert any("launch" in w for w in inside)
    assert graphs.violations == []      # includes: the second lane rejoined the origin


def test_a_launch_unlike_the_captured_one_runs_eagerly(graphs):
    calls = {"n": 0}
    scale = KERNELS[("gputest.scale", "gpu")]

    def drifting(ctx, inputs, args):        # a scalar launch argument that changes per batch
        calls["n"] += 1
        return scale(ctx, inputs, dict(args, factor=float(calls["n"])))
    KERNELS[("gputest.scale", "gpu")] = drifting
    for xs, vals in _batches(5, np.random.default_rng(2)):
        out = _run(xs, vals)
        for got, want in zip(out, _expected(xs, vals, factor=calls["n"])):
            np.testing.assert_array_equal(got.get(), want)
    stats = capture.cache().stats
    assert stats["replay"] == 0 and stats["fallback"] == 2
    assert graphs.violations == []


def test_other_shapes_run_eagerly_and_larger_ones_recapture(graphs):
    """Shapes are not in the key. The test kernels take shaped arrays as launch arguments, so a
    batch of another shape launches differently: it runs eagerly and the graphs stay; a batch
    larger than the reserved blocks runs eagerly and the next batches capture the larger sizes."""
    rng = np.random.default_rng(3)
    seen = []
    for shape in [(2, 5), (2, 5), (2, 5), (1, 3), (2, 5), (40, 40), (40, 40), (40, 40),
                  (40, 40), (2, 5)]:
        xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
        vals = rng.uniform(-1, 1, 4).astype(np.float32)
        for got, want in zip(_run(xs, vals), _expected(xs, vals)):
            np.testing.assert_array_equal(got.get(), want)
        seen.append(dict(capture.cache().stats))
    assert [s["replay"] for s in seen] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert [s["fallback"] for s in seen] == [0, 0, 0, 1, 1, 2, 2, 2, 2, 3]
    assert [s["capture"] for s in seen] == [0, 1, 2, 2, 2, 2, 3, 4, 4, 4]
    assert seen[-1]["warmup"] == 1
    assert graphs.violations == []

