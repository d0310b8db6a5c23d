import pytest

from compiler.checker import IRError, check_graph
from compiler.ir import Graph
from tests.compiler._graphs import graph, leaf, node


def test_checker_accepts_well_formed_graph():
    x = leaf()
    a = node("flip", [x])
    b = node("copy", [a.outputs[0]])
    check_graph(graph([b.outputs[0]]))


def test_checker_rejects_wrong_order_unknown_op_and_duplicates():
    x = leaf()
    a = node("flip", [x])
    b = node("copy", [a.outputs[0]])
    g = graph([b.outputs[0]])
    g.nodes.reverse()
    with pytest.raises(IRError, match="before it is produced"):
        check_graph(g, after="x")
    g.nodes.reverse()
    g.nodes.append(b)
    with pytest.raises(IRError, match="twice"):
        check_graph(g)
    g.nodes.pop()
    a.op = "no_such_op"
    with pytest.raises(IRError, match="unknown op"):
        check_graph(g)


def test_checker_rejects_stale_links_run_state_in_meta_and_stale_membership():
    x = leaf()
    a = node("flip", [x])
    b = node("copy", [a.outputs[0]])
    with pytest.raises(IRError, match="stale producer link"):
        check_graph(Graph([b], [b.outputs[0]]))      # a is pending but not in the graph
    g = graph([b.outputs[0]])
    b.meta["future"] = object()
    with pytest.raises(IRError, match="not pass metadata"):
        check_graph(g)
    del b.meta["future"]
    g.nodes.append(node("copy", [x]))
    with pytest.raises(IRError, match="edited in place"):
        check_graph(g)


def test_checker_rejects_users_out_of_step_with_inputs():
    x, y = leaf(), leaf()
    a = node("flip", [x])
    g = graph([a.outputs[0]])
    a._inputs = (y,)        # a buggy rewrite that bypasses Node.inputs: y does not know a
    with pytest.raises(IRError, match="not among its users"):
        check_graph(g)
