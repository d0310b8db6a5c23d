"""The place pass: explicit transfers where an input lives on another device."""
from compiler.ir import Graph, Node, Value, ValueMeta
from compiler.passes.place import place
from compiler.types import CPU, Device

import compiler.ops  # noqa: F401


def _leaf(dev):
    return Value(ValueMeta("uint8", 3, "HWC", dev, 2), data=[0, 0])


def test_cpu_graph_unchanged():
    x = _leaf(CPU)
    n = Node("flip", [x], {"horizontal": 1}, None, [x.meta], device=CPU, callsite="t.py:1")
    res = place(Graph([n], [n.outputs[0]]))
    assert [m.op for m in res.graph.nodes] == ["flip"] and n.inputs[0] is x
    assert not res.modified and not res.notes


def test_transfer_inserted_once_per_value_and_device():
    gpu = Device("gpu", 0)
    x = _leaf(CPU)
    a = Node("flip", [x], {}, None, [x.meta.with_(device=gpu)], device=gpu, callsite="t.py:2")
    b = Node("copy", [x], {}, None, [x.meta.with_(device=gpu)], device=gpu, callsite="t.py:3")
    res = place(Graph([a, b], [a.outputs[0], b.outputs[0]]))
    g = res.graph
    assert [m.op for m in g.nodes] == ["transfer", "flip", "copy"]
    t = g.nodes[0]
    assert t.inputs[0] is x and a.inputs[0] is t.outputs[0] and b.inputs[0] is t.outputs[0]
    assert t.outputs[0].meta.device == gpu
    assert any(name == "place" for name, _ in res.notes)
    assert x.users[-1] is t and g.users(x) == [t] and g.users(t.outputs[0]) == [a, b]
