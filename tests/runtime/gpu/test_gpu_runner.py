"""Plans on the fake GPU (``runtime/gpu/runner.py``): the schedule's lanes become streams, every
cross-lane read waits on its producer's event, buffers are reused across lanes in stream order,
GPU kernels are found by ``(op, "gpu")`` and launched on their lane's stream."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.ops  # noqa: F401 - the schemas
from compiler.ir import Graph, Node, Value, ValueMeta
from compiler.pipeline import compile_graph
from compiler.types import CPU, Device
from runtime import executor
from runtime.gpu import runner, state
from runtime.storage import DeviceSamples
from tests.runtime.gpu._fake_ops import fake_ops

GPU = Device("gpu", 0)


@pytest.fixture
def ops():
    with fake_ops():
        yield


def _leaf(samples, dev=CPU):
    meta = ValueMeta("float32", samples[0].ndim, "", dev, len(samples))
    return Value(meta, data=list(samples))


def _node(op, inputs, args=None, tensor_args=None, dev=GPU):
    meta = inputs[0].meta.with_(device=dev)
    return Node(op, inputs, dict(args or {}), tensor_args, [meta], device=dev,
                callsite=f"test.py:{op}")


def _diamond(x):
    a = _node("gputest.add", [x], {"value": 1.0})
    b = _node("gputest.scale", [x], {"factor": 3.0})
    c = _node("gputest.sum", [a.outputs[0], b.outputs[0]])
    return a, b, c


def _samples(rng, n=3):
    return [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(n)]


def test_lanes_are_streams_and_cross_lane_edges_events(fake, ops):
    xs = _samples(np.random.default_rng(1))
    a, b, c = _diamond(_leaf(xs))
    plan = compile_graph(Graph.from_outputs([c.outputs[0]]), max_lanes=2)
    assert [s.node.op for s in plan.steps] == ["transfer", "gputest.add", "gputest.scale",
                                               "gputest.sum"]
    assert (a.meta["lane"], b.meta["lane"], c.meta["lane"]) == (0, 1, 0)
    executor.run_plan(plan)
    out = c.outputs[0].data
    assert isinstance(out, DeviceSamples)
    for got, x in zip(out, xs):
        np.testing.assert_array_equal(got.get(), (x + np.float32(1)) + x * np.float32(3))
    assert fake.violations == []
    st = state.current()
    s0, s1 = st.lane_stream(0, 0), st.lane_stream(0, 1)
    log = fake.log
    scale = next(i for i, (s, w) in enumerate(log) if "_scale_kernel" in w)
    total = next(i for i, (s, w) in enumerate(log) if "_sum_kernel" in w)
    assert log[scale][0] == s1.name and log[total][0] == s0.name
    waits = [i for i, (s, w) in enumerate(log) if s == s0.name and w.startswith("wait")]
    assert any(scale < i < total for i in waits)
    assert out.stream is s0 and out.ready is not None


def test_without_the_events_the_checker_sees_the_race(fake, ops, monkeypatch):
    monkeypatch.setattr(runner, "_order_inputs", lambda api, stream, data, tape: None)
    a, b, c = _diamond(_leaf(_samples(np.random.default_rng(2))))
    executor.run_plan(compile_graph(Graph.from_outputs([c.outputs[0]]), max_lanes=2))
    assert any("missing event" in v for v in fake.violations)


def test_buffers_recycled_across_lanes_in_stream_order(fake, ops):
    rng = np.random.default_rng(3)
    for _ in range(6):
        xs = _samples(rng)
        _, _, c = _diamond(_leaf(xs))
        back = Node("transfer", [c.outputs[0]], {"device": "cpu"}, None,
                    [c.outputs[0].meta.with_(device=CPU)], device=CPU, callsite="t.py:9")
        executor.run_plan(compile_graph(Graph.from_outputs([back.outputs[0]]), max_lanes=2))
        got = back.outputs[0].data
        assert not isinstance(got, DeviceSamples)
        for g, x in zip(got, xs):
            np.testing.assert_array_equal(g, (x + np.float32(1)) + x * np.float32(3))
        del c, back, got
    pool = state.current().pool
    assert pool.hits > 0                    # blocks came back ...
    assert fake.violations == []            # ... never while another stream used them


def test_tensor_arguments_are_read_on_the_host(fake, ops):
    rng = np.random.default_rng(4)
    xs = _samples(rng)
    vals = [np.float32(v) for v in (1.5, -2.0, 4.0)]
    val_gpu = _node("transfer", [_leaf([np.asarray(v) for v in vals])], {"device": "gpu:0"})
    node = _node("gputest.add", [_leaf(xs)], {}, {"value": val_gpu.outputs[0]})
    plan = compile_graph(Graph.from_outputs([node.outputs[0]]), max_lanes=2)
    ops_run = [(s.node.op, str(s.node.device)) for s in plan.steps]
    assert ("transfer", "cpu") in ops_run            # the GPU tensor argument goes back
    executor.run_plan(plan)
    for got, x, v in zip(node.outputs[0].data, xs, vals):
        np.testing.assert_array_equal(got.get(), x + v)
    assert fake.violations == []


def test_an_eager_gpu_node_moves_its_host_inputs_and_uses_lane_0(fake, ops):
    xs = _samples(np.random.default_rng(5))
    node = _node("gputest.scale", [_leaf(xs)], {"factor": 0.5})
    executor.run_node(node)
    out = node.outputs[0].data
    st = state.current()
    assert out.stream is st.lane_stream(0, 0)
    for got, x in zip(out, xs):
        np.testing.assert_array_equal(got.get(), x * np.float32(0.5))
    kinds = [w.split()[0] for s, w in fake.log if s == out.stream.name]
    assert kinds.index("h2d") < kinds.index("launch")
    assert fake.violations == []


def test_a_gpu_kernels_error_names_the_op_and_call_site(fake, ops):
    node = _node("gputest.sum", [_leaf(_samples(np.random.default_rng(6)))])   # one input
    with pytest.raises(Exception, match=r"gputest.sum \(called at test.py:gputest.sum\)"):
        executor.run_node(node)


def test_missing_gpu_kernel_is_a_clear_error(fake):
    x = _leaf(_samples(np.random.default_rng(7)))
    node = _node("copy", [x])
    with pytest.raises(NotImplementedError, match="no GPU implementation"):
        executor.run_node(node)


def test_cpu_plans_do_not_use_the_gpu_runner(monkeypatch):
    monkeypatch.setattr(runner, "run_gpu_plan", None)       # would fail if called
    x = _leaf([np.arange(4, dtype=np.float32)])
    node = Node("copy", [x], {}, None, [x.meta], device=CPU, callsite="t.py:1")
    plan = compile_graph(Graph.from_outputs([node.outputs[0]]))
    assert not runner.plan_uses_gpu(plan)
    executor.run_plan(plan)
    np.testing.assert_array_equal(node.outputs[0].data[0], np.arange(4, dtype=np.float32))
