from compiler.ir import ValueMeta
from compiler.passes.cse import cse
from tests.compiler._graphs import graph, leaf, node


def test_cse_merges_identical_pure_nodes_and_redirects_readers():
    x = leaf()
    a = node("flip", [x], {"horizontal": 1})
    b = node("flip", [x], {"horizontal": 1})
    c = node("arithmetic", [a.outputs[0], b.outputs[0]],
             {"op": "add", "operands": (("t", 0), ("t", 1))})
    res = cse(graph([c.outputs[0]]))
    assert [n.id for n in res.graph.nodes] == [a.id, c.id]
    assert c.inputs == (a.outputs[0], a.outputs[0])
    assert res.modified and res.aliases == ((b.outputs[0], a.outputs[0]),)
    assert res.aliases[0].removed is b.outputs[0] and res.aliases[0].kept is a.outputs[0]
    # the IR's users follow the rewiring: b's output has no reader left in the graph
    assert res.graph.users(b.outputs[0]) == [] and res.graph.users(a.outputs[0]) == [c]


def test_cse_keeps_different_args():
    x = leaf()
    a = node("flip", [x], {"horizontal": 1})
    b = node("flip", [x], {"horizontal": 0})
    res = cse(graph([a.outputs[0], b.outputs[0]]))
    assert len(res.graph.nodes) == 2 and not res.modified


def test_cse_never_merges_random_ops():
    m = ValueMeta(dtype="int32", ndim=0, layout="", batch_size=2)
    a = node("random.coin_flip", [], {"probability": 0.5}, meta=m)
    b = node("random.coin_flip", [], {"probability": 0.5}, meta=m)
    res = cse(graph([a.outputs[0], b.outputs[0]]))
    assert len(res.graph.nodes) == 2 and not res.aliases
