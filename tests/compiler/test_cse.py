from compiler.ir import ValueMeta
from compiler.passes.cse import cse
from tests.compiler._graphs import graph, leaf, node


def test_cse_merges_identical_pure_nodes_and_redirects_readers():
    x = leaf()
    a = node("flip", [x], {"horizontal": 1})
    b = node("flip", [x], {"horizontal": 1})
    c = node("arithmetic", [a.outputs[0], b.outputs[0]],
             {"op": "add", "operands": (("t", 0), ("t", 1))})
    g = cse(graph([c.outputs[0]]))
    assert [n.id for n in g.nodes] == [a.id, c.id]
    assert c.inputs == (a.outputs[0], a.outputs[0])
    assert g.aliases[b.outputs[0].id] == (b.outputs[0], a.outputs[0])


def test_cse_keeps_different_args():
    x = leaf()
    a = node("flip", [x], {"horizontal": 1})
    b = node("flip", [x], {"horizontal": 0})
    g = cse(graph([a.outputs[0], b.outputs[0]]))
    assert len(g.nodes) == 2


def test_cse_never_merges_random_ops():
    m = ValueMeta(dtype="int32", ndim=0, layout="", batch_size=2)
    a = node("random.coin_flip", [], {"probability": 0.5}, meta=m)
    b = node("random.coin_flip", [], {"probability": 0.5}, meta=m)
    g = cse(graph([a.outputs[0], b.outputs[0]]))
    assert len(g.nodes) == 2 and not g.aliases
