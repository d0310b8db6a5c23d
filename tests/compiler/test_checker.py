import pytest

from compiler.checker import IRError, check_graph
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
