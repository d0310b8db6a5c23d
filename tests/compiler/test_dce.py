from compiler.passes.dce import dce
from tests.compiler._graphs import graph, leaf, node


def test_dce_removes_unrequested_branch_and_keeps_requested():
    x = leaf()
    a = node("flip", [x])
    b = node("flip", [a.outputs[0]])
    dead = node("copy", [a.outputs[0]])
    g = graph([b.outputs[0], dead.outputs[0]])
    g.outputs = [b.outputs[0]]          # the copy is no longer asked for
    res = dce(g)
    assert [n.id for n in res.graph.nodes] == [a.id, b.id] and res.modified
    assert any(name == "dce" and f"#{dead.id}" in msg for name, msg in res.notes)


def test_dce_does_not_compute_unrequested_live_values():
    """A value held by a live handle but not asked for is left pending (computed on demand)."""
    x = leaf()
    a = node("flip", [x])
    held = node("copy", [a.outputs[0]])

    class Handle:
        pass
    h = Handle()
    held.outputs[0].set_holder(h)
    g = graph([a.outputs[0], held.outputs[0]])
    g.outputs = [a.outputs[0]]
    assert [n.id for n in dce(g).graph.nodes] == [a.id]
    assert held.outputs[0].producer is held and held.outputs[0].data is None